"""Pass joining, missing counters, bad values, FLOPs, rocpd and the worked-example fixture."""

from __future__ import annotations

import csv
import sqlite3
import statistics
from collections import defaultdict
from pathlib import Path

import pytest

from roofline_tui.core.measured import load_counters, match_measurement
from tests.paths import needs_shared

from .helpers import FIXTURES, ROCPROF, long_rows

HIT_RATE = ROCPROF / "hipkittens_gfx950_hit_rate_counter_collection.csv"


def _write(path: Path, header: list[str], rows: list[dict[str, str]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=header)
        w.writeheader()
        w.writerows(rows)
    return path


def _two_passes(tmp_path: Path, drop_last_of: str | None = None, only_in_first: int = 0):
    """pass_1: the real rows renamed FETCH_SIZE; pass_2: WRITE_SIZE = value/2, a separate run
    (dispatch ids shifted by 1000)."""
    rows = long_rows(HIT_RATE)
    header = list(rows[0].keys())
    # the renamed cache-access counts are far more "KiB" than a few-us dispatch could move
    # (they would be flagged as impossible): give every dispatch a 1 s span
    rows = [{**r, "Start_Timestamp": "0", "End_Timestamp": "1000000000"} for r in rows]
    p1 = [{**r, "Counter_Name": "FETCH_SIZE"} for r in rows]
    p2 = []
    for r in rows:
        p2.append(
            {
                **r,
                "Counter_Name": "WRITE_SIZE",
                "Counter_Value": repr(float(r["Counter_Value"]) / 2),
                "Dispatch_Id": str(int(r["Dispatch_Id"]) + 1000),
                "Correlation_Id": str(int(r["Correlation_Id"]) + 1000),
            }
        )
    if drop_last_of:
        idx = max(i for i, r in enumerate(p2) if r["Kernel_Name"] == drop_last_of)
        del p2[idx]
    if only_in_first:
        extra = {
            **rows[0],
            "Kernel_Name": "only_in_pass_one",
            "Dispatch_Id": "9999",
            "Correlation_Id": "9999",
            "Counter_Name": "FETCH_SIZE",
            "Counter_Value": "4.0",
        }
        p1.append(extra)
    a = _write(tmp_path / "out" / "pass_1" / "counter_collection.csv", header, p1)
    b = _write(tmp_path / "out" / "pass_2" / "counter_collection.csv", header, p2)
    return rows, a, b


@needs_shared
def test_multipass_join_per_kernel(tmp_path):
    rows, a, b = _two_passes(tmp_path)
    expected: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        v = float(r["Counter_Value"])
        expected[r["Kernel_Name"]].append((v + v / 2) * 1024)

    cs = load_counters([a, b])

    assert cs.problems == []
    assert set(cs.measurements) == set(expected)
    for kernel, values in expected.items():
        m = cs.measurements[kernel]
        assert m.dispatches == len(values)
        assert m.bytes_per_dispatch == pytest.approx(statistics.mean(values))
        assert m.missing == ["MfmaFlops* or SQ_INSTS_VALU_MFMA_MOPS_*"]
        assert any("joined 2 counter passes" in n for n in m.notes)


@needs_shared
def test_mismatched_passes_keep_what_matches_and_say_so(tmp_path):
    rows = long_rows(HIT_RATE)
    counts: dict[str, int] = defaultdict(int)
    for r in rows:
        counts[r["Kernel_Name"]] += 1
    victim = next(k for k, n in counts.items() if n >= 3)
    _, a, b = _two_passes(tmp_path, drop_last_of=victim, only_in_first=1)

    cs = load_counters([a, b])

    assert cs.measurements[victim].dispatches == counts[victim] - 1
    assert cs.measurements[victim].bytes_per_dispatch is not None
    assert any("disagree" in p and victim[:40] in p for p in cs.problems)
    lone = cs.measurements["only_in_pass_one"]
    assert lone.bytes_per_dispatch is None
    assert lone.read_bytes_per_dispatch == 4.0 * 1024
    assert lone.missing[0] == "WRITE_SIZE"
    assert any("lacks 1 kernel" in p for p in cs.problems)
    assert all("\n" not in p for p in cs.problems)


HEADER = [
    "Correlation_Id",
    "Dispatch_Id",
    "Agent_Id",
    "Queue_Id",
    "Process_Id",
    "Thread_Id",
    "Grid_Size",
    "Kernel_Id",
    "Kernel_Name",
    "Workgroup_Size",
    "LDS_Block_Size",
    "Scratch_Size",
    "VGPR_Count",
    "Accum_VGPR_Count",
    "SGPR_Count",
    "Counter_Name",
    "Counter_Value",
    "Start_Timestamp",
    "End_Timestamp",
]


def _row(did: int, kernel: str, counter: str, value: str) -> dict[str, str]:
    return dict(
        zip(
            HEADER,
            [
                str(did),
                str(did),
                "Agent 2",
                "1",
                "1",
                "1",
                "256",
                "3",
                kernel,
                "64",
                "0",
                "0",
                "8",
                "0",
                "16",
                counter,
                value,
                str(1000 + did * 100),
                str(1050 + did * 100),
            ],
        )
    )


def test_missing_fetch_size_keeps_bytes_none(tmp_path):
    rows = [
        _row(1, "gemm_kernel", "WRITE_SIZE", "100.0"),
        _row(1, "gemm_kernel", "MfmaFlopsBF16", "2.0e9"),
        _row(2, "gemm_kernel", "WRITE_SIZE", "300.0"),
        _row(2, "gemm_kernel", "MfmaFlopsBF16", "4.0e9"),
    ]
    cs = load_counters([_write(tmp_path / "counter_collection.csv", HEADER, rows)])
    m = cs.measurements["gemm_kernel"]
    assert m.bytes_per_dispatch is None
    assert m.missing == ["FETCH_SIZE"]
    assert m.write_bytes_per_dispatch == 200.0 * 1024
    assert m.flops_per_dispatch == pytest.approx(3.0e9)
    assert m.flops_dtype == "bf16"
    assert m.duration_s == pytest.approx(50e-9)


def test_non_numeric_values_are_skipped_with_one_problem(tmp_path):
    rows = [
        _row(1, "k", "FETCH_SIZE", "n/a"),
        _row(1, "k", "WRITE_SIZE", "10"),
        _row(2, "k", "FETCH_SIZE", "30"),
        _row(2, "k", "WRITE_SIZE", "10"),
        _row(3, "k", "FETCH_SIZE", "1e400"),
        _row(3, "k", "WRITE_SIZE", "bogus"),
    ]
    cs = load_counters([_write(tmp_path / "counter_collection.csv", HEADER, rows)])
    m = cs.measurements["k"]
    assert m.dispatches == 3
    assert m.bytes_per_dispatch == 40 * 1024  # only dispatch 2 carries both counters
    assert any("bytes from 1 of 3" in n for n in m.notes)
    assert len(cs.problems) == 1 and "3 non-numeric" in cs.problems[0]


def test_flops_from_mops_dtype_and_configurable_flops_per_mop(tmp_path):
    rows = [
        _row(1, "mix", "SQ_INSTS_VALU_MFMA_MOPS_F8", "1000"),
        _row(1, "mix", "SQ_INSTS_VALU_MFMA_MOPS_BF16", "10"),
        _row(1, "mix", "MfmaFlopsF16", "512"),
        _row(1, "mix", "FETCH_SIZE", "1"),
        _row(1, "mix", "WRITE_SIZE", "1"),
    ]
    path = _write(tmp_path / "counter_collection.csv", HEADER, rows)
    m = load_counters([path]).measurements["mix"]
    assert m.flops_by_dtype == {"fp8": 512000.0, "bf16": 5120.0, "fp16": 512.0}
    assert m.flops_per_dispatch == 512000.0 + 5120.0 + 512.0
    assert m.flops_dtype == "fp8"
    m2 = load_counters([path], flops_per_mop={"fp8": 1024, "default": 256}).measurements["mix"]
    assert m2.flops_by_dtype == {"fp8": 1024000.0, "bf16": 2560.0, "fp16": 512.0}


def test_worked_example_moe_fixture():
    path = FIXTURES / "counters" / "worked_example_moe" / "counter_collection.csv"
    raw = long_rows(path)
    per_dispatch: dict[str, float] = defaultdict(float)
    for r in raw:
        if r["Counter_Name"] in ("FETCH_SIZE", "WRITE_SIZE"):
            per_dispatch[r["Dispatch_Id"]] += float(r["Counter_Value"]) * 1024

    cs = load_counters([path])

    assert cs.problems == []
    m = match_measurement(cs, "fused_moe_kernel")
    assert m is not None and m.dispatches == 2
    assert m.bytes_per_dispatch == pytest.approx(statistics.mean(per_dispatch.values()))
    # the logical MoE layer = 2 launches ~ 697 MB (spec §9 / input-formats §7)
    assert m.bytes_per_dispatch is not None
    assert 2 * m.bytes_per_dispatch == pytest.approx(697e6, rel=1e-3)
    assert m.flops_dtype == "fp8"
    assert m.flops_per_dispatch == pytest.approx((4194304 + 2097152) / 2 * 512)
    assert set(m.corroboration) == {"MemUnitStalled", "OccupancyPercent", "MfmaUtil"}
    assert m.corroboration["MemUnitStalled"] == pytest.approx((55.2 + 52.9) / 2)
    assert m.missing == []
    assert any("not HBM pins" in n for n in m.notes)
    # Triton JIT names in a profile carry suffixes: the prefix rule still finds it
    assert match_measurement(cs, "fused_moe_kernel_0d1d2d3d4d5d6d7d8d9d") is m
    assert match_measurement(cs, "paged_attention_decode") is None


def _rocpd(path: Path, events: list[tuple[int, str, str, float]], *, names_in_pmc: bool) -> Path:
    """A rocpd-like database: base tables plus the ``kernels`` and ``pmc_events`` views
    (profiler-formats.md §1.6)."""
    con = sqlite3.connect(path)
    con.executescript(
        """
        CREATE TABLE rocpd_string (id INTEGER PRIMARY KEY, string TEXT);
        CREATE TABLE rocpd_info_kernel_symbol (id INTEGER PRIMARY KEY, kernel_name TEXT);
        CREATE TABLE rocpd_kernel_dispatch (id INTEGER PRIMARY KEY, dispatch_id INTEGER,
            kernel_id INTEGER, start INTEGER, "end" INTEGER, grid_x INTEGER, workgroup_x INTEGER);
        CREATE TABLE rocpd_info_pmc (id INTEGER PRIMARY KEY, name TEXT);
        CREATE TABLE rocpd_pmc_event (id INTEGER PRIMARY KEY, event_id INTEGER, pmc_id INTEGER,
            value REAL);
        CREATE VIEW kernels AS SELECT s.kernel_name AS name, d.dispatch_id, d.kernel_id,
            d.start, d."end", d."end" - d.start AS duration, d.grid_x, d.workgroup_x
            FROM rocpd_kernel_dispatch d JOIN rocpd_info_kernel_symbol s ON s.id = d.kernel_id;
        """
    )
    name_col = "s.kernel_name AS name," if names_in_pmc else ""
    con.execute(
        f"""CREATE VIEW pmc_events AS SELECT {name_col} d.dispatch_id, d.start, d."end",
            d."end" - d.start AS duration, i.name AS counter_name, e.value AS counter_value
            FROM rocpd_pmc_event e JOIN rocpd_kernel_dispatch d ON d.id = e.event_id
            JOIN rocpd_info_pmc i ON i.id = e.pmc_id
            JOIN rocpd_info_kernel_symbol s ON s.id = d.kernel_id"""
    )
    kernels: dict[str, int] = {}
    counters: dict[str, int] = {}
    dispatches: dict[int, int] = {}
    for did, kernel, counter, value in events:
        kid = kernels.setdefault(kernel, len(kernels) + 1)
        if did not in dispatches:
            dispatches[did] = len(dispatches) + 1
            con.execute(
                "INSERT INTO rocpd_kernel_dispatch VALUES (?,?,?,?,?,?,?)",
                (dispatches[did], did, kid, 10_000 * did, 10_000 * did + 2_000, 1024, 256),
            )
        cid = counters.setdefault(counter, len(counters) + 1)
        con.execute("INSERT OR IGNORE INTO rocpd_info_pmc VALUES (?,?)", (cid, counter))
        con.execute(
            "INSERT INTO rocpd_pmc_event (event_id, pmc_id, value) VALUES (?,?,?)",
            (dispatches[did], cid, value),
        )
    for k, kid in kernels.items():
        con.execute("INSERT INTO rocpd_info_kernel_symbol VALUES (?,?)", (kid, k))
    con.commit()
    con.close()
    return path


@pytest.mark.parametrize("names_in_pmc", [True, False])
def test_rocpd_database(tmp_path, names_in_pmc):
    events = [
        (1, "fused_moe_kernel", "FETCH_SIZE", 1000.0),
        (1, "fused_moe_kernel", "WRITE_SIZE", 24.0),
        (1, "fused_moe_kernel", "MfmaFlopsBF16", 4.0e6),
        (2, "fused_moe_kernel", "FETCH_SIZE", 3000.0),
        (2, "fused_moe_kernel", "WRITE_SIZE", 24.0),
        (2, "fused_moe_kernel", "MfmaFlopsBF16", 6.0e6),
        (3, "rms_norm_kernel", "FETCH_SIZE", 10.0),
        (3, "rms_norm_kernel", "MemUnitStalled", 12.5),
    ]
    db = _rocpd(tmp_path / "results.db", events, names_in_pmc=names_in_pmc)
    cs = load_counters([db])
    moe = cs.measurements["fused_moe_kernel"]
    assert moe.source == "rocpd"
    assert moe.dispatches == 2
    assert moe.bytes_per_dispatch == pytest.approx((1024 + 3024) / 2 * 1024)
    assert moe.flops_per_dispatch == pytest.approx(5.0e6)
    assert moe.flops_dtype == "bf16"
    assert moe.duration_s == pytest.approx(2_000e-9)
    norm = cs.measurements["rms_norm_kernel"]
    assert norm.bytes_per_dispatch is None and norm.missing[0] == "WRITE_SIZE"
    assert norm.corroboration == {"MemUnitStalled": 12.5}
    assert any("rocpd" == m.source for m in cs.measurements.values())


def test_rocpd_without_counters_is_a_problem(tmp_path):
    db = tmp_path / "trace.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE k (name TEXT, dispatch_id INTEGER)")
    con.execute("CREATE VIEW kernels AS SELECT * FROM k")
    con.commit()
    con.close()
    cs = load_counters([db])
    assert cs.measurements == {}
    assert cs.problems == ["trace.db: no pmc_events view (kernel trace only); no counters read"]
