"""``roofline ingest``: traces written into a directory become rounds, imported and analysed."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from roofline_tui.cli import main
from roofline_tui.importers.synth import SynthSpec, synthetic_trace
from tests.paths import REAL_FORMATS, REPO_ROOT, need

FAST = ["--settle", "0.2", "--timeout", "30", "--device", "H200"]
PROGRAM = [sys.executable, "-m", "roofline_tui"]
# fields of a Top-N that may differ between two imports of one trace (none today: kept as the
# one place to say so)
VOLATILE: frozenset[str] = frozenset({"generated_at", "created"})


def trace_bytes(layers: int = 4) -> bytes:
    return gzip.compress(json.dumps(synthetic_trace(SynthSpec(layers=layers))).encode())


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def ingest(*args: str | Path) -> int:
    return main(["ingest", *map(str, args)])


def rounds(profile: Path) -> list[str]:
    return sorted(p.name for p in profile.iterdir() if p.name.startswith("round_"))


def listing(d: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(d)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(d.rglob("*"))}


def state_rounds(profile: Path) -> list[str]:
    try:
        return [r["round"] for r in json.loads((profile / ".ingest.json").read_text())["rounds"]]
    except (OSError, ValueError):
        return []


def stable(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k not in VOLATILE}


def wait_for(cond: Callable[[], bool], deadline_s: float = 90.0) -> bool:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


def test_a_complete_trace_is_one_round_equal_to_import_torch(tmp_path: Path, capsys) -> None:
    d, prof = tmp_path / "traces", tmp_path / "prof"
    trace = write(d / "rank0.1712345678901.pt.trace.json.gz", trace_bytes())
    before = listing(d)
    assert ingest(d, "--out", prof, "--once", *FAST) == 0
    out = capsys.readouterr().out
    assert rounds(prof) == ["round_0"]
    line = out.strip().splitlines()[-1]
    assert line.startswith("round_0 ← rank0.1712345678901.pt.trace.json.gz (")
    assert "kernels, next target" in line
    r0 = prof / "round_0"
    assert {"profile_topN.json", "profile_topN.md", "profile_roofline.json",
            "profile_roofline.md", "source.json"} <= {p.name for p in r0.iterdir()}
    assert main(["import", "torch", str(trace), "--out", str(tmp_path / "by_hand")]) == 0
    ours = json.loads((r0 / "profile_topN.json").read_text())
    theirs = json.loads((tmp_path / "by_hand" / "profile_topN.json").read_text())
    assert stable(ours) == stable(theirs)
    src = json.loads((r0 / "source.json").read_text())
    assert src["importer"] == "torch" and src["files"][0]["size"] == trace.stat().st_size
    state = json.loads((prof / ".ingest.json").read_text())
    assert state["rounds"][0]["round"] == "round_0" and state["failures"] == []
    assert listing(d) == before  # DIR untouched
    assert [p.name for p in prof.iterdir() if ".partial-" in p.name] == []


def test_a_truncated_gzip_is_a_failure_and_no_round(tmp_path: Path, capsys) -> None:
    d, prof = tmp_path / "traces", tmp_path / "prof"
    good = trace_bytes()
    write(d / "cut.pt.trace.json.gz", good[: len(good) // 2])
    write(d / "ok.pt.trace.json.gz", trace_bytes(layers=3))
    before = listing(d)
    code = ingest(d, "--out", prof, "--once", "--settle", "0.2", "--timeout", "1.5",
                  "--device", "H200")
    out = capsys.readouterr().out
    assert code == 1
    assert rounds(prof) == ["round_0"]  # the next trace is still taken
    fails = [ln for ln in out.splitlines() if ln.startswith("failed:")]
    assert len(fails) == 1 and fails[0].startswith("failed: cut.pt.trace.json.gz: ")
    state = json.loads((prof / ".ingest.json").read_text())
    (rec,) = state["failures"]
    assert rec["path"].endswith("cut.pt.trace.json.gz") and rec["size"] == len(good) // 2
    assert "gzip" in rec["reason"] and rec["time"]
    assert listing(d) == before
    # a restart does not fail the same unchanged file again, nor re-import the good one
    assert ingest(d, "--out", prof, "--once", "--settle", "0.2", "--timeout", "1.5",
                  "--device", "H200") == 0
    assert capsys.readouterr().out == "" and rounds(prof) == ["round_0"]


def test_a_trace_the_importer_refuses_leaves_no_partial_round(tmp_path: Path, capsys) -> None:
    d, prof = tmp_path / "traces", tmp_path / "prof"
    write(d / "empty.pt.trace.json.gz", gzip.compress(b'{"traceEvents": []}'))
    assert ingest(d, "--out", prof, "--once", *FAST) == 1
    assert capsys.readouterr().out.startswith("failed: empty.pt.trace.json.gz: ")
    assert sorted(p.name for p in prof.iterdir()) == [".ingest.json"]


def test_two_sessions_are_two_rounds_and_a_restart_imports_nothing_twice(
        tmp_path: Path, capsys) -> None:
    d, prof = tmp_path / "traces", tmp_path / "prof"
    write(d / "1712345678.12-TP-0.trace.json.gz", trace_bytes(3))
    write(d / "1712345678.12-TP-1.trace.json.gz", trace_bytes(4))
    write(d / "1712349999.50-TP-0.trace.json.gz", trace_bytes(5))
    write(d / "1712349999.50-TP-1.trace.json.gz", trace_bytes(6))
    assert ingest(d, "--out", prof, "--once", *FAST) == 0
    out = capsys.readouterr().out.splitlines()
    assert rounds(prof) == ["round_0", "round_1"]
    assert out[0].startswith("round_0 ← 1712345678.12-TP-0.trace.json.gz, "
                             "1712345678.12-TP-1.trace.json.gz (2 ranks, ")
    assert out[1].startswith("round_1 ← 1712349999.50-TP-0")
    spread = json.loads((prof / "round_0" / "profile_topN.json").read_text())
    assert "2 ranks" in json.dumps(spread) or spread["x_roofline"].get("ranks")
    state_before = (prof / ".ingest.json").read_text()
    # a restart: nothing new; a renamed copy is recognised by its content
    assert ingest(d, "--out", prof, "--once", *FAST) == 0
    assert capsys.readouterr().out == ""
    assert (prof / ".ingest.json").read_text() == state_before
    d2 = tmp_path / "elsewhere"
    write(d2 / "renamed.json.gz", (d / "1712349999.50-TP-1.trace.json.gz").read_bytes())
    write(d2 / "plain.json", gzip.decompress((d / "1712345678.12-TP-0.trace.json.gz")
                                             .read_bytes()))
    assert ingest(d2, "--out", prof, "--once", *FAST) == 0
    said = capsys.readouterr().out
    assert "skipped renamed.json.gz: already ingested as round_1" in said
    assert "skipped plain.json: already ingested as round_0" in said
    assert rounds(prof) == ["round_0", "round_1"]


def test_a_hand_written_round_is_never_touched(tmp_path: Path, capsys) -> None:
    d, prof = tmp_path / "traces", tmp_path / "prof"
    mine = write(prof / "round_1" / "notes.txt", b"mine")
    before = listing(prof / "round_1")
    write(d / "t.pt.trace.json.gz", trace_bytes())
    assert ingest(d, "--out", prof, "--once", *FAST) == 0
    assert rounds(prof) == ["round_1", "round_2"]
    assert listing(prof / "round_1") == before and mine.read_bytes() == b"mine"
    # `roofline rounds` names where the ingested round came from
    capsys.readouterr()
    assert main(["rounds", str(prof), "--device", "H200"]) == 0
    assert "round 2 source: t.pt.trace.json.gz [torch]" in capsys.readouterr().out


def test_refusals(tmp_path: Path, capsys) -> None:
    assert ingest(tmp_path / "nope", "--out", tmp_path / "p", "--once") == 1
    assert "no such directory" in capsys.readouterr().err
    (tmp_path / "d").mkdir()
    assert ingest(tmp_path / "d", "--out", tmp_path / "d" / "prof", "--once") == 2
    assert "never written to" in capsys.readouterr().err
    assert not (tmp_path / "d" / "prof").exists()


def test_a_slow_writer_is_taken_only_once_complete(tmp_path: Path) -> None:
    """A gzip trace copied in chunks with pauses longer than --settle: the round appears only
    after the last chunk (the stream's end is what makes it complete). The CLI runs as a
    subprocess."""
    d, prof = tmp_path / "traces", tmp_path / "prof"
    d.mkdir()
    data = trace_bytes(layers=12)
    target = d / "rank0.pt.trace.json.gz"
    early: list[str] = []
    finished = threading.Event()

    def writer() -> None:
        with open(target, "wb") as fh:
            step = len(data) // 6 + 1
            for i in range(0, len(data), step):
                fh.write(data[i:i + step])
                fh.flush()
                time.sleep(0.5)
                if prof.exists():
                    early.extend(rounds(prof))
        finished.set()

    proc = subprocess.Popen([*PROGRAM, "ingest", str(d), "--out", str(prof), "--once", *FAST],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=REPO_ROOT)
    t = threading.Thread(target=writer)
    t.start()
    t.join(timeout=120)
    out, err = proc.communicate(timeout=120)
    assert finished.is_set()
    assert proc.returncode == 0, err
    assert early == []
    assert rounds(prof) == ["round_0"], out + err
    src = json.loads((prof / "round_0" / "source.json").read_text())
    assert src["files"][0]["size"] == len(data)


def test_watch_mode_takes_new_traces_until_interrupted(tmp_path: Path) -> None:
    d, prof = tmp_path / "not-yet", tmp_path / "prof"
    proc = subprocess.Popen([*PROGRAM, "ingest", str(d), "--out", str(prof), *FAST],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=REPO_ROOT)
    try:
        assert proc.stderr is not None
        said = ""
        while "waiting for" not in said:  # it says so before DIR exists (EOF: it ended)
            line = proc.stderr.readline()
            assert line, f"ended early: {said}"
            said += line
        write(d / "a.pt.trace.json.gz", trace_bytes(3))  # DIR appears after the start
        assert wait_for(lambda: rounds(prof) == ["round_0"])
        write(d / "b.pt.trace.json.gz", trace_bytes(5))
        assert wait_for(lambda: len(state_rounds(prof)) == 2)  # recorded after its line
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert [ln.split(" ← ")[0] for ln in out.splitlines()] == ["round_0", "round_1"]
    assert [p.name for p in prof.iterdir() if ".partial-" in p.name] == []


REAL = REAL_FORMATS / "wild" / "tracelens_vllm_decode_full_graph_execution.json.gz"


def test_a_real_vllm_trace(tmp_path: Path, capsys) -> None:
    real = need(REAL)
    d, prof = tmp_path / "traces", tmp_path / "prof"
    os.makedirs(d)
    (d / real.name).symlink_to(real)
    assert ingest(d, "--out", prof, "--once", "--settle", "0.2") == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line.startswith(f"round_0 ← {real.name} (")
    assert main(["import", "torch", str(real), "--out", str(tmp_path / "by_hand")]) == 0
    assert stable(json.loads((prof / "round_0" / "profile_topN.json").read_text())) == stable(
        json.loads((tmp_path / "by_hand" / "profile_topN.json").read_text()))
    assert (prof / "round_0" / "profile_roofline.json").is_file()


@pytest.mark.parametrize("bad", [["--settle", "x"], ["--timeout", "-1"]])
def test_bad_seconds_are_usage_errors(tmp_path: Path, bad: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["ingest", str(tmp_path), "--out", str(tmp_path / "p"), *bad])
    assert exc.value.code == 2


NSYS = REAL_FORMATS / "wild" / "pipit_nsys2024.5.1_export_sqlite_cloverleaf_A100x4.sqlite"


def test_an_nsys_sqlite_export(tmp_path: Path, capsys) -> None:
    real = need(NSYS)
    d, prof = tmp_path / "traces", tmp_path / "prof"
    write(d / "run.sqlite", real.read_bytes())
    before = listing(d)
    assert ingest(d, "--out", prof, "--once", "--settle", "0.2") == 0
    assert capsys.readouterr().out.startswith("round_0 ← run.sqlite (")
    assert json.loads((prof / "round_0" / "source.json").read_text())["importer"] == "nsys"
    assert listing(d) == before  # no journal or lock file left beside it


def test_the_model_named_once_is_copied_into_every_round(
        tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 32 item 2 for ingest: `--model ORG/NAME` (from the local Hugging Face cache)
    puts the config into each round with its provenance: the vLLM gpt-oss round's two MoE
    kernels get verdicts with no hand step."""
    from tests.core.test_model_lookup import make_cache

    real = need(REAL_FORMATS / "wild" / "tracelens_vllm_decode_full_graph_execution.json.gz")
    capture = need(REAL_FORMATS / "wild" /
                   "tracelens_vllm_decode_full_graph_capture.pt.trace.json.gz")
    raw = need(REAL_FORMATS / "configs" / "gpt-oss-20b" / "config.json").read_bytes()
    cache = tmp_path / "hf"
    cache.mkdir()
    make_cache(cache, "openai/gpt-oss-20b", raw)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    d, prof = tmp_path / "traces", tmp_path / "prof"
    (d / "capture_traces").mkdir(parents=True)
    (d / real.name).symlink_to(real)
    (d / "capture_traces" / capture.name).symlink_to(capture)
    assert ingest(d, "--out", prof, "--once", "--settle", "0.2",
                  "--model", "openai/gpt-oss-20b") == 0
    (r,) = rounds(prof)
    assert (prof / r / "config.json").read_bytes() == raw
    assert json.loads((prof / r / "config.source.json").read_text())["how"].startswith(
        "--model openai/gpt-oss-20b")
    art = json.loads((prof / r / "profile_roofline.json").read_text())
    moe = [e for e in art["entries"] if e["short_name"].startswith("_matmul_ogs_")]
    assert len(moe) == 2 and all(e["roofline_pct"] is not None for e in moe)
    # a model not in the cache is refused before anything is read
    assert ingest(d, "--out", tmp_path / "p2", "--once", "--model", "org/absent") == 1
    assert not (tmp_path / "p2").exists() or not rounds(tmp_path / "p2")


def test_a_rocprofv3_output_folder(tmp_path: Path, capsys) -> None:
    """rocprofv3 writes <dir>/<host>/<pid>_kernel_trace.csv: the run becomes a round equal to
    `roofline import rocprofv3` of the file; a kernel trace cut mid-row is a failure."""
    real = need(REAL_FORMATS / "rocprofv3" / "rocprofiler-sdk_docs_kernel_trace_latest.csv")
    d, prof = tmp_path / "traces", tmp_path / "prof"
    host = d / "node-01"
    host.mkdir(parents=True)
    (host / "4242_kernel_trace.csv").write_bytes(real.read_bytes())
    cut = real.read_bytes().rstrip(b"\n")
    (host / "4343_kernel_trace.csv").write_bytes(cut[: len(cut) - 5])
    assert ingest(d, "--out", prof, "--once", "--settle", "0.2", "--timeout", "1.5",
                  "--device", "MI300X") == 1
    out = capsys.readouterr().out
    assert "round_0 ← 4242_kernel_trace.csv" in out
    assert "failed: 4343_kernel_trace.csv: the CSV ends mid-row" in out
    assert rounds(prof) == ["round_0"]
    assert main(["import", "rocprofv3", str(real), "--out", str(tmp_path / "by_hand")]) == 0
    assert stable(json.loads((prof / "round_0" / "profile_topN.json").read_text())) == stable(
        json.loads((tmp_path / "by_hand" / "profile_topN.json").read_text()))
