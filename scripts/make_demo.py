"""Regenerate the bundled demo profile (roofline_tui/demo/): three rounds modelled on the spec §9 run.

Not the §9 figures themselves: the kernels and per-launch times are §9's, but the Top-25 holds
64 % of GPU time (TOP25_COVERAGE) and shares are recomputed from the scaled totals, so the MoE
reads 23.80 % in round 0 where §9 has 26.45 %. Nothing claims the demo reproduces §9.

Round 0 is the baseline Top-25 of Qwen3.5-35B-A3B-FP8 on gfx950 (vLLM, TP1, isl=osl=1024,
conc 64). Round 1 tunes the fused MoE (1.047× isolated); round 2 rewrites the paged-attention
kernel (1.56× isolated). Per-kernel totals are scaled from per-launch times, and every
percentage is recomputed from the new total, as a profiler would.

    python scripts/make_demo.py
"""

from __future__ import annotations

import json
from pathlib import Path

from roofline_tui.core.inputs import short_name_of

ROOT = Path(__file__).resolve().parent.parent / "roofline_tui" / "demo"
N_DECODE, N_PREFILL = 2033, 24
TOP25_COVERAGE = 0.64  # the Top-25 holds this share of GPU time; the long tail the rest
FP8, BF16 = "c10::Float8_e4m3fn", "c10::BFloat16"

# name, class, backend, editable, decode us/launch, decode launches/step,
# prefill us/launch, prefill launches/step, shapes, dtypes
KERNELS = [
    ("fused_moe_kernel", "triton", "triton", True, 49.471, 80, 910.0, 80, [], [FP8]),
    ("kernel_paged_attention_2d", "triton", "triton", True, 141.112, 10, None, 0, [], [BF16]),
    ("fused_recurrent_gated_delta_rule_fwd_kernel", "triton", "triton", True, 36.0, 30,
     None, 0, [], [BF16]),
    ("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT64x64x256_MI16x16x1",
     "library_gemm", "hipblaslt", False, 12.0, 80, 160.0, 80,
     [[[64, 2048], [12288, 2048]], [[8192, 2048], [12288, 2048]]], [BF16, FP8]),
    ("triton_poi_fused_add_mul_sigmoid_silu_0", "triton", "triton", True, 3.9, 280, 22.0, 280,
     [[[64, 4096], [64, 4096]]], [BF16, BF16]),
    ("void at::native::elementwise_kernel<128, 4, at::native::direct_copy_kernel_cuda>",
     "elementwise_overhead", "torch_native", True, 10.5, 120, 60.0, 120,
     [[[64, 248320]]], ["float"]),
    ("void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel<c10::BFloat16>, true>",
     "elementwise_overhead", "torch_native", True, 4.1, 40, 88.0, 40, [], [BF16]),
    ("void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>", "reduction_norm",
     "torch_native", True, 2.6, 80, 30.0, 80, [[[64, 2048], [64, 2048], [2048]]], [BF16]),
    ("void vllm::dynamic_per_token_scaled_fp8_quant_kernel<c10::BFloat16, c10::Float8_e4m3fn>",
     "elementwise_overhead", "torch_native", True, 2.9, 60, 40.0, 60, [], [BF16]),
    ("moe_align_block_size_kernel", "triton", "triton", True, 3.6, 40, 12.0, 40, [], ["int"]),
    ("void vllm::moe::topkGatingSoftmax<8, 256, 4, 16, 32, int, float>", "reduction_norm",
     "torch_native", True, 3.1, 40, 9.0, 40, [], ["float"]),
    ("Cijk_Ailk_Bljk_F8BS_BH_Bias_SAV_MT128x128x128_MI16x16x1", "library_gemm", "hipblaslt",
     False, 6.8, 40, 150.0, 40, [], [FP8, FP8]),
    ("Cijk_Ailk_Bljk_F8BS_BH_Bias_SAV_MT64x128x128_MI16x16x1", "library_gemm", "hipblaslt",
     False, 5.9, 40, 130.0, 40, [], [FP8, FP8]),
    ("void vllm::reshape_and_cache_flash_kernel<__hip_bfloat16, __hip_bfloat16, 0>", "library_attn",
     "ck", False, 2.2, 10, 35.0, 10, [], [BF16]),
    ("void vllm::rotary_embedding_kernel<c10::BFloat16, true>", "reduction_norm",
     "torch_native", True, 2.4, 10, 24.0, 10, [], [BF16]),
    ("causal_conv1d_update_kernel", "triton", "triton", True, 2.8, 30, 45.0, 30, [], [BF16]),
    ("_chunk_gated_delta_rule_fwd_kernel_h", "triton", "triton", False, None, 0, 410.0, 30, [],
     [BF16]),
    ("_fwd_kernel_flash_prefill", "library_attn", "triton", True, None, 0, 620.0, 10, [],
     [BF16]),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>", "reduction_norm",
     "torch_native", True, 4.4, 2, 18.0, 2, [], ["float"]),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<int>>",
     "elementwise_overhead", "torch_native", True, 1.6, 12, 3.0, 12, [], ["int"]),
    ("sampling_top_k_top_p_kernel", "other", "unknown", True, 21.0, 1, 21.0, 1, [], ["float"]),
    ("void at::native::index_elementwise_kernel<128, 4>", "elementwise_overhead",
     "torch_native", True, 2.1, 6, 6.0, 6, [], [BF16]),
    ("Memcpy HtoD (Pinned -> Device)", "memory", "torch_native", False, 3.2, 4, 3.2, 4, [],
     []),
    ("void at::native::unrolled_elementwise_kernel<at::native::CUDAFunctor_add<float>>",
     "elementwise_overhead", "torch_native", True, 1.9, 4, 4.0, 4, [], ["float"]),
    ("Memset (Device)", "memory", "torch_native", False, 1.5, 3, 1.5, 3, [], []),
]

# Per-round isolated speedups: round -> {kernel name: factor applied to its per-launch time}
ROUNDS = {
    "round_0": {},
    "round_1": {"fused_moe_kernel": 1.047},
    "round_2": {"fused_moe_kernel": 1.047, "kernel_paged_attention_2d": 1.56},
}
# End-to-end serving metrics measured for each round (tokens/s across the run).
SERVING = {"round_0": 10000.0, "round_1": 9993.6, "round_2": 10402.0}


def build_round(speedups: dict[str, float]) -> dict:
    rows = []
    for (name, cls, backend, editable, d_us, d_lps, p_us, p_lps, shapes, dtypes) in KERNELS:
        f = speedups.get(name, 1.0)
        phases = {}
        if d_us is not None and d_lps:
            phases["decode"] = (d_us / f, d_lps, N_DECODE)
        if p_us is not None and p_lps:
            phases["prefill"] = (p_us / (f if name != "fused_moe_kernel" else 1.0), p_lps,
                                 N_PREFILL)
        calls = {r: round(lps * steps) for r, (_, lps, steps) in phases.items()}
        total_us = sum(us * calls[r] for r, (us, _, _) in phases.items())
        n_calls = sum(calls.values())
        row = {
            "name": name, "short_name": short_name_of(name), "calls": n_calls,
            "total_ms": round(total_us / 1000.0, 4), "avg_us": round(total_us / n_calls, 3),
            "shapes": shapes, "dtypes": dtypes, "classification": cls,
            "backend_guess": backend, "editable": editable,
            "phase": "both" if len(phases) == 2 else next(iter(phases)),
            "served_regimes": sorted(phases, key=lambda r: r != "prefill"),
            "phase_calls_measured": calls,
            "calls_per_step": {r: float(lps) for r, (_, lps, _) in phases.items()},
            "base_latency_ms": {r: round(us / 1000.0, 6) for r, (us, _, _) in phases.items()},
            "est_shape": {},
        }
        if "decode" in phases:
            row["est_shape"]["decode"] = {"M": 64, "M_note": "conc snapped to capture size"}
        if "prefill" in phases:
            row["est_shape"]["prefill"] = {"M": 8192, "M_dist": {"8192": 22, "1024": 2}}
        rows.append(row)
    total_ms = sum(r["total_ms"] for r in rows) / TOP25_COVERAGE
    rows.sort(key=lambda r: -r["total_ms"])
    for i, r in enumerate(rows, 1):
        r["rank"] = i
        r["pct_gpu_time"] = round(100.0 * r["total_ms"] / total_ms, 2)
    return {
        "source": "torch-trace",
        "total_gpu_time_ms": round(total_ms, 4),
        "num_kernel_launches": sum(r["calls"] for r in rows) + 9000,
        "num_distinct_kernels": 97,
        "serving": {
            "n_prefill_steps": N_PREFILL, "n_decode_steps": N_DECODE,
            "decode_batch_captured": 64, "decode_batch_steady": 64, "steady": True,
            "analytic_calls": {"prefill": 64, "decode": 1024},
            "note": "decode captured at steady batch: per-launch times trustworthy",
        },
        "top_kernels": rows,
    }


def write(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def main() -> None:
    here = Path(__file__).resolve().parent.parent
    fixture = here / "tests" / "fixtures" / "worked_example"
    write(ROOT / "env_report.json", json.loads((fixture / "env_report.json").read_text()))
    write(ROOT / "config.json", json.loads((fixture / "config.json").read_text()))
    for name, speedups in ROUNDS.items():
        write(ROOT / "profile" / name / "profile_topN.json", build_round(speedups))
        write(ROOT / "profile" / name / "serving_metrics.json",
              {"schema": "serving-metrics-v1", "output_throughput_tok_s": SERVING[name]})
    print(f"wrote demo profile under {ROOT}")


if __name__ == "__main__":
    main()
