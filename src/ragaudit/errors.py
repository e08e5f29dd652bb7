"""The error hierarchy.

A :class:`UserError` is something the user can fix (a config key, a database
URL, an unreachable server, LLM output that never became valid). The CLI prints
its one-line message and exits non-zero without a traceback; every other
exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import os
import re
from os import PathLike


class RagauditError(Exception):
    """Base class of every error ragaudit raises on purpose."""


class RunNotice(UserWarning):
    """Something ragaudit did on its own that the user should know of, said once: a run
    written before the manifest fingerprinted, a stale summary analyzed again. The command
    line prints it as a ``note:`` line on stderr; Python shows it as a warning."""


class UserError(RagauditError):
    """An error the user can act on; its message is one line saying what and where."""

    exit_code: int = 2

    def __init__(self, message: str) -> None:
        # Keep it to one line whatever the cause said: the CLI prints it as is.
        super().__init__(" ".join(str(message).split()))


class ConfigError(UserError):
    """The configuration file is missing, malformed or invalid."""


class DatabaseError(UserError):
    """The database cannot be reached, or a query cannot run on it."""


class SQLValidationError(UserError):
    """SQL was rejected before it reached the database (not a single read-only SELECT, unknown
    table or column, ...)."""


class PlaceholderError(UserError):
    """A SQL template's placeholders do not match the values given to it."""


class LLMError(UserError):
    """An LLM call failed for good (after the retries it was allowed)."""


class LLMAuthError(LLMError):
    """The server refused the credentials (401/403)."""


class LLMNotFoundError(LLMError):
    """The server does not know the model or the endpoint (404)."""


class LLMTimeoutError(LLMError):
    """Every attempt of a call ran past its timeout."""


class LLMReplyTooLongError(LLMError):
    """The server's reply was larger than the request could need (it ignored max_tokens):
    refused at once, never cached."""


class StructuredOutputError(LLMError):
    """The model's reply never matched the requested structure within the allowed re-asks.
    ``from_cache``: how many of the unusable replies were read back from the cache (stored
    by an earlier run, perhaps from another server) rather than asked of the server now."""

    def __init__(
        self, message: str, *, last_reply: str = "", attempts: int = 0, from_cache: int = 0
    ) -> None:
        super().__init__(message)
        self.last_reply = last_reply
        self.attempts = attempts
        self.from_cache = from_cache


# LLM errors that every call would hit the same way (a wrong key, a wrong model name): a
# step stops on them with their one-line message. Any other LLM error fails one item of a
# step (one judgement, one template's wording), which is recorded as failed with its reason.
FATAL_LLM_ERRORS: tuple[type[LLMError], ...] = (LLMAuthError, LLMNotFoundError)


# Each step a stale input can call for: its command on the command line and its method
# of ``ra.Project``, and how one keyword of the method is written as a flag.
_STEP_DOORS = {
    "run": ("ragaudit run", "project.run"),
    "judge": ("ragaudit judge", "project.judge"),
    "score": ("ragaudit judge --reference-free", "project.score"),
    "analyze": ("ragaudit analyze", "project.analyze"),
    "report": ("ragaudit report", "project.report"),
    "generate": ("ragaudit generate", "project.generate"),
    "refresh": ("ragaudit generate --refresh", "project.refresh"),
    "compare": ("ragaudit compare", "project.compare"),
}
_FLAG_NAMES = {"systems": "--system"}


class StaleInputError(UserError):
    """A file was made from inputs that have changed since (a judgement of an answer the
    system has replaced, verdicts against a reference that is no longer true, figures read
    from neutral files that are gone): it is refused until ``step`` is run again. It
    carries the step and its options, so that each door words what to do its own way:
    :meth:`for_command_line` names the command and its flags (the message as raised),
    :meth:`for_python` the method of ``ra.Project`` and its keywords.

    >>> error = StaleInputError("3 judgements judged older answers", "judge",
    ...                         {"systems": ["rag"]})
    >>> str(error)
    '3 judgements judged older answers: run ragaudit judge --system rag'
    >>> error.for_python()
    "3 judgements judged older answers: call project.judge(systems=['rag'])"
    """

    def __init__(self, what: str, step: str, options: dict[str, object] | None = None) -> None:
        if step not in _STEP_DOORS:
            raise ValueError(f"no step {step!r}")
        self.what = " ".join(str(what).split())
        self.step = step
        self.options = dict(options or {})
        super().__init__(self.for_command_line())

    @classmethod
    def orphan(cls, kind: str, query_id: str, system: str, where: str = "") -> StaleInputError:
        """A ``kind`` record ("response", "judgement") of ``system`` for a question the
        dataset no longer holds (dataset.jsonl edited, or made again, since the system was
        run): the system is asked the dataset as it is again.

        >>> error = StaleInputError.orphan("judgement", "q9", "rag")
        >>> error.what[:44]
        'a judgement of rag for query q9, which datas'
        >>> error.for_command_line().rpartition(": ")[2]
        'run ragaudit run --system rag --rerun'
        """
        return cls(
            f"{where}{': ' if where else ''}a {kind} of {system} for query {query_id}, which "
            f"dataset.jsonl no longer holds (edited or made again since {system} was run)",
            "run",
            {"systems": [system], "rerun": True},
        )

    def for_command_line(self) -> str:
        """The message with the command to run and its flags."""
        flags: list[str] = []
        for key, value in self.options.items():
            flag = _FLAG_NAMES.get(key, "--" + key.replace("_", "-"))
            if value is True:
                flags.append(flag)
            elif isinstance(value, list | tuple):
                flags.extend(f"{flag} {item}" for item in value)
            elif value not in (None, False):
                flags.append(f"{flag} {value}")
        command = " ".join([_STEP_DOORS[self.step][0], *flags])
        return f"{self.what}: run {command}"

    def for_python(self) -> str:
        """The message with the method to call and its keywords."""
        keywords = ", ".join(
            f"{key}={list(value) if isinstance(value, tuple) else value!r}"
            for key, value in self.options.items()
            if value is not None
        )
        return f"{self.what}: call {_STEP_DOORS[self.step][1]}({keywords})"


class ModelAssetError(UserError):
    """The embedded model's weights are missing or corrupt, or its extra is not installed."""


# Characters XML 1.0 does not allow, and that a terminal would obey (an escape sequence in
# a system's name or a query id read from a file): written out as \xNN where shown.
# C1 controls too (U+009B is an escape sequence's start on many terminals), and the two
# non-characters U+FFFE and U+FFFF, which XML 1.0 forbids as well.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufffe\uffff]")


def printable(text: str) -> str:
    r"""``text`` with its control characters written out, for a terminal, a log or XML.

    >>> printable("r\x1b[31mag")
    'r\\x1b[31mag'
    """
    return _CONTROL.sub(_escaped, text)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def check_seed(seed: int) -> None:
    """A resampling seed is a whole number from 0 to
    :data:`~ragaudit.options.MAX_SEED` (numpy's rule, and the configuration's bound),
    said in one line naming the option rather than numpy's "expected non-negative
    integer"."""
    from ragaudit.options import MAX_SEED

    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise UserError(f"seed must be a whole number from 0 to {MAX_SEED:,}, not {seed!r}")


def looked_in(path: PathLike[str] | str) -> str:
    """What to add to "no such file" for a relative ``path``: the folder it was looked for
    in (the working directory), since a relative path in a configuration is read from where
    the command runs, not from the configuration's folder.

    >>> looked_in("/data/rows.jsonl")
    ''
    """
    if os.path.isabs(path):
        return ""
    return f" (a relative path, looked for in {os.getcwd()})"
