"""Nsight Systems SQLite export (``nsys export --type sqlite``) -> Top-N.

Tables read, each only when present (a missing one is said in a note):

* ``CUPTI_ACTIVITY_KIND_KERNEL`` (required): one row per launch, its name an id into
  ``StringIds`` (``demangledName``, else ``shortName``, else ``mangledName``), device, start/end
  (ns), grid and block;
* ``CUPTI_ACTIVITY_KIND_MEMCPY`` / ``MEMSET``: copy rows named like the other importers'
  (``Memcpy HtoD``, ``Memset``), on the device that ran them;
* ``TARGET_INFO_GPU``: the devices' names and properties;
* ``NVTX_EVENTS``: ranges whose text is a vLLM / SGLang / ATOM step label are serving steps.
  A kernel belongs to the step whose range holds its launch call (``CUPTI_ACTIVITY_KIND_RUNTIME``
  by ``correlationId``, on the same thread), never to one that merely overlaps it in time.

The database is opened read-only, with a ``-wal`` beside it read too (never written: see
:func:`roofline_tui.core.measured.sqlite_ro.open_sqlite_ro`), under the engine's query budget
(SQLite's own work: VM steps and CPU time inside SQLite, never this importer's work on the rows)
and a row budget; one device is kept (the one with the most GPU time, or ``--device-index``).
A kernel table may name its launches by one column of ``NAME_COLUMNS`` or several.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roofline_tui.core.coerce import integer, number
from roofline_tui.core.measured.sqlite_ro import (
    SQLITE_ROW_BUDGET,
    SQLITE_TIME_BUDGET_S,
    QueryBudget,
    open_sqlite_ro,
)
from roofline_tui.core.names import cap_name
from roofline_tui.core.textsafe import printable
from roofline_tui.importers.common import (
    DEFAULT_TOP,
    ImportProblem,
    build_topn,
)
from roofline_tui.importers.device import DeviceInfo, identify
from roofline_tui.importers.step_spans import StepSpans, serving_info
from roofline_tui.importers.tables import LaunchSums, TableImport, choose_device

KERNELS = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
GPUS = "TARGET_INFO_GPU"
NVTX = "NVTX_EVENTS"
STRINGS = "StringIds"
NAME_COLUMNS = ("demangledName", "shortName", "mangledName")
MAX_NAMES = 1_000_000  # distinct kernel names whose capped form is remembered

# CUpti_ActivityMemcpyKind
COPY_KINDS = {0: "Unknown", 1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD",
              7: "DtoA", 8: "DtoD", 9: "HtoH", 10: "PtoP"}
# globalTid / globalPid: the process id sits above the low 24 bits
PID_SHIFT = 24


@dataclass
class _Budget:
    """The row budget over every table read, and the query budget of the connection (only
    SQLite's own calls on its clock: :meth:`QueryBudget.rows`)."""

    query: QueryBudget
    rows: int = 0

    def take(self, pname: str) -> None:
        self.rows += 1
        if self.rows > SQLITE_ROW_BUDGET:
            raise ImportProblem(f"{pname}: more than {SQLITE_ROW_BUDGET:,} rows; refused "
                                "(row budget)")

    def read(self, con: sqlite3.Connection, sql: str, what: str, pname: str
             ) -> Iterator[tuple[Any, ...]]:
        for rec in self.query.rows(con, sql, what):
            self.take(pname)
            yield rec


def _tables(con: sqlite3.Connection, pname: str) -> set[str]:
    try:
        return {str(r[0]) for r in con.execute(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    except sqlite3.DatabaseError as exc:
        raise ImportProblem(f"{pname}: not a readable SQLite database "
                            f"({printable(str(exc))})") from None


def _columns(con: sqlite3.Connection, table: str) -> set[str]:
    return {str(r[1]) for r in con.execute(f'PRAGMA table_info("{table}")')}


_XYZ = tuple[int, int, int] | None


def _triple(a: Any, b: Any, c: Any) -> _XYZ:
    vals = (integer(a), integer(b), integer(c))
    if any(v is None for v in vals):
        return None
    return (int(vals[0] or 0), int(vals[1] or 0), int(vals[2] or 0))


def _string_join(cols: set[str], alias: str, strings: bool) -> tuple[str, str]:
    """(select expression, join clauses) naming a row by the first StringIds column it has."""
    names = [c for c in NAME_COLUMNS if c in cols]
    if not names:
        return "NULL", ""
    if not strings:  # the id itself: the row is named by it
        return f'{alias}."{names[0]}"', ""
    joins = " ".join(f'LEFT JOIN {STRINGS} s{i} ON s{i}.id = {alias}."{c}"'
                     for i, c in enumerate(names))
    values = [f"s{i}.value" for i in range(len(names))]
    # SQLite's COALESCE takes two arguments or more: a table with one name column reads it
    expr = values[0] if len(values) == 1 else "COALESCE(" + ", ".join(values) + ")"
    return expr, joins


def _kernels(con: sqlite3.Connection, cols: set[str], strings: bool, with_launch: bool,
             budget: _Budget, pname: str) -> Iterator[tuple[Any, ...]]:
    """(device, name, duration, gx, gy, gz, bx, by, bz, launch start, launch tid); the
    duration is NULL unless start and end are both integers (it then goes through the
    coercer like every value)."""
    name_expr, joins = _string_join(cols, "k", strings)
    geo = [f'k."{c}"' if c in cols else "NULL"
           for c in ("gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ")]
    dev = 'k."deviceId"' if "deviceId" in cols else "-1"
    launch = "NULL, NULL"
    if with_launch:
        launch = "r.start, r.globalTid"
        joins += (f" LEFT JOIN {RUNTIME} r ON r.correlationId = k.correlationId AND "
                  f"(r.globalTid >> {PID_SHIFT}) = (k.globalPid >> {PID_SHIFT})")
    dur = ("CASE WHEN typeof(k.start) = 'integer' AND typeof(k.end) = 'integer' "
           "THEN k.end - k.start END")
    sql = (f"SELECT {dev}, {name_expr}, {dur}, {', '.join(geo)}, {launch} "  # noqa: S608
           f"FROM {KERNELS} k {joins} LIMIT {SQLITE_ROW_BUDGET + 1}")
    yield from budget.read(con, sql, f"{KERNELS} (one row per launch)", pname)


def _kernel_groups(con: sqlite3.Connection, cols: set[str], strings: bool, budget: _Budget,
                   pname: str) -> Iterator[tuple[Any, ...]]:
    """Launches summed by SQLite per (device, name, grid, block): (device, name, Σ duration,
    usable launches, all launches, gx, gy, gz, bx, by, bz). For an export without step ranges,
    where nothing needs a launch's own time."""
    name_expr, joins = _string_join(cols, "k", strings)
    geo = [f'k."{c}"' if c in cols else "NULL"
           for c in ("gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ")]
    dev = 'k."deviceId"' if "deviceId" in cols else "-1"
    dur = ("CASE WHEN typeof(k.start) = 'integer' AND typeof(k.end) = 'integer' "
           "AND k.end >= k.start THEN k.end - k.start END")
    sql = (f"SELECT {dev}, {name_expr}, SUM({dur}), COUNT({dur}), COUNT(*), "  # noqa: S608
           f"{', '.join(geo)} FROM {KERNELS} k {joins} GROUP BY 1, 2, {', '.join(geo)} "
           f"LIMIT {SQLITE_ROW_BUDGET + 1}")
    yield from budget.read(con, sql, f"{KERNELS} (summed by name and geometry)", pname)


def _steps(con: sqlite3.Connection, strings: bool, budget: _Budget, pname: str) -> StepSpans:
    cols = _columns(con, NVTX)
    if not {"start", "end"} <= cols:
        return StepSpans()
    text = 'n."text"' if "text" in cols else "NULL"
    join = ""
    if strings and "textId" in cols:
        text = f"COALESCE({text}, s.value)"
        join = f'LEFT JOIN {STRINGS} s ON s.id = n."textId"'
    tid = 'n."globalTid"' if "globalTid" in cols else "0"
    sql = (f"SELECT n.start, n.end, {text}, {tid} FROM {NVTX} n {join} "  # noqa: S608
           f"WHERE n.end IS NOT NULL LIMIT {SQLITE_ROW_BUDGET + 1}")
    return StepSpans.from_ranges((start, end, thread, label) for start, end, label, thread
                                 in budget.read(con, sql, NVTX, pname))


def _copies(con: sqlite3.Connection, table: str, budget: _Budget, pname: str
            ) -> Iterator[tuple[int, str, float | None]]:
    cols = _columns(con, table)
    if not {"start", "end"} <= cols:
        return
    dev = '"deviceId"' if "deviceId" in cols else "-1"
    kind = '"copyKind"' if "copyKind" in cols else "NULL"
    sql = (f'SELECT {dev}, {kind}, "start", "end" FROM {table} '  # noqa: S608
           f"LIMIT {SQLITE_ROW_BUDGET + 1}")
    for d, k, s, e in budget.read(con, sql, table, pname):
        start, end = number(s), number(e)
        dur = None if start is None or end is None or end < start else end - start
        if table == MEMSET:
            name = "Memset"
        else:
            ck = integer(k)
            name = f"Memcpy {COPY_KINDS.get(ck, f'kind {ck}') if ck is not None else '?'}"
        device = integer(d, nonneg=False)
        yield (device if device is not None else -1), name, dur


def _devices(con: sqlite3.Connection, pname: str) -> dict[int, DeviceInfo]:
    cols = _columns(con, GPUS)
    if "id" not in cols:
        return {}
    keep = [c for c in ("id", "name", "computeMajor", "computeMinor", "smCount",
                        "threadsPerWarp", "totalMemory", "maxThreadsPerBlock") if c in cols]
    out: dict[int, DeviceInfo] = {}
    sql = f"SELECT {', '.join(chr(34) + c + chr(34) for c in keep)} FROM {GPUS} LIMIT 4096"
    for rec in con.execute(sql):  # noqa: S608
        row = dict(zip(keep, rec, strict=True))
        dev = integer(row.get("id"), nonneg=False)
        if dev is None:
            continue
        props = {"id": dev, "name": row.get("name"), "computeMajor": row.get("computeMajor"),
                 "computeMinor": row.get("computeMinor"), "numSms": row.get("smCount"),
                 "warpSize": row.get("threadsPerWarp"), "totalGlobalMem": row.get("totalMemory"),
                 "maxThreadsPerBlock": row.get("maxThreadsPerBlock")}
        name = row.get("name") if isinstance(row.get("name"), str) else None
        out[dev] = identify(name, {k: v for k, v in props.items() if v is not None},
                            source=f"{pname} TARGET_INFO_GPU[id={dev}]")
    return out


def _name_of(raw: Any, names: dict[Any, str]) -> str:
    """A kernel's name, capped once per distinct raw value."""
    name = names.get(raw)
    if name is None:
        if isinstance(raw, str) and raw:
            name = cap_name(raw)
        else:
            name = f"kernel (string id {printable(raw)})" if raw is not None \
                else "kernel (unnamed)"
        if len(names) < MAX_NAMES:
            names[raw] = name
    return name


def _device_of(raw: Any, devs: dict[Any, int]) -> int:
    device = devs.get(raw)
    if device is None:
        coerced = integer(raw, nonneg=False)
        device = coerced if coerced is not None else -1
        if len(devs) < MAX_NAMES:
            devs[raw] = device
    return device


def _geometry_of(raw: tuple[Any, ...],
                 cache: dict[tuple[Any, ...], tuple[_XYZ, _XYZ]]) -> tuple[_XYZ, _XYZ]:
    geo = cache.get(raw)
    if geo is None:
        geo = (_triple(*raw[:3]), _triple(*raw[3:]))
        if len(cache) < MAX_NAMES:
            cache[raw] = geo
    return geo


def _grouped(con: sqlite3.Connection, cols: set[str], strings: bool, sums: LaunchSums,
             budget: _Budget, pname: str) -> int:
    """Sums per (device, name, geometry) from SQLite; returns the launches skipped."""
    names: dict[Any, str] = {}
    devs: dict[Any, int] = {}
    skipped = 0
    for rec in _kernel_groups(con, cols, strings, budget, pname):
        total, good, every = number(rec[2]), integer(rec[3]), integer(rec[4])
        skipped += max(0, (every or 0) - (good or 0))
        if total is None or not good:
            continue
        grid, block = _geometry_of(tuple(rec[5:11]), {})
        sums.add(_device_of(rec[0], devs), _name_of(rec[1], names), total, grid, block,
                 calls=good)
    return skipped


def _per_launch(con: sqlite3.Connection, cols: set[str], strings: bool, steps: StepSpans,
                sums: LaunchSums, budget: _Budget, pname: str) -> int:
    """One launch at a time, each joined to the step holding its launch call; returns the
    launches skipped."""
    names: dict[Any, str] = {}
    devs: dict[Any, int] = {}
    geometry: dict[tuple[Any, ...], tuple[_XYZ, _XYZ]] = {}
    skipped = 0
    for rec in _kernels(con, cols, strings, True, budget, pname):
        dur = number(rec[2])
        if dur is None or dur < 0:
            skipped += 1
            continue
        phase = None
        if rec[9] is not None:
            tid = integer(rec[10], nonneg=False)
            t = number(rec[9])
            if tid is not None and t is not None:
                i = steps.at(tid, t)
                phase = steps.phases[i] if i is not None else None
        grid, block = _geometry_of(tuple(rec[3:9]), geometry)
        sums.add(_device_of(rec[0], devs), _name_of(rec[1], names), dur, grid, block, phase)
    return skipped


def import_nsys_sqlite(path: Path, *, top: int = DEFAULT_TOP,
                       device_index: int | None = None) -> TableImport:
    """Read an nsys SQLite export into a Top-N of one device (nothing is written)."""
    path = Path(path)
    pname = printable(path.name)
    try:
        con, qbudget = open_sqlite_ro(path, SQLITE_TIME_BUDGET_S, immutable=True)
    except sqlite3.Error as exc:
        raise ImportProblem(f"{pname}: cannot open SQLite database "
                            f"({printable(str(exc))})") from None
    notes: list[str] = [f"{pname}: {qbudget.opened}"] if qbudget.opened else []
    budget = _Budget(qbudget)
    sums = LaunchSums()
    skipped = 0
    try:
        tables = _tables(con, pname)
        if KERNELS not in tables:
            held = "no CUDA activity tables" if not any(
                t.startswith("CUPTI_ACTIVITY_KIND_") for t in tables) else "other CUDA activity"
            raise ImportProblem(f"{pname}: an Nsight Systems SQLite export without "
                                f"{KERNELS} ({held}): the run recorded no CUDA kernels; "
                                "profile with `nsys profile --trace cuda`")
        strings = STRINGS in tables
        if not strings:
            notes.append(f"{pname}: no {STRINGS} table: kernels are named by their string id")
        steps = _steps(con, strings, budget, pname) if NVTX in tables else StepSpans()
        with_launch = bool(steps.records) and RUNTIME in tables
        if steps.records and not with_launch:
            notes.append(f"{pname}: NVTX step ranges found but no {RUNTIME} table to tie "
                         "kernels to their launch: phases not assigned")
        cols = _columns(con, KERNELS)
        if with_launch:
            skipped += _per_launch(con, cols, strings, steps, sums, budget, pname)
        else:
            skipped += _grouped(con, cols, strings, sums, budget, pname)
        for table in (MEMCPY, MEMSET):
            if table not in tables:
                continue
            for d, name, dur in _copies(con, table, budget, pname):
                if dur is None:
                    skipped += 1
                    continue
                sums.add(d, name, dur)
        devices = _devices(con, pname) if GPUS in tables else {}
        if GPUS not in tables:
            notes.append(f"{pname}: no {GPUS} table: the device is not named")
    except sqlite3.OperationalError as exc:
        if qbudget.tripped:
            raise ImportProblem(f"{pname}: query stopped: {qbudget.stop_reason()}") from None
        raise ImportProblem(f"{pname}: SQLite error ({printable(str(exc))})") from None
    except sqlite3.DatabaseError as exc:
        raise ImportProblem(f"{pname}: SQLite error ({printable(str(exc))})") from None
    finally:
        con.close()
    if skipped:
        notes.append(f"{pname}: {skipped:,} row(s) skipped: end before start or times not "
                     "numbers")
    if not sums.devices:
        raise ImportProblem(f"{pname}: an Nsight Systems SQLite export whose {KERNELS} table "
                            "holds no usable launches")
    per_dev = sums.per_device_ns()
    dev, message = choose_device(per_dev, device_index, "device")
    idle = sorted(set(devices) - set(per_dev))
    if idle:
        listed = ", ".join(f"{d} ({printable(devices[d].name or '?', limit=40)})" for d in idle)
        notes.append(f"{pname}: {GPUS} lists {len(devices)} GPUs; no GPU activity on {listed}")
    chosen = sums.of(dev)
    n = chosen.launches
    serving = serving_info(steps) if chosen.phased else None
    doc = build_topn(chosen.aggs.values(), source="nsys", total_us=chosen.total_us,
                     launches=n, top=top, notes=notes, serving=serving)
    sums.attach_spread(doc, dev, device_index,
                       {d: f"device {d} ({info.name})" if info.name else f"device {d}"
                        for d, info in devices.items()})
    return TableImport(doc=doc, device_message=message, rows=n, notes=notes, skipped=skipped,
                       device_info=devices.get(dev))
