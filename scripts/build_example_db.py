"""Rebuild src/ragaudit/data/example.sqlite from example.sql (run after editing the SQL)."""

import sqlite3
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "src" / "ragaudit" / "data"


def main() -> None:
    target = DATA / "example.sqlite"
    tmp = target.with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    conn = sqlite3.connect(tmp)
    conn.executescript((DATA / "example.sql").read_text(encoding="utf-8"))
    conn.commit()
    conn.execute("VACUUM")
    conn.close()
    tmp.replace(target)
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
