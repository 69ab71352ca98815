from __future__ import annotations

import gzip
import json
import shutil
from collections import defaultdict
from pathlib import Path

import pytest

from roofline_tui.importers.common import ImportProblem, write_round
from roofline_tui.importers.synth import MOE, NORM, SynthSpec, synthetic_trace, write_trace
from roofline_tui.importers.torch import TorchOptions, import_torch, parse_step

from .conftest import REAL, need

TORCH = REAL / "torch"
WITH_GPU = [
    "hta_A100_simple_add_trace_trimmed.json",
    "hta_A100_triton_example.pt.trace.json",
    "hta_MI250_rocm6.2_minitoy_train_kineto.json",
]
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}


def _independent(path: Path) -> tuple[dict[str, list[float]], float]:
    """Per-name durations and the total, straight from json.load (one device in these)."""
    events = json.loads(path.read_text())["traceEvents"]
    per: dict[str, list[float]] = defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in GPU_CATS:
            per[e["name"]].append(float(e["dur"]))
    return per, sum(sum(v) for v in per.values())


@pytest.mark.parametrize("sample", WITH_GPU)
def test_real_torch_trace_numbers(sample: str) -> None:
    path = need(TORCH / sample)
    per, total = _independent(path)
    doc = import_torch(path, TorchOptions(top=1000), progress=False).doc
    assert doc["source"] == "torch-trace"
    assert doc["total_gpu_time_ms"] == pytest.approx(round(total / 1000, 4), abs=1e-9)
    assert doc["num_kernel_launches"] == sum(len(v) for v in per.values())
    assert doc["num_distinct_kernels"] == len(per)
    assert len(doc["top_kernels"]) == len(per)
    totals = [k["total_ms"] for k in doc["top_kernels"]]
    assert totals == sorted(totals, reverse=True)
    assert [k["rank"] for k in doc["top_kernels"]] == list(range(1, len(per) + 1))
    for k in doc["top_kernels"]:
        durs = per[k["name"]]
        assert k["calls"] == len(durs)
        assert k["total_ms"] == pytest.approx(round(sum(durs) / 1000, 4), abs=1e-9)
        assert k["avg_us"] == pytest.approx(round(sum(durs) / len(durs), 3), abs=1e-9)
        assert k["pct_gpu_time"] == round(100 * sum(durs) / total, 2)
        assert len(k["short_name"]) <= 60
        assert "serving" not in doc and "phase" not in k


def test_real_mi250_shapes_follow_the_launching_cpu_op() -> None:
    """The hipBLASLt kernel's shapes are the Input Dims of the innermost cpu_op enclosing its
    hipLaunchKernel (found here by a brute-force search over the raw events)."""
    path = need(TORCH / "hta_MI250_rocm6.2_minitoy_train_kineto.json")
    events = json.loads(path.read_text())["traceEvents"]
    doc = import_torch(path, progress=False).doc
    checked = 0
    for entry in doc["top_kernels"]:
        kernels = [e for e in events if e.get("cat") == "kernel" and e["name"] == entry["name"]]
        if not kernels:
            continue
        expected = []
        for kern in kernels:
            corr = kern["args"]["correlation"]
            launch = next(e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")
                          and e.get("args", {}).get("correlation") == corr)
            enclosing = [e for e in events if e.get("cat") == "cpu_op"
                         and e["tid"] == launch["tid"] and e["pid"] == launch["pid"]
                         and e["ts"] <= launch["ts"] <= e["ts"] + e["dur"]
                         and any(d for d in e["args"].get("Input Dims", []))]
            if enclosing:
                inner = max(enclosing, key=lambda e: e["ts"])
                dims: list[list[int]] = []
                for d in inner["args"]["Input Dims"]:
                    if d and all(isinstance(x, list) for x in d):
                        dims.extend(x for x in d if x)  # a TensorList: one list per tensor
                    elif d:
                        dims.append(d)
                if dims not in expected:
                    expected.append(dims)
        assert sorted(map(json.dumps, entry["shapes"])) == sorted(map(json.dumps, expected))
        checked += bool(expected)
    assert checked >= 5
    gemm = next(k for k in doc["top_kernels"] if k["name"].startswith("Cijk_Alik"))
    assert gemm["shapes"] == [[[128], [5, 128], [128, 128]]]  # aten::addmm(bias, x, W^T)
    assert gemm["dtypes"] == ["float"]
    assert gemm["classification"] == "library_gemm" and gemm["editable"] is False


def test_no_gpu_events_is_a_problem() -> None:
    path = need(TORCH / "hta_A100_cupti_profiler_range_trimmed.json")
    with pytest.raises(ImportProblem, match="no GPU events"):
        import_torch(path, progress=False)


def test_serving_steps_give_phase_fields(tmp_path: Path) -> None:
    spec = SynthSpec(prefill_steps=2, decode_steps=6, layers=4, prefill_tokens=512,
                     decode_batch=8)
    path = write_trace(tmp_path / "t.json", spec)
    doc = import_torch(path, TorchOptions(isl=1024, osl=128, conc=8, capture_sizes=[1, 2, 4, 8, 16]), progress=False).doc
    sv = doc["serving"]
    assert sv["n_prefill_steps"] == 2 and sv["n_decode_steps"] == 6
    assert sv["decode_batch_captured"] == 8 and sv["decode_batch_steady"] == 8
    assert sv["steady"] is True
    assert sv["analytic_calls"] == {"prefill": 8, "decode": 128}
    moe = next(k for k in doc["top_kernels"] if k["name"] == MOE)
    assert moe["phase"] == "both"
    assert moe["served_regimes"] == ["prefill", "decode"]
    assert moe["phase_calls_measured"] == {"prefill": 8, "decode": 24}
    assert moe["calls_per_step"] == {"prefill": 4.0, "decode": 4.0}
    assert moe["base_latency_ms"] == {"prefill": 0.05, "decode": 0.02}
    assert moe["est_shape"]["prefill"] == {"M": 520, "M_dist": {"520": 8}}
    assert moe["est_shape"]["decode"]["M"] == 8
    assert moe["est_calls"] == {"prefill": 8, "decode": 128}
    assert moe["shapes"][0] == [[8, 4096], [64, 1024, 4096]]  # decode shape is most frequent
    assert moe["dtypes"] == ["c10::Float8_e4m3fn"]
    norm = next(k for k in doc["top_kernels"] if k["name"] == NORM)
    assert norm["classification"] == "reduction_norm"
    memcpy = next(k for k in doc["top_kernels"] if k["name"].startswith("Memcpy"))
    assert "phase" not in memcpy  # launched outside every step span
    # totals: 4 layers x (2 prefill steps x 124us + 6 decode steps x 42us) + a 3us memcpy
    assert doc["total_gpu_time_ms"] == pytest.approx((4 * (2 * 124 + 6 * 42) + 3) / 1000)


def test_no_steps_no_serving_block(tmp_path: Path) -> None:
    path = write_trace(tmp_path / "t.json", SynthSpec(with_steps=False))
    doc = import_torch(path, progress=False).doc
    assert "serving" not in doc
    assert all("phase" not in k for k in doc["top_kernels"])


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("execute_context_1(512)_generation_3(3)", ("prefill", 512, 3)),
        ("execute_context_0(0)_generation_64(64)", ("decode", 0, 64)),
        ("execute_context_2(sq256sk256)_generation_0(0)", ("prefill", 256, 0)),
        ("execute_model", None),
        ("ProfilerStep#3", None),
    ],
)
def test_parse_step(name: str, expected: object) -> None:
    assert parse_step(name, {}) == expected


def test_parse_step_from_args() -> None:
    assert parse_step("execute_model", {"num_context_tokens": 128, "decode_batch": 4}) == (
        "prefill", 128, 4)
    assert parse_step("execute_model", {"num_context_tokens": 0, "decode_batch": 4}) == (
        "decode", 0, 4)


def test_mixed_devices_pick_most_time_and_device_index(tmp_path: Path) -> None:
    path = write_trace(tmp_path / "t.json", SynthSpec(extra_device=3))
    res = import_torch(path, progress=False)
    assert res.device.chosen == 0
    assert "using device 0" in res.device.message and "--device-index" in res.device.message
    other = import_torch(path, device_index=3, progress=False)
    assert other.doc["num_kernel_launches"] == 1
    assert other.doc["top_kernels"][0]["pct_gpu_time"] == 100.0
    with pytest.raises(ImportProblem, match="--device-index 9"):
        import_torch(path, device_index=9, progress=False)


def test_streaming_matches_whole_file_parse_with_tiny_chunks(tmp_path: Path) -> None:
    path = write_trace(tmp_path / "t.json", SynthSpec())
    big = import_torch(path, progress=False).doc
    tiny = import_torch(path, progress=False, chunk=7).doc
    assert big == tiny


def test_gzip_and_top(tmp_path: Path) -> None:
    src = need(TORCH / "hta_MI250_rocm6.2_minitoy_train_kineto.json")
    gz = tmp_path / "trace.json.gz"
    with open(src, "rb") as fi, gzip.open(gz, "wb") as fo:
        shutil.copyfileobj(fi, fo)
    plain = import_torch(src, TorchOptions(top=3), progress=False).doc
    packed = import_torch(gz, TorchOptions(top=3), progress=False).doc
    assert plain == packed
    assert len(plain["top_kernels"]) == 3
    assert plain["num_distinct_kernels"] == 13


def test_truncated_gzip_is_a_problem(tmp_path: Path) -> None:
    gz = tmp_path / "trace.json.gz"
    write_trace(gz, SynthSpec())
    data = gz.read_bytes()
    gz.write_bytes(data[: len(data) // 2])
    with pytest.raises(ImportProblem):
        import_torch(gz, progress=False)


def test_top_level_array_and_write_round(tmp_path: Path) -> None:
    trace = synthetic_trace(SynthSpec(with_steps=False))
    path = tmp_path / "a.json"
    path.write_text(json.dumps(trace["traceEvents"]))
    doc = import_torch(path, progress=False).doc
    out = write_round(doc, tmp_path / "round_0")
    assert json.loads(out.read_text()) == doc
    assert (tmp_path / "round_0" / "profile_topN.md").read_text().startswith("# Profile Top-")
    assert not [p for p in (tmp_path / "round_0").iterdir() if p.name.endswith(".tmp")]


def test_cpu_op_shapes_tell_1_from_1_0_from_true(tmp_path: Path) -> None:
    """Each kernel gets the dims of its own launching op, read per op: ``[[4, 8]]`` is a shape,
    ``[[4.0, 8]]`` and ``[[true, 8]]`` are not (dims must be integers), however often the three
    alternate (the collector cleans each distinct raw signature once and reuses it)."""
    events = []
    ops = {"k_int": [[4, 8]], "k_float": [[4.0, 8]], "k_bool": [[True, 8]]}
    corr = 0
    for rep in range(5):
        for kernel, dims in ops.items():
            corr += 1
            t = 100.0 * corr
            events += [
                {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": t,
                 "dur": 10.0, "args": {"Input Dims": dims, "Input type": ["float"]}},
                {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                 "tid": 1, "ts": t + 1, "dur": 2.0, "args": {"correlation": corr}},
                {"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 7, "ts": t + 5,
                 "dur": 1.0 + rep, "args": {"correlation": corr, "device": 0}},
            ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    doc = import_torch(path, progress=False).doc
    shapes = {k["name"]: (k["shapes"], k["dtypes"]) for k in doc["top_kernels"]}
    assert shapes == {"k_int": ([[[4, 8]]], ["float"]), "k_float": ([], []),
                      "k_bool": ([], [])}
