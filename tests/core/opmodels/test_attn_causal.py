"""Whether a dense attention call is causal (roofline_tui/core/opmodels/attn.py, issue 31 item
3): the op's recorded ``is_causal`` (Kineto's Concrete Inputs, kept by the importer as each
argument's ``value``) decides; without it a config.json (a decoder) settles it, and with
neither a prefill-shaped call gets no verdict. Each figure is worked by hand in the docstring.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from roofline_tui.core.dtypes import DTYPE_BYTES
from roofline_tui.core.inputs import Workload
from roofline_tui.core.model_config import normalize_config
from roofline_tui.core.opmodels import OpContext, OpModelUnavailable, attn
from roofline_tui.core.topn_ext import Instance, Operand
from tests.paths import REAL_FORMATS, WILD_FIXTURES, need

BF16 = "c10::BFloat16"
TORCH_COMPILE = REAL_FORMATS / "wild" / "tracelens_torch_compile_triton.json.gz"
TRIMMED = WILD_FIXTURES / "torch_compile_attention_trimmed.json"
QWEN15_05B = {  # Qwen/Qwen1.5-0.5B-Chat config.json, the fields the model reads
    "model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "hidden_size": 1024,
    "num_hidden_layers": 24, "num_attention_heads": 16, "num_key_value_heads": 16,
    "intermediate_size": 2816, "torch_dtype": "bfloat16",
}


def tensor(dims: list[int]) -> Operand:
    return Operand(dims=dims, type=BF16, role="input")


def scalar(value: Any = None) -> Operand:
    return Operand(dims=[], type="Scalar", role="scalar", value=value)


def flash_forward(q: list[int], k: list[int], causal: bool | None,
                  scale: float | None = 0.088388347648318433) -> Instance:
    """``aten::_flash_attention_forward`` as PyTorch records it: q, k, v [B, S, H, d], the
    absent cum_seq tensors, then max_q, max_k, dropout_p, is_causal (position 8),
    return_debug_mask, scale (position 10), the two window sizes and two absent tensors."""
    other = Operand(dims=[], type="", role="other")
    args = [tensor(q), tensor(k), tensor(k), other, other, scalar(q[1]), scalar(k[1]),
            scalar(0.0), scalar(causal), scalar(False), scalar(scale), scalar(), scalar(),
            other, other]
    return Instance(op="aten::_flash_attention_forward", args=args, calls=1, total_us=3683.509)


def ctx(inst: Instance, model: dict[str, Any] | None = None) -> OpContext:
    return OpContext(
        name="attn_fwd", op_subclass=None, regime="prefill", shapes=[], dtypes=[],
        model=normalize_config(model) if model else None, workload=Workload(), tokens=None,
        tokens_source="test", weight_dtype="bf16", activation_dtype="bf16", kv_dtype="bf16",
        dtype_bytes=dict(DTYPE_BYTES), instance=inst)


def said(est: Any, *words: str) -> bool:
    return any(all(w in a for w in words) for a in est.assumptions)


def test_torch_compile_block_is_not_causal_from_its_recorded_is_causal() -> None:
    """TraceLens's torch.compile block: ``aten::_flash_attention_forward`` q, k, v
    ``[8, 4096, 16, 128]`` as [B, S, H, d], Concrete Inputs is_causal ``"False"``, scale
    ``"0.088388347648318433"`` (= 1/√128).

    Non-causal: every query sees every key, pairs per (b, h) = 4096 · 4096 = 16,777,216.
    FLOPs = 2·B·H_Q·(d_qk + d_v)·pairs = 2·8·16·256·16,777,216 = 65,536·16,777,216
    = 1,099,511,627,776 = 1,099.5 GFLOP. (The causal triangle it was given before is
    4096·4097/2 = 8,390,656 pairs: 549,890,031,616 FLOPs, half.) Bytes are the same either
    way: Q + K + V + O = 4·8·4096·16·128·2 B = 536,870,912."""
    est = attn.estimate(ctx(flash_forward([8, 4096, 16, 128], [8, 4096, 16, 128], False)))
    (c,) = est.candidates
    assert c.flops == 1_099_511_627_776
    assert round(c.flops / 1e9, 1) == 1099.5
    assert c.bytes == 536_870_912
    assert said(est, "is_causal=False recorded", "every query sees every key")
    assert said(est, "softmax scale 0.0883883 recorded = 1/√d_qk")
    assert not said(est, "causal assumed")


def test_recorded_causal_call_keeps_the_triangle_without_a_config() -> None:
    """Same shapes with is_causal ``"True"``: pairs per (b, h) = 4096·4097/2 = 8,390,656;
    FLOPs 65,536·8,390,656 = 549,890,031,616, no config.json needed."""
    est = attn.estimate(ctx(flash_forward([8, 4096, 16, 128], [8, 4096, 16, 128], True)))
    assert est.candidates[0].flops == 549_890_031_616
    assert said(est, "is_causal=True recorded")


def test_causal_against_a_longer_key_is_aligned_to_the_last_key() -> None:
    """is_causal True, S_q 512 new queries against S_kv 2048 keys, [1, S, 8, 64]: query i sees
    1536 + i + 1 keys; pairs = 512·2048 − 512·511/2 = 1,048,576 − 130,816 = 917,760.
    FLOPs = 2·1·8·128·917,760 = 1,879,572,480."""
    est = attn.estimate(ctx(flash_forward([1, 512, 8, 64], [1, 2048, 8, 64], True)))
    assert est.candidates[0].flops == 1_879_572_480


def test_efficient_attention_mask_type_says_causal() -> None:
    """``aten::_efficient_attention_forward`` records no is_causal but an int
    custom_mask_type (position 9): 0 no mask (full 256·256 = 65,536 pairs), 2 causal from the
    bottom right (256·257/2 = 32,896 pairs). [1, 256, 4, 64]: FLOPs 2·1·4·128·pairs =
    67,108,864 and 33,685,504."""
    def call(mask: int) -> Instance:
        other = Operand(dims=[], type="", role="other")
        q = [1, 256, 4, 64]
        args = [tensor(q), tensor(q), tensor(q), other, other, other, scalar(256), scalar(256),
                scalar(0.0), scalar(mask), scalar(False), scalar(0.125)]
        return Instance(op="aten::_efficient_attention_forward", args=args, calls=1,
                        total_us=10.0)

    assert attn.estimate(ctx(call(0))).candidates[0].flops == 67_108_864
    assert attn.estimate(ctx(call(2))).candidates[0].flops == 33_685_504


def test_unrecorded_is_causal_with_a_decoder_config_is_causal_and_said() -> None:
    """No Concrete Inputs, Qwen1.5-0.5B config (a decoder): causal, stated as an assumption
    the config settles. [16, 559, 16, 64]: 559·560/2 = 156,520 pairs, FLOPs
    2·16·16·128·156,520 = 10,257,694,720."""
    est = attn.estimate(ctx(flash_forward([16, 559, 16, 64], [16, 559, 16, 64], None, None),
                            QWEN15_05B))
    assert est.candidates[0].flops == 10_257_694_720
    assert said(est, "causal assumed", "is_causal is not recorded", "config.json")


def test_one_query_row_needs_no_causal_record() -> None:
    """S_q = 1 against 600 keys, no record, no config: causal or not it sees all 600 keys, so
    nothing is assumed: FLOPs 2·4·16·128·600 = 9,830,400."""
    est = attn.estimate(ctx(flash_forward([4, 1, 16, 64], [4, 600, 16, 64], None, None)))
    assert est.candidates[0].flops == 9_830_400
    assert said(est, "one query row")


def test_unrecorded_prefill_call_without_config_gets_no_verdict() -> None:
    """No record, no config, S 4096: causal 549,890,031,616 FLOPs against full
    1,099,511,627,776 — the 2× decides a compute-bound verdict, so none is given, and the
    reason names both figures and what would settle it."""
    with pytest.raises(OpModelUnavailable) as exc:
        attn.estimate(ctx(flash_forward([8, 4096, 16, 128], [8, 4096, 16, 128], None, None)))
    why = str(exc.value)
    assert "5.499e+11" in why and "1.1e+12" in why
    assert "Concrete Inputs" in why and "config.json" in why


def _hand_flops(events: list[dict[str, Any]]) -> float:
    """The attention FLOPs a hand join of the raw events gives: the cpu_op
    ``aten::_flash_attention_forward``'s Input Dims q [B, S_q, H, d], k [B, S_kv, H, d] and its
    Concrete Inputs is_causal (position 8); FLOPs = 2·B·H·2d·pairs."""
    (op,) = [e for e in events if e.get("cat") == "cpu_op"
             and e["name"] == "aten::_flash_attention_forward"]
    (b, s_q, h, d), (_, s_kv, _, _) = op["args"]["Input Dims"][:2]
    causal = op["args"]["Concrete Inputs"][8] == "True"
    pairs = s_q * s_kv - (s_q * (s_q - 1) // 2 if causal else 0)
    return 2.0 * b * h * (d + d) * pairs


def _analysed_attention(tmp_path: Path, trace: Path) -> Any:
    from roofline_tui.core.analyze import AnalyzeOptions
    from roofline_tui.core.rounds.analysis import RoundSources, analyze_round
    from roofline_tui.importers.torch import import_torch

    (tmp_path / "profile_topN.json").write_text(json.dumps(
        import_torch(trace, progress=False).doc))
    art = analyze_round(tmp_path, RoundSources(device="MI300X"),
                        AnalyzeOptions(head_threshold_pct=1.0, max_heads=20)).artifact
    return next(e for e in art.entries if e.short_name == "attn_fwd")


def test_trimmed_torch_compile_trace_end_to_end(tmp_path: Path) -> None:
    """The trimmed fixture imported and analysed on MI300X: attn_fwd's FLOPs equal the hand
    join of its raw events (is_causal False: 1,099,511,627,776), its regime is prefill from
    the recorded shapes (not assumed), and it has a verdict."""
    events = json.loads(TRIMMED.read_text())["traceEvents"]
    e = _analysed_attention(tmp_path, TRIMMED)
    assert _hand_flops(events) == 1_099_511_627_776
    assert e.flops_est == pytest.approx(_hand_flops(events))
    assert e.regime == "prefill" and not e.regime_assumed
    assert e.modeled and e.roofline_pct is not None


def test_shared_torch_compile_trace_attention_is_1099_5_gflop(tmp_path: Path) -> None:
    """The whole TraceLens torch.compile trace (the shared folder): the same 1,099.5 GFLOP
    from the hand join of its raw events, regime prefill, not decode."""
    trace = need(TORCH_COMPILE)
    with gzip.open(trace, "rt", encoding="utf-8") as fh:
        events = json.load(fh)["traceEvents"]
    e = _analysed_attention(tmp_path, trace)
    assert e.flops_est == pytest.approx(_hand_flops(events))
    assert round(e.flops_est / 1e9, 1) == 1099.5
    assert e.regime == "prefill" and not e.regime_assumed
