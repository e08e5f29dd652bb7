"""The answer table aggregated in SQL (DuckDB, out of core): what ``analyze`` needs of
millions of answers without holding them in memory. IO at the edge of the analysis: the
queries here turn ``answers.parquet`` into per-group counts
(:class:`~ragaudit.analysis.group_counts.GroupCounts`), the counts of each system and
variant (:class:`~ragaudit.analysis.group_counts.SideCounts`) and the shapes of the
retrieved lists, from which the pure :mod:`ragaudit.analysis.group_counts` computes the
same figures as the in-memory path; and they write the drill-down straight from SQL.

The statements are built of plain SQL (CTEs, joins, GROUP BY with CASE sums, one window
for the group order), written in DuckDB's dialect where it is shorter: its list functions
where a row's id lists are read, ``GROUP BY ALL``, ``UNION ALL BY NAME``, ``SEMI JOIN``
and ``FILTER``; docs/analyze.md lists what a port to Spark SQL or Trino renames.
"""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ragaudit.analysis.group_counts import COUNTS, GroupCounts, SideCounts
from ragaudit.analysis.metrics import blame_rule
from ragaudit.analysis.retrieval_metrics import Shape
from ragaudit.analysis.summary import SOURCES, Blame
from ragaudit.judge.retrieval import RuleFit
from ragaudit.records.models import EVIDENCE_GOLD_KINDS

if TYPE_CHECKING:
    import duckdb

# The memory DuckDB may hold before it spills to disk (beside the output, in a folder of
# its own): the aggregation of 10M answers stays well under the 4 GB of issue 40.
MEMORY_LIMIT = "1500MB"


@dataclass(frozen=True)
class TableAggregates:
    """What the analysis reads of an answer table: the per-group counts, each system and
    variant's own counts, the shapes of the ranked retrievals (system -> variant, or label
    -> shape -> queries) with each system's retrieval depth, and the answers the judge
    failed on per system."""

    groups: GroupCounts
    sides: dict[tuple[str, str], SideCounts]
    shapes: dict[str, dict[str, dict[Shape, int]]]
    label_shapes: dict[str, dict[str, dict[Shape, int]]]
    depth: dict[str, int]
    judge_failed: dict[str, int]


@contextmanager
def connect(spill: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """An in-memory DuckDB connection with a bounded memory that spills to ``spill``."""
    import duckdb

    spill.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(
        config={
            "memory_limit": MEMORY_LIMIT,
            "temp_directory": str(spill),
            "preserve_insertion_order": True,
        }
    )
    try:
        yield con
    finally:
        con.close()


def _files(paths: Sequence[Path]) -> str:
    quoted = ", ".join("'" + str(p).replace("'", "''") + "'" for p in paths)
    return f"read_parquet([{quoted}])"


def table_rows(paths: Sequence[Path]) -> int:
    """The rows of the Parquet files, from their footers (nothing else is read)."""
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(p).metadata.num_rows for p in paths)


def sql_blockers(con: duckdb.DuckDBPyConnection, paths: Sequence[Path]) -> list[str]:
    """Why the SQL path cannot give every figure of these answers (empty when it can): the
    breakdowns by question label and by source, and the reference-free scores' reliability,
    are computed in memory only."""
    labelled, sources, scored = con.execute(
        f"""SELECT count(label), count(DISTINCT source),
                   count(*) FILTER (WHERE cardinality(scores) > 0)
            FROM {_files(paths)} WHERE "repeat" = 0 AND method IS NOT NULL"""
    ).fetchone() or (0, 0, 0)
    out = []
    if labelled:
        out.append(f"{labelled} answers carry a question label (the breakdown by label)")
    if sources > 1:
        out.append(f"the answers come from {sources} sources (the breakdown by source)")
    if scored:
        out.append(f"{scored} answers have reference-free scores (their reliability)")
    return out


_EVIDENCE = (
    "coalesce(gold_kind IN ("
    + ", ".join(f"'{kind}'" for kind in sorted(EVIDENCE_GOLD_KINDS))
    + ") AND gold_ids IS NOT NULL, false)"
)
_HOLE = f"coalesce(answerable AND {_EVIDENCE} AND len(gold_ids) = 0, false)"


def _source(rc: str, retrieved: str) -> str:
    """Where an answer went wrong, as SQL: :func:`~ragaudit.analysis.metrics.source_of` of
    a row whose retrieval verdict is ``rc`` and retrieved ids ``retrieved`` (columns or
    expressions), with its group's ``tag``."""
    found = (
        f"(CASE WHEN {retrieved} IS NOT NULL THEN list_has_any(gold_ids, {retrieved}) "
        f"ELSE {rc} IS DISTINCT FROM false END)"
    )
    return f"""(CASE
        WHEN {_HOLE} AND NOT correct THEN 'knowledge base'
        WHEN errored THEN 'system error'
        WHEN correct THEN 'correct'
        WHEN NOT answerable THEN 'language model'
        WHEN {_EVIDENCE} THEN CASE WHEN {found} THEN 'language model' ELSE 'retriever' END
        WHEN tag = 'gap' THEN 'knowledge base'
        WHEN {rc} = false THEN 'retriever'
        ELSE 'language model' END)"""


def _prepare(con: duckdb.DuckDBPyConnection, paths: Sequence[Path]) -> None:
    """Temporary tables and views every query below reads: the systems without a
    retriever, the first askings that have a judgement (``answers``: ``correct`` null
    where the judge failed), each group's tag, the flags that change how the figures read
    a retrieval, and each judged row as the figures read it (``judged``)."""
    asked = f"""FROM {_files(paths)} WHERE "repeat" = 0 AND method IS NOT NULL"""
    # A system that retrieved nothing for any question it was asked, judged or not (an
    # LLM-only system), has no retriever: every row of it, the judge's failures included,
    # loses its retrieved ids and its retrieval verdict here, once, so that no figure,
    # comparison or drill-down line reads a retrieval it never made
    # (metrics.without_retriever). A NULL retrieved_ids (unknown) is not "nothing".
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE no_retriever AS
        SELECT system {asked} GROUP BY system
        HAVING bool_and(retrieved_ids IS NOT NULL AND len(retrieved_ids) = 0)"""
    )
    con.execute(
        f"""CREATE OR REPLACE TEMP VIEW answers AS
        SELECT system, variant, group_id, query_id, query, reference, label, correct,
               coalesce(starts_with(method, 'error'), false) AS errored,
               CASE WHEN retriever THEN retrieved_ids END AS retrieved_ids,
               gold_ids, gold_kind, coalesce(answerable, true) AS answerable,
               CASE WHEN NOT retriever OR gold_ids IS NULL OR len(gold_ids) = 0 THEN NULL
                    WHEN starts_with(method, 'error') THEN false
                    ELSE retrieval_correct END AS rc
        FROM (SELECT *, system NOT IN (SELECT system FROM no_retriever) AS retriever
              {asked})"""
    )
    con.execute(
        """CREATE OR REPLACE TEMP TABLE tags AS
        SELECT system, variant, group_id,
               CASE WHEN sum(CASE WHEN correct THEN 1 ELSE 0 END) = 0 THEN 'gap'
                    WHEN bool_and(correct) THEN 'robust' ELSE 'non-robust' END AS tag
        FROM answers WHERE correct IS NOT NULL GROUP BY system, variant, group_id"""
    )
    # A variant none of whose queries has gold ids, where the system retrieved something
    # and some retrieval has no verdict, is judged by the context comparison
    # (metrics.by_system_and_variant); never that of a system without a retriever, whose
    # retrieved ids are all NULL in ``answers``.
    con.execute(
        """CREATE OR REPLACE TEMP TABLE flags AS
        SELECT system, variant,
               coalesce(bool_and(gold_ids IS NULL) AND bool_or(len(retrieved_ids) > 0)
                 AND bool_or(rc IS NULL AND retrieved_ids IS NOT NULL), false) AS context
        FROM answers WHERE correct IS NOT NULL GROUP BY system, variant"""
    )
    # The context comparison: a wrong answer without a retrieval verdict whose retrieved
    # ids (as a set) are those of a right answer of its group.
    # Only the groups of such answers are read for their right answers' ids (usually none:
    # where gold ids are known, nothing is compared).
    con.execute(
        """CREATE OR REPLACE TEMP TABLE wanted AS
        SELECT system, variant, group_id, query_id, list_sort(retrieved_ids) AS ids
        FROM answers
        WHERE correct = false AND rc IS NULL AND retrieved_ids IS NOT NULL
          AND gold_ids IS NULL"""
    )
    con.execute(
        """CREATE OR REPLACE TEMP TABLE same_context AS
        WITH good AS (
            SELECT DISTINCT a.system, a.variant, a.group_id, list_sort(a.retrieved_ids) AS ids
            FROM answers a
            SEMI JOIN (SELECT DISTINCT system, variant, group_id FROM wanted) w
              ON a.system = w.system AND a.variant = w.variant AND a.group_id = w.group_id
            WHERE a.correct AND a.retrieved_ids IS NOT NULL)
        SELECT w.system, w.query_id FROM wanted w JOIN good g
          ON w.system = g.system AND w.variant = g.variant AND w.group_id = g.group_id
         AND w.ids = g.ids"""
    )
    context = """CASE WHEN correct THEN true
                      WHEN tag = 'non-robust' THEN s.query_id IS NOT NULL
                      ELSE false END"""
    unknown = "a.rc IS NULL AND a.retrieved_ids IS NOT NULL AND a.gold_ids IS NULL"
    con.execute(
        f"""CREATE OR REPLACE TEMP VIEW judged AS
        SELECT a.*, t.tag,
               CASE WHEN f.context AND {unknown} THEN {context} ELSE a.rc END AS rc_figures,
               CASE WHEN {unknown} THEN {context} ELSE a.rc END AS rc_blame
        FROM answers a
        JOIN tags t USING (system, variant, group_id)
        JOIN flags f USING (system, variant)
        LEFT JOIN same_context s ON a.system = s.system AND a.query_id = s.query_id
        WHERE a.correct IS NOT NULL"""
    )


def rule_fit(con: duckdb.DuckDBPyConnection, rule: str) -> RuleFit:
    """Where ``rule`` does not fit the judged first askings' retrievals (after
    :func:`aggregate` prepared them), counted as the in-memory path counts them: every
    answer with a judgement (the judge's failures too) that did not fail and has
    retrieved ids, by its distinct documents retrieved, within recall@K's K, and gold."""
    fit = RuleFit(rule)
    cut = int(rule[7:]) if rule.startswith("recall@") else None
    within = (
        f"len(list_distinct(list_slice(retrieved_ids, 1, {cut})))"
        if cut is not None
        else "len(list_distinct(retrieved_ids))"
    )
    rows = con.execute(
        f"""SELECT system, len(list_distinct(retrieved_ids)) AS got,
                   len(list_distinct(gold_ids)) AS want, {within} AS within, count(*) AS n
            FROM answers
            WHERE NOT errored AND retrieved_ids IS NOT NULL AND gold_ids IS NOT NULL
            GROUP BY ALL"""
    ).fetchall()
    for system, got, want, inside, n in rows:
        fit.add_counts(system, int(got), int(want), int(inside), int(n))
    return fit


def _ints(values: Any) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


def aggregate(con: duckdb.DuckDBPyConnection, paths: Sequence[Path]) -> TableAggregates:
    """Everything the figures need of the answer table in ``paths``, aggregated in SQL."""
    _prepare(con, paths)

    def j(condition: str) -> str:  # among the judged answers
        return f"sum(CASE WHEN correct IS NOT NULL AND {condition} THEN 1 ELSE 0 END)"

    def f(condition: str) -> str:  # among those the judge failed on
        return f"sum(CASE WHEN correct IS NULL AND {condition} THEN 1 ELSE 0 END)"

    counts = {
        "n": j("true"),
        "k": j("correct"),
        "errors": j("errored"),
        "rn": j("rc_figures IS NOT NULL"),
        "rk": j("rc_figures"),
        "cn": j("rc IS NOT NULL"),
        "ck": j("rc"),
        "ce": j("rc IS NOT NULL AND errored"),
        "fn": f("rc IS NOT NULL"),
        "fk": f("rc"),
        "hk": j(f"answerable AND {_EVIDENCE}"),
        "hh": j(_HOLE),
    }
    assert tuple(counts) == COUNTS
    columns = ",\n".join(f"{sql} AS {name}" for name, sql in counts.items())
    figures = "(SELECT * FROM judged UNION ALL BY NAME SELECT * FROM answers WHERE correct IS NULL)"
    table = con.sql(
        f"""WITH g AS (SELECT system, variant, group_id, {columns}
                       FROM {figures} GROUP BY system, variant, group_id)
            SELECT *, dense_rank() OVER (ORDER BY group_id) - 1 AS code
            FROM g ORDER BY system, variant, group_id"""
    ).to_arrow_table()
    groups = GroupCounts(
        system=table.column("system").to_pylist(),
        variant=table.column("variant").to_pylist(),
        group=table.column("group_id").to_pylist(),
        code=_ints(table.column("code").to_numpy()),
        counts={name: _ints(table.column(name).to_numpy()) for name in COUNTS},
    )
    del table
    return TableAggregates(
        groups=groups,
        sides=_sides(con),
        shapes=_shapes(con, "variant"),
        label_shapes=_shapes(con, "label"),
        depth=dict(
            con.execute(
                """SELECT system, max(len(retrieved_ids)) FROM answers
                   WHERE retrieved_ids IS NOT NULL AND len(gold_ids) > 0 GROUP BY system"""
            ).fetchall()
        ),
        judge_failed=dict(
            con.execute(
                "SELECT system, count(*) FROM answers WHERE correct IS NULL "
                "GROUP BY system ORDER BY system"
            ).fetchall()
        ),
    )


def _sides(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, str], SideCounts]:
    """Each system and variant's blame and queries left out of the retrieval figures."""
    part = _source("rc_blame", "retrieved_ids")
    rows = con.execute(
        f"""WITH p AS (SELECT system, variant, {part} AS part, {_EVIDENCE} AS evidence,
                              {_HOLE} AS hole FROM judged)
            SELECT system, variant, part, evidence, hole, count(*) FROM p
            GROUP BY ALL"""
    ).fetchall()
    blames: dict[tuple[str, str], dict[str, Any]] = {}
    for system, variant, where, evidence, hole, n in rows:
        b = blames.setdefault(
            (system, variant),
            {"counts": dict.fromkeys(SOURCES, 0), "evidence": 0, "convention": 0, "holes": 0},
        )
        b["counts"][where] += n
        if where == "system error":
            continue
        if evidence:
            b["evidence"] += n
            b["holes"] += n if where == "correct" and hole else 0
        else:
            b["convention"] += n
    why = """CASE WHEN gold_ids IS NULL THEN 'unknown'
                  WHEN len(gold_ids) = 0 THEN 'no document' ELSE 'no retrieved ids' END"""
    left: dict[tuple[str, str], Counter[str]] = {}
    for system, variant, reason, n in con.execute(
        f"""SELECT system, variant, {why}, count(*) FROM (
                SELECT system, variant, gold_ids FROM judged WHERE rc_figures IS NULL
                UNION ALL
                SELECT system, variant, gold_ids FROM answers
                WHERE correct IS NULL AND rc IS NULL)
            GROUP BY ALL"""
    ).fetchall():
        left.setdefault((system, variant), Counter())[reason] += n
    computed: dict[tuple[str, str], tuple[int, int]] = {
        (system, variant): (int(n), int(k))
        for system, variant, n, k in con.execute(
            """SELECT system, variant, count(*), count(*) FILTER (WHERE rc) FROM (
                    SELECT system, variant, rc_figures AS rc, gold_kind FROM judged
                    UNION ALL
                    SELECT system, variant, rc, gold_kind FROM answers WHERE correct IS NULL)
                WHERE gold_kind = 'computed' AND rc IS NOT NULL
                GROUP BY ALL"""
        ).fetchall()
    }
    return {
        key: SideCounts(
            Blame(
                rule=blame_rule(b["evidence"], b["convention"]),
                counts=b["counts"],
                by_evidence=b["evidence"],
                by_convention=b["convention"],
                holes_answered=b["holes"],
            ),
            dict(left.get(key, {})),
            computed.get(key, (0, 0)),
        )
        for key, b in blames.items()
    }


def _shapes(con: duckdb.DuckDBPyConnection, by: str) -> dict[str, dict[str, dict[Shape, int]]]:
    """The ranked queries (a retrieved list and gold ids naming a document; judged or
    not) per system and ``by`` (variant or label), as shapes
    (:func:`~ragaudit.analysis.retrieval_metrics.query_shape`) with their counts."""
    positions = """list_sort(list_filter(
            list_transform(list_distinct(gold_ids), lambda d: list_position(retrieved_ids, d) - 1),
            lambda p: p IS NOT NULL))"""
    out: dict[str, dict[str, dict[Shape, int]]] = {}
    for system, key, wanted, found, n in con.execute(
        f"""SELECT system, {by},
                   CASE WHEN len(gold_ids) > 1 THEN len(list_distinct(gold_ids)) ELSE 1 END,
                   {positions}, count(*)
            FROM answers
            WHERE retrieved_ids IS NOT NULL AND len(gold_ids) > 0 AND {by} IS NOT NULL
            GROUP BY ALL"""
    ).fetchall():
        out.setdefault(system, {}).setdefault(key, {})[(int(wanted), tuple(found))] = int(n)
    return out


def write_drilldown(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """drilldown.jsonl straight from SQL (after :func:`aggregate`), atomically: one line
    per judged answer with its group's tag and where it went wrong, in the table's order
    (the keys of :class:`~ragaudit.store.files.DrilldownRow` for a run's query)."""
    part = _source("rc", "retrieved_ids")
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    os.close(fd)
    try:
        con.execute(
            f"""COPY (SELECT system, variant, group_id, tag, query_id, query, reference,
                             correct, rc AS retrieval_correct, {part} AS source
                      FROM judged)
                TO '{name.replace("'", "''")}' (FORMAT JSON)"""
        )
        os.replace(name, path)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
