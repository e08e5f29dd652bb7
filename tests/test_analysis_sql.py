"""The SQL path of ``analyze`` (DuckDB over the run's answers.parquet) gives the figures of
the in-memory path, on a run with every case that changes a figure: failed calls, judge
failures, holes of the knowledge base, unanswerable questions, gold ids unknown (the
context comparison), a system without a retriever, groups of one query, gaps, groups on
one side only, and open-domain groups."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from ragaudit.errors import UserError
from ragaudit.records.io import write_jsonl_atomic
from ragaudit.records.models import (
    Judgement,
    QueryRecord,
    Reference,
    ResponseRecord,
    RetrievedItem,
)
from ragaudit.rundir import RunDir
from ragaudit.steps.analyze import Engine, choose_engine, run_analysis
from ragaudit.store.answers import read_answer_table, write_answer_table

VARIANTS = ("short", "long", "blind")  # "blind": no gold ids known (context comparison)


def _queries(rng: random.Random, groups: int) -> list[QueryRecord]:
    out = []
    for g in range(groups):
        kind = rng.random()
        for variant in VARIANTS:
            if g % 7 == 3 and variant == "long":
                continue  # a group on one side only
            size = 1 if g % 5 == 0 else rng.randint(2, 4)  # groups of one query
            for i in range(size):
                if variant == "blind" or (variant == "long" and g % 9 == 1):
                    gold, gold_kind = None, None  # unknown: everywhere, or for a few
                elif kind < 0.1:
                    gold, gold_kind = [], "states"  # a hole of the knowledge base
                elif kind < 0.2:
                    gold, gold_kind = [f"d{g}", f"d{g + 1}"], "entity"
                elif kind < 0.3:
                    gold, gold_kind = [f"d{g}", f"d{g + 2}"], "computed"  # a count's rows
                else:
                    gold, gold_kind = [f"d{g}"], "states" if kind < 0.6 else None
                answerable = not (kind > 0.95 and i == 0)
                out.append(
                    QueryRecord(
                        query_id=f"q{g}-{variant}-{i}",
                        group_id=f"g{g:04d}" if g % 3 else f"grp-é{g}",
                        variant=variant,
                        query=f"question {g} {variant} {i}",
                        reference=Reference.from_values([f"a{g}"] if answerable else []),
                        gold_ids=gold,
                        gold_kind=gold_kind,
                    )
                )
    return out


def _answers(
    rng: random.Random, system: str, queries: list[QueryRecord]
) -> tuple[list[ResponseRecord], list[Judgement]]:
    responses, judgements = [], []
    skill = {"rag": 0.6, "weak": 0.35, "llm": 0.3}[system]
    for q in queries:
        if system == "weak" and q.variant == "short" and rng.random() < 0.2:
            continue  # not every query asked: groups differ between systems
        group = int(q.group_id.split("-é")[-1].lstrip("g"))
        hard = (group % 11) / 11
        ok = rng.random() < skill + 0.3 - hard
        if group % 13 == 0:
            ok = False  # a gap in every variant
        if system == "weak" and q.variant == "blind":
            ok = False  # every group a gap: R undefined, and its comparisons
        if system == "llm":
            retrieved: list[str] = []
        else:
            depth = rng.choice((3, 5)) if system == "rag" else 2
            retrieved = [f"d{rng.randint(0, 60)}" for _ in range(depth)]
            if ok or rng.random() < 0.3:
                retrieved[rng.randrange(depth)] = f"d{group}"
            if rng.random() < 0.1:
                retrieved.append(retrieved[0])  # a document retrieved twice
        errored = rng.random() < 0.04
        failed_judge = not errored and rng.random() < 0.03
        gold = q.gold_ids
        rc = None if not gold else set(gold) <= set(retrieved)
        responses.append(
            ResponseRecord(
                query_id=q.query_id,
                system=system,
                response=None if errored else ("yes" if ok else "no"),
                retrieved=[RetrievedItem(id=d) for d in retrieved],
                error="timeout" if errored else None,
            )
        )
        judgements.append(
            Judgement(
                query_id=q.query_id,
                system=system,
                correct=None if failed_judge else (False if errored else ok),
                method="error" if errored else ("judge-failed" if failed_judge else "match"),
                retrieval_correct=rc,
            )
        )
    return responses, judgements


def _run(root: Path, groups: int = 120, seed: int = 3) -> RunDir:
    rng = random.Random(seed)
    run = RunDir(root)
    queries = _queries(rng, groups)
    write_jsonl_atomic(run.dataset, queries)
    for system in ("rag", "weak", "llm"):
        responses, judgements = _answers(rng, system, queries)
        write_jsonl_atomic(run.responses(system), responses)
        write_jsonl_atomic(run.judgements(system), judgements)
    write_answer_table(run)
    return run


def _analyzed(run: RunDir, engine: Engine, **options: Any) -> tuple[dict[str, Any], list[Any]]:
    summary = run_analysis(run, engine=engine, **options).summary
    rows = [json.loads(line) for line in run.drilldown.read_text().splitlines()]
    return summary.model_dump(mode="json"), sorted(rows, key=lambda r: (r["system"], r["query_id"]))


@pytest.mark.parametrize("llm_only", [None, "llm"])
def test_sql_and_memory_give_the_same_figures_and_drilldown(
    tmp_path: Path, llm_only: str | None
) -> None:
    run = _run(tmp_path / "run")
    memory, memory_rows = _analyzed(run, "memory", llm_only=llm_only, seed=5)
    sql, sql_rows = _analyzed(run, "sql", llm_only=llm_only, seed=5)
    # The run holds every case the figures treat apart, so the comparison means something.
    rag = memory["systems"]["rag"]["variants"]
    assert memory["judge_failed"] and any(v["n_errors"] for v in rag.values())
    assert memory["systems"]["rag"]["knowledge_base_holes"]["k"] > 0
    assert memory["systems"]["llm"]["variants"]["short"]["robustness_retrieval"] is None
    # No retriever: no retrieval figure, its judge's failures included.
    llm = memory["systems"]["llm"]["variants"].values()
    assert all(v["accuracy_retrieval"] is None for v in llm)
    assert rag["blind"]["blame"]["counts"]["retriever"] > 0  # context comparison
    assert rag["short"]["blame"]["rule"] == "mixed"
    assert any(c["p_value"] is not None for c in memory["comparisons"])
    assert any(c["undefined"] for c in memory["comparisons"])
    assert memory["retrieval_ranking"]["rag"]["variants"]["short"]["mrr"]["n"] > 0
    assert rag["short"]["accuracy_retrieval_computed"]["n"] > 0  # reported apart
    if llm_only:
        assert memory["systems"]["rag"]["open_domain_groups"] > 0
    for key in memory:
        assert sql[key] == memory[key], key
    assert sql_rows == memory_rows


def test_the_lambda_study_is_the_same_on_both_paths(tmp_path: Path) -> None:
    """The study resamples the per-group counts each path has: the same draws of the same
    groups (groups of one query and gaps among them, the judge's failures left out)."""
    run = _run(tmp_path / "run", groups=60)
    options: dict[str, Any] = {"lambda_targets": [0.2, 0.5, 0.8], "lambda_draws": 40, "seed": 2}
    memory, _ = _analyzed(run, "memory", **options)
    sql, _ = _analyzed(run, "sql", **options)
    study = memory["lambda_study"]
    assert study["systems"]["rag"]["short"]["points"][0]["accuracy"] is not None
    assert sql["lambda_study"] == study


def test_an_undefined_figure_is_null_with_its_reason_on_both_paths(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    queries = [
        QueryRecord(
            query_id=f"q{g}",
            group_id=f"g{g}",
            variant="short",
            query=f"question {g}",
            reference=Reference.from_values(["a"]),
            gold_ids=[f"d{g}"],
        )
        for g in range(6)
    ]
    write_jsonl_atomic(run.dataset, queries)
    write_jsonl_atomic(
        run.responses("rag"),
        [ResponseRecord(query_id=q.query_id, system="rag", response="no") for q in queries],
    )
    write_jsonl_atomic(
        run.judgements("rag"),
        [
            Judgement(query_id=q.query_id, system="rag", correct=g < 2, method="match")
            for g, q in enumerate(queries)
        ],
    )
    write_answer_table(run)
    memory, _ = _analyzed(run, "memory")
    sql, _ = _analyzed(run, "sql")
    figures = sql["systems"]["rag"]["variants"]["short"]
    assert figures["robustness"]["value"] is None
    assert figures["robustness_undefined"] == "one query per group"
    assert sql == memory


def test_auto_takes_sql_from_the_threshold_and_memory_below(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _run(tmp_path / "run", groups=10)
    assert choose_engine(run, "auto", neutral=[], table=None, outcome="answer")[0] == "memory"
    monkeypatch.setattr("ragaudit.steps.analyze.SQL_MIN_ROWS", 10)
    assert choose_engine(run, "auto", neutral=[], table=None, outcome="answer")[0] == "sql"
    with pytest.raises(UserError, match="--outcome retrieval"):
        choose_engine(run, "sql", neutral=[], table=None, outcome="retrieval")


def test_sql_refuses_what_only_memory_computes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = RunDir(tmp_path / "run")
    query = QueryRecord(
        query_id="q1",
        group_id="g1",
        variant="short",
        query="question",
        reference=Reference.from_values(["a"]),
        label="fact_single",
    )
    write_jsonl_atomic(run.dataset, [query])
    write_jsonl_atomic(run.responses("rag"), [ResponseRecord(query_id="q1", system="rag")])
    write_jsonl_atomic(
        run.judgements("rag"), [Judgement(query_id="q1", system="rag", correct=True, method="m")]
    )
    write_answer_table(run)
    with pytest.raises(UserError, match="question label"):
        run_analysis(run, engine="sql")
    with pytest.raises(UserError, match="question label"):  # a table has no records
        run_analysis(run, engine="auto", table=run.answers_table)
    # auto falls back to memory, which gives the breakdown by label
    monkeypatch.setattr("ragaudit.steps.analyze.SQL_MIN_ROWS", 1)
    assert run_analysis(run, engine="auto").summary.by_label


def test_a_stale_answer_table_is_rebuilt_before_sql_reads_it(tmp_path: Path) -> None:
    run = _run(tmp_path / "run", groups=20)
    judgements = run.judgements("rag").read_text().splitlines()
    flipped = [line.replace('"correct":false', '"correct":true') for line in judgements]
    run.judgements("rag").write_text("\n".join(flipped) + "\n")
    memory, _ = _analyzed(run, "memory")
    sql, _ = _analyzed(run, "sql")
    assert sql == memory


def test_the_command_takes_the_engine_and_prints_the_same_tables(tmp_path: Path) -> None:
    from tests.support.cli import ragaudit

    _run(tmp_path / "runs" / "default", groups=30)
    summary = tmp_path / "runs" / "default" / "summary.json"
    printed, figures = [], []
    for engine in ("memory", "sql"):
        result = ragaudit("analyze", "--engine", engine, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        printed.append(result.stdout)
        figures.append(json.loads(summary.read_text())["systems"])
    assert printed[0] == printed[1] and figures[0] == figures[1]
    refused = ragaudit("analyze", "--engine", "sql", "--outcome", "retrieval", cwd=tmp_path)
    assert refused.returncode == 2 and "--outcome retrieval" in refused.stderr


def test_a_system_without_retriever_has_no_retrieval_figure_on_either_path(
    tmp_path: Path,
) -> None:
    """An LLM-only system retrieves nothing: the judge records its retrievals as misses
    (retrieval_correct false), judged or not. Its answers the judge failed on, whose
    retrievals count where a system has a retriever, must not give it a retrieval
    accuracy or a retrieval comparison; both engines agree on it, and on the drill-down."""
    run = RunDir(tmp_path / "run")
    queries = [
        QueryRecord(
            query_id=f"q{g}-{variant}-{i}",
            group_id=f"g{g}",
            variant=variant,
            query=f"question {g} {variant} {i}",
            reference=Reference.from_values([f"a{g}"]),
            gold_ids=[f"d{g}"],
            gold_kind="states",
        )
        for g in range(10)
        for variant in ("short", "long")
        for i in range(2)
    ]
    write_jsonl_atomic(run.dataset, queries)
    for system in ("rag", "llm"):
        retrieved = {
            q.query_id: [] if system == "llm" else [f"d{n % 7}"] for n, q in enumerate(queries)
        }
        write_jsonl_atomic(
            run.responses(system),
            [
                ResponseRecord(
                    query_id=q.query_id,
                    system=system,
                    response="yes",
                    retrieved=[RetrievedItem(id=d) for d in retrieved[q.query_id]],
                )
                for q in queries
            ],
        )
        write_jsonl_atomic(
            run.judgements(system),
            [
                Judgement(
                    query_id=q.query_id,
                    system=system,
                    correct=None if n % 5 == 0 else n % 3 != 0,
                    method="judge-failed" if n % 5 == 0 else "match",
                    retrieval_correct=set(q.gold_ids or ()) <= set(retrieved[q.query_id]),
                )
                for n, q in enumerate(queries)
            ],
        )
    write_answer_table(run)
    memory, memory_rows = _analyzed(run, "memory", llm_only="llm")
    sql, sql_rows = _analyzed(run, "sql", llm_only="llm")
    assert memory["judge_failed"] == {"llm": 8, "rag": 8}
    for summary in (memory, sql):
        for variant, figures in summary["systems"]["llm"]["variants"].items():
            assert figures["accuracy_retrieval"] is None, (variant, figures["accuracy_retrieval"])
            assert figures["robustness_retrieval"] is None
            # Why: every query, the judge's failures included, has no retrieved ids.
            assert figures["retrieval_left_out"] == {"no retrieved ids": 20}
        retrieval = [c for c in summary["comparisons"] if c["metric"].endswith("_retrieval")]
        assert retrieval, "rag's own retrieval comparisons (short vs long) are made"
        assert not [c for c in retrieval if "llm" in (c["a"]["system"], c["b"]["system"])], [
            c["verdict"] for c in retrieval
        ]
        assert "llm" not in summary["retrieval_ranking"]
    # The drill-down says what the blame counts: no retrieval verdict, no retriever at fault.
    for rows in (memory_rows, sql_rows):
        llm = [r for r in rows if r["system"] == "llm"]
        assert {(r["retrieval_correct"], r["source"] == "retriever") for r in llm} == {
            (None, False)
        }
    for key in memory:
        assert sql[key] == memory[key], key
    assert sql_rows == memory_rows
    # The answers table's `where` counts what the blame counts: llm's wrong answers are
    # the language model's, rag's those of its retriever (d0..d6 retrieved) or its model.
    table = read_answer_table(run).to_pandas()
    where = table[table["system"] == "llm"]["where"].dropna()
    assert set(where) == {"correct", "language model"}
    assert "retriever" in set(table[table["system"] == "rag"]["where"])


def test_an_answer_table_is_analyzed_in_sql_without_a_dataset_beside_it(tmp_path: Path) -> None:
    """An answer table copied out of its run (as the analysis benchmark writes one) gives
    the figures it gave in the run: nothing asks for the dataset where no system answered."""
    run = _run(tmp_path / "run", groups=30)
    in_run = _analyzed(run, "sql", seed=5)[0]
    alone = RunDir(tmp_path / "alone")
    table = tmp_path / "answers.parquet"
    table.write_bytes(run.answers_table.read_bytes())
    summary = run_analysis(alone, table=table, engine="sql", seed=5).summary
    figures = summary.model_dump(mode="json")
    assert figures["systems"] == in_run["systems"]
