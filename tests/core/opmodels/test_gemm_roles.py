"""Dense GEMM from operand roles (spec §4: flops = 2MNK, bytes = A + B + C, each at its own
dtype): every figure is worked out by hand in the docstring.

The instances are built the way the importer records them: dims and types per argument, the
role of each position from the real role table (``core.operands.roles_of``).
"""

from __future__ import annotations

from typing import Any

import pytest

from roofline_tui.core.dtypes import DTYPE_BYTES
from roofline_tui.core.inputs import Workload
from roofline_tui.core.opmodels import OpContext, gemm
from roofline_tui.core.topn_ext import Instance
from tests.core.opmodels.recorded import instance

BF16, FP32, E4M3 = "c10::BFloat16", "float", "c10::Float8_e4m3fn"
U8, FP4X2, E8M0 = "unsigned char", "c10::Float4_e2m1fn_x2", "c10::Float8_e8m0fnu"




def ctx(inst: Instance | None, *, name: str = "gemm_kernel", shapes: Any = None,
        dtypes: Any = None, weight_dtype: str = "bf16") -> OpContext:
    return OpContext(
        name=name, op_subclass=None, regime="decode", shapes=shapes or [], dtypes=dtypes or [],
        model=None, workload=Workload(isl=1024, osl=1024, conc=64), tokens=64,
        tokens_source="test", weight_dtype=weight_dtype, activation_dtype="bf16",
        kv_dtype="bf16", dtype_bytes=dict(DTYPE_BYTES), instance=inst)


def only(est: Any) -> tuple[float, float]:
    assert len(est.candidates) == 1
    return est.candidates[0].bytes, est.candidates[0].flops


# --------------------------------------------------------------------------- bf16, real shapes


def test_mm_from_the_h100_trace() -> None:
    """``aten::mm [[8944, 1024], [1024, 2816]]`` bf16 (tracelens_h100_qwen1.5-0.5b, the MLP up
    projection): A = 8944·1024·2 = 18,317,312 B; B = 1024·2816·2 = 5,767,168 B; C allocated
    [8944, 2816] bf16 = 50,372,608 B; total 74,457,088 B. flops = 2·8944·2816·1024
    = 51,581,550,592."""
    inst = instance("aten::mm", [([8944, 1024], BF16), ([1024, 2816], BF16)])
    est = gemm.estimate(ctx(inst))
    b, f = only(est)
    assert b == 8944 * 1024 * 2 + 1024 * 2816 * 2 + 8944 * 2816 * 2 == 74_457_088
    assert f == 2 * 8944 * 2816 * 1024
    assert est.compute_dtype == "bf16"
    assert any("arg 0 (input) [8944, 1024]" in a for a in est.assumptions)
    assert any("arg 1 (weight) [1024, 2816]" in a and "[K,N]" in a for a in est.assumptions)


def test_addmm_bias_is_read_once_and_never_taken_as_a() -> None:
    """``aten::addmm(bias, mat1, mat2)`` with a full-size 2-D bias [64, 4096], mat1 [64, 1024],
    mat2 [1024, 4096], bf16. By role: A = mat1 (arg 1), B = mat2 (arg 2), M=64 N=4096 K=1024:
    A 64·1024·2 = 131,072 + B 1024·4096·2 = 8,388,608 + C 64·4096·2 = 524,288 + bias read
    once 64·4096·2 = 524,288 → 9,568,256 B; flops 2·64·4096·1024 = 536,870,912.

    Read by position the bias would be taken as A (the first 2-D operand) and the GEMM misread
    as M=4096 N=1024 K=64; the positional path still does that without an instance."""
    args = [([64, 4096], BF16), ([64, 1024], BF16), ([1024, 4096], BF16), ([], "Scalar"),
            ([], "Scalar")]
    inst = instance("aten::addmm", args)
    assert [a.role for a in inst.args[:3]] == ["bias", "input", "weight"]
    est = gemm.estimate(ctx(inst))
    b, f = only(est)
    assert b == 131_072 + 8_388_608 + 524_288 + 524_288 == 9_568_256
    assert f == 2 * 64 * 4096 * 1024
    assert any(a.startswith("bias = arg 0") for a in est.assumptions)
    positional = gemm.estimate(ctx(None, shapes=[[d for d, _ in args[:3]]], dtypes=["bf16"]))
    assert positional.candidates[0].flops == 2 * 4096 * 1024 * 64  # same product, wrong dims
    assert any("M=4096 N=1024 K=64" in a for a in positional.assumptions)


def test_addmm_out_argument_is_c_not_a() -> None:
    """``addmm.out(bias [4096], mat1 [64, 1024], mat2 [1024, 4096], beta, alpha, out [64, 4096])``
    bf16: the out= argument is C (written once, 64·4096·2 = 524,288 B), never read as A.
    Bytes: A 131,072 + B 8,388,608 + C 524,288 + bias 4096·2 = 8,192 → 9,052,160 B."""
    inst = instance("aten::addmm", [([4096], BF16), ([64, 1024], BF16), ([1024, 4096], BF16),
                                    ([], "Scalar"), ([], "Scalar"), ([64, 4096], BF16)])
    assert inst.args[5].role == "output"
    est = gemm.estimate(ctx(inst))
    b, f = only(est)
    assert b == 131_072 + 8_388_608 + 524_288 + 8_192 == 9_052_160
    assert f == 2 * 64 * 4096 * 1024
    assert any(a.startswith("C = arg 5 (output) [64, 4096]") for a in est.assumptions)


def test_linear_weight_is_n_by_k() -> None:
    """``aten::linear(x [2, 32, 4096], w [1024, 4096], bias [1024])`` bf16: B is stored [N, K],
    leading dims fold into M = 64. A 64·4096·2 = 524,288 + B 1024·4096·2 = 8,388,608 + C
    64·1024·2 = 131,072 + bias 2,048 → 9,046,016 B; flops 2·64·1024·4096 = 536,870,912."""
    inst = instance("aten::linear", [([2, 32, 4096], BF16), ([1024, 4096], BF16),
                                     ([1024], BF16)])
    est = gemm.estimate(ctx(inst))
    b, f = only(est)
    assert b == 524_288 + 8_388_608 + 131_072 + 2_048 == 9_046_016
    assert f == 2 * 64 * 1024 * 4096
    assert any("[N,K]" in a for a in est.assumptions)


def test_bmm_batch_from_the_h100_trace() -> None:
    """``aten::bmm [[1, 32, 1], [1, 1, 559]]`` fp32 (the rotary frequency outer product in the
    H100 trace; its shapes share no 2-D K, so the positional path cannot model it): batch 1,
    M=32, K=1, N=559. A 32·4 = 128 + B 559·4 = 2,236 + C 32·559·4 = 71,552 → 73,916 B;
    flops 2·32·559·1 = 35,776; compute fp32."""
    inst = instance("aten::bmm", [([1, 32, 1], FP32), ([1, 1, 559], FP32)])
    est = gemm.estimate(ctx(inst))
    assert only(est) == (128 + 2_236 + 71_552, 2 * 32 * 559)
    assert est.compute_dtype == "fp32"


# --------------------------------------------------------------------------- quantised


def test_fp8_scaled_mm_is_judged_on_the_fp8_peak() -> None:
    """``aten::_scaled_mm(a [64, 4096] e4m3, b [4096, 4096] e4m3, scale_a [64, 1] fp32,
    scale_b [1, 4096] fp32, bias None, scale_result None, out_dtype, use_fast_accum)``:
    compute fp8 (both operands fp8). Bytes: A 64·4096·1 = 262,144 + B 4096·4096·1
    = 16,777,216 + C 64·4096 at bf16 (the out_dtype scalar is not recorded; the activation
    dtype) = 524,288 + scales (64 + 4096)·4 = 16,640 → 17,580,288 B;
    flops 2·64·4096·4096 = 2,147,483,648."""
    inst = instance("aten::_scaled_mm", [
        ([64, 4096], E4M3), ([4096, 4096], E4M3), ([64, 1], FP32), ([1, 4096], FP32),
        ([], ""), ([], ""), ([], "Scalar"), ([], "Scalar")])
    assert [a.role for a in inst.args[:4]] == ["input", "weight", "scale", "scale"]
    est = gemm.estimate(ctx(inst, weight_dtype="fp8"))
    b, f = only(est)
    assert est.compute_dtype == "fp8"
    assert b == 262_144 + 16_777_216 + 524_288 + 16_640 == 17_580_288
    assert f == 2 * 64 * 4096 * 4096
    assert sum(a.startswith("scale = arg") for a in est.assumptions) == 2
    assert any("out_dtype is a scalar the trace does not record" in a for a in est.assumptions)


def test_int8_by_int8_runs_on_int8() -> None:
    """``aten::_int_mm [[64, 4096], [4096, 1024]]`` int8 (``signed char``): compute int8, C is
    int32 (what _int_mm returns). A 262,144 + B 4,194,304 + C 64·1024·4 = 262,144
    → 4,718,592 B."""
    inst = instance("aten::_int_mm", [([64, 4096], "signed char"), ([4096, 1024], "signed char")])
    est = gemm.estimate(ctx(inst))
    assert est.compute_dtype == "int8"
    assert only(est)[0] == 262_144 + 4_194_304 + 262_144


def test_bf16_by_packed_mxfp4_weight() -> None:
    """A bf16 × mxfp4 GEMM (an op the role table does not know, so positional: A = first
    input, B = second): x [64, 4096] bf16, w [1024, 2048] uint8, w_scales [1024, 128] uint8.
    B's K axis (2048) is half of A's (4096): packed fp4, two values per byte, so K = 4096,
    N = 1024. Compute bf16 (the weight is dequantised into the activation's MMA).
    Bytes: A 64·4096·2 = 524,288 + B 1024·4096 fp4 values × 0.5 B = 2,097,152 + scales
    (one e8m0 per 32: 1024·4096/32 = 131,072 B, the recorded [1024, 128] uint8) + C 64·1024·2
    = 131,072 → 2,883,584 B; flops 2·64·1024·4096 = 536,870,912."""
    inst = instance("aiter::gemm_a16wfp4", [([64, 4096], BF16), ([1024, 2048], U8),
                                            ([1024, 128], U8)])
    assert [a.role for a in inst.args] == ["input"] * 3
    est = gemm.estimate(ctx(inst))
    b, f = only(est)
    assert est.compute_dtype == "bf16"
    assert f == 2 * 64 * 1024 * 4096
    assert b == 524_288 + 2_097_152 + 131_072 + 131_072 == 2_883_584
    assert any("packed fp4" in a and "2048" in a for a in est.assumptions)


def test_mxfp4_weight_without_recorded_scales_adds_the_implied_ones() -> None:
    """The same GEMM with only x and w recorded (``aten::mm`` on a uint8 weight stored [K/2, N]
    = [2048, 1024] is not real, so a positional op again): the e8m0 scales are implied, one per
    32 values: 1024·4096/32 = 131,072 B, so the bytes are the same 2,883,584 B."""
    inst = instance("vllm::mxfp4_linear", [([64, 4096], BF16), ([1024, 2048], U8)])
    est = gemm.estimate(ctx(inst))
    assert only(est)[0] == 2_883_584
    assert any("block scales implied" in a for a in est.assumptions)


def test_nvfp4_by_nvfp4_scaled_mm_is_fp4() -> None:
    """``aten::_scaled_mm`` on two ``Float4_e2m1fn_x2`` operands (two fp4 values per recorded
    element): a [64, 2048] and b [2048, 1024] hold K = 4096; block scales fp8 e4m3, one per 16
    values: scale_a 64·256 = 16,384 B, scale_b 256·1024 = 262,144 B (the recorded sizes).
    Compute fp4. Bytes: A 64·4096·0.5 = 131,072 + B 4096·1024·0.5 = 2,097,152 + scales 278,528
    + C 64·1024 at bf16 = 131,072 → 2,637,824 B; flops 2·64·1024·4096 = 536,870,912."""
    inst = instance("aten::_scaled_mm", [
        ([64, 2048], FP4X2), ([2048, 1024], FP4X2), ([64, 256], E4M3), ([256, 1024], E4M3),
        ([], ""), ([], ""), ([], "Scalar"), ([], "Scalar")])
    est = gemm.estimate(ctx(inst))
    b, f = only(est)
    assert est.compute_dtype == "fp4"
    assert f == 2 * 64 * 1024 * 4096
    assert b == 131_072 + 2_097_152 + 278_528 + 131_072 == 2_637_824
    assert any("NVFP4" in a for a in est.assumptions)


def test_two_uint8_operands_are_fp4_only_when_something_says_so() -> None:
    """Two ``uint8`` operands a [64, 2048], b [1024, 2048] sharing the recorded K: with an op
    name saying nvfp4 they are packed fp4 (K = 4096, compute fp4; A 131,072 + B 2,097,152 +
    implied NVFP4 scales 64·4096/16 + 4 + 1024·4096/16 + 4 = 16,388 + 262,148 + C 131,072
    = 2,637,832 B); with a plain name they are an int8 GEMM (K = 2048, compute int8)."""
    args = [([64, 2048], U8), ([1024, 2048], U8)]
    fp4 = gemm.estimate(ctx(instance("vllm::gemm_nvfp4", args)))
    assert fp4.compute_dtype == "fp4"
    assert only(fp4) == (2_637_832, 2 * 64 * 1024 * 4096)
    int8 = gemm.estimate(ctx(instance("vllm::gemm_w8a8", args)))
    assert int8.compute_dtype == "int8"
    assert only(int8)[1] == 2 * 64 * 1024 * 2048


# --------------------------------------------------------------------------- fallbacks


def test_without_an_instance_the_positional_path_is_unchanged() -> None:
    """An upstream Top-N (no instance): shapes by position, as before. [64, 1024] × [1024, 1024]
    bf16: 131,072 + 2,097,152 + 131,072 = 2,359,296 B."""
    est = gemm.estimate(ctx(None, shapes=[[[64, 1024], [1024, 1024]]], dtypes=["bf16"]))
    assert only(est) == (2_359_296, 2 * 64 * 1024 * 1024)


def test_roles_without_a_shared_k_fall_back_to_positions_and_say_so() -> None:
    """A positional op whose first two tensors share no K ([64, 1024] and [4096, 4096]) reads
    its shapes positionally, with the reason in the assumptions."""
    inst = instance("custom::gemm", [([64, 1024], BF16), ([4096, 4096], BF16),
                                     ([1024, 4096], BF16)])
    est = gemm.estimate(ctx(inst, shapes=[[[64, 1024], [4096, 4096], [1024, 4096]]],
                            dtypes=["bf16"]))
    assert "share no K axis" in est.assumptions[0]
    assert only(est)[1] == pytest.approx(2 * 64 * 4096 * 1024)
