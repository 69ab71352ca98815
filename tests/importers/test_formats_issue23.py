"""Issue 23's file forms: nsys cuda_gpu_trace CSV, rocprofv3 memory copies by direction, the
rocprofv3 --summary text, and a non-GPU (MTIA) Kineto trace."""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from pathlib import Path

import pytest

from roofline_tui.importers.common import ImportProblem
from roofline_tui.importers.nsys import import_nsys
from roofline_tui.importers.rocprof import import_rocprofv3
from tests.paths import FIXTURES

from .conftest import REAL, need, run_cli

NSYS_FIX = FIXTURES / "nsys_formats"
GPU_TRACE = NSYS_FIX / "cuda_gpu_trace_two_gpus.csv"


def _gpu_trace_rows() -> list[dict[str, str]]:
    lines = GPU_TRACE.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Start (ns)"))
    return list(csv.DictReader(io.StringIO("\n".join(lines[start:]))))


def test_cuda_gpu_trace_is_summed_per_kernel_with_its_geometry(tmp_path: Path) -> None:
    rows = _gpu_trace_rows()
    per_dev: dict[str, float] = defaultdict(float)
    per_kernel: dict[str, list[int]] = defaultdict(list)
    for r in rows:
        per_dev[r["Device"]] += int(r["Duration (ns)"])
        if r["Device"].endswith("(0)") and r["GrdX"]:
            per_kernel[r["Name"]].append(int(r["Duration (ns)"]))
    res = import_nsys(GPU_TRACE, top=100)
    doc = res.doc
    dev0 = next(d for d in per_dev if d.endswith("(0)"))
    assert "using device 0" in res.device_message
    assert doc["total_gpu_time_ms"] == pytest.approx(per_dev[dev0] / 1e6, abs=1e-4)
    assert doc["num_kernel_launches"] == sum(1 for r in rows if r["Device"] == dev0)
    gemm_name = max(per_kernel, key=lambda n: sum(per_kernel[n]))
    head = doc["top_kernels"][0]
    assert head["name"] == gemm_name and head["calls"] == len(per_kernel[gemm_name])
    assert head["classification"] == "library_gemm"
    grids = sorted(i["grid"] for i in head["x_roofline"]["instances"])
    assert grids == [[66, 1, 1], [132, 1, 1]]  # the two launch geometries, apart
    names = {k["name"]: k for k in doc["top_kernels"]}
    assert names["Memcpy HtoD"]["calls"] == 2 and names["Memcpy DtoH"]["calls"] == 1
    assert names["Memset"]["calls"] == 1
    assert res.device_info is not None and res.device_info.arch == "sm_90"
    other = import_nsys(GPU_TRACE, device_index=1).doc
    assert other["num_kernel_launches"] == 2
    # both GPUs ran kernels: each entry's time per launch across them, from the rows above
    per_launch: dict[tuple[str, str], list[int]] = defaultdict(list)
    for r in rows:
        per_launch[(r["Name"], r["Device"][-2])].append(int(r["Duration (ns)"]))
    mean = {k: sum(v) / len(v) / 1000.0 for k, v in per_launch.items()}
    spread = head["x_roofline"]["ranks"]
    on0, on1 = mean[(gemm_name, "0")], mean[(gemm_name, "1")]
    assert spread["ranks"] == 2 and spread["slowest_rank"] == (0 if on0 > on1 else 1)
    assert spread["min_us"] == pytest.approx(min(on0, on1), abs=1e-3)
    assert spread["max_us"] == pytest.approx(max(on0, on1), abs=1e-3)
    assert doc["x_roofline"]["ranks"]["unit"] == "device"
    assert names["Memset"]["x_roofline"]["ranks"]["ranks"] == 1  # only GPU 0 ran one


def test_cuda_gpu_trace_cli(tmp_path: Path) -> None:
    proc = run_cli("nsys", GPU_TRACE, "--out", tmp_path / "r", "--device-index", "1")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((tmp_path / "r" / "profile_topN.json").read_text())
    assert doc["num_kernel_launches"] == 2 and doc["source"] == "nsys"


# ------------------------------------------------------------------ rocprofv3 memory copies

COPY_HEAD = ('"Kind","Direction","Stream_Id","Source_Agent_Id","Destination_Agent_Id",'
             '"Correlation_Id","Start_Timestamp","End_Timestamp"\n')


def _copies(tmp: Path, rows: list[tuple[str, int, int, int, int]],
            agent_info: bool = False, name: str = "memory_copy_trace.csv") -> Path:
    p = tmp / name
    body = "".join(f'"MEMORY_COPY","{d}",0,"Agent {s}","Agent {t}",{i},{a},{b}\n'
                   for i, (d, s, t, a, b) in enumerate(rows))
    p.write_text(COPY_HEAD + body)
    if agent_info:
        (tmp / "agent_info.csv").write_text(
            '"Node_Id","Logical_Node_Id","Agent_Type","Name"\n0,0,"CPU","AMD EPYC"\n'
            '1,1,"GPU","gfx942"\n2,2,"GPU","gfx942"\n')
    return p


def test_copies_are_charged_to_the_gpu_by_their_direction(tmp_path: Path) -> None:
    # agent 0 is the CPU; H2D lands on GPU 1, D2H leaves GPU 1: both are GPU 1's copy time
    p = _copies(tmp_path, [("MEMORY_COPY_HOST_TO_DEVICE", 0, 1, 0, 3000),
                           ("MEMORY_COPY_HOST_TO_DEVICE", 0, 1, 5000, 8000),
                           ("MEMORY_COPY_DEVICE_TO_HOST", 1, 0, 9000, 11000),
                           ("MEMORY_COPY_DEVICE_TO_DEVICE", 2, 1, 12000, 12500)])
    res = import_rocprofv3([p])
    assert res.device_message == "agent 1"  # one device: the CPU agent never appears
    names = {k["name"]: k for k in res.doc["top_kernels"]}
    assert names["Memcpy HtoD"]["calls"] == 2
    assert names["Memcpy HtoD"]["total_ms"] == pytest.approx(0.006)
    assert names["Memcpy DtoH"]["total_ms"] == pytest.approx(0.002)
    assert names["Memcpy DtoD"]["calls"] == 1
    assert res.doc["total_gpu_time_ms"] == pytest.approx(0.0085)


def test_copy_direction_from_agent_types_when_the_row_has_none(tmp_path: Path) -> None:
    p = _copies(tmp_path, [("", 1, 0, 0, 4000), ("", 0, 2, 0, 1000)], agent_info=True)
    res = import_rocprofv3([p])
    assert "using agent 1" in res.device_message  # GPU 1 (4 µs) over GPU 2 (1 µs), not CPU 0
    assert [k["name"] for k in res.doc["top_kernels"]] == ["Memcpy DtoH"]
    res2 = import_rocprofv3([p], device_index=2)
    assert [k["name"] for k in res2.doc["top_kernels"]] == ["Memcpy HtoD"]


# --------------------------------------------------------------------- rocprofv3 --summary

SUMMARY = REAL / "wild" / "rocm-systems_docs_rocprofv3_summary.txt"


def _summary_kernels(text: str) -> list[tuple[str, int, int]]:
    lines = text.splitlines()
    at = lines.index("ROCPROFV3 KERNEL_DISPATCH SUMMARY:")
    out = []
    for line in lines[at + 4:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        out.append((cells[0], int(cells[2]), int(cells[3])))
    return out


def test_rocprofv3_summary_kernel_table() -> None:
    path = need(SUMMARY)
    rows = _summary_kernels(path.read_text())
    doc = import_rocprofv3([path], top=100).doc
    assert doc["num_kernel_launches"] == sum(r[1] for r in rows)
    assert doc["total_gpu_time_ms"] == pytest.approx(sum(r[2] for r in rows) / 1e6, abs=1e-4)
    top = max(rows, key=lambda r: r[2])
    assert doc["top_kernels"][0]["name"] == top[0]
    assert doc["top_kernels"][0]["calls"] == top[1]


def test_summary_without_kernel_table_is_named(tmp_path: Path) -> None:
    p = tmp_path / "summary.txt"
    p.write_text("ROCPROFV3 HIP_API SUMMARY:\n\n| NAME | DOMAIN | CALLS | DURATION (nsec) |\n"
                 "|---|---|---|---|\n| hipMalloc | HIP_API | 1 | 10 |\n")
    with pytest.raises(ImportProblem, match="without a KERNEL_DISPATCH table .tables: HIP_API."):
        import_rocprofv3([p])


# ------------------------------------------------------------------------------ MTIA trace

def test_mtia_trace_is_named_not_cpu_only(tmp_path: Path) -> None:
    proc = run_cli("torch", NSYS_FIX / "mtia_device_events_tiny.json", "--out", tmp_path / "r")
    assert proc.returncode == 1
    line = proc.stderr.strip()
    assert line.endswith("no GPU events: 3 events of an MTIA device; this tool models GPU "
                         "kernels (CUDA or ROCm)")
    assert "CPU-only" not in line
