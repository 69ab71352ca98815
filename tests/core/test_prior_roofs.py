"""Each ``target_eff`` prior states the roof it was set against, and is re-based when the
verdict's roof is a different one (issue 31 item 6).

Prefill attention's 0.75 was set against H100's 989.4 TFLOP/s bf16 data sheet: 742 TFLOP/s,
what FlashAttention-3 reaches. On H100's measured 794.5 TFLOP/s matmul ceiling, the roof a
verdict now uses, the same fraction is only 596 TFLOP/s, so an FA3 kernel at 556 read
"saturated". The attention model's FLOPs are fixed here (the causal count of one prefill
layer) so that the test checks the roof and the prior, not the attention model.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roofline_tui.core.opmodels import MODELS, Candidate, OpContext, OpEstimate
from roofline_tui.core.opmodels.attn import PRIORS as ATTN_PRIORS
from roofline_tui.core.opmodels.elementwise import PRIORS as ELEMENTWISE_PRIORS
from roofline_tui.core.opmodels.gemm import PRIORS as GEMM_PRIORS
from roofline_tui.core.opmodels.moe import PRIORS as MOE_PRIORS
from tests.core.helpers import run

# FlashAttention-3 (hopper/) forward, as the CUDA profiler prints it, shortened
FA3 = ("void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<"
       "flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, "
       "cute::tuple<cute::C<128>, cute::C<176>, cute::C<128> >, 128, cutlass::bfloat16_t, "
       "float, cutlass::arch::Sm90, true, false> > > >(T1::Params)")
# Llama-3-8B (32 query heads, head_dim 128), one causal prefill layer of T = 8192 tokens:
# 4·32·128·8192²/2 = 549.76 GFLOP; Q, K, V, O at bf16 (8 KV heads) ≈ 0.17 GB
FLOPS = 4 * 32 * 128 * 8192**2 / 2
BYTES = (2 * 8192 * 32 * 128 + 2 * 8192 * 8 * 128) * 2
RATE = 556e12
T_US = FLOPS / RATE * 1e6  # 988.8 µs


def _fixed(ctx: OpContext) -> OpEstimate:
    return OpEstimate(model="causal prefill (fixed for the test)",
                      candidates=(Candidate("causal", BYTES, FLOPS),), compute_dtype="bf16",
                      per="launch", prior="attn_prefill",
                      assumptions=("FLOPs fixed: 4·32·128·8192²/2",))


def _round(tmp_path: Path, product: str) -> Path:
    root = tmp_path / product.replace(" ", "_")
    rd = root / "profile" / "round_0"
    rd.mkdir(parents=True)
    (root / "env_report.json").write_text(json.dumps({"gfx": "sm_90", "product": product}))
    (rd / "profile_topN.json").write_text(json.dumps({"top_kernels": [{
        "name": FA3, "short_name": "FlashAttnFwdSm90", "pct_gpu_time": 30.0, "avg_us": T_US,
        "calls": 32, "editable": True}]}))
    return rd


def test_every_prior_states_its_roof() -> None:
    """Memory-bound classes against the HBM pin rate; the dense GEMM against a measured
    ceiling (the spec's peaks are microbenchmarks); prefill attention against the data sheet,
    with its value on a measured ceiling: 0.75 · 989.4 / 794.5 = 0.934."""
    assert GEMM_PRIORS["gemm"].roof == "measured ceiling"
    assert MOE_PRIORS["moe"].roof == ELEMENTWISE_PRIORS["elementwise"].roof == "hbm"
    assert ATTN_PRIORS["attn"].roof == "hbm"
    prefill = ATTN_PRIORS["attn_prefill"]
    assert prefill.roof == "data sheet" and prefill.value == 0.75
    assert prefill.on_measured == pytest.approx(0.75 * 989.4 / 794.5, abs=5e-4)
    assert prefill.on_measured == 0.934
    assert "FlashAttention-3" in prefill.rebase_why and "794.5" in prefill.rebase_why


def test_fa3_at_556_tflops_is_not_saturated_on_the_measured_h100_roof(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """FA3 prefill at 549.76 GFLOP in 988.8 µs = 556 TFLOP/s on an H100 SXM (bf16 roof: the
    measured 794.5 TFLOP/s ceiling): 556/794.5 = 0.6998 of the roof.

    Before, target 0.75: 0.6998 ≥ 0.9·0.75 = 0.675, "saturated", 0.75/0.6998 = 1.072×, gain
    30·(1 − 1/1.072) = 2.01 %. Now the target is re-based to 0.934 (742 TFLOP/s, FA3's best):
    saturated needs ≥ 0.9·0.934 = 0.8406 and moderate ≥ 0.6·0.934 = 0.5604, so 0.6998 is
    moderate; 0.934/0.6998 = 1.3346×, gain 30·(1 − 1/1.3346) = 7.52 %, and its
    target_eff_source says why. On the H100 PCIe (no measured ceiling: the 756 TFLOP/s data
    sheet) the prior stays 0.75: 556/756 = 0.7354, saturated. A calibrated prior is never
    re-based."""
    monkeypatch.setattr(MODELS["attn"], "estimate_fn", _fixed)
    sxm = run(_round(tmp_path, "H100")).entries[0]
    assert sxm.roof_axis == "compute" and sxm.peak_flops_dtype == "bf16"
    assert sxm.roofline_pct == pytest.approx(556 / 794.5, abs=1e-4)
    assert sxm.target_eff == 0.934
    assert sxm.headroom_class == "moderate"
    assert sxm.attainable_speedup == pytest.approx(0.934 / (556 / 794.5), rel=1e-4)
    assert sxm.expected_e2e_gain_pct == pytest.approx(7.52, abs=0.01)
    assert "re-based from 0.75 (set against the data sheet) to 0.934" in sxm.target_eff_source
    assert "FlashAttention-3" in sxm.target_eff_source

    pcie = run(_round(tmp_path, "NVIDIA H100 PCIe")).entries[0]
    assert pcie.roofline_pct == pytest.approx(556 / 756, abs=1e-4)
    assert pcie.target_eff == 0.75 and pcie.headroom_class == "saturated"
    assert "re-based" not in pcie.target_eff_source

    calibrated = run(_round(tmp_path / "cal", "H100"),
                     target_eff_overrides={"attn_prefill": 0.70},
                     target_eff_source="a playbook").entries[0]
    assert calibrated.target_eff == 0.70 and "re-based" not in calibrated.target_eff_source
