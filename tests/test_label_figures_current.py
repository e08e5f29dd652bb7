"""The label figures in summary.json describe the questions the dataset asks now: a
question that left it (``generate --refresh``, a dataset made again) is no pair any more,
its labels counted as unknown pairs, as ``by_label`` already counted it."""

from __future__ import annotations

import json
from pathlib import Path

import ragaudit as ra


def test_labels_of_questions_that_left_the_dataset_are_not_counted(tmp_path: Path) -> None:
    ra.make_world(tmp_path / "w", size=20, seed=0, progress="none")
    project = ra.Project(tmp_path / "w/ragaudit.yaml", root=tmp_path / "p", progress="none")
    project.templates_sql()
    project.templates_text(verify=False)
    dataset = project.generate(unverified=True)
    labelled = [q.query_id for q in dataset if q.gold_ids]  # a pair needs its documents
    human = tmp_path / "ann.jsonl"
    human.write_text(
        "".join(
            json.dumps({"id": i, "label": "summary" if n % 3 else "fact_single"}) + "\n"
            for n, i in enumerate(labelled)
        )
    )
    project.label(use_llm=False, human=[human])
    summary = project.analyze()
    assert summary.labels is not None
    assert (summary.labels.pairs, summary.labels.unknown_pairs) == (len(labelled), 0)
    # Half the questions leave the dataset, as a refresh that drops groups leaves it.
    path = Path(project.run_dir) / "dataset.jsonl"
    lines = path.read_text().splitlines()
    kept = lines[: len(lines) // 2]
    path.write_text("\n".join(kept) + "\n")
    still = {json.loads(line)["query_id"] for line in kept} & set(labelled)
    assert 0 < len(still) < len(labelled)
    summary = project.analyze()
    assert summary.labels is not None
    assert summary.labels.pairs == len(still)
    assert summary.labels.unknown_pairs == len(labelled) - len(still)
    shares = {k: v.k for k, v in summary.labels.composition.items()}
    by_hand = {"summary": 0, "fact_single": 0}
    for n, i in enumerate(labelled):
        if i in still:
            by_hand["summary" if n % 3 else "fact_single"] += 1
    assert {k: v for k, v in shares.items() if v} == {k: v for k, v in by_hand.items() if v}
