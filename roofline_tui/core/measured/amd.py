"""AMD counters: rocprofv3 ``counter_collection.csv``, rocpd SQLite, rocprof-compute
``pmc_perf.csv``; pass joining and the bytes/FLOPs derivation.

Bytes (per dispatch):
  * ``(FETCH_SIZE + WRITE_SIZE) * 1024`` when both derived counters are present (KiB);
  * otherwise from raw TCC->EA request counts (what rocprof-compute's ``pmc_perf.csv`` holds),
    with the formula of the counter_defs for the detected counter family:
    gfx950 ``RDREQ_128B*128 + RDREQ_64B*64 + RDREQ_32B*32``; gfx942 (current)
    ``BUBBLE*128 + (RDREQ-BUBBLE-RDREQ_32B)*64 + RDREQ_32B*32``; gfx90a
    ``RDREQ_32B*32 + (RDREQ-RDREQ_32B)*64``; writes ``(WRREQ-WRREQ_64B)*32 + WRREQ_64B*64``.
  Either way this is traffic between L2 and the fabric (EA), not at the HBM pins.
FLOPs (per dispatch): ``MfmaFlops<DT>`` when present, else ``SQ_INSTS_VALU_MFMA_MOPS_<DT>``
  times the FLOPs per MOP (512 by default); F8/XF32/I8 only exist as MOPS counters. Only
  matrix-core (MFMA) work is counted; VALU FLOPs are not.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from ..dtypes import canonical_dtype as canonical
from ..names import cap_name
from ..peaks import normalize_arch
from ._util import DEFAULT_FLOPS_PER_MOP, csv_rows, mean, read_text, to_float
from .models import KernelMeasurement
from .sqlite_ro import SQLITE_ROW_BUDGET, open_sqlite_ro

CORROBORATION_COUNTERS = (
    "MemUnitStalled",
    "OccupancyPercent",
    "MfmaUtil",
    "MemUnitBusy",
    "VALUUtilization",
    "GPUBusy",
)

# MFMA counter tag -> canonical dtype
_MFMA_TAGS = (("F16", "fp16"), ("BF16", "bf16"), ("F32", "fp32"), ("F64", "fp64"))
_MOPS_ONLY_TAGS = (("F8", "fp8"), ("XF32", "tf32"), ("I8", "int8"))

BYTES_NOTE_FETCH = (
    "bytes = (FETCH_SIZE+WRITE_SIZE)*1024; counters see traffic below L2 (L2->EA fabric), "
    "not HBM pins (Infinity Cache/MALL can make HBM bytes lower)"
)
DURATION_NOTE = "duration is from the counter run (serialised dispatches): informational only"


@dataclass
class Dispatch:
    id: float | None
    counters: dict[str, float] = field(default_factory=dict)
    duration_s: float | None = None


@dataclass
class ParsedFile:
    path: Path
    source: str
    kernels: dict[str, list[Dispatch]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    arch: str | None = None  # gfxNNN from sysinfo.csv / agent_info.csv next to the file

    def counter_names(self) -> frozenset[str]:
        return frozenset(c for ds in self.kernels.values() for d in ds for c in d.counters)


def _col(header: list[str], *names: str) -> int | None:
    low = [h.strip().lower() for h in header]
    for n in names:
        if n in low:
            return low.index(n)
    return None


def is_rocprofv3_header(row: list[str]) -> bool:
    return (
        _col(row, "counter_name", "counter") is not None
        and _col(row, "counter_value", "value") is not None
        and _col(row, "kernel_name", "name", "kernel") is not None
    )


def _duration(start: object, end: object) -> float | None:
    s, e = to_float(start), to_float(end)
    if s is None or e is None or e <= s:
        return None
    return (e - s) * 1e-9


def parse_rocprofv3_csv(path: Path, rows: list[list[str]]) -> ParsedFile:
    """One row per (dispatch, counter). Column names are matched case-insensitively."""
    out = ParsedFile(path=path, source="rocprofv3-csv")
    hdr_i = next((i for i, r in enumerate(rows[:50]) if is_rocprofv3_header(r)), None)
    if hdr_i is None:
        out.problems.append(f"{path.name}: no counter_collection header found")
        return out
    header = rows[hdr_i]
    ki = _col(header, "kernel_name", "name", "kernel")
    ci = _col(header, "counter_name", "counter")
    vi = _col(header, "counter_value", "value")
    di = _col(header, "dispatch_id", "correlation_id")
    si = _col(header, "start_timestamp", "start")
    ei = _col(header, "end_timestamp", "end")
    if ki is None or ci is None or vi is None:  # the header test saw them; stated for safety
        out.problems.append(f"{path.name}: no kernel, counter or value column")
        return out
    by_kernel: dict[str, dict[object, Dispatch]] = {}
    occurrence: dict[tuple[str, str], int] = {}
    bad: list[str] = []
    for r in rows[hdr_i + 1 :]:
        if len(r) <= max(ki, ci, vi):
            continue
        kernel, counter = cap_name(r[ki].strip()), r[ci].strip()
        if not kernel or not counter:
            continue
        value = to_float(r[vi])
        did = to_float(r[di]) if di is not None and di < len(r) else None
        if did is None:  # no id: the n-th value of a counter is the n-th dispatch
            n = occurrence.get((kernel, counter), 0)
            occurrence[(kernel, counter)] = n + 1
            key: object = ("occ", n)
        else:
            key = did
        disp = by_kernel.setdefault(kernel, {}).setdefault(key, Dispatch(id=did))
        if disp.duration_s is None and si is not None and ei is not None and ei < len(r):
            disp.duration_s = _duration(r[si], r[ei])
        if value is None:
            bad.append(f"{counter}={r[vi]!r}")
            continue
        disp.counters[counter] = disp.counters.get(counter, 0.0) + value
    if bad:
        out.problems.append(
            f"{path.name}: {len(bad)} non-numeric counter value(s) skipped (e.g. {bad[0][:60]})"
        )
    out.kernels = {k: _ordered(v) for k, v in by_kernel.items()}
    if not out.kernels:
        out.problems.append(f"{path.name}: counter file has no counter rows")
    return out


def _ordered(dispatches: dict[object, Dispatch]) -> list[Dispatch]:
    items = list(dispatches.values())
    if all(d.id is not None for d in items):
        items.sort(key=lambda d: d.id if d.id is not None else 0.0)
    return items


def parse_rocpd(path: Path) -> ParsedFile:
    """rocpd SQLite: the ``pmc_events`` view (one row per counter per dispatch), with kernel
    names from the ``kernels`` view when ``pmc_events`` lacks them."""
    out = ParsedFile(path=path, source="rocpd")
    try:
        con, budget = open_sqlite_ro(path)
    except sqlite3.Error as exc:
        out.problems.append(f"{path.name}: cannot open as SQLite ({exc})")
        return out
    try:
        names = {
            r[0]
            for r in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table','view')")
        }
        if "pmc_events" not in names:
            what = "kernel trace only" if "kernels" in names else "not a rocpd database"
            out.problems.append(f"{path.name}: no pmc_events view ({what}); no counters read")
            return out
        pcols = {r[1] for r in con.execute("PRAGMA table_info(pmc_events)")}
        if not {"counter_name", "counter_value", "dispatch_id"} <= pcols:
            out.problems.append(f"{path.name}: pmc_events lacks counter_name/value/dispatch_id")
            return out
        kcols = (
            {r[1] for r in con.execute("PRAGMA table_info(kernels)")}
            if "kernels" in names
            else set()
        )
        name_expr = "p.name" if "name" in pcols else None
        join = ""
        if name_expr is None and {"name", "dispatch_id"} <= kcols:
            name_expr = "k.name"
            join = " LEFT JOIN kernels k ON k.dispatch_id = p.dispatch_id"
        if name_expr is None:
            out.problems.append(f"{path.name}: no kernel names in pmc_events or kernels")
            return out
        if "duration" in pcols:
            dur = "p.duration"
        elif {"start", "end"} <= pcols:
            dur = 'p."end" - p.start'
        else:
            dur = "NULL"
        sql = (
            f"SELECT {name_expr}, p.dispatch_id, p.counter_name, p.counter_value, {dur} "
            f"FROM pmc_events p{join} LIMIT {SQLITE_ROW_BUDGET + 1}"
        )
        rows = con.execute(sql).fetchall()
        if len(rows) > SQLITE_ROW_BUDGET:
            out.problems.append(f"{path.name}: more than {SQLITE_ROW_BUDGET:,} counter rows; "
                                "not read (row budget)")
            return out
    except sqlite3.Error as exc:
        if budget.tripped:
            out.problems.append(f"{path.name}: rocpd query stopped after its time budget "
                                f"({budget.seconds:g} s): a view too costly to read "
                                "(recursive or cross-joined?)")
        else:
            out.problems.append(f"{path.name}: rocpd query failed ({exc})")
        return out
    finally:
        con.close()
    _add_rocpd_rows(out, rows, path)
    return out


def _add_rocpd_rows(out: ParsedFile, rows: list[tuple[object, ...]], path: Path) -> None:
    """Fold ``pmc_events`` rows (name, dispatch id, counter, value, duration) into
    ``out.kernels``: one :class:`Dispatch` per dispatch id, counters summed."""
    by_kernel: dict[str, dict[object, Dispatch]] = {}
    bad = 0
    for name, did, counter, value, duration in rows:
        if not isinstance(name, str) or not isinstance(counter, str):
            continue
        name = cap_name(name)
        did_f = to_float(did)
        disp = by_kernel.setdefault(name, {}).setdefault(did_f, Dispatch(id=did_f))
        d = to_float(duration)
        if disp.duration_s is None and d is not None and d > 0:
            disp.duration_s = d * 1e-9
        v = to_float(value)
        if v is None:
            bad += 1
            continue
        disp.counters[counter] = disp.counters.get(counter, 0.0) + v
    if bad:
        out.problems.append(f"{path.name}: {bad} non-numeric counter value(s) skipped")
    out.kernels = {k: _ordered(v) for k, v in by_kernel.items()}
    if not out.kernels:
        out.problems.append(f"{path.name}: pmc_events is empty")


def is_pmc_perf_header(row: list[str]) -> bool:
    """rocprof-compute ``pmc_perf.csv`` (``Dispatch_ID, Kernel_Name``) or a legacy rocprof
    (v1/v2) ``--pmc`` CSV (``Index, KernelName``): one row per dispatch, counters as columns."""
    low = {h.strip().lower() for h in row}
    return (
        ({"dispatch_id", "kernel_name"} <= low or {"index", "kernelname"} <= low)
        and "counter_name" not in low
        and any(h.startswith(("SQ_", "TCC_", "TCP_", "GRBM_", "TA_")) for h in row)
    )


def parse_pmc_perf(path: Path, rows: list[list[str]], sysinfo: Path | None) -> ParsedFile:
    """rocprof-compute wide ``pmc_perf.csv``: one row per dispatch, counters as columns."""
    out = ParsedFile(path=path, source="rocprof-compute-pmc")
    hdr_i = next((i for i, r in enumerate(rows[:50]) if is_pmc_perf_header(r)), None)
    if hdr_i is None:
        out.problems.append(f"{path.name}: no pmc_perf header found")
        return out
    header = [h.strip() for h in rows[hdr_i]]
    ki = _col(header, "kernel_name", "kernelname")
    di = _col(header, "dispatch_id", "index")
    if ki is None:
        out.problems.append(f"{path.name}: no kernel name column")
        return out
    si = _col(header, "start_timestamp", "beginns")
    ei = _col(header, "end_timestamp", "endns")
    by_kernel: dict[str, dict[object, Dispatch]] = {}
    for n, r in enumerate(rows[hdr_i + 1 :]):
        if len(r) <= ki or not r[ki].strip():
            continue
        did = to_float(r[di]) if di is not None and di < len(r) else None
        key: object = did if did is not None else ("row", n)
        disp = Dispatch(id=did)
        for h, cell in zip(header, r):
            v = to_float(cell)
            if v is not None and h:
                disp.counters[h] = v
        if si is not None and ei is not None and ei < len(r):
            disp.duration_s = _duration(r[si], r[ei])
        by_kernel.setdefault(cap_name(r[ki].strip()), {})[key] = disp
    out.kernels = {k: _ordered(v) for k, v in by_kernel.items()}
    if not out.kernels:
        out.problems.append(f"{path.name}: pmc_perf has no dispatch rows")
    if sysinfo is not None:
        info = read_sysinfo(sysinfo)
        out.arch = normalize_arch(info.get("gpu_arch")) if info.get("gpu_arch") else None
        bits = [
            f"{k}={info[k]}"
            for k in ("gpu_arch", "gpu_model", "cu_per_gpu", "max_sclk", "hbm_bw", "num_xcd")
            if info.get(k)
        ]
        if bits:
            out.notes.append(f"sysinfo ({sysinfo.name}): " + ", ".join(bits))
    else:
        out.notes.append("no sysinfo.csv next to pmc_perf.csv: GPU not identified")
    return out


def read_sysinfo(path: Path) -> dict[str, str]:
    try:
        rows = [r for r in csv_rows(read_text(path)) if r]
    except OSError:
        return {}
    if len(rows) < 2:
        return {}
    return {h.strip(): v.strip() for h, v in zip(rows[0], rows[1])}


# ---------------------------------------------------------------------------------------------
# joining passes


def join_passes(files: list[ParsedFile]) -> tuple[dict[str, list[Dispatch]], list[str], list[str]]:
    """Join several counter files of one workload into per-kernel dispatch lists.

    Files with the same counter set are repeat runs and are concatenated; files with different
    counter sets are passes (``pass_1/``, ``pass_2/``...) and are joined per kernel: on the
    dispatch ids when the id sets agree, else on the occurrence order (each pass is a separate
    run, so ids need not line up). When passes disagree on a kernel's dispatch count the
    common dispatches are kept (shared ids if any, else the first N) and a problem is reported.
    A counter present in several passes keeps the first pass's value.
    """
    problems: list[str] = []
    notes: list[str] = []
    slots: dict[frozenset[str], list[ParsedFile]] = {}
    for f in files:
        slots.setdefault(f.counter_names(), []).append(f)
    slot_list = list(slots.values())
    merged_slots: list[dict[str, list[Dispatch]]] = []
    for group in slot_list:
        kernels: dict[str, list[Dispatch]] = {}
        for f in group:
            for k, ds in f.kernels.items():
                kernels.setdefault(k, []).extend(ds)
        merged_slots.append(kernels)
    if len(merged_slots) == 1:
        return merged_slots[0], problems, notes
    slot_names = [", ".join(f.path.parent.name + "/" + f.path.name for f in g) for g in slot_list]
    notes.append(f"joined {len(merged_slots)} counter passes per kernel: " + "; ".join(slot_names))
    all_kernels: list[str] = []
    for s in merged_slots:
        all_kernels.extend(k for k in s if k not in all_kernels)
    absent = [0] * len(merged_slots)
    absent_example = [""] * len(merged_slots)
    out: dict[str, list[Dispatch]] = {}
    for k in all_kernels:
        lists = []
        for i, s in enumerate(merged_slots):
            if s.get(k):
                lists.append(s[k])
            else:
                absent[i] += 1
                absent_example[i] = absent_example[i] or k
        counts = [len(ds) for ds in lists]
        ids = [[d.id for d in ds] for ds in lists]
        if len(set(counts)) == 1:
            joined = [list(t) for t in zip(*lists)]
        else:
            n = min(counts)
            shared: set[float] | None = None
            if all(None not in i for i in ids):  # so the ids below are all floats
                shared = cast("set[float]", set(ids[0]).intersection(*map(set, ids[1:])))
            if shared:
                joined = [
                    [next(d for d in ds if d.id == did) for ds in lists] for did in sorted(shared)
                ]
                how = f"kept the {len(shared)} shared dispatch ids"
            else:
                joined = [list(t) for t in zip(*(ds[:n] for ds in lists))]
                how = f"kept the first {n} by occurrence"
            problems.append(
                f"counter passes disagree on dispatches of {_short(k)} ({'/'.join(map(str, counts))}"
                f" dispatches); {how}"
            )
        out[k] = [_merge(parts) for parts in joined]
    for i, n in enumerate(absent):
        if n:
            problems.append(
                f"counter pass {slot_names[i]} lacks {n} kernel(s) present in other passes "
                f"(e.g. {_short(absent_example[i])}); their counters from it are missing"
            )
    return out, problems, notes


def _merge(parts: list[Dispatch]) -> Dispatch:
    counters: dict[str, float] = {}
    for p in parts:
        for c, v in p.counters.items():
            counters.setdefault(c, v)
    durs = [p.duration_s for p in parts if p.duration_s is not None]
    return Dispatch(id=parts[0].id, counters=counters, duration_s=mean(durs))


def _short(name: str, n: int = 80) -> str:
    return name if len(name) <= n else name[: n - 3] + "..."


# ---------------------------------------------------------------------------------------------
# derivation


# Faster than any device's memory or cache system: a byte rate above this is a bad counter.
MAX_PLAUSIBLE_BYTES_PER_S = 1e14  # 100 TB/s
_BYTE_COUNTERS = ("FETCH_SIZE", "WRITE_SIZE")


def _drop_impossible(d: Dispatch, flagged: list[str]) -> Dispatch:
    """A copy of ``d`` without counter values that cannot be true: negative counts, and
    FETCH/WRITE sizes larger than the kernel could move in its (counter-run) time. Each is
    flagged in the notes, never used."""
    bad = {k: v for k, v in d.counters.items() if v < 0}
    for k, v in bad.items():
        flagged.append(f"flagged: {k} = {v:g} is negative (impossible); not used")
    if d.duration_s:
        for k in _BYTE_COUNTERS:
            count = d.counters.get(k)
            if count is not None and k not in bad and (
                count * 1024 / d.duration_s > MAX_PLAUSIBLE_BYTES_PER_S
            ):
                bad[k] = count
                flagged.append(
                    f"flagged: {k} = {count:g} KiB in {d.duration_s * 1e6:.3g} us is above "
                    "100 TB/s (impossible for any device); not used")
    if not bad:
        return d
    return Dispatch(id=d.id, counters={k: v for k, v in d.counters.items() if k not in bad},
                    duration_s=d.duration_s)


def _get(c: dict[str, float], base: str) -> float | None:
    """``base_sum`` if present, else the sum of per-channel ``base[i]`` columns."""
    if base + "_sum" in c:
        return c[base + "_sum"]
    chans = [v for k, v in c.items() if k.startswith(base + "[") and k.endswith("]")]
    return sum(chans) if chans else None


# bytes of one TCC->EA read request that is neither a 32 B nor a 64 B one, per arch
READ_REQUEST_BYTES = {"gfx950": 128}


def _raw_read_bytes(c: dict[str, float], arch: str | None = None) -> tuple[float | None, str | None]:
    """Read bytes from TCC->EA request counts and the formula used (stated in the notes)."""
    for ea in ("TCC_EA0_", "TCC_EA_"):
        r128, r64, r32 = (_get(c, f"{ea}RDREQ_{s}") for s in ("128B", "64B", "32B"))
        if r128 is not None and r64 is not None and r32 is not None:
            return (r128 * 128 + r64 * 64 + r32 * 32,
                    f"gfx950 {ea}RDREQ_128B*128 + RDREQ_64B*64 + RDREQ_32B*32")
        rd, bubble = _get(c, f"{ea}RDREQ"), _get(c, "TCC_BUBBLE")
        size = READ_REQUEST_BYTES.get(arch or "")
        if rd is not None and r32 is not None and size:
            return ((rd - r32) * size + r32 * 32,
                    f"{arch}: ({ea}RDREQ - RDREQ_32B)*{size} + RDREQ_32B*32 ({size} B requests; "
                    "no RDREQ_128B/64B split in the file)")
        if rd is not None and r32 is not None and bubble is not None:
            return (bubble * 128 + (rd - bubble - r32) * 64 + r32 * 32,
                    f"gfx942 TCC_BUBBLE*128 + ({ea}RDREQ - BUBBLE - RDREQ_32B)*64 + RDREQ_32B*32")
        if rd is not None and r32 is not None:
            return r32 * 32 + (rd - r32) * 64, f"gfx90a/gfx908 {ea}RDREQ_32B*32 + (RDREQ - 32B)*64"
    return None, None


def _raw_write_bytes(c: dict[str, float]) -> float | None:
    for ea in ("TCC_EA0_", "TCC_EA_"):
        wr, w64 = _get(c, f"{ea}WRREQ"), _get(c, f"{ea}WRREQ_64B")
        if wr is not None and w64 is not None:
            return (wr - w64) * 32 + w64 * 64
    return None


def _fpm(flops_per_mop: float | dict[str, float], dtype: str) -> float:
    if isinstance(flops_per_mop, dict):
        return float(flops_per_mop.get(dtype, flops_per_mop.get("default", DEFAULT_FLOPS_PER_MOP)))
    return float(flops_per_mop)


def _dispatch_flops(
    c: dict[str, float], flops_per_mop: float | dict[str, float]
) -> tuple[dict[str, float], float | None, bool]:
    """(flops by dtype, untyped MfmaFlops total, whether any FLOP counter was present)."""
    by_dt: dict[str, float] = {}
    used_mops = False
    for tag, dt in _MFMA_TAGS:
        if f"MfmaFlops{tag}" in c:
            by_dt[dt] = c[f"MfmaFlops{tag}"]
        elif f"SQ_INSTS_VALU_MFMA_MOPS_{tag}" in c:
            by_dt[dt] = c[f"SQ_INSTS_VALU_MFMA_MOPS_{tag}"] * _fpm(flops_per_mop, dt)
            used_mops = True
    for tag, dt in _MOPS_ONLY_TAGS:
        if f"SQ_INSTS_VALU_MFMA_MOPS_{tag}" in c:
            by_dt[dt] = c[f"SQ_INSTS_VALU_MFMA_MOPS_{tag}"] * _fpm(flops_per_mop, dt)
            used_mops = True
    untyped = None
    if "MfmaFlops" in c and not any(dt in by_dt for _, dt in _MFMA_TAGS):
        untyped = c["MfmaFlops"]
    return by_dt, untyped, bool(by_dt) or untyped is not None or used_mops


@dataclass
class _Tally:
    """Per-dispatch byte and FLOP figures gathered over one kernel's dispatches."""

    reads: list[float] = field(default_factory=list)
    writes: list[float] = field(default_factory=list)
    totals: list[float] = field(default_factory=list)
    formulas: set[str] = field(default_factory=set)
    have_fetch: bool = False
    have_write: bool = False
    flops: list[float] = field(default_factory=list)
    by_dt_sum: dict[str, float] = field(default_factory=dict)
    any_flop_counter: bool = False
    untyped_seen: bool = False


def _tally_bytes(t: _Tally, c: dict[str, float], arch: str | None) -> None:
    """Add one dispatch's read/write bytes (FETCH/WRITE_SIZE, else raw TCC->EA counts)."""
    rd = wr = None
    if "FETCH_SIZE" in c:
        t.have_fetch = True
        rd = c["FETCH_SIZE"] * 1024
        t.formulas.add("fetch")
    if "WRITE_SIZE" in c:
        t.have_write = True
        wr = c["WRITE_SIZE"] * 1024
    if rd is None and wr is None:
        rd, how = _raw_read_bytes(c, arch)
        wr = _raw_write_bytes(c)
        if how:
            t.formulas.add(how)
    if rd is not None:
        t.reads.append(rd)
    if wr is not None:
        t.writes.append(wr)
    if rd is not None and wr is not None:
        t.totals.append(rd + wr)


def _tally_flops(t: _Tally, c: dict[str, float], flops_per_mop: float | dict[str, float]) -> None:
    """Add one dispatch's MFMA FLOPs, total and split by dtype."""
    by_dt, untyped, present = _dispatch_flops(c, flops_per_mop)
    if present:
        t.any_flop_counter = True
        total = sum(by_dt.values()) + (untyped or 0.0)
        t.untyped_seen = t.untyped_seen or untyped is not None
        t.flops.append(total)
        for dt, v in by_dt.items():
            t.by_dt_sum[dt] = t.by_dt_sum.get(dt, 0.0) + v


def _byte_notes(t: _Tally, n: int, missing: list[str], out_notes: list[str]) -> None:
    """Missing byte counters, or how the bytes were counted."""
    if not t.totals:
        if not (t.have_fetch or t.reads):
            missing.append("FETCH_SIZE")
        if not (t.have_write or t.writes):
            missing.append("WRITE_SIZE")
    elif len(t.totals) < n:
        out_notes.append(f"bytes from {len(t.totals)} of {n} dispatches that carry both counters")
    if t.totals:
        if "fetch" in t.formulas:
            out_notes.append(BYTES_NOTE_FETCH)
        else:
            out_notes.append(
                "bytes from TCC->EA request counts: read bytes = "
                + "; ".join(sorted(t.formulas))
                + "; writes = (WRREQ - WRREQ_64B)*32 + WRREQ_64B*64; traffic below L2, not "
                "HBM pins"
            )


def _flop_dtypes(t: _Tally, out_notes: list[str]) -> tuple[dict[str, float], str | None]:
    """Mean FLOPs per dispatch by dtype, and the dominant dtype when every count has one."""
    nf = len(t.flops)
    flops_by_dtype = {dt: v / nf for dt, v in t.by_dt_sum.items()} if nf else {}
    flops_dtype = None
    positive = {dt: v for dt, v in flops_by_dtype.items() if v > 0}
    if positive and not t.untyped_seen:
        flops_dtype = max(positive, key=lambda dt: positive[dt])
    elif positive and t.untyped_seen:
        out_notes.append("MfmaFlops total has no dtype split; flops_dtype left unknown")
    return flops_by_dtype, flops_dtype


def measure_kernel(
    kernel: str,
    dispatches: list[Dispatch],
    *,
    source: str,
    path: str,
    flops_per_mop: float | dict[str, float] = DEFAULT_FLOPS_PER_MOP,
    notes: list[str] | None = None,
    arch: str | None = None,
) -> KernelMeasurement:
    flagged: list[str] = []
    dispatches = [_drop_impossible(d, flagged) for d in dispatches]
    n = len(dispatches)
    t = _Tally()
    for d in dispatches:
        _tally_bytes(t, d.counters, arch)
        _tally_flops(t, d.counters, flops_per_mop)
    missing: list[str] = []
    out_notes = list(notes or [])
    out_notes.extend(dict.fromkeys(flagged))
    _byte_notes(t, n, missing, out_notes)
    if not t.any_flop_counter:
        missing.append("MfmaFlops* or SQ_INSTS_VALU_MFMA_MOPS_*")
    else:
        out_notes.append("FLOPs count MFMA (matrix-core) work only; VALU FLOPs not included")
    flops_by_dtype, flops_dtype = _flop_dtypes(t, out_notes)
    corroboration: dict[str, float] = {}
    for name in CORROBORATION_COUNTERS:
        vals = [d.counters[name] for d in dispatches if name in d.counters]
        if vals:
            corroboration[name] = sum(vals) / len(vals)
    durs = [d.duration_s for d in dispatches if d.duration_s is not None]
    if durs:
        out_notes.append(DURATION_NOTE)
    return KernelMeasurement(
        kernel=kernel,
        dispatches=n,
        bytes_per_dispatch=mean(t.totals),
        flops_per_dispatch=mean(t.flops),
        flops_dtype=canonical(flops_dtype),
        duration_s=mean(durs),
        corroboration=corroboration,
        missing=missing,
        source=source,
        path=path,
        notes=out_notes,
        read_bytes_per_dispatch=mean(t.reads),
        write_bytes_per_dispatch=mean(t.writes),
        flops_by_dtype=flops_by_dtype,
        arch=arch,
    )
