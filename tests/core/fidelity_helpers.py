"""Build a one-round EVAL_DIR for hand-computed end-to-end cases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

QWEN3_30B_A3B: dict[str, Any] = {
    "model_type": "qwen3_moe", "architectures": ["Qwen3MoeForCausalLM"],
    "hidden_size": 2048, "num_hidden_layers": 48, "num_attention_heads": 32,
    "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": 6144,
    "moe_intermediate_size": 768, "num_experts": 128, "num_experts_per_tok": 8,
    "torch_dtype": "bfloat16",
}
LLAMA_8B: dict[str, Any] = {
    "model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
    "torch_dtype": "bfloat16",
}


def kernel(name: str, *, pct: float = 20.0, t_ms: float, regime: str = "decode",
           lps: float | None = None, m: int | None = None, shapes: Any = None,
           dtypes: Any = None, **extra: Any) -> dict[str, Any]:
    k: dict[str, Any] = {
        "name": name, "short_name": name, "pct_gpu_time": pct, "served_regimes": [regime],
        "base_latency_ms": {regime: t_ms}, "editable": True,
    }
    if lps is not None:
        k["calls_per_step"] = {regime: lps}
    if m is not None:
        k["est_shape"] = {regime: {"M": m}}
    if shapes is not None:
        k["shapes"] = shapes
    if dtypes is not None:
        k["dtypes"] = dtypes
    k.update(extra)
    return k


def make_round(tmp: Path, kernels: list[dict[str, Any]], *, gfx: str,
               config: dict[str, Any] | None, product: str | None = None,
               workload: dict[str, Any] | None = None) -> Path:
    """``tmp/eval/{env_report.json, config.json, profile/round_0/profile_topN.json}``."""
    root = tmp / "eval"
    rd = root / "profile" / "round_0"
    rd.mkdir(parents=True)
    env: dict[str, Any] = {"gfx": gfx, "model": ".", "kv_cache_dtype": "auto",
                           "workload": workload or {"isl": 1024, "osl": 1024, "conc": 64, "tp": 1}}
    if product:
        env["product"] = product
    (root / "env_report.json").write_text(json.dumps(env))
    if config is not None:
        (root / "config.json").write_text(json.dumps(config))
    (rd / "profile_topN.json").write_text(json.dumps({"top_kernels": kernels}))
    return rd
