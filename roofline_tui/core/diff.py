"""Two runs compared op by op (issue 33): which logical ops got slower, and is it the kernel, the
hardware or the work?

Kernel names differ across vendors and builds (``Cijk_Alik_Bljk…`` against ``sm90_xmma_gemm…``),
so ops are matched by what the trace recorded of the call that launched them: the **op key**

    <op family> | <module> | <identity dims> | <weight dtype>

* the op family normalises front ends of one computation: ``aten::mm``/``addmm``/``linear``/
  ``matmul`` are ``linear``; SDPA, flash and the engines' attention ops are ``attention``; the
  fused-MoE ops are ``moe``; any other op keeps its name;
* the module is the innermost two ``nn.Module`` names of the launch (``Qwen2MLP/Linear``), or the
  engine's parallel-linear class when that is all the trace recorded;
* the identity dims are those that do not change with the batch: a GEMM's weight dims (K, N),
  otherwise every dim of the first input but its first (token) axis;
* the weight's dtype tells an fp8 projection from a bf16 one.

Each side's time for a key is the sum, over its kernels' recorded instances with that key, of
their GPU time, per step when the side records serving steps (else per trace). Launches with no
op key are matched by kernel name within one vendor only, else counted as unmatched; the share
of each side's GPU time the matched keys cover is stated, and the largest unmatched ops listed.

The **cause** of a matched op's difference:

* ``work``: the bytes or FLOPs per launch differ by more than :data:`WORK_BAND` (different token
  counts, precision or fusion): the times are not comparable as they stand;
* ``hardware``: both sides run at about the same fraction of their own roofs (within
  :data:`SAME_FRACTION`): the gap is the roofs' ratio;
* ``kernel``: one side is much further from its roof: the lever is that side's kernel;
* ``unknown``: a side has no verdict (no roofline %), so the cause cannot be told;
* ``only in A`` / ``only in B``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, Field

from roofline_tui.core.artifact import Artifact, Entry
from roofline_tui.core.empty import empty_list
from roofline_tui.core.inputs import TopN
from roofline_tui.core.lazy_re import lazy_compile
from roofline_tui.core.topn_ext import Instance

WORK_BAND = 0.25  # bytes or FLOPs per launch further apart than this: different work
SAME_FRACTION = 0.25  # roofline % within this (relative) on both sides: the hardware's gap
MAX_UNMATCHED = 10

Cause = Literal["work", "hardware", "kernel", "unknown", "only in A", "only in B"]

_LINEAR = lazy_compile(r"^aten::(?:mm|addmm|linear|matmul|bmm|_scaled_mm)$")
_ATTENTION = lazy_compile(
    r"scaled_dot_product|flash_attention|_efficient_attention|attention|attn|paged_attention",
)
_MOE = lazy_compile(r"moe|fused_experts|expert")
_VENDOR_NV = lazy_compile(r"^(?:void )?(?:sm\d+_|ampere_|hopper_|nvjet|cutlass|cublas)|"
                          r"\bnvidia\b", )
_VENDOR_AMD = lazy_compile(r"^(?:void )?(?:Cijk_|ck_|_ZN2ck|aiter|.*_mfma)")


def op_family(op: str | None) -> str | None:
    """The launching op's family (module docstring); None without an op."""
    if not op:
        return None
    if _LINEAR.match(op):
        return "linear"
    low = op.lower()
    if _MOE.search(low):
        return "moe"
    if _ATTENTION.search(low):
        return "attention"
    return op


def op_key(inst: Instance) -> str | None:
    """The instance's op key (module docstring), or None when it recorded no launching op."""
    family = op_family(inst.op)
    if family is None:
        return None
    module = "/".join((inst.module or "").split("/")[-2:]) or "-"
    weights = inst.tensors("weight")
    if weights:
        dims, dtype = weights[0]
    else:
        inputs = inst.tensors("input")
        dims, dtype = (inputs[0][0][1:], inputs[0][1]) if inputs else ([], None)
    shape = "x".join(str(d) for d in dims) or "-"
    return f"{family}|{module}|{shape}|{dtype or '-'}"


def vendor_of(name: str) -> str | None:
    if _VENDOR_AMD.search(name):
        return "amd"
    if _VENDOR_NV.search(name):
        return "nvidia"
    return None


class DiffSide(BaseModel):
    """One side's view of a matched op."""

    time_us: float = Field(description="GPU time of the op, per step (per trace without steps)")
    kernels: list[str] = Field(default_factory=empty_list, description="entries' short names")
    roofline_pct: float | None = None
    bound_type: str | None = None
    attainable_speedup: float | None = None
    bytes_per_launch: float | None = None
    flops_per_launch: float | None = None


class DiffRow(BaseModel):
    key: str = Field(description="the op key (or 'kernel:<name>' matched by name)")
    a: DiffSide | None = None
    b: DiffSide | None = None
    ratio: float | None = Field(default=None, description="B's time over A's")
    delta_us: float = Field(description="B's time minus A's (what this op explains)")
    cause: Cause
    why: str = ""


class DiffTotals(BaseModel):
    a_time_us: float
    b_time_us: float
    a_matched_share: float
    b_matched_share: float
    basis: str = Field(description="per step | per trace")


class Diff(BaseModel):
    """``roofline diff A B``: logical ops matched by key, with each side's time and verdict."""

    a: str
    b: str
    rows: list[DiffRow] = Field(default_factory=empty_list)
    totals: DiffTotals
    unmatched_a: list[DiffRow] = Field(default_factory=empty_list)
    unmatched_b: list[DiffRow] = Field(default_factory=empty_list)
    notes: list[str] = Field(default_factory=empty_list)


@dataclass
class _Op:
    time_us: float = 0.0
    entries: dict[str, float] = field(default_factory=dict)  # short name -> time


def _steps(topn: TopN) -> int:
    s = topn.serving
    n = (s.n_decode_steps or 0) + (s.n_prefill_steps or 0) if s is not None else 0
    return n if n > 0 else 1


def _ops(topn: TopN, vendor: str | None) -> tuple[dict[str, _Op], float]:
    """Per op key the GPU time (per step) and the entries behind it; the side's GPU time."""
    per = float(_steps(topn))
    ops: dict[str, _Op] = {}
    total = 0.0
    for e in topn.entries:
        e_us = (e.total_ms or 0.0) * 1000.0
        total += e_us
        keyed = 0.0
        for inst in (e.ext.instances if e.ext is not None else []):
            key = op_key(inst)
            if key is None:
                continue
            op = ops.setdefault(key, _Op())
            op.time_us += inst.total_us / per
            op.entries[e.short_name] = op.entries.get(e.short_name, 0.0) + inst.total_us / per
            keyed += inst.total_us
        rest = e_us - keyed
        if rest > 0.01 * max(e_us, 1e-9):  # launches with no op key: by name, one vendor
            key = f"kernel:{vendor or '?'}:{e.short_name}"
            op = ops.setdefault(key, _Op())
            op.time_us += rest / per
            op.entries[e.short_name] = op.entries.get(e.short_name, 0.0) + rest / per
    return ops, total / per


def _side(op: _Op, by_short: dict[str, Entry]) -> DiffSide:
    """The side's time and the verdict of its biggest entry (its time weights nothing else)."""
    names = sorted(op.entries, key=lambda n: -op.entries[n])
    main = by_short.get(names[0]) if names else None
    launches = main.t_ms if main is not None else None
    return DiffSide(
        time_us=round(op.time_us, 3), kernels=names,
        roofline_pct=main.roofline_pct if main is not None and main.has_verdict else None,
        bound_type=main.bound_type if main is not None else None,
        attainable_speedup=main.attainable_speedup if main is not None else None,
        bytes_per_launch=main.bytes_est if main is not None and launches else None,
        flops_per_launch=main.flops_est if main is not None and launches else None)


def _apart(x: float | None, y: float | None, band: float) -> bool:
    if not x or not y:
        return False
    return abs(x - y) / max(abs(x), abs(y)) > band


def _cause(a: DiffSide, b: DiffSide) -> tuple[Cause, str]:
    if _apart(a.bytes_per_launch, b.bytes_per_launch, WORK_BAND) or _apart(
            a.flops_per_launch, b.flops_per_launch, WORK_BAND):
        return "work", "the bytes or FLOPs per launch differ: different tokens, precision or fusion"
    if a.roofline_pct is None or b.roofline_pct is None:
        return "unknown", "a side has no verdict (no roofline %)"
    if not _apart(a.roofline_pct, b.roofline_pct, SAME_FRACTION):
        return "hardware", (f"both at about the same fraction of their roofs ({a.roofline_pct:.0%} "
                            f"vs {b.roofline_pct:.0%}): the gap is the roofs'")
    lower, side = (a, "A") if a.roofline_pct < b.roofline_pct else (b, "B")
    return "kernel", (f"{side}'s kernel {lower.kernels[0] if lower.kernels else '?'} is further "
                      f"from its roof ({lower.roofline_pct:.0%}): the lever is there")


def diff(a_name: str, a_topn: TopN, a_art: Artifact, b_name: str, b_topn: TopN,
         b_art: Artifact) -> Diff:
    """The op-by-op comparison of two analysed rounds (module docstring)."""
    va, vb = _vendor(a_topn), _vendor(b_topn)
    a_ops, a_total = _ops(a_topn, va)
    b_ops, b_total = _ops(b_topn, vb)
    a_by, b_by = a_art.entries_by_short_name(), b_art.entries_by_short_name()
    notes: list[str] = []
    if va and vb and va != vb:
        notes.append(f"A is {va}, B is {vb}: launches without an op key are not matched across "
                     "vendors (kernel names differ)")
    rows: list[DiffRow] = []
    only_a: list[DiffRow] = []
    only_b: list[DiffRow] = []
    for key in sorted(set(a_ops) | set(b_ops)):
        oa, ob = a_ops.get(key), b_ops.get(key)
        if oa is not None and ob is not None:
            sa, sb = _side(oa, a_by), _side(ob, b_by)
            cause, why = _cause(sa, sb)
            rows.append(DiffRow(key=key, a=sa, b=sb, ratio=round(sb.time_us / sa.time_us, 4)
                                if sa.time_us else None,
                                delta_us=round(sb.time_us - sa.time_us, 3), cause=cause, why=why))
        elif oa is not None:
            sa = _side(oa, a_by)
            only_a.append(DiffRow(key=key, a=sa, delta_us=-sa.time_us, cause="only in A",
                                  why="fused away, or not run, in B"))
        elif ob is not None:
            sb = _side(ob, b_by)
            only_b.append(DiffRow(key=key, b=sb, delta_us=sb.time_us, cause="only in B",
                                  why="new in B"))
    rows.sort(key=lambda r: -abs(r.delta_us))
    only_a.sort(key=lambda r: r.delta_us)
    only_b.sort(key=lambda r: -r.delta_us)
    matched_a = sum(r.a.time_us for r in rows if r.a is not None)
    matched_b = sum(r.b.time_us for r in rows if r.b is not None)
    basis = "per step" if _steps(a_topn) > 1 or _steps(b_topn) > 1 or (
        a_topn.serving is not None and b_topn.serving is not None) else "per trace"
    totals = DiffTotals(a_time_us=round(a_total, 3), b_time_us=round(b_total, 3),
                        a_matched_share=matched_a / a_total if a_total else 0.0,
                        b_matched_share=matched_b / b_total if b_total else 0.0, basis=basis)
    for side, topn in (("A", a_topn), ("B", b_topn)):
        listed = sum(e.pct_gpu_time for e in topn.entries)
        if listed < 99.0:
            notes.append(f"{side}'s Top-N lists {listed:.1f}% of its GPU time: the rest is "
                         "compared by neither side")
    if basis == "per trace":
        notes.append("neither side records serving steps: times are per trace, so two traces "
                     "of different lengths differ by that too")
    return Diff(a=a_name, b=b_name, rows=rows, totals=totals,
                unmatched_a=only_a[:MAX_UNMATCHED], unmatched_b=only_b[:MAX_UNMATCHED],
                notes=notes)


def _vendor(topn: TopN) -> str | None:
    votes = [v for v in (vendor_of(e.name) for e in topn.entries) if v]
    return max(set(votes), key=votes.count) if votes else None
