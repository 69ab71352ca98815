"""Issue 35 item 2: a SKIPPED line belongs to the report it was printed for, never to the next
report's table. Faithful miniatures of two console layouts (the tables' columns and numbers as
nsys prints them; rows cut to two kernels):

* ``nsys stats`` with ``** Title (report):`` banners only, where the NVTX report was skipped just
  before the kernel report's banner (the pattern of the public dump the issue quotes);
* nsys 2021's ``Running [/…/reports/x.py report1.sqlite]...`` announcements, one with its
  SKIPPED reason on the same line, one on the next line after the previous report's table.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from roofline_tui.importers.common import ImportProblem
from roofline_tui.importers.nsys import import_nsys

_KERNELS = """\
 Time (%)  Total Time (ns)  Instances  Avg (ns)  Med (ns)  Min (ns)  Max (ns)  StdDev (ns)  Name
 --------  ---------------  ---------  --------  --------  --------  --------  -----------  ----------------
     75.0          300,000        100   3,000.0   3,000.0     2,900     3,100         10.0  gemv_kernel
     25.0          100,000         50   2,000.0   2,000.0     1,900     2,100         10.0  softmax_kernel
"""

_API = """\
 Time (%)  Total Time (ns)  Num Calls  Avg (ns)  Med (ns)  Min (ns)  Max (ns)  StdDev (ns)  Name
 --------  ---------------  ---------  --------  --------  --------  --------  -----------  ----------------
    100.0        9,000,000        150  60,000.0  60,000.0    50,000    70,000        100.0  cudaLaunchKernel
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "stats_console.txt"
    path.write_text(text)
    return path


def _names_times(path: Path) -> list[tuple[str, float]]:
    doc = import_nsys(path).doc
    return [(k["name"], round(k["total_ms"] * 1000, 3)) for k in doc["top_kernels"]]


def test_banner_dump_skipped_nvtx_before_kernel_report(tmp_path: Path) -> None:
    """The NVTX banner's SKIPPED line is NVTX's; the kernel banner that follows starts its own
    report, whose table is read: 300,000 ns = 300 µs and 100,000 ns = 100 µs (was refused as
    "gpukernsum: SKIPPED: … NVTX …")."""
    text = (" ** NVTX Range Summary (nvtxsum):\n"
            "SKIPPED: report1.sqlite does not contain NV Tools Extension (NVTX) data.\n\n"
            " ** CUDA GPU Kernel Summary (gpukernsum):\n\n" + _KERNELS)
    assert _names_times(_write(tmp_path, text)) == [("gemv_kernel", 300.0),
                                                     ("softmax_kernel", 100.0)]


def test_running_markers_of_nsys_2021(tmp_path: Path) -> None:
    """``Running [...]`` lines announce each report: the API table is cudaapisum's (never read
    as kernels: 9,000,000 ns of cudaLaunchKernel would be 100 % otherwise), the inline SKIPPED
    is nvtxppsum's, and the kernel table is gpukernsum's: 300 µs + 100 µs."""
    reports = "/opt/nvidia/nsight-systems/2021.3.1/target-linux-x64/reports"
    text = (f"Using report1.sqlite for SQL queries.\n"
            f"Running [{reports}/cudaapisum.py report1.sqlite]... \n\n" + _API + "\n"
            f"Running [{reports}/nvtxppsum.py report1.sqlite]... SKIPPED: report1.sqlite does "
            "not contain NV Tools Extension (NVTX) data.\n\n"
            f"Running [{reports}/gpukernsum.py report1.sqlite]... \n\n" + _KERNELS)
    assert _names_times(_write(tmp_path, text)) == [("gemv_kernel", 300.0),
                                                     ("softmax_kernel", 100.0)]


def test_skipped_after_a_table_is_not_that_tables(tmp_path: Path) -> None:
    """A SKIPPED line printed after the kernel table (its own report unannounced) leaves the
    kernel report readable."""
    text = ("[6/8] Executing 'cuda_gpu_kern_sum' stats report\n\n" + _KERNELS + "\n"
            "SKIPPED: report1.sqlite does not contain CUDA trace data.\n")
    assert [n for n, _ in _names_times(_write(tmp_path, text))] == ["gemv_kernel",
                                                                   "softmax_kernel"]


def test_a_kernel_report_really_skipped_is_still_refused(tmp_path: Path) -> None:
    """The MinerU case stays a refusal that names the report and its reason."""
    text = ("[6/8] Executing 'cuda_gpu_kern_sum' stats report\n"
            "SKIPPED: report1.sqlite does not contain CUDA kernel data.\n")
    with pytest.raises(ImportProblem, match="cuda_gpu_kern_sum: SKIPPED: .*CUDA kernel data"):
        import_nsys(_write(tmp_path, text))
