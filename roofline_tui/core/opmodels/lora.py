"""LoRA shrink and expand: one small GEMM per adapter segment, shaped by the recorded operands.

The kernels: vLLM's punica/triton ``_lora_shrink_kernel`` / ``_lora_expand_kernel`` (ops
``vllm::lora_shrink`` / ``vllm::lora_expand``), the older ``sgmv_*`` / ``bgmv_*``, SGLang's
``_sgemm_lora_a_kernel`` / ``_sgemm_lora_b_kernel`` / ``_qkv_lora_b_kernel``. The adapters'
weights are stacked over the L adapter slots (``--max-loras``) as ``[L, N, K]`` (vLLM also
``[L, 1, N, K]``), one tensor per slice (q, k, v; gate, up) or one tensor holding all slices.

Shrink (``x·Aᵀ``, hidden → rank): x ``[M, H]``, per slice A ``[L, r, H]``, out ``[S, M, r]``
(SGLang ``[M, S·r]``); ΣN is the rank rows of all slices::

    flops = 2·M·H·ΣN
    bytes = M·H·a·reads + n·ΣN·H·w + M·ΣN·o

``reads`` is 1 when x fits in L2 (spec §4: a tensor re-read within one launch and small enough
for L2 counts once), else S (the grid walks the slices one after another, each streaming x).

Expand (``y += x·Bᵀ``, rank → out): x ``[S, M, r]`` (fp32 in vLLM) or ``[M, S·r]``, per slice B
``[L, N_s, r]``; the ΣN_s output columns are accumulated onto the base layer's output, so they
are read and written (punica's ``y += x @ B``; vLLM's wrapper passes ``add_inputs=True``)::

    flops = 2·M·r·ΣN_s
    bytes = S·M·r·i + n·ΣN_s·r·w + 2·M·ΣN_s·o

Every one of the M recorded tokens is taken as served by an adapter (the kernels skip tokens
without one; the trace does not record how many there are), so the figure is the launch's full
work: an upper bound on its rate, a lower bound on its headroom, said in the assumptions.

``n``, the distinct adapters the launch reads, is settled by the trace when there is one slot
(L = 1, vLLM's default ``--max-loras 1``) or one token. Otherwise the batch may use anywhere
from 1 to min(L, M) of the slots, which the trace does not say; when that range (or an L2 size
the device table lacks) moves the bytes by more than :data:`SETTLED` the entry gets no verdict
and says what would settle it. The token-sorting metadata (a few ints per token and per slot)
is left out: under 0.2 % of x at any hidden size above 2,048.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from roofline_tui.core.opmodels.base import (
    Candidate,
    FunctionModel,
    LeverContext,
    OpContext,
    OpEstimate,
    OpModelUnavailable,
    Prior,
    recorded_dtype,
)
from roofline_tui.core.topn_ext import Instance

PRIORS: Mapping[str, Prior] = {
    "lora": Prior("lora", 0.90, "LoRA shrink/expand: a segmented GEMM that streams its "
                                "activations and adapter weights, the spec §7 grouped-GEMM "
                                "row (0.90, on the HBM roof)", roof="hbm"),
}
# the spread of the unsettled quantities (adapters read, x re-reads) that still leaves the bytes
# settled: their upper figure is reported when it is within this factor of the lower one
SETTLED = 1.05
_STAGE_C = "ncu/rocprof counters (stage C) would measure it"


class _T(NamedTuple):
    """One recorded tensor: its dims and canonical dtype (None when not recorded)."""

    dims: tuple[int, ...]
    dtype: str | None


class _Shape(NamedTuple):
    """A LoRA launch read from its operands."""

    direction: str      # shrink | expand
    m: int              # tokens
    k: int              # the contracted axis: H for shrink, r for expand
    ns: tuple[int, ...]  # output columns per weight tensor (rank rows, or N_s)
    slices: int         # S
    slots: int          # L
    x: _T
    w_dtype: str | None
    out_dtype: str | None


def estimate(ctx: OpContext) -> OpEstimate:
    direction = ctx.op_subclass
    if direction == "moe":
        raise OpModelUnavailable(
            "LoRA on a MoE layer's experts: per-expert adapters routed like the experts; no "
            f"byte/FLOP model for it here; {_STAGE_C}")
    sets = [_instance_tensors(ctx.instance)] if ctx.instance is not None else [
        [_T(tuple(d), None) for d in shape_set if d] for shape_set in ctx.shapes]
    if not sets or not any(sets):
        raise OpModelUnavailable(
            f"LoRA kernel without recorded shapes ({ctx.why_no_shapes()}): its rank, adapter "
            "slots and slices are only in the operands; stage-B shapes would model it too")
    shapes = [_read(ts, direction) for ts in sets]
    found = [s for s in shapes if isinstance(s, _Shape)]
    if not found:
        raise OpModelUnavailable(f"LoRA operands not recognised: {shapes[0]}")
    ests = {_work(ctx, s)[:2] for s in found}
    if len(ests) > 1:
        raise OpModelUnavailable(
            f"{len(ests)} LoRA shapes (different projections) share one mean time; per-shape "
            "times (a trace import that records instances) would model each")
    return _estimate(ctx, found[0])


def _instance_tensors(inst: Instance) -> list[_T]:
    """The instance's tensors in argument order, a TensorList's members each on its own."""
    out: list[_T] = []
    for a in inst.args:
        d = a.dims
        if a.role == "scalar" or not isinstance(d, list) or not d:
            continue
        dtype = recorded_dtype(a.type)
        if all(isinstance(x, int) for x in d):
            out.append(_T(tuple(int(x) for x in d), dtype))  # type: ignore[arg-type]
        else:
            out.extend(_T(tuple(int(x) for x in t), dtype) for t in d
                       if isinstance(t, list) and t)
    return out


def _weight(t: _T) -> tuple[int, int, int] | None:
    """``(L, N, K)`` of a stacked adapter weight ``[L, N, K]`` / ``[L, 1, N, K]``; raises for a
    per-expert ``[L, E, N, K]``."""
    if len(t.dims) == 3:
        return t.dims[0], t.dims[1], t.dims[2]
    if len(t.dims) == 4 and t.dims[1] == 1:
        return t.dims[0], t.dims[2], t.dims[3]
    if len(t.dims) == 4:
        raise OpModelUnavailable(
            f"per-expert adapter weights {list(t.dims)} (a MoE layer's LoRA): no byte/FLOP "
            f"model for it here; {_STAGE_C}")
    return None


def _read(ts: list[_T], direction: str | None) -> _Shape | str:
    """The launch's shape from its tensors in argument order (x first), or why not."""
    if not ts:
        return "no tensors"
    x = ts[0]
    weights = [(t, w) for t in ts[1:] if (w := _weight(t)) is not None]
    if direction is None:  # not in the name: the weights' shape says it
        direction = "shrink" if weights and weights[0][1][1] < weights[0][1][2] else "expand"
    if direction == "shrink":
        if len(x.dims) != 2:
            return f"shrink input {list(x.dims)} is not [M, H]"
        m, k = x.dims
        weights = [(t, w) for t, w in weights if w[2] == k and w[1] < k]
        slices = len(weights)
    else:
        if len(x.dims) not in (2, 3):
            return f"expand input {list(x.dims)} is neither [S, M, r] nor [M, S·r]"
        m = x.dims[1] if len(x.dims) == 3 else x.dims[0]
        weights = [(t, w) for t, w in weights if w[1] > w[2]]
        k = weights[0][1][2] if weights else 0
        weights = [(t, w) for t, w in weights if w[2] == k]
        width = x.dims[0] * x.dims[2] if len(x.dims) == 3 else x.dims[1]
        if not k or width % k:
            return f"expand input {list(x.dims)} does not match the adapters' rank {k}"
        slices = width // k
    if not weights or not m or not k:
        return f"no stacked adapter weight fits the input {list(x.dims)}"
    slots = {w[0] for _, w in weights}
    if len(slots) != 1:
        return f"adapter weights disagree on the slot count ({sorted(slots)})"
    rest = [t for t in ts[1:] if all(t is not u for u, _ in weights)]
    out = next((t for t in rest if len(t.dims) >= 2 and m in t.dims), None)
    return _Shape(direction, m, k, tuple(w[1] for _, w in weights), slices, slots.pop(), x,
                  weights[0][0].dtype, out.dtype if out is not None else None)


class _Work(NamedTuple):
    bytes_hi: float
    flops: float
    bytes_lo: float
    unsettled: tuple[str, ...]
    compute_dtype: str


def _dtypes(ctx: OpContext, s: _Shape) -> tuple[str, str, str, list[str]]:
    """(x, adapter, output) dtypes: each as recorded, else by the op's own rule, said."""
    act = ctx.activation_dtype
    # the one fp32 tensor of a punica launch is the rank-sized buffer (shrink out, expand in)
    buffer = ("fp32", "fp32 (the recorded dtype set has an fp32 tensor: the rank-sized "
                      "buffer)") if "fp32" in ctx.dtypes else (act, f"the activations' {act}")
    model = (act, f"the activations' {act}")
    if s.direction == "shrink":
        x = _said(s.x.dtype, model)
        out = _said(s.out_dtype, buffer)
        w = _said(s.w_dtype, (x[0], f"{x[0]}, the input's (the op requires it)"))
    else:
        x = _said(s.x.dtype, buffer)
        out = _said(s.out_dtype, model)
        w = _said(s.w_dtype, (out[0], f"{out[0]}, the base output's (the model's dtype)"))
    notes = [f"dtypes: x {x[1]}, adapters {w[1]}, output {out[1]}"]
    return x[0], w[0], out[0], notes


def _said(recorded: str | None, otherwise: tuple[str, str]) -> tuple[str, str]:
    return (recorded, f"{recorded} (recorded)") if recorded else otherwise


def _work(ctx: OpContext, s: _Shape) -> _Work:
    """Bytes (lower and upper figure of the unsettled quantities) and FLOPs of one launch."""
    xd, wd, od = _dtypes(ctx, s)[:3]
    a, w, o = ctx.nbytes(xd), ctx.nbytes(wd), ctx.nbytes(od)
    sum_n = sum(s.ns)
    n_hi = 1 if s.slots == 1 or s.m == 1 else min(s.slots, s.m)
    unsettled: list[str] = []
    if n_hi > 1:
        unsettled.append(f"adapters read: 1 to {n_hi} of the {s.slots} slots (the trace does "
                         "not record which adapters the batch's tokens use)")
    if s.direction == "shrink":
        flops = 2.0 * s.m * s.k * sum_n
        x_once = s.m * s.k * a
        reads_lo = reads_hi = 1
        if s.slices > 1:
            l2 = ctx.l2_bytes
            if l2 is None:
                reads_hi = s.slices
                unsettled.append(f"x read 1 to {s.slices} times (the device's L2 size is not "
                                 "in the peak table)")
            elif x_once > l2:
                reads_lo = reads_hi = s.slices
        per_adapter = sum_n * s.k * w
        fixed = s.m * sum_n * o
        lo = x_once * reads_lo + per_adapter + fixed
        hi = x_once * reads_hi + n_hi * per_adapter + fixed
    else:
        flops = 2.0 * s.m * s.k * sum_n
        per_adapter = sum_n * s.k * w
        fixed = s.slices * s.m * s.k * a + 2.0 * s.m * sum_n * o
        lo = per_adapter + fixed
        hi = n_hi * per_adapter + fixed
    return _Work(hi, flops, lo, tuple(unsettled), wd)


def _estimate(ctx: OpContext, s: _Shape) -> OpEstimate:
    work = _work(ctx, s)
    xd, wd, od, dtype_notes = _dtypes(ctx, s)
    if work.bytes_hi > SETTLED * work.bytes_lo:
        raise OpModelUnavailable(
            f"LoRA {s.direction}: {'; '.join(work.unsettled)}: the bytes range "
            f"{work.bytes_lo / 1e6:.3f}-{work.bytes_hi / 1e6:.3f} MB, which decides the verdict; "
            "one adapter slot (--max-loras 1) or stage-C counters would settle it")
    sum_n = sum(s.ns)
    if s.direction == "shrink":
        model = "LoRA shrink: flops = 2·M·H·ΣN, bytes = x·reads + adapters·ΣN·H·w + M·ΣN·o"
        shape = (f"M={s.m} H={s.k}, {len(s.ns)} adapter tensor(s) of {list(s.ns)} rank rows "
                 f"(ΣN={sum_n}) over {s.slots} slot(s), {s.slices} slice(s)")
    else:
        model = ("LoRA expand: flops = 2·M·r·ΣN, bytes = S·M·r·i + adapters·ΣN·r·w + "
                 "2·M·ΣN·o (y += x·Bᵀ)")
        shape = (f"M={s.m} r={s.k}, {len(s.ns)} adapter tensor(s) of {list(s.ns)} output "
                 f"columns (ΣN={sum_n}) over {s.slots} slot(s), {s.slices} slice(s); the "
                 "output columns are read and written (accumulated onto the base layer's "
                 "output)")
    assumptions = [
        shape,
        "every one of the M tokens is served by an adapter (the kernel skips tokens without "
        "one; the trace does not say how many): the launch's full work, so its rate is an "
        "upper bound and its headroom a lower bound",
        *(f"{u}: moves the bytes by under {100 * (SETTLED - 1):.0f} %, the upper figure is "
          "reported" for u in work.unsettled),
        *(["one adapter slot (L=1) or one token: one adapter's weights read"]
          if s.slots == 1 or s.m == 1 else []),
        *dtype_notes,
        "the token-sorting metadata (a few ints per token and slot) is left out",
    ]
    return OpEstimate(
        model=model,
        candidates=(Candidate("lora", work.bytes_hi, work.flops),),
        compute_dtype=wd,
        per="launch",
        assumptions=tuple(assumptions),
        prior="lora",
    )


def levers(lc: LeverContext) -> list[str]:
    return [
        "fuse shrink and expand into one launch (vLLM's fused LoRA op): the rank-sized "
        "intermediate and its fp32 zero-fill never cross HBM, and one launch goes",
        "one adapter serving every request: merge it into the base weights (W + B·A, "
        "lossless) and drop the LoRA launches",
    ]


# each recorded instance (its input tensor at least) is folded with its own time
MODEL = FunctionModel("lora", PRIORS, estimate, levers, instance_tensors=1)
