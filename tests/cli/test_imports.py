from __future__ import annotations

import json
from pathlib import Path

import pytest

from roofline_tui.importers.synth import SynthSpec, write_trace
from tests.importers.conftest import REAL, need


def _one_error_line(proc) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0]


def test_cli_torch_success(cli, tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "t.json.gz", SynthSpec())
    out = tmp_path / "round_0"
    proc = cli("torch", trace, "--out", out, "--isl", "1024", "--osl", "128", "--conc", "8",
               "--top", "3")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("wrote ") and "top: " in lines[0]
    # the synthetic trace names no real device: nothing recorded, and the reason is said
    assert "no env_report.json written" in proc.stdout
    assert not (out / "env_report.json").exists()
    # no env_report was written (the device is unknown), so the command names --device itself
    assert f"next: roofline analyze {out} --device NAME" in lines
    doc = json.loads((out / "profile_topN.json").read_text())
    assert len(doc["top_kernels"]) == 3 and doc["serving"]["n_decode_steps"] == 6


def test_cli_torch_mixed_devices_says_which(cli, tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "t.json", SynthSpec(extra_device=1))
    proc = cli("torch", trace, "--out", tmp_path / "r")
    assert proc.returncode == 0
    assert "using device 0" in proc.stdout
    proc = cli("torch", trace, "--out", tmp_path / "r1", "--device-index", "1")
    assert proc.returncode == 0
    assert "device 1 chosen" in proc.stdout


def test_cli_rocprofv3_and_nsys(cli, tmp_path: Path) -> None:
    kt = need(REAL / "rocprofv3" / "rocm-systems_rocprof-compute_MI300A_vecCopy_kernel_trace.csv")
    proc = cli("rocprofv3", kt, "--out", tmp_path / "a")
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "a" / "profile_topN.json").read_text())["source"] == "rocprofv3"
    ns = need(REAL / "nsys" / "polyfhe_cuda_gpu_kern_sum_phantom-L36.csv")
    proc = cli("nsys", ns, "--out", tmp_path / "b", "--top", "5")
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads((tmp_path / "b" / "profile_topN.json").read_text())["top_kernels"]) == 5


def _truncated_json(tmp: Path) -> Path:
    src = write_trace(tmp / "full.json", SynthSpec())
    data = src.read_text()
    p = tmp / "trunc.json"
    p.write_text(data[: int(len(data) * 0.6)])
    return p


def _no_gpu(tmp: Path) -> Path:
    p = tmp / "nogpu.json"
    p.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]}))
    return p


def _empty(tmp: Path) -> Path:
    p = tmp / "empty.json"
    p.write_text("")
    return p


def _unknown_cols(tmp: Path) -> Path:
    p = tmp / "kernel_trace.csv"
    p.write_text("a,b,c\n1,2,3\n")
    return p


def _truncated_csv(tmp: Path) -> Path:
    src = REAL / "rocprofv3" / "rocprofiler-sdk_docs_kernel_trace_2024-09.csv"
    text = src.read_text()
    p = tmp / "kt.csv"
    p.write_text(text[: len(text) - 40])
    return p


def _nsys_unknown(tmp: Path) -> Path:
    p = tmp / "k.csv"
    p.write_text("Generating SQLite file\nName,Calls\nfoo,3\n")
    return p


def _nsys_empty(tmp: Path) -> Path:
    p = tmp / "k.csv"
    p.write_text("\n\n")
    return p


@pytest.mark.parametrize(
    ("kind", "make", "needle"),
    [
        ("torch", _truncated_json, "truncated"),
        ("torch", _no_gpu, "no GPU events"),
        ("torch", _empty, "empty"),
        ("rocprofv3", _unknown_cols, "not a kernel trace"),
        ("rocprofv3", _empty, "empty"),
        ("nsys", _nsys_unknown, "no kernel table header"),
        ("nsys", _nsys_empty, "empty"),
    ],
)
def test_cli_bad_input_exits_1_with_one_line_and_writes_nothing(cli, tmp_path: Path, kind: str,
                                                                 make, needle: str) -> None:
    src = make(tmp_path)
    out = tmp_path / "round_0"
    proc = cli(kind, src, "--out", out)
    assert proc.returncode == 1
    line = _one_error_line(proc)
    assert needle in line
    assert proc.stdout == ""
    assert not out.exists() or not any(out.iterdir())


def test_cli_bad_input_keeps_an_existing_topn_intact(cli, tmp_path: Path) -> None:
    out = tmp_path / "round_0"
    good = write_trace(tmp_path / "t.json", SynthSpec())
    assert cli("torch", good, "--out", out).returncode == 0
    before = (out / "profile_topN.json").read_text()
    proc = cli("torch", _truncated_json(tmp_path), "--out", out)
    assert proc.returncode == 1
    assert (out / "profile_topN.json").read_text() == before
    assert sorted(p.name for p in out.iterdir()) == ["profile_topN.json", "profile_topN.md"]


def test_cli_missing_file(cli, tmp_path: Path) -> None:
    proc = cli("torch", tmp_path / "nope.json", "--out", tmp_path / "r")
    assert proc.returncode == 1
    assert "not found" in _one_error_line(proc)
