"""rocmProfileData (``rpd``) traces -> Top-N: the ``.rpd`` SQLite database (also gzipped) and
its chrome-trace export (``rpd2tracing.py``: a JSON array).

rocmProfileData is the tracer the ROCm and vLLM people use on AMD GPUs. Its database holds one
``rocpd_op`` row per piece of GPU work, named through ``rocpd_string`` (the ``op`` view joins
them): ``opType`` says what the op is and ``description`` names it.

* ``KernelExecution``: a kernel dispatch, named by its kernel; ``Task``: a kernel launched by a
  ``hipGraphLaunch`` (one op per kernel of the graph) — both are kernels here;
* ``CopyHostToDevice`` / ``CopyDeviceToHost`` / ``CopyDeviceToDevice`` / ``CopyHostToHost``:
  copies, named like the other importers' (``Memcpy HtoD`` …); ``FillBuffer``: ``Memset``;
* anything else (barriers, markers) is counted and said in a note, never ranked.

A kernel's launch geometry comes from ``rocpd_kernelapi`` (grid and workgroup) through
``rocpd_api_ops`` where the launch API is recorded; graph-launched tasks have none. One device is
kept (the most GPU time, or ``--device-index``) and every device's spread is recorded as the
other table readers do. roctx ranges (``UserMarker`` rows of ``rocpd_api``, their text in
``args``) whose text is a vLLM / SGLang / ATOM step label are serving steps: a kernel whose
launch call (``rocpd_api_ops``) lies inside one on its thread takes that step's phase, and the
Top-N gets the ``serving`` block the nsys reader writes from NVTX steps.

The database is opened read-only under the engine's query budget; a gzipped one is inflated
(at most :data:`MAX_INFLATED_BYTES`) into a private temporary directory that is removed after.
The JSON export is read bounded (it is one document) and only its GPU processes are taken: the
processes whose ``process_name`` metadata is ``GPU<n>``; their ``X`` events are ops named as in
the database (copies by their ``Copy…`` names, the rest kernels). Times there are µs strings.
"""

from __future__ import annotations

import gzip
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from roofline_tui.core import store
from roofline_tui.core.coerce import integer, number
from roofline_tui.core.lazy_re import lazy_compile
from roofline_tui.core.measured.sqlite_ro import (
    SQLITE_ROW_BUDGET,
    SQLITE_TIME_BUDGET_S,
    open_sqlite_ro,
)
from roofline_tui.core.names import cap_name
from roofline_tui.core.textsafe import printable
from roofline_tui.importers.common import DEFAULT_TOP, ImportProblem, ServingInfo, build_topn
from roofline_tui.importers.sniff import RPD
from roofline_tui.importers.sniff import check as sniff_check
from roofline_tui.importers.step_spans import StepSpans, serving_info
from roofline_tui.importers.tables import LaunchSums, TableImport, choose_device

MAX_INFLATED_BYTES = 4 * 1024**3  # a gzipped .rpd inflated beyond this is refused
_CHUNK = 1 << 20
KERNEL_OPS = frozenset({"KernelExecution", "Task"})
COPY_OPS = {
    "CopyHostToDevice": "Memcpy HtoD",
    "CopyDeviceToHost": "Memcpy DtoH",
    "CopyDeviceToDevice": "Memcpy DtoD",
    "CopyHostToHost": "Memcpy HtoH",
    "CopyPeerToPeer": "Memcpy PtoP",
    "FillBuffer": "Memset",
}
_GPU_PROCESS = lazy_compile(r"^GPU\s*(\d{1,4})$")
_OP_SQL = ("SELECT o.id, o.gpuId, o.start, o.end, d.string, t.string FROM rocpd_op o "
           "JOIN rocpd_string d ON d.id = o.description_id "
           "JOIN rocpd_string t ON t.id = o.opType_id "
           f"LIMIT {SQLITE_ROW_BUDGET + 1}")
# the launch call of each op (its thread and start time), to place the op in a roctx step
_LAUNCH_SQL = ("SELECT o.op_id, a.tid, a.start FROM rocpd_api_ops o JOIN rocpd_api a "
               f"ON a.id = o.api_id LIMIT {SQLITE_ROW_BUDGET + 1}")
# roctx ranges: rpd records a pushed/started range as a `UserMarker` API row whose args hold
# the range's text, spanning push to pop
_RANGE_SQL = ("SELECT a.start, a.end, a.tid, t.string FROM rocpd_api a "
              "JOIN rocpd_string n ON n.id = a.apiName_id "
              "JOIN rocpd_string t ON t.id = a.args_id WHERE n.string = 'UserMarker' "
              f"LIMIT {SQLITE_ROW_BUDGET + 1}")
_GEOMETRY_SQL = ("SELECT a.op_id, k.gridX, k.gridY, k.gridZ, k.workgroupX, k.workgroupY, "
                 "k.workgroupZ FROM rocpd_api_ops a JOIN rocpd_kernelapi k "
                 f"ON k.api_ptr_id = a.api_id LIMIT {SQLITE_ROW_BUDGET + 1}")


def is_gzip(path: Path) -> bool:
    return store.read_bytes(path, max_bytes=2, head=True) == b"\x1f\x8b"


def import_rpd(path: Path, *, top: int = DEFAULT_TOP,
               device_index: int | None = None) -> TableImport:
    """An ``.rpd`` database (plain or gzipped) or its ``rpd2tracing`` JSON export -> Top-N of
    one device (nothing is written)."""
    path = Path(path)
    why = store.check_regular(path)
    if why is not None:
        raise ImportProblem(f"{printable(path)}: {printable(why)}")
    gz = is_gzip(path)
    head = _head(path, gz)
    if not (gz and head.startswith(b"SQLite format 3\x00")):  # (a gzipped .rpd is read here)
        verdict = sniff_check(path, RPD)
        if verdict.refusal:
            raise ImportProblem(verdict.refusal)
    if head.startswith(b"SQLite format 3\x00"):
        if not gz:
            return _import_db(path, path, top, device_index)
        with tempfile.TemporaryDirectory(prefix="roofline-rpd-") as tmp:
            plain = Path(tmp) / "trace.rpd"
            _inflate(path, plain)
            return _import_db(plain, path, top, device_index)
    if head.lstrip()[:1] == b"[":
        return _import_json(path, top, device_index)
    raise ImportProblem(f"{printable(path.name)}: neither an rpd SQLite database nor an "
                        "rpd2tracing JSON array; `roofline import rpd` reads those two")


def _head(path: Path, gz: bool) -> bytes:
    if not gz:
        return store.read_bytes(path, max_bytes=64, head=True)
    try:
        with gzip.open(path, "rb") as fh:
            return fh.read(64)
    except (OSError, EOFError) as exc:
        raise ImportProblem(f"{printable(path.name)}: damaged gzip stream "
                            f"({printable(str(exc), limit=80)})") from None


def _inflate(src: Path, dst: Path) -> None:
    written = 0
    try:
        with gzip.open(src, "rb") as fin, open(dst, "wb") as fout:
            while chunk := fin.read(_CHUNK):
                written += len(chunk)
                if written > MAX_INFLATED_BYTES:
                    raise ImportProblem(f"{printable(src.name)}: inflates past "
                                        f"{MAX_INFLATED_BYTES >> 30} GiB; refused (gunzip it "
                                        "and import the database)")
                fout.write(chunk)
    except (OSError, EOFError) as exc:
        raise ImportProblem(f"{printable(src.name)}: damaged gzip stream "
                            f"({printable(str(exc), limit=80)})") from None


def _geometry(con: sqlite3.Connection, rows: Iterator[tuple[Any, ...]]
              ) -> dict[int, tuple[tuple[int, int, int], tuple[int, int, int]]]:
    out: dict[int, tuple[tuple[int, int, int], tuple[int, int, int]]] = {}
    for op, gx, gy, gz, wx, wy, wz in rows:
        oid = integer(op)
        dims = [integer(v) for v in (gx, gy, gz, wx, wy, wz)]
        if oid is None or any(d is None for d in dims):
            continue
        g = (dims[0] or 0, dims[1] or 0, dims[2] or 0)
        b = (dims[3] or 0, dims[4] or 0, dims[5] or 0)
        out[oid] = (g, b)
    return out


def _import_db(db: Path, shown_path: Path, top: int, device_index: int | None) -> TableImport:
    pname = printable(shown_path.name)
    try:
        con, budget = open_sqlite_ro(db, SQLITE_TIME_BUDGET_S, immutable=True)
    except sqlite3.Error as exc:
        raise ImportProblem(f"{pname}: cannot open SQLite database "
                            f"({printable(str(exc))})") from None
    sums = LaunchSums()
    other: dict[str, int] = {}
    skipped = 0
    notes: list[str] = [f"{pname}: {budget.opened}"] if budget.opened else []
    try:
        tables = {r[0] for r in budget.rows(con, "SELECT name FROM sqlite_master", "schema")}
        if not {"rocpd_op", "rocpd_string"} <= tables:
            raise ImportProblem(f"{pname}: an SQLite database without rocmProfileData's "
                                "rocpd_op/rocpd_string tables; not an rpd trace")
        geo = (_geometry(con, budget.rows(con, _GEOMETRY_SQL, "kernel launches"))
               if {"rocpd_api_ops", "rocpd_kernelapi"} <= tables else {})
        markers = _marker_count(con, budget, tables)
        steps = _steps(con, budget) if markers else StepSpans()
        phase_of_op = (_op_phases(con, budget, steps)
                       if steps.records and "rocpd_api_ops" in tables else {})
        for oid, gpu, start, end, desc, optype in budget.rows(con, _OP_SQL, "rocpd_op"):
            s, e, dev = number(start), number(end), integer(gpu, nonneg=False)
            kind = optype if isinstance(optype, str) else ""
            if s is None or e is None or e < s or dev is None:
                skipped += 1
                continue
            op = integer(oid) or -1
            skipped += _add_op(sums, other, dev, kind, desc, e - s, geo.get(op),
                               phase_of_op.get(op))
    except sqlite3.OperationalError as exc:
        if budget.tripped:
            raise ImportProblem(f"{pname}: query stopped: {budget.stop_reason()}") from None
        raise ImportProblem(f"{pname}: SQLite error ({printable(str(exc))})") from None
    except sqlite3.DatabaseError as exc:
        raise ImportProblem(f"{pname}: SQLite error ({printable(str(exc))})") from None
    finally:
        con.close()
    if steps.records:
        placed = sum(1 for p in phase_of_op.values() if p is not None)
        notes.append(f"{pname}: {len(steps.records):,} roctx range(s) are serving steps "
                     f"({', '.join(sorted({r.family for r in steps.records}))}); {placed:,} "
                     "GPU op(s) launched inside one")
    elif markers:
        notes.append(f"{pname}: {markers:,} roctx marker/range row(s), none a vLLM / SGLang / "
                     "ATOM step label: no serving steps")
    return _finish(sums, other, skipped, notes, pname, top, device_index,
                   serving_info(steps) if steps.records else None)


def _steps(con: sqlite3.Connection, budget: Any) -> StepSpans:
    """The roctx ranges whose text is a serving step label, per launching thread."""
    return StepSpans.from_ranges((start, end, tid, text) for start, end, tid, text
                                 in budget.rows(con, _RANGE_SQL, "roctx ranges"))


def _op_phases(con: sqlite3.Connection, budget: Any, steps: StepSpans) -> dict[int, str | None]:
    """op id -> the phase of the step holding its launch call (None: outside every step)."""
    out: dict[int, str | None] = {}
    for op, tid, start in budget.rows(con, _LAUNCH_SQL, "launch calls"):
        oid, thread, t = integer(op), integer(tid, nonneg=False), number(start)
        if oid is None or thread is None or t is None:
            continue
        i = steps.at(thread, t)
        out[oid] = steps.phases[i] if i is not None else None
    return out


def _marker_count(con: sqlite3.Connection, budget: Any, tables: set[str]) -> int:
    if "rocpd_api" not in tables:
        return 0
    sql = ("SELECT count(*) FROM rocpd_api a JOIN rocpd_string s ON s.id = a.apiName_id "
           "WHERE s.string IN ('UserMarker', 'roctxRangePushA', 'roctxMarkA', "
           "'roctxRangeStartA')")
    for (n,) in budget.rows(con, sql, "roctx markers"):
        return integer(n) or 0
    return 0


def _add_op(sums: LaunchSums, other: dict[str, int], dev: int, kind: str, desc: Any,
            dur_ns: float, geo: tuple[tuple[int, int, int], tuple[int, int, int]] | None,
            phase: str | None = None) -> int:
    """Add one op; 1 when it could not be (a kernel without a name), else 0."""
    copy = COPY_OPS.get(kind)
    if copy is not None:
        sums.add(dev, copy, dur_ns)
        return 0
    if kind in KERNEL_OPS or kind.startswith("Kernel"):
        if not isinstance(desc, str) or not desc.strip():
            return 1
        grid, block = geo if geo is not None else (None, None)
        sums.add(dev, cap_name(desc.strip()), dur_ns, grid, block, phase)
        return 0
    other[kind or "?"] = other.get(kind or "?", 0) + 1
    return 0


def _finish(sums: LaunchSums, other: dict[str, int], skipped: int, notes: list[str],
            pname: str, top: int, device_index: int | None,
            serving: ServingInfo | None = None) -> TableImport:
    if other:
        listed = ", ".join(f"{n:,} {printable(k, limit=30)}"
                           for k, n in sorted(other.items(), key=lambda kv: (-kv[1], kv[0])))
        notes.append(f"{pname}: ops that are neither kernels nor copies not ranked: {listed}")
    if skipped:
        notes.append(f"{pname}: {skipped:,} op(s) skipped: end before start, times or device "
                     "not numbers, or a kernel without a name")
    if not sums.devices:
        raise ImportProblem(f"{pname}: an rpd trace with no GPU ops (no KernelExecution, Task "
                            "or copy rows)")
    dev, message = choose_device(sums.per_device_ns(), device_index, "GPU")
    chosen = sums.of(dev)
    doc = build_topn(chosen.aggs.values(), source=RPD, total_us=chosen.total_us,
                     launches=chosen.launches, top=top, notes=notes,
                     serving=serving if chosen.phased else None)
    sums.attach_spread(doc, dev, device_index, {d: f"GPU {d}" for d in sums.devices})
    return TableImport(doc=doc, device_message=message, rows=chosen.launches, notes=notes,
                       skipped=skipped)


def _gpu_pids(events: list[Any]) -> dict[str, int]:
    """``pid`` -> device number of every process the export names ``GPU<n>``."""
    out: dict[str, int] = {}
    for ev in events:
        if not isinstance(ev, dict) or ev.get("ph") != "M" or ev.get("name") != "process_name":
            continue
        args = ev.get("args")
        label = args.get("name") if isinstance(args, dict) else None
        m = _GPU_PROCESS.match(label.strip()) if isinstance(label, str) else None
        if m:
            out[str(ev.get("pid"))] = int(m.group(1))
    return out


def _import_json(path: Path, top: int, device_index: int | None) -> TableImport:
    pname = printable(path.name)
    try:
        if is_gzip(path):
            raw = gzip.decompress(store.read_bytes(path))
            if len(raw) > store.MAX_READ_BYTES:
                raise ImportProblem(f"{pname}: inflates past the read limit; refused")
            events = store.parse_json_text(raw.decode("utf-8"), path)
        else:
            events = store.read_json(path)
    except (OSError, EOFError, UnicodeDecodeError, ValueError) as exc:
        raise ImportProblem(f"{pname}: {printable(str(exc), limit=160)}") from None
    if not isinstance(events, list):
        raise ImportProblem(f"{pname}: not an rpd2tracing JSON array")
    gpus = _gpu_pids(events)
    if not gpus:
        raise ImportProblem(f"{pname}: a JSON array with no GPU<n> process: not an "
                            "rpd2tracing export")
    sums = LaunchSums()
    other: dict[str, int] = {}
    skipped = 0
    for ev in events:
        if not isinstance(ev, dict) or ev.get("ph") != "X":
            continue
        dev = gpus.get(str(ev.get("pid")))
        if dev is None:
            continue
        ts, dur, name = number(ev.get("ts")), number(ev.get("dur")), ev.get("name")
        if ts is None or dur is None or dur < 0 or not isinstance(name, str):
            skipped += 1
            continue
        kind = name if name in COPY_OPS else "KernelExecution"
        skipped += _add_op(sums, other, dev, kind, name, dur * 1000.0, None)
    notes = [f"{pname}: rpd2tracing export: GPU ops of process(es) "
             + ", ".join(f"GPU{d}" for d in sorted(set(gpus.values())))]
    return _finish(sums, other, skipped, notes, pname, top, device_index)
