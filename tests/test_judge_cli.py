"""ragaudit judge: the cascade over a run's responses, with the LLM judge played by the
scripted server over real HTTP; then ragaudit analyze on the judged run."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from ragaudit.errors import UserError
from ragaudit.records import (
    Judgement,
    QueryRecord,
    Reference,
    ResponseRecord,
    RetrievedItem,
    read_jsonl,
    write_jsonl_atomic,
)
from tests.support.cli import PROGRESS_LINE, ragaudit, without_progress
from tests.support.scripted_llm_server import Reply, ScriptedLLMServer

CASES = [  # query id, group, variant, reference, response, retrieved, error
    ("q1", "g1", "short", ["Paris"], "Paris.", ["d1"], None),
    ("q2", "g1", "long", ["Paris"], "It is the French capital city.", ["d2"], None),
    ("q3", "g2", "short", ["Paris"], "Lyon", ["d1"], None),
    ("q4", "g2", "long", ["Paris"], "I don't know.", ["d1"], None),
    ("q5", "g3", "short", [1000], "About 1,000 staff.", ["d1"], None),
    ("q6", "g3", "long", [1000], None, [], "timeout after 30 s"),
]


def _run_dir(tmp_path: Path) -> Path:
    root = tmp_path / "runs" / "default"
    write_jsonl_atomic(
        root / "dataset.jsonl",
        [
            QueryRecord(
                query_id=q,
                group_id=g,
                variant=v,
                query=f"question {q}?",
                reference=Reference.from_values(ref),
                gold_ids=["d1"],
            )
            for q, g, v, ref, *_ in CASES
        ],
    )
    write_jsonl_atomic(
        root / "responses" / "rag.jsonl",
        [
            ResponseRecord(
                query_id=q,
                system="rag",
                response=resp,
                retrieved=[RetrievedItem(id=d) for d in docs],
                error=err,
            )
            for q, _, _, _, resp, docs, err in CASES
        ],
    )
    return root


def _widened_run_dir(tmp_path: Path) -> Path:
    """:func:`_run_dir` with a second document, d7, retrieved beside every retrieval: a
    top-2 that ``all_gold`` finds right and ``same_set`` never does."""
    root = _run_dir(tmp_path)
    responses = list(read_jsonl(root / "responses" / "rag.jsonl", ResponseRecord))
    widened = [
        r.model_copy(update={"retrieved": [*r.retrieved, RetrievedItem(id="d7")]})
        if r.retrieved
        else r
        for r in responses
    ]
    write_jsonl_atomic(root / "responses" / "rag.jsonl", widened)
    return root


def _judge_responder(body: dict[str, Any]) -> str:
    """A plausible judge: the true answer in the response (digits without separators), or
    the paraphrase it knows, is correct; anything else is not."""
    prompt = body["messages"][-1]["content"]
    truth = prompt.split("True answer: ", 1)[1].split("\n")[0].lower()
    response = prompt.split("Response: ", 1)[1].split("\n")[0].lower().replace(",", "")
    good = "french capital" in response or (truth in response and "don't know" not in response)
    return json.dumps({"verdict": "Correct" if good else "Incorrect", "reason": "scripted"})


def _env(server: ScriptedLLMServer) -> dict[str, str]:
    return {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-t-0000000000"}


def _judgements(root: Path) -> dict[str, Judgement]:
    return {j.query_id: j for j in read_jsonl(root / "judgements" / "rag.jsonl", Judgement)}


def test_cascade_methods_and_resume(llm_server: ScriptedLLMServer, tmp_path: Path) -> None:
    llm_server.responder = _judge_responder
    root = _run_dir(tmp_path)
    result = ragaudit("judge", "--llm", "openai:judge", cwd=tmp_path, env=_env(llm_server))
    assert result.returncode == 0, result.stderr
    got = _judgements(root)
    assert {q: (j.correct, j.method) for q, j in got.items()} == {
        "q1": (True, "match:exact"),
        "q2": (True, "llm"),
        "q3": (False, "llm"),
        "q4": (False, "match:refusal"),
        "q5": (True, "match:number"),
        "q6": (False, "error"),
    }
    assert got["q1"].retrieval_correct is True and got["q2"].retrieval_correct is False
    assert llm_server.request_count == 2  # only the undecided answers reached the LLM
    # stderr is not a terminal: the progress is plain lines, not nothing (issue 41 item 5).
    assert re.search(r"^rag: started\n(rag: \d/6 .*\n)+rag: done, 6/6, in ", result.stderr, re.M)
    assert all(PROGRESS_LINE.match(line) for line in result.stderr.splitlines())
    again = ragaudit("judge", "--llm", "openai:judge", cwd=tmp_path, env=_env(llm_server))
    assert "judged 0 now, 6 before" in again.stdout
    assert "rag: 6/6 done before, going on\nrag: done, 6/6, in " in again.stderr
    assert llm_server.request_count == 2
    assert len((root / "judgements" / "rag.jsonl").read_text().splitlines()) == 6
    stats = json.loads((root / "judge.stats.json").read_text())
    assert stats["rag"]["already_judged"] == 6
    analyzed = ragaudit("analyze", cwd=tmp_path)
    assert analyzed.returncode == 0, analyzed.stderr
    summary = json.loads((root / "summary.json").read_text())["systems"]["rag"]
    assert summary["variants"]["short"]["accuracy"]["k"] == 2  # q1 and q5


def test_a_verdict_cut_at_the_token_limit_is_read_and_the_cut_recorded(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    """A small model's reason runs into the token limit after a complete verdict (issue 41
    item 4: 3 of 34 answers were judge-failed so): the verdict is read as the critiques
    read a cut reply, the reason kept as far as it got and marked cut; nothing re-asked."""
    cut = {
        "It is the French capital city.": '```json\n{"verdict": "Correct", "reason": "a para',
        "Lyon": '{"verdict": "Incorrect", ',
    }

    def respond(body: dict[str, Any]) -> str:
        prompt = body["messages"][1]["content"]  # a re-ask would carry it too
        return cut[prompt.split("Response: ", 1)[1]]

    llm_server.responder = respond
    root = _run_dir(tmp_path)
    result = ragaudit("judge", "--llm", "openai:judge", cwd=tmp_path, env=_env(llm_server))
    assert result.returncode == 0, result.stderr
    got = _judgements(root)
    assert (got["q2"].correct, got["q2"].method) == (True, "llm")
    assert (got["q3"].correct, got["q3"].method) == (False, "llm")
    assert got["q2"].rationale == "a para…(cut)"
    assert got["q3"].rationale == "…(cut)"
    assert llm_server.request_count == 2  # read from the first replies, never re-asked


def _usage_row(stdout: str, step: str) -> dict[str, str]:
    """The cells of ``step``'s row of the LLM usage table a command prints."""
    lines = stdout.splitlines()
    header = next(line for line in lines if "LLM s" in line)
    row = next(line for line in lines if line.strip().startswith(step + " "))
    # Columns stand two spaces apart or more; a header's words one ("tok in").
    names = re.split(r"\s{2,}", header.strip())
    return dict(zip(names, re.split(r"\s{2,}", row.strip()), strict=True))


def test_a_rerun_over_a_finished_cache_asks_nothing_and_reports_no_llm_time(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    """Issue 41 item 4: a rerun over a finished cache reported 111 s of LLM time, for the
    replies it could not use and asked again. Replayed from the cache, they cost nothing,
    and the usage table says so."""
    llm_server.latency = 0.2  # every real call takes time

    def respond(body: dict[str, Any]) -> str:
        return (
            '{"verdict": "Inc'
            if "Lyon" in body["messages"][1]["content"]
            else (_judge_responder(body))
        )

    llm_server.responder = respond
    root = _run_dir(tmp_path)
    first = ragaudit("judge", "--llm", "openai:judge", cwd=tmp_path, env=_env(llm_server))
    assert first.returncode == 0, first.stderr
    assert _judgements(root)["q3"].method == "judge-failed"
    used = _usage_row(first.stdout, "judge")
    # q2, and q3 asked twice: its same unusable reply is not asked for a third time.
    assert used["calls"] == "3" and float(used["LLM s"]) >= 0.6
    asked = llm_server.request_count
    again = ragaudit("judge", "--llm", "openai:judge", cwd=tmp_path, env=_env(llm_server))
    rerun = _usage_row(again.stdout, "judge")
    assert (rerun["calls"], rerun["cached"], rerun["LLM s"]) == ("0", "2", "0.00")
    assert llm_server.request_count == asked
    # q3 is judged again from the cache, and fails as before: not "failed on everything".
    assert again.returncode == 0, again.stderr
    assert "judged 1 now, 5 before" in again.stdout
    assert _judgements(root)["q3"].method == "judge-failed"


def test_the_python_twin_asks_failed_replies_again_only_with_retry_failed(
    llm_server: ScriptedLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Project.judge(retry_failed=True)`` is ``judge --retry-failed`` (issue 41 item 6)."""
    import ragaudit as ra

    for name, value in _env(llm_server).items():
        monkeypatch.setenv(name, value)
    llm_server.responder = lambda body: (
        "I would rather not say."
        if "Lyon" in body["messages"][1]["content"]
        else (_judge_responder(body))
    )
    root = _run_dir(tmp_path)
    project = ra.Project(root=tmp_path, llm="openai:judge", progress="none")
    project.judge()
    assert _judgements(root)["q3"].method == "judge-failed"
    asked = llm_server.request_count
    project.judge()
    assert llm_server.request_count == asked
    llm_server.responder = _judge_responder
    project.judge(retry_failed=True)
    assert llm_server.request_count == asked + 1
    assert (_judgements(root)["q3"].correct, _judgements(root)["q3"].method) == (False, "llm")


def test_samples_audit_and_closed_domain(llm_server: ScriptedLLMServer, tmp_path: Path) -> None:
    llm_server.responder = _judge_responder
    root = _run_dir(tmp_path)
    result = ragaudit(
        "judge",
        "--llm",
        "openai:judge",
        "--samples",
        "3",
        "--audit",
        "2",
        "--closed-domain",
        cwd=tmp_path,
        env=_env(llm_server),
    )
    assert result.returncode == 0, result.stderr
    got = _judgements(root)
    assert (got["q2"].correct, got["q2"].method) == (False, "llm+closed-domain")
    assert got["q2"].rationale.startswith("100% of 3 samples")
    assert "LLM sample agreement: 100%" in result.stdout
    assert "audit: 0 of 2 deterministic decisions disagree" in result.stdout
    assert llm_server.request_count == 2 * 3 + 2


def test_matchers_only(tmp_path: Path) -> None:
    root = _run_dir(tmp_path)
    result = ragaudit("judge", "--no-llm", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    got = _judgements(root)
    assert got["q2"].method == "unmatched" and got["q2"].correct is False
    assert "unmatched 2" in result.stdout


def test_nothing_to_judge_is_one_line(tmp_path: Path) -> None:
    result = ragaudit("judge", "--no-llm", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("error: nothing to judge: no responses in")


# -- the LLM judge failing on some answers (issue 13, defect 1) ------------------------------

CHAOS_N = 60


def _chaos_run(tmp_path: Path) -> Path:
    """60 answers that no matcher decides (each one goes to the LLM judge)."""
    root = tmp_path / "runs" / "default"
    ids = [f"c{i:02d}" for i in range(CHAOS_N)]
    write_jsonl_atomic(
        root / "dataset.jsonl",
        [
            QueryRecord(
                query_id=q,
                group_id=f"g{i // 2}",
                variant="short" if i % 2 else "long",
                query=f"question {q}?",
                reference=Reference.from_values([f"Paris {q}"]),
            )
            for i, q in enumerate(ids)
        ],
    )
    write_jsonl_atomic(
        root / "responses" / "rag.jsonl",
        [
            ResponseRecord(query_id=q, system="rag", response=f"the French capital, {q}")
            for q in ids
        ],
    )
    (tmp_path / "ragaudit.yaml").write_text(
        "llm:\n  timeout_s: 1\n  max_retries: 1\n  max_retry_wait_s: 0.05\n"
    )
    return root


def _chaos_responder(broken: set[str]) -> Any:
    """Malformed JSON forever for the ``broken`` queries; for others a 500 or a hang on the
    first try of some, then a verdict."""
    tries: dict[str, int] = {}

    def respond(body: dict[str, Any]) -> str | Reply:
        prompt = next(m["content"] for m in body["messages"] if "question c" in m["content"])
        qid = prompt.split("question ", 1)[1].split("?", 1)[0]
        tries[qid] = tries.get(qid, 0) + 1
        number = int(qid[1:])
        if qid in broken:
            return '{"verdict": "Corr'  # cut inside its verdict: nothing to read
        if tries[qid] == 1 and number % 10 == 3:
            return Reply(status=500)
        if tries[qid] == 1 and number % 10 == 7:
            return Reply(hang=True)
        return json.dumps({"verdict": "Correct", "reason": "scripted"})

    return respond


def test_judge_keeps_going_when_some_judgements_fail(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    root = _chaos_run(tmp_path)
    broken = {"c05", "c25", "c45"}  # 5% of the answers
    llm_server.responder = _chaos_responder(broken)
    result = ragaudit("judge", "--llm", "openai:judge", cwd=tmp_path, env=_env(llm_server))
    assert result.returncode == 0, result.stderr
    assert "Event loop is closed" not in result.stderr and "Traceback" not in result.stderr
    got = _judgements(root)
    assert len(got) == CHAOS_N  # one judgement per answer, none lost with its batch
    failed = {q for q, j in got.items() if j.method == "judge-failed"}
    assert failed == broken
    assert all(got[q].correct is None and "JSON" in (got[q].rationale or "") for q in failed)
    assert all(got[q].correct is True for q in got.keys() - broken)  # 500s and hangs retried
    assert "3 judgements failed" in result.stdout
    stats = json.loads((root / "judge.stats.json").read_text())["rag"]
    assert stats["judge_failed"] == 3 and stats["methods"]["judge-failed"] == 3

    analyzed = ragaudit("analyze", cwd=tmp_path)
    assert analyzed.returncode == 0, analyzed.stderr
    assert "rag: 3 answers left out" in analyzed.stdout
    summary = json.loads((root / "summary.json").read_text(), parse_constant=_no_constant)
    assert summary["judge_failed"] == {"rag": 3}
    queries = sum(v["n_queries"] for v in summary["systems"]["rag"]["variants"].values())
    assert queries == CHAOS_N - 3

    # A rerun judges the failed ones again from the cache: their unusable replies are
    # replies, replayed, so it asks nothing (issue 41 item 6) and they fail alike.
    llm_server.responder = _chaos_responder(set())
    before = llm_server.request_count
    again = ragaudit("judge", "--llm", "openai:judge", cwd=tmp_path, env=_env(llm_server))
    assert again.returncode == 0, again.stderr
    assert "judged 3 now, 57 before" in again.stdout
    assert llm_server.request_count == before
    assert {q for q, j in _judgements(root).items() if j.method == "judge-failed"} == broken
    # --retry-failed asks for them again (the server is fixed now) and keeps the rest.
    retried = ragaudit(
        "judge", "--llm", "openai:judge", "--retry-failed", cwd=tmp_path, env=_env(llm_server)
    )
    assert retried.returncode == 0, retried.stderr
    assert "judged 3 now, 57 before" in retried.stdout
    assert llm_server.request_count - before == 3
    lines = (root / "judgements" / "rag.jsonl").read_text().splitlines()
    assert len(lines) == CHAOS_N
    assert all(j.correct is True for j in _judgements(root).values())


def test_judge_that_fails_on_everything_exits_non_zero(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    root = _chaos_run(tmp_path)
    llm_server.responder = _chaos_responder({f"c{i:02d}" for i in range(CHAOS_N)})
    result = ragaudit("judge", "--llm", "openai:judge", cwd=tmp_path, env=_env(llm_server))
    assert result.returncode == 2
    said = without_progress(result.stderr)  # the progress lines come first, in a log
    assert said.startswith("error: the LLM judge failed on all 60 answers")
    assert len(said.strip().splitlines()) == 1
    assert len(_judgements(root)) == CHAOS_N  # recorded as failed, retried by the next run


def _no_constant(name: str) -> Any:
    raise ValueError(f"summary.json holds {name}, which is not JSON")


def test_an_errored_response_is_never_retrieval_correct() -> None:
    """A system that failed retrieved nothing because of it: never retrieval-correct. With
    empty gold ids (no document holds the answer) there is nothing to retrieve, so there
    is no retrieval verdict at all, whatever the system did."""
    from ragaudit import aio
    from ragaudit.judge.cascade import judge_one

    query = QueryRecord(
        query_id="q", group_id="g", variant="short", query="q?",
        reference=Reference.from_values(["x"]), gold_ids=["d1"],
    )  # fmt: skip
    found = ResponseRecord(
        query_id="q", system="s", response="no idea", retrieved=[RetrievedItem(id="d1")]
    )
    down = ResponseRecord(query_id="q", system="s", response=None, error="HTTP 503")
    assert aio.run(judge_one(query, found, None)).retrieval_correct is True
    assert aio.run(judge_one(query, down, None)).retrieval_correct is False
    hole = query.model_copy(update={"gold_ids": []})
    for response in (found, down, ResponseRecord(query_id="q", system="s", response="x")):
        assert aio.run(judge_one(hole, response, None)).retrieval_correct is None


def test_a_run_directory_in_use_is_refused_and_duplicates_are_never_counted(
    tmp_path: Path,
) -> None:
    """Two steps at once on one run directory would interleave their records: the second
    is refused with one line; and a file that already holds a query twice is refused by its
    readers rather than counted twice (issue 13, defect 3)."""
    from ragaudit.rundir import RunDir, release_locks

    root = _run_dir(tmp_path)
    RunDir(root).lock("run")  # this test process plays the first step
    try:
        second = ragaudit("judge", "--no-llm", cwd=tmp_path)
    finally:
        release_locks()
    assert second.returncode == 2
    assert second.stderr.startswith(f"error: {Path('runs/default')} is in use by ragaudit run")
    assert not (root / "judgements" / "rag.jsonl").exists()
    assert ragaudit("judge", "--no-llm", cwd=tmp_path).returncode == 0  # free again

    judged = root / "judgements" / "rag.jsonl"
    lines = judged.read_text().splitlines()
    judged.write_text("\n".join([*lines, lines[0]]) + "\n")
    analyzed = ragaudit("analyze", cwd=tmp_path)
    assert analyzed.returncode == 2
    assert "two judgements of query q1 by rag" in analyzed.stderr
    assert not (root / "summary.json").exists()
    responses = root / "responses" / "rag.jsonl"
    lines = responses.read_text().splitlines()
    responses.write_text("\n".join([*lines, lines[2]]) + "\n")
    judged.unlink()
    again = ragaudit("judge", "--no-llm", cwd=tmp_path)
    assert again.returncode == 2 and "two responses of query q3 by rag" in again.stderr


def test_a_failure_answered_by_a_retry_is_judged_again(tmp_path: Path) -> None:
    """After ``ragaudit run --retry-errors`` gives an answer where there was an error, the
    next judge replaces the stale 'error' judgement instead of keeping it for good."""
    root = _run_dir(tmp_path)
    assert ragaudit("judge", "--no-llm", cwd=tmp_path).returncode == 0
    assert _judgements(root)["q6"].method == "error"
    responses = root / "responses" / "rag.jsonl"
    kept = [r for r in read_jsonl(responses, ResponseRecord) if r.query_id != "q6"]
    retried = ResponseRecord(
        query_id="q6", system="rag", response="1,000 people", retrieved=[RetrievedItem(id="d1")]
    )
    write_jsonl_atomic(responses, [*kept, retried])
    again = ragaudit("judge", "--no-llm", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "judged 1 now, 5 before" in again.stdout
    got = _judgements(root)
    assert len(got) == 6 and (got["q6"].correct, got["q6"].method) == (True, "match:number")
    assert got["q6"].retrieval_correct is True


def test_the_judges_rule_and_its_warnings_reach_the_analysis_and_closed_domain_holes(
    tmp_path: Path,
) -> None:
    """The judgements hold retrieval verdicts by the judge's rule: analyze reports that
    rule and repeats its warnings (a top-2 retrieval under same_set can never be right).
    Under --closed-domain, a correct answer to a question no document holds is not
    credited: it came from elsewhere."""
    root = _widened_run_dir(tmp_path)
    judged = ragaudit("judge", "--no-llm", "--retrieval-rule", "same_set", cwd=tmp_path)
    assert judged.returncode == 0, judged.stderr
    expected = (
        "retrieval rule same_set: rag: in 5 of 5 queries more documents retrieved than the "
        "gold ids name, so retrieval could never be correct"
    )
    assert f"warning: {expected}" in judged.stderr
    analyzed = ragaudit("analyze", cwd=tmp_path)  # analyze's own default is all_gold
    assert analyzed.returncode == 0, analyzed.stderr
    summary = json.loads((root / "summary.json").read_text())
    assert summary["retrieval_rule"] == "same_set"
    assert any(w.startswith(expected) for w in summary["warnings"])
    assert expected in analyzed.stderr
    # Without judge.stats.json, each judgement still says which rule gave its verdicts.
    (root / "judge.stats.json").unlink()
    assert ragaudit("analyze", cwd=tmp_path).returncode == 0
    assert json.loads((root / "summary.json").read_text())["retrieval_rule"] == "same_set"
    # Judgements of a judge that recorded no rule, anywhere.
    path = root / "judgements" / "rag.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps({**j, "judged_under": None}) + "\n" for j in lines))
    assert ragaudit("analyze", cwd=tmp_path).returncode == 0
    unrecorded = json.loads((root / "summary.json").read_text())["retrieval_rule"]
    assert unrecorded.startswith("not recorded")  # not analyze's own default

    dataset = list(read_jsonl(root / "dataset.jsonl", QueryRecord))
    holes = [q.model_copy(update={"gold_ids": []}) if q.query_id == "q1" else q for q in dataset]
    write_jsonl_atomic(root / "dataset.jsonl", holes)
    (root / "judgements" / "rag.jsonl").unlink()
    closed = ragaudit("judge", "--no-llm", "--closed-domain", cwd=tmp_path)
    assert closed.returncode == 0, closed.stderr
    verdicts = _judgements(root)
    assert verdicts["q1"].correct is False and verdicts["q1"].method.endswith("+closed-domain")
    assert verdicts["q1"].retrieval_correct is None
    # An answer its retrieved document states keeps its credit (d1 under the widened top-2).
    assert verdicts["q5"].correct is True and verdicts["q5"].method.startswith("match:")


def test_verdicts_given_under_other_rules_are_judged_again(tmp_path: Path) -> None:
    """A judgement records the rules it was given under; a judge with another retrieval
    rule, the closed-domain rule, or newer rules of its own (a matcher added since, as
    issue 39's match:question-only was) judges it again, and the dry run counts it as
    to be judged. Before, the old verdicts stood and the run mixed two rules."""
    root = _widened_run_dir(tmp_path)
    first = ragaudit("judge", "--no-llm", "--retrieval-rule", "same_set", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert _judgements(root)["q1"].retrieval_correct is False  # d1 and d7 for gold d1
    for rule, items in (("same_set", 0), ("all_gold", 6)):
        planned = ragaudit("judge", "--no-llm", "--retrieval-rule", rule, "--dry-run", cwd=tmp_path)
        assert planned.returncode == 0, planned.stderr
        assert re.search(rf"judge rag\s+│[^│]+│\s+{items}\s+│", planned.stdout), planned.stdout
    again = ragaudit("judge", "--no-llm", cwd=tmp_path)  # the default rule, all_gold
    assert again.returncode == 0, again.stderr
    assert "judged 6 now, 0 before" in again.stdout
    got = _judgements(root)
    assert got["q1"].retrieval_correct is True and len(got) == 6
    assert {j.judged_under for j in got.values()} == {
        "rules 3; closed domain off; retrieval all_gold"
    }
    assert "judged 0 now, 6 before" in ragaudit("judge", "--no-llm", cwd=tmp_path).stdout
    closed = ragaudit("judge", "--no-llm", "--closed-domain", cwd=tmp_path)
    assert "judged 6 now, 0 before" in closed.stdout
    # Older rules of the judge's own, and a judgement written before the rules were kept.
    path = root / "judgements" / "rag.jsonl"
    aged = [
        j.model_copy(
            update={
                "judged_under": {
                    "q1": "rules 1; closed domain on; retrieval all_gold",
                    "q3": None,
                }.get(j.query_id, j.judged_under)
            }
        )
        for j in read_jsonl(path, Judgement)
    ]
    write_jsonl_atomic(path, aged)
    renewed = ragaudit("judge", "--no-llm", "--closed-domain", cwd=tmp_path)
    assert renewed.returncode == 0, renewed.stderr
    assert "judged 2 now, 4 before" in renewed.stdout
    assert {j.judged_under for j in _judgements(root).values()} == {
        "rules 3; closed domain on; retrieval all_gold"
    }


def test_a_response_that_only_repeats_its_question_is_never_credited(
    llm_server: ScriptedLLMServer,
) -> None:
    """Issue 39's run on Spider-Open: asked without retrieval, the embedded model named the
    question's company ("Walmart" for Walmart's industry) or answered "Yes, I can ..." to
    a request, and the 1.5B judge credited 32 such replies from what it knows of the
    company. A response that says nothing its question did not, where the reference does,
    is Incorrect before any LLM call; one that says more still goes to the judge."""
    from ragaudit.config import LLMConfig
    from ragaudit.judge.cascade import judge_one
    from ragaudit.llm import make_llm

    llm_server.responder = lambda body: json.dumps({"verdict": "Correct", "reason": "credulous"})
    query = QueryRecord(
        query_id="q", group_id="g", variant="short",
        query="May I request the industry of the company 'Walmart'?",
        reference=Reference.from_values(["Retailing"]),
    )  # fmt: skip
    config = LLMConfig(model="openai:judge", base_url=llm_server.base_url, api_key="sk-t-0")
    with make_llm(config) as llm:

        def judged(text: str) -> Judgement:
            response = ResponseRecord(query_id="q", system="s", response=text)
            return llm.run(judge_one(query, response, llm))

        for echo in ("Walmart.", "Yes, you may request the industry of the company Walmart."):
            verdict = judged(echo)
            assert (verdict.correct, verdict.method) == (False, "match:question-only"), echo
        assert llm_server.request_count == 0
        verdict = judged("Retail")
        assert (verdict.correct, verdict.method) == (True, "llm")
        assert llm_server.request_count == 1


def test_a_judge_whose_llm_failed_everywhere_says_the_matchers_verdicts_are_kept() -> None:
    """The LLM judge failed on every answer it was asked about while the matchers decided
    55: the error says those are written, not that nothing was judged at all."""
    from ragaudit.judge.cascade import JudgeFailure
    from ragaudit.steps.judge import JudgeEntry, JudgeReport, require_judged

    failure = JudgeFailure(query_id="q1", reason="not JSON")
    entry = JudgeEntry(
        judged_now=60, already_judged=0, methods={"match:exact": 55, "judge-failed": 5},
        llm_sample_agreement=None, judge_failed=5, judge_failures=[failure],
    )  # fmt: skip
    with pytest.raises(UserError) as caught:
        require_judged(JudgeReport(systems={"rag": entry}))
    said = str(caught.value)
    assert "failed on all 5 answers" in said and "the matchers' 55 verdicts are written" in said
    entry = entry.model_copy(update={"methods": {"judge-failed": 5}})
    with pytest.raises(UserError) as caught:
        require_judged(JudgeReport(systems={"rag": entry}))
    assert "matchers" not in str(caught.value)
