"""``roofline import torch DIR --dask ADDRESS``: the ranks read by a Dask cluster's workers.

A :class:`~roofline_tui.importers.ranks.RankReader` like ``--jobs``' worker processes: each
rank's :func:`~roofline_tui.importers.ranks.read_rank` is submitted to the scheduler at
``ADDRESS`` and run by a worker, which reads the trace from the path it is given (shared
storage: the path travels, never the trace's bytes) and sends back the rank's summary (its
per-kernel sums, and its small Top-N document); the slowest rank is chosen and the spread merged
here, by the same code as for ``--jobs``, so the files written are byte for byte those of
``--jobs 1``.

Needs the optional ``dask`` extra (``dask[distributed]``) here and, on every worker, the same
roofline_tui: the function the workers run is found by its module's name.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from roofline_tui.core.textsafe import printable
from roofline_tui.importers.common import ImportProblem
from roofline_tui.importers.ranks import RankRead, read_rank
from roofline_tui.importers.torch import TorchOptions

# the extra and the distribution it belongs to (pyproject.toml)
EXTRA = "pip install 'roofline_tui[dask]'"
CONNECT_TIMEOUT_S = 30
_SHARED = ("read by a Dask worker: every worker must see the trace at this path (shared "
           "storage mounted at the same place)")


def missing() -> str | None:
    """The line that says what to install when ``dask.distributed`` cannot be imported here;
    None when it can (nothing is imported)."""
    try:
        found = importlib.util.find_spec("distributed") is not None
    except (ImportError, ValueError):
        found = False
    if found:
        return None
    return f"--dask needs the dask extra (dask.distributed), not installed: {EXTRA}"


def bad_address(address: str) -> str | None:
    """Why ``address`` is not a scheduler's address Dask can connect to (``tcp://HOST:PORT``,
    or ``HOST:PORT``); None when it is. (Imports dask.distributed.)"""
    from distributed.comm.addressing import get_address_host_port, normalize_address

    try:
        get_address_host_port(normalize_address(address))
    except (ValueError, TypeError) as exc:
        return (f"--dask {printable(address, limit=200)}: not a Dask scheduler's address "
                f"({printable(str(exc), limit=200)}): give tcp://HOST:PORT (the scheduler "
                "listens on 8786 unless told otherwise)")
    return None


@dataclass(frozen=True)
class DaskWorkers:
    """The workers of the Dask cluster whose scheduler is at ``address``
    (``tcp://HOST:8786``)."""

    address: str
    timeout_s: float = CONNECT_TIMEOUT_S

    def read(self, paths: Sequence[Path], options: TorchOptions, device_index: int | None,
             wanted: int | None) -> list[RankRead]:
        try:
            from distributed import Client, KilledWorker
        except ImportError:
            raise ImportProblem(missing() or f"--dask: cannot import dask.distributed; {EXTRA}"
                                ) from None
        # a worker's working directory is not ours: every path it is given is absolute
        sent = [p.absolute() for p in paths]
        if options.captures:
            options = options._replace(captures=[Path(c).absolute() for c in options.captures])
        try:
            client = Client(self.address, timeout=self.timeout_s, set_as_default=False)
        except (OSError, TimeoutError, ValueError, TypeError) as exc:
            raise ImportProblem(f"--dask {printable(self.address, limit=200)}: cannot reach "
                                f"the Dask scheduler ({printable(str(exc), limit=200)}); "
                                "nothing written") from None
        with client:
            try:  # a scheduler with no worker would hold the ranks forever
                client.wait_for_workers(1, timeout=self.timeout_s)
            except (TimeoutError, OSError):
                raise ImportProblem(f"--dask {printable(self.address, limit=200)}: no worker "
                                    f"has joined the scheduler in {self.timeout_s:g} s (start "
                                    "one on each node: dask worker ADDRESS); nothing "
                                    "written") from None
            futures = [client.submit(read_rank, p, options, device_index, wanted, pure=False)
                       for p in sent]
            try:
                reads: list[RankRead] = client.gather(futures)
            except ImportError as exc:  # the workers have no (or another) roofline_tui
                raise ImportProblem(f"--dask {printable(self.address, limit=200)}: a worker "
                                    f"cannot run the import ({printable(str(exc), limit=200)}): "
                                    "install this roofline_tui on every worker; nothing "
                                    "written") from None
            except KilledWorker as exc:  # the workers reading one rank died, one after another
                raise ImportProblem(f"--dask {printable(self.address, limit=200)}: the workers "
                                    f"reading a rank died ({printable(str(exc), limit=200)}; "
                                    "out of memory?): nothing written") from None
        return [_as_given(read, given, abs_path)
                for read, given, abs_path in zip(reads, paths, sent, strict=True)]


def _as_given(read: RankRead, given: Path, sent: Path) -> RankRead:
    """The read named by the path as given (as ``--jobs`` names it), and a trace a worker
    cannot open said to be on storage the workers must share."""
    read.path = given
    for field in ("problem", "fatal"):
        text = getattr(read, field)
        if text is None:
            continue
        for name in (str(sent), printable(sent)):
            if text.startswith(f"{name}: "):
                # the reader names a trace by its whole path only when it cannot open it
                # (past the open, by its name): here it could, so the storage is not shared
                text = f"{given}: {text[len(name) + 2:]}"
                if field == "problem":
                    text = f"{text} ({_SHARED})"
                break
        setattr(read, field, text)
    return read
