"""Grounded generation at scale (issue 3).

Builds a synthetic database, in SQLite and in DuckDB, with a 1,000,000-row table ``item``
(``name`` indexed, ``label`` not), a ``maker`` and a ``store`` table, and an association
table ``supply`` between them. Then:

1. end to end: 1,000,000 grounded query-answer pairs (one text template) from instantiation
   to the JSONL written, with the check that no question text has two answers, timed, with
   the peak memory of the process that did it;
2. against the paper's loop (Algorithm 1: SELECT DISTINCT per placeholder, Cartesian
   product, one query per combination through SQLAlchemy) in the same run on the same
   database, for (a) a one-placeholder template on an indexed key, (b) the same on a key
   without an index, (c) the two-placeholder join through ``supply``. The loop runs on a
   sample of combinations and is extrapolated linearly to all of them.

Targets: (1) under 60 s and 1 GB; (2a) >= 10x; (2b) >= 1,000x.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ragaudit.db import Database, bind_template, introspect  # noqa: E402
from ragaudit.generate import count_combinations, iter_groups, plan  # noqa: E402

ITEMS = 1_000_000
MAKERS = 1_000
STORES = 1_000
SUPPLY = 200_000

TEMPLATES = {
    "indexed": "SELECT colour FROM item WHERE name = '[item.name]'",
    "unindexed": "SELECT colour FROM item WHERE label = '[item.label]'",
    "join": "SELECT s.quantity FROM supply AS s JOIN maker AS m ON s.maker_id = m.maker_id "
    "JOIN store AS t ON s.store_id = t.store_id "
    "WHERE m.name = '[maker.name]' AND t.name = '[store.name]'",
}
LOOP_SAMPLE = {"indexed": 20_000, "unindexed": 10, "join": 5_000}

# Plain SQL shared by both engines: integers from a recursive CTE.
BUILD = [
    "CREATE TABLE maker (maker_id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT)",
    "CREATE TABLE store (store_id INTEGER PRIMARY KEY, name TEXT NOT NULL)",
    "CREATE TABLE item (item_id INTEGER PRIMARY KEY, name TEXT NOT NULL, label TEXT NOT NULL, "
    "colour TEXT, maker_id INTEGER REFERENCES maker(maker_id))",
    "CREATE TABLE supply (maker_id INTEGER REFERENCES maker(maker_id), "
    "store_id INTEGER REFERENCES store(store_id), quantity INTEGER, "
    "PRIMARY KEY (maker_id, store_id))",
]


def _fill_sql(n: int) -> str:
    return f"WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < {n})"


def build_sqlite(path: Path) -> None:
    conn = sqlite3.connect(path)
    for ddl in BUILD:
        conn.execute(ddl)
    conn.execute(
        f"INSERT INTO maker {_fill_sql(MAKERS)} SELECT i, 'Maker ' || i, 'City ' || (i % 50) FROM r"
    )
    conn.execute(f"INSERT INTO store {_fill_sql(STORES)} SELECT i, 'Store ' || i FROM r")
    conn.execute(
        f"INSERT INTO item {_fill_sql(ITEMS)} SELECT i, 'item-' || i, 'label-' || i, "
        "CASE i % 7 WHEN 0 THEN 'red' WHEN 1 THEN 'orange' WHEN 2 THEN 'yellow' "
        "WHEN 3 THEN 'green' WHEN 4 THEN 'blue' WHEN 5 THEN 'indigo' ELSE 'violet' END, "
        f"1 + i % {MAKERS} FROM r"
    )
    conn.execute(
        f"INSERT INTO supply {_fill_sql(SUPPLY)} "
        f"SELECT 1 + (i - 1) % {MAKERS}, 1 + ((i - 1) / {MAKERS}) % {STORES}, i % 97 FROM r"
    )
    conn.execute("CREATE UNIQUE INDEX item_name ON item(name)")
    conn.commit()
    conn.close()


def build_duckdb(path: Path) -> None:
    import duckdb

    conn = duckdb.connect(str(path))
    for ddl in BUILD:
        conn.execute(ddl)
    conn.execute(
        f"INSERT INTO maker SELECT i, 'Maker ' || i, 'City ' || (i % 50) "
        f"FROM range(1, {MAKERS + 1}) t(i)"
    )
    conn.execute(f"INSERT INTO store SELECT i, 'Store ' || i FROM range(1, {STORES + 1}) t(i)")
    conn.execute(
        "INSERT INTO item SELECT i, 'item-' || i, 'label-' || i, "
        "['red','orange','yellow','green','blue','indigo','violet'][(i % 7) + 1], "
        f"1 + i % {MAKERS} FROM range(1, {ITEMS + 1}) t(i)"
    )
    conn.execute(
        f"INSERT INTO supply SELECT 1 + (i - 1) % {MAKERS}, "
        f"1 + ((i - 1) // {MAKERS}) % {STORES}, i % 97 FROM range(1, {SUPPLY + 1}) t(i)"
    )
    conn.execute("CREATE UNIQUE INDEX item_name ON item(name)")
    conn.close()


def set_based_seconds(db: Database, sql: str) -> tuple[float, int, int]:
    """Time of ragaudit's set-based instantiation of one template (all groups)."""
    schema = introspect(db, with_stats=False)
    start = time.perf_counter()
    p = plan(sql, schema, dialect=db.sqlglot_dialect)
    groups = sum(1 for _ in iter_groups(db, p))
    combos = count_combinations(db, p)
    return time.perf_counter() - start, groups, combos


def loop_seconds(db: Database, sql: str, sample: int) -> tuple[float, float]:
    """The paper's Algorithm 1, at its most efficient: SELECT DISTINCT per placeholder,
    Cartesian product, one query per combination through SQLAlchemy, the statement
    prepared once and only the values bound each time. Runs ``sample`` combinations.

    Returns (seconds of the DISTINCT queries, seconds per combination)."""
    schema = introspect(db, with_stats=False)
    p = plan(sql, schema, dialect=db.sqlglot_dialect)
    start = time.perf_counter()
    domains = []
    for ph in p.placeholders:
        rows = db.execute(f"SELECT DISTINCT {ph.column} FROM {ph.table}").rows
        domains.append([r[0] for r in rows])
    distinct_s = time.perf_counter() - start
    keys = [ph.key for ph in p.placeholders]
    combos = list(itertools.islice(itertools.product(*domains), sample))
    statement, _ = bind_template(
        sql, dict(zip(keys, combos[0], strict=True)), dialect=db.sqlglot_dialect
    )
    start = time.perf_counter()
    with db.engine.connect() as conn:
        for combo in combos:
            params = {f"rgp{i}": value for i, value in enumerate(combo)}
            conn.execute(statement, params).fetchall()
    return distinct_s, (time.perf_counter() - start) / len(combos)


END_TO_END = """
import json, sys, time, resource
from pathlib import Path
sys.path.insert(0, {repo!r})
from ragaudit.generate.options import GenerateOptions
from ragaudit.db import Database, introspect
from ragaudit.generate import SqlTemplate, generate, DatasetStats
from ragaudit.generate.dataset import TextConflicts
from ragaudit.records.io import write_jsonl_atomic
start = time.perf_counter()
db = Database({url!r}, timeout_s=600)
schema = introspect(db, with_stats=False)
template = SqlTemplate(id="colour-by-item-name", sql={sql!r})
texts = {{template.id: {{"short": ["Colour of item '[item.name]'?"]}}}}
stats = DatasetStats()
conflicts = TextConflicts()  # as generate_dataset does: one text, one answer
records = generate(db, schema, [template], texts, GenerateOptions(), stats=stats)
n = write_jsonl_atomic(Path({out!r}), conflicts.watch(records))
assert not conflicts.conflicting_groups()
seconds = time.perf_counter() - start
peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"pairs": n, "seconds": seconds, "peak_mb": peak_mb}}))
"""


def end_to_end(url: str, out: Path) -> dict[str, Any]:
    """1,000,000 pairs in a fresh process, so its peak memory is its own."""
    code = END_TO_END.format(repo=str(REPO), url=url, sql=TEMPLATES["indexed"], out=str(out))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def run() -> dict[str, Any]:
    result: dict[str, Any] = {"items": ITEMS, "loop_sample_combinations": LOOP_SAMPLE}
    with tempfile.TemporaryDirectory() as tmp:
        sqlite_path = Path(tmp) / "bench.sqlite"
        duck_path = Path(tmp) / "bench.duckdb"
        start = time.perf_counter()
        build_sqlite(sqlite_path)
        build_duckdb(duck_path)
        result["build_s"] = round(time.perf_counter() - start, 1)
        for engine, url in (
            ("sqlite", f"sqlite:///{sqlite_path}"),
            ("duckdb", f"duckdb:///{duck_path}"),
        ):
            e2e = end_to_end(url, Path(tmp) / f"{engine}.jsonl")
            result[f"{engine}_e2e_pairs"] = e2e["pairs"]
            result[f"{engine}_e2e_s"] = round(e2e["seconds"], 1)
            result[f"{engine}_e2e_peak_mb"] = round(e2e["peak_mb"])
            db = Database(url, timeout_s=600)
            for name, sql in TEMPLATES.items():
                set_s, groups, combos = set_based_seconds(db, sql)
                distinct_s, per = loop_seconds(db, sql, LOOP_SAMPLE[name])
                loop_s = distinct_s + per * combos
                result[f"{engine}_{name}_combinations"] = combos
                result[f"{engine}_{name}_groups"] = groups
                result[f"{engine}_{name}_set_based_s"] = round(set_s, 2)
                result[f"{engine}_{name}_loop_us_per_combination"] = round(per * 1e6, 1)
                result[f"{engine}_{name}_loop_extrapolated_s"] = round(loop_s, 1)
                result[f"{engine}_{name}_speedup"] = round(loop_s / set_s, 1)
            db.dispose()
    targets = []
    for engine in ("sqlite", "duckdb"):
        targets += [
            result[f"{engine}_e2e_pairs"] >= 1_000_000,
            result[f"{engine}_e2e_s"] < 60,
            result[f"{engine}_e2e_peak_mb"] < 1024,
            result[f"{engine}_indexed_speedup"] >= 10,
            result[f"{engine}_unindexed_speedup"] >= 1000,
        ]
    result["target_e2e_and_speedups_met"] = all(targets)
    return result


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
