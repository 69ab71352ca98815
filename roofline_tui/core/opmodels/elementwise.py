"""Elementwise / norm / activation / quant / copy (spec §4): input bytes + output bytes."""

from __future__ import annotations

from roofline_tui.core.opmodels.base import (
    Candidate,
    OpContext,
    OpEstimate,
    OpModelUnavailable,
    numel,
)

OP_CLASS = "elementwise"
TARGET_EFF = 0.875
TARGET_EFF_WHY = "elementwise / norm / quant: pure streaming, 0.85–0.90 (spec §7); midpoint used"

# FLOPs per input element: small, so these kernels sit far left of every ridge.
_FLOPS_PER_ELEM = {"norm": 4.0, "act_and_mul": 4.0, "quant": 3.0, "rope": 6.0}


def _out_elems_and_dtype(ctx: OpContext, in_elems: float) -> tuple[float, str, str]:
    sub = ctx.op_subclass or "elementwise"
    if sub == "act_and_mul":
        return in_elems / 2.0, ctx.activation_dtype, "output is half the input (gate·up → I)"
    if sub == "quant":
        return in_elems, "fp8", "output quantized to fp8 (1 B), per-token/group scales ignored"
    return in_elems, ctx.activation_dtype, "output the same size as the input"


def estimate(ctx: OpContext) -> OpEstimate:
    sub = ctx.op_subclass or "elementwise"
    assumptions: list[str] = []
    in_dt = ctx.dtypes[0] if ctx.dtypes else ctx.activation_dtype
    fused_residual = "fused_add" in ctx.name.lower() or "add_rms" in ctx.name.lower()
    if ctx.shapes:
        shape_set = ctx.shapes[0]
        main = max((d for d in shape_set if d), key=numel, default=[])
        if not main:
            raise OpModelUnavailable("recorded shapes have no tensor operand")
        in_elems = float(numel(main))
        assumptions.append(f"input {main} from the recorded shapes (largest operand)")
    else:
        model = ctx.require_model(f"a shape-less {sub} kernel")
        tokens = ctx.require_tokens(f"a shape-less {sub} kernel")
        if sub in ("norm", "quant"):
            in_elems = float(tokens * model.hidden_size)
            assumptions.append(f"input = tokens {tokens} × hidden {model.hidden_size}")
        elif sub == "act_and_mul":
            if model.num_experts and model.top_k and model.moe_intermediate_size:
                inter = model.moe_intermediate_size
                in_elems = float(tokens * model.top_k * 2 * inter)
                assumptions.append(
                    f"input = tokens {tokens} × top_k {model.top_k} × 2·moe_intermediate {inter}"
                )
            elif model.intermediate_size:
                in_elems = float(tokens * 2 * model.intermediate_size)
                assumptions.append(
                    f"input = tokens {tokens} × 2·intermediate {model.intermediate_size}"
                )
            else:
                raise OpModelUnavailable("act_and_mul needs an intermediate size in config.json")
        elif sub == "rope":
            in_elems = float(tokens * (model.num_attention_heads + model.num_kv_heads) * model.head_dim)
            assumptions.append("input = q and k of every token (rotated in place)")
        else:
            raise OpModelUnavailable(
                f"{sub} kernel without recorded shapes: its tensor size is unknown"
            )
        assumptions.append(f"tokens = {tokens} ({ctx.tokens_source})")
    out_elems, out_dt, why = _out_elems_and_dtype(ctx, in_elems)
    a_in, a_out = ctx.nbytes(in_dt), ctx.nbytes(out_dt)
    streams = 2.0 if fused_residual else 1.0
    if fused_residual:
        assumptions.append("fused residual add: reads x and residual, writes both")
    bytes_ = streams * (in_elems * a_in + out_elems * a_out)
    flops = in_elems * _FLOPS_PER_ELEM.get(sub, 1.0 if sub != "copy" else 0.0)
    assumptions.append(f"{why}; in {in_dt} {a_in:g} B, out {out_dt} {a_out:g} B")
    return OpEstimate(
        model=f"{sub}: bytes = in·in_dtype + out·out_dtype",
        candidates=(Candidate("in+out", bytes_, flops),),
        compute_dtype=ctx.activation_dtype,
        per="launch",
        assumptions=tuple(assumptions),
    )
