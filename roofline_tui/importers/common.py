"""Shared pieces of the importers: the error type, kernel-name classification and the Top-N
document builder/writer (schema of input-formats.md §1a, the "serving-phase" variant)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roofline_tui.core import units
from roofline_tui.core.extension import EXTENSION_KEY, EXTENSION_VERSION
from roofline_tui.core.lazy_re import lazy_compile
from roofline_tui.core.names import short_name_of as short_name
from roofline_tui.core.store import atomic_write_pair, strict_json_dumps
from roofline_tui.core.textsafe import md_cell, printable
from roofline_tui.importers.instances import InstanceAgg as InstanceAgg  # its home; re-exported
from roofline_tui.importers.instances import entry_extension

TOPN_JSON = "profile_topN.json"
TOPN_MD = "profile_topN.md"
DEFAULT_TOP = 25
MAX_SHAPES = 5
MAX_DTYPES = 8


class ImportProblem(Exception):
    """The input cannot be turned into a complete Top-N; ``str(exc)`` is one user-facing line."""

    def __init__(self, message: str) -> None:
        one_line = " ".join(str(message).split())
        super().__init__(one_line)
        self.message = one_line


# --------------------------------------------------------------------------------------------
# Classification.  The order follows input-formats.md §1a (first match wins), preceded by the
# snake_case JIT guard.  Two documented extensions sit in front of it:
#   * collectives (NCCL/RCCL, vLLM custom all-reduce) are "other", backend "unknown", not
#     editable — the §1a list would otherwise call ncclDevKernel_AllReduce_* a reduction_norm;
#   * NVIDIA library GEMMs (sm90_xmma_gemm_*, nvjet_*, ampere_*gemm*) are library_gemm; without
#     this the snake_case guard would wrongly call sm90_xmma_gemm_..._kernel editable Triton.
# backend_guess for NVIDIA libraries is "cublas" / "cutlass" (the §1a list only names AMD ones).
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Classified:
    classification: str
    backend_guess: str
    editable: bool
    opt_hint: str


_I = re.IGNORECASE

_MEMORY_NAME = lazy_compile(r"^\s*(memcpy|memset)\b|\b(DtoH|HtoD|DtoD|HtoH|PtoP)\b", _I)
_COLLECTIVE = lazy_compile(
    r"nccl|rccl|cross_device_reduce|custom_?all_?reduce|all_?reduce_|allgather|all_gather|"
    r"reduce_?scatter|alltoall|all_to_all|sendrecv",
    _I,
)
_CUDNN = lazy_compile(r"cudnn", _I)
_NV_GEMM = lazy_compile(
    r"^(void\s+)?(sm\d+_xmma_|nvjet_|(ampere|volta|turing|hopper|blackwell|maxwell)_\w*gemm|"
    r"cublas|cublaslt|gemmk?\d*_|gemv2?[NT]_kernel)",
    _I,
)
# lower-case vendor library symbols that end in ``_kernel`` but are not source-editable
_LIBRARY_PREFIX = lazy_compile(
    r"^(void\s+)?(rocblas|hipblaslt|tensile|miopen|cublas\w*|cutlass|nvjet|sm\d+_xmma)_", _I
)
_KERNEL_WORD = lazy_compile(r"_kernel", _I)
_SNAKE = lazy_compile(r"^[a-z0-9_]+$")
_FWD_BWD = lazy_compile(r"_fwd_kernel|_bwd_kernel", _I)
# attention built on CUTLASS/CuTe (xformers / PyTorch mem-efficient ``fmha_cutlassF_*``,
# FlashAttention-2 ``flash_fwd_splitkv_kernel<…cutlass::bfloat16_t…>``, FA3's
# ``cutlass::device_kernel<flash::FlashAttnFwdSm90…>``): its ``cutlass`` is not a GEMM's
_CUTLASS_ATTN = lazy_compile(r"fmha|flash_?attn|flash_fwd|flash_bwd|attention", _I)

_ATTN_HINT = "Attention kernel: try another attention backend for this shape."
_RULES: tuple[tuple[re.Pattern[str], str, str, bool, str], ...] = tuple(
    (lazy_compile(rx, _I), cls, backend, editable, hint)
    for rx, cls, backend, editable, hint in (
        (r"triton|_kernel_0d1d|tt\.|fused_.*kernel", "triton", "triton", True,
         "Triton kernel: extractable; tune its configs or rewrite if it sits far from its roof."),
        (r"Cijk|Tensile|hipblaslt|rocblas|miopen|cublas|cutlass|GemmEx|\bhgemm\b|\bsgemm\b|"
         r"\bf16_gemm\b|\bigemm\b|xmma_gemm|nvjet", "library_gemm", "hipblaslt", False,
         "Library GEMM: tune through the library's heuristics/env or swap the GEMM backend."),
        (r"aiter|ater::", "fused_custom", "aiter", True,
         "AITER kernel: has source; compare aiter, triton and CK for this shape."),
        (r"flash|fmha|attention|attn|_mha_|paged|kv_cache|decode_attention|prefill",
         "library_attn", "ck", False, _ATTN_HINT),
        (r"ck_|composable_kernel|CK::|ck::", "fused_custom", "ck", True,
         "Composable Kernel: compare CK instances/configs for this shape."),
        (r"mamba|ssm|causal_conv|selective_scan|chunk_scan|chunk_fwd|chunk_gated|gated_delta|"
         r"delta_rule|state_passing|recompute_w|kkt_solve|l2norm|cumsum", "fused_custom",
         "triton", True, "Linear-attention/SSM kernel (hybrid model): tune the scan tiling."),
        (r"rms_?norm|layernorm|layer_norm|_norm_|rope|rotary|softmax|reduce|reduction",
         "reduction_norm", "triton", True,
         "Norm/rope/softmax/reduction: often fusible into a neighbour."),
        (r"silu|gelu|swiglu|act_and_mul|activation|elementwise|FillFunctor|fill_|copy_|cast|"
         r"vectorized_elementwise|index_elementwise|scatter|gather|add_|mul_",
         "elementwise_overhead", "torch_native", True,
         "Elementwise/fill/cast: a fusion candidate to collapse launches."),
        (r"memcpy|memset|DtoH|HtoD|DtoD", "memory", "torch_native", False,
         "Memory op: cut host round trips and layout copies."),
    )
)


def _looks_cpp(name: str) -> bool:
    return name.startswith("void ") or "::" in name or "(" in name or "<" in name


def guess_kernel_source(name: str) -> Classified:
    """Where a kernel comes from, guessed from its name alone: the Top-N classification
    (triton, library GEMM, torch native ...), the backend, whether its source is editable, and
    a hint. Not the op class (``core.classify.classify`` decides that for the analysis)."""
    name = name or ""
    if _MEMORY_NAME.search(name):
        return Classified("memory", "torch_native", False,
                          "Memory op: cut host round trips and layout copies.")
    if _COLLECTIVE.search(name):
        return Classified("other", "unknown", False,
                          "Collective communication: tune the comm backend / overlap, not source.")
    if _CUDNN.search(name) and not _NV_GEMM.search(name):
        return Classified("other", "unknown", False,
                          "cuDNN kernel: pick another algorithm/layout; not source-editable.")
    if _NV_GEMM.search(name):
        backend = "cutlass" if "cutlass" in name.lower() else "cublas"
        return Classified("library_gemm", backend, False,
                          "Library GEMM (cuBLAS/cuBLASLt): tune via heuristics or swap backend.")
    m = _KERNEL_WORD.search(name)
    snake_jit = bool(m and _SNAKE.match(name[: m.end()])) or bool(
        _FWD_BWD.search(name) and not _looks_cpp(name))
    # a whole-name snake_case symbol that mentions "kernel" (e.g. vLLM's Triton
    # kernel_paged_attention_2d) is a @jit kernel as well
    snake_jit = snake_jit or bool(_SNAKE.match(name) and "kernel" in name)
    if snake_jit and not _LIBRARY_PREFIX.match(name):
        return Classified("triton", "triton", True,
                          "Snake_case JIT kernel (likely Triton): extractable; tune or compare.")
    for rx, cls, backend, editable, hint in _RULES:
        if rx.search(name):
            if cls == "library_gemm" and _CUTLASS_ATTN.search(name):
                return Classified("library_attn", "cutlass", False, _ATTN_HINT)
            if cls == "library_gemm":
                low = name.lower()
                if "cutlass" in low:
                    backend = "cutlass"
                elif "cublas" in low:
                    backend = "cublas"
                elif "rocblas" in low:
                    backend = "rocblas"
            if backend == "triton" and _looks_cpp(name):
                # a C++ signature is a compiled kernel, not a Triton @jit body
                backend = "torch_native" if "at::" in name else "unknown"
            return Classified(cls, backend, editable, hint)
    return Classified("other", "unknown", True, "Unclassified: inspect the source to route it.")


# --------------------------------------------------------------------------------------------
# Aggregation and the Top-N document.
# --------------------------------------------------------------------------------------------


@dataclass
class PhaseAgg:
    count: int = 0
    total_us: float = 0.0
    m_hist: dict[int, int] = field(default_factory=dict)


@dataclass
class KernelAgg:
    name: str
    calls: int = 0
    # set when the name alone would not tell this entry apart (a MoE kernel split by stage)
    short_name: str | None = None
    total_us: float = 0.0
    shapes: list[Any] = field(default_factory=list)
    dtypes: list[str] = field(default_factory=list)
    by_phase: dict[str, PhaseAgg] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    instances: list[InstanceAgg] = field(default_factory=list)

    def add(self, dur_us: float, calls: int = 1) -> None:
        self.calls += calls
        self.total_us += dur_us


@dataclass
class ServingInfo:
    """Step accounting from ``execute_*`` annotations (see importers.torch.step_join for the rule)."""

    n_prefill_steps: int
    n_decode_steps: int
    decode_batches: list[int]
    # per-phase step aggregates (importers.steps.phase_aggregates), when the labels have them
    phases: dict[str, Any] = field(default_factory=dict)
    families: list[str] = field(default_factory=list)  # step-label families read
    problems: list[str] = field(default_factory=list)  # labels that failed their own checks
    backfilled: list[str] = field(default_factory=list)  # values the labels did not state


def snap_to_capture(value: int, sizes: Iterable[int] | None) -> int:
    ordered = sorted(int(s) for s in (sizes or ()) if int(s) > 0)
    if not ordered or not value:
        return value
    for s in ordered:
        if s >= value:
            return s
    return ordered[-1]


def analytic_calls(isl: int | None, osl: int | None, conc: int | None,
                   chunk: int | None = None) -> dict[str, int]:
    """prefill = conc*ceil(isl/chunk), decode = osl; ``{}`` without isl and osl."""
    if not isl or not osl:
        return {}
    conc = conc or 1
    chunk = chunk or isl
    return {"prefill": conc * math.ceil(isl / chunk) if isl > 0 else 0, "decode": max(0, osl)}


def _r(value: float, nd: int) -> float:
    out = round(float(value), nd)
    return 0.0 if out == 0 else out


def build_topn(
    aggs: Iterable[KernelAgg],
    *,
    source: str,
    total_us: float,
    launches: int,
    top: int = DEFAULT_TOP,
    serving: ServingInfo | None = None,
    isl: int | None = None,
    osl: int | None = None,
    conc: int | None = None,
    capture_sizes: Iterable[int] | None = None,
    extra: dict[str, Any] | None = None,
    notes: Iterable[str] = (),
    graph_replay: dict[str, Any] | None = None,
    extension: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``profile_topN.json`` document; raises :class:`ImportProblem` when it would be empty."""
    items = [a for a in aggs if a.calls > 0]
    if not items:
        raise ImportProblem("no GPU kernel events found")
    if not (total_us > 0 and math.isfinite(total_us)):
        raise ImportProblem("total GPU time is zero or not a number; nothing to rank")
    items.sort(key=lambda a: (-a.total_us, a.name))
    est = analytic_calls(isl, osl, conc)
    top_kernels: list[dict[str, Any]] = []
    for rank, agg in enumerate(items[: max(1, top)], 1):
        c = guess_kernel_source(agg.name)
        entry: dict[str, Any] = {
            "rank": rank,
            "name": agg.name,
            "short_name": agg.short_name or short_name(agg.name),
            "calls": agg.calls,
            "total_ms": _r(agg.total_us / 1000.0, 4),
            "avg_us": _r(agg.total_us / max(agg.calls, 1), 3),
            "pct_gpu_time": _r(100.0 * agg.total_us / total_us, 2),
            "shapes": list(agg.shapes[:MAX_SHAPES]),
            "dtypes": list(agg.dtypes[:MAX_DTYPES]),
            "classification": c.classification,
            "backend_guess": c.backend_guess,
            "editable": c.editable,
            "opt_hint": c.opt_hint,
        }
        if serving is not None:
            entry.update(_phase_fields(agg, serving, conc, capture_sizes, est))
        if agg.notes:
            entry["notes"] = list(agg.notes)
        if agg.instances:
            entry[EXTENSION_KEY] = entry_extension(agg.instances, agg.total_us)
        top_kernels.append(entry)
    doc: dict[str, Any] = {
        "source": source,
        "total_gpu_time_ms": _r(total_us / 1000.0, 4),
        "num_kernel_launches": int(launches),
        "num_distinct_kernels": len(items),
        "top_kernels": top_kernels,
    }
    if serving is not None:
        doc["serving"] = _serving_block(serving, conc, capture_sizes, est)
    notes = [n for n in notes if n]
    if notes:
        doc["notes"] = notes
    if graph_replay:
        doc["graph_replay"] = graph_replay
    if extension:
        doc[EXTENSION_KEY] = {"version": EXTENSION_VERSION, **extension}
    if extra:
        for key, value in extra.items():
            doc.setdefault(key, value)
    return doc


def _serving_block(serving: ServingInfo, conc: int | None, capture_sizes: Iterable[int] | None,
                   est: dict[str, int]) -> dict[str, Any]:
    batches = serving.decode_batches
    captured = 0
    if batches:
        counts: dict[int, int] = {}
        for b in batches:
            counts[b] = counts.get(b, 0) + 1
        captured = max(sorted(counts), key=lambda b: counts[b])
    steady = bool(captured and conc and captured >= 0.8 * conc)
    if steady:
        note = "decode captured at steady batch — per-launch time trustworthy"
    elif not conc:
        note = "concurrency not given (--conc): steadiness of the decode window unknown"
    else:
        note = (f"decode batch {captured} << concurrency {conc}: counts ok, per-launch time "
                "biased low; prefer a steady-state profile before trusting decode %GPU")
    return {
        "n_prefill_steps": serving.n_prefill_steps,
        "n_decode_steps": serving.n_decode_steps,
        "decode_batch_captured": captured,
        "decode_batch_steady": snap_to_capture(conc, capture_sizes) if conc else 0,
        "steady": steady,
        "analytic_calls": dict(est),
        "note": note,
        **_step_records(serving),
    }


def _step_records(serving: ServingInfo) -> dict[str, Any]:
    """The serving block's additions from the step labels: per-phase aggregates, the label
    families read, and what the labels did not state or failed to check."""
    out: dict[str, Any] = {}
    if serving.phases:
        out["phases"] = serving.phases
    if serving.families:
        out["step_labels"] = list(serving.families)
    if serving.backfilled:
        out["backfilled"] = list(serving.backfilled)
    if serving.problems:
        out["label_problems"] = list(serving.problems)
    return out


def _phase_fields(agg: KernelAgg, serving: ServingInfo, conc: int | None,
                  capture_sizes: Iterable[int] | None, est: dict[str, int]) -> dict[str, Any]:
    phases = [p for p in ("prefill", "decode") if agg.by_phase.get(p) and agg.by_phase[p].count]
    if not phases:
        return {}
    steps = {"prefill": serving.n_prefill_steps, "decode": serving.n_decode_steps}
    out: dict[str, Any] = {
        "phase": phases[0] if len(phases) == 1 else "both",
        "served_regimes": phases,
        "phase_calls_measured": {p: agg.by_phase[p].count for p in phases},
        "calls_per_step": {p: _r(agg.by_phase[p].count / max(steps[p], 1), 2) for p in phases},
        "base_latency_ms": {
            p: _r(agg.by_phase[p].total_us / agg.by_phase[p].count / 1000.0, 6) for p in phases
        },
    }
    shape: dict[str, Any] = {}
    if "prefill" in phases:
        hist = agg.by_phase["prefill"].m_hist
        if hist:
            ordered = sorted(hist.items(), key=lambda kv: (-kv[1], kv[0]))
            shape["prefill"] = {"M": ordered[0][0],
                                "M_dist": {str(m): n for m, n in ordered[:5]}}
    if "decode" in phases:
        shape["decode"] = {
            "M": snap_to_capture(conc, capture_sizes) if conc else None,
            "M_note": "concurrency snapped to cudagraph capture size (CUDA-graph-hidden)",
        }
    out["est_shape"] = shape
    if est:
        out["est_calls"] = {p: est[p] for p in phases if p in est}
    return out


def to_markdown(doc: dict[str, Any]) -> str:
    lines = [f"# Profile Top-{len(doc['top_kernels'])} — standardized summary", ""]
    lines.append(f"- source: `{md_cell(doc['source'])}`")
    lines.append(f"- total GPU time: **{units.millis(doc['total_gpu_time_ms'])}** over "
                 f"{doc['num_kernel_launches']} launches, {doc['num_distinct_kernels']} distinct "
                 "kernels")
    sv = doc.get("serving")
    if sv:
        lines.append(f"- serving phase: {sv['n_prefill_steps']} prefill + {sv['n_decode_steps']} "
                     f"decode steps; decode batch captured={sv['decode_batch_captured']} "
                     f"steady={sv['decode_batch_steady']} "
                     f"(**{'STEADY' if sv['steady'] else 'NOT steady'}**); "
                     f"analytic_calls={sv['analytic_calls']}")
    for note in doc.get("notes", []):
        lines.append(f"- note: {md_cell(note)}")
    lines.append("")
    lines.append("| # | kernel | class | backend | edit | phase | calls | total ms | %gpu | avg us "
                 "| shapes |")
    lines.append("|--|--|--|--|--|--|--|--|--|--|--|")
    for k in doc["top_kernels"]:
        sh = "; ".join(json.dumps(s) for s in k["shapes"][:2])
        sh = sh[:60] + "…" if len(sh) > 61 else sh
        lines.append(
            f"| {k['rank']} | `{md_cell(k['short_name'], limit=60)}` | {k['classification']} | "
            f"{k['backend_guess']} | {'Y' if k['editable'] else 'N'} | {k.get('phase', '?')} | "
            f"{k['calls']} | {units.fixed(k['total_ms'], 3)} | {units.fixed(k['pct_gpu_time'], 2)} | "
            f"{units.fixed(k['avg_us'], 1)} | "
            f"`{md_cell(sh)}` |"
        )
    ext = doc.get(EXTENSION_KEY)
    if isinstance(ext, dict) and ext.get("ranks"):
        from roofline_tui.importers.spread import markdown_lines  # several ranks or GPUs

        lines.extend(markdown_lines(doc))
    return "\n".join(lines) + "\n"


def write_round(doc: dict[str, Any], out_dir: Path) -> Path:
    """Write ``profile_topN.json`` and ``.md`` into ``out_dir`` as a pair (both replaced or
    neither); returns the JSON path."""
    out_dir = Path(out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ImportProblem(
            f"cannot create output directory {printable(out_dir)}: {exc.strerror or exc}"
        ) from None
    if not out_dir.is_dir():
        raise ImportProblem(f"output path {printable(out_dir)} is not a directory")
    text = strict_json_dumps(doc, indent=2, ensure_ascii=False) + "\n"
    try:
        atomic_write_pair([(out_dir / TOPN_MD, to_markdown(doc)), (out_dir / TOPN_JSON, text)])
    except OSError as exc:
        raise ImportProblem(f"cannot write into {printable(out_dir)}: "
                            f"{printable(getattr(exc, 'strerror', None) or exc)}") from None
    return out_dir / TOPN_JSON
