"""Issue 23: `nsys profile --stats=true` console dumps, nsys 2022 GridXYZ/BlockXYZ columns,
rocprofv3 --stats files of other domains and rocpd2csv API traces, on the real files in
``real-formats/wild``.

Expected numbers come from the raw text, read here with a regex of our own (never from what
the importer produced); the arithmetic is written out in each docstring.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from roofline_tui.importers.common import ImportProblem
from roofline_tui.importers.nsys import import_nsys
from roofline_tui.importers.rocprof import import_rocprofv3
from tests.paths import REAL_FORMATS

WILD = REAL_FORMATS / "wild"

# one console row: Time (%), Total Time, Instances, Avg, Med, Min, Max, StdDev, [grid, block], Name
_ROW = re.compile(r"^\s*[\d.]+\s+(?P<total>[\d,]+)\s+(?P<calls>[\d,]+)\s+(?:[\d.,]+\s+){5}"
                  r"(?P<xyz>(?:\d+\s+){6})?(?P<name>\S.*?)\s*$")


def _wild(name: str) -> Path:
    path = WILD / name
    if not path.is_file():
        pytest.skip(f"{name} not present")
    return path


def _kernel_rows(path: Path, report: str) -> list[tuple[str, int, int]]:
    """(name, total ns, calls) of the table after ``Executing '<report>' stats report``."""
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if f"Executing '{report}' stats report" in line)
    dashes = next(i for i in range(start, len(lines)) if lines[i].strip().startswith("---"))
    out = []
    for line in lines[dashes + 1:]:
        if not line.strip():
            break
        m = _ROW.match(line)
        assert m, line
        out.append((m["name"], int(m["total"].replace(",", "")), int(m["calls"].replace(",", ""))))
    return out


def _refusal(call: object) -> str:
    with pytest.raises(ImportProblem) as info:
        call()  # type: ignore[operator]
    return str(info.value)


def test_nvtx_first_console_takes_the_kernel_report() -> None:
    """ayush: nvtx_sum is the first table ([3/8]); the kernel report is [6/8], one row:
    vectorAdd, 1,010 instances, 1,831,281 ns = 1.831281 ms."""
    path = _wild("ayush_nsys_profile_stats_console_A100_nvtx_first.txt")
    rows = _kernel_rows(path, "cuda_gpu_kern_sum")
    assert rows == [("vectorAdd(const float *, const float *, float *, int)", 1_831_281, 1_010)]
    doc = import_nsys(path, top=100).doc
    assert doc["num_kernel_launches"] == 1_010
    assert doc["total_gpu_time_ms"] == pytest.approx(1.831281, abs=1e-4)
    assert [k["name"] for k in doc["top_kernels"]] == [rows[0][0]]
    assert doc["top_kernels"][0]["calls"] == 1_010


def test_osrt_first_console_has_no_os_calls_as_kernels() -> None:
    """dsmc: osrt_sum (poll 81.3 s, ioctl, sem_wait...) comes first; the kernel report has 12
    rows. Summed: 22,310,262,796 + 18,560,268,551 + 12,217,086,973 + 9,659,253,796
    + 8,556,114,794 + 2,765,319,421 + 2,457,284,211 + 1,385,059,739 + 780,744,728 + 576,886,900
    + 7,574,007 + 2,895,661 = 79,278,751,577 ns (79,278.751577 ms); calls: six kernels of
    2,000 (no_time_counter_scheme, move_particles, counting_sort_scatter, scatter_and_key,
    mark_valid, hss_scheme) = 12,000, + 12,001 + 100 + 4,000 + 1 + 4,000 + 1 = 32,103. Top: no_time_counter_scheme_kernel, 2,000 calls,
    22,310.262796 ms."""
    path = _wild("dsmc_nsys_profile_stats_console_osrt_first.txt")
    rows = _kernel_rows(path, "cuda_gpu_kern_sum")
    assert len(rows) == 12
    assert sum(r[1] for r in rows) == 79_278_751_577
    assert sum(r[2] for r in rows) == 32_103
    doc = import_nsys(path, top=100).doc
    assert doc["total_gpu_time_ms"] == pytest.approx(79_278.751577, abs=1e-4)
    assert doc["num_kernel_launches"] == 32_103
    top = doc["top_kernels"][0]
    assert top["name"].startswith("no_time_counter_scheme_kernel(")
    assert top["calls"] == 2_000
    assert top["total_ms"] == pytest.approx(22_310.262796, abs=1e-4)
    names = {k["name"] for k in doc["top_kernels"]}
    assert not names & {"poll", "ioctl", "sem_wait", "pthread_cond_wait"}


def test_nsys2022_gridxyz_blockxyz_are_not_in_names() -> None:
    """duanyzhi (nsys 2022 names: nvtxsum, cudaapisum, gpukernsum): four kernel rows, each
    with "gx gy gz bx by bz" before the name. Summed: 114,495 + 41,439 + 10,656 + 8,800
    = 175,390 ns (0.17539 ms); calls 11 + 1 + 1 + 1 = 14. Top: ampere_sgemm_32x32_sliced1x4_nn,
    11 calls, 114,495 ns, a cuBLAS GEMM."""
    path = _wild("duanyzhi_nsys2022_profile_stats_console_A100_gpukernsum_GridXYZ.txt")
    rows = _kernel_rows(path, "gpukernsum")
    assert [r[0] for r in rows][0] == "ampere_sgemm_32x32_sliced1x4_nn"
    assert sum(r[1] for r in rows) == 175_390
    assert sum(r[2] for r in rows) == 14
    doc = import_nsys(path, top=100).doc
    assert doc["total_gpu_time_ms"] == pytest.approx(0.17539, abs=1e-4)
    assert doc["num_kernel_launches"] == 14
    assert sorted(k["name"] for k in doc["top_kernels"]) == sorted(r[0] for r in rows)
    top = doc["top_kernels"][0]
    assert (top["name"], top["calls"]) == ("ampere_sgemm_32x32_sliced1x4_nn", 11)
    assert top["total_ms"] == pytest.approx(0.114495, abs=1e-4)
    assert top["classification"] == "library_gemm"


def test_gridxyz_rows_of_one_kernel_become_one_entry(tmp_path: Path) -> None:
    """The duanyzhi dump with mm_cuda_naive's row renamed to the sgemm kernel (as when one
    kernel runs with two grids): one entry, calls 11 + 1 = 12, time 114,495 + 41,439
    = 155,934 ns; the total stays 175,390 ns over 14 calls."""
    path = _wild("duanyzhi_nsys2022_profile_stats_console_A100_gpukernsum_GridXYZ.txt")
    text = path.read_text()
    naive = "mm_cuda_naive(float *, float *, float *, int, int, int)"
    assert text.count(naive) == 1
    two = tmp_path / "two_grids.txt"
    two.write_text(text.replace(naive, "ampere_sgemm_32x32_sliced1x4_nn"))
    doc = import_nsys(two, top=100).doc
    assert [k["name"] for k in doc["top_kernels"]].count("ampere_sgemm_32x32_sliced1x4_nn") == 1
    top = doc["top_kernels"][0]
    assert (top["name"], top["calls"]) == ("ampere_sgemm_32x32_sliced1x4_nn", 12)
    assert top["total_ms"] == pytest.approx(0.155934, abs=1e-4)
    assert doc["num_kernel_launches"] == 14
    assert doc["total_gpu_time_ms"] == pytest.approx(0.17539, abs=1e-4)


def test_console_without_a_kernel_report_is_refused(tmp_path: Path) -> None:
    """The ayush dump cut before its [6/8] kernel report: refused, naming what it holds."""
    text = _wild("ayush_nsys_profile_stats_console_A100_nvtx_first.txt").read_text()
    cut = tmp_path / "no_kernels.txt"
    cut.write_text(text[:text.index("[6/8]")])
    assert _refusal(lambda: import_nsys(cut)) == (
        "no_kernels.txt: no cuda_gpu_kern_sum report in this nsys dump (reports present: "
        "nvtx_sum, osrt_sum, cuda_api_sum); run `nsys stats --report cuda_gpu_kern_sum`")


def test_hip_api_stats_is_refused() -> None:
    path = _wild("rocm-systems_docs_hip_api_stats.csv")
    assert _refusal(lambda: import_rocprofv3([path])) == (
        "rocm-systems_docs_hip_api_stats.csv: a rocprofv3 --stats hip_api_stats.csv (HIP API "
        "calls), not kernels; import the kernel_stats.csv of the same --stats run instead")


def test_stats_domain_told_by_rows_when_the_name_says_nothing(tmp_path: Path) -> None:
    """hip_api_stats.csv's rows under a neutral name, and a domain_stats table (the
    rocm-systems docs' hip_domain_stats.csv row), are refused by their content."""
    api = tmp_path / "stats.csv"
    api.write_text(_wild("rocm-systems_docs_hip_api_stats.csv").read_text())
    assert _refusal(lambda: import_rocprofv3([api])) == (
        "stats.csv: a rocprofv3 --stats summary of HIP API calls (hip_api_stats.csv?), not "
        "kernels; import the kernel_stats.csv of the same --stats run instead")
    dom = tmp_path / "run1.csv"
    dom.write_text('"Name","Calls","TotalDurationNs","AverageNs","Percentage","MinNs","MaxNs",'
                   '"StdDev"\n"HIP_API",13,458514859,35270373.769231,100.00,2300,352276613,'
                   '99315857.546240\n')
    assert _refusal(lambda: import_rocprofv3([dom])) == (
        "run1.csv: a rocprofv3 --stats domain_stats.csv (time per tracing domain), not "
        "kernels; import the kernel_stats.csv of the same --stats run instead")


def test_kernel_stats_still_imports() -> None:
    """hpctraining kernel_stats.csv: the rows' TotalDurationNs and Calls summed (as in the
    corpus test) — kernel_stats.csv is the one --stats file accepted."""
    path = _wild("hpctraining_rocprofv3_MI300A_omp_kernel_stats.csv")
    lines = path.read_text().splitlines()[1:]
    cells = [re.findall(r'"[^"]*"|[^,]+', line) for line in lines if line.strip()]
    doc = import_rocprofv3([path], top=100).doc
    assert doc["num_kernel_launches"] == sum(int(c[1]) for c in cells)
    assert doc["total_gpu_time_ms"] == pytest.approx(sum(int(c[2]) for c in cells) / 1e6,
                                                     abs=1e-4)


def test_rocpd2csv_api_trace_is_refused() -> None:
    path = _wild("rocm-systems_docs_rocpd2csv_api_trace.csv")
    assert _refusal(lambda: import_rocprofv3([path])) == (
        "rocm-systems_docs_rocpd2csv_api_trace.csv: a rocpd2csv API trace (HIP_COMPILER_API_EXT, "
        "HIP_RUNTIME_API_EXT: one row per API call, no kernels), not a kernel trace; import the "
        "kernel trace CSV of the same run instead (rocpd2csv writes it as *_kernel_trace.csv)")
