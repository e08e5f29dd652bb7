"""ragaudit generate --documents against the scripted LLM server over real HTTP: pairs
written from the corpus, checked, worded and written into the document half of the
dataset; replies that stay malformed are dropped candidates with their reason; a rerun
asks nothing; a generation that accepts nothing fails and leaves the dataset as it was."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ragaudit.documents.checks import CRITIQUES
from ragaudit.records import QueryRecord, read_jsonl
from ragaudit.records.models import CandidateRecord
from tests.support.cli import ragaudit
from tests.support.scripted_llm_server import Reply, ScriptedLLMServer

DOCS = {
    "Alder Bridge": "Alder Bridge is being built in Norhaven. Work began on 3 May 2021. "
    "Completion is planned for 9 June 2023. Mira Tessel manages the project.",
    "Birch Tunnel": "Birch Tunnel is being built in Eastmoor. Work began on 12 March 2019. "
    "The client is Copperline Group. Oren Vail directs the project.",
    "Cedar Depot": "Cedar Depot is being built in Southfield. Work began on 1 April 2020. "
    "The client is Larkspur Trust. Ines Morrow manages the project.",
}


# What every phrasing of the labeller's instructions asks for.
LABELLER = '{"label": "fact_single" or "summary"'


def _facts(context: str) -> str:
    name = next((n for n in DOCS if n in context), None)
    if name is None:  # another corpus (a generated company's reports): its first sentences
        text = context.rsplit("\n\n", 1)[-1]
        sentences = [s.strip() + "." for s in text.split(". ") if len(s.split()) > 3][:4]
        return "Theme: a construction project\n" + "\n".join(f"> {s}" for s in sentences)
    sentences = [s.strip() + "." for s in DOCS[name].split(".") if s.strip()]
    return f"Theme: the {name} project\n" + "\n".join(f"> {s}" for s in sentences)


def _question(prompt: str) -> str:
    statement = prompt.split("Statement: ", 1)[1]
    name = next((n for n in DOCS if n in prompt), None)
    if name is None:
        words = re.sub(r"[^\w ]", "", statement).split()
        return "What is stated about " + " ".join(words[:6]) + "?"
    if "Conclusion" in statement:
        return f"Why does {name} matter to its region?"
    if "Summary" in statement:
        return f"Where and when was {name} built?"
    if "began" in statement:
        return f"When did work on {name} begin?"
    if "built in" in statement:
        return f"Where is {name} being built?"
    if "client" in statement:
        return f"Who is the client of {name}?"
    if "Completion" in statement:
        return f"When is {name} due to be complete?"
    return f"Who leads the {name} project?"


# What the scripted reader reads for each kind of question, by its words (a short
# wording keeps them), from the passages.
_READ = (
    (("Where", "when"), r"built in (\w+)\. Work began on ([\w ]+)\."),
    (("client",), r"client is ([\w ]+)\."),
    (("leads",), r"(\w+ \w+) (?:manages|directs)"),
    (("complete",), r"planned for ([\w ]+)\."),
    (("work", "begin"), r"Work began on ([\w ]+)\."),
    (("Where",), r"built in (\w+)"),
)


def _read(passages: str, question: str) -> str | None:
    """The scripted reader's answer: the value the question's words ask for."""
    if question.startswith("Why does"):  # a conclusion: read back, and rated ungrounded
        return "it holds several facts"
    about = re.match(r"What (?:is )?stated about (.+?)\??$", question)
    if about:  # another corpus: the sentence itself (its short wording too)
        start = about.group(1)
        start = start.removeprefix("In summary ")  # a summary: the first fact it merges
        # Read as its short wording is written too: without the function words.
        want = [w for w in start.split() if w not in FILLER]
        for sentence in re.split(r"(?<=\.)\s+|\n+", passages):
            words = [w for w in re.sub(r"[^\w ]", "", sentence).split() if w not in FILLER]
            if want and words[: len(want)] == want:
                return sentence.strip()
        return None
    for words, pattern in _READ:
        if all(w in question for w in words):
            found = re.search(pattern, passages)
            return ", ".join(found.groups()) if found else None
    return None


# What the scripted model leaves out of a question to word it briefly.
FILLER = frozenset({"is", "did", "does", "was", "the", "of", "on", "to", "be", "its"})


class Script:
    """What the scripted model answers, by the system prompt of each ask; ``broken``
    names the kinds of ask whose every reply is malformed."""

    def __init__(self, broken: frozenset[str] = frozenset()) -> None:
        self.broken = broken
        self.kinds: Counter[str] = Counter()

    def __call__(self, body: dict[str, Any]) -> str:
        system = body["messages"][0]["content"]
        last = body["messages"][-1]["content"]
        first_user = body["messages"][1]["content"]
        kind = next(
            k
            for k, marker in (
                ("facts", "You extract facts"),
                ("combined", "You work with statements"),
                ("unanswerable", "that the given statements cannot"),
                ("question", "You write one question"),
                ("critique", "You review test questions"),
                ("label", LABELLER),
                ("reading", "You answer a question from numbered passages"),
                ("wording", "You reword questions"),
                ("simple", "You write test questions"),
            )
            if marker in system
        )
        self.kinds[kind] += 1
        if kind in self.broken:
            return "Sorry, I cannot help with that."
        if kind == "facts":
            return _facts(first_user)
        if kind == "combined":
            name = next((n for n in DOCS if n in first_user), "the project")
            if "Merge" not in first_user:
                return "\n".join(f"> Conclusion {i} of {name} holds several facts." for i in "ABC")
            # Summaries that merge the first facts, as a model writes them.
            if name not in DOCS:  # another corpus: its first facts, two at a time
                facts = [x[2:].rstrip(".") for x in first_user.splitlines() if x.startswith("> ")]
                return "\n".join(
                    f"> In summary, {facts[i]}, and {facts[i + 1][0].lower()}{facts[i + 1][1:]}."
                    for i in range(min(3, len(facts) - 1))
                )
            text = DOCS.get(name, "")
            place = re.search(r"built in (\w+)", text)
            began = re.search(r"Work began on ([\w ]+)\.", text)
            where = place.group(1) if place else "its town"
            when = began.group(1) if began else "a spring day"
            return "\n".join(
                f"> In summary, {name} is being built in {where}, where work began on {when}{end}"
                for end in (".", " (summary).", " as planned.")
            )
        if kind == "unanswerable":
            name = next((n for n in DOCS if n in first_user), "the project")
            return f"How much did {name} cost?"
        if kind == "question":
            return _question(first_user)
        if kind == "critique":
            low = "Why does" in first_user  # conclusions: ungrounded, by this script
            grounding = 2 if low else 5
            return json.dumps(
                {
                    "stand_alone": [5, "names its subject"],
                    "specificity": [4, "one project"],
                    "question_grounding": [grounding, "stated"],
                    "answer_grounding": [grounding, "stated"],
                }
            )
        if kind == "label":
            question = first_user.rsplit("Question: ", 1)[1]
            label = "summary" if "Where and when" in question else "fact_single"
            return json.dumps({"label": label, "reason": "scripted"})
        if kind == "reading":
            # A reference is read back: the value the question asks for, from a passage
            # that states it (a question no sentence answers: unknown).
            question = first_user.rsplit("Question: ", 1)[1]
            found = _read(first_user.split("\n\nQuestion: ", 1)[0], question)
            if found:
                return json.dumps({"answer": found, "passage": 1})
            return '{"answer": "unknown", "passage": null}'
        if kind == "wording":
            # Short: the question without its function words, its question words and
            # names kept (a wording that loses them asks something else).
            question = last.rsplit("Question: ", 1)[1]
            words = re.sub(r"[?]", "", question).split()
            return " ".join(w for w in words if w not in FILLER) + "?"  # "The" is kept
        name = next(n for n in DOCS if n in first_user)
        return json.dumps(
            {"pairs": [{"question": f"Where is {name} being built?", "answer": "Norhaven"}]}
        )


def _setup(
    tmp_path: Path, server: ScriptedLLMServer, extra: str = "", llm: str = ""
) -> dict[str, str]:
    docs = [{"id": k, "text": v} for k, v in DOCS.items()]
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (tmp_path / "ragaudit.yaml").write_text(
        f"llm:\n  model: openai:scripted\n{llm}corpus:\n  path: docs.jsonl\n"
        "templates:\n  styles: [short]\n" + extra
    )
    return {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-t-0000000000"}


def _candidates(tmp_path: Path) -> list[CandidateRecord]:
    return list(read_jsonl(tmp_path / "runs/default/candidates.jsonl", CandidateRecord))


def _dataset(tmp_path: Path) -> list[QueryRecord]:
    return list(read_jsonl(tmp_path / "runs/default/dataset.jsonl", QueryRecord))


def test_statements_fill_the_label_quotas_and_reruns_ask_nothing(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    script = Script()
    root = tmp_path / "runs/default"
    seen: list[tuple[int, bool]] = []  # at each critique: candidates decided, final file?

    def watching(body: dict[str, Any]) -> str:
        if "You review test questions" in body["messages"][0]["content"]:
            partial = root / "candidates.jsonl.partial"
            lines = len(partial.read_text().splitlines()) if partial.exists() else -1
            seen.append((lines, (root / "candidates.jsonl").exists()))
        return script(body)

    llm_server.responder = watching
    env = _setup(tmp_path, llm_server)
    # An SQL half already in the dataset stays.
    sql = {
        "query_id": "q1", "group_id": "g1", "variant": "short", "query": "Alder Bridge place?",
        "reference": {"values": ["Norhaven"], "display": "Norhaven"},
    }  # fmt: skip
    (tmp_path / "runs/default").mkdir(parents=True)
    (tmp_path / "runs/default/dataset.jsonl").write_text(json.dumps(sql) + "\n")
    args = (
        "generate",
        "--documents",
        "--size",
        "6",
        "--mix",
        "fact_single=2,summary=1,unanswerable=1",
    )
    result = ragaudit(*args, cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    candidates = _candidates(tmp_path)
    accepted = [c for c in candidates if c.accepted]
    assert Counter(c.requested_label for c in accepted) == {
        "fact_single": 3, "summary": 2, "unanswerable": 1,
    }  # fmt: skip
    for c in accepted:
        assert c.critiques is not None and c.question and c.gold_ids == [c.context_id[:-2]]
        assert c.calls >= 3 and c.tokens > 0
        if c.requested_label == "fact_single":
            assert c.statement_kind == "fact" and c.answer == c.statement
            assert c.support and c.support.startswith("words: every content word")
            assert c.observed_label == "fact_single"
        if c.requested_label == "unanswerable":
            assert c.answer is None and c.support.startswith("unanswerable: none of 3")
    dataset = _dataset(tmp_path)
    assert [q.query_id for q in dataset if q.source == "sql"] == ["q1"]
    documents = [q for q in dataset if q.source == "document"]
    groups = Counter(q.group_id for q in documents)
    assert len(groups) == 6 and set(groups.values()) == {2}  # generated + short
    assert {q.variant for q in documents} == {"generated", "short"}
    unanswerable = [q for q in documents if q.label == "unanswerable"]
    assert unanswerable and all(q.reference.values == [] and q.gold_ids == [] for q in unanswerable)
    facts = [q for q in documents if q.label == "fact_single"]
    assert all(q.gold_ids and q.gold_ids[0] in DOCS for q in facts)
    stats = json.loads((tmp_path / "runs/default/documents.stats.json").read_text())
    assert stats["accepted"] == 6 and stats["calls_per_pair"] > 3
    assert "LLM requests per accepted pair" in result.stdout
    # Issue 41 item 5: the candidates are appended as they are decided, to a file that
    # says it is partial (candidates.jsonl, whole, comes at the end and replaces it) ...
    assert seen[0] == (0, False) and max(n for n, _ in seen) >= 1
    assert not any(final for _, final in seen)
    assert not (root / "candidates.jsonl.partial").exists()
    # ... and, stderr not being a terminal, the progress is plain lines with the tallies.
    assert "pairs accepted: started, 6 to do" in result.stderr
    # The count is the pairs accepted, the tally the candidates dropped: no line can
    # say "0/6; accepted 1" (a tally set before its count moved).
    lines = [x for x in result.stderr.splitlines() if x.startswith("pairs accepted: ")]
    assert lines and not [x for x in lines if "accepted " in x.split(": ", 1)[1]]
    assert re.search(r"^pairs accepted: done, 6/6(; dropped \d+)?, in ", result.stderr, re.M)
    assert re.search(r"^wording pairs: done, 6/6, in ", result.stderr, re.M)
    asked = llm_server.request_count
    again = ragaudit(*args, cwd=tmp_path, env=env)
    assert again.returncode == 0, again.stderr
    assert llm_server.request_count == asked  # every reply came from the cache
    assert _candidates(tmp_path) == candidates
    # The SQL half is kept by a rerun of the SQL generation too: see test_generate_files.


def test_the_cost_per_pair_is_one_figure_under_one_label_everywhere(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    """The figure "LLM requests per accepted pair" is every request of the generation (each
    candidate's, dropped ones included, and the accepted pairs' wordings) over the pairs
    accepted: the same number in the terminal, documents.stats.json, summary.json,
    summary.md and the report (issue 41, item 3)."""
    llm_server.responder = Script()
    env = _setup(tmp_path, llm_server)
    args = ("generate", "--documents", "--size", "4", "--mix", "fact_single=3,summary=1")
    result = ragaudit(*args, cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    asked = llm_server.request_count  # the first run asks everything: no cache yet
    candidates = _candidates(tmp_path)
    accepted = [c for c in candidates if c.accepted]
    assert accepted and all(c.wordings for c in accepted)
    assert sum(c.calls for c in candidates) == asked  # every request is some pair's
    per_pair = f"{asked / len(accepted):.1f}"
    shown = re.search(r"LLM requests per accepted pair[\s│]+([\d.]+)", result.stdout)
    assert shown is not None and shown.group(1) == per_pair
    stats = json.loads((tmp_path / "runs/default/documents.stats.json").read_text())
    assert stats["calls"] == asked and f"{stats['calls_per_pair']:.1f}" == per_pair
    assert ragaudit("analyze", cwd=tmp_path).returncode == 0
    summary = json.loads((tmp_path / "runs/default/summary.json").read_text())
    figures = summary["documents"]["strategies"]["statements"]
    assert figures["calls"] == asked and f"{figures['calls_per_pair']:.1f}" == per_pair
    markdown = (tmp_path / "runs/default/summary.md").read_text()
    assert "LLM requests per accepted pair" in markdown
    report = ragaudit("report", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    html = (tmp_path / "runs/default/report.html").read_text()
    header = html.index("LLM requests per accepted pair")
    row = html.index("<td>statements</td>", header)
    assert f'<td class="num">{per_pair}</td>' in html[row : html.index("</tr>", row)]
    assert "LLM calls per accepted pair" not in html


def test_malformed_replies_are_reasked_then_dropped_with_the_reason(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    script = Script(broken=frozenset({"critique"}))
    llm_server.responder = script
    env = _setup(tmp_path, llm_server)
    result = ragaudit(
        "generate", "--documents", "--size", "2", "--mix", "fact_single", cwd=tmp_path, env=env
    )
    assert result.returncode != 0
    assert "no pair accepted" in result.stderr and "llm" in result.stderr
    assert "Traceback" not in result.stderr
    candidates = _candidates(tmp_path)
    assert candidates and not any(c.accepted for c in candidates)
    assert all(c.dropped and c.dropped.startswith("llm: check:") for c in candidates)
    # Asked, then again with the error; the same broken reply twice is not asked a third time.
    assert script.kinds["critique"] == 2 * len(candidates)
    assert not (tmp_path / "runs/default/dataset.jsonl").exists()


def test_a_rerun_replays_unusable_replies_and_retry_failed_asks_them_again(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    """Issue 41 item 6: a rerun over a finished cache asked again every reply it could not
    use (13 calls, 110 s). An unusable reply is a reply: replayed from the cache, it is
    dropped again for the same reason; ``--retry-failed`` asks for it again."""
    script = Script(broken=frozenset({"critique"}))
    llm_server.responder = script
    env = _setup(tmp_path, llm_server, "generate:\n  documents:\n    rounds: 1\n")
    args = ("generate", "--documents", "--size", "2", "--mix", "fact_single")
    first = ragaudit(*args, cwd=tmp_path, env=env)
    assert first.returncode != 0 and "no pair accepted" in first.stderr
    candidates = _candidates(tmp_path)
    asked = llm_server.request_count
    again = ragaudit(*args, cwd=tmp_path, env=env)
    assert llm_server.request_count == asked  # nothing asked: every reply is in the cache
    assert again.returncode != 0 and _candidates(tmp_path) == candidates
    llm_server.responder = Script()  # the model is fixed
    retried = ragaudit(*args, "--retry-failed", cwd=tmp_path, env=env)
    assert retried.returncode == 0, retried.stderr
    assert llm_server.request_count > asked
    assert sum(c.accepted for c in _candidates(tmp_path)) == 2


def test_a_shortfall_is_explained_per_reason(llm_server: ScriptedLLMServer, tmp_path: Path) -> None:
    llm_server.responder = Script()
    env = _setup(tmp_path, llm_server, "generate:\n  documents:\n    rounds: 1\n")
    # The script's conclusions ("Conclusion A of X holds several facts.") are no statement
    # of their context: most of their words are not in it, so reasoning questions all fail.
    result = ragaudit(
        "generate", "--documents", "--size", "4", "--mix", "fact_single=1,reasoning=1",
        cwd=tmp_path, env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert re.search(
        r"warning: 2 of 4 pairs accepted .*short: reasoning 0/2.*dropped: \d+ support",
        result.stderr,
    )
    dropped = [c for c in _candidates(tmp_path) if not c.accepted]
    assert dropped and all(
        c.dropped and c.dropped.startswith("support: the statement is not the context's")
        for c in dropped
    )


def test_a_pair_the_critiques_rate_low_is_dropped_with_their_ratings(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    """A statement of its context, read back alike, that a critique rates under its
    threshold is dropped, the critique and its rating named."""

    class LowOnClients(Script):
        def __call__(self, body: dict[str, Any]) -> str:
            reply = super().__call__(body)
            review = "You review test questions" in body["messages"][0]["content"]
            if review and "Who is the client of" in body["messages"][1]["content"]:
                ratings = json.loads(reply)
                ratings["question_grounding"] = [2, "scripted low"]
                return json.dumps(ratings)
            return reply

    llm_server.responder = LowOnClients()
    env = _setup(tmp_path, llm_server, "generate:\n  documents:\n    rounds: 4\n")
    result = ragaudit(
        "generate", "--documents", "--size", "12", "--mix", "fact_single=1",
        cwd=tmp_path, env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    candidates = _candidates(tmp_path)
    low = [c for c in candidates if c.question and c.question.startswith("Who is the client of")]
    assert low and all(not c.accepted for c in low)
    assert all(c.dropped == "critique: question_grounding 2<3 (scripted low)" for c in low)
    assert all(c.support and "every content word" in c.support for c in low)
    assert any(c.accepted for c in candidates)  # the other statements pass


def test_simple_pairs_are_checked_and_labelled_by_the_labeller(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    llm_server.responder = Script()
    env = _setup(tmp_path, llm_server)
    result = ragaudit(
        "generate", "--documents", "--strategy", "simple", "--size", "3", cwd=tmp_path, env=env
    )
    assert result.returncode == 0, result.stderr
    candidates = _candidates(tmp_path)
    # Two rounds over three contexts; the script writes the same pair for a context each
    # time, with the answer "Norhaven", which only Alder Bridge's report holds.
    assert len(candidates) == 6
    first = [c for c in candidates if c.round == 0]
    again = [c for c in candidates if c.round == 1]
    by_context = {c.context_id: c for c in first}
    assert by_context["Alder Bridge#0"].accepted
    for name in ("Birch Tunnel#0", "Cedar Depot#0"):
        assert by_context[name].dropped == "support: no word of the short answer is in the context"
    assert [c.dropped for c in again if c.context_id == "Alder Bridge#0"] == [
        f"near-duplicate: of {by_context['Alder Bridge#0'].candidate_id} (cosine 1.00)"
    ]
    assert "1 of 3 pairs accepted" in result.stderr
    labels = {q.label for q in _dataset(tmp_path) if q.source == "document"}
    assert labels == {"fact_single"}  # the labeller's label: no label was requested


# Reference pages where a simple pair can be wrong by a word (issue 41's trial on
# Python's reference): each page's pair, and what the reader reads for it.
TALLOW = {
    "tallow.Schema": (
        "tallow.Schema\n\nThe following methods can be overridden to change how a schema "
        "validates a key: check_type(), check_range() and check_required().",
        "What method can be overridden to change how a tallow schema validates a key?",
        "check_type()",
    ),
    "tallow": (
        'tallow\n\nThe module "tallow" defines the class "Tallow", which holds one loaded '
        "configuration.",
        "What is the name of the class that holds one loaded configuration?",
        "tallow",
    ),
    "tallow.merge": (
        "tallow.merge\n\nCombine several settings dictionaries into one; a later one wins "
        "where two give the same key.",
        "What is the purpose of tallow.merge?",
        "tallow.merge is used to load configuration files from disk into one validated "
        "schema object for the application.",
    ),
    "tallow.dump": (
        "tallow.dump\n\nThe `indent` parameter sets the number of spaces each level is "
        "indented by.",
        "What parameter of tallow.dump sets the number of spaces per level?",
        "indent",
    ),
}


def test_a_simple_answer_that_is_one_of_several_or_right_by_its_case_is_dropped(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    """Issue 41's trial on Python's reference accepted "object.__getattr__" for "What
    method is used to customize the meaning of attribute access ...?" (the page lists four
    such methods) and "pdb" for the name of the debugger's class ("Pdb"): the model's own
    reading read the same, and every critique gave 5. Both are dropped before the reading
    is asked, with their reason; so is an answer written as a sentence the page does not
    make ("The 'import' statement is used to import modules in Python, which allows you
    to use the functions ..." from a page that never says so, in a later run: the model's
    own knowledge, confirmed by its own reading). A pair right as written is accepted."""
    read: list[str] = []

    def pages(body: dict[str, Any]) -> str:
        system = body["messages"][0]["content"]
        first_user = body["messages"][1]["content"]
        page = next(k for k, (text, _, _) in TALLOW.items() if text in first_user)
        _, question, answer = TALLOW[page]
        if "You write test questions" in system:
            return json.dumps({"pairs": [{"question": question, "answer": answer}]})
        if "You answer a question from numbered passages" in system:
            read.append(first_user.rsplit("Question: ", 1)[1])
            return json.dumps({"answer": answer, "passage": 1})
        if "You review test questions" in system:
            return json.dumps({k: [5, "scripted"] for k in CRITIQUES})
        if LABELLER in system:
            return json.dumps({"label": "fact_single", "reason": "scripted"})
        return "Spaces per level of tallow.dump output?"  # a short wording

    llm_server.responder = pages
    env = _setup(tmp_path, llm_server)
    docs = [{"id": k, "text": text} for k, (text, _, _) in TALLOW.items()]
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    result = ragaudit(
        "generate", "--documents", "--strategy", "simple", "--size", "3", cwd=tmp_path, env=env
    )
    assert result.returncode == 0, result.stderr
    dropped = {c.context_id: c.dropped for c in _candidates(tmp_path) if c.round == 0}
    assert dropped["tallow.Schema#0"] == (
        "question: it asks for one method where its context gives several ('The following "
        "methods can be overridden to change how a schema validates a key: ')"
    )
    assert dropped["tallow#0"] == (
        "support: its answer 'tallow' is right or wrong by its case: the context also "
        "writes 'Tallow'"
    )
    assert dropped["tallow.merge#0"] == (
        "support: the answer is not the context's: 18% of its content words are in it (at "
        "least 85% must be)"
    )
    assert dropped["tallow.dump#0"] is None
    assert read == [TALLOW["tallow.dump"][1]]  # the dropped pairs cost no reading
    assert "1 of 3 pairs accepted" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--documents", "--mix", "trivia=1"), "unknown label 'trivia'"),
        (("--documents", "--strategy", "simple", "--mix", "summary"), "needs strategy: statements"),
        (("--size", "3"), "go with --documents"),
    ],
)
def test_bad_generation_options_are_one_line_errors(
    tmp_path: Path, llm_server: ScriptedLLMServer, args: tuple[str, ...], message: str
) -> None:
    env = _setup(tmp_path, llm_server)
    result = ragaudit("generate", *args, cwd=tmp_path, env=env)
    assert result.returncode != 0
    assert message in result.stderr and "Traceback" not in result.stderr
    assert llm_server.request_count == 0


def test_no_corpus_is_a_clear_error(tmp_path: Path, llm_server: ScriptedLLMServer) -> None:
    (tmp_path / "ragaudit.yaml").write_text("llm:\n  model: openai:scripted\n")
    env = {"OPENAI_BASE_URL": llm_server.base_url, "OPENAI_API_KEY": "sk-t-0000000000"}
    result = ragaudit("generate", "--documents", cwd=tmp_path, env=env)
    assert result.returncode != 0 and "needs a corpus" in result.stderr
    assert "Traceback" not in result.stderr


def test_server_errors_are_dropped_candidates_not_a_crash(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    script = Script()
    llm_server.responder = lambda body: (
        Reply(status=500) if LABELLER in body["messages"][0]["content"] else script(body)
    )
    env = _setup(tmp_path, llm_server, llm="  max_retries: 0\n")
    result = ragaudit(
        "generate", "--documents", "--size", "2", "--mix", "fact_single", cwd=tmp_path, env=env
    )
    assert result.returncode != 0 and "no pair accepted" in result.stderr
    assert all(c.dropped and c.dropped.startswith("label:") for c in _candidates(tmp_path))


def test_generate_from_the_config_init_documents_writes(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    """A documents-only user's first steps: ``init --documents``, put the documents where
    the file says, point llm.model at a server, and generate with the file's defaults."""
    llm_server.responder = Script()
    assert ragaudit("init", "--documents", cwd=tmp_path).returncode == 0
    config = tmp_path / "ragaudit.yaml"
    text = config.read_text()
    assert "\n  model: local\n" in text
    config.write_text(text.replace("\n  model: local\n", "\n  model: openai:scripted\n"))
    folder = tmp_path / "documents"  # where the written corpus.path points
    folder.mkdir()
    for name, body in DOCS.items():
        (folder / f"{name}.txt").write_text(body + "\n")
    env = {"OPENAI_BASE_URL": llm_server.base_url, "OPENAI_API_KEY": "sk-t-0000000000"}
    # The mix is given: the script rates conclusions ungrounded (no reasoning pairs).
    args = ("generate", "--documents", "--size", "3", "--mix", "fact_single=2,summary=1")
    result = ragaudit(*args, cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    documents = [q for q in _dataset(tmp_path) if q.source == "document"]
    groups = {q.group_id for q in documents}
    assert len(groups) == 3, result.stdout + result.stderr
    assert all(q.gold_ids and q.gold_ids[0] in DOCS for q in documents)
    assert not [q for q in _dataset(tmp_path) if q.source == "sql"]


def test_a_wording_of_the_wrong_length_is_asked_once_more_and_its_drops_are_one_kind(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    """Issue 41: 6 of 12 short wordings were a word or two over the style's 12, and each
    count was its own drop reason ("13 words ...", "14 words ..."). A wording of the wrong
    length is asked once more, told by how much; one still too long is dropped, counted
    under one reason, ``length``."""
    script = Script()
    again: list[str] = []

    def long_first(body: dict[str, Any]) -> str:
        messages = body["messages"]
        if "You reword questions" not in messages[0]["content"]:
            return script(body)
        question = messages[1]["content"].rsplit("Question: ", 1)[1]
        long = question.rstrip("?") + " as the project files of the construction company state it?"
        if len(messages) == 2:  # the first ask
            return long
        again.append(messages[-1]["content"])
        if "Alder Bridge" in question:  # told, and still too long
            return long
        return " ".join(w for w in question.rstrip("?").split() if w.lower() not in FILLER) + "?"

    llm_server.responder = long_first
    env = _setup(tmp_path, llm_server)
    result = ragaudit(
        "generate", "--documents", "--size", "6", "--mix", "fact_single=1", cwd=tmp_path, env=env
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    accepted = [c for c in _candidates(tmp_path) if c.accepted]
    assert len(again) == len(accepted) == 6
    assert all("the short style allows at most 12" in told for told in again)
    for c in accepted:
        (wording,) = c.wordings
        alder = "Alder Bridge" in (c.question or "")
        assert wording.kept is not alder
        if alder:
            assert wording.reason is not None and wording.reason.startswith("length: ")
    alders = sum("Alder Bridge" in (c.question or "") for c in accepted)
    assert 0 < alders < 6
    stats = json.loads((tmp_path / "runs/default/documents.stats.json").read_text())
    assert stats["wordings"]["short"] == {"kept": 6 - alders, "length": alders}


def test_a_statement_that_only_restates_its_question_is_dropped(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    """Issue 41's trial: "What is the name of the group command?" was accepted with the
    reference "The name of the group command." (the page's ``:param name:`` line): the
    reader finds it in the context, so only a check that the statement adds something to
    its question drops it. Here the model writes the place into the question of the
    statement "X is being built in Y." ("Where in Y is X being built?"); those candidates
    are dropped with that reason and the others pass."""
    script = Script()

    def restating(body: dict[str, Any]) -> str:
        if "You write one question" in body["messages"][0]["content"]:
            statement = body["messages"][1]["content"].split("Statement: ", 1)[1]
            built = re.match(r"(.+) is being built in (\w+)\.", statement)
            if built:
                return f"Where in {built.group(2)} is {built.group(1)} being built?"
        return script(body)

    llm_server.responder = restating
    env = _setup(tmp_path, llm_server)
    result = ragaudit(
        "generate", "--documents", "--size", "4", "--mix", "fact_single", cwd=tmp_path, env=env
    )
    assert result.returncode == 0, result.stderr
    candidates = _candidates(tmp_path)
    restated = [c for c in candidates if c.statement and " is being built in " in c.statement]
    assert restated and all(
        c.dropped and c.dropped.startswith("question: it only restates its question")
        for c in restated
    )
    accepted = [c for c in candidates if c.accepted]
    assert len(accepted) == 4 and not any(c in restated for c in accepted)


def test_a_question_that_does_not_name_its_subject_is_dropped(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    """Issue 41's trial: "What is the name of the CLI?" and "What is the character set for
    the input and output data?" were accepted (every critique 5) from reference pages that
    all have a name and data; their references were a program's name and a parameter's.
    Here the model asks "When did work begin?" of every report's start date, which all
    three reports give: those candidates are dropped with the reason and the rest pass."""
    script = Script()

    def vague(body: dict[str, Any]) -> str:
        if "You write one question" in body["messages"][0]["content"]:
            statement = body["messages"][1]["content"].split("Statement: ", 1)[1]
            if statement.startswith("Work began on"):
                return "When did work begin?"
        return script(body)

    llm_server.responder = vague
    env = _setup(tmp_path, llm_server)
    result = ragaudit(
        "generate", "--documents", "--size", "4", "--mix", "fact_single", cwd=tmp_path, env=env
    )
    assert result.returncode == 0, result.stderr
    candidates = _candidates(tmp_path)
    asked = [c for c in candidates if c.question == "When did work begin?"]
    assert asked and all(
        c.dropped and c.dropped.startswith("question: it does not name its subject") for c in asked
    )
    assert sum(c.accepted for c in candidates) == 4


def test_a_reading_cut_at_its_token_limit_is_read_as_far_as_it_got(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    """Issue 41's trial lost 3 of 45 candidates to ``llm: check``: the model copied a long
    passage into the reading's answer, the reply was cut at the token limit inside it, and
    each re-ask was cut the same way. Here every reading is cut inside its answer string,
    after the right answer: the pairs are read from what the replies completed and
    accepted, each reading asked once."""
    script = Script()
    readings: list[str] = []

    def cut_readings(body: dict[str, Any]) -> str:
        reply = script(body)
        if "You answer a question from numbered passages" not in body["messages"][0]["content"]:
            return reply
        readings.append(body["messages"][-1]["content"])
        answer = json.loads(reply)["answer"]
        return '```json\n{\n  "answer": "' + answer  # cut before the closing quote

    llm_server.responder = cut_readings
    env = _setup(tmp_path, llm_server)
    result = ragaudit(
        "generate", "--documents", "--size", "4", "--mix", "fact_single", cwd=tmp_path, env=env
    )
    assert result.returncode == 0, result.stderr
    candidates = _candidates(tmp_path)
    assert not any(c.dropped and c.dropped.startswith("llm") for c in candidates), [
        c.dropped for c in candidates
    ]
    assert sum(c.accepted for c in candidates) == 4, [c.dropped for c in candidates]
    assert len(readings) == len(set(readings))  # no reading was asked again


def test_a_reading_that_agrees_only_in_the_questions_words_drops_the_pair(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    """Issue 41's trial: for "What is the default name of the help parameter?" the model
    read "['--help']", whose one word, "help", is in the reference "The
    help_option_names parameter is used to define how the default help parameter is
    named": the reading agreed and a reference that does not give the name passed. The
    answers are compared on what each says beyond the question. Here the reader reads
    "['--project']" for "Who leads the X project?" (the reference names a person): those
    pairs are dropped by the reading; the rest pass."""
    script = Script()

    def reading_a_symbol(body: dict[str, Any]) -> str:
        reading = "You answer a question from numbered passages" in body["messages"][0]["content"]
        if reading and body["messages"][1]["content"].rstrip().endswith("project?"):
            return json.dumps({"answer": "['--project']", "passage": 1})
        return script(body)

    llm_server.responder = reading_a_symbol
    env = _setup(tmp_path, llm_server)
    result = ragaudit(
        "generate", "--documents", "--size", "4", "--mix", "fact_single", cwd=tmp_path, env=env
    )
    assert result.returncode == 0, result.stderr
    candidates = _candidates(tmp_path)
    leads = [c for c in candidates if c.question and c.question.startswith("Who leads")]
    assert leads and all(
        c.dropped and c.dropped.startswith("reading: the context gives \"['--project']\"")
        for c in leads
    )
    assert sum(c.accepted for c in candidates) == 4
