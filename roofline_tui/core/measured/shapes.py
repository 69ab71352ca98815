"""Stage B: the Kernel Extractor's task directories (``<EVAL_DIR>/kernels/<kernel>_task/``).

``meta.json`` comes in three real layouts (input-formats.md §3a):

* ``raw-capture``: ``capture_shapes.py`` output; ``shape_counts[]`` is the call histogram
  (``count`` per signature), joined by ``sig`` to ``cases[]`` for regime and geometry;
* ``geak-op-task-v1``: ``cases[].input_shapes`` plus ``geometry``; weights from the workload;
* ``moe-op-meta``: ``num_experts``/``top_k``/``hidden_size``/``intermediate_size_per_tp``,
  M buckets, an embedded ``workload`` and per-case smoke timings.

``workload.json`` (``workload-v1``) gives per-case ``count``, ``weight`` and, when present,
``baseline_latency_ms``; ``regime.json`` gives the quantisation and KV dtypes. A meta.json in
none of the layouts still loads (``workload-only``) when a workload supplies the cases.

``ShapeCase.count`` is the call count when the files give one (``params["count_basis"] ==
"calls"``); otherwise it is the workload's ``weight_norm`` (``"weight_norm"``) or 0 (``"none"``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from roofline_tui.core.lazy_re import lazy_compile

from ..dtypes import canonical_dtype
from ..layout import discover_task_dirs  # noqa: F401 - re-exported: public API
from ._util import as_int, int_list, read_json, shape_list, to_float
from .models import CapturedShapes, MoEParams, ShapeCase
from .names import best_match

_TENSOR_SIG = lazy_compile(r"T\(([\d,\s]*)\)")
_MOE_SIG = lazy_compile(r"m(\d+)[_-](decode|prefill)", re.IGNORECASE)
_CASE_SKIP = {
    "sig",
    "name",
    "regime",
    "input_shapes",
    "input_dtypes",
    "dims",
    "dtypes",
    "count",
    "weight",
    "weight_source",
    "weight_norm",
    "quant",
    "source",
    "timing",
}


def _load_json(path: Path, problems: list[str]) -> object | None:
    if not path.is_file():
        return None
    try:
        return read_json(path)
    except (OSError, ValueError) as exc:
        problems.append(f"{path.name}: not valid JSON ({str(exc)[:80]})")
        return None


def _dtypes(values: object) -> list[str]:
    if isinstance(values, str):
        values = [values]
    if not isinstance(values, list):
        return []
    return [canonical_dtype(v) or v for v in values if isinstance(v, str) and v]


def _scalars(d: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if k in _CASE_SKIP or not isinstance(k, str):
            continue
        if (
            isinstance(v, (int, float, str, bool))
            or v is None
            or isinstance(v, list)
            and len(v) <= 16
            and all(isinstance(x, (int, float)) for x in v)
        ):
            out[k] = v
    return out


def _shapes_from_sig(sig: object) -> list[list[int]]:
    if not isinstance(sig, str):
        return []
    shapes = []
    for m in _TENSOR_SIG.finditer(sig):
        dims = [int(x) for x in re.findall(r"\d+", m.group(1))]
        shapes.append(dims)
    return shapes


def _count(c: dict[str, Any]) -> tuple[float, str]:
    n = to_float(c.get("count"))
    if n is not None and n >= 0:
        return n, "calls"
    w = to_float(c.get("weight_norm"))
    if w is not None and w >= 0:
        return w, "weight_norm"
    return 0.0, "none"


def _latency(c: dict[str, Any]) -> float | None:
    for key in ("baseline_latency_ms", "latency_ms", "baseline_ms", "t_ms"):
        v = to_float(c.get(key))
        if v is not None and v > 0:
            return v
    return None


def _workload_case(
    c: dict[str, Any], meta_case: dict[str, Any] | None, geometry: dict[str, Any]
) -> ShapeCase:
    meta_case = meta_case or {}
    count, basis = _count(c)
    latency = _latency(c) or _latency(meta_case)
    weight = to_float(c.get("weight"))
    if latency is None and basis == "calls" and count > 0 and weight and weight > 0:
        latency = weight / count / 1000.0  # profile_workload: weight = count x latency (us)
    shapes = (
        shape_list(c.get("dims"))
        or shape_list(c.get("input_shapes"))
        or shape_list(meta_case.get("input_shapes"))
        or _shapes_from_sig(meta_case.get("sig"))
    )
    params = {**geometry, **_scalars(meta_case), "count_basis": basis}
    m = None
    for source, key in (
        (c, "m"),
        (meta_case, "m"),
        (c, "bs"),
        (meta_case, "bs"),
        (meta_case, "batch_size"),
    ):
        m = as_int(source.get(key))
        if m is not None:
            break
    return ShapeCase(
        regime=c.get("regime")
        if isinstance(c.get("regime"), str)
        else meta_case.get("regime")
        if isinstance(meta_case.get("regime"), str)
        else None,
        input_shapes=shapes,
        dtypes=_dtypes(c.get("dtypes") or c.get("input_dtypes") or meta_case.get("input_dtypes")),
        count=count,
        latency_ms=latency,
        m=m,
        name=c.get("name") if isinstance(c.get("name"), str) else None,
        params=params,
        weight=weight,
        weight_source=c.get("weight_source") if isinstance(c.get("weight_source"), str) else None,
    )


def _workload_cases(workload: dict[str, Any] | None) -> list[dict[str, Any]]:
    if not isinstance(workload, dict) or not isinstance(workload.get("cases"), list):
        return []
    return [c for c in workload["cases"] if isinstance(c, dict)]


def _first_dtype(*values: object) -> str | None:
    for v in values:
        c = canonical_dtype(v)
        if c:
            return c
    return None


def _kernel_names(
    meta: dict[str, Any], workload: dict[str, Any] | None, task_dir: Path
) -> list[str]:
    d = task_dir.parent if task_dir.name == "ut" else task_dir
    dir_name = d.name.removesuffix("_task")
    if "__" in dir_name:
        dir_name = dir_name.rsplit("__", 1)[-1]
    wl = workload or {}
    names = [
        meta.get("device_kernel"),
        meta.get("name"),
        meta.get("short_name"),
        wl.get("kernel"),
        wl.get("name_match"),
        dir_name,
        meta.get("attr"),
    ]
    return list(dict.fromkeys(n for n in names if isinstance(n, str) and n.strip()))


def load_task_dir(task_dir: Path) -> tuple[CapturedShapes | None, list[str]]:
    """Read one task directory. Returns ``(None, [reason])`` when it has no usable meta.json;
    never raises."""
    task_dir = Path(task_dir)
    try:
        return _load_task_dir(task_dir)
    except Exception as exc:  # noqa: BLE001 - L5: never fail the run
        return None, [f"{task_dir.name}: could not load task ({type(exc).__name__}: {exc})"]


def _load_task_dir(task_dir: Path) -> tuple[CapturedShapes | None, list[str]]:
    problems: list[str] = []
    label = task_dir.parent.name if task_dir.name == "ut" else task_dir.name
    meta_path = task_dir / "meta.json"
    if not meta_path.is_file():
        return None, [f"{label}: no meta.json; captured shapes unavailable"]
    meta = _load_json(meta_path, problems)
    if not isinstance(meta, dict):
        return None, problems or [f"{label}: meta.json is not a JSON object"]
    workload = _task_workload(meta, task_dir, problems)
    regime = _task_regime(meta, workload, task_dir, problems)
    notes: list[str] = []

    layout = _task_layout(meta, workload)
    if layout is None:
        reason = f"{label}: meta.json is in no known layout and no workload gives cases"
        return None, [*problems, reason]

    cases, moe = _layout_cases(layout, meta, workload, problems, notes)
    if not cases:
        problems.append(f"{label}: meta.json has no shape cases")
    _note_count_basis(cases, notes)
    weight_dtype, act_dtype, kv_dtype = _task_dtypes(meta, workload, regime, notes)
    if moe is not None and moe.weight_dtype is None:
        moe.weight_dtype = weight_dtype

    names = _kernel_names(meta, workload, task_dir)
    kernel = names[0] if names else label
    served = (
        meta.get("served_regimes")
        or meta.get("regimes_covered")
        or (workload or {}).get("served_regimes")
        or []
    )
    op_kind = meta.get("op_kind") or (workload or {}).get("op_kind")
    shapes = CapturedShapes(
        kernel=kernel,
        task_dir=str(task_dir),
        layout=layout,
        op_kind=op_kind if isinstance(op_kind, str) else None,
        cases=cases,
        moe=moe,
        weight_dtype=weight_dtype,
        activation_dtype=act_dtype,
        kv_dtype=kv_dtype,
        served_regimes=[s for s in served if isinstance(s, str)]
        if isinstance(served, list)
        else [],
        aliases=names[1:],
        notes=notes,
        problems=problems,
    )
    return shapes, list(problems)


def _task_workload(
    meta: dict[str, Any], task_dir: Path, problems: list[str]
) -> dict[str, Any] | None:
    """The task's workload: ``workload.json`` when it is an object, else meta's ``workload``."""
    wl_file = _load_json(task_dir / "workload.json", problems)
    workload = (
        wl_file
        if isinstance(wl_file, dict)
        else (meta.get("workload") if isinstance(meta.get("workload"), dict) else None)
    )
    if wl_file is not None and not isinstance(wl_file, dict):
        problems.append("workload.json is not a JSON object; ignored")
    return workload


def _task_regime(
    meta: dict[str, Any], workload: dict[str, Any] | None, task_dir: Path, problems: list[str]
) -> dict[str, Any]:
    """The serving regime: ``regime.json``, else meta's ``regime``, else the workload's."""
    rg_file = _load_json(task_dir / "regime.json", problems)
    regime_raw = (
        rg_file
        if isinstance(rg_file, dict)
        else (
            meta.get("regime")
            if isinstance(meta.get("regime"), dict)
            else (workload or {}).get("regime")
        )
    )
    return regime_raw if isinstance(regime_raw, dict) else {}


def _task_layout(meta: dict[str, Any], workload: dict[str, Any] | None) -> str | None:
    """Which known task layout ``meta`` follows; None when it is none of them."""
    if "shape_counts" in meta or ("target" in meta and "attr" in meta):
        return "raw-capture"
    if meta.get("schema") == "geak-op-task-v1":
        return "geak-op-task-v1"
    if "num_experts" in meta and "top_k" in meta:
        return "moe-op-meta"
    if _workload_cases(workload):
        return "workload-only"
    return None


def _layout_cases(
    layout: str,
    meta: dict[str, Any],
    workload: dict[str, Any] | None,
    problems: list[str],
    notes: list[str],
) -> tuple[list[ShapeCase], MoEParams | None]:
    """The shape cases of a task in ``layout`` (and its MoE parameters for a MoE task)."""
    meta_cases = (
        [c for c in meta.get("cases", []) if isinstance(c, dict)]
        if isinstance(meta.get("cases"), list)
        else []
    )
    by_name: dict[str, dict[str, Any]] = {}
    for c in meta_cases:
        for key in ("name", "sig"):
            if isinstance(c.get(key), str):
                by_name.setdefault(c[key], c)
    geometry = _scalars(meta["geometry"]) if isinstance(meta.get("geometry"), dict) else {}
    wl_cases = _workload_cases(workload)
    if layout == "raw-capture":
        return _raw_capture_cases(meta, meta_cases, by_name, wl_cases, problems), None
    if layout in ("geak-op-task-v1", "workload-only"):
        return _op_task_cases(meta_cases, by_name, wl_cases, geometry, notes), None
    return _moe_meta_cases(meta, meta_cases, wl_cases, notes)


def _op_task_cases(
    meta_cases: list[dict[str, Any]],
    by_name: dict[str, dict[str, Any]],
    wl_cases: list[dict[str, Any]],
    geometry: dict[str, Any],
    notes: list[str],
) -> list[ShapeCase]:
    """Cases of an op task: the workload's cases, else meta's own (without call counts)."""
    if wl_cases:
        cases = [_workload_case(c, by_name.get(str(c.get("name"))), geometry)
                 for c in wl_cases]
        unknown = [c.get("name") for c in wl_cases if c.get("name") not in by_name]
        if meta_cases and unknown:
            notes.append(f"{len(unknown)} workload case(s) not in meta cases")
        return cases
    cases = [
        _workload_case(
            {
                "regime": c.get("regime"),
                "name": c.get("name") or c.get("sig"),
                "m": c.get("m") or c.get("bs"),
            },
            c,
            geometry,
        )
        for c in meta_cases
    ]
    if cases:
        notes.append("no workload: cases carry no call counts")
    return cases


def _moe_meta_cases(
    meta: dict[str, Any],
    meta_cases: list[dict[str, Any]],
    wl_cases: list[dict[str, Any]],
    notes: list[str],
) -> tuple[list[ShapeCase], MoEParams | None]:
    """Cases of a MoE op task, shapes and timings filled in from meta where missing."""
    moe = _moe_params(meta)
    timings = _moe_timings(meta)
    if wl_cases:
        src = wl_cases
    else:
        src = [
            {"name": c.get("sig"), "m": c.get("m"), "regime": c.get("regime")}
            for c in meta_cases
        ]
        notes.append("no workload: cases carry no call counts")
    cases: list[ShapeCase] = []
    for c in src:
        case = _workload_case(c, None, {})
        if not case.input_shapes and case.m is not None:
            case.input_shapes = _moe_shapes(meta, case.m)
        if case.latency_ms is None and case.m is not None:
            t = timings.get((case.m, case.regime)) or timings.get((case.m, None))
            if t is not None:
                case.latency_ms = t
                case.params["latency_source"] = "smoke_detail.baseline_ms"
        cases.append(case)
    return cases, moe


def _note_count_basis(cases: list[ShapeCase], notes: list[str]) -> None:
    """Say what ``ShapeCase.count`` holds when no case carries a call count."""
    if cases and all(c.params.get("count_basis") != "calls" for c in cases):
        if all(c.count == 0 for c in cases):
            notes.append("no case carries a call count or non-zero weight: cases are unweighted")
        else:
            notes.append("no call counts: ShapeCase.count holds weight_norm (relative weight)")


def _task_dtypes(
    meta: dict[str, Any],
    workload: dict[str, Any] | None,
    regime: dict[str, Any],
    notes: list[str],
) -> tuple[str | None, str | None, str | None]:
    """(weight, activation, KV-cache) dtypes from the regime's quant, the workload, meta."""
    quant_raw = regime.get("quant")
    quant: dict[str, Any] = quant_raw if isinstance(quant_raw, dict) else {}
    wquant_raw = (workload or {}).get("quant")
    wquant: dict[str, Any] = wquant_raw if isinstance(wquant_raw, dict) else {}
    compute = _first_dtype(meta.get("compute_dtype"), meta.get("dtype"))
    weight_dtype = _first_dtype(
        quant.get("weight_dtype"), wquant.get("weight_dtype"), meta.get("dtype")
    )
    act_dtype = _first_dtype(quant.get("act_dtype"), wquant.get("act_dtype"), compute)
    kv_raw = regime.get("kv_cache_dtype") or wquant.get("kv_cache_dtype")
    kv_dtype = _first_dtype(kv_raw)
    if kv_dtype is None and isinstance(kv_raw, str) and kv_raw.strip().lower() == "auto":
        kv_dtype = compute
        notes.append(f"kv_cache_dtype 'auto' follows the model dtype: {compute or 'unknown'}")
    return weight_dtype, act_dtype, kv_dtype


def _raw_capture_cases(
    meta: dict[str, Any],
    meta_cases: list[dict[str, Any]],
    by_sig: dict[Any, dict[str, Any]],
    wl_cases: list[dict[str, Any]],
    problems: list[str],
) -> list[ShapeCase]:
    covered = meta.get("regimes_covered")
    only_regime = covered[0] if isinstance(covered, list) and len(covered) == 1 else None
    latency_by_dims = {}
    for c in wl_cases:
        dims = shape_list(c.get("dims"))
        if dims and _latency(c) is not None:
            latency_by_dims[json.dumps(dims)] = _latency(c)
    counts = meta.get("shape_counts")
    out: list[ShapeCase] = []
    if isinstance(counts, list) and counts:
        for sc in counts:
            if not isinstance(sc, dict):
                continue
            case = by_sig.get(sc.get("sig"), {})
            shapes = shape_list(sc.get("input_shapes")) or _shapes_from_sig(sc.get("sig"))
            n = to_float(sc.get("count"))
            params = {**_scalars(case), "count_basis": "calls" if n is not None else "none"}
            m = as_int(case.get("batch_size")) if case else None
            out.append(
                ShapeCase(
                    regime=case.get("regime")
                    if isinstance(case.get("regime"), str)
                    else only_regime,
                    input_shapes=shapes,
                    dtypes=_dtypes(sc.get("input_dtypes")),
                    count=n if n is not None and n >= 0 else 0.0,
                    latency_ms=latency_by_dims.get(json.dumps(shapes)),
                    m=m,
                    name=sc.get("sig") if isinstance(sc.get("sig"), str) else None,
                    params=params,
                )
            )
        total = to_float(meta.get("total_calls_observed"))
        seen = sum(c.count for c in out)
        if total and seen and seen < total:
            problems.append(
                f"shape_counts cover {seen:.0f} of {total:.0f} observed calls "
                "(list trimmed or partial)"
            )
        return out
    for c in meta_cases:
        n = to_float(c.get("observed_calls"))
        out.append(
            ShapeCase(
                regime=c.get("regime") if isinstance(c.get("regime"), str) else only_regime,
                input_shapes=shape_list(c.get("input_shapes")) or _shapes_from_sig(c.get("sig")),
                dtypes=_dtypes([v for k, v in c.items() if k.endswith("_dtype")]),
                count=n if n is not None else 0.0,
                m=as_int(c.get("batch_size")),
                name=c.get("sig") if isinstance(c.get("sig"), str) else None,
                params={**_scalars(c), "count_basis": "calls" if n is not None else "none"},
            )
        )
    return out


def _moe_params(meta: dict[str, Any]) -> MoEParams:
    return MoEParams(
        num_experts=as_int(meta.get("num_experts")),
        top_k=as_int(meta.get("top_k")),
        hidden_size=as_int(meta.get("hidden_size")),
        intermediate_size_per_tp=as_int(meta.get("intermediate_size_per_tp")),
        weight_dtype=canonical_dtype(meta.get("dtype")),
        compute_dtype=canonical_dtype(meta.get("compute_dtype")),
        block_quant_shape=int_list(meta.get("block_quant_shape")),
        m_buckets=int_list(meta.get("m_buckets")) or [],
        decode_m_buckets=int_list(meta.get("decode_m_buckets")) or [],
        prefill_m_buckets=int_list(meta.get("prefill_m_buckets")) or [],
    )


def _moe_shapes(meta: dict[str, Any], m: int) -> list[list[int]]:
    shapes: list[list[int]] = []
    for key in ("a_shape", "b_shape"):
        dims = meta.get(key)
        if isinstance(dims, list):
            resolved = [m if d == "M" else as_int(d) for d in dims]
            known = [d for d in resolved if isinstance(d, int)]
            if len(known) == len(resolved):
                shapes.append(known)
    return shapes


def _moe_timings(meta: dict[str, Any]) -> dict[tuple[int, str | None], float]:
    smoke = meta.get("smoke_detail")
    per_case = smoke.get("per_case") if isinstance(smoke, dict) else None
    out: dict[tuple[int, str | None], float] = {}
    if not isinstance(per_case, list):
        return out
    for c in per_case:
        if not isinstance(c, dict):
            continue
        match = _MOE_SIG.search(str(c.get("sig", "")))
        t = to_float(c.get("baseline_ms"))
        if match and t is not None and t > 0:
            m, regime = int(match.group(1)), match.group(2).lower()
            out[(m, regime)] = t
            out.setdefault((m, None), t)
    return out


def match_task(tasks: list[CapturedShapes], kernel_name: str) -> CapturedShapes | None:
    """The task for a profile kernel name: same rule as ``match_measurement`` (exact, short
    name, prefix) over the task's kernel name and aliases; ties go to the most cases."""
    try:
        return best_match(
            tasks,
            kernel_name,
            names_of=lambda t: [t.kernel, *t.aliases],
            size_of=lambda t: float(len(t.cases)),
        )
    except Exception:  # noqa: BLE001
        return None
