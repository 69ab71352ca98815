"""Tests for roofline_tui.core.model_config: HF config.json families -> ModelShape."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from roofline_tui.core.model_config import (
    ConfigProblem,
    MLADims,
    ModelShape,
    load_model_config,
    normalize_config,
)

# --------------------------------------------------------------------------- realistic configs


def llama3_8b() -> dict[str, Any]:
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "num_key_value_heads": 8,
        "max_position_embeddings": 131072,
        "rope_theta": 500000.0,
        "torch_dtype": "bfloat16",
        "vocab_size": 128256,
    }


def qwen2_7b() -> dict[str, Any]:
    return {
        "architectures": ["Qwen2ForCausalLM"],
        "model_type": "qwen2",
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "num_attention_heads": 28,
        "num_hidden_layers": 28,
        "num_key_value_heads": 4,
        "max_window_layers": 28,
        "sliding_window": 131072,
        "use_sliding_window": False,
        "torch_dtype": "bfloat16",
        "vocab_size": 152064,
    }


def mistral_7b_v01() -> dict[str, Any]:
    return {
        "architectures": ["MistralForCausalLM"],
        "model_type": "mistral",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "num_key_value_heads": 8,
        "sliding_window": 4096,
        "torch_dtype": "bfloat16",
        "vocab_size": 32000,
    }


def mixtral_8x7b() -> dict[str, Any]:
    return {
        "architectures": ["MixtralForCausalLM"],
        "model_type": "mixtral",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "num_key_value_heads": 8,
        "num_local_experts": 8,
        "num_experts_per_tok": 2,
        "sliding_window": None,
        "torch_dtype": "bfloat16",
        "vocab_size": 32000,
    }


def qwen2_moe_a14b() -> dict[str, Any]:
    return {
        "architectures": ["Qwen2MoeForCausalLM"],
        "model_type": "qwen2_moe",
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "moe_intermediate_size": 2560,
        "shared_expert_intermediate_size": 20480,
        "num_attention_heads": 28,
        "num_hidden_layers": 28,
        "num_key_value_heads": 4,
        "num_experts": 64,
        "num_experts_per_tok": 8,
        "decoder_sparse_step": 1,
        "mlp_only_layers": [],
        "norm_topk_prob": False,
        "torch_dtype": "bfloat16",
        "vocab_size": 151936,
    }


def qwen3_moe_30b() -> dict[str, Any]:
    return {
        "architectures": ["Qwen3MoeForCausalLM"],
        "model_type": "qwen3_moe",
        "hidden_size": 2048,
        "intermediate_size": 6144,
        "moe_intermediate_size": 768,
        "head_dim": 128,
        "num_attention_heads": 32,
        "num_hidden_layers": 48,
        "num_key_value_heads": 4,
        "num_experts": 128,
        "num_experts_per_tok": 8,
        "decoder_sparse_step": 1,
        "mlp_only_layers": [],
        "torch_dtype": "bfloat16",
        "vocab_size": 151936,
    }


def qwen3_next_80b() -> dict[str, Any]:
    return {
        "architectures": ["Qwen3NextForCausalLM"],
        "model_type": "qwen3_next",
        "hidden_size": 2048,
        "intermediate_size": 5120,
        "moe_intermediate_size": 512,
        "shared_expert_intermediate_size": 512,
        "head_dim": 256,
        "num_attention_heads": 16,
        "num_hidden_layers": 48,
        "num_key_value_heads": 2,
        "num_experts": 512,
        "num_experts_per_tok": 10,
        "decoder_sparse_step": 1,
        "mlp_only_layers": [],
        "full_attention_interval": 4,
        "linear_num_key_heads": 16,
        "linear_num_value_heads": 32,
        "linear_key_head_dim": 128,
        "linear_value_head_dim": 128,
        "torch_dtype": "bfloat16",
        "vocab_size": 151936,
    }


def qwen35_35b_a3b_fp8() -> dict[str, Any]:
    """The spec's worked example (section 9), flat form."""
    return {
        "model_type": "qwen3_5_moe",
        "hidden_size": 2048,
        "num_hidden_layers": 40,
        "num_attention_heads": 16,
        "num_key_value_heads": 2,
        "head_dim": 256,
        "num_experts": 256,
        "num_experts_per_tok": 8,
        "moe_intermediate_size": 512,
        "full_attention_interval": 4,
        "quantization_config": {
            "activation_scheme": "dynamic",
            "fmt": "e4m3",
            "quant_method": "fp8",
            "weight_block_size": [128, 128],
        },
        "torch_dtype": "bfloat16",
    }


def deepseek_v3() -> dict[str, Any]:
    return {
        "architectures": ["DeepseekV3ForCausalLM"],
        "model_type": "deepseek_v3",
        "hidden_size": 7168,
        "intermediate_size": 18432,
        "moe_intermediate_size": 2048,
        "num_hidden_layers": 61,
        "num_attention_heads": 128,
        "num_key_value_heads": 128,
        "n_shared_experts": 1,
        "n_routed_experts": 256,
        "num_experts_per_tok": 8,
        "first_k_dense_replace": 3,
        "moe_layer_freq": 1,
        "kv_lora_rank": 512,
        "q_lora_rank": 1536,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "v_head_dim": 128,
        "quantization_config": {
            "activation_scheme": "dynamic",
            "fmt": "e4m3",
            "quant_method": "fp8",
            "weight_block_size": [128, 128],
        },
        "torch_dtype": "bfloat16",
        "vocab_size": 129280,
    }


def deepseek_v2_lite() -> dict[str, Any]:
    return {
        "architectures": ["DeepseekV2ForCausalLM"],
        "model_type": "deepseek_v2",
        "hidden_size": 2048,
        "intermediate_size": 10944,
        "moe_intermediate_size": 1408,
        "num_hidden_layers": 27,
        "num_attention_heads": 16,
        "num_key_value_heads": 16,
        "n_shared_experts": 2,
        "n_routed_experts": 64,
        "num_experts_per_tok": 6,
        "first_k_dense_replace": 1,
        "moe_layer_freq": 1,
        "kv_lora_rank": 512,
        "q_lora_rank": None,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "v_head_dim": 128,
        "torch_dtype": "bfloat16",
        "vocab_size": 102400,
    }


def gpt_oss_120b() -> dict[str, Any]:
    n = 36
    return {
        "architectures": ["GptOssForCausalLM"],
        "model_type": "gpt_oss",
        "hidden_size": 2880,
        "intermediate_size": 2880,
        "head_dim": 64,
        "num_attention_heads": 64,
        "num_hidden_layers": n,
        "num_key_value_heads": 8,
        "num_local_experts": 128,
        "num_experts_per_tok": 4,
        "experts_per_token": 4,
        "sliding_window": 128,
        "layer_types": ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(n)],
        "quantization_config": {
            "modules_to_not_convert": [
                "model.layers.*.self_attn",
                "model.layers.*.mlp.router",
                "model.embed_tokens",
                "lm_head",
            ],
            "quant_method": "mxfp4",
        },
        "torch_dtype": "bfloat16",
        "vocab_size": 201088,
    }


def glm45() -> dict[str, Any]:
    return {
        "architectures": ["Glm4MoeForCausalLM"],
        "model_type": "glm4_moe",
        "hidden_size": 5120,
        "intermediate_size": 12288,
        "moe_intermediate_size": 1536,
        "head_dim": 128,
        "num_attention_heads": 96,
        "num_hidden_layers": 92,
        "num_key_value_heads": 8,
        "n_routed_experts": 160,
        "n_shared_experts": 1,
        "num_experts_per_tok": 8,
        "first_k_dense_replace": 3,
        "num_nextn_predict_layers": 1,
        "partial_rotary_factor": 0.5,
        "torch_dtype": "bfloat16",
        "vocab_size": 151552,
    }


def qwen35_wrapper() -> dict[str, Any]:
    """Qwen3.5 as published: a multimodal wrapper, language model under text_config."""
    n = 40
    text = {
        "model_type": "qwen3_5_moe_text",
        "hidden_size": 2048,
        "num_hidden_layers": n,
        "num_attention_heads": 16,
        "num_key_value_heads": 2,
        "head_dim": 256,
        "num_experts": 256,
        "num_experts_per_tok": 8,
        "moe_intermediate_size": 512,
        "shared_expert_intermediate_size": 512,
        "layer_types": [
            "full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(n)
        ],
        "vocab_size": 248320,
    }
    return {
        "architectures": ["Qwen3_5MoeForConditionalGeneration"],
        "model_type": "qwen3_5_moe",
        "text_config": text,
        "vision_config": {"hidden_size": 1152, "depth": 27, "num_heads": 16},
        "quantization_config": {"quant_method": "fp8", "fmt": "e4m3"},
        "torch_dtype": "bfloat16",
    }


# --------------------------------------------------------------------------- spec golden case


def test_spec_golden_qwen35_fp8() -> None:
    s = normalize_config(qwen35_35b_a3b_fp8())
    assert s.num_full_attention_layers == 10
    assert s.num_linear_attention_layers == 30
    assert s.num_moe_layers == 40
    assert (s.num_experts, s.top_k, s.moe_intermediate_size) == (256, 8, 512)
    assert (s.hidden_size, s.num_layers, s.num_kv_heads, s.head_dim) == (2048, 40, 2, 256)
    assert s.weight_dtype == "fp8"
    assert s.activation_dtype == "bf16"
    assert s.kv_dtype == "bf16"
    assert s.attention_kind == "gqa"
    assert s.layers_of("attn") == 10
    assert s.layers_of("moe") == 40
    assert any("kv_cache_dtype auto" in n for n in s.notes)


def test_spec_golden_qwen35_fp8_kv_cache() -> None:
    s = normalize_config(qwen35_35b_a3b_fp8(), kv_cache_dtype="fp8_e4m3")
    assert s.kv_dtype == "fp8"
    assert s.weight_dtype == "fp8"
    assert s.activation_dtype == "bf16"
    # 2 kv heads * 256 * 2 (K and V) * 1 byte
    assert s.kv_bytes_per_token_per_layer() == 1024


@pytest.mark.parametrize("spelling", ["auto", "AUTO", "", None])
def test_kv_cache_auto_follows_activation(spelling: str | None) -> None:
    s = normalize_config(qwen35_35b_a3b_fp8(), kv_cache_dtype=spelling)
    assert s.kv_dtype == "bf16"


def test_kv_cache_unknown_spelling_falls_back_with_note() -> None:
    s = normalize_config(llama3_8b(), kv_cache_dtype="mystery")
    assert s.kv_dtype == "bf16"
    assert any("mystery" in n for n in s.notes)


# --------------------------------------------------------------------------- dense families


def test_llama3_dense() -> None:
    s = normalize_config(llama3_8b())
    assert s.family == "llama"
    assert s.model_type == "llama"
    assert s.head_dim == 128
    assert any("head_dim not given" in n and "128" in n for n in s.notes)
    assert s.intermediate_size == 14336
    assert s.num_experts is None and s.top_k is None
    assert s.num_moe_layers == 0
    assert s.num_full_attention_layers == 32
    assert s.num_linear_attention_layers == 0
    assert s.weight_dtype == s.activation_dtype == s.kv_dtype == "bf16"
    assert s.vocab_size == 128256
    assert s.layers_of("moe") is None
    assert s.layers_of("gemm") == 32
    assert s.layers_of("elementwise") == 32
    assert s.layers_of("attn") == 32
    assert s.layers_of("comm") is None
    assert s.kv_elems_per_token_per_layer() == 2 * 8 * 128


def test_qwen2_sliding_window_disabled_means_full_attention() -> None:
    s = normalize_config(qwen2_7b())
    assert s.family == "qwen2"
    assert s.num_full_attention_layers == 28
    assert s.num_sliding_attention_layers == 0
    assert s.sliding_window is None
    assert s.head_dim == 128


def test_qwen2_sliding_window_enabled_uses_max_window_layers() -> None:
    cfg = qwen2_7b() | {"use_sliding_window": True, "max_window_layers": 20, "sliding_window": 4096}
    s = normalize_config(cfg)
    assert (s.num_full_attention_layers, s.num_sliding_attention_layers) == (20, 8)
    assert s.sliding_window == 4096
    assert s.layers_of("attn") == 28


def test_mistral_sliding_window_applies_to_all_layers() -> None:
    s = normalize_config(mistral_7b_v01())
    assert s.family == "mistral"
    assert s.num_sliding_attention_layers == 32
    assert s.num_full_attention_layers == 0
    assert s.sliding_window == 4096
    assert s.layers_of("attn") == 32


def test_mistral_without_window_is_full_attention() -> None:
    s = normalize_config(mistral_7b_v01() | {"sliding_window": None, "head_dim": 128})
    assert s.num_full_attention_layers == 32
    assert s.num_sliding_attention_layers == 0
    assert not any("head_dim not given" in n for n in s.notes)


# --------------------------------------------------------------------------- MoE families


def test_mixtral_intermediate_is_per_expert() -> None:
    s = normalize_config(mixtral_8x7b())
    assert s.family == "mixtral"
    assert (s.num_experts, s.top_k) == (8, 2)
    assert s.moe_intermediate_size == 14336
    assert s.intermediate_size is None  # no dense MLP anywhere in Mixtral
    assert s.num_moe_layers == 32
    assert s.num_shared_experts == 0
    assert s.num_full_attention_layers == 32
    assert any("per-expert" in n for n in s.notes)


def test_qwen2_moe_shared_expert() -> None:
    s = normalize_config(qwen2_moe_a14b())
    assert s.family == "qwen2_moe"
    assert (s.num_experts, s.top_k, s.moe_intermediate_size) == (64, 8, 2560)
    assert s.num_shared_experts == 1
    assert s.shared_expert_intermediate_size == 20480
    assert s.intermediate_size == 18944
    assert s.num_moe_layers == 28


def test_qwen_moe_respects_mlp_only_layers_and_sparse_step() -> None:
    cfg = qwen2_moe_a14b() | {"mlp_only_layers": [0, 27], "decoder_sparse_step": 1}
    assert normalize_config(cfg).num_moe_layers == 26
    cfg = qwen2_moe_a14b() | {"decoder_sparse_step": 2}
    # MoE at layers 1, 3, ..., 27 -> 14
    assert normalize_config(cfg).num_moe_layers == 14
    cfg = qwen2_moe_a14b() | {"decoder_sparse_step": 2, "mlp_only_layers": [1, 2]}
    assert normalize_config(cfg).num_moe_layers == 13


def test_qwen3_moe_has_no_shared_expert() -> None:
    s = normalize_config(qwen3_moe_30b())
    assert s.family == "qwen3_moe"
    assert (s.num_experts, s.top_k, s.moe_intermediate_size) == (128, 8, 768)
    assert s.num_shared_experts == 0
    assert s.shared_expert_intermediate_size is None
    assert s.head_dim == 128  # explicit, not 2048/32 = 64
    assert s.num_moe_layers == 48
    assert s.num_full_attention_layers == 48


def test_zero_shared_expert_size_means_no_shared_expert() -> None:
    s = normalize_config(qwen3_moe_30b() | {"shared_expert_intermediate_size": 0})
    assert s.num_shared_experts == 0


def test_qwen3_next_full_attention_interval() -> None:
    s = normalize_config(qwen3_next_80b())
    assert s.family == "qwen3_next"
    assert s.num_full_attention_layers == 12
    assert s.num_linear_attention_layers == 36
    assert s.num_moe_layers == 48
    assert s.num_shared_experts == 1
    assert s.shared_expert_intermediate_size == 512
    assert s.layers_of("attn") == 12


def test_layer_types_take_precedence_over_interval() -> None:
    types = ["linear_attention"] * 5 + ["full_attention"] * 3
    cfg = qwen3_next_80b() | {"num_hidden_layers": 8, "layer_types": types}
    s = normalize_config(cfg)
    assert (s.num_full_attention_layers, s.num_linear_attention_layers) == (3, 5)


def test_deepseek_v3_mla_and_dense_prefix() -> None:
    s = normalize_config(deepseek_v3())
    assert s.family == "deepseek_v3"
    assert s.attention_kind == "mla"
    assert s.mla == MLADims(
        kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128,
        q_lora_rank=1536,
    )
    assert s.head_dim == 192
    assert s.num_moe_layers == 58
    assert (s.num_experts, s.top_k, s.moe_intermediate_size) == (256, 8, 2048)
    assert s.num_shared_experts == 1
    assert s.shared_expert_intermediate_size == 2048
    assert s.intermediate_size == 18432
    assert s.weight_dtype == "fp8"
    assert s.activation_dtype == "bf16"
    assert s.kv_elems_per_token_per_layer() == 576
    assert s.kv_bytes_per_token_per_layer() == 1152
    assert s.layers_of("attn") == 61


def test_deepseek_v3_ignores_misleading_saved_head_dim() -> None:
    # Re-saved DeepSeek configs carry head_dim = qk_rope_head_dim (64); the QK head is 192 wide.
    s = normalize_config(deepseek_v3() | {"head_dim": 64})
    assert s.head_dim == 192


def test_deepseek_v2_lite_null_q_lora_and_shared_experts() -> None:
    s = normalize_config(deepseek_v2_lite())
    assert s.family == "deepseek_v2"
    assert s.mla is not None and s.mla.q_lora_rank is None
    assert s.num_moe_layers == 26
    assert s.num_shared_experts == 2
    assert s.shared_expert_intermediate_size == 1408
    assert s.weight_dtype == "bf16"


def test_deepseek_moe_layer_freq() -> None:
    s = normalize_config(deepseek_v2_lite() | {"moe_layer_freq": 2})
    # layers 1..26 that are even -> 2, 4, ..., 26 -> 13
    assert s.num_moe_layers == 13


def test_mla_with_missing_dims_falls_back_to_gqa() -> None:
    cfg = deepseek_v2_lite()
    del cfg["qk_rope_head_dim"]
    s = normalize_config(cfg)
    assert s.attention_kind == "gqa"
    assert s.mla is None
    assert any("treated as GQA" in n for n in s.notes)


def test_gpt_oss() -> None:
    s = normalize_config(gpt_oss_120b())
    assert s.family == "gpt_oss"
    assert (s.num_experts, s.top_k) == (128, 4)
    assert s.moe_intermediate_size == 2880
    assert s.num_moe_layers == 36
    assert s.num_full_attention_layers == 18
    assert s.num_sliding_attention_layers == 18
    assert s.sliding_window == 128
    assert s.layers_of("attn") == 36
    assert s.weight_dtype == "fp4"
    assert s.dense_weight_dtype == "bf16"  # attention projections are excluded from mxfp4
    assert s.activation_dtype == "bf16"
    assert s.kv_dtype == "bf16"
    assert s.head_dim == 64


def test_gpt_oss_experts_per_token_alone() -> None:
    cfg = gpt_oss_120b()
    del cfg["num_experts_per_tok"]
    assert normalize_config(cfg).top_k == 4


def test_glm4_moe() -> None:
    s = normalize_config(glm45())
    assert s.family == "glm4_moe"
    assert (s.num_experts, s.top_k, s.moe_intermediate_size) == (160, 8, 1536)
    assert s.num_moe_layers == 89
    assert s.num_shared_experts == 1
    assert s.shared_expert_intermediate_size == 1536
    assert s.intermediate_size == 12288
    assert s.num_kv_heads == 8
    assert s.head_dim == 128


def test_top_k_larger_than_experts_is_dropped() -> None:
    s = normalize_config(mixtral_8x7b() | {"num_experts_per_tok": 9})
    assert s.top_k is None
    assert any("ignored" in n for n in s.notes)


def test_zero_experts_is_dense() -> None:
    s = normalize_config(qwen2_moe_a14b() | {"num_experts": 0})
    assert s.num_experts is None
    assert s.num_moe_layers == 0
    assert s.top_k is None
    assert s.layers_of("moe") is None


# --------------------------------------------------------------------------- other hybrids


def test_nemotron_h_pattern() -> None:
    pattern = "M-M-M-M*-M-M-M*-ME"
    cfg = {
        "model_type": "nemotron_h",
        "hidden_size": 4096,
        "num_hidden_layers": len(pattern),
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "hybrid_override_pattern": pattern,
        "n_routed_experts": 64,
        "num_experts_per_tok": 6,
        "moe_intermediate_size": 1024,
        "torch_dtype": "bfloat16",
    }
    s = normalize_config(cfg)
    assert s.num_full_attention_layers == 2
    assert s.num_linear_attention_layers == 8
    assert s.num_moe_layers == 1


def test_jamba_periods() -> None:
    cfg = {
        "model_type": "jamba",
        "hidden_size": 4096,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "attn_layer_period": 8,
        "attn_layer_offset": 4,
        "expert_layer_period": 2,
        "expert_layer_offset": 1,
        "num_experts": 16,
        "num_experts_per_tok": 2,
        "intermediate_size": 14336,
        "torch_dtype": "bfloat16",
    }
    s = normalize_config(cfg)
    assert (s.num_full_attention_layers, s.num_linear_attention_layers) == (4, 28)
    assert s.num_moe_layers == 16


# --------------------------------------------------------------------------- nesting


def test_text_config_wrapper_qwen35() -> None:
    s = normalize_config(qwen35_wrapper())
    assert s.family == "qwen3_5_moe"
    assert s.model_type == "qwen3_5_moe"
    assert s.hidden_size == 2048  # text model, not the vision tower's 1152
    assert s.num_full_attention_layers == 10
    assert s.num_linear_attention_layers == 30
    assert s.num_shared_experts == 1
    assert s.weight_dtype == "fp8"  # quantization_config sat at the top level
    assert s.activation_dtype == "bf16"
    assert any("text_config" in n for n in s.notes)


def test_text_config_family_from_inner_model_type() -> None:
    cfg = {
        "model_type": "llava",
        "text_config": {k: v for k, v in llama3_8b().items() if k != "torch_dtype"},
        "vision_config": {"hidden_size": 1024},
        "torch_dtype": "float16",
    }
    s = normalize_config(cfg)
    assert s.family == "llama"
    assert s.model_type == "llava"
    assert s.activation_dtype == "fp16"


def test_family_from_architectures_when_model_type_missing() -> None:
    cfg = qwen3_moe_30b()
    del cfg["model_type"]
    s = normalize_config(cfg)
    assert s.family == "qwen3_moe"
    assert s.model_type is None
    cfg = deepseek_v3()
    del cfg["model_type"]
    assert normalize_config(cfg).family == "deepseek_v3"


def test_family_unknown_without_model_type_or_architectures() -> None:
    cfg = llama3_8b()
    del cfg["model_type"], cfg["architectures"]
    s = normalize_config(cfg)
    assert s.family == "unknown"
    assert any("family unknown" in n for n in s.notes)


# --------------------------------------------------------------------------- dtypes / quantization


@pytest.mark.parametrize(
    ("qcfg", "expected"),
    [
        ({"quant_method": "fp8"}, "fp8"),
        ({"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0}, "fp8"),
        (
            {
                "quant_method": "compressed-tensors",
                "format": "float-quantized",
                "config_groups": {
                    "group_0": {
                        "weights": {"num_bits": 8, "type": "float", "strategy": "channel"},
                        "targets": ["Linear"],
                    }
                },
            },
            "fp8",
        ),
        (
            {
                "quant_method": "compressed-tensors",
                "format": "pack-quantized",
                "config_groups": {
                    "group_0": {"weights": {"num_bits": 4, "type": "int", "group_size": 128}}
                },
            },
            "int4",
        ),
        (
            {
                "quant_method": "compressed-tensors",
                "format": "nvfp4-pack-quantized",
                "config_groups": {
                    "group_0": {"weights": {"num_bits": 4, "type": "float", "group_size": 16}}
                },
            },
            "fp4",
        ),
        ({"quant_method": "mxfp4"}, "fp4"),
        ({"quant_method": "awq", "bits": 4, "group_size": 128, "version": "gemm"}, "int4"),
        ({"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False}, "int4"),
        ({"quant_method": "gptq", "bits": 8}, "int8"),
        ({"quant_method": "bitsandbytes", "load_in_4bit": True}, "int4"),
        ({"quant_method": "modelopt", "quant_algo": "NVFP4"}, "fp4"),
        (
            {
                "quant_method": "quark",
                "global_quant_config": {
                    "weight": {"dtype": "fp8_e4m3", "qscheme": "per_tensor"},
                    "input_tensors": {"dtype": "fp8_e4m3"},
                },
            },
            "fp8",
        ),
        ({"quant_method": "w8a8_int8"}, "int8"),
    ],
)
def test_quantization_weight_dtype(qcfg: dict[str, Any], expected: str) -> None:
    s = normalize_config(llama3_8b() | {"quantization_config": qcfg})
    assert s.weight_dtype == expected
    assert s.dense_weight_dtype == expected
    assert s.activation_dtype == "bf16"
    assert s.kv_dtype == "bf16"


def test_unknown_quant_method_falls_back_with_note() -> None:
    s = normalize_config(llama3_8b() | {"quantization_config": {"quant_method": "zzz"}})
    assert s.weight_dtype == "bf16"
    assert any("not understood" in n for n in s.notes)


def test_quantization_config_not_an_object() -> None:
    s = normalize_config(llama3_8b() | {"quantization_config": "fp8"})
    assert s.weight_dtype == "bf16"
    assert any("quantization_config ignored" in n for n in s.notes)


def test_layer_specific_attention_exclusion_keeps_dense_quantized() -> None:
    q = {"quant_method": "fp8", "modules_to_not_convert": ["model.layers.0.self_attn.q_proj"]}
    s = normalize_config(llama3_8b() | {"quantization_config": q})
    assert s.dense_weight_dtype == "fp8"


@pytest.mark.parametrize(
    ("torch_dtype", "activation"),
    [("bfloat16", "bf16"), ("float16", "fp16"), ("float32", "bf16"), (None, "bf16")],
)
def test_activation_dtype(torch_dtype: str | None, activation: str) -> None:
    cfg = llama3_8b()
    cfg["torch_dtype"] = torch_dtype
    s = normalize_config(cfg)
    assert s.activation_dtype == activation
    assert s.weight_dtype == activation
    assert s.kv_dtype == activation


def test_transformers_v5_dtype_key() -> None:
    cfg = llama3_8b()
    del cfg["torch_dtype"]
    cfg["dtype"] = "float16"
    assert normalize_config(cfg).activation_dtype == "fp16"


def test_fp8_torch_dtype_is_weight_not_activation() -> None:
    s = normalize_config(llama3_8b() | {"torch_dtype": "float8_e4m3fn"})
    assert s.activation_dtype == "bf16"
    assert s.weight_dtype == "fp8"


# --------------------------------------------------------------------------- bad values


@pytest.mark.parametrize("field", ["hidden_size", "num_hidden_layers", "num_attention_heads"])
@pytest.mark.parametrize("bad", ["4096", None, -1, 0, math.nan, 12.5, True, [32], {"a": 1}])
def test_bad_essential_raises_config_problem(field: str, bad: Any) -> None:
    cfg = llama3_8b()
    cfg[field] = bad
    with pytest.raises(ConfigProblem) as info:
        normalize_config(cfg)
    msg = str(info.value)
    assert field in msg
    assert "\n" not in msg


@pytest.mark.parametrize("field", ["hidden_size", "num_hidden_layers", "num_attention_heads"])
def test_missing_essential_raises(field: str) -> None:
    cfg = llama3_8b()
    del cfg[field]
    with pytest.raises(ConfigProblem, match=field):
        normalize_config(cfg)


def test_config_problem_is_value_error() -> None:
    assert issubclass(ConfigProblem, ValueError)
    with pytest.raises(ValueError):
        normalize_config([1, 2, 3])  # type: ignore[arg-type]


def test_absurd_layer_count_rejected() -> None:
    with pytest.raises(ConfigProblem, match="num_hidden_layers"):
        normalize_config(llama3_8b() | {"num_hidden_layers": 10**12})


def test_integral_float_essential_accepted_with_note() -> None:
    s = normalize_config(llama3_8b() | {"hidden_size": 4096.0})
    assert s.hidden_size == 4096
    assert any("float" in n for n in s.notes)


@pytest.mark.parametrize("bad", ["8", None, -2, math.nan, 2.5, False])
def test_bad_kv_heads_dropped_with_note(bad: Any) -> None:
    s = normalize_config(llama3_8b() | {"num_key_value_heads": bad})
    assert s.num_kv_heads == 32
    assert any("num_key_value_heads" in n for n in s.notes)


@pytest.mark.parametrize("bad", ["128", -5, math.inf, 0])
def test_bad_optional_moe_fields_dropped(bad: Any) -> None:
    s = normalize_config(qwen3_moe_30b() | {"moe_intermediate_size": bad, "vocab_size": bad})
    assert s.vocab_size is None
    # falls back to intermediate_size as the per-expert size, and says so
    assert s.moe_intermediate_size == 6144
    assert any("moe_intermediate_size" in n for n in s.notes)


def test_bad_head_dim_falls_back_to_division() -> None:
    s = normalize_config(qwen3_moe_30b() | {"head_dim": "x"})
    assert s.head_dim == 64
    assert any("head_dim ignored" in n for n in s.notes)


def test_kv_heads_above_heads_capped() -> None:
    s = normalize_config(llama3_8b() | {"num_key_value_heads": 64})
    assert s.num_kv_heads == 32


def test_bad_layer_types_ignored() -> None:
    s = normalize_config(qwen3_next_80b() | {"layer_types": "full_attention"})
    assert s.num_full_attention_layers == 12  # falls through to full_attention_interval
    assert any("layer_types ignored" in n for n in s.notes)


def test_unknown_layer_type_noted_not_counted() -> None:
    cfg = llama3_8b() | {"num_hidden_layers": 4, "layer_types": ["full_attention"] * 3 + ["odd"]}
    s = normalize_config(cfg)
    assert s.num_full_attention_layers == 3
    assert any("odd" in n for n in s.notes)


def test_model_shape_is_frozen() -> None:
    s = normalize_config(llama3_8b())
    with pytest.raises(ValidationError):
        s.hidden_size = 1  # type: ignore[misc]
    assert isinstance(s, ModelShape)
    assert ModelShape.model_validate(s.model_dump()) == s


def test_normalize_does_not_mutate_input() -> None:
    cfg = qwen35_wrapper()
    before = json.dumps(cfg, sort_keys=True)
    normalize_config(cfg)
    assert json.dumps(cfg, sort_keys=True) == before


# --------------------------------------------------------------------------- loading from disk


def _write(tmp_path: Path, payload: Any, name: str = "config.json") -> Path:
    p = tmp_path / name
    p.write_text(payload if isinstance(payload, str) else json.dumps(payload), encoding="utf-8")
    return p


def test_load_ok(tmp_path: Path) -> None:
    shape, problems = load_model_config(_write(tmp_path, deepseek_v3()), kv_cache_dtype="fp8")
    assert problems == []
    assert shape is not None
    assert shape.attention_kind == "mla"
    assert shape.kv_dtype == "fp8"


def test_load_directory_finds_config_json(tmp_path: Path) -> None:
    _write(tmp_path, llama3_8b())
    shape, problems = load_model_config(tmp_path)
    assert problems == []
    assert shape is not None and shape.family == "llama"


def test_load_missing_file(tmp_path: Path) -> None:
    shape, problems = load_model_config(tmp_path / "nope.json")
    assert shape is None
    assert len(problems) == 1 and "not found" in problems[0]


@pytest.mark.parametrize(
    ("payload", "fragment"),
    [
        ("", "empty"),
        ('{"hidden_size": 40', "invalid JSON"),
        ('{"hidden_size": NaN}', "non-finite"),
        ("[1, 2]", "expected a JSON object"),
        ("{}", "hidden_size is missing"),
        (json.dumps(llama3_8b() | {"num_attention_heads": "32"}), "num_attention_heads"),
    ],
)
def test_load_problems_are_one_line(tmp_path: Path, payload: str, fragment: str) -> None:
    shape, problems = load_model_config(_write(tmp_path, payload))
    assert shape is None
    assert len(problems) == 1
    assert fragment in problems[0]
    assert "\n" not in problems[0]


def test_load_bad_path_type() -> None:
    shape, problems = load_model_config(None)
    assert shape is None and len(problems) == 1


# --------------------------------------------------------------------------- properties

_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda children: st.lists(children, max_size=5)
    | st.dictionaries(st.text(max_size=12), children, max_size=5),
    max_leaves=30,
)

_KNOWN_KEYS = [
    "model_type", "architectures", "hidden_size", "num_hidden_layers", "num_attention_heads",
    "num_key_value_heads", "head_dim", "intermediate_size", "num_experts", "num_local_experts",
    "n_routed_experts", "num_experts_per_tok", "experts_per_token", "moe_topk",
    "moe_intermediate_size", "shared_expert_intermediate_size", "n_shared_experts",
    "decoder_sparse_step", "mlp_only_layers", "first_k_dense_replace", "moe_layer_freq",
    "full_attention_interval", "layer_types", "kv_lora_rank", "qk_rope_head_dim",
    "qk_nope_head_dim", "v_head_dim", "q_lora_rank", "quantization_config", "torch_dtype",
    "sliding_window", "use_sliding_window", "max_window_layers", "hybrid_override_pattern",
    "attn_type_list", "attn_layer_period", "attn_layer_offset", "expert_layer_period",
    "interleave_moe_layer_step", "moe_layers", "text_config", "vocab_size",
]

_field_values = st.one_of(
    st.integers(min_value=-3, max_value=300),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(),
    st.none(),
    st.booleans(),
    st.sampled_from(
        ["bfloat16", "fp8", "full_attention", "linear_attention", "M*-E", "llama", "x"]
    ),
    st.lists(st.one_of(st.integers(-2, 50), st.sampled_from(["full_attention", "mamba"])),
             max_size=8),
    st.fixed_dictionaries({}, optional={"quant_method": st.sampled_from(["fp8", "awq", "q"]),
                                        "bits": st.integers(-1, 9)}),
)

_configs = st.dictionaries(st.sampled_from(_KNOWN_KEYS), _field_values, max_size=20)


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=_json_values)
def test_load_never_raises_on_arbitrary_json(tmp_path: Path, value: Any) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(value), encoding="utf-8")
    shape, problems = load_model_config(path)
    if shape is None:
        assert problems and all(isinstance(p, str) and "\n" not in p for p in problems)
    else:
        assert problems == []


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cfg=_configs)
def test_normalize_only_raises_config_problem_and_keeps_invariants(cfg: dict[str, Any]) -> None:
    base = {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16}
    try:
        s = normalize_config(base | cfg)
    except ConfigProblem:
        return
    total_attn = (
        s.num_full_attention_layers
        + s.num_sliding_attention_layers
        + s.num_linear_attention_layers
    )
    assert total_attn <= s.num_layers
    assert 0 <= s.num_moe_layers <= s.num_layers
    assert s.num_moe_layers == 0 or s.num_experts
    assert 1 <= s.num_kv_heads <= s.num_attention_heads
    assert s.head_dim >= 1
    if s.top_k is not None:
        assert s.num_experts is not None and 1 <= s.top_k <= s.num_experts
    assert (s.attention_kind == "mla") == (s.mla is not None)
    for dt in (s.weight_dtype, s.activation_dtype, s.kv_dtype):
        assert dt in {"bf16", "fp16", "fp32", "fp8", "fp4", "fp6", "int8", "int4", "uint8",
                      "fp64", "tf32", "int32", "int64", "bool"}
    assert s.activation_dtype in ("bf16", "fp16")
