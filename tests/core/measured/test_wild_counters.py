"""Counters from the wild (issue 13 items 8 and 10): request sizes per arch, legacy rocprof --pmc
files, code-object name suffixes, impossible values."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofline_tui.core.measured import load_counters, match_measurement
from tests.paths import WILD_FIXTURES

F = WILD_FIXTURES
MIB8 = 8 * 1024 * 1024  # vcopy -n 1048576: 1,048,576 doubles = 8,388,608 B each way


@pytest.mark.parametrize(
    ("device", "arch_formula"),
    [
        ("MI100", "gfx90a/gfx908"),  # TCC_EA_RDREQ ~131,407 x 64 B
        ("MI200", "gfx90a/gfx908"),  # TCC_EA_RDREQ ~131,080 x 64 B
        ("MI300X", "gfx942"),  # TCC_BUBBLE 65,536 x 128 B + ~250 x 64 B
        ("MI350", "gfx950"),  # TCC_EA0_RDREQ ~65,612 x 128 B (was x 64 B: 4.2 MB)
    ],
)
def test_vcopy_read_bytes_equal_the_copy(device: str, arch_formula: str) -> None:
    """Read bytes per dispatch are the 8 MiB the copy reads, within the 0.3 % of extra requests
    the EA counters see (page-table walks, the kernel's arguments); the formula is in the
    notes."""
    d = F / f"vcopy_{device}"
    cs = load_counters([d / "pmc_perf.csv", d / "sysinfo.csv"])
    m = match_measurement(cs, "vecCopy(double*, double*, double*, int, int)")
    assert m is not None and m.dispatches == 3
    assert m.read_bytes_per_dispatch == pytest.approx(MIB8, rel=0.003)
    formula = next(n for n in m.notes if "read bytes =" in n)
    assert arch_formula in formula
    if device == "MI350":
        assert "*128" in formula and "128 B requests" in formula


@pytest.mark.parametrize("device", ["MI300X", "MI350"])
def test_vcopy_write_bytes_equal_the_copy(device: str) -> None:
    """WRREQ_64B 131,072 x 64 B = 8 MiB in each of the three dispatches."""
    d = F / f"vcopy_{device}"
    m = match_measurement(load_counters([d / "pmc_perf.csv", d / "sysinfo.csv"]), "vecCopy")
    assert m is not None and m.write_bytes_per_dispatch == MIB8


def test_gfx950_without_sysinfo_keeps_the_old_formula_and_says_so(tmp_path: Path) -> None:
    src = (F / "vcopy_MI350" / "pmc_perf.csv").read_text()
    (tmp_path / "pmc_perf.csv").write_text(src)
    m = match_measurement(load_counters([tmp_path / "pmc_perf.csv"]), "vecCopy")
    assert m is not None
    assert any("GPU not identified" in n for n in m.notes)


def test_legacy_rocprof_pmc_csv_is_read_as_counters(tmp_path: Path) -> None:
    """rocprof v1 ``--pmc FETCH_SIZE WRITE_SIZE``: one row per dispatch, counters as columns
    (``Index, KernelName``); bytes = (FETCH_SIZE + WRITE_SIZE) x 1024 per dispatch."""
    p = tmp_path / "data_movement.csv"
    p.write_text(
        "Index,KernelName,gpu-id,queue-id,queue-index,pid,tid,grd,wgr,lds,scr,arch_vgpr,"
        "accum_vgpr,sgpr,wave_size,sig,obj,FETCH_SIZE,WRITE_SIZE,TCP_TOTAL_CACHE_ACCESSES_sum\n"
        '4,"compute_fd_x_kernel",8,0,7,3593673,3593673,134217728,256,0,0,4,4,32,64,0x0,'
        "0x7fe06bd35940,3.2500000000,528532.8750000000,16777216.0000000000\n")
    cs = load_counters([p])
    m = match_measurement(cs, "compute_fd_x_kernel")
    assert m is not None, cs.problems
    assert m.bytes_per_dispatch == pytest.approx((3.25 + 528532.875) * 1024)


@pytest.mark.parametrize("suffix", [" [clone .kd]", " (.kd)", ".kd"])
def test_counter_names_with_code_object_suffixes_match(tmp_path: Path, suffix: str) -> None:
    p = tmp_path / "counter_collection.csv"
    p.write_text('"Dispatch_Id","Kernel_Name","Counter_Name","Counter_Value"\n'
                 f'1,"global_write(int*, int){suffix}","FETCH_SIZE",2\n'
                 f'1,"global_write(int*, int){suffix}","WRITE_SIZE",6\n')
    m = match_measurement(load_counters([p]), "global_write(int*, int)")
    assert m is not None and m.bytes_per_dispatch == 8 * 1024


def test_impossible_counter_values_are_flagged_not_used(tmp_path: Path) -> None:
    """A negative WRITE_SIZE, and a FETCH_SIZE of 1e12 KiB in 1 us (1e15 B in 1e-6 s =
    1e21 B/s, far above any device), are flagged in the notes and not used."""
    p = tmp_path / "counter_collection.csv"
    p.write_text(
        '"Dispatch_Id","Kernel_Name","Counter_Name","Counter_Value","Start_Timestamp",'
        '"End_Timestamp"\n'
        '1,"neg_kernel","FETCH_SIZE",4,0,1000\n'
        '1,"neg_kernel","WRITE_SIZE",-3,0,1000\n'
        '1,"fast_kernel","FETCH_SIZE",1e12,0,1000\n'
        '1,"fast_kernel","WRITE_SIZE",1,0,1000\n')
    cs = load_counters([p])
    neg = match_measurement(cs, "neg_kernel")
    fast = match_measurement(cs, "fast_kernel")
    assert neg is not None and fast is not None
    assert neg.bytes_per_dispatch is None and "WRITE_SIZE" in neg.missing
    assert any("flagged: WRITE_SIZE = -3 is negative" in n for n in neg.notes)
    assert fast.bytes_per_dispatch is None
    assert any("flagged: FETCH_SIZE" in n and "100 TB/s" in n for n in fast.notes)


def test_many_counter_rows_and_long_names_stay_linear(tmp_path: Path) -> None:
    """200k counter rows over 20k kernels, and one 200k-character kernel name: loading and
    matching stay well under a few seconds each (the name is capped at the boundary with a
    digest, and kernels are matched through an index built once)."""
    import time

    p = tmp_path / "counter_collection.csv"
    with p.open("w") as fh:
        fh.write('"Dispatch_Id","Kernel_Name","Counter_Name","Counter_Value"\n')
        for i in range(200_000):
            fh.write(f'{i},"kern_{i % 20_000}","FETCH_SIZE",{i}.0\n')
    long = "k" * 200_000
    q = tmp_path / "long" / "counter_collection.csv"
    q.parent.mkdir()
    q.write_text('"Dispatch_Id","Kernel_Name","Counter_Name","Counter_Value"\n'
                 f'1,"{long}","FETCH_SIZE",1\n1,"{long}","WRITE_SIZE",1\n')
    t0 = time.perf_counter()
    cs = load_counters([p])
    assert len(cs.measurements) == 20_000
    for k in range(0, 20_000, 1000):
        assert match_measurement(cs, f"void kern_{k}(int)") is not None
    t1 = time.perf_counter()
    cl = load_counters([q])
    m = match_measurement(cl, long)
    t2 = time.perf_counter()
    assert m is not None and len(m.kernel) < 20_000 and m.bytes_per_dispatch == 2048
    assert t1 - t0 < 60 and t2 - t1 < 5


def _pmc_db(path: Path, view: str | None = None) -> Path:
    import sqlite3

    con = sqlite3.connect(path)
    if view:
        con.execute(view)
    else:
        con.execute("CREATE TABLE pmc_events (name TEXT, dispatch_id INTEGER, counter_name TEXT,"
                    " counter_value REAL)")
        con.executemany("INSERT INTO pmc_events VALUES (?, ?, ?, ?)",
                        [("k", 1, "FETCH_SIZE", 2.0), ("k", 1, "WRITE_SIZE", 6.0)])
    con.commit()
    con.close()
    return path


def test_rocpd_counter_db_name_cannot_inject_uri_parameters(tmp_path: Path) -> None:
    """``evil?mode=rwc&x=.db`` under counters/: read as itself, read-only; no ``evil`` file is
    created next to it (issue 16, "Wrong writes")."""
    d = tmp_path / "counters"
    d.mkdir()
    db = _pmc_db(d / "evil?mode=rwc&x=.db")
    before = sorted(p.name for p in d.iterdir())
    m = match_measurement(load_counters([db]), "k")
    assert m is not None and m.bytes_per_dispatch == 8 * 1024
    assert sorted(p.name for p in d.iterdir()) == before


def test_rocpd_runaway_pmc_view_stops_on_its_budget(tmp_path: Path, monkeypatch) -> None:
    import roofline_tui.core.measured.sqlite_ro as util

    monkeypatch.setattr(util, "SQLITE_TIME_BUDGET_S", 1.0)
    db = _pmc_db(tmp_path / "bomb.db",
                 "CREATE VIEW pmc_events AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL "
                 "SELECT x+1 FROM c) SELECT 'k' AS name, x AS dispatch_id, 'FETCH_SIZE' AS "
                 "counter_name, 1.0 AS counter_value FROM c WHERE x < 0")
    cs = load_counters([db])
    assert not cs.measurements
    assert any("time budget" in p for p in cs.problems)
