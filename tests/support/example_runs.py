"""A run of the bundled example answered by systems whose answers are known: what the
tests of the store and its readers copy and change."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import ragaudit as ra
from ragaudit.records.models import QueryRecord


def truth(project: ra.Project) -> dict[str, QueryRecord]:
    """The project's questions by their text."""
    return {q.query: q for q in project.dataset()}


def good(answers: dict[str, QueryRecord], first_gold_only: bool = False) -> Callable[..., object]:
    """A system that answers every question right and retrieves its gold documents (or
    only the first of them)."""

    def answer(question: str) -> object:
        record = answers[question]
        ids = list(record.gold_ids or [])
        return ra.Answer(
            record.reference.display, retrieved_ids=ids[:1] if first_gold_only else ids
        )

    return answer


def judged_example(root: Path) -> Path:
    """A run of the example in ``root`` with one system, ``rag``, that answers everything
    right, judged and analyzed: copy it to change it (a copy keeps every file current)."""
    project = ra.Project.example(root=root, progress="none")
    project.templates_sql()
    project.templates_text(verify=False)
    project.generate(unverified=True)
    project.run([ra.system(good(truth(project)), name="rag")])
    project.judge(llm=None)
    project.analyze()
    return root
