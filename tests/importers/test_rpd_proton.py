"""Issue 35: rocmProfileData (``.rpd``, gzipped ``.rpd``, the rpd2tracing JSON) and Triton
Proton readers, and the sniffer naming every one of them (and rocprofv3 SPM CSVs) the same way
in ``import`` and ``analyze --counters``.

The real files are the shared ``wild/`` ones (ROCm/rocmProfileData ``matmul_result``, triton
``proton/test/examples/cuda.json``); the graph-launch miniature copies the real ``.rpd``'s own
schema (its ``CREATE`` statements) and holds hand-written rows; so does the roctx-step
miniature (no public rpd trace carries serving step labels).
"""

from __future__ import annotations

import gzip
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from roofline_tui.core.measured import load_counters
from roofline_tui.importers.common import ImportProblem
from roofline_tui.importers.proton import import_proton
from roofline_tui.importers.rpd import import_rpd
from roofline_tui.importers.sniff import refusal
from tests.paths import REAL_FORMATS

WILD = REAL_FORMATS / "wild"
RPD = WILD / "rpd_rocmProfileData_matmul_result.rpd"
RPD_JSON = WILD / "rpd2json_rocmProfileData_matmul_result.json"
PROTON = WILD / "proton_hatchet_cuda_example.json"
SPM = WILD / "rocprofv3_docs_streaming_performance_monitor.csv"


def _need(path: Path) -> Path:
    if not path.is_file():
        pytest.skip(f"{path.name} not present")
    return path


def test_rpd_database_totals() -> None:
    """matmul_result.rpd, by opType (plain SQL, see the corpus test): 2 CopyHostToDevice
    157,178,063 ns, 53 CopyDeviceToHost 334,758 ns, 1 FillBuffer 5,440 ns, 29 KernelExecution
    26,399,795 ns: 85 ops, 183,918,056 ns = 183.918056 ms on gpuId 2. The Tensile GEMM
    (1 launch, 26,211,956 ns) is the top kernel after the host-to-device copy."""
    res = import_rpd(_need(RPD))
    doc = res.doc
    assert doc["num_kernel_launches"] == 85
    assert doc["total_gpu_time_ms"] == pytest.approx(183.918056, abs=1e-4)
    names = [k["name"] for k in doc["top_kernels"]]
    assert names[0] == "Memcpy HtoD" and names[1].startswith("Cijk_Ailk_Bljk_SB_MT128x64x16")
    assert doc["top_kernels"][1]["total_ms"] == pytest.approx(26.211956, abs=1e-4)
    assert "Memcpy DtoH" in names and "Memset" in names
    assert res.device_message == "GPU 2"


def test_gzipped_rpd_reads_as_the_database(tmp_path: Path) -> None:
    """rpd files are often shipped gzipped: the same Top-N, and nothing left in tmp."""
    gz = tmp_path / "trace.rpd.gz"
    gz.write_bytes(gzip.compress(_need(RPD).read_bytes()))
    assert import_rpd(gz).doc == import_rpd(RPD).doc | {}  # same document
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trace.rpd.gz"]


def _empty_rpd(db: Path) -> sqlite3.Connection:
    """A new database at ``db`` with the real .rpd's own schema (its CREATE statements)."""
    src = sqlite3.connect(f"file:{_need(RPD)}?mode=ro&immutable=1", uri=True)
    schema = [sql for (sql,) in src.execute(
        "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'")]
    src.close()
    con = sqlite3.connect(db)
    for sql in schema:
        con.execute(sql)
    return con


def _miniature(tmp_path: Path) -> Path:
    """The real file's schema with: 2 KernelExecution of "gemm" (100 + 300 µs), 3 graph Task
    ops of "attn" (50 µs each), one CopyDeviceToDevice (40 µs), one Barrier (10 µs), on gpuId 0;
    one KernelExecution "gemm" of 1,000 µs on gpuId 1 (times in ns in the file)."""
    db = tmp_path / "mini.rpd"
    con = _empty_rpd(db)
    strings = ["gemm", "attn", "KernelExecution", "Task", "CopyDeviceToDevice", "Barrier", ""]
    for i, text in enumerate(strings, 1):
        con.execute("INSERT INTO rocpd_string (id, string) VALUES (?, ?)", (i, text))
    us = 1000
    ops = [(0, 0, 100 * us, 1, 3), (0, 200 * us, 500 * us, 1, 3), (0, 600 * us, 650 * us, 2, 4),
           (0, 700 * us, 750 * us, 2, 4), (0, 800 * us, 850 * us, 2, 4),
           (0, 900 * us, 940 * us, 7, 5), (0, 950 * us, 960 * us, 7, 6), (1, 0, 1000 * us, 1, 3)]
    cols = [r[1] for r in con.execute("PRAGMA table_info(rocpd_op)")]
    for gpu, start, end, desc, optype in ops:
        row = {"gpuId": gpu, "queueId": 0, "sequenceId": 0, "completionSignal": "",
               "start": start, "end": end, "description_id": desc, "opType_id": optype}
        keys = [c for c in cols if c in row]
        con.execute(f"INSERT INTO rocpd_op ({', '.join(keys)}) VALUES "
                    f"({', '.join('?' for _ in keys)})", [row[k] for k in keys])
    con.commit()
    con.close()
    return db


def test_graph_tasks_are_kernels(tmp_path: Path) -> None:
    """GPU 0 holds 100 + 300 + 3 × 50 + 40 = 590 µs of kernels and copies (the 10 µs barrier is
    neither, said in a note) against GPU 1's 1,000 µs; --device-index 0 keeps GPU 0: gemm 400 µs
    in 2 launches, attn (graph tasks) 150 µs in 3, Memcpy DtoD 40 µs."""
    db = _miniature(tmp_path)
    busiest = import_rpd(db)
    assert busiest.device_message.startswith("profile has 2 GPUs")
    assert busiest.doc["total_gpu_time_ms"] == pytest.approx(1.0)
    res = import_rpd(db, device_index=0)
    rows = {k["name"]: (k["calls"], round(k["total_ms"] * 1e3)) for k in res.doc["top_kernels"]}
    assert rows == {"gemm": (2, 400), "attn": (3, 150), "Memcpy DtoD": (1, 40)}
    assert any("1 Barrier" in n for n in res.notes)


def _with_steps(tmp_path: Path) -> Path:
    """The miniature's schema with roctx ranges: a vLLM decode step (0–1,000 µs on thread 11)
    holding the launch calls of two "gemm" kernels, a vLLM prefill step (2,000–3,000 µs)
    holding one, a range whose text is no step label around everything, and one "gemm"
    launched outside every step (times in ns). rpd records a range as a ``UserMarker`` API row
    with its text in ``args``; each op's launch call is tied to it by ``rocpd_api_ops``."""
    db = tmp_path / "steps.rpd"
    con = _empty_rpd(db)
    strings = ["gemm", "KernelExecution", "UserMarker", "hipLaunchKernel", "",
               "execute_context_0(0)_generation_4(4)",
               "execute_context_2(14721)_generation_0(0)", "my_range"]
    for i, text in enumerate(strings, 1):
        con.execute("INSERT INTO rocpd_string (id, string) VALUES (?, ?)", (i, text))
    us = 1000
    # (api id, tid, start, end, apiName id, args id)
    apis = [(1, 11, 0, 1000 * us, 3, 6), (2, 11, 2000 * us, 3000 * us, 3, 7),
            (3, 11, 0, 9000 * us, 3, 8),
            (4, 11, 100 * us, 101 * us, 4, 5), (5, 11, 200 * us, 201 * us, 4, 5),
            (6, 11, 2100 * us, 2101 * us, 4, 5), (7, 11, 5000 * us, 5001 * us, 4, 5)]
    for aid, tid, start, end, name, args in apis:
        con.execute("INSERT INTO rocpd_api (id, pid, tid, start, end, apiName_id, args_id) "
                    "VALUES (?, 1, ?, ?, ?, ?, ?)", (aid, tid, start, end, name, args))
    # (op id, start, end, launching api id): 100 µs decode, 100 µs decode, 400 µs prefill,
    # 50 µs outside
    ops = [(1, 150 * us, 250 * us, 4), (2, 300 * us, 400 * us, 5),
           (3, 2200 * us, 2600 * us, 6), (4, 5100 * us, 5150 * us, 7)]
    for oid, start, end, api in ops:
        con.execute("INSERT INTO rocpd_op (id, gpuId, queueId, sequenceId, completionSignal, "
                    "start, end, description_id, opType_id) VALUES (?, 0, 0, 0, '', ?, ?, 1, 2)",
                    (oid, start, end))
        con.execute("INSERT INTO rocpd_api_ops (api_id, op_id) VALUES (?, ?)", (api, oid))
    con.commit()
    con.close()
    return db


def test_roctx_step_ranges_give_kernels_their_phase(tmp_path: Path) -> None:
    """Two of the four launches sit in the decode step, one in the prefill step, one in
    none: the Top-N's gemm row counts 2 decode and 1 prefill calls, and the serving block
    has one step of each (the range named ``my_range`` is no step)."""
    res = import_rpd(_with_steps(tmp_path))
    (gemm,) = [k for k in res.doc["top_kernels"] if k["name"] == "gemm"]
    assert gemm["calls"] == 4 and gemm["total_ms"] == pytest.approx(0.65)
    assert gemm["phase_calls_measured"] == {"decode": 2, "prefill": 1}
    serving = res.doc["serving"]
    assert serving["n_decode_steps"] == 1 and serving["n_prefill_steps"] == 1
    assert serving["step_labels"] == ["vllm-native"]
    assert any("2 roctx range(s) are serving steps" in n and "3 GPU op(s)" in n
               for n in res.notes)


def test_roctx_ranges_without_step_labels_are_said(tmp_path: Path) -> None:
    db = _with_steps(tmp_path)
    con = sqlite3.connect(db)
    con.execute("UPDATE rocpd_string SET string = 'warmup' WHERE id IN (6, 7)")
    con.commit()
    con.close()
    res = import_rpd(db)
    assert "serving" not in res.doc
    assert "phase_calls_measured" not in res.doc["top_kernels"][0]
    assert any("none a vLLM / SGLang / ATOM step label" in n for n in res.notes)


def test_rpd2tracing_json() -> None:
    """The export of the same trace: 85 X events on pid "2" (process "GPU2"), 29 kernels, 55
    copies, 1 fill; their durations (µs strings) sum to 183.859 ms (the export rounds)."""
    doc = import_rpd(_need(RPD_JSON)).doc
    assert doc["num_kernel_launches"] == 85
    assert doc["total_gpu_time_ms"] == pytest.approx(183.859, abs=1e-3)


def test_proton_kernels_and_measured_values() -> None:
    """cuda.json: foo0 (10 launches, 204,800 ns, flops8 1e11, bytes 1e8) on device 1 (sm_90),
    foo1 (1 launch, 204,800 ns, flops8 1e10, bytes 1e7) on device 0 (sm_89). The tie goes to
    device 0; --device-index 1 keeps foo0. As counters: foo0 1e8 / 10 = 1e7 B and 1e11 / 10 =
    1e10 FLOP per launch, 20.48 µs each."""
    path = _need(PROTON)
    first = import_proton(path)
    assert [k["name"] for k in first.doc["top_kernels"]] == ["foo1"]
    assert first.device_info is not None and first.device_info.arch == "sm_89"
    other = import_proton(path, device_index=1)
    assert other.doc["top_kernels"][0]["calls"] == 10
    assert other.device_info is not None and other.device_info.arch == "sm_90"
    m = load_counters([path]).measurements["foo0"]
    assert (m.source, m.dispatches, m.bytes_per_dispatch) == ("proton", 10, 1e7)
    assert m.flops_by_dtype == {"fp8": 1e10} and m.duration_s == pytest.approx(20.48e-6)


def test_every_command_names_the_formats() -> None:
    """Each file given to the wrong command is named with the command that reads it; the SPM
    CSV is said to be unsupported by `import` and by `analyze --counters` alike."""
    assert "roofline import rpd" in (refusal(_need(RPD), "rocprofv3") or "")
    assert "roofline import rpd" in (refusal(_need(RPD_JSON), "torch") or "")
    assert "Triton Proton" in (refusal(_need(PROTON), "torch") or "")
    spm = refusal(_need(SPM), "rocprofv3") or ""
    assert "streaming-performance-monitor (SPM)" in spm and "no kernel names" in spm
    problems = load_counters([SPM]).problems
    assert len(problems) == 1 and "SPM" in problems[0] and "not supported" in problems[0]


def test_damaged_gzip_rpd_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "cut.rpd.gz"
    bad.write_bytes(gzip.compress(_need(RPD).read_bytes())[:5000])
    with pytest.raises(ImportProblem) as info:
        import_rpd(bad)
    assert "\n" not in str(info.value) and "gzip" in str(info.value)


def test_import_proton_cli_carries_metrics_into_the_round(tmp_path: Path) -> None:
    """`import proton` writes the Top-N and copies the profile into counters/, where `analyze`
    reads it: stage C, no --counters needed; a second import never replaces the copy."""
    out = tmp_path / "round_0"
    cmd = [sys.executable, "-m", "roofline_tui", "import", "proton", str(_need(PROTON)),
           "--out", str(out)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    copied = out / "counters" / "proton_hatchet_cuda_example.hatchet"
    assert copied.read_bytes() == PROTON.read_bytes()
    ana = subprocess.run([sys.executable, "-m", "roofline_tui", "analyze", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert ana.returncode == 0, ana.stderr
    assert "stage C" in ana.stdout
    shutil.rmtree(out / "counters")
