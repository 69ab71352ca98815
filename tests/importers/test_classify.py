from __future__ import annotations

import pytest

from roofline_tui.core.names import short_name
from roofline_tui.importers.common import guess_kernel_source

# (kernel name as the profilers print it, classification, backend_guess, editable)
CASES = [
    ("Cijk_Alik_Bljk_BBS_BH_Bias_HAS_SAV_UserArgs_MT256x224x64_MI16x16x1_SN_LDSB1_AFC1_AFEM1",
     "library_gemm", "hipblaslt", False),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_"
     "execute_segment_k_off_kernel__5x_cublas", "library_gemm", "cublas", False),
    ("nvjet_tst_128x256_64x4_2x1_v_bz_coopA_TNT", "library_gemm", "cublas", False),
    ("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_"
     "align8>(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8::Params)",
     "library_gemm", "cutlass", False),
    ("ampere_sgemm_32x32_sliced1x4_tn", "library_gemm", "cublas", False),
    ("fused_moe_kernel", "triton", "triton", True),
    ("_gemm_a8w8_blockscale_kernel_BLOCK_SIZE_M_128", "triton", "triton", True),
    ("triton_poi_fused_add_cos_sin_0", "triton", "triton", True),
    ("kernel_paged_attention_2d", "triton", "triton", True),
    ("void vllm::paged_attention_v1_kernel<c10::BFloat16, c10::BFloat16, 128, 16, 128>"
     "(c10::BFloat16*, c10::BFloat16 const*)", "library_attn", "ck", False),
    ("void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4>>(Params)",
     "library_attn", "ck", False),
    ("void vllm::rms_norm_kernel<c10::BFloat16, 8, 4>(c10::BFloat16*, c10::BFloat16 const*, "
     "long, long)", "reduction_norm", "unknown", True),
    ("void vllm::act_and_mul_kernel<c10::BFloat16, &(c10::BFloat16 vllm::silu_kernel"
     "<c10::BFloat16>(c10::BFloat16 const&)), true>(c10::BFloat16*, c10::BFloat16 const*, int)",
     "elementwise_overhead", "torch_native", True),
    ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
     "other", "unknown", False),
    ("void vllm::cross_device_reduce_1stage<c10::BFloat16, 8>(vllm::RankData*, vllm::RankSignals,"
     " vllm::Signal*, c10::BFloat16*, int, int)", "other", "unknown", False),
    ("Memcpy DtoD (Device -> Device)", "memory", "torch_native", False),
    ("Memcpy HtoD (Pageable -> Device)", "memory", "torch_native", False),
    ("Memset (Device)", "memory", "torch_native", False),
    ("void ck::kernel_gemm_xdl_cshuffle_v3<ck::GridwiseGemm_xdl>(ck::Argument)",
     "fused_custom", "ck", True),
    ("aiter::fmoe_bf16_g1u1_vs_silu_1tg_32x256", "fused_custom", "aiter", True),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
     "std::array<char*, 1ul>>(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
     "elementwise_overhead", "torch_native", True),
    ("some_unknown_thing", "other", "unknown", True),
    # attention built on CUTLASS/CuTe: its template arguments say cutlass, it is not a library
    # GEMM (issue 35 item 3): xformers / PyTorch mem-efficient attention, FA2 split-KV as
    # PyTorch and vLLM's flash-attn print it, FA3 on sm90
    ("fmha_cutlassF_bf16_aligned_64x128_rf_sm80(PyTorchMemEffAttention::AttentionKernel"
     "<cutlass::bfloat16_t, cutlass::arch::Sm80, true, 64, 128, 128, true, true>::Params)",
     "library_attn", "cutlass", False),
    ("void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, "
     "false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, "
     "false, true, false, false, true, true, false, false>(flash::Flash_fwd_params)",
     "library_attn", "cutlass", False),
    ("void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, "
     "4, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 4, "
     "cutlass::bfloat16_t> >, false, true, false, false, false, true, false>"
     "(pytorch_flash::Flash_fwd_params)", "library_attn", "cutlass", False),
    ("void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<"
     "flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>>>>>>(Params)",
     "library_attn", "cutlass", False),
    # a CUTLASS GEMM stays a library GEMM
    ("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>"
     "(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8::Params)",
     "library_gemm", "cutlass", False),
]


@pytest.mark.parametrize(("name", "cls", "backend", "editable"), CASES)
def test_classification(name: str, cls: str, backend: str, editable: bool) -> None:
    got = guess_kernel_source(name)
    assert (got.classification, got.backend_guess, got.editable) == (cls, backend, editable)
    assert got.opt_hint


@pytest.mark.parametrize(
    ("name", "short"),
    [
        ("void vllm::rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*)", "rms_norm_kernel"),
        ("void at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel"
         "<float, 4>(int)", "distribution_elementwise_grid_stride_kernel"),
        ("fused_moe_kernel", "fused_moe_kernel"),
        ("Memcpy DtoD (Device -> Device)", "Memcpy"),
        ("x" * 100, "x" * 60),
        ("phantom::key_switch_inner_prod_c2_and_evk(unsigned long *)",
         "key_switch_inner_prod_c2_and_evk"),
    ],
)
def test_short_name(name: str, short: str) -> None:
    assert short_name(name) == short
    assert len(short_name(name)) <= 60
