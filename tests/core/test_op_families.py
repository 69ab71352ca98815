"""Ops with no model get no number and say their family; LoRA gets its own model (issue 31
item 4). End to end through ``analyze``, on Top-Ns built here with kernel names as vLLM,
SGLang and fla print them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from roofline_tui.core.operands import roles_of

from .fidelity_helpers import LLAMA_8B, kernel, make_round
from .helpers import entry, run

# Nemotron-H-8B's sizes (hidden 4096, 32 q / 8 kv heads, Mamba-2 mixers of 128 heads × 64 with
# a 128-wide state in 8 groups, chunk 128), its layer pattern shortened: M mamba, * attention,
# - MLP
NEMOTRON_H: dict[str, Any] = {
    "model_type": "nemotron_h", "architectures": ["NemotronHForCausalLM"],
    "hidden_size": 4096, "num_hidden_layers": 16, "num_attention_heads": 32,
    "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 21504,
    "hybrid_override_pattern": "M-M-M*-M-M-M*-M-", "mamba_num_heads": 128,
    "mamba_head_dim": 64, "ssm_state_size": 128, "n_groups": 8, "chunk_size": 128,
    "conv_kernel": 4, "torch_dtype": "bfloat16",
}
# Qwen3-Next-80B-A3B (public config.json): 48 layers, one full-attention layer in 4, the rest
# Gated DeltaNet; 512 experts, 10 per token
QWEN3_NEXT: dict[str, Any] = {
    "model_type": "qwen3_next", "architectures": ["Qwen3NextForCausalLM"],
    "hidden_size": 2048, "num_hidden_layers": 48, "num_attention_heads": 16,
    "num_key_value_heads": 2, "head_dim": 256, "full_attention_interval": 4,
    "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_key_head_dim": 128,
    "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4, "num_experts": 512,
    "num_experts_per_tok": 10, "moe_intermediate_size": 512,
    "shared_expert_intermediate_size": 512, "intermediate_size": 5120,
    "torch_dtype": "bfloat16",
}

STAGE_C = "ncu/rocprof counters (stage C) would measure it"
SSD = [
    ("_chunk_scan_fwd_kernel", 22.0, "Mamba-2 SSD chunk scan"),
    ("_chunk_state_fwd_kernel", 11.0, "Mamba-2 SSD chunk state"),
    ("_bmm_chunk_fwd_kernel", 8.0, "Mamba-2 SSD chunk C·Bᵀ"),
    ("_state_passing_fwd_kernel", 6.5, "Mamba-2 SSD state passing"),
    ("_chunk_cumsum_fwd_kernel", 5.5, "Mamba-2 SSD chunk cumsum (dt·A)"),
]


def _no_verdict(e: Any) -> None:
    """What a user reads on an entry with no model: no numbers, no verdict, the pct order."""
    assert not e.modeled and e.headroom_class == "unknown" and e.bound_type == "unknown"
    assert e.bytes_est is None and e.flops_est is None and e.roofline_pct is None
    assert e.attainable_speedup is None and e.expected_e2e_gain_pct is None
    assert e.route == "pct_order"
    assert "underperforming" not in e.notes


def test_nemotron_h_ssd_kernels_get_no_verdict_and_name_their_family(tmp_path: Path) -> None:
    """A Nemotron-H decode round on H100 (mixed steps: the SSD chunk kernels of the prefill
    chunks sit in the decode step). Before, each of these was causal attention through the
    ``_fwd_kernel`` catch-all and read "underperforming" on bytes never modelled. Now each is
    ``unknown``/``ssm``, unmodelled, in ``degraded[]`` with its family; the bare ``_fwd_kernel``
    (no launching op, no shapes) is unknown too, with what would settle it."""
    heads = [kernel(name, pct=pct, t_ms=0.060, lps=6) for name, pct, _ in SSD]
    heads.append(kernel("_fwd_kernel", pct=9.0, t_ms=0.045, lps=3))
    art = run(make_round(tmp_path, heads, gfx="sm_90", config=NEMOTRON_H,
                         workload={"isl": 2048, "osl": 256, "conc": 32}))
    degraded = {d.name: d.reason for d in art.degraded}
    for name, _, family in SSD:
        e = entry(art, name)
        assert (e.op_class, e.op_subclass) == ("unknown", "ssm")
        _no_verdict(e)
        assert degraded[name] == f"{family}: no byte/FLOP model for SSM kernels; {STAGE_C}"
        assert "attn" not in e.notes and "causal" not in e.notes
    generic = entry(art, "_fwd_kernel")
    assert generic.op_class == "unknown" and generic.op_subclass is None
    _no_verdict(generic)
    assert "no attention evidence" in degraded["_fwd_kernel"]
    assert "would settle the class" in degraded["_fwd_kernel"]
    assert all(not e.modeled for e in art.entries)


def _attention_instance(calls: int, us: float) -> dict[str, Any]:
    """vLLM's ``unified_attention_with_output(query, key, value, output, layer_name)``: the op
    a Triton ``_fwd_kernel`` (prefix-prefill attention) is launched by."""
    args: list[tuple[Any, str]] = [([32, 16, 256], "c10::BFloat16"),
                                   ([32, 2, 256], "c10::BFloat16"),
                                   ([32, 2, 256], "c10::BFloat16"),
                                   ([32, 16, 256], "c10::BFloat16"), ([], "")]
    op = "vllm::unified_attention_with_output"
    roles = roles_of(op, len(args), [t for _, t in args], dims=[d for d, _ in args]).roles
    return {"op": op, "module": "Qwen3NextDecoderLayer/Qwen3NextAttention/Attention",
            "args": [{"dims": d, "type": t, "role": r} for (d, t), r in zip(args, roles)],
            "calls": calls, "total_us": us, "by_phase": {"decode": {"calls": calls,
                                                                    "total_us": us}}}


GDN = [
    ("chunk_gated_delta_rule_fwd_kernel_h", 14.0, "Gated DeltaNet chunk-state recurrence (h)"),
    ("chunk_fwd_kernel_o", 9.0, "fla chunked linear-attention output (chunk_fwd_o)"),
    ("recompute_w_u_fwd_kernel", 7.0, "DeltaNet WY representation (w, u)"),
    ("chunk_scaled_dot_kkt_fwd_kernel", 6.0, "DeltaNet chunk β·K·Kᵀ"),
    ("fused_recurrent_gated_delta_rule_fwd_kernel", 8.0,
     "Gated DeltaNet recurrent (decode) step"),
]


def test_qwen3_next_gdn_kernels_get_no_verdict_and_a_corroborated_fwd_kernel_is_attention(
        tmp_path: Path) -> None:
    """A Qwen3-Next decode round on H100: the Gated DeltaNet chunk and recurrent kernels are
    ``unknown``/``linear_attention`` with their family, never attention or MoE (512 experts:
    a model with experts). A ``_fwd_kernel`` that the trace records as launched by vLLM's
    attention op is attention, and its reason says which op said so."""
    heads = [kernel(name, pct=pct, t_ms=0.040, lps=36) for name, pct, _ in GDN]
    heads.append(kernel("_fwd_kernel", pct=10.0, t_ms=0.050, lps=12,
                        x_roofline={"instances": [_attention_instance(1200, 60000.0)]}))
    art = run(make_round(tmp_path, heads, gfx="sm_90", config=QWEN3_NEXT,
                         workload={"isl": 2048, "osl": 256, "conc": 32}))
    degraded = {d.name: d.reason for d in art.degraded}
    for name, _, family in GDN:
        e = entry(art, name)
        assert (e.op_class, e.op_subclass) == ("unknown", "linear_attention")
        _no_verdict(e)
        assert degraded[name] == (f"{family}: no byte/FLOP model for linear-attention kernels; "
                                  f"{STAGE_C}")
    attn = entry(art, "_fwd_kernel")
    assert attn.op_class == "attn"
    assert "launched by vllm::unified_attention_with_output: attention" in attn.notes


@pytest.mark.parametrize("experts", [False, True])
def test_a_lora_deployment_is_modelled_as_lora(tmp_path: Path, experts: bool) -> None:
    """Llama-3-8B with one rank-16 LoRA adapter on q/k/v (vLLM, --max-loras 1), a 4096-token
    prefill chunk on H100 SXM (3.35 TB/s HBM, 50 MiB L2), upstream shapes as the importer
    writes them (the adapters' TensorList flattened):

    ``_lora_shrink_kernel``, x [4096, 4096] × three A [1, 1, 16, 4096] → fp32 [3, 4096, 16]:
      flops = 2·4096·4096·48 = 1,610,612,736
      bytes = x 4096·4096·2 = 33,554,432 (32 MiB, fits the L2: read once)
            + A 48·4096·2 = 393,216 + out 4096·48·4 = 786,432 = 34,734,080 B
      in 20 µs: 1.7367 TB/s = 0.5184 of 3.35 TB/s; target 0.90 → underperforming
      (< 0.54), both utilizations < 0.60 → latency-bound; speedup 0.90/0.5184 = 1.736×.
    ``_lora_expand_kernel``, fp32 [3, 4096, 16] × B [1,1,4096,16], [1,1,1024,16] ×2 onto
    y [4096, 6144]:
      flops = 2·4096·16·6144 = 805,306,368
      bytes = 3·4096·16·4 = 786,432 + 6144·16·2 = 196,608 + 2·4096·6144·2 = 100,663,296
            = 101,646,336 B
      in 40 µs: 2.5412 TB/s = 0.7586 → moderate (0.54 ≤ 0.7586 < 0.81), memory-bound.
    The same in a model with experts (a 3-D/4-D adapter operand is never an expert weight):
    class lora, no MoE words in the reason."""
    shrink = [[4096, 4096], [1, 1, 16, 4096], [1, 1, 16, 4096], [1, 1, 16, 4096],
              [3, 4096, 16], [4096], [4096], [2], [3], [2], [1], [1]]
    expand = [[3, 4096, 16], [1, 1, 4096, 16], [1, 1, 1024, 16], [1, 1, 1024, 16],
              [4096, 6144], [4096], [4096], [2], [3], [2], [1], [1]]
    dtypes = ["c10::BFloat16", "bool", "float", "int"]
    config = dict(LLAMA_8B, num_experts=8, num_experts_per_tok=2) if experts else LLAMA_8B
    heads = [kernel("_lora_shrink_kernel", pct=20.0, t_ms=0.020, regime="prefill", lps=32,
                    m=4096, shapes=[shrink], dtypes=dtypes),
             kernel("_lora_expand_kernel", pct=15.0, t_ms=0.040, regime="prefill", lps=32,
                    m=4096, shapes=[expand], dtypes=dtypes)]
    art = run(make_round(tmp_path, heads, gfx="sm_90", config=config,
                         workload={"isl": 4096, "osl": 128, "conc": 1}))
    s, x = entry(art, "_lora_shrink_kernel"), entry(art, "_lora_expand_kernel")
    assert (s.op_class, s.op_subclass, x.op_class, x.op_subclass) == (
        "lora", "shrink", "lora", "expand")
    assert s.modeled and x.modeled and not art.degraded
    assert s.bytes_est == 34_734_080 and s.flops_est == 1_610_612_736
    assert x.bytes_est == 101_646_336 and x.flops_est == 805_306_368
    assert s.roofline_pct == pytest.approx(34_734_080 / 20e-6 / 3.35e12, abs=1e-4)
    assert s.headroom_class == "underperforming" and s.bound_type == "latency"
    assert s.attainable_speedup == pytest.approx(0.90 / 0.5184, rel=1e-3)
    assert x.roofline_pct == pytest.approx(101_646_336 / 40e-6 / 3.35e12, abs=1e-4)
    assert x.headroom_class == "moderate" and x.bound_type == "memory"
    assert s.target_eff == 0.90 and "grouped-GEMM" in s.target_eff_source
    for e in (s, x):
        assert "expert" not in e.notes.lower() and "moe" not in e.notes.lower()
        assert "LoRA" in e.notes


def test_a_multi_adapter_decode_gets_no_verdict_and_says_why(tmp_path: Path) -> None:
    """--max-loras 4 at decode (M=32): the trace does not say how many of the 4 slots the batch
    uses, and that moves the shrink's bytes 2.78× (0.662 to 1.841 MB, see tests/core/opmodels/
    test_lora.py): no number, and the reason names the slots and what would settle it."""
    shapes = [[[32, 4096], [4, 1, 16, 4096], [4, 1, 16, 4096], [4, 1, 16, 4096], [3, 32, 16],
               [32], [32], [5], [6], [5], [1], [1]]]
    art = run(make_round(tmp_path, [
        kernel("_lora_shrink_kernel", pct=12.0, t_ms=0.012, lps=32, m=32, shapes=shapes,
               dtypes=["c10::BFloat16", "float", "int"])], gfx="sm_90", config=LLAMA_8B))
    e = entry(art, "_lora_shrink_kernel")
    assert e.op_class == "lora"
    _no_verdict(e)
    (d,) = art.degraded
    assert "1 to 4 of the 4 slots" in d.reason and "--max-loras 1" in d.reason
    assert "MoE" not in d.reason
