"""core.operands: the role of each argument position of a launching op.

The argument lists below are quoted from the shared real traces (``Input Dims`` and
``Input type`` of one ``cpu_op`` each); the file each comes from is named beside it.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline_tui.core.operand_roles import ROLES, WRITES_KINDS
from roofline_tui.core.operand_table import TABLE
from roofline_tui.core.operands import (
    NOT_IN_TABLE,
    POSITIONAL,
    OpRoles,
    normalise,
    output_dims,
    roles_of,
)
from tests.paths import REAL_FORMATS, need

WILD = REAL_FORMATS / "wild"
BF16 = "c10::BFloat16"

H100 = "tracelens_h100_qwen1.5-0.5b.json.gz"
SGL_CAPTURE = "tracelens_sglang_MI300X_decode_graph_capture_bs32_rank0.json.gz"
VLLM_CAPTURE = "tracelens_vllm_decode_full_graph_capture.pt.trace.json.gz"
SGL_DECODE = "tracelens_sglang_qwen3-8b_decode.json.gz"
VLLM_EXEC = "tracelens_vllm_decode_full_graph_execution.json.gz"
COMPILE = "tracelens_torch_compile_triton.json.gz"

# (op, Input Dims, Input type, expected roles, expected writes_output) -- real calls
REAL_CALLS: list[tuple[str, list[Any], list[str], list[str], str | None]] = [
    # tracelens_vllm_decode_full_graph_capture
    ("_C::rotary_embedding", [[32], [32, 4096], [32, 512], [], [131072, 64], []],
     ["long int", BF16, BF16, "Scalar", BF16, "Scalar"],
     ["index", "inplace", "inplace", "scalar", "weight", "scalar"], None),
    ("_C_cache_ops::reshape_and_cache_flash",
     [[32, 8, 64], [32, 8, 64], [224304, 32, 8, 64], [224304, 32, 8, 64], [32], [], [], []],
     [BF16, BF16, BF16, BF16, "long int", "", "float", "float"],
     ["input", "input", "cache", "cache", "index", "scalar", "scale", "scale"], None),
    ("vllm::unified_attention_with_output",
     [[32, 64, 64], [32, 8, 64], [32, 8, 64], [32, 64, 64], [], [], [], [0]],
     [BF16, BF16, BF16, BF16, "", "", "", BF16],
     ["input", "input", "input", "output", "scalar", "other", "other", "other"], None),
    ("aten::addmm", [[5120], [32, 2880], [2880, 5120], [], []],
     [BF16, BF16, BF16, "Scalar", "Scalar"],
     ["bias", "input", "weight", "scalar", "scalar"], "gemm"),
    ("aiter::rmsnorm2d_fwd_with_add_ck",
     [[32, 2880], [32, 2880], [32, 2880], [32, 2880], [2880], [], []],
     [BF16, BF16, BF16, BF16, BF16, "Scalar", "Scalar"],
     ["output", "input", "input", "output", "weight", "scalar", "scalar"], None),
    ("aiter::rms_norm", [[32, 2880], [2880], [], []], [BF16, BF16, "Scalar", "Scalar"],
     ["input", "weight", "scalar", "scalar"], "like:0"),
    ("vllm::moe_forward", [[32, 3072], [32, 32], [], []], [BF16, BF16, "", ""],
     ["input", "input", "other", "scalar"], "like:0"),
    ("TopK", [[32, 32], [], [], [], [], [], []], [BF16, "Scalar", "Scalar", "Scalar", "Scalar", "", ""],
     ["input", "scalar", "scalar", "scalar", "scalar", "other", "scalar"], "unknown"),
    ("SortTokens", [[32, 4], [32, 4], []], [BF16, "short int", "Scalar"],
     ["input", "index", "scalar"], "unknown"),
    ("vllm::rocm_unquantized_gemm", [[32, 2880], [5120, 2880], [5120]], [BF16, BF16, BF16],
     ["input", "weight", "bias"], "linear"),
    # tracelens_sglang_MI300X_decode_graph_capture_bs32_rank0
    ("sgl_kernel::rotary_embedding", [[32], [32, 4096], [32, 1024], [], [41216, 128], []],
     ["long int", BF16, BF16, "Scalar", BF16, "Scalar"],
     ["index", "inplace", "inplace", "scalar", "weight", "scalar"], None),
    ("sgl_kernel::silu_and_mul", [[32, 12288], [32, 24576]], [BF16, BF16], ["output", "input"], None),
    ("sglang::store_cache", [[32, 1024], [32, 1024], [835874, 1024], [835874, 1024], [32], [], []],
     [BF16, BF16, BF16, BF16, "long int", "Scalar", "Scalar"],
     ["input", "input", "cache", "cache", "index", "scalar", "scalar"], None),
    ("sglang_profiler::attention_paged_attention_ragged_100",
     [[32, 32, 128], [10905190400], [32, 32, 128], [835874, 1, 8, 128], [835874, 1, 8, 128], [33],
      [20971520], [4096], [], [1], [1], []],
     [BF16, "unsigned char", BF16, BF16, BF16, "int", "int", "int", "", "float", "float", ""],
     ["output", "workspace", "input", "cache", "cache", "index", "index", "index", "other", "scale",
      "scale", "other"], None),
    ("aiter::add_rmsnorm", [[32, 4096], [32, 4096], [32, 4096], [32, 4096], [4096], []],
     [BF16, BF16, BF16, BF16, BF16, "Scalar"],
     ["output", "input", "input", "output", "weight", "scalar"], None),
    ("aiter::rmsnorm", [[1024, 128], [1024, 128], [128], []], [BF16, BF16, BF16, "Scalar"],
     ["output", "input", "weight", "scalar"], None),
    ("aten::gather", [[151936, 4096], [], [32, 4096], [], [32, 4096]],
     [BF16, "Scalar", "long int", "Scalar", BF16],
     ["input", "scalar", "index", "scalar", "output"], None),
    ("aten::mm", [[32, 4096], [4096, 6144]], [BF16, BF16], ["input", "weight"], "gemm"),
    ("sglang_profiler::memory_pool__set_kv_buffer_impl_353",
     [[32, 8, 128], [32, 8, 128], [835874, 8, 128], [835874, 8, 128], [32]],
     [BF16, BF16, BF16, BF16, "long int"], ["input", "input", "cache", "cache", "index"], None),
    ("aiter::gemm_a16w16", [[32, 4096], [6144, 4096], [], [], [], [], []],
     [BF16, BF16, "", "Scalar", "", "", ""],
     ["input", "weight", "other", "scalar", "other", "other", "other"], "linear"),
    # tracelens_h100_qwen1.5-0.5b
    ("aten::_flash_attention_forward",
     [[16, 559, 16, 64], [16, 559, 16, 64], [16, 559, 16, 64]] + [[]] * 12,
     [BF16, BF16, BF16, "", "", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "", "", "",
      ""],
     ["input", "input", "input", "other", "other"] + ["scalar"] * 8 + ["other", "other"], "attention"),
    ("aten::embedding", [[151936, 1024], [16, 559], [], [], []],
     [BF16, "long int", "Scalar", "Scalar", "Scalar"],
     ["weight", "index", "scalar", "scalar", "scalar"], "embedding"),
    ("aten::cat", [[[1, 559, 32], [1, 559, 32]], []], ["TensorList", "Scalar"], ["input", "scalar"], "cat"),
    ("aten::add", [[16, 559, 1], [], []], ["float", "double", "Scalar"],
     ["input", "input", "scalar"], "broadcast"),
    ("aten::mean", [[16, 559, 1024], [], [], []], ["float", "ScalarList", "Scalar", ""],
     ["input", "scalar", "scalar", "scalar"], "unknown"),
    # tracelens_vllm_decode_full_graph_execution
    ("aten::index_select", [[2301952], [], [32], [32]], ["int", "Scalar", "long int", "int"],
     ["input", "scalar", "index", "output"], None),
    ("aten::sub", [[32], [], []], ["int", "long int", "Scalar"], ["input", "input", "scalar"], "broadcast"),
    # tracelens_sglang_qwen3-8b_decode
    ("aten::_foreach_copy_", [[[32], [32], [32], [32]], [[32], [32], [32], [32]], []],
     ["TensorList", "TensorList", "Scalar"], ["output", "input", "scalar"], None),
    # tracelens_torch_compile_triton: mm.out
    ("aten::mm", [[32768, 2048], [2048, 2048], [32768, 2048]], [BF16, BF16, BF16],
     ["input", "weight", "output"], None),
]


@pytest.mark.parametrize("op,dims,types,roles,writes", REAL_CALLS,
                         ids=[f"{c[0]}/{len(c[1])}" for c in REAL_CALLS])
def test_real_calls(op: str, dims: list[Any], types: list[str], roles: list[str],
                    writes: str | None) -> None:
    found = roles_of(op, len(dims), types, dims=dims)
    assert list(found.roles) == roles
    assert found.writes_output == writes
    assert found.source == f"table:{found.op}"
    assert found.op == normalise(op)


def test_copy_destination_is_written_not_read() -> None:
    # tracelens_h100_qwen1.5-0.5b: aten::copy_ [[16, 559, 1024], [16, 559, 1024], []]
    found = roles_of("aten::copy_", 3, ["c10::BFloat16", "float", "Scalar"])
    assert found.roles == ("output", "input", "scalar")
    assert found.writes_output is None
    assert roles_of("aten::copy_", 3).roles == ("output", "input", "scalar")


def test_addmm_bias_first() -> None:
    # tracelens_h100_qwen1.5-0.5b: aten::addmm [[1024], [8944, 1024], [1024, 1024], [], []]
    dims = [[1024], [8944, 1024], [1024, 1024], [], []]
    found = roles_of("aten::addmm", 5, [BF16, BF16, BF16, "Scalar", "Scalar"], dims=dims)
    assert found.roles == ("bias", "input", "weight", "scalar", "scalar")
    assert output_dims(found, dims) == [8944, 1024]
    # without any types the table alone gives the same
    assert roles_of("aten::addmm", 5).roles == ("bias", "input", "weight", "scalar", "scalar")


def test_vllm_c_ops_take_out_first() -> None:
    for op in ("_C::silu_and_mul", "_C::gelu_and_mul", "_C::rms_norm",
               "_C::static_scaled_fp8_quant", "_C::dynamic_per_token_scaled_fp8_quant",
               "_C::paged_attention_v1", "_C::paged_attention_v2"):
        found = roles_of(op, len(TABLE[op][0].roles))
        assert found.roles[0] == "output", op
        assert found.writes_output is None, op
    found = roles_of("_C::silu_and_mul", 2, [BF16, BF16], dims=[[32, 12288], [32, 24576]])
    assert found.roles == ("output", "input")
    assert roles_of("_C::fused_add_rms_norm", 4).roles == ("inplace", "inplace", "weight", "scalar")
    assert roles_of("_C::dynamic_scaled_fp8_quant", 3).roles == ("output", "input", "output")
    assert roles_of("_C::paged_attention_v2", 22).roles[:7] == (
        "output", "workspace", "workspace", "workspace", "input", "cache", "cache")


def test_cat_output_is_summed_along_the_axis_that_differs() -> None:
    found = roles_of("aten::cat", 2, ["TensorList", "Scalar"])
    assert output_dims(found, [[[2, 3, 8], [2, 5, 8], [2, 1, 8]], []]) == [2, 9, 8]
    # equal shapes: the dim is not recorded, axis 0 is assumed; the element count is right
    # (tracelens_h100_qwen1.5-0.5b: rotate_half's cat of two [16, 16, 559, 32] halves)
    out = output_dims(found, [[[16, 16, 559, 32], [16, 16, 559, 32]], []])
    assert out == [32, 16, 559, 32]
    assert _numel(out) == 2 * 16 * 16 * 559 * 32
    # 1-D empty tensors are skipped, as cat itself does
    assert output_dims(found, [[[0], [4, 2], [3, 2]], []]) == [7, 2]
    # tensors that differ in more than one axis, or in rank, cannot be concatenated
    assert output_dims(found, [[[2, 3], [4, 5]], []]) is None
    assert output_dims(found, [[[2, 3], [2, 3, 1]], []]) is None
    # cat.out writes its out= argument: nothing allocated
    assert roles_of("aten::cat", 3, ["TensorList", "Scalar", BF16]).writes_output is None


def test_output_dims_other_kinds() -> None:
    def out(op: str, dims: list[Any], types: list[str] | None = None) -> list[int] | None:
        return output_dims(roles_of(op, len(dims), types, dims=dims), dims)

    # tracelens_h100_qwen1.5-0.5b
    assert out("aten::bmm", [[1, 32, 1], [1, 1, 559]]) == [1, 32, 559]
    assert out("aten::matmul", [[16, 559, 1024], [1024, 2816]]) == [16, 559, 2816]
    assert out("aten::linear", [[16, 559, 1024], [2816, 1024], []], [BF16, BF16, ""]) == [16, 559, 2816]
    assert out("aten::mul", [[16, 16, 559, 64], [1, 1, 559, 64]]) == [16, 16, 559, 64]
    assert out("aten::mul", [[1024], [16, 559, 1024]]) == [16, 559, 1024]
    assert out("aten::embedding", [[151936, 1024], [16, 559], [], [], []]) == [16, 559, 1024]
    assert out("aten::index_select", [[151936, 1024], [], [8944]], [BF16, "Scalar", "long int"]) == [8944, 1024]
    assert out("aten::_scaled_dot_product_flash_attention",
               [[16, 16, 559, 64], [16, 16, 559, 64], [16, 16, 559, 48], [], [], [], []]) == [16, 16, 559, 48]
    assert out("aten::cos", [[1, 559, 64]]) == [1, 559, 64]
    assert out("aten::all", [[16, 559]]) == []
    # tracelens_sglang_MI300X_decode_graph_capture_bs32_rank0 / tracelens_vllm_decode_full_graph_capture
    assert out("aiter::gemm_a16w16", [[32, 4096], [6144, 4096], [], [], [], [], []],
               [BF16, BF16, "", "Scalar", "", "", ""]) == [32, 6144]
    assert out("vllm::rocm_aiter_rms_norm", [[32, 2880], [2880], []]) == [32, 2880]
    assert out("aten::addmm", [[32], [32, 2880], [2880, 32], [], []]) == [32, 32]
    # sizes a scalar decides are not guessed
    assert out("aten::topk", [[32, 151936], [], [], [], []]) is None
    assert out("aten::mean", [[16, 559, 1024], [], [], []]) is None
    # mismatched operands give None, never an exception
    assert out("aten::mm", [[32, 4096], [4095, 6144]]) is None
    assert out("aten::add", [[3, 4], [5, 4], []]) is None
    # an op that allocates nothing
    assert out("aten::copy_", [[32, 72], [32, 72], []]) is None


def test_types_refine_the_row() -> None:
    # an optional out= present: nothing allocated; absent: the attention output is allocated
    q, kv = [7, 8, 64], [7, 2, 64]
    base = [q, kv, kv]
    rest = [[33], [33], [], [], [], []] + [[]] * 11
    with_out = roles_of("_vllm_fa2_C::varlen_fwd", 21, [BF16, BF16, BF16, BF16] + ["int"] * 2 + [""] * 15)
    assert with_out.writes_output is None
    without = roles_of("_vllm_fa2_C::varlen_fwd", 21, [BF16, BF16, BF16, ""] + ["int"] * 2 + [""] * 15)
    assert without.writes_output == "attention"
    assert output_dims(without, base + [[]] + rest) == [7, 8, 64]
    # a block table given: key and value are the paged KV cache
    paged = roles_of("_vllm_fa2_C::varlen_fwd", 21,
                     [BF16] * 4 + ["int", "int", "int", "", "int"] + [""] * 12)
    assert paged.roles[1:3] == ("cache", "cache")
    assert paged.roles[8] == "index"
    assert any("block table" in n for n in paged.notes)
    # a tensor where the schema has a scalar: read as an input, and said so
    odd = roles_of("aten::softmax", 3, [BF16, BF16, "Scalar"])
    assert odd.roles == ("input", "input", "scalar")
    assert any("argument 1" in n for n in odd.notes)
    # no types: dims [] mean a scalar, a dims list a tensor
    assert roles_of("aten::mm", 2, None, dims=[[], [4, 4]]).roles == ("scalar", "weight")
    # more arguments than the schema: the trailing ones are scalars, with a note
    long = roles_of("_C::rms_norm", 6, [BF16, BF16, BF16, "Scalar", "Scalar", "Scalar"])
    assert long.roles == ("output", "input", "weight", "scalar", "scalar", "scalar")
    assert any("beyond" in n for n in long.notes)


def test_overloads_are_told_apart_by_length_and_types() -> None:
    assert roles_of("aten::add", 4).roles == ("input", "input", "scalar", "output")
    assert roles_of("aten::add", 4).writes_output is None
    assert roles_of("aten::all", 1).writes_output == "0-d"
    assert roles_of("aten::all", 3).writes_output == "unknown"
    # div.Tensor_mode (rounding_mode a string, recorded as "") vs div.out (a tensor)
    assert roles_of("aten::div", 3, [BF16, BF16, ""]).writes_output == "broadcast"
    assert roles_of("aten::div", 3, [BF16, BF16, BF16]).writes_output is None
    # triton_kernels TopK: the version with return_bitmatrix vs the one with all_gather
    old = roles_of("TopK", 7, [BF16, "Scalar", "Scalar", "Scalar", "Scalar", "long int", "Scalar"])
    assert old.roles[5] == "index"
    new = roles_of("TopK", 7, [BF16, "Scalar", "Scalar", "Scalar", "long int", "Scalar", "Scalar"])
    assert new.roles[4] == "index"


def test_cache_writers_say_so() -> None:
    assert roles_of("_C_cache_ops::reshape_and_cache", 8).writes_cache
    assert roles_of("sglang::store_cache", 7).writes_cache
    assert not roles_of("_C::paged_attention_v1", 19).writes_cache
    assert not roles_of("sglang_profiler::attention_paged_attention_ragged_7", 12).writes_cache


def test_unknown_op_positional_default() -> None:
    found = roles_of("mylib::fancy_kernel", 4, [BF16, "Scalar", "", "long int"])
    assert found == OpRoles("mylib::fancy_kernel", ("input", "scalar", "other", "input"),
                            NOT_IN_TABLE, None)
    assert found.source == "positional (op not in the role table)"
    # without types every position reads as a tensor input unless its dims say scalar
    assert roles_of("mylib::fancy_kernel", 3).roles == ("input", "input", "input")
    assert roles_of("mylib::fancy_kernel", 2, dims=[[4], []]).roles == ("input", "scalar")
    assert output_dims(found, [[4], [], [], [4]]) is None


def test_documented_positional_ops() -> None:
    # tracelens_torch_compile_triton: an Inductor kernel has no schema
    found = roles_of("triton_red_fused_add_mean_mul_pow_rsqrt_0", 5,
                     [BF16, BF16, BF16, "Scalar", "Scalar"])
    assert found.roles == ("input", "input", "input", "scalar", "scalar")
    assert found.source.startswith("positional (Triton kernel generated by torch.compile")
    assert found.source != NOT_IN_TABLE
    assert found.writes_output is None
    region = roles_of("Torch-Compiled Region: 0/0", 0)
    assert region.roles == () and "torch.compile region" in region.source
    wrapper = roles_of("sglang_profiler::utils_apply_qk_norm_487", 2, [BF16, BF16])
    assert wrapper.op == "sglang_profiler::utils_apply_qk_norm"
    assert "SGLang shape-discovery wrapper" in wrapper.source


def test_counter_strip() -> None:
    assert normalise("sglang_profiler::attention_paged_attention_ragged_100") == \
        "sglang_profiler::attention_paged_attention_ragged"
    found = roles_of("sglang_profiler::rmsnorm_rmsnorm2d_fwd_109", 2, [BF16, BF16])
    assert found.op == "sglang_profiler::rmsnorm_rmsnorm2d_fwd"
    assert found.source == "table:sglang_profiler::rmsnorm_rmsnorm2d_fwd"
    assert found.roles == ("input", "weight")
    # names whose digits are part of the op are kept
    assert roles_of("aiter::ck_moe_stage1", 19).op == "aiter::ck_moe_stage1"
    assert roles_of("aiter::fmoe_int8_g1u0", 14).op == "aiter::fmoe_int8_g1u0"
    assert normalise("  aten::mm ") == "aten::mm"
    # an overload name some tools keep is dropped for the lookup
    assert roles_of("aten::add.Tensor", 3).source == "table:aten::add"


def test_table_is_well_formed() -> None:
    assert len(TABLE) > 150
    for op, rows in TABLE.items():
        assert rows, op
        for row in rows:
            assert set(row.roles) <= ROLES, op
            assert row.writes is None or row.writes in WRITES_KINDS or re.fullmatch(r"like:\d+", row.writes)
            if row.writes and row.writes.startswith("like:"):
                assert int(row.writes[5:]) < len(row.roles), op
            assert row.schema.startswith(("schema: ", "source: ")), op
            if row.out_arg is not None:
                assert row.roles[row.out_arg] == "output", op
            if row.paged is not None:
                assert row.roles[row.paged[0]] == "index", op
            if row.writes_cache:
                assert "cache" in row.roles, op
    for op in ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear",
               "aten::_scaled_mm", "aten::copy_", "aten::cat", "aten::add", "aten::add_", "aten::mul",
               "aten::mul_", "aten::sub", "aten::div", "aten::index_select", "aten::gather",
               "aten::embedding", "aten::fill_", "aten::zero_", "aten::softmax", "aten::_softmax",
               "aten::topk", "aten::scaled_dot_product_attention",
               "aten::_scaled_dot_product_flash_attention", "aten::_scaled_dot_product_efficient_attention",
               "aten::_flash_attention_forward", "aten::_efficient_attention_forward",
               "flash_attn::_flash_attn_varlen_forward", "FlashAttnVarlenFunc", "_C::silu_and_mul",
               "_C::gelu_and_mul", "_C::rms_norm", "_C::fused_add_rms_norm", "_C::rotary_embedding",
               "_C::static_scaled_fp8_quant", "_C::dynamic_scaled_fp8_quant",
               "_C::dynamic_per_token_scaled_fp8_quant", "_C_cache_ops::reshape_and_cache",
               "_C_cache_ops::reshape_and_cache_flash", "_C::paged_attention_v1", "_C::paged_attention_v2",
               "vllm::unified_attention_with_output", "vllm::unified_attention", "aiter::rms_norm",
               "aiter::rmsnorm2d_fwd_with_add_ck", "aiter::rmsnorm", "aiter::ck_moe_stage1",
               "aiter::ck_moe_stage2", "aiter::fmoe", "aiter::fmoe_g1u1", "sgl_kernel::rotary_embedding",
               "sglang::store_cache", "sglang_profiler::attention_paged_attention_ragged",
               "sglang_profiler::rmsnorm_rmsnorm2d_fwd", "sglang_profiler::memory_pool__set_kv_buffer_impl"):
        assert op in TABLE, op


# --- the real traces: every op that launches a kernel has its roles -------------------------

def _events(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        doc = json.load(fh)
    events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    return [e for e in events if isinstance(e, dict)]


def _launching_ops(path: Path, capture_only: bool) -> Iterator[tuple[str, list[Any], list[Any]]]:
    """(name, Input Dims, Input type) of every cpu_op that launches a kernel (inside the
    graph-capture window when ``capture_only``): a launch runtime event carries the cpu_op's
    External id."""
    events = _events(path)
    runtime = [e for e in events if e.get("cat") == "cuda_runtime"]
    lo, hi = float("-inf"), float("inf")
    if capture_only:
        lo = min(e["ts"] for e in runtime if e.get("name", "").endswith("StreamBeginCapture"))
        hi = max(e["ts"] for e in runtime if e.get("name", "").endswith("StreamEndCapture"))
    by_ext: dict[Any, list[dict[str, Any]]] = {}
    for e in events:
        if e.get("cat") == "cpu_op":
            by_ext.setdefault(e.get("args", {}).get("External id"), []).append(e)
    for e in runtime:
        if "LaunchKernel" not in e.get("name", "") or not lo <= e.get("ts", lo - 1) <= hi:
            continue
        for op in by_ext.get(e.get("args", {}).get("External id"), []):
            args = op.get("args", {})
            yield op["name"], args.get("Input Dims") or [], args.get("Input type") or []


@pytest.mark.parametrize("name,capture_only", [
    (SGL_CAPTURE, True), (VLLM_CAPTURE, True),
    (H100, False), (SGL_DECODE, False), (VLLM_EXEC, False), (COMPILE, False),
])
def test_every_launching_op_of_the_real_traces_is_covered(name: str, capture_only: bool) -> None:
    path = need(WILD / name)
    seen: dict[str, str] = {}
    for op, dims, types in _launching_ops(path, capture_only):
        found = roles_of(op, len(dims), types, dims=dims)
        assert len(found.roles) == len(dims)
        assert found.source != NOT_IN_TABLE, f"{op} {dims} {types}"
        assert found.source.startswith("table:") or any(
            p.search(found.op) for p, _ in POSITIONAL), op
        seen[found.op] = found.source
    assert seen, f"no launching op found in {name}"
    if name == SGL_CAPTURE:
        assert {"aten::mm", "aiter::rmsnorm", "sgl_kernel::rotary_embedding", "sglang::store_cache",
                "sglang_profiler::attention_paged_attention_ragged", "aiter::add_rmsnorm",
                "sgl_kernel::silu_and_mul", "aten::gather", "aten::copy_"} <= set(seen)
    if name == VLLM_CAPTURE:
        assert {"aten::addmm", "_C::rotary_embedding", "_C_cache_ops::reshape_and_cache_flash",
                "vllm::unified_attention_with_output", "aiter::rmsnorm2d_fwd_with_add_ck",
                "aiter::rms_norm", "vllm::moe_forward", "TopK", "SortTokens"} <= set(seen)
        triton = {op for op, src in seen.items() if op.startswith("triton_")}
        assert triton and all(seen[op].startswith("positional (Triton") for op in triton)


# --- properties --------------------------------------------------------------------------------

TYPE_WORDS = st.sampled_from(["c10::BFloat16", "float", "long int", "int", "Scalar", "ScalarList",
                              "TensorList", "", "double", "bool", "GenericList", "unsigned char"])
DIMS = st.recursive(st.lists(st.integers(-3, 9), max_size=4),
                    lambda inner: st.lists(inner, max_size=3), max_leaves=6)
OPS = st.sampled_from(sorted(TABLE)) | st.text(max_size=40) | st.sampled_from([
    "sglang_profiler::attention_paged_attention_ragged_100", "triton_poi_fused_0", "aten::add.Tensor",
    "TopK", "SortTokens"])
JUNK = st.none() | st.integers() | st.text(max_size=5) | st.floats(allow_nan=True)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(op=OPS, n=st.integers(-2, 40),
       types=st.none() | st.lists(TYPE_WORDS | JUNK, max_size=45),
       dims=st.none() | st.lists(DIMS | JUNK, max_size=45))
def test_roles_of_never_raises_and_gives_one_role_per_argument(op: str, n: int, types: Any,
                                                               dims: Any) -> None:
    found = roles_of(op, n, types, dims=dims)
    assert len(found.roles) == max(n, 0)
    assert set(found.roles) <= ROLES
    assert found.source.startswith(("table:", "positional ("))
    out = output_dims(found, dims if dims is not None else [])
    assert out is None or (isinstance(out, list) and all(isinstance(x, int) for x in out))


def _numel(dims: list[int] | None) -> int:
    assert dims is not None
    count = 1
    for x in dims:
        count *= x
    return count
