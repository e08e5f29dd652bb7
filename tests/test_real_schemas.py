"""The real public schemas of tests/support/real_schemas.py load whole: every table, every
row of the sources (counted here from the source files themselves, not by the loader), and
every declared primary and foreign key as ragaudit's introspection reads them."""

from __future__ import annotations

import collections
import re
import sqlite3
from pathlib import Path

import pytest

from ragaudit.db.engine import Database
from ragaudit.db.schema import introspect
from tests.support import real_schemas
from tests.support.real_schemas import midas_source_dir, midas_sqlite, tpch_csv

# The session fixtures, under their own names (an import of them would read as unused).
midas_db = real_schemas.midas_db
tpch_db = real_schemas.tpch_db

ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}( \d{2}:\d{2}:\d{2})?$")


def _path(url: str) -> Path:
    return Path(url.removeprefix("sqlite:///"))


def _row_counts(url: str) -> dict[str, int]:
    with sqlite3.connect(_path(url)) as conn:
        names = [
            r[0]
            for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if not r[0].startswith("sqlite_")
        ]
        return {n: conn.execute(f'SELECT COUNT(*) FROM "{n}"').fetchone()[0] for n in names}


def _keys(url: str) -> tuple[dict[str, tuple[str, ...]], set[tuple[str, tuple, str, tuple]]]:
    schema = introspect(Database(url), with_stats=False)
    primary = {t.name: t.primary_key for t in schema.tables}
    foreign = {
        (t.name, fk.columns, fk.ref_table, fk.ref_columns)
        for t in schema.tables
        for fk in t.foreign_keys
    }
    return primary, foreign


def _columns(text: str) -> tuple[str, ...]:
    return tuple(c.strip() for c in text.split(","))


# -- MIDAS -----------------------------------------------------------------------------


def _midas_text(name: str) -> str:
    return (midas_source_dir() / name).read_text(encoding="utf-8")


def test_midas_has_every_table_and_every_inserted_row(midas_db: str) -> None:
    ddl = _midas_text(real_schemas.MIDAS_DDL)
    tables = re.findall(r"^CREATE TABLE (\w+)", ddl, re.M)
    inserts = collections.Counter(
        re.findall(r"^Insert into (\w+)", _midas_text(real_schemas.MIDAS_DML), re.M)
    )
    expected = {t: inserts.get(t, 0) for t in tables}
    assert len(expected) == 21 and sum(expected.values()) == 960  # the package's 0.1.10
    assert _row_counts(midas_db) == expected
    # The export's own "Row Count" comments agree, where a table has one.
    stated = dict(re.findall(r"^-- (\w+)  \(Table\) *\n--\n--   Row Count: (\d+)", ddl, re.M))
    assert len(stated) == 18
    assert {t: expected[t] for t in stated} == {t: int(n) for t, n in stated.items()}


def test_midas_declared_keys_are_the_introspected_keys(midas_db: str) -> None:
    ddl = _midas_text(real_schemas.MIDAS_DDL)
    declared_pk = {
        table: _columns(cols)
        for table, cols in re.findall(
            r"ALTER TABLE (\w+) ADD \(\s*CONSTRAINT \w+\s+PRIMARY KEY\s*\(([^)]*)\)", ddl
        )
    }
    declared_fk = {
        (table, _columns(cols), ref, _columns(ref_cols))
        for table, cols, ref, ref_cols in re.findall(
            r"ALTER TABLE (\w+) ADD \(\s*CONSTRAINT \w+\s+FOREIGN KEY \(([^)]*)\)\s*"
            r"REFERENCES (\w+) \(([^)]*)\)",
            _midas_text(real_schemas.MIDAS_FOREIGN_KEYS),
        )
    }
    assert len(declared_pk) == 21 and len(declared_fk) == 20
    primary, foreign = _keys(midas_db)
    assert primary == declared_pk
    assert foreign == declared_fk
    with sqlite3.connect(_path(midas_db)) as conn:  # and the rows keep them
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []


def test_midas_dates_are_iso_text_and_text_is_kept(midas_db: str) -> None:
    with sqlite3.connect(_path(midas_db)) as conn:
        source = {
            row[0]: row[1:]
            for row in conn.execute(
                "SELECT SRC_ID, SRC_NAME, SRC_BGN_DATE, SRC_UPD_DATE, SRC_GUID FROM SOURCE"
            )
        }
        # TO_DATE('04/11/2019 4:03:40 PM', 'DD/MM/YYYY HH:MI:SS AM') in the DML script
        assert source[1605] == (
            "BOTTOMS WOOD, ST HELENA",
            "1958-01-01",
            "2019-11-04 16:03:40",
            "7FF58BDA2BA2405794906F74843099A6",
        )
        remark = "Calibrated on  1600 16/08/2016 by Neil Mander - QA Lab & Stores Manager"
        assert conn.execute(
            "SELECT COUNT(*) FROM EQUIPMENT_CALIBRATION WHERE EQPT_CALIB_RMRK = ?",
            (" " + remark,),
        ).fetchone() == (1,)
        dates = [
            (table, column)
            for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            for _, column, kind, *_ in conn.execute(f'PRAGMA table_info("{table}")')
            if kind == "DATE"
        ]
        ddl = _midas_text(real_schemas.MIDAS_DDL)
        assert len(dates) == len(re.findall(r"^  \w+ +DATE\b", ddl, re.M)) == 40
        for table, column in dates:
            values = [v for (v,) in conn.execute(f'SELECT "{column}" FROM "{table}"')]
            assert all(v is None or ISO_DATE.match(v) for v in values), (table, column)


# -- TPC-H -----------------------------------------------------------------------------

# Clause 4.2.5 of the TPC-H specification: rows per table at scale factor 0.01 (lineitem
# varies, one to seven lines per order).
TPCH_ROWS = {
    "region": 5,
    "nation": 25,
    "supplier": 100,
    "customer": 1500,
    "part": 2000,
    "partsupp": 8000,
    "orders": 15000,
}
# Clause 1.4.1 and 1.4.2: the primary keys and the foreign keys.
TPCH_PRIMARY = {
    "region": ("r_regionkey",),
    "nation": ("n_nationkey",),
    "supplier": ("s_suppkey",),
    "customer": ("c_custkey",),
    "part": ("p_partkey",),
    "partsupp": ("ps_partkey", "ps_suppkey"),
    "orders": ("o_orderkey",),
    "lineitem": ("l_orderkey", "l_linenumber"),
}
TPCH_FOREIGN = {
    ("nation", ("n_regionkey",), "region", ("r_regionkey",)),
    ("supplier", ("s_nationkey",), "nation", ("n_nationkey",)),
    ("customer", ("c_nationkey",), "nation", ("n_nationkey",)),
    ("partsupp", ("ps_partkey",), "part", ("p_partkey",)),
    ("partsupp", ("ps_suppkey",), "supplier", ("s_suppkey",)),
    ("orders", ("o_custkey",), "customer", ("c_custkey",)),
    ("lineitem", ("l_orderkey",), "orders", ("o_orderkey",)),
    ("lineitem", ("l_partkey",), "part", ("p_partkey",)),
    ("lineitem", ("l_suppkey",), "supplier", ("s_suppkey",)),
    ("lineitem", ("l_partkey", "l_suppkey"), "partsupp", ("ps_partkey", "ps_suppkey")),
}


def test_tpch_has_every_generated_row(tpch_db: str, tmp_path: Path) -> None:
    folder = tpch_csv(tmp_path / "csv", 0.01)
    lines = {}
    for table in TPCH_PRIMARY:
        with (folder / f"{table}.csv").open("rb") as handle:
            lines[table] = sum(1 for _ in handle) - 1  # the header
    counts = _row_counts(tpch_db)
    assert counts == lines
    assert {t: counts[t] for t in TPCH_ROWS} == TPCH_ROWS
    assert TPCH_ROWS["orders"] < counts["lineitem"] < 7 * TPCH_ROWS["orders"]


def test_tpch_specified_keys_are_the_introspected_keys(tpch_db: str) -> None:
    primary, foreign = _keys(tpch_db)
    assert primary == TPCH_PRIMARY
    assert foreign == TPCH_FOREIGN
    with sqlite3.connect(_path(tpch_db)) as conn:
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        row = conn.execute(
            "SELECT o_orderdate, typeof(o_totalprice), typeof(o_custkey) FROM orders "
            "WHERE o_orderkey = 1"
        ).fetchone()
    assert row == ("1996-01-02", "real", "integer")


# -- building ----------------------------------------------------------------------------


def test_a_complete_file_is_reused_and_a_stale_one_rebuilt(tmp_path: Path) -> None:
    try:
        midas_source_dir()
    except real_schemas.RealSchemaUnavailable as exc:
        pytest.skip(str(exc))
    path = tmp_path / "midas.sqlite"
    (tmp_path / ".midas.sqlite.killed.partial").write_bytes(b"half a build")
    midas_sqlite(path)
    built = path.stat()
    assert midas_sqlite(path) == path
    assert path.stat().st_mtime_ns == built.st_mtime_ns and path.stat().st_ino == built.st_ino
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".midas.sqlite.killed.partial",  # another build's leftover is neither used nor kept
        "midas.sqlite",
    ]
    path.unlink()
    with sqlite3.connect(path) as conn:  # a file of the name, not built by the loader
        conn.execute("CREATE TABLE other (x)")
    conn.close()
    midas_sqlite(path)
    assert len(_row_counts(f"sqlite:///{path}")) == 21


def test_an_interrupted_build_leaves_nothing_that_looks_complete(tmp_path: Path) -> None:
    def fill(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE half (x)")
        conn.commit()
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        real_schemas._build_atomically(tmp_path / "db.sqlite", 7, fill)
    assert list(tmp_path.iterdir()) == []


def test_a_missing_package_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(real_schemas, "MIDAS_PACKAGE", "no_such_package_for_ragaudit")
    monkeypatch.setattr(real_schemas, "TPCH_TOOL", "no-such-tool-for-ragaudit")
    monkeypatch.setattr(real_schemas.shutil, "which", lambda name: None)
    with pytest.raises(real_schemas.RealSchemaUnavailable, match="opencdms-test-databases"):
        midas_sqlite(Path("unused.sqlite"))
    with pytest.raises(real_schemas.RealSchemaUnavailable, match="pip install tpchgen-cli"):
        real_schemas.tpch_sqlite(Path("unused.sqlite"))
    with pytest.raises(pytest.skip.Exception, match="pip install tpchgen-cli"):
        real_schemas._url_or_skip(real_schemas.tpch_sqlite, Path("unused.sqlite"))
