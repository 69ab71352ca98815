"""Graph-capture traces (roofline_tui/importers/capture.py): reading them, finding them beside an
execution trace, choosing the one for a step and aligning replayed kernels to captured launches.

The real pairs are TraceLens's published vLLM FULL decode and SGLang decode captures with their
execution traces. Expected values are computed here from the raw JSON (json.load), never taken
from the module under test."""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from roofline_tui.importers.capture import (
    Alignment,
    CapturedLaunch,
    CaptureFile,
    CaptureRoot,
    align,
    choose_capture,
    discover_captures,
    parse_label,
    read_capture,
    read_captures,
)
from roofline_tui.importers.common import ImportProblem
from tests.paths import REAL_FORMATS, need

WILD = REAL_FORMATS / "wild"
VLLM_CAPTURE = WILD / "tracelens_vllm_decode_full_graph_capture.pt.trace.json.gz"
VLLM_EXEC = WILD / "tracelens_vllm_decode_full_graph_execution.json.gz"
SGLANG_CAPTURE = WILD / "tracelens_sglang_MI300X_decode_graph_capture_bs32_rank0.json.gz"
SGLANG_EXEC = WILD / "tracelens_sglang_qwen3-8b_decode.json.gz"


# ---------------------------------------------------------------------------------------------
# helpers: the raw JSON, read independently of the module
# ---------------------------------------------------------------------------------------------


def _events(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return json.load(fh)["traceEvents"]


def _replayed(exec_trace: Path) -> tuple[int, list[str]]:
    """The correlation of the one graph launch and its kernels' names in ts order."""
    events = _events(exec_trace)
    graph = [e for e in events if e.get("cat") == "cuda_runtime"
             and e.get("name") in ("hipGraphLaunch", "cudaGraphLaunch")]
    assert len(graph) == 1
    corr = graph[0]["args"]["correlation"]
    kernels = sorted((e for e in events if e.get("cat") == "kernel"
                      and e.get("args", {}).get("correlation") == corr), key=lambda e: e["ts"])
    return corr, [e["name"] for e in kernels]


def _raw_window_launches(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Launch calls between the end of StreamBeginCapture and the start of StreamEndCapture."""
    begin = next(e for e in events if str(e.get("name")).endswith("StreamBeginCapture"))
    end = next(e for e in events if str(e.get("name")).endswith("StreamEndCapture"))
    lo, hi = begin["ts"] + begin["dur"], end["ts"]
    return sorted((e for e in events if e.get("cat") == "cuda_runtime"
                   and "kernel" in e.get("args", {}) and lo <= e["ts"] <= hi),
                  key=lambda e: e["ts"])


# ---------------------------------------------------------------------------------------------
# the real pairs
# ---------------------------------------------------------------------------------------------


def test_vllm_full_capture_aligns_positionally_with_its_replay() -> None:
    cap = read_capture(need(VLLM_CAPTURE))
    corr, replayed = _replayed(need(VLLM_EXEC))
    assert corr == 505113
    assert (cap.size, cap.mode, cap.size_from) == (32, "FULL", "label capture_32_FULL")
    assert cap.rank == 0 and cap.subsystem is None
    assert len(cap.roots) == 1
    root = cap.roots[0]
    assert len(root.launches) == 421 == len(replayed)
    times = [launch.ts for launch in root.launches]
    assert times == sorted(times)
    # every launch links to its cpu_op by External id (serving-annotations.md 2.3)
    assert {launch.op_by for launch in root.launches} == {"external_id"}
    result = align(root.kernels, replayed)
    assert isinstance(result, Alignment), result
    assert result.how == "positional"
    assert result.index == tuple(range(421)) and result.matched == 421


def test_sglang_capture_aligns_and_carries_the_first_mm_shapes() -> None:
    cap = read_capture(need(SGLANG_CAPTURE))
    corr, replayed = _replayed(need(SGLANG_EXEC))
    assert corr == 92178
    assert (cap.size, cap.mode, cap.size_from) == (32, "DECODE", "label capture_32_DECODE")
    assert cap.rank == 0 and len(cap.roots) == 1 and cap.notes == ()
    root = cap.roots[0]
    assert len(root.launches) == 544 == len(replayed)
    result = align(root.kernels, replayed)
    assert isinstance(result, Alignment), result
    assert (result.how, result.matched) == ("positional", 544)

    # the first aten::mm launch, found by hand: the window's launch calls joined to the cpu_op
    # with the same External id
    events = _events(SGLANG_CAPTURE)
    ops = {e["args"]["External id"]: e for e in events
           if e.get("cat") == "cpu_op" and "External id" in e.get("args", {})}
    raw = _raw_window_launches(events)
    assert len(raw) == 544
    k = next(i for i, e in enumerate(raw) if ops[e["args"]["External id"]]["name"] == "aten::mm")
    expected = ops[raw[k]["args"]["External id"]]["args"]["Input Dims"]
    assert expected == [[32, 4096], [4096, 6144]]

    launch = root.launches[k]
    assert launch.op == "aten::mm" and launch.op_by == "external_id"
    assert launch.dims is not None and [list(d) for d in launch.dims] == expected
    assert launch.types == tuple(ops[raw[k]["args"]["External id"]]["args"]["Input type"])
    assert launch.kernel == raw[k]["args"]["kernel"] == replayed[result.index.index(k)]
    assert launch.grid == tuple(raw[k]["args"]["grid"])
    assert launch.module is not None and launch.module.startswith("nn.Module: ")


def test_a_capture_of_another_model_gives_a_reason_not_a_partial_match() -> None:
    vllm = read_capture(need(VLLM_CAPTURE))
    _corr, sglang_replayed = _replayed(need(SGLANG_EXEC))
    got = align(vllm.roots[0].kernels, sglang_replayed)
    assert isinstance(got, str) and got


def test_one_renamed_replayed_kernel_gives_a_reason() -> None:
    cap = read_capture(need(SGLANG_CAPTURE))
    _corr, replayed = _replayed(need(SGLANG_EXEC))
    replayed = list(replayed)
    replayed[100] = "some_other_kernel"
    got = align(cap.roots[0].kernels, replayed)
    assert isinstance(got, str)
    assert "544" in got


def test_the_file_name_size_is_cross_checked_against_the_label(tmp_path: Path) -> None:
    shifted = tmp_path / "bs_16_rank3.json.gz"
    os.symlink(need(SGLANG_CAPTURE), shifted)
    cap = read_capture(shifted)
    assert cap.size == 32 and cap.size_from == "label capture_32_DECODE"
    assert cap.rank == 3  # the file name's rank
    assert any("file name says bs 16" in n for n in cap.notes)


# ---------------------------------------------------------------------------------------------
# damaged files
# ---------------------------------------------------------------------------------------------


def test_a_truncated_gzip_is_an_import_problem(tmp_path: Path) -> None:
    data = need(SGLANG_CAPTURE).read_bytes()
    bad = tmp_path / "bs_32_rank0.json.gz"
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(ImportProblem) as info:
        read_capture(bad)
    assert "bs_32_rank0.json.gz" in info.value.message and "\n" not in info.value.message


def test_a_corrupted_gzip_is_an_import_problem(tmp_path: Path) -> None:
    body = json.dumps({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": f"op{i}", "ts": i,
                                        "dur": 1} for i in range(5000)]}).encode()
    data = bytearray(gzip.compress(body))
    for i in range(200, 260):
        data[i] ^= 0x5A
    bad = tmp_path / "bs_8_rank0.json.gz"
    bad.write_bytes(bytes(data))
    with pytest.raises(ImportProblem):
        read_capture(bad)


@pytest.mark.parametrize("content", [b"", b"not json at all", b'{"foo": 1}', b"[1, 2"])
def test_files_that_are_not_traces_are_import_problems(tmp_path: Path, content: bytes) -> None:
    bad = tmp_path / "bs_8_rank0.json"
    bad.write_bytes(content)
    with pytest.raises(ImportProblem):
        read_capture(bad)


def test_a_directory_or_missing_file_is_an_import_problem(tmp_path: Path) -> None:
    with pytest.raises(ImportProblem):
        read_capture(tmp_path)
    with pytest.raises(ImportProblem):
        read_capture(tmp_path / "absent.json.gz")


# ---------------------------------------------------------------------------------------------
# synthetic capture traces
# ---------------------------------------------------------------------------------------------

T = {"pid": 7, "tid": 7}


def _x(cat: str, name: str, ts: float, dur: float = 1.0, **args: Any) -> dict[str, Any]:
    ev: dict[str, Any] = {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, **T}
    if args:
        ev["args"] = args
    return ev


def _launch(ts: float, kernel: str, ext: int | None = None, **more: Any) -> dict[str, Any]:
    args: dict[str, Any] = {"kernel": kernel, "grid": [4, 1, 1], "block": [64, 1, 1], **more}
    if ext is not None:
        args["External id"] = ext
    return _x("cuda_runtime", "cudaLaunchKernel", ts, 0.5, **args)


def _op(ts: float, dur: float, name: str, ext: int | None, dims: Any,
        types: Any = None) -> dict[str, Any]:
    args: dict[str, Any] = {"Input Dims": dims, "Input type": types or ["float"] * len(dims)}
    if ext is not None:
        args["External id"] = ext
    return _x("cpu_op", name, ts, dur, **args)


def _window(t0: float, m: int, ext0: int) -> list[dict[str, Any]]:
    """One capture window at t0 with an mm (External id) and a relu (no External id: found by
    enclosing), under an nn.Module."""
    return [
        _x("cuda_runtime", "cudaStreamBeginCapture", t0, 1),
        _x("python_function", "nn.Module: Layer_0", t0 + 2, 20),
        _op(t0 + 3, 5, "aten::mm", ext0, [[m, 64], [64, 128]]),
        _launch(t0 + 4, "gemm_kernel", ext0),
        _op(t0 + 10, 5, "aten::relu", None, [[m, 128]]),
        _launch(t0 + 11, "relu_kernel"),
        _x("cuda_runtime", "cudaMemcpyAsync", t0 + 16, 0.5),
        _x("cuda_runtime", "cudaStreamEndCapture", t0 + 30, 1),
    ]


def _write(path: Path, events: Sequence[object], gz: bool = True, **header: Any) -> Path:
    body = json.dumps({"traceEvents": events, **header}).encode()
    path.write_bytes(gzip.compress(body) if gz else body)
    return path


def test_piecewise_capture_without_label_sized_from_content(tmp_path: Path) -> None:
    events = [
        _launch(1, "warmup_kernel", 1),  # outside any window: not kept
        *_window(100, 48, 10),
        *_window(200, 48, 20),
        _x("cuda_runtime", "cudaGraphLaunch", 300, 1),
    ]
    path = _write(tmp_path / "graph_capture_rank_0.1773.pt.trace.json", events, gz=False,
                  distributedInfo={"rank": 2})
    cap = read_capture(path)
    assert (cap.size, cap.mode, cap.size_from) == (48, "PIECEWISE",
                                                   "modal first dim of Input Dims")
    assert cap.rank == 0  # the file name wins over distributedInfo
    assert len(cap.roots) == 2 and cap.roots[0].thread == (7, 7)
    gemm, relu, copy = cap.roots[0].launches
    assert (gemm.kernel, gemm.op, gemm.op_by) == ("gemm_kernel", "aten::mm", "external_id")
    assert gemm.dims == ((48, 64), (64, 128)) and gemm.grid == (4, 1, 1)
    assert gemm.block == (64, 1, 1) and gemm.module == "nn.Module: Layer_0"
    assert (relu.op, relu.op_by, relu.dims) == ("aten::relu", "enclosing", ((48, 128),))
    assert (copy.kernel, copy.op, copy.op_by, copy.dims) == ("cudaMemcpyAsync", None, "none",
                                                             None)
    assert any("no launching cpu_op" in n for n in cap.notes)


def test_labels_give_size_mode_and_subsystem(tmp_path: Path) -> None:
    events = [_x("user_annotation", "capture_8_draft_FULL", 90, 100), *_window(100, 8, 1)]
    cap = read_capture(_write(tmp_path / "graph_capture_rank_0.1.pt.trace.json.gz", events))
    assert (cap.size, cap.mode, cap.base_mode, cap.subsystem) == (8, "draft_FULL", "FULL",
                                                                 "draft")
    atom = read_capture(_write(tmp_path / "bs_4_q_2_rank1.json.gz",
                               [_x("user_annotation", "capture_graph_bs_4", 90, 100),
                                *_window(100, 4, 1)]))
    assert (atom.size, atom.mode, atom.rank, atom.size_from) == (4, "GRAPH", 1,
                                                                "label capture_graph_bs_4")
    enc = read_capture(_write(tmp_path / "graph_capture_rank_0_encoder.5.pt.trace.json.gz",
                              _window(100, 8, 1)))
    assert enc.subsystem == "encoder" and enc.mode == "FULL"


def test_file_name_size_is_used_without_label_and_checked_against_content(
        tmp_path: Path) -> None:
    cap = read_capture(_write(tmp_path / "DecodeRunner_bs_16_rank0.json.gz",
                              _window(100, 12, 1)))
    assert (cap.size, cap.size_from, cap.mode) == (16, "file name bs_16", "FULL")
    assert any("most common first dim of Input Dims is 12" in n for n in cap.notes)


def test_a_file_with_several_labels_is_split_by_read_captures(tmp_path: Path) -> None:
    events = [
        _x("user_annotation", "capture_16_DECODE", 90, 50), *_window(100, 16, 1),
        _x("user_annotation", "capture_8_DECODE", 190, 50), *_window(200, 8, 2),
    ]
    path = _write(tmp_path / "cuda_graph_capture-DecodeRunner-TP-1.json.gz", events)
    whole = read_capture(path)
    assert whole.size is None and len(whole.roots) == 2 and whole.rank == 1
    parts = read_captures(path)
    assert [(p.size, p.mode, len(p.roots)) for p in parts] == [(8, "DECODE", 1),
                                                               (16, "DECODE", 1)]
    assert parts[0].roots[0].launches[0].dims == ((8, 64), (64, 128))


def test_an_unlabelled_single_file_is_split_per_window(tmp_path: Path) -> None:
    events = [*_window(100, 16, 1), *_window(200, 8, 2)]
    path = _write(tmp_path / "cuda_graph_capture-DecodeRunner-TP-0.json.gz", events)
    parts = read_captures(path)
    assert [(p.size, p.mode) for p in parts] == [(16, "FULL"), (8, "FULL")]
    assert "window 1 of 2" in parts[0].size_from


def test_hostile_values_are_bounded_not_trusted(tmp_path: Path) -> None:
    huge = "k" * 100_000
    events = [
        _x("cuda_runtime", "cudaStreamBeginCapture", 0, 1),
        _op(2, 10, "x" * 5000, 5, [[True, 3], "nope", [[1, 2], [3, "a"]], [1] * 100, 10**80,
                                   [[[1]]]], types=[1, "float", None]),
        _launch(3, huge, 5, grid=["1", 2, 3], block="lots", stream=2.0),
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": "soon", **T},
        {"cat": 5, "name": "x"}, ["not", "an", "event"], None,
        {"ph": "X", "cat": "cpu_op", "name": {"a": 1}, "ts": 1, **T},
        _x("cuda_runtime", "cudaStreamEndCapture", 20, 1),
    ]
    cap = read_capture(_write(tmp_path / "bs_2_rank0.json.gz", events))
    (launch,) = cap.roots[0].launches
    assert len(launch.kernel) < 20_000 and launch.kernel.startswith("kkkk")
    assert launch.op is not None and len(launch.op) <= 512
    assert launch.grid is None and launch.block is None and launch.stream == 2
    assert launch.dims == ((), (), ((1, 2), ()), (), (), ((),))
    assert launch.types == ("", "float", "")


def test_memory_bounds_drop_dims_or_refuse_the_file(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import roofline_tui.importers.capture as capture

    path = _write(tmp_path / "bs_8_rank0.json.gz", _window(100, 8, 1) + _window(200, 9, 2))
    monkeypatch.setattr(capture, "MAX_SIG_CELLS", 8)
    cap = read_capture(path)
    assert any("Input Dims signature" in n for n in cap.notes)
    assert sum(1 for r in cap.roots for launch in r.launches if launch.dims is None) > 1
    monkeypatch.setattr(capture, "MAX_NAME_CHARS", 20)
    with pytest.raises(ImportProblem, match="distinct names"):
        read_capture(path)


def test_unpaired_capture_calls_are_noted(tmp_path: Path) -> None:
    events = [
        _x("cuda_runtime", "cudaStreamEndCapture", 1, 1),
        *_window(100, 8, 1),
        _x("cuda_runtime", "cudaStreamBeginCapture", 500, 1),
    ]
    cap = read_capture(_write(tmp_path / "bs_8_rank0.json.gz", events))
    assert len(cap.roots) == 1
    assert any("never began" in n for n in cap.notes)
    assert any("never ended" in n for n in cap.notes)
    empty = read_capture(_write(tmp_path / "bs_4_rank0.json.gz", [_launch(1, "k", 1)]))
    assert empty.roots == () and any("no StreamBeginCapture" in n for n in empty.notes)


# ---------------------------------------------------------------------------------------------
# discovery
# ---------------------------------------------------------------------------------------------


def _source(tmp_path: Path) -> Path:
    """A real capture file to link to, or a small synthetic one without the shared folder."""
    if SGLANG_CAPTURE.exists():
        return SGLANG_CAPTURE
    return _write(tmp_path / "source.json.gz", _window(100, 32, 1))


def _link(src: Path, dst: Path) -> Path:
    dst.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(src, dst)
    return dst


def test_discover_vllm_layout(tmp_path: Path) -> None:
    src = _source(tmp_path)
    root = tmp_path / "vllm"
    exec_trace = _link(src, root / "dp0_pp0_tp0_dcp0_ep0_rank0.1773.pt.trace.json.gz")
    want = [
        _link(src, root / "capture_traces" / "graph_capture_rank_0.1773709742.pt.trace.json.gz"),
        _link(src, root / "capture_traces" / "graph_capture_rank_0_encoder.17.pt.trace.json"),
    ]
    _link(src, root / "capture_traces" / "notes.json.gz")  # not a capture name
    (root / "capture_traces" / "graph_capture_rank_1.1.pt.trace.json.gz").mkdir()  # a directory
    os.symlink(root / "gone", root / "capture_traces" / "graph_capture_rank_2.1.pt.trace.json")
    assert discover_captures(exec_trace) == sorted(want)
    # the same folder is found from an execution trace one level down
    nested = _link(src, root / "step_traces" / "exec.pt.trace.json.gz")
    assert discover_captures(nested) == sorted(want)


def test_discover_sglang_layouts(tmp_path: Path) -> None:
    src = _source(tmp_path)
    root = tmp_path / "sglang"
    exec_trace = _link(src, root / "1754-TP-0.trace.json.gz")
    want = [
        _link(src, root / "capture_traces" / "bs_32_rank0.json.gz"),
        _link(src, root / "capture_traces" / "bs_8_rank0.json.gz"),
        _link(src, root / "graph_capture_profile" / "DecodeCudaGraphRunner_bs_32_rank0.json.gz"),
        _link(src, root / "graph_capture_profile" /
              "cuda_graph_capture-DecodeCudaGraphRunner-TP-0.json.gz"),
    ]
    if hasattr(os, "mkfifo"):
        os.mkfifo(root / "capture_traces" / "bs_16_rank0.json.gz")  # not a regular file
    assert discover_captures(exec_trace) == sorted(want)
    got = [read_capture(p) for p in discover_captures(exec_trace)]
    assert all(c.roots for c in got)


def test_discover_atom_layout(tmp_path: Path) -> None:
    src = _source(tmp_path)
    rank_dir = tmp_path / "atom" / "rank_0"
    exec_trace = _link(src, rank_dir / "Qwen3_ts_20260801_101010_123.pt.trace.json.gz")
    want = [
        _link(src, rank_dir / "capture_traces" / "bs_32_q_1_rank0.json.gz"),
        _link(src, rank_dir / "capture_traces" / "bs_4_rank0.json.gz"),
    ]
    _link(src, tmp_path / "atom" / "rank_1" / "capture_traces" / "bs_4_rank1.json.gz")
    assert discover_captures(exec_trace) == sorted(want)
    assert discover_captures(tmp_path / "elsewhere" / "x.json.gz") == []


# ---------------------------------------------------------------------------------------------
# choosing the capture for a step
# ---------------------------------------------------------------------------------------------


def _root(n: int = 3) -> CaptureRoot:
    launch = CapturedLaunch("k", 0.0, None, None, None, None, None, None, "none", None)
    return CaptureRoot(launches=(launch,) * n, thread=(1, 1))


def _cap(size: int | None, mode: str, roots: int = 1, rank: int | None = 0,
         name: str | None = None) -> CaptureFile:
    return CaptureFile(path=Path(name or f"capture_{size}_{mode}.json.gz"), size=size, mode=mode,
                       size_from="test", rank=rank, roots=tuple(_root() for _ in range(roots)),
                       notes=())


def test_choose_the_smallest_size_at_least_the_steps() -> None:
    caps = [_cap(8, "FULL"), _cap(16, "FULL"), _cap(32, "FULL"), _cap(8192, "PIECEWISE", 3)]
    got = choose_capture(caps, 10, 1)
    assert not isinstance(got, str) and got[0].size == 16 and len(got[1]) == 1
    got = choose_capture(caps, 16, 1)
    assert not isinstance(got, str) and got[0].size == 16
    too_big = choose_capture(caps, 33, 1)
    assert isinstance(too_big, str) and "32" in too_big and "33" in too_big


def test_choose_piecewise_for_several_graph_launches() -> None:
    caps = [_cap(32, "FULL"), _cap(512, "PIECEWISE", 3), _cap(8192, "PIECEWISE", 3)]
    got = choose_capture(caps, 100, 3)
    assert not isinstance(got, str)
    assert got[0].size == 512 and got[1] == list(got[0].roots)
    assert isinstance(choose_capture(caps, 100, 2), str)  # 3 windows for 2 launches: refused
    assert isinstance(choose_capture([_cap(32, "FULL")], 8, 3), str)  # no PIECEWISE capture


def test_choose_respects_subsystem_rank_and_unknowns() -> None:
    caps = [_cap(8, "FULL"), _cap(64, "draft_FULL"), _cap(16, "DECODE", rank=1, name="a"),
            _cap(16, "DECODE", rank=0, name="b")]
    got = choose_capture(caps, 8, 1, subsystem="draft")
    assert not isinstance(got, str) and got[0].mode == "draft_FULL"
    got = choose_capture(caps, 9, 1, rank=1)
    assert not isinstance(got, str) and got[0].path == Path("a")
    assert isinstance(choose_capture(caps, None, 1), str)
    assert isinstance(choose_capture(caps, 8, 0), str)
    assert isinstance(choose_capture([_cap(None, "FULL")], 8, 1), str)
    assert isinstance(choose_capture([_cap(8, "FULL", roots=2)], 8, 1), str)
    assert isinstance(choose_capture([], 8, 1), str)


# ---------------------------------------------------------------------------------------------
# alignment on small lists
# ---------------------------------------------------------------------------------------------


def test_align_positional() -> None:
    got = align(["a", "b", "a"], ["a", "b", "a"])
    assert isinstance(got, Alignment)
    assert (got.how, got.index, got.unmatched_captured) == ("positional", (0, 1, 2), 0)


def test_align_greedy_scan_skips_extra_capture_launches_only() -> None:
    got = align(["a", "x", "b", "c", "y", "a"], ["a", "b", "c", "a"])
    assert isinstance(got, Alignment)
    assert (got.how, got.index, got.unmatched_captured) == ("greedy scan", (0, 2, 3, 5), 2)
    # the replay has a kernel the capture lacks (in that order): no guess
    assert isinstance(align(["a", "b", "c", "e"], ["a", "d"]), str)
    assert isinstance(align(["a", "b", "c"], ["c", "a"]), str)
    # more replayed kernels than captured launches
    assert isinstance(align(["a", "b"], ["a", "b", "b"]), str)


def test_align_by_name_when_only_the_order_differs() -> None:
    got = align(["act", "mm", "act", "norm"], ["mm", "act", "act", "norm"])
    assert isinstance(got, Alignment)
    assert got.how == "by name" and got.index == (1, 0, 2, 3)
    # equal counts, different per-name counts: a reason
    reason = align(["a", "b", "c"], ["a", "b", "d"])
    assert isinstance(reason, str) and "differ" in reason


def test_align_memcpy_and_memset_wildcards() -> None:
    captured = ["hipMemcpyAsync", "k", "hipMemsetAsync", "cudaMemsetAsync"]
    replayed = ["Memcpy DtoD (Device -> Device)", "k", "__amd_rocclr_fillBufferAligned",
                "Memset (Device)"]
    got = align(captured, replayed)
    assert isinstance(got, Alignment) and got.how == "positional"
    assert isinstance(align(["hipMemcpyAsync"], ["Memset (Device)"]), str)


def test_align_refuses_empty_inputs() -> None:
    assert isinstance(align([], ["a"]), str)
    assert isinstance(align(["a"], []), str)


def test_align_multi_stream_fifo() -> None:
    # the capture issued a, b, c, d in CPU order; b and d ran on a second stream, so the replay
    # (in ts order) interleaves them differently
    captured = ["a", "b", "c", "d"]
    replayed = ["b", "a", "d", "c"]
    streams = [1, 0, 1, 0]
    got = align(captured, replayed, replayed_streams=streams)
    assert isinstance(got, Alignment) and got.how == "per-stream FIFO"
    assert got.index == (1, 0, 3, 2)
    # a tie (both streams start with "x") goes to the stream whose run matches longest
    got = align(["x", "y", "x", "z"], ["x", "x", "y", "z"], replayed_streams=[0, 1, 1, 0])
    assert isinstance(got, Alignment)
    assert got.index == (2, 0, 1, 3)
    # a launch no stream has next, or kernels left over: reasons
    assert isinstance(align(["a", "q"], ["a", "b"], replayed_streams=[0, 1]), str)
    assert isinstance(align(["a"], ["a", "b"], replayed_streams=[0, 1]), str)
    assert isinstance(align(["a"], ["a"], replayed_streams=[0, 1]), str)
    # one stream only: the single-stream cascade
    single = align(["a", "b"], ["a", "b"], replayed_streams=[3, 3])
    assert isinstance(single, Alignment) and single.how == "positional"


def test_parse_label() -> None:
    assert parse_label("capture_32_FULL") == (32, "FULL")
    assert parse_label("capture_8192_PIECEWISE") == (8192, "PIECEWISE")
    assert parse_label("capture_32_draft_FULL") == (32, "draft_FULL")
    assert parse_label("capture_32_DECODE") == (32, "DECODE")
    assert parse_label("capture_graph_bs_16") == (16, "GRAPH")
    for other in ("capture_32", "ProfilerStep#1", "xcapture_32_FULL", 5, None, "capture_x_FULL"):
        assert parse_label(other) is None


# ---------------------------------------------------------------------------------------------
# the capture files of one import, bounded in total (issue 36 item 6: two 2 GiB gzip bombs in
# capture_traces/, each within the per-file bound, added 17 s to an import)
# ---------------------------------------------------------------------------------------------

MiB = 1 << 20


def _bomb(path: Path, mib: int) -> Path:
    """A valid, empty chrome trace of ``mib`` MiB once decompressed, a few KiB compressed."""
    body = b'{"traceEvents": [' + b" " * (mib * MiB) + b"]}"
    path.write_bytes(gzip.compress(body, compresslevel=9))
    return path


def _bombs(folder: Path, n: int, mib: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    return [_bomb(folder / f"graph_capture_rank_0.{900 + k}.pt.trace.json.gz", mib)
            for k in range(n)]


def test_the_capture_files_of_one_import_are_bounded_in_decompressed_bytes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three bombs of 6 MiB each against a total of 10 MiB: the first is read (6 MiB), the
    second passes the bound at its 5th MiB and is left out with the third, in one note."""
    from roofline_tui.importers import capture

    monkeypatch.setattr(capture, "MAX_TOTAL_TEXT_BYTES", 10 * MiB)
    paths = _bombs(tmp_path, 3, 6)
    notes: list[str] = []
    files = capture.read_capture_files(paths, notes)
    assert [f.path for f in files] == paths[:1]
    (said,) = [n for n in notes if "bounded in total" in n]
    assert "10 MiB of decompressed text" in said and "after 1 of 3 file(s), 6 MiB read" in said
    assert f"{paths[1].name} and 1 more not read" in said
    # the next import starts afresh
    again: list[str] = []
    assert len(capture.read_capture_files(paths[:1], again)) == 1 and again == []


def test_the_capture_files_of_one_import_are_bounded_in_reading_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The time bound runs on our own work (the reading thread's CPU time), not the wall: a
    clock standing in for it moves 1 s per look; 5 s allowed."""
    from roofline_tui.importers import capture

    ticks = iter(range(10**6))
    monkeypatch.setattr(capture, "WORK_CLOCK", lambda: float(next(ticks)))
    monkeypatch.setattr(capture, "MAX_TOTAL_SECONDS", 5.0)
    paths = _bombs(tmp_path, 2, 2)
    notes: list[str] = []
    assert capture.read_capture_files(paths, notes) == []
    (said,) = [n for n in notes if "bounded in total" in n]
    assert "(more than 5 s of reading) after 0 of 2 file(s)" in said


def test_bombs_beside_a_trace_cost_the_import_only_the_bound(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The import end to end: the real vLLM capture (32.5 MiB decompressed) is read and shapes
    all 421 replayed kernels; the first bomb discovered after it passes the total bound (40
    MiB here) and is left out with the other two, which the import's notes state."""
    import shutil

    from roofline_tui.importers import capture
    from roofline_tui.importers.torch import TorchOptions, import_torch

    # (raising=False: on a tree without the bound the test fails on what the import says)
    monkeypatch.setattr(capture, "MAX_TOTAL_TEXT_BYTES", 40 * MiB, raising=False)
    run = tmp_path / "run"
    trace = run / "exec.pt.trace.json.gz"
    folder = run / "capture_traces"
    folder.mkdir(parents=True)
    shutil.copyfile(need(VLLM_EXEC), trace)
    shutil.copyfile(need(VLLM_CAPTURE), folder / "graph_capture_rank_0.123.pt.trace.json.gz")
    _bombs(folder, 3, 16)
    doc = import_torch(trace, TorchOptions(top=10000), progress=False).doc
    shaped = sum(e.get("x_roofline", {}).get("capture_shaped_calls", 0)
                 for e in doc["top_kernels"])
    assert shaped == 421
    (said,) = [n for n in doc["notes"] if "bounded in total" in n]
    assert "after 1 of 4 file(s), 32.5 MiB read" in said
    assert "graph_capture_rank_0.900.pt.trace.json.gz and 2 more not read" in said
