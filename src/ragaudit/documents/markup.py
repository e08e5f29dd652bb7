"""reStructuredText markup read as its reader sees it (pure).

Python docstrings and Sphinx sources, a common corpus of reference documentation, carry
markup that a small model misreads when it writes a question from it: ``.. versionadded::
3.0`` became "added in Python 3.0", ``:param name: The name of the group command.`` became
a reference that restates its question, and ``:class:`~click.Context``` reads as noise
(issue 41's trial on click's documentation). :func:`render_markup` writes those constructs
the way a rendered page shows them ("New in version 3.0.", "Parameter `name`: ...",
`Context`), so that a question is written from, and checked against, what the page says.
Text without reST markup (prose, Markdown) is returned unchanged.
"""

from __future__ import annotations

import re

# Directives whose argument is a version, as Sphinx renders them.
_VERSIONS = {
    "versionadded": "New in version {}.",
    "versionchanged": "Changed in version {}:",
    "deprecated": "Deprecated since version {}:",
    "versionremoved": "Removed in version {}:",
}
# Admonitions: a label before their indented body.
_ADMONITIONS = {
    "note": "Note:",
    "warning": "Warning:",
    "tip": "Tip:",
    "hint": "Hint:",
    "important": "Important:",
    "caution": "Caution:",
    "attention": "Attention:",
    "danger": "Danger:",
    "error": "Error:",
    "seealso": "See also:",
}
# Directives that introduce code: the code that follows is kept, the line is not.
_CODE = {"code-block", "code", "sourcecode", "highlight", "doctest", "testcode"}

_DIRECTIVE = re.compile(r"^(?P<indent>[ \t]*)\.\.[ \t]+(?P<name>[\w-]+)::[ \t]*(?P<rest>.*)$")
# Field lists of a docstring: ":param name:", ":param str name:", ":returns:", ...
_FIELD = re.compile(
    r"^(?P<indent>[ \t]*):(?P<kind>param|parameter|arg|argument|key|keyword|type|"
    r"returns?|rtype|raises?|raise|except|exception|var|ivar|cvar|vartype)"
    r"(?:[ \t]+(?P<name>[^:]+?))?:(?=[ \t]|$)[ \t]*",
    re.MULTILINE,
)
# An interpreted-text role: :class:`Context`, :meth:`~click.Context.invoke`,
# :ref:`the guide <guide>`, :py:func:`echo`.
_ROLE = re.compile(r":(?:[\w-]+:)?[\w-]+:`(?P<tilde>~?)(?P<body>[^`]+)`")
_LITERAL = re.compile(r"(?<!`)``(?P<body>[^`\n]+?)``(?!`)")
# A paragraph that ends with "::" introduces a literal block; it reads as one colon.
_DOUBLE_COLON = re.compile(r"(?<=\S)::[ \t]*$", re.MULTILINE)


def _field(found: re.Match[str]) -> str:
    indent, kind, name = found["indent"], found["kind"], (found["name"] or "").strip()
    # ":param str name:" names its type first; the parameter is the last word.
    name = name.split()[-1] if name else ""
    label = {
        "param": "Parameter",
        "parameter": "Parameter",
        "arg": "Parameter",
        "argument": "Parameter",
        "key": "Parameter",
        "keyword": "Parameter",
        "type": "Type of",
        "return": "Returns",
        "returns": "Returns",
        "rtype": "Return type",
        "raise": "Raises",
        "raises": "Raises",
        "except": "Raises",
        "exception": "Raises",
        "var": "Variable",
        "ivar": "Attribute",
        "cvar": "Class attribute",
        "vartype": "Type of",
    }[kind]
    return f"{indent}{label} `{name}`: " if name else f"{indent}{label}: "


def _role(found: re.Match[str]) -> str:
    body = found["body"].strip()
    explicit = re.fullmatch(r"(?P<text>.+?)\s*<[^<>]+>", body)
    if explicit:  # :ref:`the guide <guide>` shows its text
        return explicit["text"]
    if found["tilde"]:  # :meth:`~click.Context.invoke` shows its last part
        body = body.rsplit(".", 1)[-1]
    return f"`{body}`"


def _directive(line: str) -> str | None:
    """A directive line as it reads (None: the line is left out)."""
    found = _DIRECTIVE.match(line)
    if not found:
        return line
    indent, name, rest = found["indent"], found["name"].lower(), found["rest"].strip()
    if name in _VERSIONS:
        version, _, said = rest.partition(" ")
        text = _VERSIONS[name].format(version) if version else _VERSIONS[name].split()[0]
        return f"{indent}{text} {said.strip()}".rstrip()
    if name in _ADMONITIONS:
        return f"{indent}{_ADMONITIONS[name]} {rest}".rstrip()
    if name in _CODE:
        return None
    return line


# A section title's adornment: one punctuation character repeated, alone on its line
# (reST's "=====" under a title, "*****" over and under; Markdown's setext "---").
_ADORNMENT = re.compile(r"^([=\-~^*+#\"'`:._])\1{2,}[ \t]*$")


def _headings(lines: list[str]) -> list[str]:
    """Section titles written as Markdown headings ("## Title"), their adornment lines
    left out. A window is cut at a word count; a title with its underline in the middle
    of one reads as the end of the list before it ("Customizing instance and subclass
    checks ====" became a use of metaclasses in issue 41's trial on Python's reference),
    where "## Customizing ..." on a line of its own does not."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        title = line.strip()
        over = _ADORNMENT.match(title)
        if over and i + 2 < len(lines) and lines[i + 2].strip() == title:
            inner = lines[i + 1].strip()
            if inner and not _ADORNMENT.match(inner) and len(title) >= len(inner):
                out.append(f"## {inner}")
                i += 3
                continue
        under = _ADORNMENT.match(lines[i + 1].strip()) if i + 1 < len(lines) else None
        if (
            under
            and title
            and not over
            and line == line.lstrip()  # an indented line is a block's, not a title
            and len(lines[i + 1].strip()) >= min(len(title), 3)
            and (i == 0 or not lines[i - 1].strip())
        ):
            out.append(f"## {title}")
            i += 2
            continue
        out.append(line)
        i += 1
    return out


def render_markup(text: str) -> str:
    r"""``text`` with its reStructuredText directives, field lists, roles and literals
    written as a rendered page shows them.

    >>> render_markup(".. versionadded:: 3.0")
    'New in version 3.0.'
    >>> render_markup(":param name: The name of the group command.")
    'Parameter `name`: The name of the group command.'
    >>> render_markup("See :meth:`~click.Context.invoke` and ``ctx.obj``.")
    'See `invoke` and `ctx.obj`.'
    >>> render_markup("Plain prose stays as it is: 1 :: 2.")
    'Plain prose stays as it is: 1 :: 2.'
    >>> render_markup("Intro.\n\nUses\n----\nThe uses are boundless.")
    'Intro.\n\n## Uses\nThe uses are boundless.'
    """
    lines = text.split("\n")
    if any(_ADORNMENT.match(line.strip()) for line in lines):
        lines = _headings(lines)
        text = "\n".join(lines)
    if ":" not in text and "``" not in text:
        return text
    kept = [_directive(line) for line in lines]
    out = "\n".join(line for line in kept if line is not None)
    out = _FIELD.sub(_field, out)
    out = _ROLE.sub(_role, out)
    out = _LITERAL.sub(lambda found: f"`{found['body']}`", out)
    return _DOUBLE_COLON.sub(":", out)


__all__ = ["render_markup"]
