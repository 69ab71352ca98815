"""Kernel name / upstream ``classification`` / shapes -> op class (spec §3 step 3).

``op_class`` keeps the spec's names (gemm, moe, attn, elementwise, unknown) plus ``comm`` for
collectives, as real upstream artifacts do. ``op_subclass`` refines elementwise kernels, whose
byte model depends on what they write (an act-and-mul halves its input, a quant writes 1 B/elem,
a host↔device copy crosses the host link), and marks sparse attention.
"""

from __future__ import annotations

import functools
import re
from typing import Literal, NamedTuple


class Classification(NamedTuple):
    op_class: str
    op_subclass: str | None
    reason: str


def _rx(*parts: str) -> re.Pattern[str]:
    return re.compile("|".join(parts), re.IGNORECASE)


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

# Order matters: the first rule that matches wins.
_RULES: list[tuple[re.Pattern[str], str, str | None]] = [
    (_rx(r"nccl", r"rccl", r"all_?reduce", r"allgather", r"all_gather", r"reduce_?scatter",
         r"all_?to_?all", r"cross_device_reduce", r"custom_?ar\b", r"quick_?reduce", r"mscclpp",
         r"one_?shot", r"two_?shot", r"\bar_"), "comm", None),
    # host<->device copies cross PCIe / C2C, not HBM
    (_rx(r"\bdtoh\b", r"\bhtod\b", r"(host|pageable|pinned)\s*->\s*device",
         r"device\s*->\s*(host|pageable|pinned)", r"memcpy_?htod", r"memcpy_?dtoh", r"host_?to_?device", r"device_?to_?host"),
     "elementwise", "host_copy"),
    (_rx(r"memcpy", r"memset", r"\bdtod\b"), "elementwise", "copy"),
    # MoE helpers that are not the expert GEMM itself
    (_rx(r"moe_align", r"moe_sum", r"topk_?softmax", r"topk_gating", r"moe_?sorting",
         r"count_and_sort", r"grouped_topk", r"moe_gather", r"moe_scatter"), "elementwise", "routing"),
    (_rx(r"reshape_and_cache", r"concat_and_cache", r"kv_?cache_?(write|store|update)",
         r"store_kvcache", r"set_kv_buffer"), "elementwise", "copy"),
    # linear-attention / SSM families have no model here (L2): name them so the reason is clear
    (_rx(r"gated_delta", r"delta_rule", r"mamba", r"selective_scan", r"\bssm", r"causal_conv",
         r"chunk_(fwd|bwd)", r"fused_recurrent", r"linear_attn", r"lightning_attn"),
     "unknown", "linear_attention"),
    (_rx(r"fused_moe", r"moe_gemm", r"moe_kernel", r"\bfmoe", r"ck_moe", r"_moe_", r"^moe",
         r"moe_(stage|mlp|fused)", r"grouped_gemm", r"expert", r"moe"), "moe", None),
    # sparse attention (DeepSeek-V3.2 index_topk / NSA, MiniMax block-sparse decode)
    (_rx(r"sparse_?(fwd|decode|mla|attn|attention|prefill)", r"(mla|attn|attention|decode)_?sparse",
         r"gqa_share_sparse", r"\bnsa_", r"_nsa_", r"index_?topk"), "attn", "sparse"),
    (_rx(r"paged_?attention", r"flash", r"fmha", r"attention", r"attn", r"_mha_", r"\bmha",
         r"\bmla", r"mla_", r"decode_attention", r"_fwd_grouped_kernel", r"_fwd_kernel",
         r"gqa", r"sdpa"), "attn", None),
    (_GEMM, "gemm", None),
    (_rx(r"rms_?norm", r"layer_?norm", r"layernorm", r"group_?norm", r"\bnorm"), "elementwise",
     "norm"),
    (_rx(r"act_and_mul", r"silu_and_mul", r"gelu_and_mul", r"swiglu", r"geglu", r"silu_mul",
         r"gelu_tanh_and_mul", r"_and_mul"), "elementwise", "act_and_mul"),
    (_rx(r"quant", r"scaled_fp8", r"to_fp8", r"per_token_group", r"fp8_cast", r"cvt_fp8",
         r"dynamic_per_token"), "elementwise", "quant"),
    (_rx(r"rotary", r"\brope", r"rope_"), "elementwise", "rope"),
    (_rx(r"silu", r"gelu", r"relu", r"sigmoid", r"tanh", r"softmax", r"elementwise",
         r"vectorized", r"unrolled", r"fill", r"copy", r"cast", r"\bcat\b", r"cat_", r"index",
         r"scatter", r"gather", r"add_", r"mul_", r"\badd\b", r"\bmul\b", r"reduce", r"sum_",
         r"embedding", r"argmax", r"sampling", r"topk", r"where", r"clamp"), "elementwise",
     "elementwise"),
]

_CLASSIFICATION_FALLBACK: dict[str, tuple[str, str | None]] = {
    "library_gemm": ("gemm", None),
    "library_attn": ("attn", None),
    "reduction_norm": ("elementwise", "norm"),
    "elementwise_overhead": ("elementwise", "elementwise"),
    "memory": ("elementwise", "copy"),
}


def classify(name: str, classification: str | None = None,
             shapes: list[list[list[int]]] | None = None, *,
             has_experts: bool = False) -> Classification:
    """Pick the op class of a kernel. Name rules first, then the upstream ``classification``,
    then a shape hint (a 3-D weight operand means a grouped/MoE GEMM).

    GEMM tokens win over epilogue words. In a model with experts (``has_experts``), a GEMM whose
    name marks it as the expert GEMM, or that carries a 3-D weight operand, is ``moe``.
    """
    rule = _first_rule(name)
    if rule is not None:
        op_class, sub, matched = rule
        why = f"kernel name matches '{matched}'"
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
                return Classification("moe", None, f"{why}, with a 3-D expert weight in a "
                                                   "model with experts")
        return Classification(op_class, sub, why)
    if classification and classification in _CLASSIFICATION_FALLBACK:
        op_class, sub = _CLASSIFICATION_FALLBACK[classification]
        return Classification(op_class, sub, f"upstream classification '{classification}'")
    if _three_d_weight(shapes):
        return Classification("moe", None, "a 3-D weight operand (experts × N × K)")
    for shape_set in shapes or []:
        dims = [d for d in shape_set if d]
        if len(dims) >= 2 and all(len(d) == 2 for d in dims[:2]):
            a, b = dims[0], dims[1]
            if a[1] in b:
                return Classification("gemm", None, "two 2-D operands sharing K")
    return Classification("unknown", None, "no rule matched the kernel name")


@functools.lru_cache(maxsize=4096)
def _first_rule(name: str) -> tuple[str, str | None, str] | None:
    """The first of :data:`_RULES` that ``name`` matches: its class, subclass and the text it
    matched. Cached: a round and its siblings ask about the same names, ~20 searches each."""
    for pattern, op_class, sub in _RULES:
        m = pattern.search(name)
        if m:
            return op_class, sub, m.group(0)
    return None


def _three_d_weight(shapes: list[list[list[int]]] | None) -> bool:
    """A 2-D activation followed by a 3-D weight ``[E, N, K]``: a grouped / expert GEMM."""
    for shape_set in shapes or []:
        dims = [d for d in shape_set if d]
        if len(dims) >= 2 and len(dims[0]) == 2 and any(len(d) == 3 for d in dims[1:]):
            return True
    return False


# The MoE stage a name states. Kept here with the other name rules (and not in
# core.opmodels.moe, which re-exports it) so that an importer can ask it without loading the
# op models.
MOE_STAGE1_RE = re.compile(
    r"stage_?1(?![0-9])|gemm_?1(?![0-9])|gate_?up|g1u1|moe_?1(?![0-9])|\bw13\b|w1_?w3",
    re.IGNORECASE)
MOE_STAGE2_RE = re.compile(
    r"stage_?2(?![0-9])|gemm_?2(?![0-9])|moe_?2(?![0-9])|down(?:_?proj)?(?![a-z])|\bw2\b",
    re.IGNORECASE)
# aiter's one-stage assembly kernels (``fmoe_*_g1u1*``) run both GEMMs in one launch: there
# ``g1u1`` names the weight layout, not a stage.
_MOE_ONE_STAGE_RE = re.compile(r"(?:^|[^a-z])fmoe", re.IGNORECASE)


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
