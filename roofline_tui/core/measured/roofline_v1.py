"""rocprof-compute ``roofline-v1`` reports (``kernels/<k>/roofline/{baseline,post}_roofline.json``).

Mapping (input-formats.md §6): ``roofline_efficiency_pct / 100 -> roofline_pct``,
``headroom_ratio -> attainable_speedup``, ``observed_limit -> bound_type`` (folded onto the
closed set memory|compute|latency|unknown; the raw value is kept in ``notes``). The case used is
the summary's ``dominant_case_id`` when it matched, else the matched case with the largest
weight. The report carries no per-dispatch bytes, so ``bytes_per_dispatch``/``flops_per_dispatch``
stay None; numeric case metrics go to ``corroboration``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._util import read_json, to_float
from .models import KernelMeasurement

_MEMORY = ("hbm", "dram", "memory", "mem", "l2", "llc", "mall", "lds", "bandwidth", "vmem")
_COMPUTE = ("compute", "mfma", "valu", "salu", "flop", "tensor", "matrix")
_LATENCY = ("latency", "occupancy", "launch", "dispatch", "stall")


def bound_from_limit(limit: object) -> str:
    if not isinstance(limit, str) or not limit.strip():
        return "unknown"
    low = limit.strip().lower()
    if any(w in low for w in _LATENCY):
        return "latency"
    if any(w in low for w in _MEMORY):
        return "memory"
    if any(w in low for w in _COMPUTE):
        return "compute"
    return "unknown"


def looks_like_roofline_v1(doc: object) -> bool:
    return (
        isinstance(doc, dict)
        and isinstance(doc.get("cases"), list)
        and ("summary" in doc or "status" in doc or "policy" in doc)
    )


def kernel_from_path(path: Path) -> str | None:
    """``.../kernels/<k>/roofline/baseline_roofline.json`` -> ``<k>`` (``_task`` stripped)."""
    parts = path.parts
    if len(parts) >= 3 and parts[-2] == "roofline":
        k = parts[-3]
        if k == "ut" and len(parts) >= 4:
            k = parts[-4]
        return k.removesuffix("_task")
    return None


def phase_of(path: Path) -> str:
    name = path.name.lower()
    if name.startswith("baseline"):
        return "baseline"
    if name.startswith("post"):
        return "post"
    return "other"


def _obj(value: Any) -> dict[str, Any]:
    """A JSON object, or an empty one for anything else."""
    return value if isinstance(value, dict) else {}


def parse_roofline_v1(
    path: Path, doc: dict[str, Any] | None = None
) -> tuple[KernelMeasurement | None, list[str]]:
    data: Any = doc
    if data is None:
        try:
            data = read_json(path)
        except (OSError, ValueError) as exc:
            return None, [f"{path.name}: not JSON ({str(exc)[:80]})"]
    if not looks_like_roofline_v1(data):
        return None, [f"{path.name}: not a roofline-v1 report"]
    status = data.get("status")
    cases = [c for c in data["cases"] if isinstance(c, dict)]
    matched = [c for c in cases if c.get("status", "matched") == "matched"]
    target = _obj(data.get("target"))
    kernel = kernel_from_path(path) or (target.get("logical_name") if target else None)
    if not matched:
        why = data.get("reason") or status or "no cases"
        return None, [f"{path.name}: roofline-v1 has no matched case ({why})"]
    summary = _obj(data.get("summary"))
    dom_id = summary.get("dominant_case_id") if summary else None
    case = next((c for c in matched if dom_id is not None and c.get("case_id") == dom_id), None)
    if case is None:
        case = max(matched, key=lambda c: to_float(c.get("weight")) or 0.0)
    metrics = _obj(case.get("metrics"))
    cls = _obj(case.get("classification"))
    if not cls and summary and isinstance(summary.get("dominant_classification"), dict):
        cls = summary["dominant_classification"]
    kname = case.get("matched_kernel_name") or case.get("kernel")
    if not kernel:
        kernel = kname if isinstance(kname, str) and kname else None
    if not kernel:
        return None, [f"{path.name}: roofline-v1 names no kernel"]
    eff = to_float(metrics.get("roofline_efficiency_pct"))
    head = to_float(metrics.get("headroom_ratio"))
    limit = cls.get("observed_limit")
    problems: list[str] = []
    notes = [f"rocprof-compute roofline-v1 ({phase_of(path)}), case {case.get('case_id')!s}"]
    if status not in (None, "ok"):
        notes.append(f"report status {status}")
    if isinstance(limit, str):
        notes.append(f"observed_limit {limit!r}")
    for key in ("compute_metric", "peak_basis"):
        if isinstance(metrics.get(key), str):
            notes.append(f"{key} {metrics[key]}")
    corroboration = {
        k: f
        for k, v in metrics.items()
        if isinstance(k, str) and (f := to_float(v)) is not None and not isinstance(v, bool)
    }
    missing = [
        k for k, v in (("roofline_efficiency_pct", eff), ("headroom_ratio", head)) if v is None
    ]
    if missing:
        problems.append(f"{path.name}: roofline-v1 case lacks {', '.join(missing)}")
    aliases = [
        a
        for a in (kname, target.get("logical_name") if target else None)
        if isinstance(a, str) and a and a != kernel
    ]
    return (
        KernelMeasurement(
            kernel=kernel,
            dispatches=0,
            bytes_per_dispatch=None,
            flops_per_dispatch=None,
            flops_dtype=None,
            duration_s=None,
            corroboration=corroboration,
            missing=missing,
            source="roofline-v1",
            path=str(path),
            notes=notes,
            aliases=aliases,
            roofline_pct=eff / 100.0 if eff is not None else None,
            attainable_speedup=head,
            bound_type=bound_from_limit(limit) if limit is not None else None,
        ),
        problems,
    )
