"""Nsight Compute: ``ncu --csv`` details page (long), raw page (wide, with a units row) and
``.ncu-rep`` files through NVIDIA's optional ``ncu_report`` module.

Bytes: ``dram__bytes_read.sum + dram__bytes_write.sum`` (or ``dram__bytes.sum``), DRAM side.
FLOPs: SASS ``{f,h,d}{add,mul}`` + 2 x ``{f,h,d}fma`` thread-instruction counts (fp32, fp16,
fp64) plus tensor-pipe math ops from ``sm__ops_path_tensor_src_<dt>_dst_<dt>*.sum`` when
collected. ``sm__inst_executed_pipe_tensor.sum`` is an instruction count, not FLOPs: when it is
non-zero and no tensor ops metric was collected, the FLOPs are unknown (None) and the SASS
count is kept in ``corroboration["SassFlops"]``.
Every value is converted from its per-row unit (``Kbyte``, ``Mbyte``, ``usecond``...; SI
prefixes) to base units.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from roofline_tui.core.lazy_re import lazy_compile

from ..dtypes import canonical_dtype
from ..names import cap_name
from ..peaks import normalize_arch
from ._util import mean, to_float
from .models import KernelMeasurement

T = TypeVar("T")

NCU_REP_MISSING = "ncu-report package not installed: pip install roofline_tui[ncu]"

_SI = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15}
_BIN = {"ki": 1024.0, "mi": 1024.0**2, "gi": 1024.0**3, "ti": 1024.0**4}
_TIME = {
    "nsecond": 1e-9,
    "usecond": 1e-6,
    "msecond": 1e-3,
    "second": 1.0,
    "ns": 1e-9,
    "us": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
}
_PLAIN_UNITS = {
    "",
    "%",
    "inst",
    "cycle",
    "warp",
    "block",
    "thread",
    "register/thread",
    "byte/block",
    "sector",
    "request",
    "wavefront",
}

_SASS = lazy_compile(r"^(?:smsp|sm)__sass_thread_inst_executed_op_([fhd])(add|mul|fma)_pred_on\.sum$")
_TENSOR_OPS = lazy_compile(
    r"^(?:smsp|sm)__ops_path_tensor_src_([a-z0-9]+?)(?:_dst_([a-z0-9]+?))?"
    r"(?:_sparsity_(?:on|off))?\.sum$"
)
_SASS_DTYPE = {"f": "fp32", "h": "fp16", "d": "fp64"}

CORROBORATION_METRICS = {
    "Achieved Occupancy": "OccupancyPercent",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "OccupancyPercent",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed": "DramThroughputPct",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "SmThroughputPct",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": "MemoryThroughputPct",
    "sm__cycles_elapsed.avg.per_second": "SmClockHz",
    "sm__inst_executed_pipe_tensor.sum": "TensorPipeInsts",
}

BYTES_NOTE = "bytes = dram__bytes_read.sum + dram__bytes_write.sum (DRAM side)"


def unit_factor(unit: str) -> float | None:
    """Multiplier from an ncu unit string to base units; None when not understood."""
    u = unit.strip()
    low = u.lower()
    if low in _PLAIN_UNITS:
        return 1.0
    if low in _TIME:
        return _TIME[low]
    head, sep, tail = low.partition("/")
    for base in ("byte", "inst", "cycle", "sector", "request", "warp", "thread", "flop"):
        if head.endswith(base):
            prefix = head[: -len(base)]
            factor = _BIN.get(prefix) or _SI.get(prefix)
            if factor is None:
                return None
            if not sep:
                return factor
            tail_f = _TIME.get(tail, 1.0 if tail in ("cycle", "inst") else None)
            return factor / tail_f if tail_f else None
    return None


def is_details_header(row: list[str]) -> bool:
    cells = [c.strip() for c in row]
    return "Kernel Name" in cells and "Metric Name" in cells and "Metric Value" in cells


def is_raw_header(row: list[str]) -> bool:
    cells = [c.strip() for c in row]
    return (
        len(cells) > 2
        and cells[0] == "ID"
        and "Kernel Name" in cells
        and "Metric Name" not in cells
        and any("__" in c for c in cells)
    )


class Launch:
    def __init__(self, kernel: str) -> None:
        self.kernel = kernel
        self.metrics: dict[str, float] = {}
        self.arch: str | None = None  # from the CC column ("12.0" -> sm_120)
        self.grid: tuple[int, ...] | None = None
        self.block: tuple[int, ...] | None = None

    def take_columns(self, header: list[str], row: list[str]) -> None:
        """The launch's device and geometry columns, where the page has them."""
        def cell(name: str) -> str:
            i = header.index(name) if name in header else -1
            return row[i].strip() if 0 <= i < len(row) else ""

        cc = cell("CC")
        if _CC.match(cc):
            self.arch = normalize_arch(cc)
        self.grid = _dims(cell("Grid Size")) or self.grid
        self.block = _dims(cell("Block Size")) or self.block


_CC = lazy_compile(r"^\d{1,2}\.\d$")
_DIMS = lazy_compile(r"^\(?\s*(\d{1,10})\s*,\s*(\d{1,10})\s*,\s*(\d{1,10})\s*\)?$")


def _dims(text: str) -> tuple[int, ...] | None:
    """ncu's ``(128, 1, 1)``; None for anything else."""
    m = _DIMS.match(text)
    return tuple(int(g) for g in m.groups()) if m else None


def parse_details(path: Path, rows: list[list[str]]) -> tuple[list[Launch], list[str]]:
    problems: list[str] = []
    hdr_i = next((i for i, r in enumerate(rows[:200]) if is_details_header(r)), None)
    if hdr_i is None:
        return [], [f"{path.name}: no ncu details header found"]
    h = [c.strip() for c in rows[hdr_i]]
    ii, ki = h.index("ID") if "ID" in h else None, h.index("Kernel Name")
    mi, vi = h.index("Metric Name"), h.index("Metric Value")
    ui = h.index("Metric Unit") if "Metric Unit" in h else None
    launches: dict[str, Launch] = {}
    bad_units: set[str] = set()
    for n, r in enumerate(rows[hdr_i + 1 :]):
        if len(r) <= max(ki, mi, vi):
            continue
        metric = r[mi].strip()
        if not metric or is_details_header(r):
            continue
        key = r[ii].strip() if ii is not None and r[ii].strip() else f"row{n}"
        launch = launches.get(key)
        if launch is None:
            launch = launches[key] = Launch(cap_name(r[ki].strip()))
            launch.take_columns(h, r)
        value = to_float(r[vi])
        if value is None:
            continue
        unit = r[ui].strip() if ui is not None and ui < len(r) else ""
        factor = unit_factor(unit)
        if factor is None:
            bad_units.add(unit)
            continue
        launch.metrics[metric] = value * factor
    if bad_units:
        problems.append(f"{path.name}: unknown unit(s) skipped: {', '.join(sorted(bad_units))}")
    return list(launches.values()), problems


def parse_raw(path: Path, rows: list[list[str]]) -> tuple[list[Launch], list[str]]:
    problems: list[str] = []
    hdr_i = next((i for i, r in enumerate(rows[:200]) if is_raw_header(r)), None)
    if hdr_i is None:
        return [], [f"{path.name}: no ncu raw header found"]
    h = [c.strip() for c in rows[hdr_i]]
    ki = h.index("Kernel Name")
    units = [""] * len(h)
    body = rows[hdr_i + 1 :]
    if body and (not body[0] or not body[0][0].strip()):
        units = [c.strip() for c in body[0]] + [""] * max(0, len(h) - len(body[0]))
        body = body[1:]
    bad_units: set[str] = set()
    launches: list[Launch] = []
    for r in body:
        if len(r) <= ki or not r[0].strip():
            continue
        launch = Launch(cap_name(r[ki].strip()))
        launch.take_columns(h, r)
        for j, (name, cell) in enumerate(zip(h, r)):
            if "__" not in name and name not in CORROBORATION_METRICS:
                continue
            v = to_float(cell)
            if v is None:
                continue
            factor = unit_factor(units[j] if j < len(units) else "")
            if factor is None:
                bad_units.add(units[j])
                continue
            launch.metrics[name] = v * factor
        launches.append(launch)
    if bad_units:
        problems.append(f"{path.name}: unknown unit(s) skipped: {', '.join(sorted(bad_units))}")
    return launches, problems


def load_ncu_rep(path: Path) -> tuple[list[Launch], list[str]]:
    try:
        import ncu_report
    except Exception:  # noqa: BLE001 - any import failure means "not available"
        return [], [f"{path.name}: {NCU_REP_MISSING}"]
    launches: list[Launch] = []
    bad_units: set[str] = set()
    try:
        ctx = ncu_report.load_report(str(path))
        for ri in range(ctx.num_ranges()):
            rng = ctx.range_by_idx(ri)
            for ai in range(rng.num_actions()):
                action = rng.action_by_idx(ai)
                launch = Launch(str(action.name()))
                for name in action.metric_names():
                    try:
                        metric = action.metric_by_name(name)
                        v = to_float(metric.as_double())
                        # a report stores each metric in its own unit (gpu__time_duration in
                        # nanoseconds, bytes as bytes): to base units as the CSV path does
                        unit_of = getattr(metric, "unit", None)
                        unit = str(unit_of()) if callable(unit_of) else ""
                    except Exception:  # noqa: BLE001 - non-numeric metric
                        v = None
                    if v is None:
                        continue
                    factor = unit_factor(unit) if unit else 1.0
                    if factor is None:
                        bad_units.add(unit)
                        continue
                    launch.metrics[str(name)] = v * factor
                launches.append(launch)
    except Exception as exc:  # noqa: BLE001 - the report reader is third-party
        return launches, [f"{path.name}: ncu_report could not read it ({exc})"]
    problems = ([f"{path.name}: unknown unit(s) skipped: {', '.join(sorted(bad_units))}"]
                if bad_units else [])
    return launches, problems


@dataclass
class _LaunchValues:
    """What one launch's metrics say: DRAM bytes, FLOPs by dtype (SASS and tensor pipe)."""

    read: float | None
    write: float | None
    total: float | None
    sass: dict[str, float]
    tensor: dict[str, float]
    time: float | None
    tensor_insts: float | None


def _launch_values(m: dict[str, float]) -> _LaunchValues:
    rd = m.get("dram__bytes_read.sum")
    wr = m.get("dram__bytes_write.sum")
    total = rd + wr if rd is not None and wr is not None else m.get("dram__bytes.sum")
    sass: dict[str, float] = {}
    prefixes_seen: set[str] = set()
    for name in m:
        sm = _SASS.match(name)
        if sm:
            prefix = name.split("__", 1)[0]
            prefixes_seen.add(prefix)
    # prefer smsp__ over sm__ when both were collected (never double count)
    use_prefix = "smsp" if "smsp" in prefixes_seen else "sm"
    for name, v in m.items():
        sm = _SASS.match(name)
        if sm and name.startswith(use_prefix + "__"):
            dt = _SASS_DTYPE[sm.group(1)]
            sass[dt] = sass.get(dt, 0.0) + v * (2.0 if sm.group(2) == "fma" else 1.0)
    tensor: dict[str, float] = {}
    for name, v in m.items():
        tm = _TENSOR_OPS.match(name)
        if tm:
            dt = canonical_dtype(tm.group(1)) or tm.group(1)
            tensor[dt] = tensor.get(dt, 0.0) + v
    return _LaunchValues(
        read=rd,
        write=wr,
        total=total,
        sass=sass,
        tensor=tensor,
        time=m.get("gpu__time_duration.sum"),
        tensor_insts=m.get("sm__inst_executed_pipe_tensor.sum"),
    )


def measure_launches(
    launches: list[Launch], *, source: str, path: str
) -> dict[str, KernelMeasurement]:
    by_kernel: dict[str, list[Launch]] = {}
    for la in launches:
        if la.kernel:
            by_kernel.setdefault(la.kernel, []).append(la)
    return {kernel: _measure_kernel(kernel, ls, source, path)
            for kernel, ls in by_kernel.items()}


def _measure_kernel(kernel: str, ls: list[Launch], source: str, path: str) -> KernelMeasurement:
    """One kernel's measurement from its profiled launches."""
    vals = [_launch_values(la.metrics) for la in ls]
    notes: list[str] = []
    missing: list[str] = []
    totals, reads, writes = _launch_bytes(vals, notes, missing)
    corroboration: dict[str, float] = {}
    flops_by_dtype, flops_per_dispatch = _launch_flops(vals, notes, missing, corroboration)
    for metric, key in CORROBORATION_METRICS.items():
        xs = [la.metrics[metric] for la in ls if metric in la.metrics]
        if xs and key not in corroboration:
            corroboration[key] = sum(xs) / len(xs)
    if "SmClockHz" in corroboration:
        notes.append(
            f"SM clock under ncu {corroboration['SmClockHz'] / 1e9:.2f} GHz (ncu "
            "locks clocks to base by default)"
        )
    positive = {dt: f for dt, f in flops_by_dtype.items() if f > 0}
    flops_dtype = max(positive, key=lambda dt: positive[dt]) if positive else None
    times = [v.time for v in vals if v.time is not None]
    if times:
        notes.append("duration is from the ncu replay run: informational only")
    return KernelMeasurement(
        kernel=kernel,
        dispatches=len(ls),
        bytes_per_dispatch=mean(totals),
        flops_per_dispatch=flops_per_dispatch,
        flops_dtype=canonical_dtype(flops_dtype) if flops_dtype else None,
        duration_s=mean(times),
        corroboration=corroboration,
        missing=missing,
        source=source,
        path=path,
        notes=notes,
        read_bytes_per_dispatch=mean(reads),
        write_bytes_per_dispatch=mean(writes),
        flops_by_dtype=flops_by_dtype,
        arch=_one({la.arch for la in ls}),
        grid=_as_list(_one({la.grid for la in ls})),
        block=_as_list(_one({la.block for la in ls})),
    )


def _one(values: set[T]) -> T | None:
    """The value every launch agrees on; None when they differ or none has one."""
    return next(iter(values)) if len(values) == 1 else None


def _as_list(dims: tuple[int, ...] | None) -> list[int] | None:
    return list(dims) if dims is not None else None


def _launch_bytes(vals: list[_LaunchValues], notes: list[str], missing: list[str]
                  ) -> tuple[list[float], list[float], list[float]]:
    """(total, read, write) DRAM bytes of the launches that carry them."""
    totals = [v.total for v in vals if v.total is not None]
    reads = [v.read for v in vals if v.read is not None]
    writes = [v.write for v in vals if v.write is not None]
    if totals:
        notes.append(BYTES_NOTE)
        if len(totals) < len(vals):
            notes.append(f"bytes from {len(totals)} of {len(vals)} launches")
    else:
        if not reads:
            missing.append("dram__bytes_read.sum")
        if not writes:
            missing.append("dram__bytes_write.sum")
        if reads:
            notes.append(
                "only DRAM reads were collected: read_bytes_per_dispatch is a "
                "lower bound; bytes_per_dispatch left unknown"
            )
    return totals, reads, writes


def _launch_flops(vals: list[_LaunchValues], notes: list[str], missing: list[str],
                  corroboration: dict[str, float]) -> tuple[dict[str, float], float | None]:
    """(mean FLOPs by dtype, mean FLOPs per launch) from SASS and tensor-pipe counts; unknown
    when the tensor pipe was busy but its ops were not collected."""
    sass_present = any(v.sass for v in vals)
    tensor_present = any(v.tensor for v in vals)
    tensor_insts = [v.tensor_insts for v in vals if v.tensor_insts is not None]
    if not (sass_present or tensor_present):
        missing.append("sm__sass_thread_inst_executed_op_*_pred_on.sum")
        return {}, None
    per_launch: list[float] = []
    acc: dict[str, float] = {}
    for v in vals:
        total = 0.0
        for part in (v.sass, v.tensor):
            for dt, f in part.items():
                acc[dt] = acc.get(dt, 0.0) + f
                total += f
        per_launch.append(total)
    flops_by_dtype = {dt: f / len(vals) for dt, f in acc.items()}
    flops_per_dispatch = mean(per_launch)
    notes.append(
        "FLOPs = SASS fadd/fmul/hadd/hmul/dadd/dmul + 2 x fma"
        + (" + tensor-pipe ops" if tensor_present else "")
    )
    if not tensor_present and tensor_insts and max(tensor_insts) > 0:
        if flops_per_dispatch is not None:
            corroboration["SassFlops"] = flops_per_dispatch
        missing.append("sm__ops_path_tensor_src_*_dst_*.sum")
        notes.append(
            "tensor pipe busy (sm__inst_executed_pipe_tensor.sum > 0) but no "
            "tensor ops metric: FLOPs unknown; SASS-only count in SassFlops"
        )
        return {}, None
    return flops_by_dtype, flops_per_dispatch
