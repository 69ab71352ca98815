"""Levers for every head, from evidence (issue 34 item 1): one test per lever family on
hand-built entries, then the table's own rules.

Each entry carries its verdict as the engine would write it; the arithmetic of every expected
number is in the test's docstring.
"""

from __future__ import annotations

import string
from typing import Any

import pytest

from roofline_tui.core import lever_table
from roofline_tui.core.artifact import Entry
from roofline_tui.core.levers import LaunchFacts, backend_of, select

TENSILE = ("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT32x32x256_MI16x16x1_SN_LDSB1_AFC1_"
           "GRVWA8_GRVWB8_GSUAMBSK_GLS0_ISA942_IU1_K1")


def _e(short: str, *, name: str | None = None, **kw: Any) -> Entry:
    base: dict[str, Any] = dict(
        name=name or short, short_name=short, modeled=True, op_class="gemm",
        headroom_class="underperforming", bound_type="latency", roofline_pct=0.45,
        roof_axis="memory", target_eff=0.9, attainable_speedup=2.0,
        expected_e2e_gain_pct=5.0, pct_gpu_time=10.0, confidence="low")
    base.update(kw)
    return Entry(**base)


def _keys(levers: list[Any]) -> list[str]:
    return [lv.key for lv in levers]


def test_hipblaslt_gets_offline_tuning_with_its_tile_and_split_k_for_small_m() -> None:
    """A decode GEMM 32×12288→4096 on hipBLASLt at 45% of its roof, target 90%:
    speedup 0.9/0.45 = 2.00×, gain 10%·(1 − 1/2) = 5.00%. M = 32 ≤ 64 and K = 12288 ≥ N = 4096,
    so split-K applies; the name's macro tile is MT32x32 with DepthU 256."""
    e = _e(TENSILE[:40], name=TENSILE, label="GEMM 32×12288→4096 (RowParallelLinear)",
           editable=False)
    levers = select(e, [e])
    assert _keys(levers)[:3] == ["hipblaslt_offline_tuning", "tunableop", "hipblaslt_split_k"]
    first = levers[0]
    assert "hipblaslt-bench" in first.action and "32×12288→4096" in first.action
    assert "MT32x32 (DepthU 256)" in first.evidence and "GSUAMBSK" in first.evidence
    assert first.expected_effect == "bounded by the roof: up to 2.00× on this kernel (5.00% end to end)"
    assert "offline tuning" in first.source
    split = levers[2]
    assert "K = 12288 ≥ N = 4096" in split.evidence
    assert "library_backend" in _keys(levers)  # not editable: the host-side lever is there too
    # a wide-N GEMM (K = 4096 < N = 24576) keeps its output tiles: no split-K lever
    wide = _e(TENSILE[:40], name=TENSILE, label="GEMM 32×4096→24576 (Merged)", editable=False)
    assert "hipblaslt_split_k" not in _keys(select(wide, [wide]))


def test_cublas_gets_tunableop_and_the_heuristic_candidates() -> None:
    """sm90_xmma cuBLAS GEMM 16×4096→4096 at 60% of its roof: 0.9/0.6 = 1.50×; M = 16 with
    K = N = 4096 is a split-K candidate; the name says tile 128x128x64, segment_k off."""
    name = ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_"
            "execute_segment_k_off_kernel__5x_cublas")
    e = _e(name[:40], name=name, label="GEMM 16×4096→4096 (o_proj)", roofline_pct=0.6,
           attainable_speedup=1.5, expected_e2e_gain_pct=3.33, editable=False)
    assert backend_of(e.name, e.short_name)[0] == "cublas"
    levers = select(e, [e])
    keys = _keys(levers)
    assert keys[0] == "tunableop" and "cublaslt_heuristics" in keys and "cublas_split_k" in keys
    heur = levers[keys.index("cublaslt_heuristics")]
    assert "tile 128x128x64, segment_k_off" in heur.evidence
    assert "up to 1.50×" in heur.expected_effect
    assert "PYTORCH_TUNABLEOP_ENABLED=1" in levers[0].action


def test_triton_reads_its_block_sizes_from_the_name_and_warps_from_the_launch() -> None:
    """triton_kernels names matmul_ogs kernels …_<BLOCK_M>x<BLOCK_N>x<BLOCK_K>x<SPLIT_K>:
    16x128x256x1. The launch block of 256 threads on wave64 gfx942 is 256/64 = 4 warps. The
    recorded input [32, 3072] gives M = 32 tokens, K = 3072: small M, so split-K too."""
    name = "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1"
    e = _e(name, editable=True)
    launch = LaunchFacts(grid=(912, 1, 1), block=(256, 1, 1), dims=(32, 3072))
    levers = select(e, [e], launch, "gfx942")
    keys = _keys(levers)
    assert keys[:2] == ["triton_blocks", "triton_split_k"]
    assert "BLOCK_M=16 BLOCK_N=128 BLOCK_K=256 SPLIT_K=1" in levers[0].evidence
    assert "grid 912×1×1, block 256×1×1, 4 warps of 64" in levers[0].evidence
    assert "M = 32 tokens" in levers[1].evidence and "K = 3072" in levers[1].evidence
    assert "triton_config" not in keys  # the block sizes said it already
    # an Inductor kernel has no block sizes in its name: its launch config is the lever, and
    # without a recorded launch that row is not shown
    poi = _e("triton_poi_fused_add_mul_0", op_class="elementwise", editable=True)
    with_launch = select(poi, [poi], LaunchFacts(grid=(64, 1, 1), block=(128, 1, 1)), "sm_90")
    assert "triton_config" in _keys(with_launch)
    assert "4 warps of 32" in with_launch[_keys(with_launch).index("triton_config")].evidence
    assert "triton_config" not in _keys(select(poi, [poi]))


def test_attention_gets_a_backend_switch_named_for_its_backend() -> None:
    """Paged decode attention at 20% of its roof, target 50%: 0.5/0.2 = 2.50×. The ROCm
    custom paged kernel is swapped for AITER / CK; PyTorch's flash copy for FA3 / cuDNN."""
    rocm = _e("paged_attention_ll4mi_QKV_mfma16_kernel", op_class="attn", roofline_pct=0.2,
              target_eff=0.5, attainable_speedup=2.5, expected_e2e_gain_pct=12.0, editable=False)
    first = select(rocm, [rocm])[0]
    assert first.key == "attention_backend" and "aiter" in first.action.lower()
    assert first.expected_effect.startswith("bounded by the roof: up to 2.50×")
    flash = _e("flash_fwd_kernel", name="void pytorch_flash::flash_fwd_kernel<...>",
               op_class="attn", editable=False)
    assert "FlashAttention-3" in select(flash, [flash])[0].action


def test_an_elementwise_chain_on_one_shape_is_fused_with_the_bytes_it_saves() -> None:
    """mul, copy_ and add on bf16 [16,16,559,64]: one intermediate is
    16·16·559·64·2 B = 18,317,312 B = 18.3 MB. Fusing mul's neighbours away removes at most
    their own 8.58% + 5.18% = 13.76% of GPU time. A [4,8] tensor is no neighbour of theirs."""
    mul = _e("elementwise_kernel", op_class="elementwise", label="aten::mul bf16 [16,16,559,64]",
             pct_gpu_time=12.23, editable=True)
    copy = _e("elementwise_kernel#2", op_class="elementwise",
              label="aten::copy_ bf16 [16,16,559,64] +1 shape", pct_gpu_time=8.58, editable=True)
    add = _e("elementwise_kernel#3", op_class="elementwise", label="aten::add bf16 [16,16,559,64]",
             pct_gpu_time=5.18, editable=True)
    other = _e("elementwise_kernel#4", op_class="elementwise", label="aten::mul fp32 [4,8]",
               pct_gpu_time=5.0, editable=True)
    heads = [mul, copy, add, other]
    fuse = select(mul, heads)[0]
    assert fuse.key == "elementwise_fusion"
    assert "`aten::copy_` [elementwise_kernel#2] (8.58%)" in fuse.action
    assert "`aten::add` [elementwise_kernel#3] (5.18%)" in fuse.action
    assert "removes up to 13.76% of GPU time" in fuse.expected_effect
    assert "18.3 MB per intermediate" in fuse.expected_effect
    assert "elementwise_fusion" not in _keys(select(other, heads))


def test_the_moe_stage_that_lags_its_sibling_is_told_how_far() -> None:
    """Stage 2 (down) at 17% of its roof, stage 1 (gate/up) at 38%: reaching its sibling is
    0.38/0.17 = 2.235× (under the roof's 5.29×), worth 35.1%·(1 − 1/2.235) = 19.40% end to
    end. The leading stage gets no balance lever."""
    down = _e("_matmul_ogs_down", op_class="moe", model="MoE stage 2 (down): …",
              roofline_pct=0.17, attainable_speedup=5.29, pct_gpu_time=35.1, editable=True)
    up = _e("_matmul_ogs_up", op_class="moe", model="MoE stage 1 (gate/up): …",
            roofline_pct=0.38, attainable_speedup=2.37, pct_gpu_time=30.5, editable=True)
    lag = next(lv for lv in select(down, [down, up]) if lv.key == "moe_stage_balance")
    assert "stage 1 `_matmul_ogs_up` reaches 38%" in lag.evidence
    ratio = 0.38 / 0.17
    assert f"to its sibling's 38%: {ratio:.2f}× on this kernel" in lag.expected_effect
    assert f"({35.1 * (1 - 1 / ratio):.2f}% end to end)" in lag.expected_effect
    assert lag.expected_effect.endswith("bounded by the roof: up to 5.29×")
    assert "moe_stage_balance" not in _keys(select(up, [down, up]))


def test_a_host_bound_head_gets_graph_capture_and_says_its_gain_is_not_knowable() -> None:
    """A 6 µs launch is within 2× the ~5 µs launch overhead: dispatch-bound, no verdict. Its
    levers are graph capture and fewer launches; their gain cannot be bounded by a roof."""
    e = _e("triton_poi_fused_add_0", op_class="elementwise", headroom_class="unknown",
           roofline_pct=None, attainable_speedup=None, expected_e2e_gain_pct=None,
           dispatch_bound=True, t_ms=0.006, editable=True,
           no_verdict_reason="dispatch-bound: 6.0 µs per launch")
    levers = select(e, [e])
    assert _keys(levers)[:2] == ["graph_capture", "fewer_launches"]
    assert "6.0 µs per launch" in levers[0].evidence
    assert levers[0].expected_effect.startswith("gain not knowable: dispatch-bound")
    assert "CUDA Graphs" in levers[0].source


def test_a_saturated_head_keeps_its_byte_reduction_levers_first() -> None:
    """Spec §7.1: a saturated head's levers are the byte-reduction ones (the constraint line is
    not a lever); at 88% of its roof against 90% it has no tuning row."""
    e = _e("fused_moe_kernel", op_class="moe", headroom_class="saturated", bound_type="memory",
           roofline_pct=0.88, attainable_speedup=1.02, editable=True,
           byte_reduction_levers=["stop reading what isn't used: 256 experts streamed, 221 hit",
                                  "constraint: isl/osl/conc stay as supplied"])
    levers = select(e, [e])
    assert [lv.family for lv in levers][:1] == ["byte_reduction"]
    assert levers[0].action.startswith("stop reading what isn't used")
    assert "88% of its roof against a target of 90%" in levers[0].evidence
    assert levers[0].expected_effect.endswith("tuning leaves up to 1.02×")
    assert not any(lv.action.startswith("constraint:") for lv in levers)
    assert not any(lv.family == "tuning" for lv in levers)


# -- the table's own rules --------------------------------------------------------------------

FACTS = {"up_to", "at_pct", "gain_unknown", "saturated", "tile", "gsu", "cublas_tile", "blocks",
         "launch", "grid", "shape", "for_shape", "left", "small_m", "fuse_with", "fuse_pct", "fuse_shape",
         "fuse_bytes", "sibling", "lag", "t_us", "alt_backends", "gap", "backend", "byte_lever"}


@pytest.mark.parametrize("row", lever_table.TABLE, ids=lambda r: r.key)
def test_every_row_is_cited_and_names_only_facts_the_selector_reads(row: lever_table.LeverRow
                                                                     ) -> None:
    assert row.source.strip() and row.name.strip()
    named = {f for text in (row.action, row.evidence, row.effect)
             for _, f, _, _ in string.Formatter().parse(text) if f}
    assert named <= FACTS, named - FACTS
    assert len({r.key for r in lever_table.TABLE}) == len(lever_table.TABLE)
