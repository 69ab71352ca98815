"""`roofline import nsys run.sqlite`: the Nsight Systems SQLite export.

The real export (pipit's CloverLeaf run, 4 A100s listed, kernels on device 0) is checked against
figures computed here with plain SQL; a small export built here with sqlite3 holds two devices,
NVTX step ranges with vLLM / SGLang labels and no MEMSET table.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from roofline_tui.importers.common import ImportProblem
from roofline_tui.importers.nsys import import_nsys

from .conftest import REAL, REPO, need, run_cli

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


# ------------------------------------------------- SQLite opened the way SQLite expects (issue 36)

WAL_KERNEL = "void wal_only_gemm_kernel<128, 64>(Params)"
WAL_LAUNCHES = 1000
WAL_NS = 100_000  # each WAL launch: 100 µs on device 0


def make_wal_export(tmp: Path) -> Path:
    """:func:`make_export`'s file turned to WAL mode, then 1,000 launches of one kernel on
    device 0 written to its ``-wal`` only (autocheckpoint off; ``tmp/wal`` is copied while the
    writer is still open, so the database file there never holds them)."""
    src, out = tmp / "writer", tmp / "wal"
    src.mkdir()
    out.mkdir()
    db = make_export(src / "run.sqlite")
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA wal_autocheckpoint=0")
    con.execute("INSERT INTO StringIds VALUES (100, ?)", (WAL_KERNEL,))
    con.executemany(
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?,?,0,?,?,100,100,32,1,1,128,1,1)",
        [(50_000 + i * 200_000, 50_000 + i * 200_000 + WAL_NS, 1000 + i, PID)
         for i in range(WAL_LAUNCHES)])
    con.commit()
    for name in ("run.sqlite", "run.sqlite-wal"):
        shutil.copy(src / name, out / name)
    con.close()
    return out / "run.sqlite"


def _fingerprint(*paths: Path) -> list[tuple[bytes, int]]:
    return [(p.read_bytes(), p.stat().st_mtime_ns) for p in paths]


def _check_wal_read(doc: dict[str, Any]) -> None:
    """Device 0 with the log: kernels 400 + 1,000 + 2,000 + 4,000 + 300 ns, the log's
    1,000 × 100,000 ns, copies 800 + 200 ns: 100,008,700 ns in 5 + 1,000 + 2 launches (device
    1, 9,050 ns, is no longer the busiest). Without the log: device 1, 2 launches."""
    assert doc["num_kernel_launches"] == 1007
    assert doc["total_gpu_time_ms"] == pytest.approx(100_008_700 / 1e6, abs=5e-5)
    head = doc["top_kernels"][0]
    assert head["name"] == WAL_KERNEL and head["calls"] == WAL_LAUNCHES
    assert head["total_ms"] == pytest.approx(WAL_LAUNCHES * WAL_NS / 1e6, abs=5e-5)


def test_a_wal_export_is_read_with_its_log(tmp_path: Path) -> None:
    db = make_wal_export(tmp_path)
    wal = db.with_name("run.sqlite-wal")
    assert _raw(db, "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL") == [(6,)]  # file alone
    before = _fingerprint(db, wal)
    res = import_nsys(db)
    assert "using device 0" in res.device_message
    _check_wal_read(res.doc)
    assert any("read with its write-ahead log (run.sqlite-wal, " in n for n in res.doc["notes"])
    assert _fingerprint(db, wal) == before  # nothing checkpointed into the user's files


def test_a_wal_export_in_a_read_only_folder_is_read_in_place(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The folder cannot take SQLite's ``-shm``: the log is read in place with its index in
    memory, nothing is created or written. Simulated: the tests run as root, whom chmod 0555
    does not stop, so the folder check is made to answer "not writable" (the next test uses a
    real read-only mount where it can)."""
    from roofline_tui.core.measured import sqlite_ro

    db = make_wal_export(tmp_path)
    wal = db.with_name("run.sqlite-wal")
    before = _fingerprint(db, wal)
    monkeypatch.setattr(sqlite_ro, "_writable_dir", lambda _path: False, raising=False)
    db.parent.chmod(0o555)
    try:
        res = import_nsys(db)
        listing = sorted(p.name for p in db.parent.iterdir())
    finally:
        db.parent.chmod(0o755)
    _check_wal_read(res.doc)
    assert listing == ["run.sqlite", "run.sqlite-wal"]  # no -shm made beside it
    assert any("in place: a read-only folder" in n for n in res.doc["notes"])
    assert _fingerprint(db, wal) == before


def _can_mount_read_only() -> bool:
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True, timeout=30)
    return probe.returncode == 0


MOUNTED = ('mount --bind -o ro "$1" "$2" || exit 97; touch "$2/probe" 2>/dev/null && exit 98; '
           'exec "$3" -m roofline_tui import nsys "$2/run.sqlite" --out "$4"')


@pytest.mark.skipif(not _can_mount_read_only(), reason="no user and mount namespaces here")
def test_a_wal_export_on_a_read_only_mount(tmp_path: Path) -> None:
    """The same export on a read-only bind mount (a private mount namespace: writes fail
    there for root too), through the command: sniffed and imported with its log."""
    db = make_wal_export(tmp_path)
    before = _fingerprint(db, db.with_name("run.sqlite-wal"))
    mnt, out = tmp_path / "mnt", tmp_path / "round_0"
    mnt.mkdir()
    proc = subprocess.run(["unshare", "-rm", "sh", "-c", MOUNTED, "sh", str(db.parent),
                           str(mnt), sys.executable, str(out)],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    doc = json.loads((out / "profile_topN.json").read_text())
    _check_wal_read(doc)
    assert any("in place: a read-only folder" in n for n in doc["notes"])
    assert sorted(p.name for p in db.parent.iterdir()) == ["run.sqlite", "run.sqlite-wal"]
    assert _fingerprint(db, db.with_name("run.sqlite-wal")) == before


@pytest.mark.parametrize("column", ["shortName", "demangledName", "mangledName"])
def test_a_kernel_table_with_one_name_column(tmp_path: Path, column: str) -> None:
    """One name column (no demangledName/shortName pair): id 1 launched twice (300 + 500
    ns), id 2 once (1,000 ns): 1,800 ns in 3 launches, id 2 first."""
    db = tmp_path / "one.sqlite"
    con = sqlite3.connect(db)
    con.executescript(f"""
        CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER,
            deviceId INTEGER, {column} INTEGER);
        INSERT INTO StringIds VALUES (1, 'triton_poi_fused_add_mul_0'),
            (2, 'ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn');
        INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (0, 300, 0, 1), (400, 900, 0, 1),
            (1000, 2000, 0, 2);
    """)
    con.close()
    doc = import_nsys(db).doc
    assert doc["num_kernel_launches"] == 3
    assert doc["total_gpu_time_ms"] == pytest.approx(1800 / 1e6, abs=5e-6)
    assert [(k["name"], k["calls"]) for k in doc["top_kernels"]] == [
        ("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn", 1),
        ("triton_poi_fused_add_mul_0", 2)]


STEP_LAUNCHES = 3000  # item 7's 1.2M launches in NVTX steps, scaled down


def make_stepped_export(path: Path) -> Path:
    """3,000 launches of one kernel (1 µs each, device 0), each launch call inside one of 30
    vLLM decode steps of 100 launches (the per-launch path: steps and launch calls)."""
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER,
            correlationId INTEGER, globalPid INTEGER, demangledName INTEGER, shortName INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER,
            globalTid INTEGER, correlationId INTEGER);
        CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, text TEXT, globalTid INTEGER);
    """)
    con.execute("INSERT INTO StringIds VALUES (1, 'triton_poi_fused_add_mul_0')")
    con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?,?,0,?,?,1,1)",
                    [(i * 10_000 + 5000, i * 10_000 + 6000, i, PID)
                     for i in range(STEP_LAUNCHES)])
    con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,?,?)",
                    [(i * 10_000, i * 10_000 + 100, TID, i) for i in range(STEP_LAUNCHES)])
    con.executemany("INSERT INTO NVTX_EVENTS VALUES (?,?,?,?)",
                    [(s * 1_000_000, s * 1_000_000 + 999_000, VLLM_DECODE, TID)
                     for s in range(STEP_LAUNCHES // 100)])
    con.commit()
    con.close()
    return path


def _slow_own_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """The importer's work on each launch made to take ~0.2 ms more: 0.1 ms asleep (the
    machine busy elsewhere) and 0.1 ms of this thread's CPU (our own Python work)."""
    from roofline_tui.importers.step_spans import StepSpans

    at = StepSpans.at

    def slow_at(self: Any, tid: int, t: float) -> int | None:
        time.sleep(1e-4)
        start = time.thread_time()
        while time.thread_time() - start < 1e-4:
            pass
        return at(self, tid, t)

    monkeypatch.setattr(StepSpans, "at", slow_at)


def test_the_time_budget_counts_sqlite_s_own_work_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """3,000 launches × ≥ 0.2 ms of our own (slowed) work = ≥ 0.6 s, against a budget of
    0.3 s: SQLite's own work on these rows is a few ms, so the import passes however slow our
    side or the machine is (it failed when the budget was a wall clock from the open)."""
    from roofline_tui.importers.nsys import sqlite as nsys_sqlite

    db = make_stepped_export(tmp_path / "steps.sqlite")
    monkeypatch.setattr(nsys_sqlite, "SQLITE_TIME_BUDGET_S", 0.3)
    _slow_own_work(monkeypatch)
    t0 = time.monotonic()
    doc = import_nsys(db).doc
    assert time.monotonic() - t0 > 0.6  # the slowed work did happen
    assert doc["num_kernel_launches"] == STEP_LAUNCHES
    (kern,) = doc["top_kernels"]
    assert kern["phase_calls_measured"] == {"decode": STEP_LAUNCHES}


def test_the_step_budget_stops_at_the_same_place_whatever_the_load(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A step budget of 30,000 VM steps stops the per-launch read; where it stops (the
    query, the rows read) is the same with our work slowed as without, and is said."""
    from roofline_tui.core.measured import sqlite_ro

    db = make_stepped_export(tmp_path / "steps.sqlite")
    monkeypatch.setattr(sqlite_ro, "SQLITE_STEP_BUDGET", 30_000)
    with pytest.raises(ImportProblem) as plain:
        import_nsys(db)
    _slow_own_work(monkeypatch)
    with pytest.raises(ImportProblem) as slowed:
        import_nsys(db)
    assert str(plain.value) == str(slowed.value)
    assert str(plain.value).startswith(
        "steps.sqlite: query stopped: SQLite's own work passed its step budget (30,000 SQLite "
        "VM steps) while reading CUPTI_ACTIVITY_KIND_KERNEL (one row per launch), ")


def test_a_runaway_view_is_stopped_and_says_where(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel "table" that is a view never ending: stopped once SQLite itself has spent
    0.2 s of CPU on it, naming the budget and the read it stopped."""
    from roofline_tui.importers.nsys import sqlite as nsys_sqlite

    db = tmp_path / "bomb.sqlite"
    con = sqlite3.connect(db)
    con.executescript("""
        CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
        CREATE VIEW CUPTI_ACTIVITY_KIND_KERNEL AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL
            SELECT x + 1 FROM c) SELECT x AS start, x + 1 AS "end", 0 AS deviceId,
            1 AS demangledName, 1 AS shortName FROM c;
    """)
    con.close()
    monkeypatch.setattr(nsys_sqlite, "SQLITE_TIME_BUDGET_S", 0.2)
    with pytest.raises(ImportProblem) as exc:
        import_nsys(db)
    assert str(exc.value) == (
        "bomb.sqlite: query stopped: SQLite's own work passed its time budget (0.2 s of CPU "
        "time inside SQLite; this tool's own work and the machine's load are not counted) "
        "while reading CUPTI_ACTIVITY_KIND_KERNEL (summed by name and geometry), 0 rows in")
