"""The logical-op identity of a launch (issue 33): what the trace recorded of the call that
launched a kernel, normalised so that two builds or two vendors of one model name one op alike.

    <op family> | <module> | <identity dims> | <weight dtype>

* the op family normalises front ends of one computation: ``aten::mm``/``addmm``/``linear``/
  ``matmul`` are ``linear``; SDPA, flash and the engines' attention ops are ``attention``; the
  fused-MoE ops are ``moe``; any other op keeps its name;
* the module is the innermost two ``nn.Module`` names of the launch (``Qwen2MLP/Linear``), or
  the engine's parallel-linear class when that is all the trace recorded;
* the identity dims are those that do not change with the batch: a GEMM's weight dims (K, N),
  otherwise every dim of the first input but its first (token) axis;
* the weight's dtype, canonical (``c10::BFloat16`` and ``bf16`` are one), tells an fp8
  projection from a bf16 one.

Every kernel one op call launched carries that call's key, so a split-K GEMM's reduce kernel, a
flash-decoding combine or a MoE stage sums into the op it belongs to: the op is compared, not
the way a library split it into kernels.
"""

from __future__ import annotations

from roofline_tui.core.dtypes import canonical_dtype
from roofline_tui.core.inputs import TopNEntry
from roofline_tui.core.lazy_re import lazy_compile
from roofline_tui.core.topn_ext import Instance

__all__ = ["op_family", "op_key", "op_shares", "vendor_of"]

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
    """The instance's op key (module docstring), or None when it recorded no launching op, or
    neither a module nor an identifying dim: ``aten::mm`` alone names every GEMM of a run."""
    family = op_family(inst.op)
    if family is None:
        return None
    module = "/".join((inst.module or "").split("/")[-2:])
    weights = inst.tensors("weight")
    if weights:
        dims, dtype = weights[0]
    else:
        inputs = inst.tensors("input")
        dims, dtype = (inputs[0][0][1:], inputs[0][1]) if inputs else ([], None)
    shape = "x".join(str(d) for d in dims)
    if not module and not shape:
        return None
    return f"{family}|{module or '-'}|{shape or '-'}|{canonical_dtype(dtype) or dtype or '-'}"


def op_shares(entry: TopNEntry) -> list[tuple[str, float]]:
    """The entry's op keys with the share of its recorded instances' GPU time each holds,
    largest first (ties by key); empty when no instance recorded a launching op."""
    times: dict[str, float] = {}
    for inst in entry.ext.instances if entry.ext is not None else []:
        key = op_key(inst)
        if key is not None:
            times[key] = times.get(key, 0.0) + max(inst.total_us, 0.0)
    total = sum(times.values())
    if not times:
        return []
    return sorted(((k, t / total if total > 0 else 1.0 / len(times)) for k, t in times.items()),
                  key=lambda kv: (-kv[1], kv[0]))


def vendor_of(name: str) -> str | None:
    """``amd`` or ``nvidia`` when a kernel name says whose library it is; else None."""
    if _VENDOR_AMD.search(name):
        return "amd"
    if _VENDOR_NV.search(name):
        return "nvidia"
    return None
