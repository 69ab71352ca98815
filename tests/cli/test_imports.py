from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from roofline_tui.importers.synth import SynthSpec, write_trace
from tests.importers.conftest import REAL, need


def _one_error_line(proc) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0]


def test_cli_torch_success(cli, tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "t.json.gz", SynthSpec())
    out = tmp_path / "round_0"
    proc = cli("torch", trace, "--out", out, "--isl", "1024", "--osl", "128", "--conc", "8",
               "--top", "3")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("wrote ") and "top: " in lines[0]
    # the synthetic trace names no real device: nothing recorded, and the reason is said
    assert "no env_report.json written" in proc.stdout
    assert not (out / "env_report.json").exists()
    # no env_report was written (the device is unknown), so the command names --device itself
    assert f"next: roofline analyze {out} --device NAME" in lines
    doc = json.loads((out / "profile_topN.json").read_text())
    assert len(doc["top_kernels"]) == 3 and doc["serving"]["n_decode_steps"] == 6


def test_cli_torch_mixed_devices_says_which(cli, tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "t.json", SynthSpec(extra_device=1))
    proc = cli("torch", trace, "--out", tmp_path / "r")
    assert proc.returncode == 0
    assert "using device 0" in proc.stdout
    proc = cli("torch", trace, "--out", tmp_path / "r1", "--device-index", "1")
    assert proc.returncode == 0
    assert "device 1 chosen" in proc.stdout


def test_cli_rocprofv3_and_nsys(cli, tmp_path: Path) -> None:
    kt = need(REAL / "rocprofv3" / "rocm-systems_rocprof-compute_MI300A_vecCopy_kernel_trace.csv")
    proc = cli("rocprofv3", kt, "--out", tmp_path / "a")
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "a" / "profile_topN.json").read_text())["source"] == "rocprofv3"
    ns = need(REAL / "nsys" / "polyfhe_cuda_gpu_kern_sum_phantom-L36.csv")
    proc = cli("nsys", ns, "--out", tmp_path / "b", "--top", "5")
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads((tmp_path / "b" / "profile_topN.json").read_text())["top_kernels"]) == 5


def _truncated_json(tmp: Path) -> Path:
    src = write_trace(tmp / "full.json", SynthSpec())
    data = src.read_text()
    p = tmp / "trunc.json"
    p.write_text(data[: int(len(data) * 0.6)])
    return p


def _no_gpu(tmp: Path) -> Path:
    p = tmp / "nogpu.json"
    p.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]}))
    return p


def _empty(tmp: Path) -> Path:
    p = tmp / "empty.json"
    p.write_text("")
    return p


def _unknown_cols(tmp: Path) -> Path:
    p = tmp / "kernel_trace.csv"
    p.write_text("a,b,c\n1,2,3\n")
    return p


def _truncated_csv(tmp: Path) -> Path:
    src = REAL / "rocprofv3" / "rocprofiler-sdk_docs_kernel_trace_2024-09.csv"
    text = src.read_text()
    p = tmp / "kt.csv"
    p.write_text(text[: len(text) - 40])
    return p


def _nsys_unknown(tmp: Path) -> Path:
    p = tmp / "k.csv"
    p.write_text("Generating SQLite file\nName,Calls\nfoo,3\n")
    return p


def _nsys_empty(tmp: Path) -> Path:
    p = tmp / "k.csv"
    p.write_text("\n\n")
    return p


@pytest.mark.parametrize(
    ("kind", "make", "needle"),
    [
        ("torch", _truncated_json, "truncated"),
        ("torch", _no_gpu, "no GPU events"),
        ("torch", _empty, "empty"),
        ("rocprofv3", _unknown_cols, "not a kernel trace"),
        ("rocprofv3", _empty, "empty"),
        ("nsys", _nsys_unknown, "no kernel table header"),
        ("nsys", _nsys_empty, "empty"),
    ],
)
def test_cli_bad_input_exits_1_with_one_line_and_writes_nothing(cli, tmp_path: Path, kind: str,
                                                                 make, needle: str) -> None:
    src = make(tmp_path)
    out = tmp_path / "round_0"
    proc = cli(kind, src, "--out", out)
    assert proc.returncode == 1
    line = _one_error_line(proc)
    assert needle in line
    assert proc.stdout == ""
    assert not out.exists() or not any(out.iterdir())


def test_cli_bad_input_keeps_an_existing_topn_intact(cli, tmp_path: Path) -> None:
    out = tmp_path / "round_0"
    good = write_trace(tmp_path / "t.json", SynthSpec())
    assert cli("torch", good, "--out", out).returncode == 0
    before = (out / "profile_topN.json").read_text()
    proc = cli("torch", _truncated_json(tmp_path), "--out", out)
    assert proc.returncode == 1
    assert (out / "profile_topN.json").read_text() == before
    assert sorted(p.name for p in out.iterdir()) == ["profile_topN.json", "profile_topN.md"]


def test_cli_missing_file(cli, tmp_path: Path) -> None:
    proc = cli("torch", tmp_path / "nope.json", "--out", tmp_path / "r")
    assert proc.returncode == 1
    assert "not found" in _one_error_line(proc)


# --------------------------------------------------------------------------- import --force


def _forced_round(tmp: Path, pad: int = 0) -> tuple[Path, Path, bytes]:
    """A round holding a Top-N (a trace's, with ``pad`` bytes of hand-written note: the
    baseline a user edited), and a second trace to import over it with ``--force``."""
    out = tmp / "round_0"
    first = write_trace(tmp / "first.json", SynthSpec())
    assert run_import(first, out).returncode == 0
    topn = out / "profile_topN.json"
    doc = json.loads(topn.read_text())
    doc["note_by_hand"] = "the baseline " + "x" * pad
    topn.write_text(json.dumps(doc))
    return out, write_trace(tmp / "second.json", SynthSpec()), topn.read_bytes()


def run_import(trace: Path, out: Path, *extra: str, preexec=None,
               script: str | None = None) -> subprocess.CompletedProcess[str]:
    """``roofline import torch TRACE --out OUT`` in a subprocess (``script``: Python run before
    the command, in the same process: the place a test plants a kill)."""
    argv = ["import", "torch", str(trace), "--out", str(out), *extra]
    code = (script or "") + ("\nimport sys\nfrom roofline_tui.cli import main\n"
                             f"sys.exit(main({argv!r}))\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, preexec_fn=preexec)


def _baselines(out: Path) -> list[str]:
    return sorted(p.name for p in out.iterdir() if ".prev" in p.name)


def test_force_keeps_the_old_top_n_when_its_copy_cannot_be_written(tmp_path: Path) -> None:
    """Issue 36 item 1, the attack: ``ulimit -f`` below the old Top-N's size (256 KiB of
    hand-written note; the limit is 64 KiB, the new Top-N about 16 KiB) makes the copy of the
    old one fail. The import must stop there: exit 1, one line, the old Top-N byte for byte,
    nothing else in the round (before the fix the new one was written first, the copy failed
    after, exit 0 and the baseline was gone)."""
    out, second, before = _forced_round(tmp_path, pad=256 * 1024)
    listing = sorted(p.name for p in out.iterdir())

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, resource.RLIM_INFINITY))

    proc = run_import(second, out, "--force", preexec=small_files)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    line = _one_error_line(proc)
    assert "cannot keep a copy of" in line and "File too large" in line
    assert "nothing written" in line and proc.stdout == ""
    assert (out / "profile_topN.json").read_bytes() == before
    assert sorted(p.name for p in out.iterdir()) == listing  # no temp, no partial copy


def test_every_forced_import_keeps_its_own_baseline(tmp_path: Path) -> None:
    """Two ``--force`` imports: the first keeps the original Top-N as ``.prev``, the second
    keeps the Top-N it replaces as ``.prev.1`` and leaves ``.prev`` alone (before the fix the
    second overwrote ``.prev``: the original baseline was lost without a word)."""
    out, second, original = _forced_round(tmp_path)
    topn = out / "profile_topN.json"
    one = run_import(second, out, "--force", "--top", "3")
    assert one.returncode == 0, one.stderr
    assert "kept the replaced Top-N as" in one.stdout and one.stdout.rstrip().endswith(".prev")
    middle = topn.read_bytes()
    two = run_import(second, out, "--force", "--top", "4")
    assert two.returncode == 0, two.stderr
    assert two.stdout.rstrip().endswith("profile_topN.json.prev.1")
    assert _baselines(out) == ["profile_topN.json.prev", "profile_topN.json.prev.1"]
    assert (out / "profile_topN.json.prev").read_bytes() == original
    assert (out / "profile_topN.json.prev.1").read_bytes() == middle
    assert len(json.loads(topn.read_text())["top_kernels"]) == 4
    # a new Top-N that cannot be written (its .md is a directory) leaves the round as it was:
    # the copy saved for it is taken back
    (out / "profile_topN.md").unlink()
    (out / "profile_topN.md").mkdir()
    listing = sorted(p.name for p in out.iterdir())
    failed = run_import(second, out, "--force")
    assert failed.returncode == 1 and "profile_topN.md" in _one_error_line(failed)
    assert sorted(p.name for p in out.iterdir()) == listing


# a kill -9 at each step of a forced import: before the new pair is written, between its
# two renames, right after it
_KILLS = {
    "before the write": """
from roofline_tui.importers import finish
def killed(doc, out_dir):
    os._exit(137)
finish.write_round = killed
""",
    "between the renames": """
from roofline_tui.core import store
real, calls = store._replace, []
def killed(tmp, path):
    calls.append(path)
    if len(calls) == 2:
        os._exit(137)
    real(tmp, path)
store._replace = killed
""",
    "after the write": """
from roofline_tui.importers import finish
real = finish.write_round
def killed(doc, out_dir):
    real(doc, out_dir)
    os._exit(137)
finish.write_round = killed
""",
}


@pytest.mark.parametrize("when", list(_KILLS))
def test_a_kill_during_a_forced_import_never_loses_the_old_top_n(tmp_path: Path,
                                                                 when: str) -> None:
    """The process dies (``os._exit``: no cleanup, like kill -9) at each step of a forced
    import: the old Top-N survives byte for byte, in place or in a saved copy, and the Top-N
    in place is whole JSON. Before the fix a kill after the write lost it: the copy was only
    made once the new Top-N stood in its place (10 of 10 runs in the report)."""
    out, second, before = _forced_round(tmp_path)
    proc = run_import(second, out, "--force", script="import os\n" + _KILLS[when])
    assert proc.returncode == 137, proc.stderr
    topn = out / "profile_topN.json"
    kept = [(out / name).read_bytes() for name in _baselines(out)]
    assert before in [topn.read_bytes(), *kept]
    json.loads(topn.read_text())
    if when == "after the write":
        assert topn.read_bytes() != before and kept == [before]


# --------------------------------------------------------------------------- --skip-bad-ranks


def test_a_fifo_among_rank_traces_is_named_or_skipped_with_the_flag(cli, tmp_path: Path) -> None:
    """Issue 36 item 3 through the command line, on synthetic ranks: a FIFO named like rank
    2's trace is refused in one line naming it (before the fix it was skipped silently and the
    import said "2 rank trace(s)", exit 0); ``--skip-bad-ranks`` imports ranks 0 and 1 and says
    the FIFO was kept out (the two ranks tie on GPU time: the lower, rank 0, is written)."""
    run = tmp_path / "run"
    run.mkdir()
    for r in (0, 1):
        write_trace(run / f"worker_rank{r}.json", SynthSpec())
    os.mkfifo(run / "worker_rank2.json")
    proc = cli("torch", run, "--out", tmp_path / "a")
    assert proc.returncode == 1 and proc.stdout == ""
    assert _one_error_line(proc).endswith(
        "worker_rank2.json: is a FIFO (named pipe), expected a regular file: a rank's trace "
        "that cannot be read; nothing written (--skip-bad-ranks imports the other ranks "
        "without it, and says so)")
    assert not (tmp_path / "a").exists()
    proc = cli("torch", run, "--out", tmp_path / "a", "--skip-bad-ranks")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].endswith(
        "Top-N of rank 0 (the slowest of those read: most GPU time); pick another with --rank; "
        "1 kept out by --skip-bad-ranks (cannot be read): worker_rank2.json (is a FIFO (named "
        "pipe), expected a regular file)")
    doc = json.loads((tmp_path / "a" / "profile_topN.json").read_text())
    assert [t["rank"] for t in doc["x_roofline"]["ranks"]["traces"]] == [0, 1]
    assert any("worker_rank2.json (is a FIFO" in n for n in doc["notes"])
