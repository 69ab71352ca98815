"""MoE / grouped expert GEMM (spec §4): at decode, the streamed expert weights dominate.

``pairs = M·top_k``; ``experts_hit = E·(1 − (1 − 1/E)^pairs)``. The logical op is one MoE layer
(gate/up + down projections). Backends either run it as one fused kernel, or split it into a
stage-1 kernel (gate/up, ``w1 [E, 2I, H]``) and a stage-2 kernel (down, ``w2 [E, H, I]``) that
appear as separate Top-N entries. A split stage is modelled alone, per launch, with its own
weights and activations:

* whole layer: ``bytes = hit·3·H·I·w + activations``, ``flops = 2·pairs·3·H·I``
* stage 1:     ``bytes = hit·2·I·H·w + M·H·a + pairs·(2I, or I with a fused activation)·a``,
  ``flops = 2·pairs·2I·H``
* stage 2:     ``bytes = hit·H·I·w + pairs·I·a + M·H·a``, ``flops = 2·pairs·H·I``

Which part a kernel runs is decided from the Top-N as a whole (:func:`topn_stage`): its own
evidence first (a stage word in its name or its launching op, a fused activation epilogue, both
expert weights recorded), then its siblings — an MoE kernel with the same launches per step as a
sibling that is stage 1 is that layer's stage 2, and the reverse — then its launch count (one
name launched twice per MoE layer is one logical unit of both stages), then a single recorded
expert weight, else the whole layer.

Sub-byte MX weights carry block scales: one e8m0 byte per 32 elements (mxfp4, mxfp6), one fp8
byte per 16 for nvfp4; they are added to the weight bytes.

When it is unknown whether the kernel skips unrouted experts, the ``experts_hit`` figure is
reported and the all-expert figure is kept as an alternative (spec §4); only a kernel known to
stream every expert reports the all-expert figure.
"""


import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from threading import Lock
from typing import Literal, NamedTuple

from roofline_tui.core.classify import MOE_STAGE1_RE as _STAGE1_RE
from roofline_tui.core.classify import MOE_STAGE2_RE as _STAGE2_RE
from roofline_tui.core.classify import classify, stage_in_name
from roofline_tui.core.inputs import TopN, TopNEntry, launches_per_step
from roofline_tui.core.lazy_re import lazy_compile
from roofline_tui.core.model_config import ModelShape
from roofline_tui.core.opmodels.base import (
    Candidate,
    FunctionModel,
    LeverContext,
    OpContext,
    OpEstimate,
    OpModelUnavailable,
    Prior,
    fuse_adjacent,
    lower_precision_weights,
)
from roofline_tui.core.precision import decide

PRIORS: Mapping[str, Prior] = {
    "moe": Prior("moe", 0.90,
                 "MoE / grouped GEMM: decode weight streaming is essentially a memcpy (spec §7)",
                 roof="hbm"),
}
# An MoE layer's act-and-mul sits between its two GEMMs, its activation quant before them.
ADJACENT_OPS = ("act_and_mul", "quant", "routing")

EXPERTS_HIT = "experts_hit"
ALL_EXPERTS = "all-experts"

Stage = Literal["layer", "stage1", "stage2"]

# A fused activation epilogue (gpt-oss ``_matmul_ogs_*_swiglu``, trtllm ``bmm_*_swiGlu``) can only
# sit on the gate/up GEMM: the kernel is stage 1 and writes I, not 2I, per pair.
_FUSED_ACT_RE = lazy_compile(r"swi_?glu|silu|gelu|geglu|act_?and_?mul", re.IGNORECASE)
# Implementations known to stream every expert regardless of routing.
_STREAMS_ALL_RE = lazy_compile(r"dense_?moe|moe_?dense|all_?experts", re.IGNORECASE)
# torch-inductor pointwise / reduction kernels (``triton_poi_fused_constant_pad_nd_moe_forward_0``
# pads the MoE input) are never an expert GEMM, whatever fused op their name carries.
_NOT_A_GEMM_RE = lazy_compile(r"^triton_(?:poi|red|per)_", re.IGNORECASE)
# The MoE layer's helper kernels: routing (trtllm-gen ``routingMainKernel``,
# ``routingIndicesClusterKernel``; vLLM ``moe_align_block_size``, ``topk_softmax``), token
# permutation and the finalize / combine reduction (``finalizeKernel``, ``moe_sum``). They run
# once per MoE layer like the expert GEMMs, often from the same launching op, but are neither
# stage: they are no sibling. A name with a GEMM word (``bmm_``, ``gemm``, ``matmul``) is never
# one of them, whatever else it says.
_MOE_HELPER_RE = lazy_compile(
    r"routing|finali[sz]e|moe_?align|top_?k|moe_?sort|count_and_sort|moe_?sum|permute|"
    r"expand_?input|histogram|prepare_?moe|expert_?map|arg_?sort|shuffle_?rows|"
    r"ep_?(?:scatter|gather)|moe_?(?:scatter|gather)|combine", re.IGNORECASE)
_GEMM_WORD_RE = lazy_compile(r"gemm|matmul|\bbmm|bmm_|_mm_|fused_moe_kernel|ck_moe|fmoe",
                             re.IGNORECASE)
_NVFP4_RE = lazy_compile(r"nvfp4|nv_?fp4", re.IGNORECASE)
_MX_RE = lazy_compile(r"mx_?fp[46]|mxf[46]", re.IGNORECASE)


def block_scale_bytes(weight_dtype: str, name: str) -> tuple[float, str]:
    """Bytes of block scale per weight element, and how they were counted.

    Sub-byte microscaling formats carry one scale per small block, streamed with the weights:
    mxfp4 / mxfp6 (OCP MX) one e8m0 byte per 32 elements, nvfp4 one fp8 (e4m3) byte per 16.
    Wider formats' per-channel or 128-block scales are under 0.1 % and are not counted."""
    if weight_dtype not in ("fp4", "fp6"):
        return 0.0, ""
    if weight_dtype == "fp4" and _NVFP4_RE.search(name):
        return 1.0 / 16, ("block scales counted: nvfp4 in the kernel name, one fp8 (e4m3) "
                          "scale byte per 16 weight elements = 0.0625 B/elem")
    said = _MX_RE.search(name)
    where = (f"'{said.group(0)}' in the kernel name" if said
             else "the OCP MX layout assumed for sub-byte weights")
    return 1.0 / 32, (f"block scales counted: {where}, one e8m0 scale byte per 32 weight "
                      "elements = 0.03125 B/elem")


def experts_hit(num_experts: int, pairs: float) -> float:
    """Expected number of distinct experts touched by ``pairs`` uniform (token, expert) picks."""
    e = float(num_experts)
    return float(e * (1.0 - (1.0 - 1.0 / e) ** pairs))


class Geometry(NamedTuple):
    experts: int
    hidden: int
    inter: int          # expert intermediate size per rank
    top_k: int
    source: str


# What decided a kernel's stage, strongest first. name/op/epilogue (and both weights recorded,
# a whole layer) are the kernel's own word and stand; a single recorded weight yields to the
# siblings and to the launch count, since one launch's operands may be all a trace recorded.
Evidence = Literal["name", "op", "epilogue", "weights", "sibling", "launches", "default"]
_OWN_WORD: frozenset[str] = frozenset({"name", "op", "epilogue"})


class StageInfo(NamedTuple):
    stage: Stage
    fused_act: bool
    why: str
    evidence: Evidence = "default"


def _weights(ctx: OpContext) -> list[list[int]]:
    return _weights_of(ctx.shapes)


def _weights_of(shapes: Iterable[Iterable[list[int]]]) -> list[list[int]]:
    return [d for shape_set in shapes for d in shape_set if len(d) == 3 and all(d)]


def _geometry(ctx: OpContext, stage2: bool | None = None) -> tuple[Geometry, list[str]]:
    """The MoE geometry from config.json, else from the recorded weight; ``stage2`` says how to
    read a recorded weight (``w2 [E, H, I]`` or ``w1 [E, 2I, H]``), by default from the name."""
    notes: list[str] = []
    model: ModelShape | None = ctx.model
    if model is not None and model.num_experts and model.top_k and model.moe_intermediate_size:
        inter = model.moe_intermediate_size
        tp, why = ctx.tensor_parallel("the MoE model's per-rank expert width")
        if tp > 1:
            inter = max(1, inter // tp)
            notes.append(f"TP={tp}: expert intermediate sharded to {inter} per rank"
                         + (f" ({why})" if why else ""))
        return Geometry(model.num_experts, model.hidden_size, inter, model.top_k,
                        "config.json"), notes
    weights = _weights(ctx)
    if not weights or model is None or not model.top_k:
        raise OpModelUnavailable(
            "MoE model needs num_experts, top_k and moe_intermediate_size (config.json) or a "
            "recorded [E, 2I, H] weight plus top_k; neither was available"
        )
    e, n, k = weights[0]
    if stage2 is None:
        stage2 = _STAGE2_RE.search(ctx.name) is not None and _STAGE1_RE.search(ctx.name) is None
    if stage2:  # w2 [E, H, I]
        return Geometry(e, n, k, model.top_k, "the recorded w2 weight [E, H, I]"), notes
    return Geometry(e, k, n // 2 if n % 2 == 0 else n, model.top_k,
                    "the recorded w1 weight [E, 2I, H]"), notes


def _stage_of_ops(ops: Iterable[str]) -> tuple[Literal["stage1", "stage2"], str] | None:
    """The stage the launching ops state (``aiter::ck_moe_stage1``), when every op that states
    one states the same; the first such op is named."""
    said: dict[str, str] = {}
    for op in ops:
        named = stage_in_name(op)
        if named is not None:
            said.setdefault(named[0], op)
    if len(said) != 1:
        return None
    stage, op = next(iter(said.items()))
    return ("stage1" if stage == "stage1" else "stage2"), op


def moe_stage(name: str, weights: list[list[int]], geo: Geometry | None,
              ops: Sequence[str] = ()) -> StageInfo:
    """Which part of the MoE layer one launch of this kernel runs, from its own evidence only.

    The kernel name decides first (stage1/gemm1/gate_up/g1u1/moe1 vs stage2/gemm2/moe2/down),
    then its launching ops (``ops``: ``aiter::ck_moe_stage2``), then a fused activation epilogue
    (only the gate/up GEMM carries one); then the recorded expert weights when the geometry is
    known: ``w1 [E, 2I, H]`` (or its transpose) alone is stage 1, ``w2 [E, H, I]`` alone is
    stage 2, both together a whole layer. Nothing: the whole layer (``evidence="default"``);
    :func:`topn_stage` then asks the kernel's siblings.
    """
    fused_act = _FUSED_ACT_RE.search(name) is not None
    named = stage_in_name(name)
    if named is not None:
        stage, words = named
        if stage == "stage1":
            return StageInfo("stage1", fused_act, f"kernel name says stage 1 ('{words}')", "name")
        return StageInfo("stage2", False, f"kernel name says stage 2 ('{words}')", "name")
    by_op = _stage_of_ops(ops)
    if by_op is not None:
        stage, op = by_op
        n = "1" if stage == "stage1" else "2"
        return StageInfo(stage, fused_act and stage == "stage1",
                         f"its launching op `{op}` says stage {n}", "op")
    if fused_act and not _STAGE1_RE.search(name) and not _STAGE2_RE.search(name):
        return StageInfo("stage1", True, "a fused activation epilogue in the name: only the "
                                         "gate/up GEMM carries one", "epilogue")
    if geo is not None and weights:
        h, i = geo.hidden, geo.inter
        kinds = set()
        for _, n_, k in weights:
            if {n_, k} == {2 * i, h}:
                kinds.add("w1")
            elif {n_, k} == {h, i}:
                kinds.add("w2")
        if kinds == {"w1"}:
            return StageInfo("stage1", fused_act, "the recorded expert weight is w1 [E, 2I, H]",
                             "weights")
        if kinds == {"w2"}:
            return StageInfo("stage2", False, "the recorded expert weight is w2 [E, H, I]",
                             "weights")
        if kinds == {"w1", "w2"}:
            return StageInfo("layer", False, "both expert weights (w1 and w2) are recorded: one "
                                             "fused kernel for the whole MoE layer", "weights")
    return StageInfo("layer", False, "one fused kernel for the whole MoE layer")


# --------------------------------------------------------------------------- the Top-N as a whole


_SAME = 0.02  # two launch counts within 2 % of each other are the same count


def _same_launches(a: float, b: float) -> bool:
    return a > 0 and b > 0 and abs(a - b) <= _SAME * max(a, b)


def _ops_of(entry: TopNEntry | None) -> frozenset[str]:
    """The launching ops recorded for the entry: the ``cpu_op`` that launched it, or for a
    graph-replayed kernel the op that launched it while the graph was captured."""
    if entry is None or entry.ext is None:
        return frozenset()
    return frozenset(i.op for i in entry.ext.instances if i.op)


def _captured(entry: TopNEntry | None, op: str) -> bool:
    """Whether the entry's launches by ``op`` were attributed from a graph-capture trace."""
    return entry is not None and entry.ext is not None and any(
        i.op == op and i.source == "capture" for i in entry.ext.instances)


def moe_helper(name: str) -> str | None:
    """The word that makes ``name`` one of the MoE layer's routing / permute / finalize
    kernels (:data:`_MOE_HELPER_RE`), or None: an expert GEMM, or not MoE at all."""
    if _GEMM_WORD_RE.search(name):
        return None
    said = _MOE_HELPER_RE.search(name)
    return said.group(0) if said else None


class Sibling(NamedTuple):
    """Another MoE kernel of the Top-N with the same launches per step, and its own stage."""

    short_name: str
    own: StageInfo
    ops: frozenset[str]


class _Family(NamedTuple):
    """This kernel's row, its launches per step and its MoE siblings in the Top-N; ``helpers``:
    the same-count routing / finalize kernels left out of the family (short name, the word)."""

    row: TopNEntry | None
    launches: float | None
    siblings: tuple[Sibling, ...]
    helpers: tuple[tuple[str, str], ...] = ()


class _Index:
    """One Top-N's entries in one regime, sorted by launches per step, so that a head's
    same-count entries are found by bisection; each is classified once, when first asked.
    Built once per (Top-N, regime): every MoE head and every stage-B case of one analysis
    reads the same index instead of scanning a 10,000-entry Top-N again."""

    def __init__(self, topn: TopN, regime: str) -> None:
        self.entries = topn.entries
        self.size = len(topn.entries)
        counted = sorted((lps, i) for i, e in enumerate(topn.entries)
                         if (lps := launches_per_step(e, regime, topn)))
        self._keys = [k for k, _ in counted]
        self._rows = [topn.entries[i] for _, i in counted]
        self._moe: dict[tuple[int, bool | None], bool] = {}
        self._helper: dict[int, str | None] = {}
        self.by_name: dict[str, TopNEntry] = {}
        for e in topn.entries:
            self.by_name.setdefault(e.name, e)

    def same_count(self, lps: float) -> list[int]:
        lo = bisect_left(self._keys, lps * (1 - _SAME))
        hi = bisect_right(self._keys, lps / (1 - _SAME))
        return [i for i in range(lo, hi) if _same_launches(lps, self._keys[i])]

    def row(self, i: int) -> TopNEntry:
        return self._rows[i]

    def is_moe(self, i: int, experts: bool | None) -> bool:
        """Whether row ``i`` is an MoE kernel of any kind (expert GEMM or helper), classified
        as the engine classifies it: with its launching ops and module paths as evidence."""
        key = (i, experts)
        if key not in self._moe:
            e = self._rows[i]
            ops = [t for x in (e.ext.instances if e.ext is not None else [])
                   for t in (x.op, x.module) if t]
            self._moe[key] = not _NOT_A_GEMM_RE.search(e.name) and classify(
                e.name, e.classification, e.shapes, has_experts=experts,
                ops=ops).op_class == "moe"
        return self._moe[key]

    def helper(self, i: int) -> str | None:
        """The routing / finalize word in row ``i``'s name (:func:`moe_helper`), else None."""
        if i not in self._helper:
            self._helper[i] = moe_helper(self._rows[i].name)
        return self._helper[i]


# The indexes of the four most recent (Top-N, regime) pairs, each held with its Top-N so the
# identity test is sound (a Top-N held here cannot be freed and its id reused).
_INDEXES: list[tuple[TopN, str, _Index]] = []
_INDEX_LOCK = Lock()
_MAX_SIBLINGS = 16  # more same-count MoE kernels than this cannot pair anyway


def _index(topn: TopN, regime: str) -> _Index:
    with _INDEX_LOCK:
        for t, r, idx in _INDEXES:
            if (t is topn and r == regime and idx.entries is topn.entries
                    and idx.size == len(topn.entries)):
                return idx
    idx = _Index(topn, regime)
    with _INDEX_LOCK:
        _INDEXES.insert(0, (topn, regime, idx))
        del _INDEXES[4:]
    return idx


def _family(ctx: OpContext, geo: Geometry | None) -> _Family:
    topn = ctx.topn
    if topn is None:
        return _Family(None, None, ())
    idx = _index(topn, ctx.regime)
    row = idx.by_name.get(ctx.name)
    lps = launches_per_step(row, ctx.regime, topn) if row is not None else None
    if lps is None:
        return _Family(row, None, ())
    # as the engine asks: None when no config.json says whether the model has experts
    experts = bool(ctx.model.num_experts) if ctx.model is not None else None
    out: list[Sibling] = []
    helpers: list[tuple[str, str]] = []
    for i in idx.same_count(lps):
        e = idx.row(i)
        if e.name == ctx.name or not idx.is_moe(i, experts):
            continue
        word = idx.helper(i)
        if word is not None:  # routing / finalize: the same count, but neither stage
            helpers.append((e.short_name, word))
            continue
        ops = _ops_of(e)
        out.append(Sibling(e.short_name, moe_stage(e.name, _weights_of(e.shapes), geo,
                                                   sorted(ops)), ops))
        if len(out) > _MAX_SIBLINGS:
            break
    return _Family(row, lps, tuple(out), tuple(helpers))


def _other(stage: Stage) -> Literal["stage1", "stage2"]:
    return "stage2" if stage == "stage1" else "stage1"


def _num(stage: Stage) -> str:
    return "1" if stage == "stage1" else "2"


def _pair(siblings: Sequence[Sibling], ops: frozenset[str], *, weak_weights: bool = False
          ) -> tuple[Sibling | None, str | None]:
    """The one sibling that states a stage for a kernel with no word of its own, or why none:
    every same-count MoE sibling that has a stage states the same one, and no other same-count
    MoE kernel is left unexplained. The siblings launched by one of the kernel's own launching
    ops (``ops``: the ``cpu_op``, or the op recorded at graph capture) are asked first — the
    same op call launching both is the strongest sign of one layer — then the whole family.
    ``weak_weights``: the family launches twice per layer, where a sibling's single recorded
    weight does not make it a stage (its own analysis reads it as both stages), so it does not
    pair either."""
    if weak_weights:
        siblings = [s if s.own.evidence != "weights" or s.own.stage == "layer" else
                    Sibling(s.short_name, StageInfo("layer", False, s.own.why), s.ops)
                    for s in siblings]

    def one(group: Sequence[Sibling]) -> Sibling | None:
        staged = [s for s in group if s.own.stage != "layer"]
        unknown = [s for s in group if s.own.evidence == "default"]
        if staged and not unknown and len({s.own.stage for s in staged}) == 1:
            return staged[0]
        return None

    by_op = [s for s in siblings if s.ops & ops]
    found = one(by_op) if by_op else None
    if found is None:
        found = one(siblings)
    if found is not None:
        return found, None
    staged = [s for s in siblings if s.own.stage != "layer"]
    if not staged:
        return None, None
    names = ", ".join(f"`{s.short_name}` ({s.own.stage if s.own.stage != 'layer' else 'no stage'})"
                      for s in siblings[:4])
    return None, (f"no stage from its siblings: {len(siblings)} MoE kernels share its launch "
                  f"count ({names}) and none pairs with it alone")


def _twice_per_layer(lps: float | None, model: ModelShape | None) -> int | None:
    """The MoE layer count when ``lps`` is two launches per MoE layer, else None."""
    layers = model.layers_of("moe") if model is not None else None
    if not lps or not layers:
        return None
    ratio = lps / layers
    return layers if round(ratio) == 2 and abs(ratio - 2) <= 0.2 else None


def _helpers_note(helpers: Sequence[tuple[str, str]]) -> list[str]:
    """One note naming the same-count routing / finalize kernels left out of the family."""
    if not helpers:
        return []
    named = ", ".join(f"`{short}` ('{word}')" for short, word in helpers[:3])
    more = f" and {len(helpers) - 3} more" if len(helpers) > 3 else ""
    return [f"Top-N: {len(helpers)} routing / finalize kernel{'s' if len(helpers) > 1 else ''} "
            f"with the same launch count ({named}{more}) are the MoE layer's helpers, not an "
            "expert GEMM, and are not read as its other stage"]


def topn_stage(ctx: OpContext, geo: Geometry) -> tuple[StageInfo, list[str]]:
    """The kernel's MoE stage decided from the Top-N as a whole (``ctx.topn``), and notes.

    1. its own word stands: a stage in its name or launching op, a fused activation epilogue,
       or both expert weights recorded (a whole layer);
    2. else a sibling — an MoE kernel with the same launches per step in the regime — that is
       stage 1 (or 2) by its own evidence makes this kernel the layer's other stage, when no
       other same-count MoE kernel is left unexplained; the siblings sharing its launching (or
       capture) op are asked first, and routing / finalize kernels are no sibling;
    3. else one name launched twice per MoE layer is one logical unit of both stages: the whole
       layer over its two launches (this overrides a single recorded weight, which is one of the
       two launches' operands);
    4. else a single recorded expert weight (w1 or w2) decides; else the whole layer.
    A recorded weight that contradicts the sibling rule keeps its stage, with a note.
    """
    trusted = geo.source == "config.json"  # a geometry read off the weight cannot test it
    fam = _family(ctx, geo if trusted else None)
    ops = _ops_of(fam.row)
    own = moe_stage(ctx.name, _weights(ctx), geo, sorted(ops))
    notes: list[str] = []
    count = f"{fam.launches:g} launches/step in {ctx.regime}" if fam.launches else ""
    helpers = _helpers_note(fam.helpers)
    if own.evidence in _OWN_WORD or (own.evidence == "weights" and own.stage == "layer"):
        if own.stage != "layer":
            if len(fam.siblings) == 1 and fam.siblings[0].own.evidence == "default":
                notes.append(
                    f"Top-N: its sibling `{fam.siblings[0].short_name}` (same {count}, MoE, no "
                    f"stage of its own) is read as stage {_num(_other(own.stage))} of the same "
                    "layer")
                notes += helpers
        return own, notes
    notes += helpers
    layers = _twice_per_layer(fam.launches, ctx.model)
    partner, why_not = _pair(fam.siblings, ops, weak_weights=layers is not None)
    if partner is not None:
        stage = _other(partner.own.stage)
        shared = sorted(partner.ops & ops)
        via = (f"; both launched by `{shared[0]}`"
               + (" (the op recorded at graph capture)" if _captured(fam.row, shared[0]) else "")
               if shared else "")
        why = (f"the Top-N: its sibling `{partner.short_name}` (same {count}) is stage "
               f"{_num(partner.own.stage)} ({partner.own.why}), so this kernel is the layer's "
               f"stage {_num(stage)}{via}")
        if own.evidence == "weights" and trusted and own.stage != stage:
            notes.append(f"Top-N: {why} — but {own.why}; the recorded weight is kept")
            return own, notes
        if own.evidence == "weights" and own.stage == stage:
            why += f"; {own.why}"
        return StageInfo(stage, own.fused_act and stage == "stage1", why, "sibling"), notes
    if why_not:
        notes.append(f"Top-N: {why_not}")
    if layers is not None:
        why = (f"one kernel name launched {fam.launches:g} times per step in {ctx.regime} over "
               f"{layers} MoE layers = 2 per layer, and no sibling MoE kernel pairs with it: "
               "one logical unit of both stages (stage 1 + stage 2)")
        if own.evidence == "weights":
            why += (f"; {own.why}, which describes one of its two launches and is not read "
                    "as its stage")
        return StageInfo("layer", False, why, "launches"), notes
    return own, notes


class _StageWork(NamedTuple):
    """What one MoE stage streams per expert and moves in activations, with its notes."""

    per_expert: float
    activations: float
    act_note: str
    weights_note: str
    name: str
    unit: str


def _stage_work(ctx: OpContext, st: StageInfo, m: int, pairs: int, hidden: int, inter: int,
                a: float) -> _StageWork:
    """Per-expert weight elements and activation bytes of the whole layer or one stage."""
    if st.stage == "layer":
        per_expert = 3.0 * hidden * inter  # gate + up (w1, 2I×H) and down (w2, H×I)
        # The layer's input and output always cross HBM. The intermediates between the two
        # launches (w1 out 2I, w2 in I, per-pair outputs H) stay in L2 when they fit.
        io_bytes = a * 2.0 * m * hidden
        inter_bytes = a * pairs * (2.0 * inter + inter + hidden)
        l2 = ctx.l2_bytes
        inter_in_l2 = l2 is not None and inter_bytes <= l2
        activations = io_bytes + (0.0 if inter_in_l2 else inter_bytes)
        act_note = (
            f"activations at {ctx.activation_dtype} {a:g} B: layer input and output "
            f"{io_bytes / 1e6:.2f} MB; intermediates {inter_bytes / 1e6:.2f} MB "
            + (f"fit in L2 ({l2 / 1e6:.1f} MB) and are not counted"
               if inter_in_l2 and l2 is not None else "counted (larger than L2)")
        )
        weights_note = f"per-expert weights 3·H·I = {per_expert:.0f} elems"
        name = "MoE layer: experts_hit · per-expert weights + activations"
        unit = "layer"
    elif st.stage == "stage1":
        per_expert = 2.0 * inter * hidden
        out_width = inter if st.fused_act else 2 * inter
        activations = a * (m * hidden + pairs * out_width)
        act_note = (
            f"activations at {ctx.activation_dtype} {a:g} B: input M·H = {m * hidden}, output "
            f"pairs·{'I (fused activation)' if st.fused_act else '2I'} = {pairs * out_width} "
            f"elems ({activations / 1e6:.2f} MB)"
        )
        weights_note = f"stage-1 (gate/up) weights per expert 2·I·H = {per_expert:.0f} elems"
        name = "MoE stage 1 (gate/up): experts_hit · 2·I·H weights + its activations"
        unit = "stage-1 launch"
    else:
        per_expert = float(hidden * inter)
        activations = a * (pairs * inter + m * hidden)
        act_note = (
            f"activations at {ctx.activation_dtype} {a:g} B: input pairs·I = {pairs * inter}, "
            f"output M·H = {m * hidden} elems, per-pair partial sums kept in L2 "
            f"({activations / 1e6:.2f} MB)"
        )
        weights_note = f"stage-2 (down) weights per expert H·I = {per_expert:.0f} elems"
        name = "MoE stage 2 (down): experts_hit · H·I weights + its activations"
        unit = "stage-2 launch"
    return _StageWork(per_expert, activations, act_note, weights_note, name, unit)


def _precision(ctx: OpContext) -> tuple[str, str, str]:
    """(the expert weights' dtype, the compute dtype, the evidence) by the one compute-precision
    rule (:func:`core.precision.decide`): the kernel name's operand types, else the config's
    weight dtype and quantization config; the launching op's recorded dtypes speak for the
    activations only (an MoE layer op need not take the expert weights as tensors). A mixed
    pair runs at the wider operand: a bf16 × mxfp4 kernel computes in bf16."""
    names = [ctx.name] + ([ctx.instance.op] if ctx.instance is not None and ctx.instance.op
                          else [])
    prec = decide(names=names, recorded=ctx.dtypes,
                  quant=ctx.model.quantization if ctx.model is not None else None,
                  model_a=ctx.activation_dtype, model_b=ctx.weight_dtype,
                  model_from=("config.json" if ctx.model is not None
                              else "env_report model_dtype or the bf16 default, no config.json"),
                  device=ctx.device, weights_recorded=False)
    if prec.compute is None:
        raise OpModelUnavailable(f"MoE {prec.evidence}")
    weight = prec.b if prec.b is not None and prec.b != "uint8" else ctx.weight_dtype
    return weight, prec.compute, prec.evidence


def estimate(ctx: OpContext) -> OpEstimate:
    geo, assumptions = _geometry(ctx)
    e, top_k, hidden, inter = geo.experts, geo.top_k, geo.hidden, geo.inter
    assumptions.append(
        f"E={e}, top_k={top_k}, hidden={hidden}, moe_intermediate={inter} from {geo.source}"
    )
    st, stage_notes = topn_stage(ctx, geo)
    if geo.source != "config.json" and (st.stage == "stage2") != geo.source.startswith(
            "the recorded w2"):
        # the recorded weight was read in the other stage's layout: read it in this one's
        geo, _ = _geometry(ctx, stage2=st.stage == "stage2")
        e, top_k, hidden, inter = geo.experts, geo.top_k, geo.hidden, geo.inter
        assumptions[-1] = (f"E={e}, top_k={top_k}, hidden={hidden}, moe_intermediate={inter} "
                           f"from {geo.source}")
    m = ctx.require_tokens("the MoE model")
    pairs = m * top_k
    hit = experts_hit(e, pairs)
    w_dt, compute_dt, precision_note = _precision(ctx)
    w_elem = ctx.nbytes(w_dt)
    scale, scale_note = block_scale_bytes(w_dt, ctx.name)
    w = w_elem + scale  # bytes per streamed weight element, its block scale included
    a = ctx.nbytes(ctx.activation_dtype)
    per_expert, activations, act_note, weights_note, name, unit = _stage_work(
        ctx, st, m, pairs, hidden, inter, a)
    flops = 2.0 * pairs * per_expert
    hit_bytes = hit * per_expert * w + activations
    all_bytes = e * per_expert * w + activations
    streams_all = _STREAMS_ALL_RE.search(ctx.name) is not None
    assumptions += [
        f"MoE part: {st.stage} ({st.why}); bytes and FLOPs are per {unit}",
        *stage_notes,
        f"M={m} tokens ({ctx.tokens_source}); pairs = M·top_k = {pairs}",
        f"experts_hit = E·(1−(1−1/E)^pairs) = {hit:.1f}/{e} (uniform routing)",
        (f"{weights_note} at {w_dt} {w_elem:g} B + block scale {scale:g} B = "
         f"{w:g} B/elem" if scale else f"{weights_note} at {w_dt} {w:g} B"),
        act_note,
        (f"the kernel is known to stream every expert: reported figure = all {e} experts "
         f"({all_bytes / 1e6:.1f} MB)") if streams_all else
        (f"reported figure = experts_hit ({hit_bytes / 1e6:.1f} MB); whether the kernel skips "
         f"unrouted experts is unknown, so the all-expert figure ({all_bytes / 1e6:.1f} MB, "
         "all experts streamed) is an alternative only (spec §4)"),
        (f"shared experts not counted; {scale_note}" if scale else
         "shared experts and block-quant scales not counted"),
    ]
    assumptions.append(precision_note)
    return OpEstimate(
        model=name,
        candidates=(
            Candidate(EXPERTS_HIT, hit_bytes, flops, f"{hit:.1f}/{e} experts streamed",
                      reportable=not streams_all),
            Candidate(ALL_EXPERTS, all_bytes, flops, f"all {e} experts streamed",
                      reportable=streams_all),
        ),
        compute_dtype=compute_dt,
        per="logical_op" if st.stage == "layer" else "launch",
        unit="MoE layer",
        assumptions=tuple(assumptions),
    )


def _expert_waste(lc: LeverContext) -> list[str]:
    """The all-experts vs experts_hit difference is a byte-reduction lever (spec §7.1)."""
    sizes = dict(lc.alternatives)
    hit, every = sizes.get(EXPERTS_HIT), sizes.get(ALL_EXPERTS)
    if not hit or not every or every <= hit:
        return []
    waste = 100.0 * (every - hit) / every
    if lc.chosen_label == ALL_EXPERTS:
        return [f"stop reading unrouted experts: the kernel streams all experts "
                f"({every / 1e6:.0f} MB/layer) while routing only touches {hit / 1e6:.0f} MB "
                f"— {waste:.0f}% of the bytes are waste"]
    return [f"make sure unrouted experts are never read: streaming all experts would cost "
            f"{every / 1e6:.0f} MB/layer vs {hit / 1e6:.0f} MB routed ({waste:.0f}% more)"]


def levers(lc: LeverContext) -> list[str]:
    return (fuse_adjacent(lc, ADJACENT_OPS) + _expert_waste(lc)
            + lower_precision_weights(lc.weight_dtype))


MODEL = FunctionModel("moe", PRIORS, estimate, levers)
