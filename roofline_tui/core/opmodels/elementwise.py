"""Elementwise / norm / activation / quant / copy (spec §4): input bytes + output bytes.

With recorded shapes, every input operand is read once at its own size (a broadcast operand such
as a bias or a norm weight at its small size, not the output's), and the output is written at
the broadcast shape of the inputs:

    bytes = Σ_i numel(in_i)·dtype_i + numel(broadcast(in_…))·out_dtype

with the subclass deciding the output: an act-and-mul writes half its gate·up input, a quant
writes 1 B per element, a copy reads its source and writes it once. A norm that adds the
residual in place (vLLM ``fused_add_rms_norm``: two full-size inputs) writes both back.
Kernel-name rules (a residual ``fused_add`` doubling the streams, a size from config.json) are
used only when no shapes were recorded.

A host↔device copy crosses the host link (PCIe, NVLink-C2C), not HBM: its bytes are the copy size
once, judged against the host-link peak (``roof = host_link``).

With a recorded instance (``OpContext.instance``, opted in by ``instance_tensors=1``) the bytes
come from the operand roles of the launching op (``core.operands``) instead of positions, each
tensor at its own size and recorded dtype:

* ``input``, ``weight``, ``bias``, ``scale``, ``index``: read once (a broadcast operand at its
  own, smaller size); a table or cos/sin cache that an index addresses (embedding,
  index_select, gather, rotary) only at the rows it addresses;
* ``output``: written once; ``inplace``: read once and written once; an output the op
  allocates (not an argument) is sized by ``output_dims`` and written once;
* ``cache`` (a KV pool): when the op writes it (``writes_cache``) only the slots written, i.e.
  the key/value being stored, at the cache's dtype, never the whole pool; a cache the op reads
  is not an elementwise stream and is left out.

An op the role table does not know (an Inductor Triton kernel, say) falls back to the positional
rule above on the instance's shapes, and a kernel launched by a matmul op (a workspace memset) is
not modelled from the matmul's operands.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from roofline_tui.core.lazy_re import lazy_compile
from roofline_tui.core.operands import OpRoles, output_dims
from roofline_tui.core.opmodels.base import (
    Candidate,
    FunctionModel,
    LeverContext,
    OpContext,
    OpEstimate,
    OpModelUnavailable,
    Prior,
    biggest_neighbours,
    instance_roles,
    numel,
    recorded_dtype,
)
from roofline_tui.core.topn_ext import Instance

PRIORS: Mapping[str, Prior] = {
    "elementwise": Prior("elementwise", 0.875, "elementwise / norm / quant: pure streaming, "
                                               "0.85–0.90 (spec §7); midpoint used", roof="hbm"),
}

# FLOPs per element: small, so these kernels sit far left of every ridge.
_FLOPS_PER_ELEM = {"norm": 4.0, "act_and_mul": 4.0, "quant": 3.0, "rope": 6.0}


def broadcast_shape(shapes: Sequence[Sequence[int]]) -> list[int] | None:
    """NumPy broadcasting of ``shapes`` (right-aligned, size-1 axes stretch); ``None`` when the
    shapes do not broadcast."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        for i, d in enumerate(reversed(s)):
            j = ndim - 1 - i
            if out[j] == 1:
                out[j] = d
            elif d not in (1, out[j]):
                return None
    return out


def _flops(sub: str, elems: float) -> float:
    if sub in ("copy", "host_copy"):
        return 0.0
    return elems * _FLOPS_PER_ELEM.get(sub, 1.0)


def _out_dtype(ctx: OpContext, sub: str) -> str:
    return "fp8" if sub == "quant" else ctx.activation_dtype


def _with_shapes(ctx: OpContext, sub: str) -> tuple[float, float, list[str]]:
    """(bytes, flops, assumptions) from the first recorded shape set."""
    operands = [list(d) for d in ctx.shapes[0] if d]
    if not operands:
        raise OpModelUnavailable("recorded shapes have no tensor operand")
    dts = [ctx.dtypes[i] if i < len(ctx.dtypes) else ctx.activation_dtype
           for i in range(len(operands))]
    notes: list[str] = []
    if sub in ("copy", "host_copy"):
        i = max(range(len(operands)), key=lambda j: numel(operands[j]))
        elems = float(numel(operands[i]))
        a_in = ctx.nbytes(dts[i])
        if sub == "host_copy":
            notes.append(f"host↔device copy of {operands[i]} at {dts[i]} {a_in:g} B: the copy "
                         "size crosses the host link once")
            return elems * a_in, 0.0, notes
        out_dt = ctx.activation_dtype if len(operands) == 1 else dts[1 - i if len(dts) == 2 else i]
        a_out = ctx.nbytes(out_dt)
        notes.append(f"copy: source {operands[i]} read once at {dts[i]} {a_in:g} B, written "
                     f"once at {out_dt} {a_out:g} B")
        return elems * (a_in + a_out), 0.0, notes
    in_bytes = sum(numel(d) * ctx.nbytes(dt) for d, dt in zip(operands, dts, strict=True))
    shape = broadcast_shape(operands)
    if shape is None:
        shape = max(operands, key=numel)
        notes.append(f"inputs {operands} do not broadcast; output taken at the largest "
                     f"input {shape}")
    out_elems = float(numel(shape))
    if sub == "act_and_mul":
        out_elems /= 2.0
    out_dt = _out_dtype(ctx, sub)
    a_out = ctx.nbytes(out_dt)
    outputs = 1
    full = [d for d in operands if numel(d) == numel(shape)]
    if sub == "norm" and len(full) >= 2 and _residual_name(ctx.name):
        outputs = 2
        notes.append("fused residual add + norm (two full-size inputs): the residual is "
                     "written back in place, so two outputs")
    described = ", ".join(f"{d} {dt}" for d, dt in zip(operands, dts, strict=True))
    notes.append(
        f"{len(operands)} input(s) from the recorded shapes, each read once at its own size "
        f"({described}); output {shape}"
        + (" halved (gate·up → I)" if sub == "act_and_mul" else "")
        + f" at {out_dt} {a_out:g} B"
    )
    bytes_ = in_bytes + outputs * out_elems * a_out
    return bytes_, _flops(sub, float(numel(shape))), notes


def _residual_name(name: str) -> bool:
    low = name.lower()
    return "fused_add" in low or "add_rms" in low


def _without_shapes(ctx: OpContext, sub: str) -> tuple[float, float, list[str]]:
    """(bytes, flops, assumptions) from config.json sizes and kernel-name rules."""
    notes: list[str] = []
    model = ctx.require_model(f"a shape-less {sub} kernel")
    tokens = ctx.require_tokens(f"a shape-less {sub} kernel")
    if sub in ("norm", "quant"):
        in_elems = float(tokens * model.hidden_size)
        notes.append(f"input = tokens {tokens} × hidden {model.hidden_size}")
    elif sub == "act_and_mul":
        if model.num_experts and model.top_k and model.moe_intermediate_size:
            inter = model.moe_intermediate_size
            in_elems = float(tokens * model.top_k * 2 * inter)
            notes.append(
                f"input = tokens {tokens} × top_k {model.top_k} × 2·moe_intermediate {inter}"
            )
        elif model.intermediate_size:
            in_elems = float(tokens * 2 * model.intermediate_size)
            notes.append(f"input = tokens {tokens} × 2·intermediate {model.intermediate_size}")
        else:
            raise OpModelUnavailable("act_and_mul needs an intermediate size in config.json")
    elif sub == "rope":
        in_elems = float(tokens * (model.num_attention_heads + model.num_kv_heads) * model.head_dim)
        notes.append("input = q and k of every token (rotated in place)")
    else:
        raise OpModelUnavailable(
            f"{sub} kernel without recorded shapes: its tensor size is unknown"
        )
    notes.append(f"tokens = {tokens} ({ctx.tokens_source})")
    in_dt = ctx.dtypes[0] if ctx.dtypes else ctx.activation_dtype
    out_elems = in_elems / 2.0 if sub == "act_and_mul" else in_elems
    out_dt = _out_dtype(ctx, sub)
    a_in, a_out = ctx.nbytes(in_dt), ctx.nbytes(out_dt)
    streams = 1.0
    if _residual_name(ctx.name):
        streams = 2.0
        notes.append("no shapes: the name says a fused residual add, so x and residual are "
                     "read and both written (name rule)")
    why = {"act_and_mul": "output is half the input (gate·up → I)",
           "quant": "output quantized to fp8 (1 B), per-token/group scales ignored"}.get(
        sub, "output the same size as the input")
    notes.append(f"{why}; in {in_dt} {a_in:g} B, out {out_dt} {a_out:g} B")
    return streams * (in_elems * a_in + out_elems * a_out), _flops(sub, in_elems), notes


# ------------------------------------------------------------------------ from operand roles

# ops whose launches are matmuls: an elementwise kernel under one (a workspace memset, a
# split-K fix-up) moves bytes the matmul's operands do not describe
_MATMUL_OPS = frozenset({
    "aten::mm", "aten::bmm", "aten::matmul", "aten::addmm", "aten::addmm_", "aten::baddbmm",
    "aten::linear", "aten::_scaled_mm", "aten::_int_mm", "aten::_addmm_activation",
    "aten::_grouped_mm",
})
_BOOL_OUT = lazy_compile(r"^aten::(eq|ne|lt|le|gt|ge|isnan|logical_\w+|all|any)$")
_INT64_OUT = lazy_compile(r"^aten::(argmax|argmin|argsort)$")
_ROTARY = lazy_compile(r"rotary|rope", re.I)
_ATTENTION = lazy_compile(r"attention|attn", re.I)


@dataclass(eq=False)
class _Tensor:
    pos: int
    parts: list[list[int]]       # one dims list; several for a TensorList
    raw: str | None
    role: str

    @property
    def elems(self) -> int:
        return sum(numel(p) if p else 1 for p in self.parts)  # a 0-d tensor: one element

    @property
    def dtype(self) -> str | None:
        return recorded_dtype(self.raw)

    @property
    def dims(self) -> list[int] | list[list[int]]:
        return self.parts[0] if len(self.parts) == 1 else self.parts


def _tensors(inst: Instance, roles: list[str]) -> list[_Tensor]:
    out: list[_Tensor] = []
    for i, (a, role) in enumerate(zip(inst.args, roles, strict=True)):
        d = a.dims
        if role in ("scalar", "other") or not isinstance(d, list):
            continue
        if d and all(isinstance(x, list) for x in d):
            out.append(_Tensor(i, [list(p) for p in d if isinstance(p, list)], a.type, role))
        elif all(isinstance(x, int) for x in d) and (
                d or a.type not in (None, "", "Scalar", "ScalarList")):
            out.append(_Tensor(i, [[int(x) for x in d if isinstance(x, int)]], a.type, role))
    return out


def _gathered_elems(op: str, kind: str | None, t: _Tensor, index: _Tensor | None) -> int | None:
    """Elements actually read of a table that an index addresses, or None when ``t`` is read
    whole: an embedding table, index_select's source and a rotary cos/sin cache at the indexed
    rows, gather's source at one element per index element."""
    if index is None or len(t.parts) != 1 or not t.parts[0]:
        return None
    rows = index.elems
    row = numel(t.parts[0][1:]) if len(t.parts[0]) > 1 else 1
    if kind == "embedding" and t.role == "weight":
        return rows * row
    if kind == "index_select" and t.pos == 0:
        return rows * row
    if op == "aten::gather" and t.pos == 0:
        return rows
    if t.role == "weight" and _ROTARY.search(op):
        return rows * row
    return None


def _allocated_dtype(ctx: OpContext, table: OpRoles, reads: list[_Tensor]) -> tuple[str, str]:
    """(dtype, why) of an output the op allocates."""
    if _BOOL_OUT.match(table.op):
        return "bool", "a comparison writes bool"
    if _INT64_OUT.match(table.op):
        return "int64", "an arg-reduction writes int64 indices"
    kind = table.writes_output or ""
    if kind.startswith("like:"):
        i = int(kind[5:])
        src = next((t for t in reads if t.pos == i), None)
        if src is not None and src.dtype:
            why = f"arg {i}'s dtype"
            if table.op in ("aten::_to_copy", "aten::to"):
                why += " (the target dtype is a scalar the trace does not record)"
            return src.dtype, why
    typed = [t for t in reads if t.dtype and t.role in ("input", "weight", "inplace")
             and any(t.parts)]
    if typed:
        big = max(typed, key=lambda t: t.elems)
        why = f"the dtype of its largest operand (arg {big.pos})"
        return big.dtype or ctx.activation_dtype, why
    return ctx.activation_dtype, "no operand dtype recorded (a TensorList): the activation dtype"


@dataclass(eq=False)
class _Traffic:
    """Bytes read and written by one call, with a line per operand, and the largest
    element count the op runs over."""

    read: float = 0.0
    written: float = 0.0
    reads: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    largest: int = 0


def _nb(ctx: OpContext, t: _Tensor) -> float:
    return ctx.nbytes(t.dtype or ctx.activation_dtype)


def _shown(ctx: OpContext, t: _Tensor) -> str:
    return f"arg {t.pos} {t.dims} {t.dtype or (t.raw or '?') + '→' + ctx.activation_dtype}"


def _from_roles(ctx: OpContext, sub: str, inst: Instance
                ) -> tuple[float, float, list[str]] | str:
    """(bytes, flops, assumptions) from the instance's operand roles, or the reason the roles
    cannot be used (the positional rule then runs on the instance's shapes)."""
    table, roles = instance_roles(inst)
    if not table.source.startswith("table:"):
        return f"{inst.op}: {table.source}"
    if table.op in _MATMUL_OPS or table.writes_output in ("gemm", "linear"):
        raise OpModelUnavailable(
            f"this {sub} kernel is launched by {table.op}, a matmul: it is an auxiliary launch "
            "(a workspace memset or a split-K fix-up) whose bytes the matmul's operands do not "
            "give")
    if table.writes_output == "attention" or _ATTENTION.search(table.op):
        raise OpModelUnavailable(
            f"this {sub} kernel is launched by {table.op}, an attention op: its bytes are not "
            "the attention's operands (query, key, value, output)")
    tensors = _tensors(inst, roles)
    if not tensors:
        return f"{inst.op}: no tensor argument recorded"
    notes = [f"operands by role ({table.source})"]

    if sub == "host_copy":
        src = [t for t in tensors if t.role == "input"] or tensors
        size = sum(t.elems * _nb(ctx, t) for t in src)
        notes.append("host↔device copy of " + ", ".join(_shown(ctx, t) for t in src)
                     + f": {size:g} B cross the host link once")
        return size, 0.0, notes

    tr = _Traffic()
    _argument_traffic(ctx, table, tensors, tr)
    _cache_traffic(ctx, table, tensors, tr, notes)
    _allocated_traffic(ctx, table, inst, tensors, tr, notes)
    if not tr.writes:
        notes.append("no argument is written and nothing is allocated (the op writes state "
                     "that is not an argument): only the reads are counted")
    if tr.reads:
        notes.append("read once: " + "; ".join(tr.reads))
    if tr.writes:
        notes.append("written once: " + "; ".join(tr.writes))
    notes.append(f"bytes = {tr.read:g} read + {tr.written:g} written")
    return tr.read + tr.written, _flops(sub, float(tr.largest)), notes


def _argument_traffic(ctx: OpContext, table: OpRoles, tensors: list[_Tensor],
                      tr: _Traffic) -> None:
    """Each argument by its role: inputs read (only the gathered rows of an indexed one),
    outputs and workspaces written, in-place ones both."""
    index = next((t for t in tensors if t.role == "index"), None)
    for t in tensors:
        size = t.elems * _nb(ctx, t)
        if t.role in ("input", "weight", "bias", "scale", "index"):
            part = _gathered_elems(table.op, table.writes_output, t, index)
            if part is not None and part < t.elems:
                tr.read += part * _nb(ctx, t)
                tr.reads.append(f"{t.role} {_shown(ctx, t)} at the {part} element(s) the index "
                                f"(arg {index.pos if index else '?'}) addresses")
            else:
                tr.read += size
                tr.reads.append(f"{t.role} {_shown(ctx, t)}")
            if t.role in ("input", "weight") and part is None:
                tr.largest = max(tr.largest, t.elems)
        elif t.role == "output":
            tr.written += size
            tr.writes.append(f"output {_shown(ctx, t)}")
            tr.largest = max(tr.largest, t.elems)
        elif t.role == "inplace":
            tr.read += size
            tr.written += size
            tr.reads.append(f"in-place {_shown(ctx, t)}")
            tr.writes.append(f"in-place {_shown(ctx, t)}")
            tr.largest = max(tr.largest, t.elems)
        elif t.role == "workspace":
            tr.written += size
            tr.writes.append(f"workspace {_shown(ctx, t)}")


def _cache_traffic(ctx: OpContext, table: OpRoles, tensors: list[_Tensor], tr: _Traffic,
                   notes: list[str]) -> None:
    """A KV-cache store writes only the rows it stores, not the pool; other cache arguments
    are read at rows the trace does not give."""
    caches = [t for t in tensors if t.role == "cache"]
    if caches and table.writes_cache:
        sources = [t for t in tensors if t.role == "input"]
        pairs: list[tuple[_Tensor, list[_Tensor]]]
        if len(caches) == 1:
            pairs = [(caches[0], sources)]
        else:
            tail = sources[-len(caches):] if len(sources) >= len(caches) else sources
            pairs = [(c, [s]) for c, s in zip(caches, tail)]
        for c, srcs in pairs:
            elems = sum(s.elems for s in srcs)
            tr.written += elems * _nb(ctx, c)
            tr.writes.append(f"cache arg {c.pos} {c.dims} only at the {elems} element(s) of "
                             + " + ".join(f"arg {s.pos} {s.dims}" for s in srcs)
                             + f" stored into it ({c.dtype or ctx.activation_dtype}), not the pool")
    elif caches:
        notes.append("KV-cache argument(s) " + ", ".join(f"arg {c.pos} {c.dims}" for c in caches)
                     + " are read at rows the trace does not record: not counted")


def _allocated_traffic(ctx: OpContext, table: OpRoles, inst: Instance, tensors: list[_Tensor],
                       tr: _Traffic, notes: list[str]) -> None:
    """The output the op allocates itself, when the trace gives its size."""
    kind = table.writes_output
    if kind is None:
        return
    dims = output_dims(table, [a.dims for a in inst.args])
    if dims is None:
        notes.append(f"the output {table.op} allocates ({kind}) has a size the trace does "
                     "not record (k, or the reduced dims): not counted, so the bytes are a "
                     "lower bound")
        return
    dt, why = _allocated_dtype(ctx, table, tensors)
    elems = numel(dims) if dims else 1
    tr.written += elems * ctx.nbytes(dt)
    tr.largest = max(tr.largest, elems)
    tr.writes.append(f"allocated output {dims} ({kind}) at {dt}, {why}")


def estimate(ctx: OpContext) -> OpEstimate:
    sub = ctx.op_subclass or "elementwise"
    by_roles = _from_roles(ctx, sub, ctx.instance) if ctx.instance is not None else None
    if sub == "host_copy" and not ctx.shapes and not isinstance(by_roles, tuple):
        raise OpModelUnavailable("host↔device copy without a recorded size: its bytes are "
                                 "unknown")
    if isinstance(by_roles, tuple):
        bytes_, flops, assumptions = by_roles
    elif ctx.shapes:
        bytes_, flops, assumptions = _with_shapes(ctx, sub)
        if by_roles:
            assumptions.insert(0, f"{by_roles}; the instance's shapes read positionally")
    else:
        bytes_, flops, assumptions = _without_shapes(ctx, sub)
    if sub == "host_copy":
        model = "host↔device copy: bytes = copy size, against the host-link peak"
    else:
        model = f"{sub}: bytes = in·in_dtype + out·out_dtype"
    return OpEstimate(
        model=model,
        candidates=(Candidate("in+out" if sub != "host_copy" else "copy", bytes_, flops),),
        compute_dtype=ctx.activation_dtype,
        per="launch",
        assumptions=tuple(assumptions),
        roof="host_link" if sub == "host_copy" else "hbm",
    )


def levers(lc: LeverContext) -> list[str]:
    """A saturated streaming kernel's only byte lever is to disappear into a neighbour."""
    hosts = biggest_neighbours(lc.neighbours, lambda n: n.op_class in ("gemm", "moe", "attn"),
                               1)
    if hosts:
        return [f"fuse this kernel into `{hosts[0].short_name}` ({hosts[0].pct_gpu_time:.2f}% "
                "GPU): its bytes disappear with its launches"]
    return ["fuse this kernel into its producer or consumer: its bytes disappear"]


# each recorded instance with at least one input/weight tensor is folded with its own time
MODEL = FunctionModel("elementwise", PRIORS, estimate, levers, instance_tensors=1)
