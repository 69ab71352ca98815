"""Attention (spec §4; serving-annotations §6 and §9.5): the bytes and FLOPs of one op call.

One call is one launch of one layer's attention op. Its numbers come from the best evidence the
context holds, in this order, and every step says in ``assumptions`` where each number came from:

1. **The recorded instance** (``ctx.instance``): H_Q, H_KV, d_qk, d_v and the dtypes are read from
   the launching op's tensors (the KV dtype from the cache tensor, or the key tensor, never from
   Q). A dense op whose query carries its own sequence axis (SDPA ``[B, H, S, d]``, flash
   ``[B, S, H, d]``) also gives the call's own work: S_q query rows against S_kv keys per batch
   element and head.
2. **The step aggregates** (``ctx.steps``): for a varlen / paged op (query ``[T, H, d]``, tokens
   flattened, the KV in a cache) the per-call work is this regime's group summed per step:
   ``sq = Σsq/steps``, ``sk = Σsk/steps``, ``sqk = Σsq·sk/steps``, ``sqq = Σsq²/steps``.
3. **The config and workload** (today's heuristic, labelled): ``seq = isl + osl/2`` and config
   heads divided by TP, for an upstream Top-N with neither.

The formulas (a multiply-add is 2 FLOPs; pairs are query–key pairs):

* ``pairs = sqk − (sqq − sq)/2``: the full rectangle less the causal triangle of each request's
  new tokens, diagonal included. Decode (one query per request, ``sqq = sq``) keeps the whole
  rectangle. TraceLens's compatibility form ``sqk − sqq/2`` drops the diagonal (about 0.1 % on
  its test data); it is quoted beside the figure, not used.
* A dense call: ``pairs = B·(S_q·S_kv − S_q·(S_q − 1)/2)`` when causal (aligned to the last key;
  with S_q = S_kv this is ``B·S·(S + 1)/2``), ``B·S_q·S_kv`` when not. The op's recorded
  ``is_causal`` (the importer keeps its Concrete Inputs as each argument's ``value``; for
  ``_efficient_attention_forward`` its ``custom_mask_type``) decides. Unrecorded: a mask
  (values unknown) or S_q > S_kv counts the full rectangle; one query row is the same either
  way; a config.json (a decoder's causal self-attention) makes it causal, said; with neither,
  a prefill-shaped call's FLOPs differ 2× on its verdict's axis, so there is no verdict.
* ``flops = 2·H_Q·(d_qk + d_v)·pairs``.
* ``bytes = sq·H_Q·(d_qk·b_q + d_v·b_o) + sk·H_KV·(d_qk + d_v)·b_kv``: Q read and O written once,
  every K/V token read once at the cache's dtype (the compulsory minimum; a flash kernel re-reading
  K/V tiles from HBM is exactly the headroom this reports).
* MLA absorbed decode (config): one latent of ``kv_lora + rope`` elements per token, read once;
  ``d_qk = kv_lora + rope``, ``d_v = kv_lora``.
* Layer kinds (config: ``ModelShape.attention_kinds``, from ``layer_types``,
  ``sliding_window_pattern``, ``attention_chunk_size``/``no_rope_layers``...): a sliding layer's
  query sees at most W keys; a chunked layer's query at position p sees the ``p mod C + 1`` keys
  of its own C-token chunk. A dense call is exact per query; with aggregates only,
  ``sk ≤ sq + requests·(S − 1)`` (= requests·S at decode) and ``pairs ≤ sq·S`` are upper bounds
  (S = W or C); the config heuristic caps seq_len at S. Every kernel form reads the same plan,
  from the kernel's launches per step: a kernel launched once (or k times) per attention layer
  runs on every kind, so one launch is the kinds' mean weighted by their layers (Gemma-3:
  (10·full + 52·window)/62); a count equal to one kind's layers is that kind (10 launches on
  Gemma-3: its 10 global layers); a count that fits several kinds or none, or no count, cannot
  be tied to a kind: each is a candidate and the engine's feasibility rule keeps the largest
  feasible one.
* Sparse attention (DeepSeek-V3.2 ``index_topk``, MiniMax block-sparse decode) reads only the
  selected tokens' KV: the config's selected count caps keys like a window; without it there is
  no model (a dense one would over-count and read as suspect).

Groups: the engine gives the regime, and ``ctx.steps`` holds that regime's group only (decode:
the generation group; prefill: the context group). A decode-only kernel timed in prefill (mixed)
steps, or a prefill-only kernel in decode steps, is not given the other group's work: no verdict.
A split-KV reduce/combine kernel moves partial outputs, not the KV: no verdict either.

Priors (spec §7): paged decode 0.50 (irregular paged KV access); a compute-bound prefill or flash
attention 0.75 (FlashAttention-3 reaches about 740 TFLOP/s bf16 on H100 SXM, 75 % of its
989 TFLOP/s dense peak). Both are calibrated by ``--priors`` (keys ``attn`` and
``attn_prefill``).
"""


import math
import re
from collections.abc import Callable, Mapping
from typing import NamedTuple

from roofline_tui.core.dtypes import canonical_dtype
from roofline_tui.core.inputs import StepAggregates, launches_per_step
from roofline_tui.core.lazy_re import lazy_compile
from roofline_tui.core.operands import normalise
from roofline_tui.core.opmodels.base import (
    Candidate,
    FunctionModel,
    LeverContext,
    OpContext,
    OpEstimate,
    OpModelUnavailable,
    Prior,
    fuse_adjacent,
)
from roofline_tui.core.precision import decide

PRIORS: Mapping[str, Prior] = {
    "attn": Prior("attn", 0.50, "attention decode (paged): irregular paged KV access, "
                                "occupancy-sensitive (spec §7)", roof="hbm"),
    # Set against H100's data sheet: 0.75 × 989.4 = 742 TFLOP/s, FlashAttention-3's best bf16
    # forward (about 740 TFLOP/s, Shah et al. 2024). H100's measured matmul ceiling is
    # 794.5 TFLOP/s (data/peaks.md), so on that roof the same kernel is at 742 / 794.5 = 0.934.
    "attn_prefill": Prior(
        "attn_prefill", 0.75,
        "compute-bound prefill / flash attention: FlashAttention-3 reaches about 740 TFLOP/s "
        "bf16 on H100 SXM, 75% of the 989 TFLOP/s dense peak (prior 'attn_prefill')",
        roof="data sheet", on_measured=round(0.75 * 989.4 / 794.5, 3),
        rebase_why=(
            "the 0.75 was set against H100's 989.4 TFLOP/s bf16 data sheet, i.e. 742 TFLOP/s, "
            "what FlashAttention-3 reaches (about 740 TFLOP/s bf16 forward on H100 SXM); "
            "against H100's measured 794.5 TFLOP/s matmul ceiling that rate is 742 / 794.5 = "
            "0.934, the same fraction of a measured ceiling assumed on every device")),
}
# Attention takes rotary and the KV-cache write before it, a quant of its output after it.
ADJACENT_OPS = ("rope", "copy", "quant")

# Dense ops whose query is [B, H, S, d] (the SDPA family) or [B, S, H, d] (flash-attn layouts).
_BHSD = lazy_compile(r"scaled_dot_product")
_BSHD_OPS = frozenset({"aten::_flash_attention_forward", "aten::_efficient_attention_forward",
                       "flash_attn::_flash_attn_forward", "FlashAttnFunc"})
# Where a dense op's schema puts is_causal and the softmax scale (argument positions, as the
# trace's Input Dims and Concrete Inputs list them; core/operand_table.py quotes each schema).
# aten::_efficient_attention_forward has no is_causal but an int custom_mask_type (0: none,
# 1: causal from the top left, 2: causal from the bottom right).
_CAUSAL_AT: Mapping[str, int] = {
    "aten::scaled_dot_product_attention": 5,
    "aten::_scaled_dot_product_flash_attention": 4,
    "aten::_scaled_dot_product_flash_attention_for_cpu": 4,
    "aten::_scaled_dot_product_efficient_attention": 6,
    "aten::_scaled_dot_product_cudnn_attention": 6,
    "aten::_scaled_dot_product_fused_attention_overrideable": 5,
    "aten::_flash_attention_forward": 8,
    "aten::_efficient_attention_forward": 9,
    "flash_attn::_flash_attn_forward": 5,
    "FlashAttnFunc": 5,
}
_SCALE_AT: Mapping[str, int] = {
    "aten::scaled_dot_product_attention": 6,
    "aten::_scaled_dot_product_flash_attention": 6,
    "aten::_scaled_dot_product_flash_attention_for_cpu": 6,
    "aten::_scaled_dot_product_efficient_attention": 7,
    "aten::_scaled_dot_product_cudnn_attention": 8,
    "aten::_scaled_dot_product_fused_attention_overrideable": 7,
    "aten::_flash_attention_forward": 10,
    "aten::_efficient_attention_forward": 11,
    "flash_attn::_flash_attn_forward": 4,
    "FlashAttnFunc": 4,
}
_MASK_TYPE_OP = "aten::_efficient_attention_forward"
# Kernel base names (before template arguments) that serve one group only, or only reduce.
_DECODE_ONLY = lazy_compile(r"decode|paged_?attention", re.IGNORECASE)
_PREFILL_ONLY = lazy_compile(r"prefill|extend", re.IGNORECASE)
_SPLIT_REDUCE = lazy_compile(r"reduce|combine", re.IGNORECASE)


class _Heads(NamedTuple):
    """Heads, head dims and bytes per element of one call; ``kv_tok`` is the KV elements one
    cached token holds (``H_KV·(d_qk + d_v)``, or the MLA latent)."""

    h_q: int
    h_kv: int
    d_qk: int
    d_v: int
    kv_tok: int
    q_dtype: str
    kv_dtype: str
    b_q: float
    b_o: float
    b_kv: float


class _Dense(NamedTuple):
    """A dense call's own sequence lengths, and what its recorded arguments say: ``causal``
    (the op's recorded ``is_causal``, or its mask type; None: not recorded) and ``scale``."""

    batch: int
    s_q: int
    s_kv: int
    masked: bool
    causal: bool | None = None
    scale: float | None = None


class _Recorded(NamedTuple):
    heads: _Heads
    dense: _Dense | None  # the call's own work ([B,·,S,·] layouts)
    tokens: int | None    # query rows of a flattened [T, H, d] query


class _PerCall(NamedTuple):
    """One call's work from the step aggregates (per-step sums)."""

    sq: float
    sk: float
    sqq: float
    sqk: float
    requests: float | None


# --------------------------------------------------------------------------- evidence


def _base_name(name: str) -> str:
    """The kernel's function name without ``void``, template arguments or parameters."""
    s = name.strip().removeprefix("void ").strip()
    return re.split(r"[<(]", s, maxsplit=1)[0]


def _config_heads(ctx: OpContext, lines: list[str]) -> tuple[int, int, int]:
    """(q heads, kv heads, head_dim) per rank from the config, TP applied."""
    model = ctx.require_model("the attention model")
    tp, why = ctx.tensor_parallel("the attention model's per-rank heads")
    n_q, n_kv = model.num_attention_heads, model.num_kv_heads
    if tp > 1:
        n_q = max(1, n_q // tp)
        n_kv = max(1, n_kv // tp)
        lines.append(f"TP={tp}: {n_q} q heads and {n_kv} kv heads per rank"
                     + (f" ({why})" if why else ""))
    elif why and not why.startswith("env_report"):
        lines.append(f"TP=1: the config's {n_q} q and {n_kv} kv heads on each rank ({why})")
    return n_q, n_kv, model.head_dim


def _config_per_rank(ctx: OpContext) -> tuple[int, int] | None:
    if ctx.model is None:
        return None
    tp = ctx.workload.tp or 1
    return (max(1, ctx.model.num_attention_heads // tp), max(1, ctx.model.num_kv_heads // tp))


def _dtype(recorded: str | None, fallback: str) -> str:
    return canonical_dtype(recorded) or fallback


def _heads(ctx: OpContext, h_q: int, h_kv: int, d_qk: int, d_v: int, q_dt: str, o_dt: str,
           kv_dt: str) -> _Heads:
    return _Heads(h_q=h_q, h_kv=h_kv, d_qk=d_qk, d_v=d_v, kv_tok=h_kv * (d_qk + d_v),
                  q_dtype=q_dt, kv_dtype=kv_dt, b_q=ctx.nbytes(q_dt), b_o=ctx.nbytes(o_dt),
                  b_kv=ctx.nbytes(kv_dt))


def _heads_line(ctx: OpContext, h: _Heads, lines: list[str]) -> None:
    cfg = _config_per_rank(ctx)
    if cfg is not None and cfg != (h.h_q, h.h_kv):
        lines.append(f"config.json gives {cfg[0]} q / {cfg[1]} kv heads per rank; the recorded "
                     f"shapes ({h.h_q} / {h.h_kv}) are used")


def _read_instance(ctx: OpContext, lines: list[str]) -> _Recorded | None:
    """The heads, dims and dtypes the recorded launching op gives, or None (with why)."""
    inst = ctx.instance
    if inst is None:
        return None
    op = inst.op or "the launching op"
    ins = inst.tensors("input")
    caches = inst.tensors("cache")
    outs = inst.tensors("output")
    o_type = outs[0][1] if outs else None
    if not ins:
        lines.append(f"recorded {op}: no query among its input tensors; its shapes are not used")
        return None
    q, q_type = ins[0]
    q_dt = _dtype(q_type, ctx.activation_dtype)
    o_dt = _dtype(o_type, q_dt)
    key = normalise(op)
    layout = "bhsd" if _BHSD.search(key) else "bshd" if key in _BSHD_OPS else None
    if len(q) == 4 and len(ins) >= 3 and not caches:
        return _read_dense(ctx, op, layout, ins, bool(inst.tensors("bias")), q_dt, o_dt, lines)
    if len(q) == 4 and layout == "bshd" and caches:
        q = [q[0] * q[1], q[2], q[3]]  # flash with a KV cache: [B, S, H, d] → B·S query rows
    if len(q) != 3:
        lines.append(f"recorded {op}: query {ins[0][0]} is neither a dense [B,S,H,d]/[B,H,S,d] "
                     "call with its keys nor flattened [T,H,d] tokens; its shapes are not used")
        return None
    t, h_q, d_qk = q
    got = _flat_kv(ctx, op, ins, caches, d_qk, lines)
    if got is None:
        return None
    h_kv, d_v, kv_dt, kv_from = got
    if h_kv <= 0 or h_q % h_kv:
        lines.append(f"recorded {op}: {h_q} q heads over {h_kv} kv heads is not a GQA grouping; "
                     "its shapes are not used")
        return None
    h = _heads(ctx, h_q, h_kv, d_qk, d_v, q_dt, o_dt, kv_dt)
    lines.append(f"shapes: {op} query {ins[0][0]} → {t} query rows, H_Q={h_q}, d_qk={d_qk}; "
                 f"{kv_from} (recorded instance)")
    lines.append(f"dtypes: Q {q_dt}, O {o_dt} (recorded); K/V {h.kv_dtype}")
    _heads_line(ctx, h, lines)
    return _Recorded(heads=h, dense=None, tokens=t)


def _read_dense(ctx: OpContext, op: str, layout: str | None,
                ins: list[tuple[list[int], str | None]], masked: bool, q_dt: str, o_dt: str,
                lines: list[str]) -> _Recorded | None:
    (q, _), (k, k_type), (v, _) = ins[0], ins[1], ins[2]
    if layout is None:
        lines.append(f"recorded {op}: rank-4 q/k/v, but which axis holds the heads ([B,H,S,d] or "
                     "[B,S,H,d]) is not known for this op; its shapes are not used")
        return None
    if layout == "bhsd":
        (b, h_q, s_q, d_qk), (bk, h_kv, s_kv, dk), (bv, hv, sv, d_v) = q, k, v
    else:
        (b, s_q, h_q, d_qk), (bk, s_kv, h_kv, dk), (bv, sv, hv, d_v) = q, k, v
    if not (b == bk == bv and s_kv == sv and h_kv == hv and d_qk == dk and h_kv > 0
            and h_q % h_kv == 0 and min(b, s_q, s_kv, d_qk, d_v) > 0):
        lines.append(f"recorded {op}: q {q}, k {k}, v {v} do not agree as one attention call; "
                     "their shapes are not used")
        return None
    kv_dt = _dtype(k_type, q_dt)
    h = _heads(ctx, h_q, h_kv, d_qk, d_v, q_dt, o_dt, kv_dt)
    order = "[B,H,S,d]" if layout == "bhsd" else "[B,S,H,d]"
    lines.append(f"shapes: {op} q {q}, k {k}, v {v} as {order}: B={b}, S_q={s_q}, S_kv={s_kv}, "
                 f"H_Q={h_q}, H_KV={h_kv}, d_qk={d_qk}, d_v={d_v} (recorded instance)")
    lines.append(f"dtypes: Q {q_dt}, O {o_dt}, K/V {kv_dt} (the key tensor's recorded type)")
    _heads_line(ctx, h, lines)
    causal, scale = _recorded_call(ctx, normalise(op))
    return _Recorded(heads=h, dense=_Dense(b, s_q, s_kv, masked, causal, scale), tokens=None)


def _recorded_call(ctx: OpContext, key: str) -> tuple[bool | None, float | None]:
    """(is_causal, scale) as the instance's recorded argument values give them (Kineto's
    Concrete Inputs), each None when not recorded."""
    inst = ctx.instance
    if inst is None:
        return None, None

    def value(table: Mapping[str, int]) -> object:
        at = table.get(key)
        return inst.args[at].value if at is not None and at < len(inst.args) else None

    raw = value(_CAUSAL_AT)
    causal: bool | None = None
    if key == _MASK_TYPE_OP:
        if type(raw) is int and raw in (0, 1, 2):
            causal = raw != 0
    elif isinstance(raw, bool):
        causal = raw
    sc = value(_SCALE_AT)
    scale = (float(sc) if isinstance(sc, (int, float)) and not isinstance(sc, bool)
             and 0 < sc < 1e6 else None)
    return causal, scale


def _flat_kv(ctx: OpContext, op: str, ins: list[tuple[list[int], str | None]],
             caches: list[tuple[list[int], str | None]], d_qk: int, lines: list[str]
             ) -> tuple[int, int, str, str] | None:
    """(H_KV, d_v, KV dtype, where from) for a flattened-token call."""
    if caches:
        kc, kc_type = caches[0]
        vc = caches[1][0] if len(caches) > 1 else kc
        kv_dt = _dtype(kc_type, ctx.kv_dtype)
        src = f"the cache tensor's recorded type {kc_type}" if canonical_dtype(kc_type) else \
            f"config/env_report (the cache's type {kc_type!r} is not a dtype)"
        cfg = _config_per_rank(ctx)
        if len(kc) == 5:
            # vLLM paged v1/v2: key [N, H_KV, d/x, block, x], value [N, H_KV, d, block]
            h_kv, d = kc[1], kc[2] * kc[4]
            d_v = vc[2] if len(vc) == 4 else d
            how = f"key cache {kc} as [blocks, H_KV, d/x, block, x]"
        elif len(kc) == 4:
            nhd, hnd = kc[-2], kc[-3]
            d, d_v = kc[-1], vc[-1]
            if cfg is not None and cfg[1] == hnd != nhd:
                h_kv, how = hnd, f"key cache {kc} as [pages, H_KV, page, d] (config kv heads agree)"
            else:
                h_kv, how = nhd, f"key cache {kc} as [pages, page, H_KV, d]"
                if cfg is not None and cfg[1] != nhd:
                    how += f" (config says {cfg[1]} kv heads per rank; the cache layout is read "
                    how += "as TraceLens reads it)"
        elif len(kc) == 3:
            h_kv, d, d_v = kc[1], kc[2], vc[-1]
            how = f"key cache {kc} as [slots, H_KV, d]"
        else:
            lines.append(f"recorded {op}: key cache {kc} has no layout this model knows; its "
                         "shapes are not used")
            return None
        if d != d_qk:
            lines.append(f"recorded {op}: the query's head dim {d_qk} and the cache's {d} differ; "
                         "its shapes are not used")
            return None
        return h_kv, d_v, kv_dt, f"{how}: H_KV={h_kv}, d_v={d_v}; K/V dtype from {src}"
    if len(ins) >= 3 and len(ins[1][0]) == 3 and len(ins[2][0]) == 3:
        (k, k_type), (v, _) = ins[1], ins[2]
        if k[2] != d_qk or k[0] != v[0] or k[1] != v[1]:
            lines.append(f"recorded {op}: q/k/v head dims or kv heads disagree ({k}, {v}); its "
                         "shapes are not used")
            return None
        k_dt = canonical_dtype(k_type)
        if k_dt is None or k_dt == ctx.kv_dtype or ctx.nbytes(k_dt) == ctx.nbytes(ctx.kv_dtype):
            kv_dt = k_dt or ctx.kv_dtype
            src = f"the key tensor's recorded type {k_type} (config/env_report agree)"
        else:
            kv_dt = ctx.kv_dtype
            src = (f"config/env_report {ctx.kv_dtype}: the cache is not an argument of {op}, "
                   f"and its key argument ({k_type}) holds only this step's new tokens")
        return k[1], v[2], kv_dt, (f"key {k}, value {v}: H_KV={k[1]}, d_v={v[2]}; K/V dtype "
                                   f"from {src}")
    if ctx.model is not None:
        _, n_kv, _ = _config_heads(ctx, [])
        return n_kv, d_qk, ctx.kv_dtype, (f"no key or cache tensor recorded: H_KV={n_kv} per rank "
                                          f"and K/V {ctx.kv_dtype} from config.json, d_v = d_qk")
    lines.append(f"recorded {op}: no key or cache tensor and no config.json, so H_KV is unknown; "
                 "its shapes are not used")
    return None


def _per_call(ctx: OpContext, lines: list[str]) -> _PerCall | None:
    """This regime's step aggregates as one call's sums (per step), or None (with why)."""
    s: StepAggregates | None = ctx.steps
    if s is None:
        return None
    missing = [k for k in ("sq", "sk", "sqsk") if getattr(s, k) is None]
    if missing:
        lines.append(f"step aggregates ({ctx.regime}) lack {', '.join(missing)} (token counts "
                     "only); not used")
        return None
    assert s.sq is not None and s.sk is not None and s.sqsk is not None
    sqq = s.sqsq
    if sqq is None:
        if ctx.regime == "decode" and s.requests is not None and s.requests == s.sq:
            sqq = s.sq
            lines.append("Σsq² not recorded: one query per request (requests = Σsq), so "
                         "Σsq² = Σsq")
        else:
            lines.append(f"step aggregates ({ctx.regime}) lack Σsq², which the causal triangle "
                         "needs; not used")
            return None
    if s.sq <= 0 or s.sk <= 0 or s.sqsk <= 0:
        lines.append(f"step aggregates ({ctx.regime}) hold no query or KV tokens; not used")
        return None
    n = s.steps
    pc = _PerCall(sq=s.sq / n, sk=s.sk / n, sqq=sqq / n, sqk=s.sqsk / n,
                  requests=s.requests / n if s.requests is not None else None)
    lines.append(
        f"step aggregates ({ctx.regime} group, {n} step(s)): Σsq {s.sq}, Σsk {s.sk}, "
        f"Σsq² {sqq}, Σsq·sk {s.sqsk}, requests {s.requests}; one call = one layer's launch "
        f"per step, so per call sq {pc.sq:g}, sk {pc.sk:g}, sq·sk {pc.sqk:g}")
    return pc


def _check_group(ctx: OpContext, base: str) -> None:
    """A kernel that serves one group gets only that group (serving-annotations §6.3)."""
    if ctx.regime == "prefill" and _DECODE_ONLY.search(base):
        raise OpModelUnavailable(
            f"decode-only attention kernel ({base}) timed in prefill/mixed steps: its work there "
            "is those steps' generation group, and this regime's aggregates hold the context "
            "group only; the decode group's sums per mixed step would settle it")
    if ctx.regime == "decode" and _PREFILL_ONLY.search(base):
        raise OpModelUnavailable(
            f"prefill/extend attention kernel ({base}) timed in decode steps: the decode "
            "aggregates hold the generation group only, which this kernel does not serve; the "
            "context group of the steps it ran in would settle it")


def _selected_tokens(ctx: OpContext) -> int | None:
    """Selected KV tokens per query for a sparse kernel; raises when the config does not say."""
    if ctx.op_subclass != "sparse":
        return None
    model = ctx.require_model("sparse attention")
    if not model.sparse_attention_tokens:
        raise OpModelUnavailable(
            "sparse attention: the config does not say how many KV tokens each query selects "
            "(index_topk, or selected blocks × block size), and a dense model would over-count "
            "its bytes; no verdict"
        )
    return model.sparse_attention_tokens


class _Span(NamedTuple):
    """One kind of attention layer a kernel may serve: how many layers, and how far back a
    query sees (``span``: the window W or the chunk C; None: every earlier key)."""

    kind: str  # full | sliding | chunked
    layers: int
    span: int | None

    def describe(self) -> str:
        return (f"{self.layers} sliding (W={self.span})" if self.kind == "sliding" else
                f"{self.layers} chunked (C={self.span})" if self.kind == "chunked" else
                f"{self.layers} {self.kind}")

    def label(self, base: str) -> str:
        return (f"{base} (window {self.span})" if self.kind == "sliding" else
                f"{base} (chunk {self.span})" if self.kind == "chunked" else base)

    def note(self) -> str:
        return (f"sliding window {self.span}" if self.kind == "sliding" else
                f"chunked local attention, chunk {self.span}" if self.kind == "chunked" else "")


class _Plan(NamedTuple):
    """The layer kinds one launch of this kernel covers. ``mix``: it runs on every layer of
    these kinds, so one launch is their mean weighted by layers (one kind: that kind's
    figure); otherwise it cannot be tied to one of them and each is a candidate."""

    spans: tuple[_Span, ...]
    mix: bool


_FULL_ONLY = _Plan((_Span("full", 1, None),), True)
# launches per step within 5 % of a layer count are that count (per-step means of a graph)
_SAME_COUNT = 0.05


def _spans(ctx: OpContext, lines: list[str]) -> tuple[_Span, ...]:
    """The config's softmax-attention layer kinds; one whose size is unknown is read as full."""
    assert ctx.model is not None
    out: list[_Span] = []
    for k in ctx.model.attention_kinds():
        size = k.window if k.kind == "sliding" else k.chunk if k.kind == "chunked" else None
        if k.kind != "full" and size is None:
            lines.append(f"config: {k.layers} {k.kind} layers of unknown size; read as full "
                         "attention (an upper bound)")
            out.append(_Span("full", k.layers, None))
            continue
        out.append(_Span(k.kind, k.layers, size))
    merged: dict[tuple[str, int | None], int] = {}
    for s in out:
        merged[(s.kind, s.span)] = merged.get((s.kind, s.span), 0) + s.layers
    return tuple(_Span(kind, n, span) for (kind, span), n in merged.items())


def _launches(ctx: OpContext) -> float | None:
    """This kernel's launches per step in its regime, from its Top-N row."""
    if ctx.topn is None:
        return None
    row = next((e for e in ctx.topn.entries if e.name == ctx.name), None)
    return launches_per_step(row, ctx.regime, ctx.topn) if row is not None else None


def _same_count(lps: float, layers: int) -> bool:
    return abs(lps - layers) <= _SAME_COUNT * layers


def _layer_plan(ctx: OpContext, lines: list[str]) -> _Plan:
    """Which attention layer kinds one launch covers, from the config's layer kinds and the
    kernel's launches per step: the count of every attention layer (or a whole multiple of
    it) is their mix; the count of exactly one kind is that kind; otherwise each kind is a
    candidate and the engine's feasibility rule keeps the largest feasible one."""
    if ctx.model is None:
        lines.append("no config.json: no sliding window known, every layer taken as full "
                     "attention (over-counts a windowed layer)")
        return _FULL_ONLY
    spans = _spans(ctx, lines)
    if not spans:
        return _FULL_ONLY
    if len(spans) == 1:
        s = spans[0]
        if s.kind == "sliding":
            lines.append(f"config: every attention layer slides over a {s.span}-token window")
        elif s.kind == "chunked":
            lines.append(f"config: every attention layer attends within its {s.span}-token "
                         "chunk")
        return _Plan(spans, True)
    total = sum(s.layers for s in spans)
    desc = " + ".join(s.describe() for s in spans)
    lps = _launches(ctx)
    if lps is None:
        lines.append(f"config: {desc} attention layers; this kernel's launches per step are "
                     "unknown, so it cannot be tied to a layer kind: each is a candidate and "
                     "the feasibility rule keeps the largest feasible one")
        return _Plan(spans, False)
    per_layer = round(lps / total)
    if per_layer >= 1 and _same_count(lps, per_layer * total):
        lines.append(f"config: {desc} attention layers; this kernel runs {lps:g} launches per "
                     f"step, {'once' if per_layer == 1 else f'{per_layer} times'} per attention "
                     f"layer, so one launch is the mean of its layers' work, weighted by layers")
        return _Plan(spans, True)
    tied = tuple(s for s in spans if _same_count(lps, s.layers))
    if len(tied) == 1:
        lines.append(f"config: {desc} attention layers; this kernel's {lps:g} launches per step "
                     f"are the {tied[0].describe()} layers: it serves those only")
        return _Plan(tied, True)
    which = tied or spans
    why = (f"match {len(tied)} layer kinds" if tied else
           f"match no layer kind (nor all {total} attention layers)")
    lines.append(f"config: {desc} attention layers; this kernel's {lps:g} launches per step "
                 f"{why}, so it cannot be tied to a layer kind: each is a candidate and the "
                 "feasibility rule keeps the largest feasible one")
    return _Plan(which, False)


def _plan_candidates(plan: _Plan, base: str, work: Callable[[_Span], tuple[float, float]],
                     lines: list[str], bound: str = "") -> list[Candidate]:
    """The candidates of a plan: one per kind, or their layer-weighted mean. ``work`` gives a
    kind's (bytes, flops) per launch; ``bound`` qualifies a windowed figure ("upper bound")."""
    figures = [(s, *work(s)) for s in plan.spans]
    for s, b, f in figures:
        if s.kind != "full":
            lines.append(f"{s.describe()} layers: bytes {b:.6g}, flops {f:.6g} per launch"
                         + (f" ({bound})" if bound else ""))
    if not plan.mix or len(figures) == 1:
        return [Candidate(s.label(base), b, f,
                          note=s.note() + (f", {bound}" if bound and s.note() else ""))
                for s, b, f in figures]
    n = sum(s.layers for s in plan.spans)
    mb = sum(s.layers * b for s, b, _ in figures) / n
    mf = sum(s.layers * f for s, _, f in figures) / n
    terms = " + ".join(f"{s.layers}·{b:.6g}" for s, b, _ in figures)
    lines.append(f"one launch = the mean over the {n} layers it serves: bytes ({terms})/{n} = "
                 f"{mb:.6g}, flops {mf:.6g}")
    desc = " + ".join(s.describe() for s in plan.spans)
    return [Candidate(f"{base} (layer mix)", mb, mf, note=f"mean over {desc} layers")]


# --------------------------------------------------------------------------- the rungs


def _bytes_flops(h: _Heads, sq: float, sk: float, pairs: float) -> tuple[float, float]:
    return (sq * h.h_q * (h.d_qk * h.b_q + h.d_v * h.b_o) + sk * h.kv_tok * h.b_kv,
            2.0 * h.h_q * (h.d_qk + h.d_v) * pairs)


def _compute_dtype(ctx: OpContext, q_dt: str, kv_dt: str, lines: list[str]) -> str:
    """The MMA dtype of QKᵀ and PV by the one compute-precision rule
    (:func:`core.precision.decide`), A = the query, B = the K/V: equal dtypes run in it, a
    mixed pair at the wider one (an fp8 KV cache read by a bf16 query is dequantised into
    bf16), and only in a dtype the device has matrix cores for; the evidence is appended to
    ``lines``."""
    prec = decide(roles=(q_dt, kv_dt), roles_from="the query and the K/V", device=ctx.device,
                  model_a=ctx.activation_dtype, operands=("query", "K/V"))
    lines.append(prec.evidence)
    if prec.compute is None:
        raise OpModelUnavailable(f"attention {prec.evidence}")
    return prec.compute


def _windowed_pairs(s_q: int, s_kv: int, w: int) -> int:
    """Σ over the S_q queries of min(keys it sees causally, W): query i sees S_kv − S_q + 1 + i."""
    o = s_kv - s_q + 1
    k = min(max(w - o, 0), s_q)  # queries that see fewer than W keys
    return k * o + k * (k - 1) // 2 + (s_q - k) * w


def _chunked_pairs(s_q: int, s_kv: int, c: int) -> int:
    """Σ over the S_q queries of the keys each sees in chunked local attention: the query at
    position p (of S_kv, the last S_q new) sees its own chunk's keys up to itself, p mod C + 1.
    With F(x) = Σ_{p<x} (p mod C + 1) = ⌊x/C⌋·C(C+1)/2 + r(r+1)/2 (r = x mod C), it is
    F(S_kv) − F(S_kv − S_q)."""
    def f(x: int) -> int:
        r = x % c
        return (x // c) * c * (c + 1) // 2 + r * (r + 1) // 2
    return f(s_kv) - f(s_kv - s_q)


def _dense_kinds(ctx: OpContext, h: _Heads, dn: _Dense, pairs_bh: int, causal: bool,
                 label: str, lines: list[str]) -> list[Candidate]:
    """A dense call's candidates over the layer kinds it may serve (exact per query)."""
    b, s_q, s_kv = dn.batch, dn.s_q, dn.s_kv

    def work(s: _Span) -> tuple[float, float]:
        if s.span is None:
            return _bytes_flops(h, b * s_q, b * s_kv, b * pairs_bh)
        if not causal:  # a window over both sides, or block-diagonal chunks: at most span keys
            rows, pairs = s_kv, s_q * min(s_kv, s.span)
        elif s.kind == "sliding":
            rows, pairs = min(s_kv, s_q + s.span - 1), _windowed_pairs(s_q, s_kv, s.span)
        else:
            rows = s_kv - s.span * ((s_kv - s_q) // s.span)
            pairs = _chunked_pairs(s_q, s_kv, s.span)
        return _bytes_flops(h, b * s_q, b * rows, b * pairs)

    plan = _layer_plan(ctx, lines)
    kinds = {s.kind for s in plan.spans}
    if "sliding" in kinds:
        lines.append("window W: each query sees min(its causal keys, W); K/V rows read "
                     "min(S_kv, S_q + W − 1) per batch element" if causal else
                     "window W on a non-causal call: at most W keys per query (an upper bound)")
    if "chunked" in kinds:
        lines.append("chunk C: the query at position p sees the p mod C + 1 keys of its own "
                     "chunk; K/V rows read from the first new query's chunk start" if causal else
                     "chunk C on a non-causal call: at most C keys per query (an upper bound)")
    return _plan_candidates(plan, label, work, lines)


def _aggregate_kinds(ctx: OpContext, h: _Heads, pc: _PerCall, pairs: float, label: str,
                     lines: list[str]) -> list[Candidate]:
    """The aggregates' candidates over the layer kinds the kernel may serve. A sliding or
    chunked layer lets a query see at most S keys (S = W or C), so ``sk ≤ sq + rows·(S − 1)``
    and ``pairs ≤ sq·S``: upper bounds, each request's own lengths not being recorded."""
    rows = pc.requests if pc.requests is not None else pc.sq

    def work(s: _Span) -> tuple[float, float]:
        if s.span is None:
            return _bytes_flops(h, pc.sq, pc.sk, pairs)
        return _bytes_flops(h, pc.sq, min(pc.sk, pc.sq + rows * (s.span - 1)),
                            min(pairs, pc.sq * s.span))

    plan = _layer_plan(ctx, lines)
    for s in plan.spans:
        if s.span is not None:
            who = "requests" if pc.requests is not None else "sq (requests not recorded)"
            name = "W" if s.kind == "sliding" else "C"
            lines.append(f"{s.kind} {name}={s.span}: sk ≤ min(sk, sq + {who}·({name}−1)) = "
                         f"{min(pc.sk, pc.sq + rows * (s.span - 1)):g}, pairs ≤ min(pairs, "
                         f"sq·{name}) = {min(pairs, pc.sq * s.span):g} per call, upper bounds "
                         "from the aggregates")
    return _plan_candidates(plan, label, work, lines, bound="upper bound")


def _causality(ctx: OpContext, h: _Heads, dn: _Dense) -> tuple[bool, str]:
    """(whether the dense call is causal, why). The recorded ``is_causal`` decides; without
    it a mask (values unrecorded), S_q > S_kv or a single query row need no assumption, and a
    config.json (a decoder: causal self-attention layers) settles it. Otherwise the FLOPs
    differ by up to 2× on the one figure a prefill-shaped call's verdict rests on: no
    verdict (raises, saying what would settle it)."""
    s_q, s_kv = dn.s_q, dn.s_kv
    op = (ctx.instance.op if ctx.instance is not None else None) or "the launching op"
    if dn.causal is not None:
        said = (f"is_causal={dn.causal} recorded ({op}'s Concrete Inputs)"
                if normalise(op) != _MASK_TYPE_OP else
                f"custom_mask_type recorded: {'causal' if dn.causal else 'no mask'} ({op})")
        if dn.causal and s_q > s_kv:
            return False, (f"{said}, but S_q {s_q} > S_kv {s_kv}: the full rectangle is counted "
                           "(an upper bound)")
        return dn.causal, said if dn.causal else f"{said}: every query sees every key"
    if dn.masked:
        return False, ("an attention mask is recorded (its values are not), so every query–key "
                       "pair is counted")
    if s_q > s_kv:
        return False, f"S_q {s_q} > S_kv {s_kv} is not a decoder self-attention: full rectangle"
    if s_q == 1:
        return True, ("one query row: causal or not it sees all its keys (is_causal is not "
                      "recorded and need not be)")
    if ctx.model is not None:
        return True, ("causal assumed (is_causal is not recorded; config.json describes a "
                      "decoder, whose attention layers are causal self-attention)")
    causal_f = 2.0 * dn.batch * h.h_q * (h.d_qk + h.d_v) * (s_q * s_kv - s_q * (s_q - 1) // 2)
    full_f = 2.0 * dn.batch * h.h_q * (h.d_qk + h.d_v) * s_q * s_kv
    raise OpModelUnavailable(
        f"dense attention {op} with S_q {s_q}, S_kv {s_kv}: is_causal is not recorded and there "
        f"is no config.json, so whether the call is causal ({causal_f:.4g} FLOPs) or not "
        f"({full_f:.4g} FLOPs) is unknown, and a prefill-shaped call's verdict turns on it; "
        "the op's Concrete Inputs (a trace recorded with record_shapes=True) or the model's "
        "config.json would settle it")


def _dense_estimate(ctx: OpContext, rec: _Recorded, lines: list[str],
                    selected: int | None) -> OpEstimate:
    h, dn = rec.heads, rec.dense
    assert dn is not None
    b, s_q, s_kv = dn.batch, dn.s_q, dn.s_kv
    causal, why = _causality(ctx, h, dn)
    compat: float | None = None
    if causal:
        pairs_bh = s_q * s_kv - s_q * (s_q - 1) // 2
        compat = s_q * s_kv - s_q * s_q / 2
        why += (f": S·(S+1)/2 = {pairs_bh} pairs per batch element and head" if s_q == s_kv
                else f", aligned to the last of {s_kv} keys: S_q·S_kv − S_q·(S_q−1)/2 = "
                     f"{pairs_bh} pairs per batch element and head")
    else:
        pairs_bh = s_q * s_kv
        why += f": S_q·S_kv = {pairs_bh} pairs per batch element and head"
    lines.append(why)
    if dn.scale is not None:
        fits = abs(dn.scale * math.sqrt(h.d_qk) - 1.0) < 1e-6
        lines.append(f"softmax scale {dn.scale:.6g} recorded" + (
            f" = 1/√d_qk (d_qk {h.d_qk}: the recorded head dim agrees)" if fits else
            f", not 1/√{h.d_qk}: a model-specific scale (it changes no FLOPs)"))
    bytes_, flops = _bytes_flops(h, b * s_q, b * s_kv, b * pairs_bh)
    line = (f"flops = 2·B·H_Q·(d_qk+d_v)·pairs = 2·{b}·{h.h_q}·{h.d_qk + h.d_v}·{pairs_bh} = "
            f"{flops:.6g}")
    if compat is not None and causal:
        line += (f" (diagonal included; TraceLens's compat form S_q·S_kv − S_q²/2 gives "
                 f"{2.0 * b * h.h_q * (h.d_qk + h.d_v) * compat:.6g})")
    lines.append(line)
    lines.append(f"bytes = Q + K + V + O once each = {bytes_:.6g} (tiles re-read from L2, not HBM)")
    label = "qkvo" if s_q > 1 else "kv-stream"
    cands: list[Candidate] = []
    if selected is not None:
        pairs_s = (_windowed_pairs(s_q, s_kv, selected) if causal
                   else s_q * min(s_kv, selected))
        sb, sf = _bytes_flops(h, b * s_q, b * min(s_kv, s_q * selected), b * pairs_s)
        lines.append(f"sparse attention: each query reads at most {selected} selected tokens "
                     f"(config): bytes {sb:.6g}, flops {sf:.6g}")
        cands.append(Candidate(label, sb, sf, note=f"sparse: {selected} selected tokens"))
    else:
        cands += _dense_kinds(ctx, h, dn, pairs_bh, causal, label, lines)
    return OpEstimate(
        model="dense attention from the recorded shapes: flops=2·B·H_Q·(d_qk+d_v)·pairs, "
              "bytes=Q+K+V+O",
        candidates=tuple(cands),
        compute_dtype=_compute_dtype(ctx, h.q_dtype, h.kv_dtype, lines),  # before assumptions
        per="logical_op",
        unit="attention layer",
        assumptions=tuple(lines),
        prior="attn_prefill" if s_q > 1 else None,
    )


def _mla_heads(ctx: OpContext, rec: _Recorded | None, lines: list[str]) -> _Heads | None:
    """Absorbed-MLA decode heads when the config says MLA (else None)."""
    model = ctx.model
    if ctx.regime != "decode" or model is None or model.attention_kind != "mla" \
            or model.mla is None:
        return None
    lora, rope = model.mla.kv_lora_rank, model.mla.qk_rope_head_dim
    if rec is not None:
        h_q, q_dt, kv_dt, o_dt = (rec.heads.h_q, rec.heads.q_dtype, rec.heads.kv_dtype,
                                  rec.heads.q_dtype)
    else:
        h_q, _, _ = _config_heads(ctx, lines)
        q_dt = o_dt = ctx.activation_dtype
        kv_dt = ctx.kv_dtype
    lines.append(f"MLA (config): absorbed decode, d_qk = kv_lora+rope = {lora + rope}, d_v = "
                 f"kv_lora = {lora}; one latent of {lora + rope} elems/token read once (not as "
                 f"K plus V), at {kv_dt}")
    return _Heads(h_q=h_q, h_kv=1, d_qk=lora + rope, d_v=lora, kv_tok=lora + rope, q_dtype=q_dt,
                  kv_dtype=kv_dt, b_q=ctx.nbytes(q_dt), b_o=ctx.nbytes(o_dt),
                  b_kv=ctx.nbytes(kv_dt))


def _aggregate_estimate(ctx: OpContext, rec: _Recorded | None, pc: _PerCall,
                        lines: list[str], selected: int | None) -> OpEstimate:
    h = _mla_heads(ctx, rec, lines)
    if h is None:
        if rec is not None:
            h = rec.heads
        else:
            n_q, n_kv, hd = _config_heads(ctx, lines)
            h = _heads(ctx, n_q, n_kv, hd, hd, ctx.activation_dtype, ctx.activation_dtype,
                       ctx.kv_dtype)
            lines.append(f"heads from config.json (no recorded instance): H_Q={n_q}, H_KV={n_kv}, "
                         f"d={hd}; Q/O {ctx.activation_dtype}, K/V {ctx.kv_dtype}")
    if rec is not None and rec.tokens is not None and rec.tokens != round(pc.sq):
        lines.append(f"the recorded query has {rec.tokens} rows (a capture size or one launch) "
                     f"against {pc.sq:g} query tokens per step in the aggregates; the aggregates "
                     "are used")
    decode = ctx.regime == "decode"
    pairs = pc.sqk - (pc.sqq - pc.sq) / 2.0
    if pc.sqq > pc.sq:
        lines.append(f"causal pairs = sq·sk − (sq² − sq)/2 = {pairs:g} per call (the triangle of "
                     f"each request's new tokens, diagonal included; TraceLens's compat form "
                     f"sq·sk − sq²/2 = {pc.sqk - pc.sqq / 2.0:g} pairs gives "
                     f"{2.0 * h.h_q * (h.d_qk + h.d_v) * (pc.sqk - pc.sqq / 2.0):.6g} FLOPs)")
    else:
        lines.append(f"pairs = sq·sk = {pairs:g} per call (one query per request: no causal "
                     "triangle)")
    if pc.requests:
        lines.append(f"mean KV length per request = sk/requests = {pc.sk / pc.requests:g} tokens "
                     "(from the aggregates, not isl + osl/2)")
    bytes_, flops = _bytes_flops(h, pc.sq, pc.sk, pairs)
    lines.append(
        f"bytes = sq·H_Q·(d_qk·b_q + d_v·b_o) + sk·{h.kv_tok}·b_kv = {pc.sq:g}·{h.h_q}·"
        f"({h.d_qk}·{h.b_q:g} + {h.d_v}·{h.b_o:g}) + {pc.sk:g}·{h.kv_tok}·{h.b_kv:g} = "
        f"{bytes_:.6g}; flops = 2·H_Q·(d_qk+d_v)·pairs = {flops:.6g}")
    label = "kv-stream" if decode else "qkvo"
    cands: list[Candidate] = []
    if selected is not None:
        sk_s, pairs_s = min(pc.sk, pc.sq * selected), min(pairs, pc.sq * selected)
        sb, sf = _bytes_flops(h, pc.sq, sk_s, pairs_s)
        lines.append(f"sparse attention: each query reads at most {selected} selected tokens "
                     f"(config): sk ≤ min(sk, sq·{selected}) = {sk_s:g}, an upper bound: bytes "
                     f"{sb:.6g}, flops {sf:.6g}")
        cands.append(Candidate(label, sb, sf, note=f"sparse: {selected} selected tokens"))
    else:
        cands += _aggregate_kinds(ctx, h, pc, pairs, label, lines)
    if not decode:
        lines.append("regime group only: in a mixed step a unified kernel's generation-group "
                     "work is not in the prefill aggregates (under-counts that part)")
    kind = "paged decode" if decode else "varlen causal prefill"
    return OpEstimate(
        model=f"{kind} from the step aggregates: bytes=sq·H_Q·(d_qk+d_v)+sk·KV/token, "
              "flops=2·H_Q·(d_qk+d_v)·(sq·sk − (sq²−sq)/2)",
        candidates=tuple(cands),
        compute_dtype=_compute_dtype(ctx, h.q_dtype, h.kv_dtype, lines),  # before assumptions
        per="logical_op",
        unit="attention layer",
        assumptions=tuple(lines),
        prior=None if decode else "attn_prefill",
    )


class _ConfigWork(NamedTuple):
    """Heads, element sizes and dtypes the config fallback estimates with."""

    n_q: int
    n_kv: int
    hd: int
    kv: float
    a: float
    kv_dt: str
    a_dt: str


def _config_estimate(ctx: OpContext, rec: _Recorded | None, lines: list[str],
                     selected: int | None) -> OpEstimate:
    """The labelled last resort: config heads (or the recorded ones) and the workload."""
    if ctx.model is None and rec is None:
        raise OpModelUnavailable(
            "attention: no recorded instance with its heads, no step aggregates with sk for the "
            f"{ctx.regime} regime and no model config.json; any of the first two, or the "
            "config with workload isl/osl, would settle it")
    assumptions = lines
    if rec is not None:
        cw = _ConfigWork(rec.heads.h_q, rec.heads.h_kv, rec.heads.d_qk, rec.heads.b_kv,
                         rec.heads.b_q, rec.heads.kv_dtype, rec.heads.q_dtype)
    else:
        n_q, n_kv, hd = _config_heads(ctx, assumptions)
        cw = _ConfigWork(n_q, n_kv, hd, ctx.nbytes(ctx.kv_dtype),
                         ctx.nbytes(ctx.activation_dtype), ctx.kv_dtype, ctx.activation_dtype)
    prior: str | None = None
    plan = _FULL_ONLY if selected is not None else _layer_plan(ctx, assumptions)
    if ctx.regime == "decode":
        name, cands = _config_decode(ctx, rec, cw, plan, selected, assumptions)
    else:
        name, cands = _config_prefill(ctx, cw, plan, selected, assumptions)
        prior = "attn_prefill"
    compute_dt = _compute_dtype(ctx, cw.a_dt, cw.kv_dt, assumptions)
    return OpEstimate(
        model=name,
        candidates=tuple(cands),
        compute_dtype=compute_dt,
        per="logical_op",
        unit="attention layer",
        assumptions=tuple(assumptions),
        prior=prior,
    )


def _config_decode(ctx: OpContext, rec: _Recorded | None, cw: _ConfigWork, plan: _Plan,
                   selected: int | None,
                   assumptions: list[str]) -> tuple[str, list[Candidate]]:
    """Paged decode from the workload: every sequence streams its KV at isl + osl/2."""
    wl = ctx.workload
    model = ctx.model
    n_q, n_kv, hd, kv = cw.n_q, cw.n_kv, cw.hd, cw.kv
    batch = ctx.require_tokens("paged decode attention")
    if wl.isl is None or wl.osl is None:
        raise OpModelUnavailable(
            "paged decode attention needs the KV length: step annotations with sk "
            "(vLLM detailed step labels, SGLang step[...] or ATOM labels), or workload isl "
            "and osl for the isl + osl/2 estimate")
    seq = wl.isl + wl.osl / 2.0
    assumptions.append(
        f"seq_len = isl + osl/2 = {seq:g} (average context mid-run; a real source of error; "
        "no step aggregates for this regime)"
    )
    if selected is not None:
        assumptions.append(
            f"sparse attention: each query reads the KV of min(seq_len, {selected} selected "
            f"tokens) = {min(seq, selected):g} tokens (config)"
        )
        seq = min(seq, float(selected))
    assumptions.append(f"batch = {batch} ({ctx.tokens_source})")
    if model is not None and model.attention_kind == "mla" and model.mla is not None:
        lora = model.mla.kv_lora_rank
        latent = lora + model.mla.qk_rope_head_dim

        def work(s: float) -> tuple[float, float]:
            return batch * s * latent * kv, 2.0 * batch * n_q * s * (latent + lora)
        assumptions.append(
            f"MLA: latent cache of {latent} elems/token at kv {cw.kv_dt} {kv:g} B, "
            "weights absorbed (QK over latent+rope, PV over latent)"
        )
        name = "MLA decode: batch·seq·(kv_lora+rope)·kv_bytes"
    else:
        def work(s: float) -> tuple[float, float]:
            return batch * s * n_kv * hd * 2 * kv, 2.0 * batch * n_q * s * hd * 2
        assumptions.append(
            f"{n_kv} kv heads × head_dim {hd} × 2 (K,V) at kv {cw.kv_dt} {kv:g} B; "
            f"{n_q} q heads; Q and output negligible"
            + (" (heads from the recorded instance)" if rec is not None else "")
        )
        name = "paged decode: batch·seq·n_kv·hd·2·kv_bytes"
    if selected is not None:
        name = "sparse " + name.replace("seq", "selected")
    for s in plan.spans:
        if s.span is not None:
            assumptions.append(
                f"{s.kind} layers: seq_len capped at min(seq_len, {s.span}) = "
                f"{min(seq, float(s.span)):g}"
                + (" (an upper bound: a request at position p sees p mod C + 1 keys)"
                   if s.kind == "chunked" else ""))
    cands = _plan_candidates(
        plan, "kv-stream",
        lambda s: work(seq if s.span is None else min(seq, float(s.span))), assumptions)
    return name, cands


def _config_prefill(ctx: OpContext, cw: _ConfigWork, plan: _Plan, selected: int | None,
                    assumptions: list[str]) -> tuple[str, list[Candidate]]:
    """Causal prefill of one chunk: Q, O, K and V once; half the context per query."""
    n_q, n_kv, hd = cw.n_q, cw.n_kv, cw.hd
    tokens = ctx.require_tokens("prefill attention")
    ctx_avg = tokens / 2.0
    keys = ctx_avg if selected is None else min(ctx_avg, float(selected))
    flops = 2.0 * 2.0 * n_q * hd * tokens * keys
    bytes_ = tokens * hd * (2 * n_q * cw.a + 2 * n_kv * cw.kv)
    assumptions += [
        f"prefill chunk of {tokens} tokens ({ctx.tokens_source}); causal: average context "
        f"{ctx_avg:g} keys per query"
        + (f", sparse: {keys:g} selected keys per query (config)" if selected else "")
        + ("; no step aggregates for this regime" if ctx.steps is None else ""),
        "bytes: Q and output once, K and V once (tiles re-read from L2, not HBM)",
    ]
    name = ("causal prefill: flops=4·n_q·hd·T·T/2, bytes=Q+O+K+V" if selected is None
            else "sparse causal prefill: flops=4·n_q·hd·T·selected, bytes=Q+O+K+V")
    def work(s: _Span) -> tuple[float, float]:
        if s.span is None:
            return bytes_, flops
        return bytes_, 2.0 * 2.0 * n_q * hd * tokens * min(keys, float(s.span))

    for s in plan.spans:
        if s.span is not None:
            assumptions.append(f"{s.kind} layers: at most {s.span} keys per query")
    return name, _plan_candidates(plan, "qkvo", work, assumptions)


def estimate(ctx: OpContext) -> OpEstimate:
    base = _base_name(ctx.name)
    if _SPLIT_REDUCE.search(base):
        raise OpModelUnavailable(
            f"{base} is the split-KV reduce/combine step of an attention op: it reads the "
            "partitions' partial outputs and softmax sums, whose partition count the trace does "
            "not record; the op's KV traffic is modelled on its main kernel")
    lines: list[str] = []
    rec = _read_instance(ctx, lines)
    selected = _selected_tokens(ctx)
    if rec is not None and rec.dense is not None:
        return _dense_estimate(ctx, rec, lines, selected)
    pc = _per_call(ctx, lines)
    if pc is not None:
        _check_group(ctx, base)
        return _aggregate_estimate(ctx, rec, pc, lines, selected)
    return _config_estimate(ctx, rec, lines, selected)


def _fp8_kv(lc: LeverContext) -> list[str]:
    if lc.kv_dtype not in ("bf16", "fp16"):
        return []
    return ["fp8 KV cache (kv-cache-dtype fp8): halves the KV bytes read per step "
            "(lossy — must pass the accuracy gate)"]


def levers(lc: LeverContext) -> list[str]:
    return fuse_adjacent(lc, ADJACENT_OPS) + _fp8_kv(lc)


MODEL = FunctionModel("attn", PRIORS, estimate, levers, instance_tensors=1)
