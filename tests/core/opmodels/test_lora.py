"""LoRA shrink / expand (issue 31 item 4): a segmented GEMM over the recorded operands, with
hand-computed bytes and FLOPs; no verdict where the trace does not settle the bytes.

The shapes are a Llama-3-8B LoRA deployment (hidden 4096, 32 q and 8 kv heads of 128: the
qkv projection's slices are 4096, 1024 and 1024 wide), rank 16, as vLLM's punica/triton ops
record them: ``vllm::lora_shrink(x, [A_q, A_k, A_v], out, …)`` with each A ``[L, 1, r, H]`` and
the output an fp32 ``[S, M, r]`` buffer; ``vllm::lora_expand(buf, [B_q, B_k, B_v], y, …)``.
"""

from __future__ import annotations

from typing import Any

import pytest

from roofline_tui.core.dtypes import DTYPE_BYTES
from roofline_tui.core.inputs import Workload
from roofline_tui.core.opmodels import OpContext, OpModelUnavailable, lora
from roofline_tui.core.opmodels.lora import SETTLED

from .recorded import instance

BF16, FP32, INT = "c10::BFloat16", "float", "int"
H100_L2 = 50 * 2**20
MI300X_L2 = 4 * 2**20


def shrink_args(m: int, slots: int) -> list[tuple[Any, str]]:
    """vLLM's lora_shrink: x, the three A slices (a TensorList), the fp32 buffer, metadata."""
    return [([m, 4096], BF16), ([[slots, 1, 16, 4096]] * 3, "TensorList"), ([3, m, 16], FP32),
            ([m], INT), ([m], INT), ([slots + 1], INT), ([slots + 2], INT),
            ([slots + 1], INT), ([1], "bool"), ([1], INT), ([], "Scalar")]


def expand_args(m: int, slots: int) -> list[tuple[Any, str]]:
    return [([3, m, 16], FP32),
            ([[slots, 1, 4096, 16], [slots, 1, 1024, 16], [slots, 1, 1024, 16]], "TensorList"),
            ([m, 6144], BF16), ([m], INT), ([m], INT), ([slots + 1], INT), ([slots + 2], INT),
            ([slots + 1], INT), ([1], "bool"), ([1], INT), ([], "Scalar"), ([], "bool")]


def ctx(sub: str | None, *, args: list[tuple[Any, str]] | None = None, op: str = "vllm::lora_x",
        shapes: Any = None, dtypes: Any = None, l2: int | None = H100_L2,
        name: str = "_lora_shrink_kernel") -> OpContext:
    return OpContext(
        name=name, op_subclass=sub, regime="decode", shapes=shapes or [], dtypes=dtypes or [],
        model=None, workload=Workload(isl=1024, osl=256, conc=32), tokens=32,
        tokens_source="test", weight_dtype="bf16", activation_dtype="bf16", kv_dtype="bf16",
        dtype_bytes=dict(DTYPE_BYTES), l2_bytes=l2,
        instance=instance(op, args) if args is not None else None)


def one(est: Any) -> tuple[float, float]:
    (c,) = est.candidates
    return c.bytes, c.flops


def test_vllm_shrink_one_slot_decode() -> None:
    """M=32 tokens, one adapter slot (--max-loras 1), qkv: S=3 slices of rank 16, ΣN=48.

    flops = 2·M·H·ΣN = 2·32·4096·48 = 12,582,912
    bytes = x 32·4096·2 = 262,144 (read once: 256 KiB fits the 50 MiB L2)
          + one adapter's A: 48·4096·2 = 393,216
          + out 32·48·4 (fp32, recorded) = 6,144            = 661,504
    """
    est = lora.estimate(ctx("shrink", args=shrink_args(32, 1), op="vllm::lora_shrink"))
    assert one(est) == (661_504, 12_582_912)
    assert est.per == "launch" and est.compute_dtype == "bf16" and est.prior == "lora"
    text = " ".join(est.assumptions)
    assert "ΣN=48" in text and "one adapter's weights read" in text
    assert "output fp32 (recorded)" in text and "adapters bf16, the input's" in text
    assert "every one of the M tokens is served by an adapter" in text


def test_vllm_expand_one_slot_decode() -> None:
    """The matching expand: x the fp32 [3, 32, 16] buffer, B slices 4096, 1024, 1024 wide.

    flops = 2·M·r·ΣN = 2·32·16·6144 = 6,291,456
    bytes = x 3·32·16·4 = 6,144 + B 6144·16·2 = 196,608
          + y's 6144 columns read and written 2·32·6144·2 = 786,432   = 989,184
    """
    est = lora.estimate(ctx("expand", args=expand_args(32, 1), op="vllm::lora_expand",
                            name="_lora_expand_kernel"))
    assert one(est) == (989_184, 6_291_456)
    assert "read and written" in " ".join(est.assumptions)


def test_several_slots_leave_the_adapter_bytes_open_and_give_no_verdict() -> None:
    """--max-loras 4 at M=32: the batch reads 1 to 4 adapters. Shrink bytes 661,504 (one) to
    262,144 + 4·393,216 + 6,144 = 1,841,152 (all four): 2.78×, far over the 5 % that would still
    count as settled, so no number; the reason says what would settle it."""
    with pytest.raises(OpModelUnavailable) as err:
        lora.estimate(ctx("shrink", args=shrink_args(32, 4), op="vllm::lora_shrink"))
    why = str(err.value)
    assert "1 to 4 of the 4 slots" in why and "0.662-1.841 MB" in why
    assert "--max-loras 1" in why and "stage-C counters" in why
    assert SETTLED == 1.05


def test_one_token_reads_one_adapter_whatever_the_slots() -> None:
    """M=1 with 4 slots: one token has one adapter. 1·4096·2 + 48·4096·2 + 1·48·4
    = 8,192 + 393,216 + 192 = 401,600 B; flops 2·1·4096·48 = 393,216."""
    est = lora.estimate(ctx("shrink", args=shrink_args(1, 4), op="vllm::lora_shrink"))
    assert one(est) == (401_600, 393_216)


def test_a_prefill_input_larger_than_l2_is_read_once_per_slice() -> None:
    """M=4096 on MI300X (4 MiB L2): x = 4096·4096·2 = 33,554,432 B does not fit, and the grid
    walks the three slices one after another, so it is read 3 times: 100,663,296
    + 393,216 + out 4096·48·4 = 786,432 → 101,842,944 B. On H100 (50 MiB L2) it fits:
    33,554,432 + 393,216 + 786,432 = 34,734,080 B. flops 2·4096·4096·48 = 1,610,612,736."""
    mi300 = lora.estimate(ctx("shrink", args=shrink_args(4096, 1), l2=MI300X_L2))
    h100 = lora.estimate(ctx("shrink", args=shrink_args(4096, 1), l2=H100_L2))
    assert one(mi300) == (101_842_944, 1_610_612_736)
    assert one(h100) == (34_734_080, 1_610_612_736)


def test_an_unknown_l2_leaves_the_re_reads_open() -> None:
    """No L2 size: x is read 1 to 3 times, 34.7 to 101.8 MB: no verdict, said."""
    with pytest.raises(OpModelUnavailable, match="L2 size is not in the peak table"):
        lora.estimate(ctx("shrink", args=shrink_args(4096, 1), l2=None))


def test_sglang_layouts_from_upstream_shapes() -> None:
    """SGLang's triton backend: ``_sgemm_lora_a_kernel`` x [32, 4096] × A [1, 48, 4096] (q, k, v
    stacked, 3·16 rows) → [32, 48] at bf16 (no fp32 tensor in the dtype set):
    262,144 + 393,216 + 32·48·2 = 3,072 → 658,432 B, flops 2·32·4096·48 = 12,582,912.
    ``_qkv_lora_b_kernel`` x [32, 48] (three rank-16 slices side by side) × B [1, 6144, 16]:
    x 32·48·2 = 3,072 + B 6144·16·2 = 196,608 + y 2·32·6144·2 = 786,432 → 986,112 B,
    flops 2·32·16·6144 = 6,291,456."""
    dtypes = ["bf16", "int32"]
    a = lora.estimate(ctx("shrink", shapes=[[[32, 4096], [1, 48, 4096], [32, 48], [2], [3]]],
                          dtypes=dtypes, name="_sgemm_lora_a_kernel"))
    b = lora.estimate(ctx("expand", shapes=[[[32, 48], [1, 6144, 16], [32, 6144], [2], [3]]],
                          dtypes=dtypes, name="_qkv_lora_b_kernel"))
    assert one(a) == (658_432, 12_582_912)
    assert one(b) == (986_112, 6_291_456)


def test_upstream_vllm_shapes_read_fp32_from_the_dtype_set() -> None:
    """The upstream Top-N's flattened shapes and its dtype set: the same 661,504 B as the
    recorded instance, the fp32 buffer found in the set."""
    shapes = [[[32, 4096], [1, 1, 16, 4096], [1, 1, 16, 4096], [1, 1, 16, 4096], [3, 32, 16],
               [32], [32], [2], [3], [2], [1], [1]]]
    est = lora.estimate(ctx("shrink", shapes=shapes, dtypes=["bf16", "fp32", "int32"]))
    assert one(est) == (661_504, 12_582_912)
    assert "fp32 (the recorded dtype set has an fp32 tensor" in " ".join(est.assumptions)


def test_what_the_model_will_not_number() -> None:
    with pytest.raises(OpModelUnavailable, match="without recorded shapes"):
        lora.estimate(ctx("shrink"))
    with pytest.raises(OpModelUnavailable, match="MoE layer's experts"):
        lora.estimate(ctx("moe", shapes=[[[32, 2048], [4, 8, 16, 2048]]]))
    with pytest.raises(OpModelUnavailable, match="a MoE layer's LoRA"):
        lora.estimate(ctx("shrink", shapes=[[[32, 2048], [4, 8, 16, 2048]]]))
    two = [[[32, 4096], [1, 48, 4096], [32, 48]], [[32, 14336], [1, 16, 14336], [32, 16]]]
    with pytest.raises(OpModelUnavailable, match="2 LoRA shapes"):
        lora.estimate(ctx("shrink", shapes=two))
    with pytest.raises(OpModelUnavailable, match="not recognised"):
        lora.estimate(ctx("shrink", shapes=[[[32, 4096, 2], [7, 7]]]))
