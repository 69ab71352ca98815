"""Every real rocprofv3 / rocprof-compute sample parses; numbers checked against the raw file."""

from __future__ import annotations

import statistics
from collections import defaultdict

import pytest

from roofline_tui.core.measured import load_counters
from tests.paths import needs_shared

from .helpers import ROCPROF, long_rows

pytestmark = needs_shared

LONG_SAMPLES = [
    "hipkittens_gfx950_bank_test_counter_collection.csv",
    "hipkittens_gfx950_hit_rate_counter_collection.csv",
    "rocm-systems_docs_counter_collection_latest.csv",
    "rocprofiler-sdk_docs_counter_collection_2024-09.csv",
]


@pytest.mark.parametrize("name", LONG_SAMPLES)
def test_counter_collection_sample(name):
    path = ROCPROF / name
    rows = long_rows(path)
    dispatches: dict[str, set[str]] = defaultdict(set)
    durations: dict[str, dict[str, float]] = defaultdict(dict)
    for r in rows:
        dispatches[r["Kernel_Name"]].add(r["Dispatch_Id"])
        if r.get("Start_Timestamp"):
            durations[r["Kernel_Name"]][r["Dispatch_Id"]] = (
                int(r["End_Timestamp"]) - int(r["Start_Timestamp"])
            ) * 1e-9

    cs = load_counters([path])

    assert set(cs.measurements) == set(dispatches)
    for kernel, ids in dispatches.items():
        m = cs.measurements[kernel]
        assert m.source == "rocprofv3-csv"
        assert m.dispatches == len(ids)
        # none of these samples collected FETCH/WRITE or MFMA counters: L4, never invented
        assert m.bytes_per_dispatch is None and m.flops_per_dispatch is None
        assert "FETCH_SIZE" in m.missing and "WRITE_SIZE" in m.missing
        if durations[kernel]:
            positive = [d for d in durations[kernel].values() if d > 0]
            assert m.duration_s == pytest.approx(statistics.mean(positive))
        else:
            assert m.duration_s is None


def _gfx942_bytes(r: dict[str, str]) -> tuple[float, float]:
    rd, bub, r32 = (
        float(r[k]) for k in ("TCC_EA0_RDREQ_sum", "TCC_BUBBLE_sum", "TCC_EA0_RDREQ_32B_sum")
    )
    wr, w64 = float(r["TCC_EA0_WRREQ_sum"]), float(r["TCC_EA0_WRREQ_64B_sum"])
    return bub * 128 + (rd - bub - r32) * 64 + r32 * 32, (wr - w64) * 32 + w64 * 64


def test_pmc_perf_sample_with_sysinfo():
    pmc = ROCPROF / "hipkittens_MI325X_gfx942_rocprof-compute_pmc_perf_trimmed.csv"
    sysinfo = ROCPROF / "hipkittens_MI325X_gfx942_rocprof-compute_sysinfo.csv"
    rows = long_rows(pmc)
    by_kernel: dict[str, list[dict[str, str]]] = defaultdict(list)
    for r in rows:
        by_kernel[r["Kernel_Name"]].append(r)

    cs = load_counters([pmc, sysinfo])

    assert cs.problems == []
    assert set(cs.measurements) == set(by_kernel)
    for kernel, rs in by_kernel.items():
        m = cs.measurements[kernel]
        assert m.source == "rocprof-compute-pmc"
        assert m.dispatches == len(rs)
        totals = [sum(_gfx942_bytes(r)) for r in rs]
        assert m.bytes_per_dispatch == pytest.approx(statistics.mean(totals))
        reads = [_gfx942_bytes(r)[0] for r in rs]
        assert m.read_bytes_per_dispatch == pytest.approx(statistics.mean(reads))
        flops = [float(r["SQ_INSTS_VALU_MFMA_MOPS_BF16"]) * 512 for r in rs]
        assert m.flops_per_dispatch == pytest.approx(statistics.mean(flops))
        durs = [(int(r["End_Timestamp"]) - int(r["Start_Timestamp"])) * 1e-9 for r in rs]
        assert m.duration_s == pytest.approx(statistics.mean(durs))
        assert any("gfx942" in n for n in m.notes)
        assert any("not HBM pins" in n for n in m.notes)

    gemm = next(m for k, m in cs.measurements.items() if k.startswith("Cijk_"))
    assert gemm.flops_dtype == "bf16"
    assert gemm.dispatches == 3
    # profiler-formats.md §1.9: dispatch 6 reads 310.9 MB, writes 33.6 MB
    d6 = next(r for r in rows if r["Dispatch_ID"] == "6")
    rd, wr = _gfx942_bytes(d6)
    assert rd / 1e6 == pytest.approx(310.9, abs=0.05)
    assert wr / 1e6 == pytest.approx(33.6, abs=0.05)
    elementwise = cs.measurements[
        next(k for k in by_kernel if "vectorized_elementwise_kernel<4" in k)
    ]
    assert elementwise.flops_per_dispatch == 0.0 and elementwise.flops_dtype is None


def test_pmc_perf_finds_sysinfo_next_to_it_and_says_when_absent(tmp_path):
    pmc = ROCPROF / "hipkittens_MI325X_gfx942_rocprof-compute_pmc_perf_trimmed.csv"
    cs = load_counters([pmc])  # sysinfo found in the same directory
    assert all(any("gfx942" in n for n in m.notes) for m in cs.measurements.values())
    lonely = tmp_path / "pmc_perf.csv"
    lonely.write_bytes(pmc.read_bytes())
    cs2 = load_counters([lonely])
    m = next(iter(cs2.measurements.values()))
    assert any("no sysinfo" in n for n in m.notes)


def test_side_files_are_reported_not_parsed():
    cs = load_counters(
        [
            ROCPROF / "rocprofiler-sdk_docs_kernel_trace_2024-09.csv",
            ROCPROF / "hipkittens_gfx950_bank_test_agent_info.csv",
        ]
    )
    assert cs.measurements == {}
    assert len(cs.problems) == 2
    assert all("not counters" in p for p in cs.problems)
