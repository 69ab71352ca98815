"""Dense GEMM ``[M,K]×[K,N]`` (spec §4): flops = 2MNK, bytes = A + B + C.

Two ways in. With a recorded instance (``OpContext.instance``) the operands are taken by role
(``core.operands``): A is the ``input`` tensor, B the ``weight`` (for an op the table calls
``input input``, or a positional op, A is the first input and B the second), C the ``output``
argument or, when the op allocates it, the output ``output_dims`` sizes. A bias is read once
at its own size, every scale tensor at its own size and dtype, and each operand at its own
dtype: the compute dtype follows the pair (fp8×fp8 → fp8, int8×int8 → int8, fp4×fp4 → fp4,
bf16 × fp4 weight → bf16 with fp4 weight bytes), by the one rule of ``core.precision``, which
also checks the device has matrix cores for it. Without an instance (an upstream Top-N), the
shape sets are read positionally (:func:`gemm_dims`) and the recorded ``dtypes`` as a set,
never by position: which operand has which dtype comes from the kernel name, the set, the
quantization config and the model's dtypes (``core.precision``), and is stated; a packed fp4
operand counts the logical K, and the shape set's further tensors are read as block scales at
their format's scale dtype.

Packed fp4. A ``Float4_e2m1fn_x2`` operand, or a ``uint8``/``int8`` one that is fp4 by some
other evidence, holds two values per recorded element, so its recorded K axis is K/2. An 8-bit
operand is taken as packed fp4 when its K axis is exactly half the other operand's (a bf16 ×
mxfp4 weight), or, for two 8-bit operands, when the op or kernel name or the model's dense
weight dtype says fp4 (otherwise two 8-bit operands are an int8 GEMM). Block scales: MX
formats carry one e8m0 per 32 values, NVFP4 one fp8 per 16 plus a tensor scale; when the
instance records no scale tensor for a packed operand those implied bytes are added.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

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
    fuse_adjacent,
    instance_roles,
    lower_precision_weights,
    numel,
    recorded_dtype,
)
from roofline_tui.core.precision import Precision, decide
from roofline_tui.core.topn_ext import Instance

PRIORS: Mapping[str, Prior] = {
    # the spec's peaks are microbenchmark results (§8.2): 0.90 of what a real matmul reaches
    "gemm": Prior("gemm", 0.90, "dense GEMM: regular, dense compute (spec §7 prior)",
                  roof="measured ceiling"),
}
# A GEMM takes a norm or quant prologue, and an act-and-mul epilogue when unfused.
ADJACENT_OPS = ("quant", "norm", "act_and_mul")


class _Located(NamedTuple):
    """A and B in one shape set: ``(M, N, K)`` with K as A records it, B's layout, the two
    tensors' positions, and ``half``: B's recorded K is half of A's (a packed fp4 B)."""

    m: int
    n: int
    k: int
    kn: bool
    ia: int
    ib: int
    half: bool = False


def _locate(shape_set: list[list[int]], half_ok: bool = False) -> _Located | None:
    """A (the first operand with ≥2 dims, leading dims folded into M) and B (the next 2-D
    operand sharing A's K on either axis; with ``half_ok``, failing that, half of A's K)."""
    dims = [(i, d) for i, d in enumerate(shape_set) if len(d) >= 2]
    if len(dims) < 2:
        return None
    ia, a = dims[0]
    k = a[-1]
    for ratio in (1, 2) if half_ok else (1,):
        for ib, b in dims[1:]:
            if len(b) != 2:
                continue
            if b[0] * ratio == k:
                return _Located(numel(a[:-1]), b[1], k, True, ia, ib, ratio == 2)
            if b[1] * ratio == k:
                return _Located(numel(a[:-1]), b[0], k, False, ia, ib, ratio == 2)
            if len(a) == 2 and ratio == 1:  # activation given transposed ([K, M])
                if b[0] == a[0]:
                    return _Located(a[1], b[1], a[0], True, ia, ib)
                if b[1] == a[0]:
                    return _Located(a[1], b[0], a[0], False, ia, ib)
    return None


def gemm_dims(shape_set: list[list[int]]) -> tuple[int, int, int, bool] | None:
    """Find ``(M, N, K, b_is_kn)`` in one shape set, whatever the layout.

    The activation is the first operand with ≥2 dims (leading dims fold into M); the weight is
    the next 2-D operand that shares the activation's K on either axis.
    """
    found = _locate(shape_set)
    return None if found is None else (found.m, found.n, found.k, found.kn)


def estimate(ctx: OpContext) -> OpEstimate:
    if ctx.instance is None:
        return _positional(ctx)
    est = _from_roles(ctx, ctx.instance)
    if isinstance(est, OpEstimate):
        return est
    return _positional(ctx, f"{est}; the instance's input/weight shapes read positionally")


def _names(ctx: OpContext) -> list[str]:
    return [ctx.name] + ([ctx.instance.op] if ctx.instance is not None and ctx.instance.op
                         else [])


def _dense_weight(ctx: OpContext) -> str:
    """The dense (non-expert) weight dtype the config gives, else the context's."""
    if ctx.model is not None and ctx.model.dense_weight_dtype:
        return ctx.model.dense_weight_dtype
    return ctx.weight_dtype


def _set_precision(ctx: OpContext) -> Precision:
    """The compute-precision rule on an upstream entry: the kernel name, the recorded dtypes
    read as a set, the quantization config, the model's dtypes and the device."""
    return decide(names=_names(ctx), recorded=ctx.dtypes,
                  quant=ctx.model.quantization if ctx.model is not None else None,
                  model_a=ctx.activation_dtype, model_b=_dense_weight(ctx),
                  model_from=("config.json" if ctx.model is not None
                              else "env_report model_dtype or the bf16 default, no config.json"),
                  device=ctx.device)


def _positional(ctx: OpContext, why: str | None = None) -> OpEstimate:
    """The upstream path: shapes by position, the recorded dtypes read as a set (never by
    position), the compute dtype from :func:`core.precision.decide`."""
    if not ctx.shapes:
        raise OpModelUnavailable(
            f"GEMM launch has no recorded shapes: {ctx.why_no_shapes()}"
            + ("; a dense GEMM cannot be tied to one projection from config.json alone"
               if ctx.model is not None else "")
            + "; stage-B captured shapes would also model it")
    prec = _set_precision(ctx)
    half_ok = prec.b == "fp4" and prec.a != "fp4"
    found = [(s, loc) for s in ctx.shapes
             if (loc := _locate(s, half_ok)) is not None and loc.m and loc.n and loc.k]
    if not found:
        raise OpModelUnavailable(
            f"no operand pair with a shared K in the recorded shapes {ctx.shapes[:2]}"
            + (f"; {prec.evidence}" if prec.compute is None else "")
        )
    if prec.compute is None or prec.a is None or prec.b is None:
        raise OpModelUnavailable(prec.evidence)
    assumptions: list[str] = [why] if why else []
    # With several distinct shapes, take the one closest to this regime's token count.
    if ctx.tokens and len(found) > 1:
        tokens = ctx.tokens
        shape_set, loc = min(found, key=lambda f: abs(f[1].m - tokens))
        assumptions.append(
            f"{len(found)} shapes recorded; used the one with M closest to {ctx.regime} M="
            f"{ctx.tokens} ({ctx.tokens_source})"
        )
    else:
        shape_set, loc = found[0]
        if len(found) > 1:
            assumptions.append(f"{len(found)} shapes recorded; used the first")
    assumptions.append(prec.evidence)
    return _positional_estimate(ctx, prec, shape_set, loc, assumptions)


def _logical_k(prec: Precision, loc: _Located) -> tuple[int, str]:
    """K counted in values, not recorded bytes: a packed fp4 operand holds two per element."""
    if prec.a == "fp4" and prec.b == "fp4":
        return 2 * loc.k, (f"A and B are packed fp4 (two values per recorded element): K = 2 × "
                           f"the recorded {loc.k}")
    if loc.half:
        return loc.k, (f"B is packed fp4: its recorded K axis is half of A's {loc.k} (two "
                       "values per element)")
    return loc.k, ""


def _positional_estimate(ctx: OpContext, prec: Precision, shape_set: list[list[int]],
                         loc: _Located, notes: list[str]) -> OpEstimate:
    a_dt, b_dt = prec.a or ctx.activation_dtype, prec.b or ctx.weight_dtype
    m, n = loc.m, loc.n
    k, k_note = _logical_k(prec, loc)
    if k_note:
        notes.append(k_note)
    extras = [d for j, d in enumerate(shape_set) if j not in (loc.ia, loc.ib)]
    scale_bytes = _positional_scales(ctx, prec, extras, m * k, n * k, notes)
    out_dt, out_why = _positional_out(ctx, prec, a_dt)
    a, w, c = ctx.nbytes(a_dt), ctx.nbytes(b_dt), ctx.nbytes(out_dt)
    flops = 2.0 * m * n * k
    bytes_ = m * k * a + k * n * w + m * n * c + scale_bytes
    notes.append(
        f"M={m} N={n} K={k} (B stored {'[K,N]' if loc.kn else '[N,K]'}); A {a_dt} {a:g} B, "
        f"B {b_dt} {w:g} B, C {out_dt} {c:g} B ({out_why}); each operand read/written once; "
        f"flops = 2·M·N·K; compute dtype {prec.compute}"
    )
    return OpEstimate(
        model="dense GEMM: flops=2MNK, bytes=MK·a+KN·w+MN·c (+scales)",
        candidates=(Candidate("A+B+C", bytes_, flops),),
        compute_dtype=prec.compute or a_dt,
        per="launch",
        assumptions=tuple(notes),
    )


def _positional_out(ctx: OpContext, prec: Precision, a_dt: str) -> tuple[str, str]:
    """C's dtype: the one the name states, else the 16-bit float the recorded set holds beside
    quantized operands, else A's when A is 16-bit or wider, else the model's activation dtype
    (an fp32 left over is a bias, scale or accumulator as often as the output: not taken)."""
    if prec.out is not None:
        return prec.out, "the output type the kernel name states"
    left = [d for d in prec.rest if d in ("bf16", "fp16")]
    if len(left) == 1:
        return left[0], f"the recorded {left[0]} the operands leave over"
    if ctx.nbytes(a_dt) >= 2:
        return a_dt, "A's dtype: the op writes its input's dtype"
    return ctx.activation_dtype, ("the output dtype is not recorded; the model's activation "
                                  "dtype is assumed")


def _positional_scales(ctx: OpContext, prec: Precision, extras: list[list[int]],
                       a_elems: int, b_elems: int, notes: list[str]) -> float:
    """The block-scale bytes of a quantized GEMM read positionally: the shape set's further
    tensors at the scale dtype of the operands' format (NVFP4: fp8 per 16 values and an fp32
    tensor scale; MX fp4: one e8m0 byte per 32; fp8/int8: the recorded fp32), or, with no
    further tensor, the scales a packed fp4 format implies."""
    a_dt, b_dt = prec.a or "", prec.b or ""
    if ctx.nbytes(a_dt) >= 2 and ctx.nbytes(b_dt) >= 2:
        return 0.0
    fp4 = "fp4" in (a_dt, b_dt)
    nv = fp4 and ("fp8" in prec.rest or any(t and _NV_NAME.search(t) for t in _names(ctx)))
    if not extras:
        packed = [e for d, e in ((a_dt, a_elems), (b_dt, b_elems)) if d == "fp4"]
        return _implied_scale_bytes(nv, packed, notes) if packed else 0.0
    total = 0.0
    shown: list[str] = []
    for dims in extras:
        elems = numel(dims) if dims else 1
        if nv:
            dt = "fp8" if elems > 1 else "fp32"
        elif fp4:
            dt = "uint8"  # e8m0
        else:
            dt = "fp32" if "fp32" in prec.rest or len(prec.rest) != 1 else prec.rest[0]
        total += elems * ctx.nbytes(dt)
        shown.append(f"{dims} {dt}")
    kind = ("NVFP4: fp8 block scales, an fp32 tensor scale" if nv else
            "MX: e8m0 block scales" if fp4 else "the recorded scale dtype")
    notes.append(f"further tensors in the shape set read once as scales ({kind}): "
                 f"{', '.join(shown)} = {total:g} B")
    return total


# ------------------------------------------------------------------------ from operand roles

_BYTE_TYPES = ("uint8", "int8")
_FP4_NAME = lazy_compile(r"mxfp4|nvfp4|fp4|e2m1|float4|a16w4|w4a16|a4w4|a8w4|wfp4|afp4", re.I)
_NV_NAME = lazy_compile(r"nvfp4|nv_?fp4|cutlass_scaled_fp4", re.I)
MX_GROUP, NV_GROUP = 32, 16  # values per block scale: MX (e8m0), NVFP4 (fp8 e4m3)


@dataclass(eq=False)
class _Arg:
    pos: int
    dims: list[int]
    raw: str | None
    role: str

    @property
    def dtype(self) -> str | None:
        return recorded_dtype(self.raw)

    @property
    def elems(self) -> int:
        return numel(self.dims) if self.dims else 1  # a 0-d tensor holds one element

    def shown(self) -> str:
        return f"arg {self.pos} ({self.role}) {self.dims} {self.raw or '?'}"


def _plain_args(inst: Instance, roles: list[str]) -> list[_Arg]:
    out: list[_Arg] = []
    for i, (a, r) in enumerate(zip(inst.args, roles, strict=True)):
        d = a.dims
        if isinstance(d, list) and all(isinstance(x, int) for x in d) and r not in (
                "scalar", "other") and (d or a.type not in (None, "", "Scalar", "ScalarList")):
            out.append(_Arg(i, [int(x) for x in d], a.type, r))  # type: ignore[arg-type]
    return out


@dataclass
class _Operand:
    arg: _Arg
    dtype: str          # canonical, ``fp4`` for a packed operand
    packed: bool        # two values per recorded element
    k_axis: int         # index into dims of the recorded K axis

    @property
    def logical_elems(self) -> int:
        return self.arg.elems * (2 if self.packed else 1)


def _fp4_hint(ctx: OpContext, inst: Instance) -> str | None:
    """Why 8-bit operands should be read as packed fp4, or None."""
    for what, text in (("op", inst.op), ("kernel", ctx.name), ("module", inst.module)):
        if text and _FP4_NAME.search(text):
            return f"the {what} name {text[:60]!r} says fp4"
    dense = (ctx.model.dense_weight_dtype if ctx.model is not None
             and ctx.model.dense_weight_dtype else ctx.weight_dtype)
    if dense == "fp4":
        return "the model's weight dtype is fp4 (config.json)"
    return None


def _k_axes(a: _Arg, b: _Arg, layout: str | None, half_first: bool
            ) -> tuple[int, int, int, str] | None:
    """(A's K axis, B's K axis, B's N axis, relation) where relation says how A's recorded K
    compares with B's: ``equal``, ``b_half`` (B holds K/2) or ``a_half``; None when no axis
    pairs up. B's layout is the op's (``gemm``: [..., K, N]; ``linear``: [N, K]); without one,
    both orientations are tried. ``half_first``: try the packed relations first (8-bit B with
    fp4 evidence), so a square weight is not misread as unpacked."""
    if len(a.dims) < 1 or len(b.dims) < 2:
        return None
    ka = len(a.dims) - 1
    kn, nk = (len(b.dims) - 2, len(b.dims) - 1), (len(b.dims) - 1, len(b.dims) - 2)
    options = {"gemm": [kn], "linear": [nk]}.get(layout or "", [kn, nk])
    relations = [("equal", 1.0), ("b_half", 2.0), ("a_half", 0.5)]
    if half_first:
        relations = relations[1:] + relations[:1]
    for rel, ratio in relations:
        for kb, nb in options:
            if a.dims[ka] == b.dims[kb] * ratio:
                return ka, kb, nb, rel
    return None


def _from_roles(ctx: OpContext, inst: Instance) -> OpEstimate | str:
    """The estimate from the instance's operand roles; a reason string when the roles do not
    give a matching A and B (the positional path then runs, saying so)."""
    table, roles = instance_roles(inst)
    args = _plain_args(inst, roles)
    picked = _pick_a_b(args)
    if picked is None:
        return f"{inst.op}: the roles give no input/weight pair"
    a_arg, b_arg, extra, how = picked
    layout = table.writes_output if table.writes_output in ("gemm", "linear") else None
    if layout is None and table.source.startswith("table:"):
        layout = _out_variant_layout(table.op)
    a_dt = a_arg.dtype or ctx.activation_dtype
    b_dt = b_arg.dtype or ctx.weight_dtype
    hint = _fp4_hint(ctx, inst)
    # an 8-bit B beside a wider A, with fp4 evidence: try the packed reading first
    half_first = b_dt in _BYTE_TYPES and a_dt not in _BYTE_TYPES and hint is not None
    axes = _k_axes(a_arg, b_arg, layout, half_first=half_first)
    if axes is None:
        return (f"{inst.op}: A {a_arg.dims} and B {b_arg.dims} share no K axis "
                f"(B layout {layout or 'unknown'})")
    ka, kb, nb, rel = axes
    notes: list[str] = [f"operands by role ({table.source}): {how}"]
    if a_arg.dtype is None:
        notes.append(f"A's type {a_arg.raw!r} not recognised; taken as the activation dtype "
                     f"{a_dt}")
    if b_arg.dtype is None:
        notes.append(f"B's type {b_arg.raw!r} not recognised; taken as the weight dtype {b_dt}")
    a_op = _Operand(a_arg, a_dt, a_dt == "fp4", ka)   # Float4_e2m1fn_x2: 2 per element
    b_op = _Operand(b_arg, b_dt, b_dt == "fp4", kb)
    if not _read_packing(a_op, b_op, rel, hint, notes):
        return (f"{inst.op}: A {a_arg.dims} {a_arg.raw} and B {b_arg.dims} {b_arg.raw} pair "
                "up only if one of them is packed, and neither reads as packed fp4")
    a_dt, b_dt, a_packed, b_packed = a_op.dtype, b_op.dtype, a_op.packed, b_op.packed
    k = a_arg.dims[ka] * (2 if a_packed else 1)
    n = b_arg.dims[nb]
    m, batch = _m_batch(a_arg, b_arg)
    flops = 2.0 * batch * m * n * k
    a_bytes = a_op.logical_elems * ctx.nbytes(a_dt)
    b_bytes = b_op.logical_elems * ctx.nbytes(b_dt)
    notes.append(f"A = {a_arg.shown()}, read once at {a_dt} {ctx.nbytes(a_dt):g} B"
                 + (" (recorded K doubled)" if a_packed else ""))
    notes.append(f"B = {b_arg.shown()}, stored "
                 f"{'[K,N]' if kb < nb else '[N,K]'}, read once at {b_dt} {ctx.nbytes(b_dt):g} B"
                 + (" (recorded K doubled)" if b_packed else ""))
    c_bytes, c_note, out_dt = _output(ctx, inst, table, args, a_op, batch * m * n)
    notes.append(c_note)
    side_bytes = _side_operand_bytes(ctx, args, extra, out_dt, notes)
    side_bytes += _implied_scales(ctx, inst, args, extra, a_op, b_op, notes)
    compute = _compute_dtype(ctx, a_dt, b_dt, notes)
    notes.append(f"M={m} N={n} K={k}" + (f" batch={batch}" if batch > 1 else "")
                 + f"; flops = 2·{'batch·' if batch > 1 else ''}M·N·K; compute dtype {compute}")
    bytes_ = a_bytes + b_bytes + c_bytes + side_bytes
    return OpEstimate(
        model="dense GEMM: flops=2MNK, bytes=A+B+C (+bias, scales), operands by role",
        candidates=(Candidate("A+B+C", bytes_, flops),),
        compute_dtype=compute,
        per="launch",
        assumptions=tuple(notes),
    )


def _pick_a_b(args: list[_Arg]) -> tuple[_Arg, _Arg, list[_Arg], str] | None:
    """(A, B, further operands, how they were picked): the input and the weight, else the
    first two inputs; None when the roles give neither."""
    inputs = [x for x in args if x.role == "input"]
    weights = [x for x in args if x.role == "weight"]
    if inputs and weights:
        return inputs[0], weights[0], inputs[1:] + weights[1:], "A = the input, B = the weight"
    if len(inputs) >= 2:
        return (inputs[0], inputs[1], inputs[2:],
                "no weight role: A = the first input, B = the second")
    return None


def _read_packing(a: _Operand, b: _Operand, rel: str, hint: str | None,
                  notes: list[str]) -> bool:
    """Mark A and/or B as packed fp4 when their K axes (``rel``) and 8-bit types say so;
    False when the K axes pair up only with a packing neither operand shows."""
    a_arg, b_arg = a.arg, b.arg
    if rel == "b_half" and b.dtype in _BYTE_TYPES:
        b.packed, b.dtype = True, "fp4"
        notes.append(f"B is {b_arg.raw} with its K axis ({b_arg.dims[b.k_axis]}) half of A's "
                     f"({a_arg.dims[a.k_axis]}): packed fp4, two values per byte")
    elif rel == "a_half" and a.dtype in _BYTE_TYPES:
        a.packed, a.dtype = True, "fp4"
        notes.append(f"A is {a_arg.raw} with its K axis ({a_arg.dims[a.k_axis]}) half of B's "
                     f"({b_arg.dims[b.k_axis]}): packed fp4, two values per byte")
    elif rel == "equal" and a.dtype in _BYTE_TYPES and b.dtype in _BYTE_TYPES and hint:
        a.packed = b.packed = True
        a.dtype = b.dtype = "fp4"
        notes.append(f"A and B are 8-bit and {hint}: both packed fp4, two values per byte, so "
                     "the recorded K is half the true K")
    return {"equal": a.packed == b.packed, "b_half": b.packed and not a.packed,
            "a_half": a.packed and not b.packed}[rel]


def _m_batch(a_arg: _Arg, b_arg: _Arg) -> tuple[int, int]:
    """(M, batch): a batched B takes M from A's second-last axis and batch from the leading
    axes; otherwise every leading axis of A folds into M."""
    if len(b_arg.dims) > 2:
        m = a_arg.dims[-2] if len(a_arg.dims) >= 2 else 1
        batch = max(numel(a_arg.dims[:-2]) if len(a_arg.dims) > 2 else 1, numel(b_arg.dims[:-2]))
        return m, batch
    return (numel(a_arg.dims[:-1]) if len(a_arg.dims) > 1 else 1), 1


def _side_operand_bytes(ctx: OpContext, args: list[_Arg], extra: list[_Arg], out_dt: str,
                        notes: list[str]) -> float:
    """Bias, scales, further operands and an in-place C, each read once."""
    side_bytes = 0.0
    extra_pos = {x.pos for x in extra}
    for x in args:
        if x.role in ("bias", "scale") or x.pos in extra_pos:
            dt = x.dtype or ctx.activation_dtype
            side_bytes += x.elems * ctx.nbytes(dt)
            what = x.role if x.role in ("bias", "scale") else "further operand"
            notes.append(f"{what} = {x.shown()}, read once at its own size ({dt} "
                         f"{ctx.nbytes(dt):g} B)")
        elif x.role == "inplace":
            # addmm_'s self: read as the bias term, then overwritten with the result (C)
            dt = x.dtype or out_dt
            side_bytes += x.elems * ctx.nbytes(dt)
            notes.append(f"in-place C = {x.shown()}, read once (its write is C)")
    return side_bytes


def _out_variant_layout(op: str) -> str | None:
    """B's layout for an ``out=`` overload (the table sizes no output there): aten's matmul
    family stores B [..., K, N]; others are matched on K either way."""
    if op.startswith("aten::") and "linear" not in op:
        return "gemm"
    if op == "aten::linear":
        return "linear"
    return None


def _output(ctx: OpContext, inst: Instance, table: OpRoles, args: list[_Arg], a: _Operand,
            mn: int) -> tuple[float, str, str]:
    """(C bytes, the note, C's dtype): the ``output`` argument, else the allocated output."""
    outs = [x for x in args if x.role in ("output", "inplace")]
    if outs:
        c = outs[0]
        dt = c.dtype or ctx.activation_dtype
        return (c.elems * ctx.nbytes(dt),
                f"C = {c.shown()} written once at its own dtype ({dt} {ctx.nbytes(dt):g} B)", dt)
    dims = output_dims(table, [x.dims for x in inst.args])
    if dims is not None and numel(dims) == mn:
        elems = numel(dims)
        where = f"the output {table.op} allocates, {dims} ({table.writes_output})"
    else:
        elems, where = mn, f"the allocated output, batch·M·N = {mn} elements"
    if table.op == "aten::_int_mm":
        dt, why = "int32", "_int_mm returns int32"
    elif ctx.nbytes(a.dtype) < 2:
        dt = ctx.activation_dtype
        why = (f"A is {a.dtype}: the out_dtype is a scalar the trace does not record; the "
               "activation dtype is assumed")
    else:
        dt, why = a.dtype, "A's dtype: the op writes its input's dtype"
    return (elems * ctx.nbytes(dt),
            f"C = {where}, written once at {dt} {ctx.nbytes(dt):g} B; {why}", dt)


def _implied_scales(ctx: OpContext, inst: Instance, args: list[_Arg], extra: list[_Arg],
                    a: _Operand, b: _Operand, notes: list[str]) -> float:
    """Block-scale bytes of packed fp4 operands whose scales the instance does not record."""
    packed = [o for o in (a, b) if o.packed]
    if not packed:
        return 0.0
    scales = [x for x in args if x.role == "scale"] + extra
    if scales:
        kind = "NVFP4" if any(x.dtype == "fp8" and "e8m0" not in (x.raw or "").lower()
                              for x in scales) else "MX"
        per = "fp8 per 16" if kind == "NVFP4" else "e8m0 per 32"
        notes.append(f"block scales recorded ({kind}: one {per} values), counted at their own "
                     "sizes")
        return 0.0
    nv = any(t and _NV_NAME.search(t) for t in (inst.op, ctx.name))
    return _implied_scale_bytes(nv, [o.logical_elems for o in packed], notes)


def _implied_scale_bytes(nv: bool, logical_elems: list[int], notes: list[str]) -> float:
    """The block scales packed fp4 operands carry when none is recorded: NVFP4 one fp8 byte per
    16 values plus a 4 B fp32 tensor scale, MX one e8m0 byte per 32 values, per operand."""
    group = NV_GROUP if nv else MX_GROUP
    total = sum(e / group * 1.0 + (4.0 if nv else 0.0) for e in logical_elems)
    notes.append(f"no scale tensor recorded: {'NVFP4' if nv else 'MX'} block scales implied, one "
                 f"{'fp8' if nv else 'e8m0'} byte per {group} fp4 values"
                 + (" plus a 4 B fp32 tensor scale" if nv else "") + f" ({total:g} B)")
    return total


def _compute_dtype(ctx: OpContext, a_dt: str, b_dt: str, notes: list[str]) -> str:
    """The MMA dtype for the recorded A × B pair, by the one compute-precision rule
    (:func:`core.precision.decide`): equal dtypes run in it, a mixed pair at the wider one (a
    weight-only GEMM dequantises its weight into the activation's dtype), and only in a dtype
    the device has matrix cores for."""
    prec = decide(roles=(a_dt, b_dt), roles_from="the operands' recorded types (by role)",
                  model_a=ctx.activation_dtype, device=ctx.device)
    notes.append(prec.evidence)
    if prec.compute is None:
        raise OpModelUnavailable(prec.evidence)
    return prec.compute


def levers(lc: LeverContext) -> list[str]:
    return fuse_adjacent(lc, ADJACENT_OPS) + lower_precision_weights(lc.weight_dtype)


# each recorded instance (A and B operand tensors at least) is folded with its own time
MODEL = FunctionModel("gemm", PRIORS, estimate, levers, instance_tensors=2)
