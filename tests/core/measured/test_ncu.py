"""Nsight Compute CSV (details and raw pages) and .ncu-rep handling."""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict

import pytest

from roofline_tui.core.measured import load_counters, match_measurement
from roofline_tui.core.measured.ncu import NCU_REP_MISSING, unit_factor
from tests.paths import needs_shared

from .helpers import FIXTURES, NCU, UNIT, ncu_rows, num


def _per_launch(path):
    launches: dict[str, dict[str, float]] = defaultdict(dict)
    names: dict[str, str] = {}
    for r in ncu_rows(path):
        if not r["Metric Name"]:
            continue
        names[r["ID"]] = r["Kernel Name"]
        try:
            launches[r["ID"]][r["Metric Name"]] = num(r["Metric Value"]) * UNIT[r["Metric Unit"]]
        except (ValueError, KeyError):
            pass
    return launches, names


def _sass_flops(m: dict[str, float]) -> float:
    total = 0.0
    for p in "fhd":
        base = "sm__sass_thread_inst_executed_op_"
        total += m[f"{base}{p}add_pred_on.sum"] + m[f"{base}{p}mul_pred_on.sum"]
        total += 2 * m[f"{base}{p}fma_pred_on.sum"]
    return total


@needs_shared
def test_leleucas_dropout_metrics():
    path = NCU / "leleucas_sm80_ncu_csv_metrics_dropout_trimmed.csv"
    launches, names = _per_launch(path)
    cs = load_counters([path])
    assert cs.problems == []
    kernels = set(names.values())
    assert set(cs.measurements) == kernels
    for k in kernels:
        ids = [i for i, n in names.items() if n == k]
        m = cs.measurements[k]
        assert m.source == "ncu-csv" and m.dispatches == len(ids)
        assert m.bytes_per_dispatch == pytest.approx(
            statistics.mean(launches[i]["dram__bytes.sum"] for i in ids)
        )
        assert m.flops_per_dispatch == pytest.approx(
            statistics.mean(_sass_flops(launches[i]) for i in ids)
        )
        assert m.duration_s == pytest.approx(
            statistics.mean(launches[i]["gpu__time_duration.sum"] for i in ids)
        )
        assert "SmClockHz" in m.corroboration
    dropout = next(iter(cs.measurements.values()))
    assert dropout.flops_dtype == "fp64"  # a double-precision dropout
    assert dropout.bytes_per_dispatch is not None
    assert dropout.bytes_per_dispatch > 1e5  # "4,194,688" read as 4194688, not 4.19


@needs_shared
def test_leleucas_sections_tensor_pipe_without_ops_metric():
    path = NCU / "leleucas_sm80_ncu_csv_sections_bert_flashattn_trimmed.csv"
    launches, names = _per_launch(path)
    cs = load_counters([path])
    assert cs.problems == []
    assert sum(m.dispatches for m in cs.measurements.values()) == 3
    fmha = match_measurement(cs, "fmha_fwd_loop_kernel")
    assert fmha is not None
    lid = next(i for i, n in names.items() if n == fmha.kernel)
    assert fmha.bytes_per_dispatch == launches[lid]["dram__bytes.sum"]
    # the tensor pipe ran but only its instruction count was collected: FLOPs unknown
    assert fmha.flops_per_dispatch is None
    assert fmha.corroboration["SassFlops"] == _sass_flops(launches[lid])
    assert fmha.corroboration["TensorPipeInsts"] == 2048
    assert fmha.corroboration["OccupancyPercent"] == pytest.approx(19.94)
    assert any(x.startswith("sm__ops_path_tensor") for x in fmha.missing)


@pytest.mark.parametrize(
    "name",
    [
        "polyfhe_A100_cc80_dram_bytes_read_memaccess-opt.csv",
        "polyfhe_cc89_dram_bytes_read_memtransfer-phantom.csv",
    ],
)
@needs_shared
def test_polyfhe_read_only_mixed_units(name):
    path = NCU / name
    launches, names = _per_launch(path)
    cs = load_counters([path])
    assert cs.problems == []
    for k in set(names.values()):
        ids = [i for i, n in names.items() if n == k]
        m = cs.measurements[k]
        assert m.dispatches == len(ids)
        assert m.read_bytes_per_dispatch == pytest.approx(
            statistics.mean(launches[i]["dram__bytes_read.sum"] for i in ids)
        )
        assert m.bytes_per_dispatch is None
        assert "dram__bytes_write.sum" in m.missing
    units = {r["Metric Unit"] for r in ncu_rows(path)}
    if name.startswith("polyfhe_cc89"):
        assert units == {"Mbyte", "Kbyte"}


def test_nvidia_gemm_fixture():
    path = FIXTURES / "counters" / "ncu_gemm_details.csv"
    launches, names = _per_launch(path)
    cs = load_counters([path])
    assert cs.problems == []
    (kernel,) = set(names.values())
    m = match_measurement(cs, kernel)
    assert m is not None and m.dispatches == 2
    expect_bytes = statistics.mean(
        v["dram__bytes_read.sum"] + v["dram__bytes_write.sum"] for v in launches.values()
    )
    assert m.bytes_per_dispatch == pytest.approx(expect_bytes)
    assert m.bytes_per_dispatch == pytest.approx((134.21e6 + 134.2177e6) / 2, rel=1e-4)
    sass = 2 * 1048576 + 524288
    assert m.flops_per_dispatch == pytest.approx(2 * 4096**3 + sass)
    assert m.flops_by_dtype["bf16"] == pytest.approx(2 * 4096**3)
    assert m.flops_dtype == "bf16"
    assert m.duration_s == pytest.approx((498.21e-6 + 0.50e-3) / 2)
    assert m.corroboration["OccupancyPercent"] == pytest.approx(12.5)
    assert any("1.41 GHz" in n for n in m.notes)


def test_ncu_raw_page(tmp_path):
    path = tmp_path / "raw.csv"
    path.write_text(
        '"ID","Process ID","Kernel Name","dram__bytes_read.sum","dram__bytes_write.sum",'
        '"gpu__time_duration.sum","sm__sass_thread_inst_executed_op_ffma_pred_on.sum",'
        '"sm__sass_thread_inst_executed_op_hadd_pred_on.sum"\n'
        '"","","","Mbyte","Kbyte","usecond","inst","inst"\n'
        '"0","11","rms_norm","1.50","500","10.5","1,000","10"\n'
        '"1","11","rms_norm","2.50","1,500","11.5","3,000","30"\n'
    )
    cs = load_counters([path])
    m = cs.measurements["rms_norm"]
    assert m.source == "ncu-csv" and m.dispatches == 2
    assert m.bytes_per_dispatch == pytest.approx(((1.5e6 + 5e5) + (2.5e6 + 1.5e6)) / 2)
    assert m.flops_per_dispatch == pytest.approx(((2000 + 10) + (6000 + 30)) / 2)
    assert m.flops_dtype == "fp32"
    assert m.duration_s == pytest.approx(11e-6)


def test_ncu_rep_without_package(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ncu_report", None)  # import fails
    rep = tmp_path / "profile.ncu-rep"
    rep.write_bytes(b"\x00NVIDIA binary report")
    cs = load_counters([rep])
    assert cs.measurements == {}
    assert cs.problems == [f"profile.ncu-rep: {NCU_REP_MISSING}"]
    assert "pip install roofline_tui[ncu]" in cs.problems[0]


def _fake_ncu_report(monkeypatch, kernel: str, metrics: dict) -> None:
    """An ``ncu_report`` module whose one report holds one launch of ``kernel`` with
    ``metrics``: name -> value, or name -> (value, unit) for a metric that states its unit."""

    class Metric:
        def __init__(self, v):
            self.v, self.u = v if isinstance(v, tuple) else (v, None)

        def as_double(self):
            return self.v

        def unit(self):
            return self.u or ""  # no stated unit: taken as it is

    class Action:
        def name(self):
            return kernel

        def metric_names(self):
            return list(metrics)

        def metric_by_name(self, n):
            return Metric(metrics[n])

    class Range:
        def num_actions(self):
            return 1

        def action_by_idx(self, i):
            return Action()

    class Ctx:
        def num_ranges(self):
            return 1

        def range_by_idx(self, i):
            return Range()

    class Module:
        @staticmethod
        def load_report(p):
            return Ctx()

    monkeypatch.setitem(sys.modules, "ncu_report", Module)


def test_ncu_rep_through_fake_module(tmp_path, monkeypatch):
    _fake_ncu_report(monkeypatch, "gemm", {"dram__bytes_read.sum": 100.0,
                                           "dram__bytes_write.sum": 20.0})
    rep = tmp_path / "x.ncu-rep"
    rep.write_bytes(b"")
    m = load_counters([rep]).measurements["gemm"]
    assert m.source == "ncu-rep" and m.bytes_per_dispatch == 120.0


def test_ncu_rep_values_are_taken_in_their_own_units(tmp_path, monkeypatch):
    """A report keeps gpu__time_duration in nanoseconds and bytes in Kbyte here: 25,000 ns is
    25 µs (2.5e-5 s, not 25,000 s), 1.5 Kbyte read + 0.5 Kbyte written is 2,000 B; a metric in
    a unit nobody knows is skipped with one line."""
    _fake_ncu_report(monkeypatch, "gemm", {
        "dram__bytes_read.sum": (1.5, "Kbyte"), "dram__bytes_write.sum": (0.5, "Kbyte"),
        "gpu__time_duration.sum": (25_000.0, "nsecond"),
        "sm__cycles_elapsed.avg": (3.0, "furlong")})
    rep = tmp_path / "x.ncu-rep"
    rep.write_bytes(b"")
    cs = load_counters([rep])
    m = cs.measurements["gemm"]
    assert m.bytes_per_dispatch == pytest.approx(2000.0)
    assert m.duration_s == pytest.approx(2.5e-5)
    assert any("unknown unit(s) skipped: furlong" in p for p in cs.problems)


@pytest.mark.parametrize(
    "unit,factor",
    [
        ("byte", 1),
        ("Kbyte", 1e3),
        ("Mbyte", 1e6),
        ("Gbyte", 1e9),
        ("KiB", None),
        ("Kibyte", 1024),
        ("nsecond", 1e-9),
        ("usecond", 1e-6),
        ("Gbyte/second", 1e9),
        ("%", 1),
        ("furlong", None),
    ],
)
def test_unit_factor(unit, factor):
    got = unit_factor(unit)
    assert got == (pytest.approx(factor) if factor is not None else None)
