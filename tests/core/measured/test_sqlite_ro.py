"""The read-only SQLite opener every profiler database goes through (core/measured/sqlite_ro.py):
WAL-aware without writing a byte of the user's files, refusing what SQLite would misread or
hang on, and a budget that counts SQLite's own work only (issue 36)."""

from __future__ import annotations

import os
import shutil
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from roofline_tui.core.measured import sqlite_ro
from roofline_tui.core.measured.sqlite_ro import QueryBudget, open_sqlite_ro


def _wal_db(tmp: Path, rows: int = 500) -> Path:
    """A WAL-mode database whose table and rows are all in its -wal (copied while the writer
    is open, autocheckpoint off)."""
    src, out = tmp / "writer", tmp / "db"
    src.mkdir()
    out.mkdir()
    con = sqlite3.connect(src / "k.db")
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA wal_autocheckpoint=0")
    con.execute("CREATE TABLE kernels (name TEXT, dur INTEGER)")
    con.executemany("INSERT INTO kernels VALUES ('k', ?)", [(i,) for i in range(rows)])
    con.commit()
    for name in ("k.db", "k.db-wal"):
        shutil.copy(src / name, out / name)
    con.close()
    return out / "k.db"


def test_the_log_is_read_in_a_read_only_folder_and_nothing_is_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Σ 0..499 = 124,750 from rows that live only in the log; no -shm made, the database
    and the log unchanged to the byte and the nanosecond (root ignores chmod: the folder check
    is made to say "not writable")."""
    db = _wal_db(tmp_path)
    files = [db, db.with_name("k.db-wal")]
    before = [(p.read_bytes(), p.stat().st_mtime_ns) for p in files]
    monkeypatch.setattr(sqlite_ro, "_writable_dir", lambda _path: False, raising=False)
    db.parent.chmod(0o555)
    try:
        con, budget = open_sqlite_ro(db)
        try:
            assert con.execute("SELECT COUNT(*), SUM(dur) FROM kernels").fetchone() == (
                500, 124_750)
        finally:
            con.close()
        assert sorted(p.name for p in db.parent.iterdir()) == ["k.db", "k.db-wal"]
    finally:
        db.parent.chmod(0o755)
    assert "in place" in budget.opened
    assert [(p.read_bytes(), p.stat().st_mtime_ns) for p in files] == before


def test_a_fifo_beside_the_database_is_refused_not_waited_on(tmp_path: Path) -> None:
    """A FIFO named like its -journal: SQLite, looking for a journal to roll back, would
    block reading it forever (a read-only connection did, before)."""
    db = tmp_path / "run.db"
    sqlite3.connect(db).close()
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    os.mkfifo(tmp_path / "run.db-journal")
    out: list[BaseException | str] = []

    def attempt() -> None:
        try:
            c, _b = open_sqlite_ro(db)
            c.execute("SELECT * FROM t").fetchall()
            c.close()
            out.append("opened")
        except sqlite3.Error as exc:
            out.append(exc)

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(10)
    assert out and isinstance(out[0], sqlite3.OperationalError), out
    assert str(out[0]) == ("run.db-journal beside it is a FIFO (named pipe): SQLite would "
                           "read it as part of the database; refused")


def test_a_persist_journal_is_not_a_leftover(tmp_path: Path) -> None:
    """``journal_mode=PERSIST`` keeps its -journal with a zeroed header after every commit:
    not a writer's leftover, the file reads; a journal whose header is not zeroed is."""
    from roofline_tui.core.measured.sqlite_ro import sqlite_state

    db = tmp_path / "p.db"
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=PERSIST")
    con.execute("CREATE TABLE t (x)")
    con.execute("INSERT INTO t VALUES (7)")
    con.commit()
    con.close()
    journal = tmp_path / "p.db-journal"
    assert journal.stat().st_size > 0 and journal.read_bytes()[:1] == b"\x00"
    assert sqlite_state(db).damage == ""
    c, _b = open_sqlite_ro(db)
    assert c.execute("SELECT x FROM t").fetchone() == (7,)
    c.close()
    journal.write_bytes(b"\xd9\xd5\x05\xf9" + journal.read_bytes()[4:])
    assert sqlite_state(db).damage == "journal"
    with pytest.raises(sqlite3.OperationalError, match=r"a rollback journal \(p.db-journal\)"):
        open_sqlite_ro(db)


def test_a_cut_file_says_how_much_is_there(tmp_path: Path) -> None:
    """Five pages of 4,096 bytes declared, 10,000 bytes left."""
    from roofline_tui.core.measured.sqlite_ro import sqlite_state

    db = tmp_path / "cut.db"
    con = sqlite3.connect(db)
    con.execute("PRAGMA page_size=4096")
    con.execute("CREATE TABLE t (x)")
    con.executemany("INSERT INTO t VALUES (?)", [("x" * 1000,)] * 12)
    con.commit()
    con.close()
    pages = int.from_bytes(db.read_bytes()[28:32], "big")
    assert db.stat().st_size == pages * 4096 and pages == 5
    db.write_bytes(db.read_bytes()[:10_000])
    state = sqlite_state(db)
    assert state.damage == "truncated"
    assert state.detail == "10,000 of the 20,480 bytes its header declares"


def test_rows_time_only_sqlite_s_calls() -> None:
    """20,000 rows read through QueryBudget.rows while the caller burns 0.3 s of its own CPU
    between them: the budget of 0.1 s is not passed, the CPU time it counts stays under it."""
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE t (x)")
    con.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(20_000)])
    budget = QueryBudget(0.1)
    con.set_progress_handler(budget, sqlite_ro.PROGRESS_STEPS)
    total = 0
    start = time.thread_time()
    for (x,) in budget.rows(con, "SELECT x FROM t", "t"):
        total += x
        if x % 1000 == 0:
            t = time.thread_time()
            while time.thread_time() - t < 0.015:
                pass
    assert time.thread_time() - start >= 0.3
    assert total == 20_000 * 19_999 // 2 and not budget.tripped
    assert budget.used_s() < 0.1 and budget.rows_read == 20_000
