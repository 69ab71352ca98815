"""Kernel name / upstream ``classification`` / shapes -> op class (spec §3 step 3).

``op_class`` keeps the spec's names (gemm, moe, attn, elementwise, unknown) plus ``comm`` for
collectives, as real upstream artifacts do, and ``lora`` for the LoRA shrink/expand kernels
(a segmented GEMM over the adapters, modelled by ``opmodels.lora``). ``op_subclass`` refines
elementwise kernels, whose byte model depends on what they write (an act-and-mul halves its
input, a quant writes 1 B/elem, a host↔device copy crosses the host link), marks sparse
attention and LoRA's direction (shrink, expand), and names the families this project has no
byte model for: ``ssm`` (Mamba-1 selective scan, the Mamba-2 SSD chunk kernels, causal conv1d)
and ``linear_attention`` (Gated DeltaNet, lightning attention, RWKV, the fla ``chunk_*`` and
``fused_recurrent_*`` kernels). Those stay ``unknown`` (spec §4: "do not guess") with a reason
that names the family (:attr:`Classification.unmodelled`).

A name is evidence only when it says what the kernel does. A bare ``_fwd_kernel`` (vLLM's
prefix-prefill attention and SGLang's extend attention are named so, and so are linear-attention
kernels) is attention only with corroboration: a launching op or module path that is attention
(``ops``), q/k/v-shaped operands, or an upstream ``library_attn``; otherwise it is ``unknown``
and says what would settle it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Literal, NamedTuple

from roofline_tui.core.lazy_re import lazy_compile


class Classification(NamedTuple):
    op_class: str
    op_subclass: str | None
    reason: str
    # why no byte/FLOP model applies, naming the op family (an SSM or linear-attention kernel,
    # a generic name without evidence) and what would measure it; None: nothing more to say
    unmodelled: str | None = None


def _rx(*parts: str) -> re.Pattern[str]:
    return lazy_compile("|".join(parts), re.IGNORECASE)


# Tokens that name a matrix multiply. They win over epilogue words (swiglu, silu, gelu, act,
# bias): ``_matmul_ogs_*_swiglu`` and ``bmm_*_swiGlu`` are GEMMs with a fused activation.
_GEMM = _rx(r"cijk", r"tensile", r"hipblaslt", r"rocblas", r"cublas", r"xmma", r"nvjet",
            r"cutlass", r"gemm", r"matmul", r"\bbmm", r"bmm_", r"_mm_", r"\bmm_", r"scaled_mm",
            r"wvsplitk", r"llgemm", r"skinny", r"sgemm", r"hgemm", r"igemm", r"\bmm\b", r"wgmma",
            r"hmma", r"flatmm", r"linear")
# A GEMM in a model with experts is the expert GEMM when its name says it gathers/scatters rows
# by expert, or carries the gate/up activation epilogue of a batched expert GEMM.
_MOE_GEMM = _rx(r"_ogs", r"ogs_", r"grouped", r"dyn_?batch", r"expert", r"moe")
_BMM = _rx(r"\bbmm", r"bmm_")
_ACT_EPILOGUE = _rx(r"swi_?glu", r"silu", r"geglu", r"gelu")

# The op families this project has no byte/FLOP model for, each with the words that name it,
# most specific first (the first that matches names the family in the reason). Their state and
# chunk layouts (chunk length, state size per head, which intermediates stay on chip) are not
# in the trace's shapes in a form a formula could trust, so they get no verdict (spec §4).
SSM_FAMILIES: tuple[tuple[str, str], ...] = (
    (r"selective_(?:scan|state)_update", "Mamba selective-state update (one decode step of the "
                                          "SSM recurrence)"),
    (r"selective_scan", "Mamba-1 selective scan"),
    (r"chunk_scan_(?:fwd|bwd)|chunk_scan_chunk_state", "Mamba-2 SSD chunk scan"),
    (r"chunk_state_(?:fwd|bwd|varlen)", "Mamba-2 SSD chunk state"),
    (r"state_passing_(?:fwd|bwd)", "Mamba-2 SSD state passing"),
    (r"_chunk_cumsum_(?:fwd|bwd)", "Mamba-2 SSD chunk cumsum (dt·A)"),
    (r"bmm_chunk_(?:fwd|bwd)", "Mamba-2 SSD chunk C·Bᵀ"),
    (r"causal_conv", "causal conv1d (the short convolution of a Mamba or Gated DeltaNet mixer)"),
    (r"mamba|\bssd_|_ssd_|\bssm|_ssm_", "Mamba / SSM kernel"),
)
LINEAR_ATTENTION_FAMILIES: tuple[tuple[str, str], ...] = (
    (r"fused_recurrent_gated_delta|fused_sigmoid_gating_delta|recurrent_gated_delta",
     "Gated DeltaNet recurrent (decode) step"),
    (r"chunk_gated_delta_rule_fwd_(?:kernel_)?h", "Gated DeltaNet chunk-state recurrence (h)"),
    (r"recompute_w_u|prepare_wy_repr", "DeltaNet WY representation (w, u)"),
    (r"chunk_scaled_dot_kkt", "DeltaNet chunk β·K·Kᵀ"),
    (r"solve_tril|merge_16x16_to_\d+x\d+_inverse", "DeltaNet chunk triangular solve"),
    (r"gated_delta|gdn_|_gdn", "Gated DeltaNet kernel"),
    (r"delta_rule", "DeltaNet kernel"),
    (r"rwkv|\bwkv|_wkv", "RWKV time-mix (WKV)"),
    (r"lightning_attn|lightning_attention|_fwd_(?:none_)?diag_kernel|_fwd_kv_(?:parallel|reduce)"
     r"|linear_attn_decode", "lightning attention (MiniMax linear attention)"),
    (r"(?:^|_)(?:simple_)?gla(?:_|$)", "GLA (gated linear attention)"),
    (r"chunk_(?:local|global)_cumsum", "fla chunk-local gate cumsum"),
    (r"chunk_fwd_(?:kernel_)?o(?:_|$)", "fla chunked linear-attention output (chunk_fwd_o)"),
    (r"chunk_fwd_(?:kernel_)?h(?:_|$)", "fla chunked linear-attention state (chunk_fwd_h)"),
    (r"fused_recurrent", "fla fused_recurrent linear-attention step"),
    (r"fused_chunk_|chunk_\w*(?:fwd|bwd)|linear_attn|linear_attention|retention|hgrn",
     "chunked linear-attention kernel (fla)"),
)
_FAMILY_KIND = {"ssm": "SSM", "linear_attention": "linear-attention"}
# a bare ``_fwd_kernel``: attention only with corroboration (:func:`_generic_fwd`)
_GENERIC_FWD = "generic _fwd_kernel"
_STAGE_C = "ncu/rocprof counters (stage C) would measure it"

_Rule = tuple[re.Pattern[str], str, str | None, str | None]  # pattern, class, subclass, family


def _family_rules(sub: str, families: tuple[tuple[str, str], ...]) -> list[_Rule]:
    return [(_rx(words), "unknown", sub, label) for words, label in families]


# Order matters: the first rule that matches wins.
_RULES: list[_Rule] = [
    (_rx(r"nccl", r"rccl", r"all_?reduce", r"allgather", r"all_gather", r"reduce_?scatter",
         r"all_?to_?all", r"cross_device_reduce", r"custom_?ar\b", r"quick_?reduce", r"mscclpp",
         r"one_?shot", r"two_?shot", r"\bar_"), "comm", None, None),
    # host<->device copies cross PCIe / C2C, not HBM
    (_rx(r"\bdtoh\b", r"\bhtod\b", r"(host|pageable|pinned)\s*->\s*device",
         r"device\s*->\s*(host|pageable|pinned)", r"memcpy_?htod", r"memcpy_?dtoh", r"host_?to_?device", r"device_?to_?host"),
     "elementwise", "host_copy", None),
    (_rx(r"memcpy", r"memset", r"\bdtod\b"), "elementwise", "copy", None),
    # MoE helpers that are not the expert GEMM itself
    (_rx(r"moe_align", r"moe_sum", r"topk_?softmax", r"topk_gating", r"moe_?sorting",
         r"count_and_sort", r"grouped_topk", r"moe_gather", r"moe_scatter",
         # trtllm-gen / TensorRT-LLM MoE: routing and the finalize (un-permute + weighted sum)
         r"moe::dev::(routing|finalize)", r"routing(main|indices\w*)kernel", r"finalize_?kernel",
         r"finalize_?moe"), "elementwise", "routing", None),
    (_rx(r"reshape_and_cache", r"concat_and_cache", r"kv_?cache_?(write|store|update)",
         r"store_kvcache", r"set_kv_buffer"), "elementwise", "copy", None),
    # LoRA shrink/expand (vLLM punica/triton, SGLang, S-LoRA): never an expert GEMM, whatever
    # its stacked [adapters, rank, hidden] operand looks like; direction in :func:`_lora`
    (_rx(r"(?<![a-z])lora", r"sgmv", r"bgmv", r"punica", r"_v1_(shrink|expand)"), "lora", None,
     None),
    # SSM and linear-attention families: no model here (L2), named so the reason is clear
    *_family_rules("ssm", SSM_FAMILIES),
    *_family_rules("linear_attention", LINEAR_ATTENTION_FAMILIES),
    (_rx(r"fused_moe", r"moe_gemm", r"moe_kernel", r"\bfmoe", r"ck_moe", r"_moe_", r"^moe",
         r"moe_(stage|mlp|fused)", r"grouped_gemm", r"expert", r"moe"), "moe", None, None),
    # sparse attention (DeepSeek-V3.2 index_topk / NSA, MiniMax block-sparse decode)
    (_rx(r"sparse_?(fwd|decode|mla|attn|attention|prefill)", r"(mla|attn|attention|decode)_?sparse",
         r"gqa_share_sparse", r"\bnsa_", r"_nsa_", r"index_?topk"), "attn", "sparse", None),
    # attention by its own words; ``_fwd_kernel_stage1/2`` and ``_fwd_grouped_kernel_stage1``
    # are the split-KV decode attention of lightllm / SGLang / vLLM's triton_decode_attention
    (_rx(r"paged_?attention", r"flash", r"fmha", r"attention", r"attn", r"_mha_", r"\bmha",
         r"\bmla", r"mla_", r"decode_attention", r"_fwd_grouped_kernel",
         r"_fwd_kernel_stage\d", r"gqa", r"sdpa"), "attn", None, None),
    (_GEMM, "gemm", None, None),
    (_rx(r"rms_?norm", r"layer_?norm", r"layernorm", r"group_?norm", r"l2_?norm", r"\bnorm"),
     "elementwise", "norm", None),
    (_rx(r"act_and_mul", r"silu_and_mul", r"gelu_and_mul", r"swiglu", r"geglu", r"silu_mul",
         r"gelu_tanh_and_mul", r"_and_mul"), "elementwise", "act_and_mul", None),
    (_rx(r"quant", r"scaled_fp8", r"to_fp8", r"per_token_group", r"fp8_cast", r"cvt_fp8",
         r"dynamic_per_token"), "elementwise", "quant", None),
    (_rx(r"rotary", r"\brope", r"rope_"), "elementwise", "rope", None),
    (_rx(r"silu", r"gelu", r"relu", r"sigmoid", r"tanh", r"softmax", r"elementwise",
         r"vectorized", r"unrolled", r"fill", r"copy", r"cast", r"\bcat\b", r"cat_", r"index",
         r"scatter", r"gather", r"add_", r"mul_", r"\badd\b", r"\bmul\b", r"reduce", r"sum_",
         r"embedding", r"argmax", r"sampling", r"topk", r"where", r"clamp"), "elementwise",
     "elementwise", None),
    # last: a ``_fwd_kernel`` that no rule above named (``_fwd_kernel_ep_scatter`` is a scatter)
    (_rx(r"_fwd_kernel"), "unknown", None, _GENERIC_FWD),
]

_CLASSIFICATION_FALLBACK: dict[str, tuple[str, str | None]] = {
    "library_gemm": ("gemm", None),
    "library_attn": ("attn", None),
    "reduction_norm": ("elementwise", "norm"),
    "elementwise_overhead": ("elementwise", "elementwise"),
    "memory": ("elementwise", "copy"),
}


# What a launching op or module path says of the layer a kernel belongs to. Linear attention
# and SSMs are asked first: ``vllm::gdn_attention`` and ``MiniMaxText01LinearAttention`` name
# attention too.
_OP_LORA = _rx(r"(?<![a-z])lora", r"punica", r"sgmv", r"bgmv")
_OP_SSM = _rx(r"mamba", r"\bssm", r"_ssm", r"selective_scan", r"causal_conv")
_OP_LINEAR = _rx(r"gated_?delta", r"deltanet", r"gdn", r"linear_?attention", r"linear_attn",
                 r"lightning", r"rwkv", r"retention")
_OP_ATTN = _rx(r"attention", r"attn", r"sdpa", r"flash", r"\bmha", r"\bmla", r"paged")
_LORA_SHRINK = _rx(r"shrink", r"lora_?a(?![a-z])")
_LORA_EXPAND = _rx(r"expand", r"lora_?b(?![a-z])")
_LORA_MOE = _rx(r"moe", r"expert")


def classify(name: str, classification: str | None = None,
             shapes: list[list[list[int]]] | None = None, *,
             has_experts: bool | None = None, ops: Sequence[str] = ()) -> Classification:
    """Pick the op class of a kernel. Name rules first, then what launched it (``ops``: the
    launching ops and module paths the trace recorded), then the upstream ``classification``,
    then a shape hint (a 3-D weight operand in a model with experts is a grouped/MoE GEMM).

    GEMM tokens win over epilogue words. In a model with experts (``has_experts``), a GEMM whose
    name marks it as the expert GEMM, or that carries a 3-D weight operand and no LoRA evidence,
    is ``moe``. ``has_experts`` None: the model is not known (no config.json), so a 3-D operand
    still hints at experts; False: a dense model, where it never does.
    """
    rule = _first_rule(name)
    if rule is not None and rule[3] == _GENERIC_FWD:
        return _generic_fwd(rule[2], classification, shapes, ops)
    if rule is not None:
        return _named(name, rule, shapes, has_experts, ops)
    return _unnamed(name, classification, shapes, has_experts, ops)


def _named(name: str, rule: tuple[str, str | None, str, str | None],
           shapes: list[list[list[int]]] | None, has_experts: bool | None,
           ops: Sequence[str]) -> Classification:
    """The class a name rule gives, refined: LoRA's direction, a family's reason, and the
    expert GEMM of a model with experts."""
    op_class, sub, matched, family = rule
    why = f"kernel name matches '{matched}'"
    if op_class == "lora":
        return _lora(name, why)
    if family is not None and sub is not None:
        return _family(sub, family, f"{why}: {family}")
    if op_class == "gemm" and has_experts:
        moe = _MOE_GEMM.search(name)
        if moe:
            return Classification("moe", None, f"{why}, and '{moe.group(0)}' marks the "
                                               "expert GEMM of a model with experts")
        act = _ACT_EPILOGUE.search(name)
        if act and _BMM.search(name):
            return Classification("moe", None, f"{why}: a batched GEMM with a "
                                               f"'{act.group(0)}' epilogue is the "
                                               "gate/up expert GEMM of a model with "
                                               "experts")
        if _three_d_weight(shapes):
            lora_op = _first_match(_OP_LORA, ops)
            if lora_op is not None:
                return _lora(lora_op, f"{why}, launched by {lora_op}: its 3-D operand is the "
                                      "adapters' stacked weights, not experts")
            return Classification("moe", None, f"{why}, with a 3-D expert weight in a "
                                               "model with experts")
    return Classification(op_class, sub, why)


def _unnamed(name: str, classification: str | None, shapes: list[list[list[int]]] | None,
             has_experts: bool | None, ops: Sequence[str]) -> Classification:
    """No name rule matched: what launched it, the upstream classification, the shapes."""
    by_op = _by_launcher(ops, attention=False)
    if by_op is not None:
        return by_op
    if classification and classification in _CLASSIFICATION_FALLBACK:
        op_class, sub = _CLASSIFICATION_FALLBACK[classification]
        return Classification(op_class, sub, f"upstream classification '{classification}'")
    if _three_d_weight(shapes):
        if has_experts is not False:
            return Classification("moe", None, "a 3-D weight operand (experts × N × K)")
        return Classification("unknown", None, "no rule matched the kernel name; its 3-D "
                                               "operand is not an expert weight in a model "
                                               "without experts")
    for shape_set in shapes or []:
        dims = [d for d in shape_set if d]
        if len(dims) >= 2 and all(len(d) == 2 for d in dims[:2]):
            a, b = dims[0], dims[1]
            if a[1] in b:
                return Classification("gemm", None, "two 2-D operands sharing K")
    return Classification("unknown", None, "no rule matched the kernel name")


def _generic_fwd(matched: str, classification: str | None,
                 shapes: list[list[list[int]]] | None, ops: Sequence[str]) -> Classification:
    """A bare ``_fwd_kernel``: vLLM's prefix-prefill and SGLang's extend attention are named
    so, and so are linear-attention kernels. Attention only when something else says so."""
    generic = f"generic kernel name '{matched}'"
    by_op = _by_launcher(ops, attention=True)
    if by_op is not None:
        return by_op._replace(reason=f"{generic}; {by_op.reason}")
    if _qkv_shaped(shapes):
        return Classification("attn", None, f"{generic}, with q/k/v-shaped operands (three "
                                            "[tokens, heads, head_dim] tensors, the query's "
                                            "heads a multiple of the key's)")
    if classification == "library_attn":
        return Classification("attn", None, f"{generic}, and upstream classification "
                                            "'library_attn'")
    why = (f"{generic} with no attention evidence (no attention launching op or module, no "
           "q/k/v-shaped operands, no attention word in the name)")
    return Classification("unknown", None, why, unmodelled=(
        f"{why}: it may as well be an SSM or linear-attention kernel; a trace that records "
        f"its launching op would settle the class, {_STAGE_C}"))


def _by_launcher(ops: Sequence[str], *, attention: bool) -> Classification | None:
    """The class the launching ops / module paths give: LoRA, an SSM or linear-attention
    layer and, when ``attention``, an attention layer; None when they say none of these."""
    op = _first_match(_OP_LORA, ops)
    if op is not None:
        return _lora(op, f"launched by {op}: a LoRA op")
    for pattern, sub in ((_OP_SSM, "ssm"), (_OP_LINEAR, "linear_attention")):
        op = _first_match(pattern, ops)
        if op is not None:
            family = f"a kernel of the {_FAMILY_KIND[sub]} layer {op}"
            return _family(sub, family, f"launched by {op}: an {_FAMILY_KIND[sub]} layer")
    op = _first_match(_OP_ATTN, ops) if attention else None
    if op is not None:
        return Classification("attn", None, f"launched by {op}: attention")
    return None


def _family(sub: str, family: str, why: str) -> Classification:
    kind = _FAMILY_KIND[sub]
    return Classification("unknown", sub, why, unmodelled=(
        f"{family}: no byte/FLOP model for {kind} kernels; {_STAGE_C}"))


def _lora(text: str, why: str) -> Classification:
    """A LoRA kernel and its direction: shrink (x·Aᵀ, hidden → rank), expand (x·Bᵀ, rank →
    out), ``moe`` for a MoE layer's adapters, None when the text says neither or both."""
    if _LORA_MOE.search(text):
        return Classification("lora", "moe", f"{why} (the adapters of a MoE layer's experts)")
    shrink, expand = _LORA_SHRINK.search(text), _LORA_EXPAND.search(text)
    if shrink and not expand:
        return Classification("lora", "shrink", f"{why} (LoRA shrink: x·Aᵀ)")
    if expand and not shrink:
        return Classification("lora", "expand", f"{why} (LoRA expand: x·Bᵀ)")
    return Classification("lora", None, why)


def _first_match(pattern: re.Pattern[str], texts: Sequence[str]) -> str | None:
    """The first of ``texts`` that ``pattern`` matches, cut to 80 characters."""
    for text in texts:
        if pattern.search(text):
            return text if len(text) <= 80 else text[:79] + "…"
    return None


@functools.lru_cache(maxsize=4096)
def _first_rule(name: str) -> tuple[str, str | None, str, str | None] | None:
    """The first of :data:`_RULES` that ``name`` matches: its class, subclass, the text it
    matched and its family. Cached: a round and its siblings ask about the same names, ~20
    searches each."""
    for pattern, op_class, sub, family in _RULES:
        m = pattern.search(name)
        if m:
            return op_class, sub, m.group(0), family
    return None


def _three_d_weight(shapes: list[list[list[int]]] | None) -> bool:
    """A 2-D activation followed by a 3-D weight ``[E, N, K]``: a grouped / expert GEMM."""
    for shape_set in shapes or []:
        dims = [d for d in shape_set if d]
        if len(dims) >= 2 and len(dims[0]) == 2 and any(len(d) == 3 for d in dims[1:]):
            return True
    return False


def _qkv_shaped(shapes: list[list[list[int]]] | None) -> bool:
    """The first three tensors of a shape set are a query, key and value: ``[T, H, D]`` (or
    ``[B, H, S, D]`` / ``[B, S, H, D]`` with one batch), the key and value alike but for the
    value's head dim, the query's head dim the key's, its heads a whole multiple of the key's
    (GQA)."""
    for shape_set in shapes or []:
        dims = [d for d in shape_set if d]
        if len(dims) < 3:
            continue
        q, k, v = dims[:3]
        if not (len(q) == len(k) == len(v) and len(q) in (3, 4)) or k[:-1] != v[:-1]:
            continue
        if q[-1] != k[-1] or not 8 <= q[-1] <= 1024:
            continue
        if len(q) == 4 and q[0] != k[0]:  # one batch (query and KV lengths may differ)
            continue
        for axis in ((1,) if len(q) == 3 else (1, 2)):
            if k[axis] and q[axis] % k[axis] == 0:
                return True
    return False


# The MoE stage a name states. Kept here with the other name rules (and not in
# core.opmodels.moe, which re-exports it) so that an importer can ask it without loading the
# op models.
MOE_STAGE1_RE = lazy_compile(
    r"stage_?1(?![0-9])|gemm_?1(?![0-9])|gate_?up|g1u1|moe_?1(?![0-9])|\bw13\b|w1_?w3",
    re.IGNORECASE)
MOE_STAGE2_RE = lazy_compile(
    r"stage_?2(?![0-9])|gemm_?2(?![0-9])|moe_?2(?![0-9])|down(?:_?proj)?(?![a-z])|\bw2\b",
    re.IGNORECASE)
# aiter's one-stage assembly kernels (``fmoe_*_g1u1*``) run both GEMMs in one launch: there
# ``g1u1`` names the weight layout, not a stage.
_MOE_ONE_STAGE_RE = lazy_compile(r"(?:^|[^a-z])fmoe", re.IGNORECASE)


def stage_in_name(name: str) -> tuple[Literal["stage1", "stage2"], str] | None:
    """The MoE stage a name states (``stage1``/``gemm1``/``gate_up``/``g1u1``/``moe1`` vs
    ``stage2``/``gemm2``/``moe2``/``down``) and the words that say it; ``None`` when it states
    neither, both, or names a one-stage kernel (``fmoe_*_g1u1``). For kernel names, and for the
    launching op names an importer reads (``aiter::ck_moe_stage1``)."""
    s1 = MOE_STAGE1_RE.search(name)
    s2 = MOE_STAGE2_RE.search(name)
    if s1 and not s2 and not _MOE_ONE_STAGE_RE.search(name):
        return "stage1", s1.group(0)
    if s2 and not s1:
        return "stage2", s2.group(0)
    return None
