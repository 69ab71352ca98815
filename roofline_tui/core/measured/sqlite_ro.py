"""Read-only SQLite with a query budget: how every SQLite file a profiler wrote is opened (rocpd
counter databases here, nsys and rocpd exports in the importers).

A file name cannot add URI parameters (:func:`sqlite_uri`), nothing but a regular file is
opened, and every statement runs under a :class:`QueryBudget` (SQLite's own work: VM steps and
the CPU time spent inside SQLite), so a crafted database cannot hang a read.

How a file is opened follows what lies beside it (:func:`sqlite_state`), and nothing the user
owns is ever written:

* a write-ahead log (``-wal``) with content is read with the database: under SQLite's read
  locks through the ``-shm`` beside it when there is one (a writer may still be at work) or
  the folder lets SQLite make one; in a read-only folder without one, in place with a
  private wal-index in memory (no lock taken, no file created; no copy made);
* a rollback journal (``-journal``) a writer left behind, a database shorter than its header
  says, or a ``-wal``/``-shm``/``-journal`` that is not a regular file is refused with a line
  saying which (:attr:`SqliteState.refusal`);
* anything else is one file: ``immutable`` when the caller says it is a finished export.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roofline_tui.core import store

SQLITE_TIME_BUDGET_S = 20.0  # CPU seconds SQLite itself may spend on one connection's reads
SQLITE_STEP_BUDGET = 2_000_000_000  # VM steps, counted PROGRESS_STEPS at a time
SQLITE_ROW_BUDGET = 20_000_000
PROGRESS_STEPS = 10_000
FETCH_ROWS = 4096  # rows fetched per call by QueryBudget.rows
SQLITE_MAGIC = b"SQLite format 3\x00"
HEADER_BYTES = 100


def sqlite_uri(path: Path) -> str:
    """A read-only ``file:`` URI for ``path`` with every URI-special character percent-encoded,
    so a file name cannot add parameters (``evil?mode=rwc&x=.db`` opens that very file,
    read-only, and creates nothing)."""
    quoted = urllib.parse.quote(str(Path(path).resolve()), safe="/")
    return f"file:{quoted}?mode=ro"


class QueryBudget:
    """SQLite progress handler: interrupts a statement once SQLite's own work passes its budget
    (a recursive-CTE or cross-join view in a crafted database).

    Both measures are of SQLite's work alone: VM steps (the same count on every machine) and
    the CPU time of the reading thread while it is inside SQLite. A statement read through
    :meth:`rows` is timed only inside its execute and its fetches, never during the caller's
    work on the rows between fetches; CPU time does not grow while the machine runs other
    processes. A connection that never uses :meth:`rows` counts the thread's CPU time from
    the open (a caller's work between rows included)."""

    def __init__(self, seconds: float, steps: int | None = None) -> None:
        self.seconds = seconds
        self.step_limit = SQLITE_STEP_BUDGET if steps is None else steps
        self.steps = 0
        self.spent_s = 0.0  # CPU seconds inside SQLite, calls that returned
        self.tripped = False
        self.stopped_by = ""  # "steps" or "time", once tripped
        self.reading = ""  # what the statement read through rows() reads
        self.rows_read = 0  # rows that statement had handed out
        self.opened = ""  # how the file was opened, when more than one plain file was read
        self._entered: float | None = time.thread_time()

    def used_s(self) -> float:
        """CPU seconds spent inside SQLite so far."""
        inside = 0.0 if self._entered is None else time.thread_time() - self._entered
        return self.spent_s + inside

    def __call__(self) -> int:
        self.steps += PROGRESS_STEPS
        if self.steps > self.step_limit:
            self.stopped_by = "steps"
        elif self.used_s() > self.seconds:
            self.stopped_by = "time"
        else:
            return 0
        self.tripped = True
        return 1  # non-zero interrupts the running statement

    def _inside(self, call: Any, *args: Any) -> Any:
        self._entered = time.thread_time()
        try:
            return call(*args)
        finally:
            self.spent_s += time.thread_time() - self._entered
            self._entered = None

    def rows(self, con: sqlite3.Connection, sql: str, what: str
             ) -> Iterator[tuple[Any, ...]]:
        """The rows of ``sql`` (``what``: what it reads, for :meth:`stop_reason`), fetched
        :data:`FETCH_ROWS` at a time, with only SQLite's calls on the clock."""
        self.reading, self.rows_read = what, 0
        cur = self._inside(con.execute, sql)
        while True:
            batch: list[tuple[Any, ...]] = self._inside(cur.fetchmany, FETCH_ROWS)
            if not batch:
                return
            self.rows_read += len(batch)
            yield from batch

    def stop_reason(self) -> str:
        """Which budget stopped SQLite, and where, in one clause."""
        if self.stopped_by == "steps":
            spent = f"its step budget ({self.step_limit:,} SQLite VM steps)"
        else:
            spent = (f"its time budget ({self.seconds:g} s of CPU time inside SQLite; this "
                     "tool's own work and the machine's load are not counted)")
        where = (f" while reading {self.reading}, {self.rows_read:,} rows in"
                 if self.reading else "")
        return f"SQLite's own work passed {spent}{where}"


@dataclass(frozen=True)
class SqliteState:
    """What a database file's header and the files SQLite keeps beside it (``-wal``,
    ``-shm``, ``-journal``) say about how it can be read."""

    name: str
    sqlite: bool  # starts with SQLite's magic
    size: int
    declared: int | None  # bytes its header says the database holds, when the header says
    page_size: int  # 0: not a valid page size
    wal_mode: bool  # the header's read/write versions say WAL
    wal_bytes: int  # the -wal beside it (0: none, or empty)
    shm: bool  # a -shm beside it
    hot_journal: bool  # a -journal a writer left mid-transaction
    odd: str  # a -wal/-shm/-journal beside it that is not a regular file, and what it is

    @property
    def truncated(self) -> bool:
        """Shorter than its header says (or cut inside a page), when no -wal could hold the
        rest (a checkpoint may have written page 1 before growing the file)."""
        if not self.sqlite or self.wal_bytes:
            return False
        if self.size < HEADER_BYTES:
            return True
        if self.declared is not None:
            return self.size < self.declared
        return bool(self.page_size) and self.size % self.page_size != 0

    @property
    def damage(self) -> str:
        """``"sibling"``, ``"journal"``, ``"truncated"`` or ``""`` (readable as it is)."""
        if self.odd:
            return "sibling"
        if self.hot_journal:
            return "journal"
        return "truncated" if self.truncated else ""

    @property
    def detail(self) -> str:
        """The figures behind :attr:`damage`, in words."""
        if self.damage == "sibling":
            return self.odd
        if self.damage == "journal":
            return f"{self.name}-journal beside it"
        if self.damage != "truncated":
            return ""
        if self.declared is not None:
            return f"{self.size:,} of the {self.declared:,} bytes its header declares"
        if self.size < HEADER_BYTES:
            return f"{self.size:,} bytes, less than SQLite's {HEADER_BYTES}-byte header"
        return f"{self.size:,} bytes, not a whole number of {self.page_size:,}-byte pages"

    @property
    def refusal(self) -> str | None:
        """Why the file is not opened, or ``None``."""
        kind = self.damage
        if kind == "sibling":
            return f"{self.odd}: SQLite would read it as part of the database; refused"
        if kind == "journal":
            return (f"a rollback journal ({self.name}-journal) is beside it: the program "
                    "writing the database stopped mid-write (killed, or still at work), so "
                    "it may be incomplete; refused, nothing rolled back")
        if kind == "truncated":
            return f"truncated ({self.detail}): the file was cut off; refused"
        return None


def _header(head: bytes) -> tuple[int, int | None, bool]:
    """(page size or 0, declared bytes or ``None``, WAL mode) from a database header."""
    if len(head) < HEADER_BYTES:
        return 0, None, False
    ps = int.from_bytes(head[16:18], "big")
    ps = 65536 if ps == 1 else ps
    if not 512 <= ps <= 65536 or ps & (ps - 1):
        ps = 0
    pages = int.from_bytes(head[28:32], "big")
    valid = bool(ps) and pages > 0 and head[24:28] == head[92:96]  # SQLite's own rule
    return ps, pages * ps if valid else None, head[18] == 2 and head[19] == 2


def _sibling(path: Path, suffix: str) -> tuple[os.stat_result | None, str]:
    """The stat of ``path`` + ``suffix`` (``None``: absent), or what is wrong with it."""
    side = Path(str(path) + suffix)
    try:
        os.lstat(side)
    except OSError:
        return None, ""
    try:
        st = os.stat(side)
    except OSError:
        return None, f"{side.name} beside it is a dangling symlink"
    if not stat.S_ISREG(st.st_mode):
        return None, f"{side.name} beside it is {store.file_kind(st.st_mode)}"
    return st, ""


def _journal_is_hot(path: Path, st: os.stat_result | None) -> bool:
    """SQLite's test: a non-empty journal whose first byte is not zero (a journal kept by
    ``journal_mode=PERSIST`` is zeroed, one of ``TRUNCATE`` empty)."""
    if st is None or st.st_size == 0:
        return False
    try:
        return store.read_bytes(Path(str(path) + "-journal"), max_bytes=1, head=True)[:1] \
            not in (b"", b"\x00")
    except store.ReadProblem:
        return True  # there, but unreadable: SQLite could not roll it back either


def sqlite_state(path: Path) -> SqliteState:
    """The header of ``path`` (a regular file) and what lies beside it; never opens SQLite.
    The siblings are looked for where SQLite looks, beside the resolved path."""
    real = Path(path).resolve()
    try:
        head = store.read_bytes(real, max_bytes=HEADER_BYTES, head=True)
        size = os.stat(real).st_size
    except (store.ReadProblem, OSError):
        head, size = b"", 0
    page_size, declared, wal_mode = _header(head)
    wal, odd_wal = _sibling(real, "-wal")
    shm, odd_shm = _sibling(real, "-shm")
    journal, odd_journal = _sibling(real, "-journal")
    return SqliteState(
        name=real.name, sqlite=head.startswith(SQLITE_MAGIC), size=size, declared=declared,
        page_size=page_size, wal_mode=wal_mode, wal_bytes=wal.st_size if wal else 0,
        shm=shm is not None, hot_journal=_journal_is_hot(real, journal),
        odd=odd_wal or odd_shm or odd_journal)


def _writable_dir(path: Path) -> bool:
    """Whether the folder of ``path`` takes new files, so SQLite can make its ``-shm`` there.
    Only where it does not is a log read with a private index and no lock (:func:`_plan`):
    SQLite without locks believes it may checkpoint at close, and after a checkpoint with
    nothing to copy (a log holding no frame) it deletes the log, which such a folder
    refuses."""
    return os.access(Path(path).resolve().parent, os.W_OK)


def _plan(path: Path, state: SqliteState, immutable: bool) -> tuple[str, bool, str]:
    """(URI, whether the wal-index is private to the connection, how it is read in words)."""
    uri = sqlite_uri(path)
    if state.wal_bytes:
        wal = f"its write-ahead log ({state.name}-wal, {state.wal_bytes:,} bytes of writes " \
              "not yet checkpointed into the database)"
        if state.shm:
            return uri, False, f"read with {wal}, under SQLite's read locks"
        if _writable_dir(path):
            return uri, False, (f"read with {wal}, under SQLite's read locks (SQLite made "
                                f"{state.name}-shm beside it, its shared index of the log)")
        # a read-only folder: no -shm can be made, and without one no writer is at work. A
        # private wal-index in memory (exclusive locking mode) with no lock taken reads the
        # log in place; the database is opened read-only and the folder refuses a delete.
        return uri + "&vfs=unix-none", True, (f"read with {wal}, in place: a read-only "
                                              "folder, so the log's index is kept in memory")
    if state.wal_mode or immutable:  # no log with content: the file holds every commit
        return uri + "&immutable=1", False, ""
    return uri, False, ""


def open_sqlite_ro(path: Path, seconds: float | None = None, *, immutable: bool = False
                   ) -> tuple[sqlite3.Connection, QueryBudget]:
    """A read-only connection through :func:`sqlite_uri` with a :class:`QueryBudget` installed.
    Raises ``sqlite3.Error``, also for anything but a regular file (SQLite would wait forever
    on a FIFO named ``run.db``) and for a file :attr:`SqliteState.refusal` refuses.
    ``immutable``: the file is a finished export that nothing writes (no lock taken, so a
    read-only folder works); a ``-wal`` with content beside it is read all the same.
    What was read besides the file is said in the budget's ``opened``."""
    why = store.check_regular(path)
    if why is not None:
        raise sqlite3.OperationalError(why)
    state = sqlite_state(path)
    refused = state.refusal if state.sqlite else None
    if refused is not None:
        raise sqlite3.OperationalError(refused)
    uri, private_index, how = _plan(path, state, immutable)
    con = sqlite3.connect(uri, uri=True)
    budget = QueryBudget(SQLITE_TIME_BUDGET_S if seconds is None else seconds)
    budget.opened = how
    con.set_progress_handler(budget, PROGRESS_STEPS)
    if private_index:  # before the first read, so SQLite never looks for a -shm
        con.execute("PRAGMA locking_mode=EXCLUSIVE")
    return con, budget
