"""Elementwise / norm / copy / cache-store bytes from operand roles (spec §4: bytes = input
elems · in dtype + output elems · out dtype): every figure is worked out by hand in the
docstring, most on argument lists recorded in the shared real traces.

The instances are built the way the importer records them: dims and types per argument, the
role of each position from the real role table (``core.operands.roles_of``).
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from roofline_tui.core.dtypes import DTYPE_BYTES
from roofline_tui.core.inputs import Workload
from roofline_tui.core.opmodels import OpContext, OpModelUnavailable, elementwise
from roofline_tui.core.topn_ext import Instance
from tests.core.opmodels.recorded import instance
from tests.paths import REAL_FORMATS, REPO_ROOT, need

BF16, FP32, I64 = "c10::BFloat16", "float", "long int"
H100_TRACE = REAL_FORMATS / "wild" / "tracelens_h100_qwen1.5-0.5b.json.gz"
QWEN_05B = REAL_FORMATS / "configs" / "Qwen1.5-0.5B-Chat" / "config.json"

# [16, 16, 559, 64] bf16 (batch 16 × heads 16 × 559 tokens × head_dim 64): 9,158,656 elements
QK = 16 * 16 * 559 * 64
QK_BYTES = QK * 2  # 18,317,312




def ctx(inst: Instance | None, sub: str = "elementwise", *, name: str = "elementwise_kernel",
        shapes: Any = None, dtypes: Any = None) -> OpContext:
    return OpContext(
        name=name, op_subclass=sub, regime="prefill", shapes=shapes or [], dtypes=dtypes or [],
        model=None, workload=Workload(isl=1024, osl=1024, conc=64), tokens=64,
        tokens_source="test", weight_dtype="bf16", activation_dtype="bf16", kv_dtype="bf16",
        dtype_bytes=dict(DTYPE_BYTES), instance=inst)


def nbytes(est: Any) -> float:
    assert len(est.candidates) == 1
    return float(est.candidates[0].bytes)


def test_the_model_opts_in_to_instances() -> None:
    assert elementwise.MODEL.instance_tensors == 1


# --------------------------------------------------------------------------- the H100 trace


def test_copy_reads_its_source_and_writes_its_destination_once() -> None:
    """``aten::copy_ [[16,16,559,64], [16,16,559,64], []]`` bf16 (H100 trace): arg 0 is the
    destination (written, not read), arg 1 the source: 2 × 18,317,312 = 36,634,624 B. The
    positional rule on the same upstream shape set counts two inputs and a broadcast output:
    3 × 18,317,312 = 54,951,936 B (the 55.0 MB it reported before)."""
    inst = instance("aten::copy_", [([16, 16, 559, 64], BF16), ([16, 16, 559, 64], BF16),
                                    ([], "Scalar")])
    assert [a.role for a in inst.args] == ["output", "input", "scalar"]
    est = elementwise.estimate(ctx(inst))
    assert nbytes(est) == 2 * QK_BYTES == 36_634_624
    old = elementwise.estimate(ctx(None, shapes=[[[16, 16, 559, 64], [16, 16, 559, 64]]],
                                   dtypes=["bf16"]))
    assert nbytes(old) == 3 * QK_BYTES == 54_951_936


def test_copy_that_changes_dtype_writes_at_the_destination_dtype() -> None:
    """``aten::copy_`` fp32 destination ← bf16 source, [16, 559, 1024] (9,158,656 elements):
    read 9,158,656 · 2 = 18,317,312 + write 9,158,656 · 4 = 36,634,624 → 54,951,936 B."""
    inst = instance("aten::copy_", [([16, 559, 1024], FP32), ([16, 559, 1024], BF16),
                                    ([], "Scalar")])
    assert nbytes(elementwise.estimate(ctx(inst))) == 9_158_656 * (2 + 4)


def test_cat_writes_one_tensor_of_the_joined_size() -> None:
    """``aten::cat([[16,16,559,32], [16,16,559,32]], dim)`` (H100 trace): the TensorList is read
    once, 2 × 4,579,328 elements, and one tensor of 9,158,656 elements (the [16, 16, 559, 64]
    the model builds) is written; the list records no dtype, so both are at the activation
    dtype bf16: 18,317,312 + 18,317,312 = 36,634,624 B. The cat dim is a scalar the trace does
    not record: ``output_dims`` joins equal shapes on axis 0 ([32, 16, 559, 32]), the same
    element count. (The positional rule read both parts and wrote one part: 27,475,968 B.)"""
    inst = instance("aten::cat", [([[16, 16, 559, 32], [16, 16, 559, 32]], "TensorList"),
                                  ([], "Scalar")])
    est = elementwise.estimate(ctx(inst))
    assert nbytes(est) == 2 * QK_BYTES
    assert any("allocated output [32, 16, 559, 32] (cat) at bf16" in a for a in est.assumptions)
    old = elementwise.estimate(ctx(None, shapes=[[[16, 16, 559, 32], [16, 16, 559, 32]]]))
    assert nbytes(old) == 3 * QK_BYTES // 2 == 27_475_968


def test_broadcast_input_is_read_at_its_own_size() -> None:
    """``aten::mul [[1024], [16, 559, 1024]]`` bf16 (H100 trace, the norm weight times the
    hidden states): reads 1024 · 2 = 2,048 B + 9,158,656 · 2 = 18,317,312 B, writes the
    broadcast [16, 559, 1024] 18,317,312 B → 36,636,672 B."""
    inst = instance("aten::mul", [([1024], BF16), ([16, 559, 1024], BF16)])
    est = elementwise.estimate(ctx(inst))
    assert nbytes(est) == 2_048 + 18_317_312 + 18_317_312 == 36_636_672
    assert est.candidates[0].flops == 9_158_656


def test_fp32_mul_writes_fp32() -> None:
    """``aten::mul [[16, 559, 1024], [16, 559, 1]]`` fp32 (H100 trace, x · rsqrt(var)): reads
    36,634,624 + 8,944 · 4 = 35,776 B and writes [16, 559, 1024] at fp32 (the operands'
    dtype, not the model's bf16) 36,634,624 B → 73,305,024 B."""
    inst = instance("aten::mul", [([16, 559, 1024], FP32), ([16, 559, 1], FP32)])
    assert nbytes(elementwise.estimate(ctx(inst))) == 36_634_624 + 35_776 + 36_634_624


def test_reduction_with_an_unrecorded_output_size_is_a_stated_lower_bound() -> None:
    """``aten::mean([16, 559, 1024] fp32, dims, keepdim, dtype)``: the reduced dims are a
    ScalarList the trace does not record, so the output is left out and said so: 36,634,624 B
    read (a lower bound; the true output, [16, 559, 1] fp32, is 35,776 B more)."""
    inst = instance("aten::mean", [([16, 559, 1024], FP32), ([], "ScalarList"),
                                   ([], "Scalar"), ([], "")])
    est = elementwise.estimate(ctx(inst))
    assert nbytes(est) == 36_634_624
    assert any("lower bound" in a for a in est.assumptions)


def test_index_select_reads_only_the_selected_rows() -> None:
    """``aten::index_select([151936, 1024] bf16, 0, [8944] int64)`` (H100 trace, the token
    embedding): 8944 rows · 1024 · 2 = 18,317,312 B read of the 311 MB table, the index
    8944 · 8 = 71,552 B, the [8944, 1024] output 18,317,312 B → 36,706,176 B."""
    inst = instance("aten::index_select", [([151936, 1024], BF16), ([], "Scalar"),
                                           ([8944], I64)])
    assert nbytes(elementwise.estimate(ctx(inst))) == 18_317_312 + 71_552 + 18_317_312


def test_memset_launched_by_a_matmul_is_not_modelled_from_its_operands() -> None:
    """The H100 trace's ``Memset (Device)`` launches sit under ``aten::addmm``: the matmul's
    A, B and bias say nothing about what the memset writes, so no figure is made up."""
    inst = instance("aten::addmm", [([1024], BF16), ([8944, 1024], BF16), ([1024, 1024], BF16),
                                    ([], "Scalar"), ([], "Scalar")])
    with pytest.raises(OpModelUnavailable, match="launched by aten::addmm, a matmul"):
        elementwise.estimate(ctx(inst, "copy", name="Memset (Device)"))


# --------------------------------------------------------------------------- the SGLang capture


def test_store_cache_writes_only_the_slots_it_stores() -> None:
    """``sglang::store_cache([32,1024], [32,1024], [835874,1024], [835874,1024], [32], row_bytes,
    num_split)`` bf16 (the SGLang MI300X decode capture, bs 32, 8 KV heads × 128): reads k and
    v, 2 · 32·1024 · 2 = 131,072 B, the indices 32 · 8 = 256 B, and writes k and v into the
    caches at those 32 rows, 131,072 B → 262,400 B; not the two 835874-slot pools
    (2 · 835874·1024·2 = 3,423,739,904 B, what the positional rule reported)."""
    inst = instance("sglang::store_cache", [
        ([32, 1024], BF16), ([32, 1024], BF16), ([835874, 1024], BF16), ([835874, 1024], BF16),
        ([32], I64), ([], "Scalar"), ([], "Scalar")])
    assert [a.role for a in inst.args[:5]] == ["input", "input", "cache", "cache", "index"]
    est = elementwise.estimate(ctx(inst, "copy", name="store_kvcache"))
    assert nbytes(est) == 131_072 + 256 + 131_072 == 262_400


def test_reshape_and_cache_flash_writes_t_by_hkv_by_d_at_the_cache_dtype() -> None:
    """``_C_cache_ops::reshape_and_cache_flash(key [2048, 8, 128] bf16, value [2048, 8, 128]
    bf16, key_cache [65536, 16, 8, 128] uint8, value_cache (same), slot_mapping [2048] int64,
    "fp8", k_scale [] fp32, v_scale [] fp32)``: the pools are 2 · 1,073,741,824 B, but only
    T·H_KV·d = 2048·8·128 = 2,097,152 values each are written, at the 1 B fp8 cache dtype:
    4,194,304 B. Reads: key + value 2 · 4,194,304 = 8,388,608, slots 16,384, the two 0-d
    scales 8 → 12,599,304 B."""
    inst = instance("_C_cache_ops::reshape_and_cache_flash", [
        ([2048, 8, 128], BF16), ([2048, 8, 128], BF16), ([65536, 16, 8, 128], "unsigned char"),
        ([65536, 16, 8, 128], "unsigned char"), ([2048], I64), ([], ""), ([], FP32),
        ([], FP32)])
    assert [a.role for a in inst.args] == ["input", "input", "cache", "cache", "index",
                                           "scalar", "scale", "scale"]
    est = elementwise.estimate(ctx(inst, "copy", name="reshape_and_cache_flash_kernel"))
    assert nbytes(est) == 8_388_608 + 16_384 + 8 + 4_194_304 == 12_599_304


def test_head_norm_is_a_plain_norm_not_a_residual_add() -> None:
    """``aiter::rmsnorm(out [1024, 128], input [1024, 128], weight [128], eps)`` bf16: the q
    head norm of the SGLang capture, launched as ``add_rmsnorm_quant_kernel``. By role: read
    input 1024·128·2 = 262,144 + weight 256, write out 262,144 → 524,544 B. The positional
    rule saw two full-size tensors under an ``add_rms`` name and wrote both back:
    2 · 262,144 + 256 + 2 · 262,144 = 1,048,832 B."""
    name = "_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi64ELi8ELb0ELb0ELb1ELi1EEEvPT0_"
    inst = instance("aiter::rmsnorm", [([1024, 128], BF16), ([1024, 128], BF16), ([128], BF16),
                                       ([], "Scalar")])
    assert nbytes(elementwise.estimate(ctx(inst, "norm", name=name))) == 524_544
    old = elementwise.estimate(ctx(None, "norm", name=name,
                                   shapes=[[[1024, 128], [1024, 128], [128]]], dtypes=["bf16"]))
    assert nbytes(old) == 1_048_832


def test_fused_add_norm_reads_and_writes_both_in_place_tensors() -> None:
    """``aiter::add_rmsnorm(out, input, residual_in, residual_out, weight, eps)`` [32, 4096]
    bf16 (SGLang capture): two reads and two writes of 262,144 B and the weight 8,192 B
    → 1,056,768 B."""
    inst = instance("aiter::add_rmsnorm", [([32, 4096], BF16)] * 4 + [([4096], BF16),
                                                                    ([], "Scalar")])
    assert nbytes(elementwise.estimate(ctx(inst, "norm"))) == 4 * 262_144 + 8_192


def test_act_and_mul_output_is_its_own_argument() -> None:
    """``sgl_kernel::silu_and_mul(out [32, 12288], input [32, 24576])`` bf16: read
    32·24576·2 = 1,572,864, write 32·12288·2 = 786,432 → 2,359,296 B."""
    inst = instance("sgl_kernel::silu_and_mul", [([32, 12288], BF16), ([32, 24576], BF16)])
    assert nbytes(elementwise.estimate(ctx(inst, "act_and_mul"))) == 1_572_864 + 786_432


def test_rotary_reads_the_cos_sin_cache_at_the_positions_only() -> None:
    """``sgl_kernel::rotary_embedding(positions [32] int64, q [32, 4096], k [32, 1024],
    head_size, cos_sin_cache [41216, 128], is_neox)`` bf16 (SGLang capture): q and k rotated in
    place (read + write 2·262,144 + 2·65,536), positions 256, and 32 rows of the cache
    32·128·2 = 8,192 (not the 10.5 MB table) → 663,808 B."""
    inst = instance("sgl_kernel::rotary_embedding", [
        ([32], I64), ([32, 4096], BF16), ([32, 1024], BF16), ([], "Scalar"),
        ([41216, 128], BF16), ([], "Scalar")])
    est = elementwise.estimate(ctx(inst, "rope"))
    assert nbytes(est) == 2 * 262_144 + 2 * 65_536 + 256 + 8_192 == 663_808


# --------------------------------------------------------------------------- other paths


def test_host_copy_counts_the_source_once_on_the_host_link() -> None:
    """``aten::copy_(dst [4096, 4096] bf16 on the device, src [4096, 4096] bf16 on the host)``
    under a ``Memcpy HtoD``: 33,554,432 B cross the link once."""
    inst = instance("aten::copy_", [([4096, 4096], BF16), ([4096, 4096], BF16), ([], "Scalar")])
    est = elementwise.estimate(ctx(inst, "host_copy", name="Memcpy HtoD (Pageable -> Device)"))
    assert est.roof == "host_link" and nbytes(est) == 4096 * 4096 * 2


def test_op_not_in_the_table_keeps_the_positional_rule() -> None:
    """An Inductor kernel has no schema: its two [64, 4096] bf16 buffers are read and the
    broadcast written, 3 · 524,288 = 1,572,864 B, as before, with the reason stated."""
    inst = instance("triton_poi_fused_add_0", [([64, 4096], BF16), ([64, 4096], BF16)])
    est = elementwise.estimate(ctx(inst, shapes=[[[64, 4096], [64, 4096]]], dtypes=["bf16"]))
    assert nbytes(est) == 3 * 524_288
    assert "positional" in est.assumptions[0]


# --------------------------------------------------------------------------- end to end


def _copy_entry(doc: dict[str, Any]) -> str:
    """The Top-N entry whose every instance with an op is the bf16 ``aten::copy_`` of a
    [16,16,559,64]-element tensor (the direct-copy kernel of the H100 trace)."""
    for k in doc["top_kernels"]:
        insts = [i for i in k.get("x_roofline", {}).get("instances", []) if i.get("op")]
        if insts and all(i["op"] == "aten::copy_" and [a.get("type") for a in i["args"][:2]]
                         == [BF16, BF16] for i in insts):
            dims = {tuple(i["args"][1]["dims"]) for i in insts}
            if all(len(d) == 4 and d[0] * d[1] * d[2] * d[3] == QK for d in dims):
                return str(k["name"])
    raise AssertionError("no bf16 copy_ entry in the imported H100 trace")


def test_h100_copy_kernel_bytes_per_launch_end_to_end(tmp_path: Path) -> None:
    """Import the H100 trace, analyse it (``--device H100``: the per-instance fold needs the
    HBM peak) and read the direct-copy kernel's bytes per launch: both of its recorded
    instances copy 9,158,656 bf16 elements (``[16,16,559,64]`` and ``[16,559,16,64]``), so
    the calls-weighted figure is 2 · 9,158,656 · 2 = 36,634,624 B (it was 54,951,936)."""
    from roofline_tui.importers.torch import import_torch

    trace = need(H100_TRACE)
    config = need(QWEN_05B)
    doc = import_torch(trace, progress=False).doc
    (tmp_path / "profile_topN.json").write_text(json.dumps(doc))
    name = _copy_entry(doc)
    run = subprocess.run(
        [sys.executable, "-m", "roofline_tui", "analyze", str(tmp_path), "--model-config",
         str(config), "--device", "H100"],
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)
    assert (tmp_path / "profile_roofline.json").exists(), run.stderr
    art = json.loads((tmp_path / "profile_roofline.json").read_text())
    entry = next(e for e in art["entries"] if e["name"] == name)
    assert entry["modeled"] and entry["unit"].startswith("one launch")
    assert entry["bytes_est"] == pytest.approx(2 * QK_BYTES, rel=1e-6)
    assert any("operands by role (table:aten::copy_)" in a for a in entry["assumptions"])


def test_h100_trace_is_what_the_docstrings_say() -> None:
    """The argument lists above are the trace's own: each one occurs as a cpu_op."""
    with gzip.open(need(H100_TRACE), "rt", encoding="utf-8") as fh:
        events = json.load(fh)["traceEvents"]
    seen = {(e["name"], json.dumps(e["args"].get("Input Dims"))) for e in events
            if e.get("cat") == "cpu_op" and isinstance(e.get("args"), dict)}
    for op, dims in [("aten::copy_", [[16, 16, 559, 64], [16, 16, 559, 64], []]),
                     ("aten::cat", [[[16, 16, 559, 32], [16, 16, 559, 32]], []]),
                     ("aten::mul", [[1024], [16, 559, 1024]])]:
        assert (op, json.dumps(dims)) in seen
