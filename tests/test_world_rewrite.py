"""ragaudit world --llm: reports rewritten by the LLM (the scripted server), each checked by
reading comprehension against the database; a failing rewrite is repaired once, then kept
in template wording or dropped; a killed rewrite resumes."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ragaudit.world.build import build_world
from ragaudit.world.rewrite import Fact, clean_rewrite, split_report
from tests.support.cli import ragaudit
from tests.support.scripted_llm_server import ScriptedLLMServer

ADDED = "Final checks end on 2031-05-06."


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _located(world: Path) -> list[tuple[str, str]]:
    """(project, location) of the reports that state a location, in file order."""
    found = []
    for line in _jsonl(world / "document_facts.jsonl"):
        for fact in line["facts"]:
            if fact["column"] == "Location":
                found.append((line["id"], fact["stated"]))
    return found


class Rewriter:
    """Plays the LLM: rewrites by reversing the sentences (dropping or adding what a test
    asks for), reads by answering every question with the whole document, and judges
    whatever the matchers leave open as Incorrect."""

    def __init__(self, flaky: str = "", broken: str = "", dater: str = "") -> None:
        self.flaky, self.broken, self.dater = flaky, broken, dater

    def __call__(self, body: dict[str, Any]) -> str:
        prompt = body["messages"][-1]["content"]
        if prompt.startswith("Rewrite this project report"):
            report = prompt.split("Report: ", 1)[1].split("\n\n", 1)[0]
            repair = "An earlier rewrite" in prompt
            sentences = re.split(r"(?<=\.)\s+", report)
            for name, always in ((self.flaky, False), (self.broken, True)):
                if name and (always or not repair):
                    sentences = [s for s in sentences if name not in s]
            if self.dater and self.dater in report and not repair:
                sentences.append(ADDED)
            return "Here is the rewritten report: " + " ".join(reversed(sentences))
        if "Answer each question from the document alone" in prompt:
            document = prompt.split("Document: ", 1)[1].split("\n\nAnswer each", 1)[0]
            asked = len(re.findall(r"^\d+\. ", prompt, re.MULTILINE))
            return json.dumps({"answers": [document] * asked})
        assert "True answer: " in prompt, prompt
        return json.dumps({"verdict": "Incorrect", "reason": "scripted"})


def _env(server: ScriptedLLMServer) -> dict[str, str]:
    return {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-t-0000000000"}


def _prompts(server: ScriptedLLMServer) -> list[str]:
    return [r["messages"][-1]["content"] for r in server.requests]


def test_rewrite_is_checked_repaired_and_falls_back_to_the_template(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    world = tmp_path / "w"
    build_world(world, size=60, seed=3)
    template = {d["id"]: d["text"] for d in _jsonl(world / "documents.jsonl")}
    (flaky, flaky_at), (broken, broken_at), (dater, _) = _located(world)[:3]
    llm_server.responder = Rewriter(flaky=flaky, broken=broken, dater=dater)

    done = ragaudit(
        "world", "w", "--size", "60", "--seed", "3", "--llm", "--model", "openai:scripted",
        cwd=tmp_path, env=_env(llm_server),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr

    meta = json.loads((world / "world.json").read_text())["rewrite"]
    assert sorted(meta["repaired_ids"]) == sorted([flaky, dater])
    assert meta["failed_ids"] == [broken]
    assert meta["rewritten"] == len(template) - 3
    assert f"failed: {broken}" in done.stdout
    # The repairs were told what went wrong: the lost location, the invented date.
    prompts = _prompts(llm_server)
    assert any(f"lost or changed these facts: Location {flaky_at}" in p for p in prompts)
    assert any("rejected: added date 2031-05-06" in p for p in prompts)
    # The reader saw the rewrite alone, never the template wording.
    bodies = {split_report(t)[1] for t in template.values()}
    read = [p.split("Document: ", 1)[1].split("\n\nAnswer each", 1)[0] for p in prompts
            if "Answer each question" in p]  # fmt: skip
    assert read and not bodies & set(read)

    documents = {d["id"]: d["text"] for d in _jsonl(world / "documents.jsonl")}
    assert documents.keys() == template.keys()
    assert documents[broken] == template[broken]  # failed twice: template wording kept
    log = {d["id"]: d for d in _jsonl(world / "rewrite.jsonl")}
    assert log[broken]["status"] == "failed"
    assert log[broken]["lost"] == [f"Project.Location of {broken}"]
    assert broken_at not in log[broken]["rejected_text"]
    for doc_id, text in documents.items():
        if doc_id == broken:
            continue
        title, body = split_report(text)
        assert title == split_report(template[doc_id])[0]
        assert body != split_report(template[doc_id])[1] and not body.startswith("Here is")
        assert ADDED not in body
    # Every fact is recorded as the document now states it (the reader's answer).
    for line in _jsonl(world / "document_facts.jsonl"):
        for fact in line["facts"]:
            assert fact["stated"] in documents[line["id"]]
    # Done is done: asking again is an error that points at --force.
    again = ragaudit(
        "world", "w", "--size", "60", "--seed", "3", "--llm", "--model", "openai:scripted",
        cwd=tmp_path, env=_env(llm_server),
    )  # fmt: skip
    assert again.returncode != 0 and "already rewritten" in again.stderr
    assert "Traceback" not in again.stderr


def test_failed_rewrite_can_drop_the_document_and_its_facts(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    world = tmp_path / "w"
    build_world(world, size=60, seed=4)
    before = len(_jsonl(world / "documents.jsonl"))
    (broken, _), *_ = _located(world)
    llm_server.responder = Rewriter(broken=broken)
    done = ragaudit(
        "world", "w", "--size", "60", "--seed", "4", "--llm", "--model", "openai:scripted",
        "--on-failure", "drop", cwd=tmp_path, env=_env(llm_server),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert [d["id"] for d in _jsonl(world / "documents.jsonl")].count(broken) == 0
    assert broken not in {d["id"] for d in _jsonl(world / "document_facts.jsonl")}
    meta = json.loads((world / "world.json").read_text())
    assert meta["documents"] == before - 1
    assert meta["rewrite"]["failed_ids"] == [broken] and meta["rewrite"]["on_failure"] == "drop"
    assert "(dropped)" in done.stdout


def test_killed_rewrite_resumes_without_redoing_finished_reports(tmp_path: Path) -> None:
    with ScriptedLLMServer(latency=0.05) as server:
        server.responder = Rewriter()
        args = ["world", "w", "--size", "300", "--llm", "--model", "openai:scripted"]
        env = {**_env(server), "COLUMNS": "120", "NO_COLOR": "1"}
        first = ragaudit(*args[:4], cwd=tmp_path)  # the template world alone
        assert first.returncode == 0, first.stderr
        world = tmp_path / "w"
        template = (world / "documents.jsonl").read_text()
        total = template.count("\n")
        log = world / "rewrite.jsonl"
        proc = subprocess.Popen(
            [sys.executable, "-m", "ragaudit", *args],
            cwd=tmp_path,
            env={**os.environ, **env},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            if log.exists() and log.read_text().count("\n") >= 10:
                break
            time.sleep(0.005)
        assert proc.poll() is None, "the rewrite finished before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        finished = log.read_text().count("\n")
        assert 10 <= finished < total
        # Killed midway: the corpus is still the complete template one.
        assert (world / "documents.jsonl").read_text() == template
        assert "rewrite" not in json.loads((world / "world.json").read_text())

        server.reset_counters()
        done = ragaudit(*args, cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stderr
        ids = [d["id"] for d in _jsonl(log)]
        assert len(ids) == total and len(set(ids)) == total
        # Two calls per unfinished report (rewrite, reading): finished ones are not redone.
        assert server.request_count <= 2 * (total - finished)
        assert json.loads((world / "world.json").read_text())["rewrite"]["rewritten"] == total


def test_rewrite_helpers() -> None:
    assert clean_rewrite('Sure! Here is the rewritten report:\n"A  b.\nC."') == "A b. C."
    assert clean_rewrite("Plain text.") == "Plain text."
    assert split_report("T: project report\n\nBody. More.") == ("T: project report", "Body. More.")
    assert split_report("no title") == ("", "no title")
    fact = Fact("Project", "Valdoro", "StartDate", "March 3, 2021")
    assert fact.question == "On what date did the project Valdoro start?"
    assert Fact("Project", "Valdoro", "Name", "Valdoro").question is None
