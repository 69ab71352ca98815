"""The sniffer table (importers/sniff.py): one test per row, each on a small file of that kind,
and every `roofline import` command naming another tool's file instead of failing to decode it."""

from __future__ import annotations

import gzip
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from roofline_tui.importers.sniff import NSYS, ROCPROF, RULES, TORCH, check, sniff

from .conftest import run_cli

Maker = Callable[[Path], Path]


def _text(name: str, body: str) -> Maker:
    def make(tmp: Path) -> Path:
        p = tmp / name
        p.write_text(body)
        return p
    return make


def _bytes(name: str, body: bytes) -> Maker:
    def make(tmp: Path) -> Path:
        p = tmp / name
        p.write_bytes(body)
        return p
    return make


def _db(name: str, *tables: str) -> Maker:
    def make(tmp: Path) -> Path:
        p = tmp / name
        con = sqlite3.connect(p)
        for t in tables:
            con.execute(f"CREATE TABLE {t} (x INTEGER)")
        con.commit()
        con.close()
        return p
    return make


NCU_HEAD = '"ID","Process ID","Process Name","Host Name","Kernel Name","Metric Name","Metric Value"\n'
# kind -> a file of that kind
SAMPLES: dict[str, Maker] = {
    "nsys-rep": _bytes("run.nsys-rep", b"\x00\x01NSYS\x00binary report"),
    "qdrep": _bytes("old.qdrep", b"\x00\x01QDREP\x00binary report"),
    "ncu-rep": _bytes("k.ncu-rep", b"\x0a\x10NVIDIA Nsight Compute\x00\x00"),
    "xplane": _bytes("tw003.xplane.pb", b"\x0a\xa1\xf0\x08\x12\x0e/host:metadata\x22\xbf"),
    "xplane-bytes": _bytes("profile.pb", b"\x0a\xa1\xf0\x08\x12\x0e/host:metadata\x22\xbf\x00"),
    "nsys-sqlite": _db("run.sqlite", "CUPTI_ACTIVITY_KIND_KERNEL", "StringIds"),
    "nsys-sqlite-nokernels": _db("cpu.sqlite", "TARGET_INFO_SESSION_START_TIME", "OSRT_API"),
    "rocpd": _db("run.db", "rocpd_kernel_dispatch", "rocpd_string"),
    "rocpd-views": _db("views.db", "kernels"),
    "sqlite": _db("other.db", "t"),
    "rocprofv3-json": _text("results.json", '{"rocprofiler-sdk-tool": [{"agents": []}]}'),
    "kineto": _text("t.json", '{"schemaVersion": 1, "traceEvents": []}'),
    "nsys-gpu-trace": _text("gpu_trace.csv", "Start (ns),Duration (ns),CorrId,GrdX,Name\n"
                                             "1,2,3,4,k\n"),
    "nsys-kern-sum": _text("kern.csv", "Time (%),Total Time (ns),Instances,Name\n50,1,1,k\n"),
    "nsys-console": _text("console.txt", "[3/8] Executing 'nvtx_sum' stats report\n\nx\n"),
    "rocprofv3-summary": _text("summary.txt", "\nROCPROFV3 HIP_API SUMMARY:\n\n| NAME |\n"),
    "nvprof": _text("nvprof.log", "==2119== NVPROF is profiling process 2119\n"),
    "ncu-log": _text("ncu.log", "app output\n==PROF== Connected to process 1\n" + NCU_HEAD),
    "ncu-csv": _text("ncu.csv", NCU_HEAD),
    "rocprofv3-counters": _text("cc.csv", '"Dispatch_Id","Kernel_Name","Counter_Name",'
                                          '"Counter_Value"\n1,k,SQ_WAVES,4\n'),
    "rocprof-compute-pmc": _text("pmc_perf.csv", "Dispatch_ID,Kernel_Name,GPU_ID,Grid_Size,"
                                                 "SQ_WAVES\n0,k,0,64,1\n"),
    "rocprofv3-kernel-trace": _text("kernel_trace.csv", '"Kind","Agent_Id","Kernel_Name",'
                                                        '"Start_Timestamp","End_Timestamp"\n'),
    "rocprofv3-memory-copy": _text("memory_copy_trace.csv", '"Kind","Direction",'
                                   '"Source_Agent_Id","Destination_Agent_Id"\n'),
    "rocprofv3-stats": _text("kernel_stats.csv", '"Name","Calls","TotalDurationNs"\n'),
    "rocprof-legacy": _text("results.csv", '"Index","KernelName","BeginNs","EndNs"\n'),
    "rocprof-pmc": _text("pmc.csv", "Index,KernelName,gpu-id,grd,FETCH_SIZE\n"),
}


def test_every_row_has_a_sample() -> None:
    assert sorted(SAMPLES) == sorted(r.kind for r in RULES)


@pytest.mark.parametrize("kind", [r.kind for r in RULES])
def test_row(kind: str, tmp_path: Path) -> None:
    path = SAMPLES[kind](tmp_path)
    rule = sniff(path)
    assert rule is not None and rule.kind == kind
    for reader in (NSYS, ROCPROF, TORCH):
        verdict = check(path, reader)
        if rule.reader == reader:
            assert verdict.refusal is None
        else:
            line = verdict.refusal
            assert line is not None and "\n" not in line
            assert line.startswith(f"{path.name}: {rule.what}, not for `roofline import "
                                   f"{reader}`; {rule.instead}")


def test_gzipped_text_is_sniffed_inflated(tmp_path: Path) -> None:
    p = tmp_path / "t.json.gz"
    p.write_bytes(gzip.compress(json.dumps({"traceEvents": []}).encode()))
    rule = sniff(p)
    assert rule is not None and rule.kind == "kineto"


def test_unknown_binary_is_named_binary(tmp_path: Path) -> None:
    p = tmp_path / "blob.csv"
    p.write_bytes(bytes(range(256)) * 8)
    assert sniff(p) is None
    line = check(p, NSYS).refusal
    assert line is not None and "binary data of a kind this tool does not know" in line


@pytest.mark.parametrize("command,kind,expected", [
    ("nsys", "nsys-rep", "nsys export --type sqlite"),
    ("torch", "nsys-rep", "nsys export --type sqlite"),
    ("rocprofv3", "nsys-rep", "nsys stats --report cuda_gpu_kern_sum"),
    ("torch", "ncu-rep", "roofline analyze --counters"),
    ("torch", "xplane", "a JAX/XLA profile"),
    ("torch", "nsys-sqlite", "import it with `roofline import nsys`"),
    ("nsys", "rocpd", "import it with `roofline import rocprofv3`"),
])
def test_every_import_command_names_other_tools_files(
        command: str, kind: str, expected: str, tmp_path: Path) -> None:
    path = SAMPLES[kind](tmp_path)
    proc = run_cli(command, path, "--out", tmp_path / "round")
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr and "UnicodeDecodeError" not in proc.stderr
    assert not (tmp_path / "round" / "profile_topN.json").exists()
