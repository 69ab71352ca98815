"""Counter joins that account for themselves (issue 35): each counter file says what it was
applied to, by which rule, what matched nothing, what was withheld and why; counters from
another architecture are not applied; a shared short name never spreads one kernel's counters
over several heads."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from roofline_tui.core.measured.joins import HeadName, plan_joins
from roofline_tui.core.measured.models import CounterSet, KernelMeasurement
from roofline_tui.core.names import signature_key
from tests.paths import WILD_FIXTURES

W = WILD_FIXTURES
NCU_GEMVX = W / "llmperfopt_ncu_rtx5090_cc12.0_gemvx_metrics.csv"
NSYS_SUM = W / "llmperfopt_nsys_rtx5090_dsocr_decode_cuda_gpu_kern_sum.csv"
VCOPY = W / "vcopy_MI300X"


def roofline(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "roofline_tui", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def measured(kernel: str, *, arch: str | None = None, grid: list[int] | None = None,
             block: list[int] | None = None, path: str = "c.csv") -> KernelMeasurement:
    return KernelMeasurement(kernel=kernel, dispatches=1, bytes_per_dispatch=1e6,
                             flops_per_dispatch=None, flops_dtype=None, duration_s=None,
                             source="ncu-csv", path=path, arch=arch, grid=grid, block=block)


def counters(*ms: KernelMeasurement) -> CounterSet:
    return CounterSet(measurements={m.kernel: m for m in ms})


# -- the signature: nsys's and ncu's spellings of one cuBLAS instantiation ------------------

def test_ncu_and_nsys_spellings_of_one_gemvx_share_a_signature_and_its_sibling_does_not() -> None:
    nsys = [line.split(",", 8)[8].strip().strip('"')
            for line in NSYS_SUM.read_text().splitlines()[1:3]]
    assert "(int)7" in nsys[0] and "(int)6" in nsys[1]
    ncu = next(line for line in NCU_GEMVX.read_text().splitlines()[1:2]).split('","')[4]
    assert ncu.startswith("enable_if<!T7, void>::type kernel<")
    assert signature_key(nsys[0]) == signature_key(ncu) is not None
    assert signature_key(nsys[1]) != signature_key(ncu)
    assert signature_key("vecCopy(double*, int)") is None  # no template arguments: no key


# -- the plan ---------------------------------------------------------------------------------

def test_a_short_name_two_heads_share_is_applied_to_neither_and_said() -> None:
    heads = [HeadName("foo(int)", "foo"), HeadName("foo(float)", "foo#2")]
    plan = plan_joins(counters(measured("foo")), heads, None)
    assert plan.by_head == {}
    (f,) = plan.files
    assert f.matched == [] and f.unmatched == []
    (miss,) = f.not_applied
    assert miss.entries == ["foo", "foo#2"] and miss.reason.startswith("ambiguous: 2 heads")


def test_the_recorded_launch_tells_heads_with_one_short_name_apart() -> None:
    heads = [HeadName("foo(int)", "foo", frozenset({((4, 1, 1), (128, 1, 1))})),
             HeadName("foo(float)", "foo#2", frozenset({((224, 1, 1), (32, 4, 1))}))]
    m = measured("foo", grid=[224, 1, 1], block=[32, 4, 1])
    plan = plan_joins(counters(m), heads, None)
    assert plan.by_head == {"foo(float)": m}
    (f,) = plan.files
    assert [(j.entry, j.rule) for j in f.matched] == [("foo#2", "short name + launch")]
    assert [u.entries for u in f.not_applied] == [["foo"]]


def test_a_full_name_match_keeps_the_kernel_from_a_head_that_only_shares_its_short_name() -> None:
    heads = [HeadName("foo(int)", "foo"), HeadName("foo(float)", "foo#2")]
    m = measured("foo(int)")
    plan = plan_joins(counters(m), heads, None)
    assert plan.by_head == {"foo(int)": m}
    (f,) = plan.files
    assert [(j.entry, j.rule) for j in f.matched] == [("foo", "exact")]
    assert f.not_applied[0].entries == ["foo#2"]
    assert "belongs to foo" in f.not_applied[0].reason


def test_counters_of_another_arch_are_withheld_with_a_warning() -> None:
    m = measured("foo(int)", arch="gfx1153")
    plan = plan_joins(counters(m), [HeadName("foo(int)", "foo")], "gfx942")
    assert plan.by_head == {}
    (f,) = plan.files
    assert f.arch == "gfx1153" and f.arch_warning is not None
    assert "gfx1153" in f.arch_warning and "gfx942" in f.arch_warning
    # the same counters on the round's own arch (or an unsaid one) are applied
    assert plan_joins(counters(m), [HeadName("foo(int)", "foo")], "gfx1153").by_head
    assert plan_joins(counters(measured("foo(int)")), [HeadName("foo(int)", "foo")],
                      "gfx942").by_head


def test_kernels_no_head_reaches_are_counted_per_file() -> None:
    ms = [measured("a_kernel", path="one.csv"), measured("b_kernel", path="one.csv"),
          measured("c_kernel", path="two.csv")]
    plan = plan_joins(counters(*ms), [HeadName("a_kernel", "a_kernel")], None)
    by_file = {f.path: f for f in plan.files}
    assert by_file["one.csv"].kernels == 2 and by_file["one.csv"].unmatched == ["b_kernel"]
    assert by_file["two.csv"].unmatched == ["c_kernel"] and not by_file["two.csv"].matched


# -- end to end, from the public files --------------------------------------------------------

def test_the_rtx5090_gemvx_counters_join_the_int7_entry_only(tmp_path: Path) -> None:
    done = roofline("import", "nsys", NSYS_SUM, "--out", "r", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    done = roofline("analyze", "r", "--device", "RTX 5090", "--counters", NCU_GEMVX,
                    cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "1 kernel(s) measured, 1 applied (" in done.stdout and "by signature" in done.stdout
    art = json.loads((tmp_path / "r" / "profile_roofline.json").read_text())
    (join,) = art["counter_joins"]
    assert join["arch"] == "sm_120" and join["kernels"] == 1 and join["unmatched_count"] == 0
    (match,) = join["matched"]
    assert match["rule"] == "signature"
    entries = {e["short_name"]: e for e in art["entries"]}
    assert "(int)7" in entries[match["entry"]]["name"]
    assert entries[match["entry"]]["stage"] == "C"
    # the (int)6 instantiation beside it keeps its own verdict: no counters of its own
    sibling = next(e for e in art["entries"] if "(int)6" in e["name"])
    assert sibling["stage"] != "C"
    md = (tmp_path / "r" / "profile_roofline.md").read_text()
    assert "counters llmperfopt_ncu_rtx5090_cc12.0_gemvx_metrics.csv (ncu-csv, sm_120)" in md


def test_gfx1153_counters_are_not_applied_to_an_mi300x_round(tmp_path: Path) -> None:
    """A miniature of the issue's case: the MI300X vcopy rocprof-compute files, with the sysinfo
    naming gfx1153 (the public file the issue names is not in the shared folder)."""
    done = roofline("import", "rocprofv3", VCOPY / "pmc_perf.csv", "--out", "v", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(VCOPY / "pmc_perf.csv", other / "pmc_perf.csv")
    (other / "sysinfo.csv").write_text((VCOPY / "sysinfo.csv").read_text()
                                       .replace("gfx942", "gfx1153"))
    done = roofline("analyze", "v", "--counters", other / "pmc_perf.csv",
                    other / "sysinfo.csv", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "none applied" in done.stdout
    assert "collected on gfx1153 and the round ran on gfx942" in done.stdout
    art = json.loads((tmp_path / "v" / "profile_roofline.json").read_text())
    (join,) = art["counter_joins"]
    assert join["matched"] == [] and "gfx1153" in join["arch_warning"]
    assert all(e.get("stage") != "C" for e in art["entries"])
    # the round's own counters are applied
    done = roofline("analyze", "v", "--counters", VCOPY / "pmc_perf.csv",
                    VCOPY / "sysinfo.csv", cwd=tmp_path)
    art = json.loads((tmp_path / "v" / "profile_roofline.json").read_text())
    assert [m["rule"] for m in art["counter_joins"][0]["matched"]] == ["exact"]
    assert any(e.get("stage") == "C" for e in art["entries"])
