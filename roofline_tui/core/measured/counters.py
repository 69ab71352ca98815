"""Stage C entry points: find counter files, load them whatever their format, match kernels."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from roofline_tui.core.lazy_re import lazy_compile
from roofline_tui.core.store import parse_json_text, read_bytes

from ..layout import (  # noqa: F401 - re-exported: the package's public API
    COUNTER_SUFFIXES,
    NON_COUNTER_CSV,
    discover_counter_files,
    discover_roofline_files,
)
from ..peaks import normalize_arch
from ._util import DEFAULT_FLOPS_PER_MOP, csv_rows, read_text
from .models import CounterSet, KernelMeasurement

if TYPE_CHECKING:
    from .amd import ParsedFile

# the format readers (amd, ncu, roofline_v1; sqlite3 with them) are imported by the functions
# that read a counter file: a round without counters never loads them

SQLITE_MAGIC = b"SQLite format 3\x00"


def sniff(path: Path) -> str:
    """Format of a counter file: rocprofv3-csv, rocpd, rocprof-compute-pmc, ncu-csv (details),
    ncu-raw, ncu-rep, roofline-v1, proton, sysinfo, kernel-trace, spm, or unknown."""
    from . import amd, ncu, proton, roofline_v1

    if path.suffix.lower() == ".ncu-rep":
        return "ncu-rep"
    head = read_bytes(path, max_bytes=len(SQLITE_MAGIC), head=True)  # never blocks on a FIFO
    if head == SQLITE_MAGIC:
        return "rocpd"
    text = read_text(path)
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            doc = parse_json_text(text, path, allow_nan=True)
        except (OSError, ValueError):
            return "unknown"
        return "proton" if proton.looks_like_proton(doc) else "unknown"
    if stripped.startswith("{"):
        try:  # bounded in depth like every JSON the engine reads
            doc = parse_json_text(text, path, allow_nan=True)
        except (OSError, ValueError):
            return "unknown"
        return "roofline-v1" if roofline_v1.looks_like_roofline_v1(doc) else "unknown"
    rows = csv_rows("\n".join(text.splitlines()[:200]))
    for r in rows:
        if amd.is_rocprofv3_header(r):
            return "rocprofv3-csv"
        if amd.is_pmc_perf_header(r):
            return "rocprof-compute-pmc"
        if ncu.is_details_header(r):
            return "ncu-csv"
        if ncu.is_raw_header(r):
            return "ncu-raw"
        cells = {c.strip().lower() for c in r}
        if {"dispatch_id", "counter_name", "counter_value"} <= cells and not (
                cells & {"kernel_name", "kernel-name"}):
            return "spm"
        if {"gpu_arch", "cu_per_gpu"} <= cells:
            return "sysinfo"
        if ("kernel_name" in cells and "start_timestamp" in cells) or (
                "kernelname" in cells and "beginns" in cells):
            return "kernel-trace"
        if "agent_type" in cells and "node_id" in cells:
            return "agent-info"
    return "unknown"


def _find_sysinfo(pmc: Path, given: list[Path]) -> Path | None:
    candidates = [p for p in given if p.parent == pmc.parent]
    try:
        candidates += [p for p in pmc.parent.glob("*sysinfo*.csv") if p not in candidates]
    except OSError:
        pass
    if not candidates:
        return None

    def shared_prefix(p: Path) -> int:
        n = 0
        for a, b in zip(p.name, pmc.name):
            if a != b:
                break
            n += 1
        return n

    return max(candidates, key=lambda p: (shared_prefix(p), p.name == "sysinfo.csv"))


def _agent_arch(counter_file: Path) -> str | None:
    """The GPU arch (``gfx950``) from an ``*agent_info.csv`` next to a rocprofv3 counter file."""
    try:
        infos = sorted(counter_file.parent.glob("*agent_info.csv"))
    except OSError:
        return None
    for info in infos[:4]:
        try:
            rows = csv_rows(read_text(info))
        except OSError:
            continue
        if not rows:
            continue
        head = [h.strip().lower() for h in rows[0]]
        if "agent_type" not in head or "name" not in head:
            continue
        ti, ni = head.index("agent_type"), head.index("name")
        for r in rows[1:]:
            if len(r) > max(ti, ni) and r[ti].strip().upper() == "GPU":
                arch = normalize_arch(r[ni])
                if arch and arch.startswith("gfx"):
                    return arch
    return None


_PASS_DIR = lazy_compile(r"^(pass|pmc)_?\d+$", re.IGNORECASE)


def _workload_groups(files: list[ParsedFile]) -> list[list[ParsedFile]]:
    """Split rocprofv3/rocpd files into workloads whose files are passes of one run.

    Two files belong together when they sit in sibling ``pass_N``/``pmc_N`` directories, or
    when their kernel-name sets mostly agree (intersection >= half of the union). Unrelated
    files given together are measured separately.
    """
    parent = list(range(len(files)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, a in enumerate(files):
        for j in range(i):
            b = files[j]
            siblings = (
                _PASS_DIR.match(a.path.parent.name) is not None
                and _PASS_DIR.match(b.path.parent.name) is not None
                and a.path.parent.parent == b.path.parent.parent
            )
            ka, kb = set(a.kernels), set(b.kernels)
            similar = bool(ka | kb) and len(ka & kb) * 2 >= len(ka | kb)
            if siblings or similar:
                parent[find(i)] = find(j)
    groups: dict[int, list[ParsedFile]] = {}
    for i, f in enumerate(files):
        groups.setdefault(find(i), []).append(f)
    return list(groups.values())


def _add(out: dict[str, KernelMeasurement], m: KernelMeasurement, problems: list[str]) -> None:
    old = out.get(m.kernel)
    if old is None:
        out[m.kernel] = m
        return
    if (old.source == "roofline-v1") != (m.source == "roofline-v1"):
        counters, rv1 = (m, old) if old.source == "roofline-v1" else (old, m)
        merged = counters.model_copy(
            update={
                "roofline_pct": rv1.roofline_pct,
                "attainable_speedup": rv1.attainable_speedup,
                "bound_type": rv1.bound_type,
                "notes": [*counters.notes, f"roofline verdict from {Path(rv1.path).name}"],
                "aliases": sorted(set(counters.aliases) | set(rv1.aliases)),
            }
        )
        out[m.kernel] = merged
        return
    keep, drop = (
        (m, old)
        if (old.bytes_per_dispatch is None and m.bytes_per_dispatch is not None)
        else (old, m)
    )
    out[m.kernel] = keep
    problems.append(
        f"kernel {m.kernel[:80]} measured in both {Path(keep.path).name} and "
        f"{Path(drop.path).name}; kept {Path(keep.path).name}"
    )


def load_counters(
    paths: list[Path], *, flops_per_mop: float | dict[str, float] = DEFAULT_FLOPS_PER_MOP
) -> CounterSet:
    """Load counter files of any supported format into per-kernel measurements.

    Never raises: unreadable or unrecognised files become one-line ``problems``. rocprofv3
    CSVs and rocpd databases are joined as passes of one workload (see ``amd.join_passes``);
    rocprof-compute, ncu and roofline-v1 files stand alone. ``flops_per_mop`` converts
    ``SQ_INSTS_VALU_MFMA_MOPS_<DT>`` to FLOPs (a number, or a map canonical dtype -> number
    with an optional ``"default"``).
    """
    result = CounterSet()
    try:
        _load(list(paths), flops_per_mop, result)
    except Exception as exc:  # noqa: BLE001 - L5: the loader never fails the run
        result.problems.append(f"counter loading stopped early: {type(exc).__name__}: {exc}")
    return result


def _load(paths: list[Path], fpm: float | dict[str, float], result: CounterSet) -> None:
    from . import amd, ncu, proton, roofline_v1

    problems = result.problems
    kinds: dict[Path, str] = {}
    for p in dict.fromkeys(Path(x) for x in paths):
        try:
            kinds[p] = sniff(p)
        except OSError as exc:
            problems.append(f"{p.name}: cannot read ({exc.strerror or exc})")
    sysinfos = [p for p, k in kinds.items() if k == "sysinfo"]
    pass_files: list[ParsedFile] = []
    rooflines: dict[str, list[tuple[Path, KernelMeasurement]]] = {}
    for p, kind in kinds.items():
        try:
            if kind in ("rocprofv3-csv", "rocprof-compute-pmc", "ncu-csv", "ncu-raw"):
                rows = csv_rows(read_text(p))
            if kind == "rocprofv3-csv":
                pf3 = amd.parse_rocprofv3_csv(p, rows)
                pf3.arch = _agent_arch(p)
                pass_files.append(pf3)
            elif kind == "rocpd":
                pass_files.append(amd.parse_rocpd(p))
            elif kind == "rocprof-compute-pmc":
                pf = amd.parse_pmc_perf(p, rows, _find_sysinfo(p, sysinfos))
                problems.extend(pf.problems)
                for k, ds in pf.kernels.items():
                    m = amd.measure_kernel(
                        k, ds, source=pf.source, path=str(p), flops_per_mop=fpm, notes=pf.notes,
                        arch=pf.arch,
                    )
                    _add(result.measurements, m, problems)
            elif kind in ("ncu-csv", "ncu-raw", "ncu-rep"):
                if kind == "ncu-csv":
                    launches, probs = ncu.parse_details(p, rows)
                elif kind == "ncu-raw":
                    launches, probs = ncu.parse_raw(p, rows)
                else:
                    launches, probs = ncu.load_ncu_rep(p)
                problems.extend(probs)
                source = "ncu-rep" if kind == "ncu-rep" else "ncu-csv"
                if not launches and not probs:
                    problems.append(f"{p.name}: ncu file has no kernel launches")
                for m in ncu.measure_launches(launches, source=source, path=str(p)).values():
                    _add(result.measurements, m, problems)
            elif kind == "roofline-v1":
                rv1, probs = roofline_v1.parse_roofline_v1(p)
                problems.extend(probs)
                if rv1 is not None:
                    rooflines.setdefault(rv1.kernel, []).append((p, rv1))
            elif kind == "sysinfo":
                if not any(k == "rocprof-compute-pmc" and q.parent == p.parent
                           for q, k in kinds.items()):
                    problems.append(f"{p.name}: a rocprof-compute sysinfo.csv (the GPU's "
                                    "description), no counters; give it with its pmc_perf.csv")
            elif kind == "proton":
                prof = proton.read_proton(parse_json_text(read_text(p), p, allow_nan=True))
                problems.extend(f"{p.name}: {x}" for x in prof.problems)
                found = proton.measurements(prof, str(p))
                if not found:
                    problems.append(f"{p.name}: a Proton profile with no flops/bytes metrics: "
                                    "nothing measured (kernel times: `roofline import proton`)")
                for m in found:
                    _add(result.measurements, m, problems)
            elif kind == "spm":
                problems.append(f"{p.name}: a rocprofv3 streaming-performance-monitor (SPM) "
                                "CSV: counter samples by dispatch id with no kernel names, "
                                "which cannot be tied to a kernel; not supported, ignored")
            elif kind in ("kernel-trace", "agent-info"):
                problems.append(f"{p.name}: a {kind.replace('-', ' ')} file, not counters; ignored")
            else:
                problems.append(f"{p.name}: unrecognised counter file format; ignored")
        except Exception as exc:  # noqa: BLE001 - one bad file must not stop the others
            problems.append(f"{p.name}: could not parse ({type(exc).__name__}: {exc})")
    if pass_files:
        _measure_passes(pass_files, fpm, result)
    _add_rooflines(rooflines, result)


def _measure_passes(pass_files: list[ParsedFile], fpm: float | dict[str, float],
                    result: CounterSet) -> None:
    """Join the per-pass AMD files of each workload and measure every kernel in them."""
    from . import amd

    problems = result.problems
    for pf in pass_files:
        problems.extend(pf.problems)
    for group in _workload_groups([pf for pf in pass_files if pf.kernels]):
        joined, probs, notes = amd.join_passes(group)
        problems.extend(probs)
        for k, ds in joined.items():
            src = next(pf for pf in group if k in pf.kernels)
            m = amd.measure_kernel(
                k,
                ds,
                source=src.source,
                path=str(src.path),
                flops_per_mop=fpm,
                notes=notes + src.notes,
                arch=src.arch,
            )
            _add(result.measurements, m, problems)


def _add_rooflines(rooflines: dict[str, list[tuple[Path, KernelMeasurement]]],
                   result: CounterSet) -> None:
    """One roofline-v1 report per kernel: the baseline one when a post one is beside it."""
    from . import roofline_v1

    for items in rooflines.values():
        base = [x for x in items if roofline_v1.phase_of(x[0]) == "baseline"]
        chosen = (base or items)[0]
        if base and len(items) > 1:
            chosen[1].notes.append("baseline report preferred over post")
        _add(result.measurements, chosen[1], result.problems)


def match_measurement(counters: CounterSet, kernel_name: str) -> KernelMeasurement | None:
    """The measurement for a profile kernel name, by the rule in ``names`` (exact, then
    short/demangled name, then prefix; ties to the longest name, then most dispatches)."""
    try:
        found: KernelMeasurement | None = counters.name_index().match(kernel_name)
        return found
    except Exception:  # noqa: BLE001 - matching must never fail a run
        return None
