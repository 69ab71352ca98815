"""The sniffer table (importers/sniff.py): one test per row, each on a small file of that kind,
and every `roofline import` command naming another tool's file instead of failing to decode it."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from roofline_tui.importers.sniff import NSYS, PROTON, ROCPROF, RPD, RULES, TORCH, check, sniff

from .conftest import run_cli

Maker = Callable[[Path], Path]


def _text(name: str, body: str) -> Maker:
    def make(tmp: Path) -> Path:
        p = tmp / name
        p.write_text(body)
        return p
    return make


def _bytes(name: str, body: bytes) -> Maker:
    def make(tmp: Path) -> Path:
        p = tmp / name
        p.write_bytes(body)
        return p
    return make


def _db(name: str, *tables: str) -> Maker:
    def make(tmp: Path) -> Path:
        p = tmp / name
        con = sqlite3.connect(p)
        for t in tables:
            con.execute(f"CREATE TABLE {t} (x INTEGER)")
        con.commit()
        con.close()
        return p
    return make


def _cut(name: str) -> Maker:
    """An export of several pages cut off in its third page (a full disk, a copy that died)."""
    def make(tmp: Path) -> Path:
        p = _db(name, "CUPTI_ACTIVITY_KIND_KERNEL", "StringIds")(tmp)
        con = sqlite3.connect(p)
        con.executemany("INSERT INTO StringIds VALUES (?)", [(i,) for i in range(3000)])
        con.commit()
        con.close()
        p.write_bytes(p.read_bytes()[:2 * 4096 + 1000])
        return p
    return make


def _beside(suffix: str, body: bytes | None) -> Maker:
    """An nsys export with a file beside it: ``body`` written, or ``None``: a FIFO."""
    def make(tmp: Path) -> Path:
        p = _db("run.sqlite", "CUPTI_ACTIVITY_KIND_KERNEL", "StringIds")(tmp)
        side = tmp / f"run.sqlite{suffix}"
        if body is None:
            os.mkfifo(side)
        else:
            side.write_bytes(body)
        return p
    return make


def _gzipped(tmp: Path) -> Path:
    db = _db("run.sqlite", "CUPTI_ACTIVITY_KIND_KERNEL", "StringIds")(tmp)
    p = tmp / "run.sqlite.gz"
    p.write_bytes(gzip.compress(db.read_bytes()))
    db.unlink()
    return p


NCU_HEAD = '"ID","Process ID","Process Name","Host Name","Kernel Name","Metric Name","Metric Value"\n'
# kind -> a file of that kind
SAMPLES: dict[str, Maker] = {
    "nsys-rep": _bytes("run.nsys-rep", b"\x00\x01NSYS\x00binary report"),
    "qdrep": _bytes("old.qdrep", b"\x00\x01QDREP\x00binary report"),
    "ncu-rep": _bytes("k.ncu-rep", b"\x0a\x10NVIDIA Nsight Compute\x00\x00"),
    "xplane": _bytes("tw003.xplane.pb", b"\x0a\xa1\xf0\x08\x12\x0e/host:metadata\x22\xbf"),
    "xplane-bytes": _bytes("profile.pb", b"\x0a\xa1\xf0\x08\x12\x0e/host:metadata\x22\xbf\x00"),
    "nsys-sqlite": _db("run.sqlite", "CUPTI_ACTIVITY_KIND_KERNEL", "StringIds"),
    "nsys-sqlite-nokernels": _db("cpu.sqlite", "TARGET_INFO_SESSION_START_TIME", "OSRT_API"),
    "rocpd": _db("run.db", "rocpd_kernel_dispatch", "rocpd_string"),
    "rocpd-views": _db("views.db", "kernels"),
    "sqlite": _db("other.db", "t"),
    "sqlite-truncated": _cut("cut.sqlite"),
    "sqlite-journal": _beside("-journal", b"\xd9\xd5\x05\xf9\x20\xa1\x63\xd7" + bytes(504)),
    "sqlite-sibling": _beside("-wal", None),
    "sqlite-gzip": _gzipped,
    "rocprofv3-json": _text("results.json", '{"rocprofiler-sdk-tool": [{"agents": []}]}'),
    "kineto": _text("t.json", '{"schemaVersion": 1, "traceEvents": []}'),
    "nsys-gpu-trace": _text("gpu_trace.csv", "Start (ns),Duration (ns),CorrId,GrdX,Name\n"
                                             "1,2,3,4,k\n"),
    "nsys-kern-sum": _text("kern.csv", "Time (%),Total Time (ns),Instances,Name\n50,1,1,k\n"),
    "nsys-console": _text("console.txt", "[3/8] Executing 'nvtx_sum' stats report\n\nx\n"),
    "rocprofv3-summary": _text("summary.txt", "\nROCPROFV3 HIP_API SUMMARY:\n\n| NAME |\n"),
    "nvprof": _text("nvprof.log", "==2119== NVPROF is profiling process 2119\n"),
    "ncu-log": _text("ncu.log", "app output\n==PROF== Connected to process 1\n" + NCU_HEAD),
    "ncu-csv": _text("ncu.csv", NCU_HEAD),
    "rocprofv3-counters": _text("cc.csv", '"Dispatch_Id","Kernel_Name","Counter_Name",'
                                          '"Counter_Value"\n1,k,SQ_WAVES,4\n'),
    "rocprof-compute-pmc": _text("pmc_perf.csv", "Dispatch_ID,Kernel_Name,GPU_ID,Grid_Size,"
                                                 "SQ_WAVES\n0,k,0,64,1\n"),
    "rocprofv3-kernel-trace": _text("kernel_trace.csv", '"Kind","Agent_Id","Kernel_Name",'
                                                        '"Start_Timestamp","End_Timestamp"\n'),
    "rocprofv3-memory-copy": _text("memory_copy_trace.csv", '"Kind","Direction",'
                                   '"Source_Agent_Id","Destination_Agent_Id"\n'),
    "rocprofv3-stats": _text("kernel_stats.csv", '"Name","Calls","TotalDurationNs"\n'),
    "rocprof-legacy": _text("results.csv", '"Index","KernelName","BeginNs","EndNs"\n'),
    "rocprof-pmc": _text("pmc.csv", "Index,KernelName,gpu-id,grd,FETCH_SIZE\n"),
    "rpd": _db("trace.rpd", "rocpd_op", "rocpd_string", "rocpd_api"),
    "rpd-json": _text("trace.json", '[ {}\n,{"name": "process_name", "ph": "M", "pid":"2",'
                                    '"args":{"name":"GPU2"}}\n,{"pid":"2","tid":"0","name":"k","ts":"1",'
                                    '"dur":"2","ph":"X","args":{"desc":"KernelExecution"}}\n]'),
    "proton": _text("p.hatchet", '[{"children": [], "frame": {"name": "ROOT", "type": '
                                 '"function"}, "metrics": {"count": 0}}, {}]'),
    "rocprofv3-spm": _text("spm.csv", '"Dispatch_Id","Counter_Name","Counter_Value"\n'
                                      '1,"SQ_WAVES",16384\n'),
}


def test_every_row_has_a_sample() -> None:
    assert sorted(SAMPLES) == sorted(r.kind for r in RULES)


@pytest.mark.parametrize("kind", [r.kind for r in RULES])
def test_row(kind: str, tmp_path: Path) -> None:
    path = SAMPLES[kind](tmp_path)
    rule = sniff(path)
    assert rule is not None and rule.kind == kind
    for reader in (NSYS, ROCPROF, TORCH, RPD, PROTON):
        verdict = check(path, reader)
        if rule.reader == reader:
            assert verdict.refusal is None
        elif rule.damaged:  # no command reads it: what is wrong, whichever was asked
            line = verdict.refusal
            assert line is not None and "\n" not in line and "not for `roofline" not in line
            assert line.startswith(f"{path.name}: {rule.what}")
            assert line.endswith(rule.instead.replace("{name}", path.name))
        else:
            line = verdict.refusal
            assert line is not None and "\n" not in line
            assert line.startswith(f"{path.name}: {rule.what}, not for `roofline import "
                                   f"{reader}`; {rule.instead}")


def test_gzipped_text_is_sniffed_inflated(tmp_path: Path) -> None:
    p = tmp_path / "t.json.gz"
    p.write_bytes(gzip.compress(json.dumps({"traceEvents": []}).encode()))
    rule = sniff(p)
    assert rule is not None and rule.kind == "kineto"


def test_a_kineto_event_array_naming_a_gpu_process_is_left_to_torch(tmp_path: Path) -> None:
    # a bare Kineto array may name its device process "GPU 0" as rpd2tracing does; its ops
    # carry no "desc", so `import torch` is not refused and `import rpd` is not offered
    p = tmp_path / "a.json"
    p.write_text(json.dumps([{"ph": "M", "name": "process_name", "pid": 0,
                              "args": {"name": "GPU 0"}},
                             {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7,
                              "ts": 1.0, "dur": 2.0, "args": {"correlation": 1}}]))
    rule = sniff(p)
    assert rule is None or rule.kind != "rpd-json"
    assert check(p, TORCH).refusal is None


def test_unknown_binary_is_named_binary(tmp_path: Path) -> None:
    p = tmp_path / "blob.csv"
    p.write_bytes(bytes(range(256)) * 8)
    assert sniff(p) is None
    line = check(p, NSYS).refusal
    assert line is not None and "binary data of a kind this tool does not know" in line


@pytest.mark.parametrize("command,kind,expected", [
    ("nsys", "nsys-rep", "nsys export --type sqlite"),
    ("torch", "nsys-rep", "nsys export --type sqlite"),
    ("rocprofv3", "nsys-rep", "nsys stats --report cuda_gpu_kern_sum"),
    ("torch", "ncu-rep", "roofline analyze --counters"),
    ("torch", "xplane", "a JAX/XLA profile"),
    ("torch", "nsys-sqlite", "import it with `roofline import nsys`"),
    ("nsys", "rocpd", "import it with `roofline import rocprofv3`"),
])
def test_every_import_command_names_other_tools_files(
        command: str, kind: str, expected: str, tmp_path: Path) -> None:
    path = SAMPLES[kind](tmp_path)
    proc = run_cli(command, path, "--out", tmp_path / "round")
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr and "UnicodeDecodeError" not in proc.stderr
    assert not (tmp_path / "round" / "profile_topN.json").exists()


# ------------------------------------------- SQLite files no command reads as they are (issue 36)

NEITHER = "an SQLite database with neither Nsight Systems tables"
KILLED_WRITER = r'''
import os, sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
con.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER)")
con.commit()
con.execute("PRAGMA cache_size = 1")  # pages spill into the file before the commit
con.execute("BEGIN")
con.executemany("INSERT INTO StringIds (value) VALUES (?)", [("k" * 400,)] * 4000)
os._exit(9)  # killed mid-transaction: the journal stays, the file holds half a write
'''


def _killed_writer(path: Path) -> Path:
    subprocess.run([sys.executable, "-c", KILLED_WRITER, str(path)], check=False, timeout=60)
    journal = path.with_name(path.name + "-journal")
    assert journal.stat().st_size > 0 and journal.read_bytes()[:1] != b"\x00"
    return path


def _lines(path: Path) -> str | None:
    return check(path, NSYS).refusal


def test_a_killed_writer_s_journal_is_refused_with_its_own_line(tmp_path: Path) -> None:
    """A writer killed mid-transaction leaves ``-journal``: what the file holds is half a
    write (SQLite would roll it back; the file is never written here), so it is refused,
    naming the journal; today it is "an SQLite database with neither Nsight Systems tables"."""
    db = _killed_writer(tmp_path / "run.sqlite")
    before = (db.read_bytes(), db.stat().st_mtime_ns)
    line = _lines(db)
    assert line is not None and NEITHER not in line
    assert line.startswith("run.sqlite: an SQLite database its writer did not finish "
                           "(run.sqlite-journal beside it); a rollback journal")
    assert (db.read_bytes(), db.stat().st_mtime_ns) == before  # nothing rolled back in place
    proc = run_cli("nsys", db, "--out", tmp_path / "round")
    assert proc.returncode == 1 and proc.stderr.strip().endswith(line)
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_truncated_export_is_refused_with_its_figures(tmp_path: Path) -> None:
    """An export cut in its third page: 4,096 × 2 + 1,000 = 9,192 bytes of the pages its
    header declares (4,096-byte pages)."""
    db = _cut("run.sqlite")(tmp_path)
    pages = int.from_bytes(db.read_bytes()[28:32], "big")
    line = _lines(db)
    assert line is not None and NEITHER not in line
    assert line.startswith(f"run.sqlite: a truncated SQLite database (9,192 of the "
                           f"{pages * 4096:,} bytes its header declares); the file was cut off")
    assert pages * 4096 > 9192
    for reader in (ROCPROF, TORCH):  # no command reads it
        assert check(db, reader).refusal == line


def test_a_gzipped_export_says_gunzip(tmp_path: Path) -> None:
    db = _gzipped(tmp_path)
    line = _lines(db)
    assert line == ("run.sqlite.gz: a gzipped SQLite database; run `gunzip -k run.sqlite.gz` "
                    "and import the database it leaves (a gzipped rocmProfileData trace: "
                    "`roofline import rpd` reads it as it is)")


def test_a_wal_export_in_a_read_only_folder_is_an_nsys_export(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A WAL-mode export whose tables are all in its ``-wal`` (never checkpointed), in a
    folder SQLite cannot write (simulated: the tests run as root, whom chmod does not stop,
    so the folder check answers "not writable"): the sniffer reads the log and lets `import
    nsys` have it; nothing is created beside it."""
    from roofline_tui.core.measured import sqlite_ro

    src, ro = tmp_path / "src", tmp_path / "ro"
    src.mkdir()
    ro.mkdir()
    con = sqlite3.connect(src / "run.sqlite")
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA wal_autocheckpoint=0")
    con.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER)")
    con.commit()
    for name in ("run.sqlite", "run.sqlite-wal"):  # copied while the writer is open
        shutil.copy(src / name, ro / name)
    con.close()
    monkeypatch.setattr(sqlite_ro, "_writable_dir", lambda _path: False, raising=False)
    ro.chmod(0o555)
    try:
        verdict = check(ro / "run.sqlite", NSYS)
        assert verdict.rule is not None and verdict.rule.kind == "nsys-sqlite"
        assert verdict.refusal is None
        assert sorted(p.name for p in ro.iterdir()) == ["run.sqlite", "run.sqlite-wal"]
    finally:
        ro.chmod(0o755)


def test_the_three_refusals_each_have_their_own_line(tmp_path: Path) -> None:
    """Journal left over, cut off, gzipped: three lines, none the generic one (the fourth
    case, a WAL export in a read-only folder, is read: the test above)."""
    made = {"journal": _killed_writer(tmp_path / "j.sqlite"),
            "cut": _cut("c.sqlite")(tmp_path), "gz": _gzipped(tmp_path)}
    lines = {k: _lines(p) for k, p in made.items()}
    assert all(v is not None and NEITHER not in v for v in lines.values()), lines
    assert len({v.split(": ", 1)[1][:40] for v in lines.values() if v}) == 3
