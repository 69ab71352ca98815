"""Spec §3 steps 5–6 and §6 L3: utilizations, roof, bound type, speedup, headroom band.

Pure arithmetic on SI numbers. The two no-verdict outcomes (dispatch-bound, infeasible) are
decided here, with the constants they use exposed for notes.
"""


from typing import NamedTuple

from roofline_tui.core.closed_sets import BoundType, HeadroomClass, RoofAxis

UTIL_BOUND_THRESHOLD = 0.60      # both utils below this → latency-bound (spec §3 step 5)
LAUNCH_OVERHEAD_S = 5e-6         # launch-overhead scale (spec §3 step 6)
DISPATCH_FACTOR = 2.0            # a launch within 2× the overhead is timed by dispatch
DISPATCH_FLOOR_S = LAUNCH_OVERHEAD_S * DISPATCH_FACTOR
SANE_LOW = 0.001                 # spec §6 L3 sanity band
SANE_HIGH = 1.0
ISOLATED_NOISE = 0.034           # spec §8.3: isolated-kernel repeat band (fraction)
E2E_NOISE_PCT = 0.5              # spec §8.3: e2e serving band, in percent
SATURATED_BAND = 0.9             # × target_eff
MODERATE_BAND = 0.6              # × target_eff
MODEL_CAUTION_SPEEDUP = 10.0     # above this, the model is likelier wrong than the kernel slow


class RooflineMetrics(NamedTuple):
    bytes_est: float
    flops_est: float
    t_s: float                       # time of the modelled unit (launches_per_unit × t_launch)
    achieved_bw_bytes_s: float
    achieved_flops: float
    hbm_util: float
    compute_util: float | None       # None when no usable compute peak
    arithmetic_intensity: float | None
    ridge_point: float | None
    roof_axis: RoofAxis
    roofline_pct_raw: float
    suspect: bool
    suspect_reason: str | None
    dispatch_bound: bool
    bound_type: BoundType
    bytes_upper_bound: float


def compute_metrics(
    *,
    bytes_est: float,
    flops_est: float,
    t_unit_s: float,
    t_launch_s: float,
    peak_bw: float,
    peak_flops: float | None,
) -> RooflineMetrics:
    achieved_bw = bytes_est / t_unit_s
    achieved_flops = flops_est / t_unit_s
    hbm_util = achieved_bw / peak_bw
    compute_util = achieved_flops / peak_flops if peak_flops else None
    ai = flops_est / bytes_est if bytes_est > 0 else None
    ridge = peak_flops / peak_bw if peak_flops else None
    roof_axis: RoofAxis = "compute" if (ai is not None and ridge is not None and ai > ridge) else "memory"
    raw = compute_util if roof_axis == "compute" and compute_util is not None else hbm_util
    suspect_reason = None
    if bytes_est <= 0:
        suspect_reason = "byte estimate is zero or negative"
    elif raw > SANE_HIGH:
        suspect_reason = (
            f"{roof_axis} roofline {raw:.3f} > 1: the model implies a rate above peak "
            "(most often the byte/FLOP model over-counts, or the compute peak is unvalidated)"
        )
    elif raw < SANE_LOW:
        suspect_reason = f"{roof_axis} roofline {raw:.2g} < {SANE_LOW}: the model under-counts"
    low_utils = hbm_util < UTIL_BOUND_THRESHOLD and (compute_util or 0.0) < UTIL_BOUND_THRESHOLD
    dispatch_bound = t_launch_s <= DISPATCH_FLOOR_S and low_utils
    bound_type: BoundType = "latency" if low_utils else roof_axis
    return RooflineMetrics(
        bytes_est=bytes_est,
        flops_est=flops_est,
        t_s=t_unit_s,
        achieved_bw_bytes_s=achieved_bw,
        achieved_flops=achieved_flops,
        hbm_util=hbm_util,
        compute_util=compute_util,
        arithmetic_intensity=ai,
        ridge_point=ridge,
        roof_axis=roof_axis,
        roofline_pct_raw=raw,
        suspect=suspect_reason is not None,
        suspect_reason=suspect_reason,
        dispatch_bound=dispatch_bound,
        bound_type=bound_type,
        bytes_upper_bound=peak_bw * t_unit_s,
    )


def attainable_speedup(target_eff: float, roofline_pct: float) -> float:
    """The spec §3 formula, before the launch floor."""
    return max(1.0, target_eff / roofline_pct)


class Speedup(NamedTuple):
    value: float                 # what the entry reports
    roofline_formula: float      # max(1, target_eff / roofline_pct)
    launch_floor: float | None   # max(1, t_launch / launch overhead); None when t is unknown
    basis: str                   # which bound applied
    note: str
    model_caution: str | None    # why, when still above MODEL_CAUTION_SPEEDUP


def bounded_speedup(target_eff: float, roofline_pct: float, t_launch_s: float | None,
                    overhead_s: float = LAUNCH_OVERHEAD_S) -> Speedup:
    """``attainable_speedup = min(target_eff/roofline_pct, t_launch/overhead)``, at least 1.

    A launch can never take less than the launch overhead, so however low its roofline
    fraction, one launch can get at most ``t_launch / overhead`` faster. The note says which
    bound applied; a result still above :data:`MODEL_CAUTION_SPEEDUP` is flagged: at that
    distance the byte/FLOP model is more likely wrong than the kernel is that slow.
    """
    formula = attainable_speedup(target_eff, roofline_pct)
    floor = max(1.0, t_launch_s / overhead_s) if t_launch_s and t_launch_s > 0 else None
    if floor is not None and t_launch_s is not None and floor < formula:
        value = floor
        basis = "launch floor (t_launch/launch_overhead)"
        note = (f"Speedup bounded by the launch floor: a {t_launch_s * 1e6:.1f} µs launch cannot "
                f"go below the ~{overhead_s * 1e6:g} µs launch overhead, so at most "
                f"{floor:.2f}× (target_eff/roofline_pct alone would give {formula:.2f}×).")
    else:
        value = formula
        basis = "target_eff/roofline_pct"
        note = (f"Speedup bounded by target_eff/roofline_pct = {formula:.2f}×"
                + (f" (the launch floor allows {floor:.2f}×)." if floor is not None else "."))
    caution = None
    if value > MODEL_CAUTION_SPEEDUP:
        caution = (f"attainable speedup {value:.1f}× is above {MODEL_CAUTION_SPEEDUP:g}×: the "
                   "byte/FLOP model is more likely wrong than the kernel is that slow")
        note += f" Model caution: {caution}."
    return Speedup(value=value, roofline_formula=formula, launch_floor=floor, basis=basis,
                   note=note, model_caution=caution)


def expected_e2e_gain_pct(pct_gpu_time: float, speedup: float) -> float:
    return pct_gpu_time * (1.0 - 1.0 / speedup)


def headroom_band(roofline_pct: float, target_eff: float) -> HeadroomClass:
    """Banded against target_eff, not the raw roof (spec §3 step 6). Pass the unrounded ratio:
    0.809962 against a 0.90 target is moderate (< 0.81), whatever it displays as."""
    if roofline_pct >= SATURATED_BAND * target_eff:
        return "saturated"
    if roofline_pct >= MODERATE_BAND * target_eff:
        return "moderate"
    return "underperforming"
