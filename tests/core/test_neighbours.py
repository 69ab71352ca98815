"""Fusion levers on a long Top-N: the same answer as classifying every entry, at a fraction of
the classifications."""

from __future__ import annotations

import random
from dataclasses import dataclass

from roofline_tui.core.classify import classify
from roofline_tui.core.opmodels import LeverContext, Neighbour, Neighbours, byte_reduction_levers


@dataclass
class K:
    name: str
    short_name: str
    pct_gpu_time: float


def _describe(k: K) -> Neighbour:
    c = classify(k.name)
    return Neighbour(k.short_name, c.op_class, c.op_subclass, k.pct_gpu_time)


def _long_topn(n: int) -> list[K]:
    rng = random.Random(7)
    kinds = ["rms_norm_kernel", "act_and_mul_kernel", "Cijk_Ailk_Bljk", "fill_kernel",
             "fused_moe_kernel", "paged_attention_v2", "dynamic_per_token_quant", "rotary_emb"]
    out = [K(f"{kinds[i % len(kinds)]}_{i}", f"{kinds[i % len(kinds)]}_{i}",
             round(rng.uniform(0.0, 3.0), 2)) for i in range(n)]
    out.append(K("fused_moe_kernel", "fused_moe_kernel", 30.0))
    return out


def _levers(op_class: str, neighbours: Neighbours | list[Neighbour]) -> list[str]:
    return byte_reduction_levers(op_class, LeverContext(
        short_name="fused_moe_kernel", bound_type="memory", weight_dtype="bf16", kv_dtype="bf16",
        alternatives=[], chosen_label=None, neighbours=neighbours))


def test_lazy_levers_equal_the_fully_classified_ones_and_classify_few() -> None:
    topn = _long_topn(10_000)
    everything = [_describe(k) for k in topn]  # what the engine did before: classify all
    for op_class in ("moe", "gemm", "attn", "elementwise"):
        lazy = Neighbours(topn, _describe)
        assert _levers(op_class, lazy) == _levers(op_class, everything)
        # the two biggest of the wanted classes sit near the top: far fewer than 10,000 looked at
        assert lazy.described < 200


def test_ties_break_by_short_name_as_before() -> None:
    same = [Neighbour("b_norm", "elementwise", "norm", 1.0),
            Neighbour("a_quant", "elementwise", "quant", 1.0),
            Neighbour("c_act_and_mul", "elementwise", "act_and_mul", 1.0)]
    levers = _levers("gemm", Neighbours.of(same))
    assert "`a_quant`" in levers[0] and "`b_norm`" in levers[1]
    assert not any("c_act_and_mul" in lv for lv in levers)


def test_a_missing_class_looks_at_everything_once() -> None:
    only_gemms = [K(f"Cijk_{i}", f"Cijk_{i}", 1.0) for i in range(50)]
    lazy = Neighbours(only_gemms, _describe)
    assert lazy.biggest(lambda n: n.op_class == "elementwise", 2) == []
    assert lazy.described == 50
    assert len(lazy.biggest(lambda n: n.op_class == "gemm", 3)) == 3
    assert lazy.described == 50  # nothing classified twice
