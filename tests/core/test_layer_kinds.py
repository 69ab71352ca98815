"""The model's layers from its config (roofline_tui/core/model_config.py): one description per
kind of token mixer (full, sliding with its window, chunked with its chunk, linear attention,
SSM) and per kind of MLP (MoE with its shared experts, dense), on the public config.json
values of each family. The counts are worked by hand in each docstring from the rule the
family's own modelling code applies.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from roofline_tui.core.model_config import (
    ConfigProblem,
    LayerKind,
    MLPKind,
    ModelShape,
    normalize_config,
)


def kinds(shape: ModelShape) -> list[tuple[str, int, int | None]]:
    """(kind, layers, window or chunk) of each token-mixer kind."""
    return [(k.kind, k.layers, k.window or k.chunk) for k in shape.layer_kinds]


def mlps(shape: ModelShape) -> list[tuple[str, int, int | None]]:
    return [(k.kind, k.layers, k.intermediate_size) for k in shape.mlp_kinds]


# --------------------------------------------------------------------------- public configs


def gemma3_27b() -> dict[str, Any]:
    """google/gemma-3-27b-it: a multimodal wrapper, the language model under text_config."""
    return {
        "architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
        "text_config": {
            "model_type": "gemma3_text", "hidden_size": 5376, "intermediate_size": 21504,
            "num_attention_heads": 32, "num_hidden_layers": 62, "num_key_value_heads": 16,
            "head_dim": 128, "query_pre_attn_scalar": 168, "sliding_window": 1024,
            "sliding_window_pattern": 6, "rope_theta": 1000000.0,
        },
        "torch_dtype": "bfloat16",
    }


def gemma2_9b() -> dict[str, Any]:
    """google/gemma-2-9b: no layer list, the family alternates local and global layers."""
    return {
        "architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "hidden_size": 3584,
        "intermediate_size": 14336, "num_attention_heads": 16, "num_hidden_layers": 42,
        "num_key_value_heads": 8, "head_dim": 256, "sliding_window": 4096,
        "cache_implementation": "hybrid", "torch_dtype": "float32",
    }


def llama4_scout() -> dict[str, Any]:
    """meta-llama/Llama-4-Scout-17B-16E-Instruct's text_config (no_rope_layers empty: derived
    from the default interval of 4)."""
    return {
        "architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4",
        "text_config": {
            "model_type": "llama4_text", "hidden_size": 5120, "intermediate_size": 8192,
            "intermediate_size_mlp": 16384, "num_attention_heads": 40, "num_hidden_layers": 48,
            "num_key_value_heads": 8, "head_dim": 128, "num_local_experts": 16,
            "num_experts_per_tok": 1, "interleave_moe_layer_step": 1,
            "attention_chunk_size": 8192, "no_rope_layers": [], "use_qk_norm": True,
            "torch_dtype": "bfloat16",
        },
        "torch_dtype": "bfloat16",
    }


def llama4_maverick() -> dict[str, Any]:
    cfg = llama4_scout()
    cfg["text_config"] |= {"num_local_experts": 128, "interleave_moe_layer_step": 2,
                           "use_qk_norm": False}
    return cfg


def gpt_oss(n: int = 36) -> dict[str, Any]:
    """openai/gpt-oss-120b (36 layers) / gpt-oss-20b (24): 128-token sliding layers alternate
    with full ones, starting with a sliding one."""
    return {
        "architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "hidden_size": 2880,
        "intermediate_size": 2880, "head_dim": 64, "num_attention_heads": 64,
        "num_hidden_layers": n, "num_key_value_heads": 8,
        "num_local_experts": 128 if n == 36 else 32, "num_experts_per_tok": 4,
        "sliding_window": 128,
        "layer_types": ["sliding_attention" if i % 2 == 0 else "full_attention"
                        for i in range(n)],
        "torch_dtype": "bfloat16",
    }


def qwen3_next_80b() -> dict[str, Any]:
    """Qwen/Qwen3-Next-80B-A3B-Instruct: Gated DeltaNet on 3 of 4 layers, every layer MoE with
    one shared expert."""
    return {
        "architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next",
        "hidden_size": 2048, "intermediate_size": 5120, "moe_intermediate_size": 512,
        "shared_expert_intermediate_size": 512, "head_dim": 256, "num_attention_heads": 16,
        "num_hidden_layers": 48, "num_key_value_heads": 2, "num_experts": 512,
        "num_experts_per_tok": 10, "decoder_sparse_step": 1, "mlp_only_layers": [],
        "full_attention_interval": 4, "linear_num_value_heads": 32, "torch_dtype": "bfloat16",
    }


NEMOTRON_H_8B_PATTERN = "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-"


def nemotron_h_8b() -> dict[str, Any]:
    """nvidia/Nemotron-H-8B-Base-8K: one mixer per layer, 'M' Mamba-2, '*' attention, '-' MLP."""
    return {
        "architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h",
        "hidden_size": 4096, "intermediate_size": 21504, "num_hidden_layers": 52,
        "hybrid_override_pattern": NEMOTRON_H_8B_PATTERN, "num_attention_heads": 32,
        "head_dim": 128, "num_key_value_heads": 8, "ssm_state_size": 128,
        "mamba_num_heads": 128, "mamba_head_dim": 64, "torch_dtype": "bfloat16",
    }


def deepseek_v3() -> dict[str, Any]:
    return {
        "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
        "hidden_size": 7168, "intermediate_size": 18432, "moe_intermediate_size": 2048,
        "num_hidden_layers": 61, "num_attention_heads": 128, "num_key_value_heads": 128,
        "n_shared_experts": 1, "n_routed_experts": 256, "num_experts_per_tok": 8,
        "first_k_dense_replace": 3, "moe_layer_freq": 1, "kv_lora_rank": 512,
        "q_lora_rank": 1536, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
        "v_head_dim": 128, "torch_dtype": "bfloat16",
    }


# --------------------------------------------------------------------------- token mixers


def test_gemma3_five_local_layers_to_one_global() -> None:
    """Gemma-3 slides layer i unless (i + 1) % 6 == 0: the global layers are 5, 11, ..., 59,
    62 // 6 = 10 of them; 62 − 10 = 52 slide over 1024 tokens. (Read before as 62 full.)"""
    s = normalize_config(gemma3_27b())
    assert kinds(s) == [("full", 10, None), ("sliding", 52, 1024)]
    assert (s.num_full_attention_layers, s.num_sliding_attention_layers) == (10, 52)
    assert s.sliding_window == 1024 and s.layers_of("attn") == 62
    assert any("sliding_window_pattern 6" in n and "52 of 62" in n for n in s.notes)


def test_gemma3_layer_types_agree_with_the_pattern() -> None:
    """Newer Gemma-3 configs spell the same layers out in layer_types (and rename the pattern
    key ``_sliding_window_pattern``): the same 10 + 52."""
    cfg = gemma3_27b()
    text = cfg["text_config"]
    text["_sliding_window_pattern"] = text.pop("sliding_window_pattern")
    renamed = normalize_config(cfg)
    text["layer_types"] = ["full_attention" if (i + 1) % 6 == 0 else "sliding_attention"
                           for i in range(62)]
    listed = normalize_config(cfg)
    assert kinds(renamed) == kinds(listed) == [("full", 10, None), ("sliding", 52, 1024)]


def test_gemma3_without_a_pattern_takes_its_family_default() -> None:
    """transformers' Gemma-3 default pattern is 6 as well: still 10 global, 52 local."""
    cfg = gemma3_27b()
    del cfg["text_config"]["sliding_window_pattern"]
    assert kinds(normalize_config(cfg)) == [("full", 10, None), ("sliding", 52, 1024)]


def test_gemma2_alternates_local_and_global() -> None:
    """Gemma-2 slides the even layers (0, 2, ..., 40): 21 sliding at 4096, 21 global."""
    s = normalize_config(gemma2_9b())
    assert kinds(s) == [("full", 21, None), ("sliding", 21, 4096)]


def test_llama4_scout_chunked_local_attention() -> None:
    """Llama-4: no_rope_layers [] means rope (and chunked attention) on every layer but each
    4th: layers 3, 7, ..., 47 are the 12 global NoPE layers, the other 36 attend within their
    8192-token chunk. (Read before as 48 full layers.)"""
    s = normalize_config(llama4_scout())
    assert kinds(s) == [("full", 12, None), ("chunked", 36, 8192)]
    assert s.num_chunked_attention_layers == 36 and s.attention_chunk_size == 8192
    assert s.num_sliding_attention_layers == 0
    assert s.layers_of("attn") == 48


def test_llama4_explicit_no_rope_layers() -> None:
    """An explicit per-layer list: 1 = rope (chunked), 0 = NoPE (global). Four layers
    [1, 1, 0, 1] on a 4-layer model: 3 chunked, 1 global."""
    cfg = llama4_scout()
    cfg["text_config"] |= {"num_hidden_layers": 4, "no_rope_layers": [1, 1, 0, 1]}
    assert kinds(normalize_config(cfg)) == [("full", 1, None), ("chunked", 3, 8192)]


def test_chunked_layer_types_are_not_sliding() -> None:
    """A layer_types list naming chunked_attention (newer Llama-4 configs) is chunked with its
    attention_chunk_size, not a sliding window."""
    cfg = llama4_scout()
    cfg["text_config"] |= {
        "layer_types": ["full_attention" if (i + 1) % 4 == 0 else "chunked_attention"
                        for i in range(48)]}
    s = normalize_config(cfg)
    assert kinds(s) == [("full", 12, None), ("chunked", 36, 8192)]
    assert s.sliding_window is None


def test_gpt_oss_layer_types_and_its_default() -> None:
    """gpt-oss-120b: 18 sliding at 128 and 18 full; without layer_types the family's own
    alternation (even layers slide) gives the same; gpt-oss-20b 12 + 12."""
    listed = normalize_config(gpt_oss())
    cfg = gpt_oss()
    del cfg["layer_types"]
    derived = normalize_config(cfg)
    assert kinds(listed) == kinds(derived) == [("full", 18, None), ("sliding", 18, 128)]
    assert kinds(normalize_config(gpt_oss(24))) == [("full", 12, None), ("sliding", 12, 128)]


def test_qwen3_next_linear_attention() -> None:
    """full_attention_interval 4: layers 3, 7, ..., 47 full (48 // 4 = 12), 36 Gated DeltaNet
    layers, which no softmax kernel serves (layers_of('attn') = 12)."""
    s = normalize_config(qwen3_next_80b())
    assert kinds(s) == [("full", 12, None), ("linear", 36, None)]
    assert [k.kind for k in s.attention_kinds()] == ["full"]
    assert s.layers_of("attn") == 12


def test_nemotron_h_mamba_attention_and_mlp_layers() -> None:
    """Nemotron-H-8B's 52 characters: 24 'M' (Mamba-2), 4 '*' (attention), 24 '-' (MLP);
    each layer is one of them, so 24 dense MLPs of 21504 and no MLP on the others."""
    assert (NEMOTRON_H_8B_PATTERN.count("M"), NEMOTRON_H_8B_PATTERN.count("*"),
            NEMOTRON_H_8B_PATTERN.count("-"), len(NEMOTRON_H_8B_PATTERN)) == (24, 4, 24, 52)
    s = normalize_config(nemotron_h_8b())
    assert kinds(s) == [("full", 4, None), ("ssm", 24, None)]
    assert s.num_linear_attention_layers == 24  # the non-softmax mixers, as before
    assert mlps(s) == [("dense", 24, 21504)]
    assert s.layers_of("attn") == 4


def test_jamba_mamba_layers_are_ssm() -> None:
    """Jamba: attention where i % 8 == 4 (4 of 32 layers), Mamba on the other 28."""
    cfg = {"model_type": "jamba", "hidden_size": 4096, "num_hidden_layers": 32,
           "num_attention_heads": 32, "num_key_value_heads": 8, "attn_layer_period": 8,
           "attn_layer_offset": 4, "expert_layer_period": 2, "expert_layer_offset": 1,
           "num_experts": 16, "num_experts_per_tok": 2, "intermediate_size": 14336}
    assert kinds(normalize_config(cfg)) == [("full", 4, None), ("ssm", 28, None)]


def test_a_hand_built_shape_still_has_attention_kinds() -> None:
    """A ModelShape built without layer kinds (tests, old callers) derives them from the
    counts: 18 full + 18 sliding at 128."""
    s = normalize_config(gpt_oss()).model_copy(update={"layer_kinds": ()})
    assert [(k.kind, k.layers, k.window) for k in s.attention_kinds()] == [
        ("full", 18, None), ("sliding", 18, 128)]


# --------------------------------------------------------------------------- MLPs


def test_deepseek_v3_dense_prefix_and_shared_expert() -> None:
    """first_k_dense_replace 3: layers 0-2 dense MLPs of 18432, layers 3-60 MoE (58) with 256
    routed experts of 2048, top-8, plus 1 shared expert of 2048."""
    s = normalize_config(deepseek_v3())
    assert mlps(s) == [("moe", 58, 2048), ("dense", 3, 18432)]
    moe = s.mlp_kinds[0]
    assert (moe.experts, moe.top_k, moe.shared_experts, moe.shared_intermediate_size) == (
        256, 8, 1, 2048)
    assert "first_k_dense_replace 3" in moe.source


def test_llama4_maverick_interleaves_moe_and_dense() -> None:
    """interleave_moe_layer_step 2: MoE on layers 1, 3, ..., 47 (24), of 128 experts of 8192
    plus Llama-4's one shared expert; the other 24 are dense MLPs of intermediate_size_mlp
    16384. Scout (step 1): all 48 MoE."""
    s = normalize_config(llama4_maverick())
    assert mlps(s) == [("moe", 24, 8192), ("dense", 24, 16384)]
    assert (s.mlp_kinds[0].shared_experts, s.mlp_kinds[0].shared_intermediate_size) == (1, 8192)
    assert mlps(normalize_config(llama4_scout())) == [("moe", 48, 8192)]


def test_qwen_moe_shared_expert_and_dense_layers() -> None:
    """Qwen3-Next: decoder_sparse_step 1, mlp_only_layers [] → 48 MoE layers of 512 experts
    (512 wide, top-10) with one shared expert of 512. Listing layers 0 and 1 in
    mlp_only_layers makes them dense MLPs of intermediate_size 5120."""
    s = normalize_config(qwen3_next_80b())
    assert mlps(s) == [("moe", 48, 512)]
    assert (s.mlp_kinds[0].shared_experts, s.mlp_kinds[0].shared_intermediate_size) == (1, 512)
    two_dense = normalize_config(qwen3_next_80b() | {"mlp_only_layers": [0, 1]})
    assert mlps(two_dense) == [("moe", 46, 512), ("dense", 2, 5120)]


def test_a_dense_model_has_one_mlp_kind() -> None:
    assert mlps(normalize_config(gemma2_9b())) == [("dense", 42, 14336)]


# --------------------------------------------------------------------------- invariants

_KEYS = ["layer_types", "sliding_window", "sliding_window_pattern", "attention_chunk_size",
         "no_rope_layers", "no_rope_layer_interval", "hybrid_override_pattern",
         "full_attention_interval", "use_sliding_window", "max_window_layers", "model_type",
         "num_experts", "num_experts_per_tok", "first_k_dense_replace",
         "interleave_moe_layer_step", "mlp_only_layers", "decoder_sparse_step"]
_VALUES = st.one_of(
    st.integers(-3, 70), st.none(), st.booleans(),
    st.sampled_from(["gemma3", "gemma2", "gpt_oss", "llama4", "M*-E", "x"]),
    st.lists(st.one_of(st.integers(-1, 3), st.sampled_from(
        ["full_attention", "sliding_attention", "chunked_attention", "linear_attention",
         "mamba", "odd"])), max_size=40))


@settings(max_examples=300, deadline=None)
@given(cfg=st.dictionaries(st.sampled_from(_KEYS), _VALUES, max_size=8))
def test_kinds_never_exceed_the_layers_and_match_the_counts(cfg: dict[str, Any]) -> None:
    """Whatever the fields say, the kinds' layers sum to at most num_hidden_layers, agree with
    the per-kind counts, and a sliding (chunked) kind carries the window (chunk) it reports."""
    base = {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16}
    try:
        s = normalize_config(base | cfg)
    except ConfigProblem:
        return
    assert sum(k.layers for k in s.layer_kinds) <= s.num_layers
    by = {k.kind: k for k in s.layer_kinds}
    assert all(isinstance(k, LayerKind) and k.layers > 0 for k in s.layer_kinds)
    assert len(by) == len(s.layer_kinds)
    assert s.num_full_attention_layers == (by["full"].layers if "full" in by else 0)
    assert s.num_chunked_attention_layers == (by["chunked"].layers if "chunked" in by else 0)
    assert s.sliding_window == (by["sliding"].window if "sliding" in by else None)
    assert s.attention_chunk_size == (by["chunked"].chunk if "chunked" in by else None)
    assert sum(k.layers for k in s.attention_kinds()) == (s.layers_of("attn") or 0)
    assert all(isinstance(k, MLPKind) and 0 < k.layers <= s.num_layers for k in s.mlp_kinds)
    assert sum(k.layers for k in s.mlp_kinds) <= s.num_layers
