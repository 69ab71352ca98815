"""Read-only SQLite with a query budget: how every SQLite file a profiler wrote is opened (rocpd
counter databases here, nsys and rocpd exports in the importers).

A file name cannot add URI parameters (:func:`sqlite_uri`), nothing but a regular file is
opened, and every statement runs under a :class:`QueryBudget` (time and VM steps), so a crafted
database cannot hang a read.
"""

from __future__ import annotations

import sqlite3
import time
import urllib.parse
from pathlib import Path

from roofline_tui.core import store

SQLITE_TIME_BUDGET_S = 20.0
SQLITE_STEP_BUDGET = 2_000_000_000  # VM steps, counted 10,000 at a time
SQLITE_ROW_BUDGET = 20_000_000


def sqlite_uri(path: Path) -> str:
    """A read-only ``file:`` URI for ``path`` with every URI-special character percent-encoded,
    so a file name cannot add parameters (``evil?mode=rwc&x=.db`` opens that very file,
    read-only, and creates nothing)."""
    quoted = urllib.parse.quote(str(Path(path).resolve()), safe="/")
    return f"file:{quoted}?mode=ro"


class QueryBudget:
    """SQLite progress handler: interrupts a statement past its time or step budget (a
    recursive-CTE or cross-join view in a crafted database)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self.steps = 0
        self.tripped = False

    def __call__(self) -> int:
        self.steps += 10_000
        if time.monotonic() > self.deadline or self.steps > SQLITE_STEP_BUDGET:
            self.tripped = True
            return 1  # non-zero interrupts the running statement
        return 0


def open_sqlite_ro(path: Path, seconds: float | None = None, *, immutable: bool = False
                   ) -> tuple[sqlite3.Connection, QueryBudget]:
    """A read-only connection through :func:`sqlite_uri` with a :class:`QueryBudget` installed.
    Raises ``sqlite3.Error``, also for anything but a regular file (SQLite would wait forever
    on a FIFO named ``run.db``). ``immutable``: the file is a finished export that nothing
    writes (no lock, no journal or WAL file looked for, so a read-only folder works)."""
    why = store.check_regular(path)
    if why is not None:
        raise sqlite3.OperationalError(why)
    uri = sqlite_uri(path) + ("&immutable=1" if immutable else "")
    con = sqlite3.connect(uri, uri=True)
    budget = QueryBudget(SQLITE_TIME_BUDGET_S if seconds is None else seconds)
    con.set_progress_handler(budget, 10_000)
    return con, budget
