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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from roofline_tui.core.opmodels.base import (
    Candidate,
    FunctionModel,
    LeverContext,
    OpContext,
    OpEstimate,
    OpModelUnavailable,
    Prior,
    biggest_neighbours,
    numel,
)

PRIORS: Mapping[str, Prior] = {
    "elementwise": Prior("elementwise", 0.875, "elementwise / norm / quant: pure streaming, "
                                               "0.85–0.90 (spec §7); midpoint used"),
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


def estimate(ctx: OpContext) -> OpEstimate:
    sub = ctx.op_subclass or "elementwise"
    if sub == "host_copy" and not ctx.shapes:
        raise OpModelUnavailable("host↔device copy without a recorded size: its bytes are "
                                 "unknown")
    if ctx.shapes:
        bytes_, flops, assumptions = _with_shapes(ctx, sub)
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


MODEL = FunctionModel("elementwise", PRIORS, estimate, levers)
