"""Dense GEMM ``[M,K]×[K,N]`` (spec §4): flops = 2MNK, bytes = A + B + C."""

from __future__ import annotations

from collections.abc import Mapping

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
    numel,
)

PRIORS: Mapping[str, Prior] = {
    "gemm": Prior("gemm", 0.90, "dense GEMM: regular, dense compute (spec §7 prior)"),
}
# A GEMM takes a norm or quant prologue, and an act-and-mul epilogue when unfused.
ADJACENT_OPS = ("quant", "norm", "act_and_mul")


def gemm_dims(shape_set: list[list[int]]) -> tuple[int, int, int, bool] | None:
    """Find ``(M, N, K, b_is_kn)`` in one shape set, whatever the layout.

    The activation is the first operand with ≥2 dims (leading dims fold into M); the weight is
    the next 2-D operand that shares the activation's K on either axis.
    """
    dims = [d for d in shape_set if len(d) >= 2]
    if len(dims) < 2:
        return None
    a = dims[0]
    for b in dims[1:]:
        if len(b) != 2:
            continue
        k = a[-1]
        if b[0] == k:
            return numel(a[:-1]), b[1], k, True
        if b[1] == k:
            return numel(a[:-1]), b[0], k, False
        if len(a) == 2:  # activation given transposed ([K, M])
            if b[0] == a[0]:
                return a[1], b[1], a[0], True
            if b[1] == a[0]:
                return a[1], b[0], a[0], False
    return None


def estimate(ctx: OpContext) -> OpEstimate:
    if not ctx.shapes:
        raise OpModelUnavailable(
            "GEMM launch has no recorded shapes (graph-replayed), and a dense GEMM cannot be tied "
            "to one projection from config.json alone; stage-B captured shapes would model it"
        )
    found: list[tuple[int, int, int, bool]] = []
    for shape_set in ctx.shapes:
        dims = gemm_dims(shape_set)
        if dims and all(dims[:3]):
            found.append(dims)
    if not found:
        raise OpModelUnavailable(
            f"no operand pair with a shared K in the recorded shapes {ctx.shapes[:2]}"
        )
    assumptions: list[str] = []
    # With several distinct shapes, take the one closest to this regime's token count.
    if ctx.tokens and len(found) > 1:
        tokens = ctx.tokens
        m, n, k, kn = min(found, key=lambda d: abs(d[0] - tokens))
        assumptions.append(
            f"{len(found)} shapes recorded; used the one with M closest to {ctx.regime} M="
            f"{ctx.tokens} ({ctx.tokens_source})"
        )
    else:
        m, n, k, kn = found[0]
        if len(found) > 1:
            assumptions.append(f"{len(found)} shapes recorded; used the first")
    a_dt = ctx.dtypes[0] if ctx.dtypes else ctx.activation_dtype
    w_dt = ctx.dtypes[1] if len(ctx.dtypes) > 1 else (ctx.dtypes[0] if ctx.dtypes else ctx.weight_dtype)
    out_dt = ctx.activation_dtype if ctx.nbytes(a_dt) < 2 else a_dt
    a, w, c = ctx.nbytes(a_dt), ctx.nbytes(w_dt), ctx.nbytes(out_dt)
    flops = 2.0 * m * n * k
    bytes_ = m * k * a + k * n * w + m * n * c
    compute_dt = a_dt if ctx.nbytes(a_dt) >= ctx.nbytes(w_dt) else w_dt
    if ctx.nbytes(a_dt) < 2 and ctx.nbytes(w_dt) < 2:
        compute_dt = w_dt
    assumptions.append(
        f"M={m} N={n} K={k} (B stored {'[K,N]' if kn else '[N,K]'}); A {a_dt} {a:g} B, "
        f"B {w_dt} {w:g} B, C {out_dt} {c:g} B; each operand read/written once"
    )
    return OpEstimate(
        model="dense GEMM: flops=2MNK, bytes=MK·a+KN·w+MN·c",
        candidates=(Candidate("A+B+C", bytes_, flops),),
        compute_dtype=compute_dt,
        per="launch",
        assumptions=tuple(assumptions),
    )


def levers(lc: LeverContext) -> list[str]:
    return fuse_adjacent(lc, ADJACENT_OPS) + lower_precision_weights(lc.weight_dtype)


# each recorded instance (A and B operand tensors at least) is folded with its own time
MODEL = FunctionModel("gemm", PRIORS, estimate, levers, instance_tensors=2)
