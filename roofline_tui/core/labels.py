"""A readable label for a head kernel that one library name shares between several jobs.

One hipBLASLt ``Cijk_…`` solution serves the QKV, O and MLP projections alike; one
``elementwise_kernel`` serves every copy and multiply. Their short names differ only somewhere
in the middle (or not at all), so a one-line reading that cuts them reads the same for all.
What tells them apart is what the trace recorded of the launching op (``core.topn_ext``
instances): the GEMM's shape and the module that launched it, the elementwise op and its
tensor, the attention op.

:func:`label_of` answers from the entry's dominant instance (most time), adding ``+N shapes``
when the entry holds other shapes too:

* a GEMM: ``GEMM 32×4096→24576 (MergedColumnParallelLinear)``: operand A's dims, then the
  output's last axis N; the module when recorded, else the op;
* attention: the launching op (``vllm::unified_attention_with_output``);
* anything else: the op with the dtype and dims of the tensor it writes
  (``aten::copy_ bf16 [16,16,559,64]``); without a recorded op, an elementwise kernel's functor
  read from its name (``direct_copy_kernel_cuda``);
* nothing recorded: the short name, as before.

Pure, bounded (:data:`LABEL_MAX` characters) and printable (``core.textsafe``).
"""

from __future__ import annotations

import math

from roofline_tui.core.dtypes import canonical_dtype
from roofline_tui.core.inputs import TopNEntry
from roofline_tui.core.lazy_re import lazy_compile
from roofline_tui.core.textsafe import printable
from roofline_tui.core.topn_ext import Instance

__all__ = ["LABEL_MAX", "label_of"]

LABEL_MAX = 60

# module leaves that name a layer type, not a role: the parent says more
_GENERIC_MODULES = frozenset({
    "Linear", "LazyLinear", "Conv1d", "Conv2d", "Conv3d", "Embedding", "Module", "Sequential",
    "ModuleList", "ModuleDict", "Identity", "Dropout"})

# a functor or a *_kernel_cuda lambda host inside an ATen elementwise kernel's name
_FUNCTOR = lazy_compile(r"\b(\w*Functor\w*|\w+_kernel_cuda)\b")


def label_of(entry: TopNEntry, op_class: str) -> str:
    """The entry's readable label (see the module docstring); its short name when the trace
    recorded nothing that says more."""
    short = entry.short_name
    instances = [i for i in (entry.ext.instances if entry.ext is not None else [])
                 if i.op is not None]
    text: str | None = None
    if instances:
        top = max(instances, key=lambda i: i.total_us)
        text = _describe(top, op_class)
        if text is not None:
            others = {_describe(i, op_class) for i in instances if i is not top}
            others.discard(text)
            folded = entry.ext.folded.instances if entry.ext and entry.ext.folded else 0
            more = len(others) + max(folded, 0)
            if more:
                suffix = f" +{more} shape{'s' if more > 1 else ''}"
                return printable(text, limit=LABEL_MAX - len(suffix)) + suffix
    elif op_class == "elementwise":
        m = _FUNCTOR.search(entry.name)
        text = m.group(1) if m else None
    return printable(text if text else short, limit=LABEL_MAX)


def _describe(inst: Instance, op_class: str) -> str | None:
    op = inst.op or ""
    if op_class == "gemm":
        shape = _gemm_shape(inst)
        if shape is not None:
            where = _module(inst.module) or op
            return f"GEMM {shape} ({where})" if where else f"GEMM {shape}"
        return op or None
    if op_class == "attn":
        return op or None
    dims, dtype = _written(inst)
    parts = [op] + ([dtype] if dtype else []) + ([_dims(dims)] if dims is not None else [])
    return " ".join(p for p in parts if p) or None


def _plain(dims: object) -> list[int] | None:
    if isinstance(dims, list) and dims and all(type(d) is int for d in dims):
        return list(dims)
    return None


def _first(inst: Instance, *roles: str) -> list[int] | None:
    for role in roles:
        for a in inst.args:
            d = _plain(a.dims) if a.role == role else None
            if d is not None:
                return d
    return None


def _gemm_shape(inst: Instance) -> str | None:
    """``M×K→N`` (A's dims, then N), from operand A (first input) and B (first weight) as the
    op stores B: ``linear`` [N, K], matmul [..., K, N]; an ``out=`` argument gives N itself."""
    a = _first(inst, "input")
    if a is None:
        return None
    b = _first(inst, "weight")
    out = _first(inst, "output")
    k = a[-1]
    n: int | None = None
    if b is not None and inst.output == "linear":
        n = b[0]
    elif b is not None and inst.output == "gemm":
        n = b[-1] if len(b) > 1 else None
    elif out is not None:
        n = out[-1]
    elif b is not None and len(b) >= 2:
        n = b[-1] if b[-2] == k else (b[0] if b[-1] == k and len(b) == 2 else None)
    head = "×".join(str(d) for d in a)
    if n is None:
        return None if b is None else f"{head}·{'×'.join(str(d) for d in b)}"
    if len(a) == 1:
        head = f"1×{head}"
    return f"{head}→{n}"


def _module(path: str | None) -> str | None:
    """The module that says the role: the innermost part of the path that is not a bare layer
    type (``Qwen2DecoderLayer/Qwen2MLP/Linear`` → ``Qwen2MLP``)."""
    if not path:
        return None
    parts = [p for p in path.split("/") if p]
    for p in reversed(parts):
        if p not in _GENERIC_MODULES:
            return p
    return parts[-1] if parts else None


def _written(inst: Instance) -> tuple[list[int] | None, str | None]:
    """The dims and canonical dtype of the tensor the op writes (else the one it reads)."""
    for role in ("output", "inplace", "input", "weight"):
        for a in inst.args:
            d = _plain(a.dims) if a.role == role else None
            if d is not None and math.prod(d) > 0:
                return d, canonical_dtype(a.type)
    return None, None


def _dims(dims: list[int]) -> str:
    return "[" + ",".join(str(d) for d in dims) + "]"
