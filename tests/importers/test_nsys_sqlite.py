"""`roofline import nsys run.sqlite`: the Nsight Systems SQLite export.

The real export (pipit's CloverLeaf run, 4 A100s listed, kernels on device 0) is checked against
figures computed here with plain SQL; a small export built here with sqlite3 holds two devices,
NVTX step ranges with vLLM / SGLang labels and no MEMSET table.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from roofline_tui.importers.common import ImportProblem
from roofline_tui.importers.tables import import_nsys

from .conftest import REAL, need, run_cli

PIPIT = REAL / "wild" / "pipit_nsys2024.5.1_export_sqlite_cloverleaf_A100x4.sqlite"


def _raw(path: Path, sql: str) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        return list(con.execute(sql))
    finally:
        con.close()


def test_real_export_matches_raw_sql() -> None:
    path = need(PIPIT)
    kern = _raw(path, "SELECT deviceId, SUM(end - start), COUNT(*) FROM "
                      "CUPTI_ACTIVITY_KIND_KERNEL GROUP BY deviceId")
    copies = _raw(path, "SELECT deviceId, SUM(end - start), COUNT(*) FROM "
                        "CUPTI_ACTIVITY_KIND_MEMCPY GROUP BY deviceId")
    assert [r[0] for r in kern] == [0]  # the file's kernels are all on device 0
    top = _raw(path, "SELECT s.value, SUM(k.end - k.start), COUNT(*) FROM "
                     "CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName "
                     "GROUP BY s.value ORDER BY 2 DESC LIMIT 1")[0]
    res = import_nsys(path, top=10_000)
    doc = res.doc
    total_ns = int(kern[0][1]) + sum(int(r[1]) for r in copies if r[0] == 0)
    assert doc["total_gpu_time_ms"] == pytest.approx(total_ns / 1e6, abs=1e-4)
    assert doc["num_kernel_launches"] == int(kern[0][2]) + sum(
        int(r[2]) for r in copies if r[0] == 0)
    head = doc["top_kernels"][0]
    assert head["name"] == top[0] and head["calls"] == top[2]
    assert head["total_ms"] == pytest.approx(int(top[1]) / 1e6, abs=1e-4)
    # grid and block per launch, from the same rows
    grid = _raw(path, "SELECT gridX, gridY, gridZ, blockX, blockY, blockZ FROM "
                      "CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName "
                      f"WHERE s.value = '{top[0]}' LIMIT 1")[0]
    inst = head["x_roofline"]["instances"][0]
    assert inst["grid"] == list(grid[:3]) and inst["block"] == list(grid[3:])
    # the device named from TARGET_INFO_GPU; the three idle GPUs said in a note
    assert res.device_info is not None and res.device_info.arch == "sm_80"
    assert any("lists 4 GPUs" in n for n in doc["notes"])
    with pytest.raises(ImportProblem, match="--device-index 2 not found"):
        import_nsys(path, device_index=2)


def test_real_export_cli(tmp_path: Path) -> None:
    path = need(PIPIT)
    out = tmp_path / "round_0"
    proc = run_cli("nsys", path, "--out", out, "--top", "5")
    assert proc.returncode == 0, proc.stderr
    assert "nsys," in proc.stdout and "sm_80" in proc.stdout
    env = json.loads((out / "env_report.json").read_text())
    assert env["gfx"] == "sm_80" and "TARGET_INFO_GPU" in env["source"]


# --------------------------------------------------------------------- an export built here

VLLM_DECODE = "execute_context_0(0)_generation_4(4)"
VLLM_PREFILL = "execute_context_2(14721)_generation_0(0)"
SGL_DECODE = "step[DECODE bs=64 g_sqsq=64 g_sqsk=100032 g_sk=100032]"
TID = (7 << 24) | 11  # globalTid: pid 7, tid 11
PID = 7 << 24


def make_export(path: Path, *, memset: bool = False, gpus: bool = True,
                nvtx: bool = True) -> Path:
    """An nsys-shaped export: StringIds, kernels on devices 0 and 1 (device 1 busier), launch
    calls in CUPTI_ACTIVITY_KIND_RUNTIME, NVTX step ranges on the launching thread, memcpys;
    MEMSET, TARGET_INFO_GPU and NVTX_EVENTS only when asked."""
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER,
            correlationId INTEGER, globalPid INTEGER, demangledName INTEGER, shortName INTEGER,
            gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER, blockY INTEGER,
            blockZ INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER,
            globalTid INTEGER, correlationId INTEGER, nameId INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, end INTEGER, deviceId INTEGER,
            bytes INTEGER, copyKind INTEGER);
        CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER);
    """)
    names = {1: "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>>(Params)",
             2: "flash_fwd_kernel", 3: "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn",
             4: "ampere_bf16_s16816gemm", 5: VLLM_DECODE, 6: VLLM_PREFILL, 7: "cudaLaunchKernel"}
    con.executemany("INSERT INTO StringIds VALUES (?, ?)", names.items())
    # (start, end, device, corr, name id, short id, grid x): device 0 runs the decode and
    # prefill steps' kernels, device 1 one long GEMM (more time)
    launches = [
        (1000, 1400, 0, 1, 1, 2, 8), (1500, 2500, 0, 2, 3, 4, 64),  # decode step
        (11000, 13000, 0, 3, 1, 2, 96), (13100, 17100, 0, 4, 3, 4, 64),  # prefill step
        (20000, 20300, 0, 5, 1, 2, 8),  # launched outside every step
        (100, 9100, 1, 6, 3, 4, 128),
    ]
    for s, e, d, c, n, sn, gx in launches:
        con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?,?,?,?,?,?,?,?,1,1,128,1,1)",
                    (s, e, d, c, PID, n, sn, gx))
        con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,?,?,7)",
                    (s - 500 if c != 5 else 19000, s - 480, TID, c))
    con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?,?,?,?,?)",
                    [(30000, 30800, 0, 4096, 1), (31000, 31200, 0, 4096, 2),
                     (32000, 32050, 1, 64, 8)])
    if nvtx:
        con.executescript("""
            CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER,
                text TEXT, globalTid INTEGER, textId INTEGER);
        """)
        con.executemany("INSERT INTO NVTX_EVENTS VALUES (?,?,59,?,?,?)", [
            (400, 1200, None, TID, 5),  # vLLM decode step, text through StringIds
            (10000, 12800, VLLM_PREFILL, TID, None),  # vLLM prefill step, inline text
            (18000, 18500, SGL_DECODE, TID, None),  # an SGLang step with no launch inside
            (0, 40000, "my_range", TID, None),  # not a step label
        ])
    if memset:
        con.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER, end INTEGER, "
                    "deviceId INTEGER)")
        con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (33000, 33010, 0)")
    if gpus:
        con.executescript("""
            CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT, computeMajor INTEGER,
                computeMinor INTEGER, smCount INTEGER, threadsPerWarp INTEGER);
            INSERT INTO TARGET_INFO_GPU VALUES (0, 'NVIDIA A100-SXM4-80GB', 8, 0, 108, 32);
            INSERT INTO TARGET_INFO_GPU VALUES (1, 'NVIDIA H100 80GB HBM3', 9, 0, 132, 32);
        """)
    con.commit()
    con.close()
    return path


def test_built_export_two_devices_and_steps(tmp_path: Path) -> None:
    db = make_export(tmp_path / "run.sqlite")
    busiest = import_nsys(db)
    assert "using device 1" in busiest.device_message
    assert busiest.device_info is not None and busiest.device_info.arch == "sm_90"
    assert busiest.doc["total_gpu_time_ms"] == pytest.approx((9000 + 50) / 1e6, abs=5e-5)
    assert "serving" not in busiest.doc  # no launch of device 1 sits inside a step

    res = import_nsys(db, device_index=0)
    doc = res.doc
    assert res.device_info is not None and res.device_info.name == "NVIDIA A100-SXM4-80GB"
    # five kernels and two copies on device 0; no MEMSET table: no memset rows, no failure
    assert doc["num_kernel_launches"] == 7
    assert doc["total_gpu_time_ms"] == pytest.approx(
        (400 + 1000 + 2000 + 4000 + 300 + 800 + 200) / 1e6, abs=5e-5)
    by_name = {k["name"]: k for k in doc["top_kernels"]}
    gemm = by_name["ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn"]
    assert gemm["classification"] == "library_gemm"
    # a launch inside a step's range (by its launch call, same thread) takes that step's phase
    assert gemm["phase_calls_measured"] == {"prefill": 1, "decode": 1}
    attn = by_name["void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>>(Params)"]
    assert attn["calls"] == 3 and attn["phase_calls_measured"] == {"prefill": 1, "decode": 1}
    grids = sorted(i["grid"][0] for i in attn["x_roofline"]["instances"])
    assert grids == [8, 96] and attn["x_roofline"]["instances"][0]["block"] == [128, 1, 1]
    serving = doc["serving"]
    # three step ranges parsed (the SGLang one holds no launch but is a step all the same)
    assert serving["n_prefill_steps"] == 1 and serving["n_decode_steps"] == 2
    assert serving["step_labels"] == ["sglang", "vllm-native"]
    assert {"Memcpy HtoD", "Memcpy DtoH"} <= set(by_name)



def test_built_export_spread_across_its_gpus(tmp_path: Path) -> None:
    """Kernels on two GPUs: the Top-N (of the busiest, or the one named) lists both GPUs and
    each kernel's mean time per launch on each, computed here from the launches above."""
    db = make_export(tmp_path / "run.sqlite")
    doc = import_nsys(db).doc
    block = doc["x_roofline"]["ranks"]
    assert block["unit"] == "device" and block["rank"] == 1 and block["chosen_by"] == "slowest"
    assert [(t["rank"], t["launches"]) for t in block["traces"]] == [(0, 7), (1, 2)]
    assert block["traces"][1]["file"] == "device 1 (NVIDIA H100 80GB HBM3)"
    gemm = {k["name"]: k for k in doc["top_kernels"]}[
        "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn"]
    # device 0: launches of 1000 and 4000 ns (2.5 µs each); device 1: one of 9000 ns
    assert gemm["x_roofline"]["ranks"] == {"ranks": 2, "min_us": 2.5, "median_us": 5.75,
                                           "max_us": 9.0, "slowest_rank": 1}
    named = import_nsys(db, device_index=0).doc["x_roofline"]["ranks"]
    assert named["rank"] == 0 and named["chosen_by"] == "--device-index"

    out = tmp_path / "round_0"
    done = run_cli("nsys", db, "--out", out)
    assert done.returncode == 0, done.stderr
    md = (out / "profile_topN.md").read_text(encoding="utf-8")
    assert "## Devices" in md and "this Top-N is device **1** (the slowest device" in md
    assert "- device 1: `device 1 (NVIDIA H100 80GB HBM3)`" in md
    assert "slowest device |" in md

def test_built_export_missing_tables(tmp_path: Path) -> None:
    db = make_export(tmp_path / "bare.sqlite", gpus=False, nvtx=False, memset=True)
    res = import_nsys(db, device_index=0)
    assert res.device_info is None
    assert any("no TARGET_INFO_GPU table" in n for n in res.doc["notes"])
    assert "serving" not in res.doc
    assert "Memset" in {k["name"] for k in res.doc["top_kernels"]}


def test_export_without_kernels_is_refused_in_one_line(tmp_path: Path) -> None:
    db = tmp_path / "nokern.sqlite"
    con = sqlite3.connect(db)
    con.executescript("CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER);"
                      "CREATE TABLE StringIds (id INTEGER, value TEXT);")
    con.close()
    proc = run_cli("nsys", db, "--out", tmp_path / "r")
    assert proc.returncode == 1
    assert proc.stderr.strip().endswith("the run recorded no CUDA kernels; profile with "
                                        "`nsys profile --trace cuda`")
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "r" / "profile_topN.json").exists()


def test_export_is_opened_read_only(tmp_path: Path) -> None:
    db = make_export(tmp_path / "ro.sqlite")
    db.chmod(0o444)
    tmp_path.chmod(0o555)  # a read-only folder: no journal can be created beside it
    try:
        assert import_nsys(db).doc["num_kernel_launches"] > 0
        assert sorted(p.name for p in tmp_path.iterdir()) == ["ro.sqlite"]
    finally:
        tmp_path.chmod(0o755)
