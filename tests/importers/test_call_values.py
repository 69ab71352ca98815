"""What the torch importer keeps of an op's recorded argument values (Kineto's ``Concrete
Inputs``), the trace's own ``distributedInfo``, and the regime it reads when a trace has no
serving steps (issue 31 items 3 and 5).

Every trace here is built in the test: one ``cpu_op`` per call with the ``Input Dims``,
``Input type`` and ``Concrete Inputs`` lists PyTorch writes for that op's schema, its launch
call and its kernel (names as ROCm/CUDA print them). The expected values are read off the lists
written here, never off the module under test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from roofline_tui.core.extension import EXTENSION_KEY
from roofline_tui.importers.torch import concrete_value, import_torch
from tests.paths import WILD_FIXTURES

X = EXTENSION_KEY
BF16 = "c10::BFloat16"
# aten::_scaled_dot_product_flash_attention(query, key, value, float dropout_p, bool is_causal,
# bool return_debug_mask, *, float? scale): what PyTorch 2.x records for one call
SDPA_TYPES = [BF16, BF16, BF16, "Scalar", "Scalar", "Scalar", "Scalar"]


def sdpa_values(causal: bool) -> list[str]:
    return ["", "", "", "0.", "True" if causal else "False", "False", "0.088388347648318433"]


def call(op: str, dims: list[Any], types: list[str], kernel: str, i: int,
         values: list[str] | None = None, dur: float = 100.0) -> list[dict[str, Any]]:
    """One op call that launches one kernel: the cpu_op, its launch call, the kernel."""
    t = 1000.0 + 1000.0 * i
    args: dict[str, Any] = {"External id": 10 + i, "Input Dims": dims, "Input type": types}
    if values is not None:
        args["Concrete Inputs"] = values
    return [
        {"ph": "X", "cat": "cpu_op", "name": op, "pid": 1, "tid": 1, "ts": t, "dur": 50,
         "args": args},
        {"ph": "X", "cat": "cuda_runtime", "name": "hipModuleLaunchKernel", "pid": 1, "tid": 1,
         "ts": t + 10, "dur": 5, "args": {"correlation": 100 + i, "External id": 10 + i}},
        {"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 7, "ts": t + 60,
         "dur": dur, "args": {"device": 0, "correlation": 100 + i, "External id": 10 + i}},
    ]


def write(tmp_path: Path, events: list[dict[str, Any]], name: str = "trace.json",
          **header: Any) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"schemaVersion": 1, **header, "traceEvents": events}))
    return path


def doc_of(path: Path) -> dict[str, Any]:
    return import_torch(path, progress=False).doc


def attn_instances(doc: dict[str, Any]) -> list[dict[str, Any]]:
    (row,) = [e for e in doc["top_kernels"] if e["name"] == "attn_fwd"]
    return list(row[X]["instances"])


# ---------------------------------------------------------------------------------------------
# Concrete Inputs
# ---------------------------------------------------------------------------------------------


def test_concrete_value_reads_what_kineto_writes() -> None:
    """Kineto writes every scalar argument as text: ``"False"`` is the bool, ``"4096"`` the
    int, ``"0."`` and ``"0.088388347648318433"`` floats, ``"[-1, -1]"`` an int list; ``""``
    (a tensor, or None) is no value; an over-long string is cut to 64 characters."""
    assert concrete_value("False") is False and concrete_value("True") is True
    assert concrete_value("4096") == 4096 and type(concrete_value("4096")) is int
    assert concrete_value("0.") == 0.0 and type(concrete_value("0.")) is float
    assert concrete_value("0.088388347648318433") == 0.088388347648318433
    assert concrete_value("[-1, -1]") == [-1, -1]
    assert concrete_value("") is None and concrete_value(None) is None
    assert concrete_value(7) is None  # not text: not what Kineto writes
    assert concrete_value("model.layers.0.self_attn.attn") == "model.layers.0.self_attn.attn"
    long = concrete_value("x" * 200)
    assert isinstance(long, str) and len(long) <= 64


def test_sdpa_concrete_inputs_are_kept_on_their_positions(tmp_path: Path) -> None:
    """``aten::_scaled_dot_product_flash_attention`` q/k/v ``[8, 16, 4096, 128]`` with Concrete
    Inputs ``["", "", "", "0.", "False", "False", "0.088388347648318433"]``: positions 3-6
    (dropout_p 0.0, is_causal False, return_debug_mask False, scale 0.0884) get a ``value``;
    the tensors (positions 0-2, recorded as ``""``) get none."""
    q = [8, 16, 4096, 128]
    ev = call("aten::_scaled_dot_product_flash_attention", [q, q, q, [], [], [], []],
              SDPA_TYPES, "attn_fwd", 0, sdpa_values(False))
    (inst,) = attn_instances(doc_of(write(tmp_path, ev)))
    values = [a.get("value", "absent") for a in inst["args"]]
    assert values == ["absent"] * 3 + [0.0, False, False, 0.088388347648318433]
    assert inst["args"][4]["role"] == "scalar"


def test_equal_shapes_with_different_is_causal_are_two_instances(tmp_path: Path) -> None:
    """Two calls with the same dims, one causal and one not, do different work (FLOPs 2:1 at
    S_q = S_kv): they are two instances, each with its own call and time (100 µs, 300 µs)."""
    q = [1, 8, 256, 64]
    dims = [q, q, q, [], [], [], []]
    ev = (call("aten::_scaled_dot_product_flash_attention", dims, SDPA_TYPES, "attn_fwd", 0,
               sdpa_values(True), dur=100.0)
          + call("aten::_scaled_dot_product_flash_attention", dims, SDPA_TYPES, "attn_fwd", 1,
                 sdpa_values(False), dur=300.0))
    got = {i["args"][4]["value"]: (i["calls"], i["total_us"])
           for i in attn_instances(doc_of(write(tmp_path, ev)))}
    assert got == {True: (1, 100.0), False: (1, 300.0)}


def test_values_are_kept_only_for_attention_ops_and_change_nothing_else(tmp_path: Path) -> None:
    """An ``aten::add`` whose Concrete Inputs record ``alpha`` 1 and an ``aten::mm`` with an
    (empty) Concrete Inputs list: the Top-N is byte-for-byte the one written for the same
    trace with no Concrete Inputs at all; only attention ops' values are kept."""
    a = [32, 1024]
    events = (call("aten::add", [a, a, []], [BF16, BF16, "Scalar"],
                   "void at::native::vectorized_elementwise_kernel<4>", 0, ["", "", "1"])
              + call("aten::mm", [a, [1024, 1024]], [BF16, BF16],
                     "Cijk_Alik_Bljk_BBS_BH_MT64x64x64", 1, ["", ""]))
    stripped = json.loads(json.dumps(events))
    for e in stripped:
        e["args"].pop("Concrete Inputs", None)
    with_values = doc_of(write(tmp_path, events, "with.json"))
    without = doc_of(write(tmp_path, stripped, "without.json"))
    assert json.dumps(with_values, sort_keys=True) == json.dumps(without, sort_keys=True)
    assert '"value"' not in json.dumps(with_values)


def test_trimmed_torch_compile_trace_keeps_is_causal_false() -> None:
    """The trimmed TraceLens torch.compile block: ``aten::_flash_attention_forward`` Concrete
    Inputs ``["", "", "", "", "", "4096", "4096", "0.", "False", "False",
    "0.088388347648318433", "", "", "", ""]``: max_q 4096, max_k 4096, dropout 0.0,
    is_causal False (position 8), return_debug_mask False, scale 0.0884 (position 10)."""
    doc = doc_of(WILD_FIXTURES / "torch_compile_attention_trimmed.json")
    (inst,) = attn_instances(doc)
    assert inst["op"] == "aten::_flash_attention_forward"
    got = {k: a["value"] for k, a in enumerate(inst["args"]) if "value" in a}
    assert got == {5: 4096, 6: 4096, 7: 0.0, 8: False, 9: False, 10: 0.088388347648318433}


# ---------------------------------------------------------------------------------------------
# distributedInfo
# ---------------------------------------------------------------------------------------------


def test_distributed_info_is_recorded_when_world_size_is_an_integer(tmp_path: Path) -> None:
    """``distributedInfo`` ``{"backend": "nccl", "rank": 3, "world_size": 8}`` (as PyTorch
    writes it for rank 3 of 8) becomes ``distributed`` {8, 3, nccl, the file}; a world size
    that is text, zero or absent records nothing."""
    ev = call("aten::mm", [[32, 64], [64, 64]], [BF16, BF16], "Cijk_Alik_Bljk_MT64x64x64", 0)
    info = {"backend": "nccl", "rank": 3, "world_size": 8, "pg_count": 1}
    doc = doc_of(write(tmp_path, ev, "rank3.json", distributedInfo=info))
    assert doc[X]["distributed"] == {"world_size": 8, "rank": 3, "backend": "nccl",
                                     "source": "rank3.json distributedInfo"}
    for bad in ({"world_size": "8", "rank": 0}, {"world_size": 0}, {"rank": 0}):
        doc = doc_of(write(tmp_path, ev, "bad.json", distributedInfo=bad))
        assert "distributed" not in doc[X], bad
    doc = doc_of(write(tmp_path, ev, "odd_rank.json",
                       distributedInfo={"world_size": 2, "rank": 5}))
    assert doc[X]["distributed"]["rank"] is None  # a rank outside the world is not kept


# ---------------------------------------------------------------------------------------------
# the regime without serving steps
# ---------------------------------------------------------------------------------------------


def test_regime_from_the_attention_query_rows(tmp_path: Path) -> None:
    """No step annotation, no embedding. SDPA q ``[8, 16, 4096, 128]`` against k ``[8, 16,
    4096, 128]``: 4096 query rows per sequence, a forward over whole sequences: prefill, read
    from the recorded shapes, not assumed. q ``[4, 16, 1, 64]`` against 600 keys: one new token
    per sequence: decode, not assumed."""
    q = [8, 16, 4096, 128]
    doc = doc_of(write(tmp_path, call("aten::_scaled_dot_product_flash_attention",
                                      [q, q, q, [], [], [], []], SDPA_TYPES, "attn_fwd", 0,
                                      sdpa_values(False)), "prefill.json"))
    regime = doc[X]["regime"]
    assert (regime["regime"], regime["assumed"]) == ("prefill", False)
    assert "[8, 16, 4096, 128] against 4096 keys" in regime["evidence"]

    one, kv = [4, 16, 1, 64], [4, 16, 600, 64]
    doc = doc_of(write(tmp_path, call("aten::_scaled_dot_product_flash_attention",
                                      [one, kv, kv, [], [], [], []], SDPA_TYPES, "attn_fwd", 0,
                                      sdpa_values(False)), "decode.json"))
    regime = doc[X]["regime"]
    assert (regime["regime"], regime["assumed"]) == ("decode", False)


def test_regime_from_a_linear_input_with_its_sequence_axis(tmp_path: Path) -> None:
    """``aten::linear`` input ``[8, 4096, 2048]`` (B 8, S 4096, K 2048): prefill, stated. The
    flattened ``aten::mm`` ``[32768, 2048]`` alone does not tell batch from sequence: decode
    stays an assumption, and the evidence says why (M up to 32768)."""
    ev = call("aten::linear", [[8, 4096, 2048], [2048, 2048], []], [BF16, BF16, ""],
              "Cijk_Alik_Bljk_MT256x192x64", 0)
    regime = doc_of(write(tmp_path, ev, "linear.json"))[X]["regime"]
    assert (regime["regime"], regime["assumed"]) == ("prefill", False)
    ev = call("aten::mm", [[32768, 2048], [2048, 2048]], [BF16, BF16],
              "Cijk_Alik_Bljk_MT256x192x64", 0)
    regime = doc_of(write(tmp_path, ev, "mm.json"))[X]["regime"]
    assert (regime["regime"], regime["assumed"]) == ("decode", True)
    assert "M up to 32768" in regime["evidence"]


def test_trimmed_torch_compile_trace_is_prefill_like_not_decode() -> None:
    """The trimmed torch.compile block has no steps and no embedding; its SDPA query
    ``[8, 16, 4096, 128]`` has 4096 rows against 4096 keys: prefill from the shapes."""
    regime = doc_of(WILD_FIXTURES / "torch_compile_attention_trimmed.json")[X]["regime"]
    assert (regime["regime"], regime["assumed"]) == ("prefill", False)


def test_training_trace_has_no_regime_said_once(tmp_path: Path) -> None:
    """An ``Optimizer.step#AdamW.step`` annotation says the trace trains: no regime (null),
    not assumed, and the reason is one profile note — not ``decode (assumed)``."""
    ev = call("aten::mm", [[32, 64], [64, 64]], [BF16, BF16], "Cijk_Alik_Bljk_MT64x64x64", 0)
    ev.append({"ph": "X", "cat": "user_annotation", "name": "Optimizer.step#AdamW.step",
               "pid": 1, "tid": 1, "ts": 5000.0, "dur": 30})
    doc = doc_of(write(tmp_path, ev))
    regime = doc[X]["regime"]
    assert regime["regime"] is None and regime["assumed"] is False
    assert "Optimizer.step#AdamW.step" in regime["evidence"]
    assert doc["notes"].count(regime["evidence"]) == 1


def test_backward_kernels_alone_say_training(tmp_path: Path) -> None:
    """A GPU-only trace (no cpu_op) whose kernels are ``batch_norm_backward_kernel`` and MIOpen's
    ``igemm_wrw_`` weight-gradient convolution: training, no regime; the evidence names the
    kernel with the most time (the 300 µs batch-norm backward)."""
    ev = [e for e in call("x", [], [], "void at::native::batch_norm_backward_kernel<c10::"
                          "BFloat16, c10::BFloat16, float, int>(int)", 0, dur=300.0)
          + call("x", [], [], "igemm_wrw_gtcx2_nhwc_bf16_bx0_ex1_bt256x128x16", 1)
          if e["cat"] != "cpu_op"]
    regime = doc_of(write(tmp_path, ev))[X]["regime"]
    assert regime["regime"] is None
    assert "batch_norm_backward_kernel" in regime["evidence"]


def test_cnn_inference_has_no_regime_but_a_mamba_conv1d_does(tmp_path: Path) -> None:
    """``aten::cudnn_convolution`` input ``[32, 3, 224, 224]`` with no attention or embedding:
    a CNN, no regime. A serving trace's 1-D causal conv (Mamba's ``causal_conv1d_fwd_kernel``)
    is not a CNN: it keeps the usual reading (decode assumed without other evidence)."""
    ev = call("aten::cudnn_convolution", [[32, 3, 224, 224], [64, 3, 7, 7], [], [], [], []],
              [BF16, BF16, "", "", "", ""], "implicit_convolve_sgemm", 0)
    regime = doc_of(write(tmp_path, ev, "cnn.json"))[X]["regime"]
    assert regime["regime"] is None and "aten::cudnn_convolution" in regime["evidence"]
    ev = [e for e in call("x", [], [], "causal_conv1d_fwd_kernel", 0) if e["cat"] != "cpu_op"]
    regime = doc_of(write(tmp_path, ev, "mamba.json"))[X]["regime"]
    assert (regime["regime"], regime["assumed"]) == ("decode", True)
