"""Issue 32 item 1: ``roofline dash --traces DIR PROFILE``. The dashboard starts on an empty
trace directory with the ingest it runs beside it (the same process ``run_dash`` starts); a
real trace copied in by a slow writer becomes no round until the copy is complete, then one
round whose Top-N is ``roofline import torch``'s; a truncated trace becomes a failure on the
ingest row and no round; a restart imports nothing twice."""

from __future__ import annotations

import argparse
import json
import shutil
import threading
import time
from pathlib import Path

from roofline_tui.cli import main
from roofline_tui.cli.dash import ingest_argv, start_ingest, stop_ingest
from tests.paths import REAL_FORMATS, need

from .helpers import make_app, static_text, wait_until

REAL = REAL_FORMATS / "wild" / "tracelens_vllm_decode_full_graph_execution.json.gz"
LONG = 120.0  # generous deadlines: the machine may be loaded


def dash_args(traces: Path, profile: Path) -> argparse.Namespace:
    return argparse.Namespace(traces=traces, round_dir=profile, settle=0.5, timeout=4.0,
                              env=None, model_config=None,
                              model=None, peaks=None, device="MI300X", shapes=None,
                              counters=[], head_threshold=None, max_heads=None, priors=None)


def slow_copy(src: Path, dst: Path, chunks: int = 8, pause: float = 0.4) -> threading.Thread:
    data = src.read_bytes()
    step = len(data) // chunks + 1

    def run() -> None:
        with open(dst, "wb") as fh:
            for i in range(0, len(data), step):
                fh.write(data[i:i + step])
                fh.flush()
                time.sleep(pause)

    t = threading.Thread(target=run)
    t.start()
    return t


def rounds(profile: Path) -> list[str]:
    return sorted(p.name for p in profile.glob("round_*") if p.is_dir())


def test_the_ingest_passes_the_dashboards_settings_on(tmp_path: Path) -> None:
    argv = ingest_argv(dash_args(tmp_path / "t", tmp_path / "p"))
    assert argv[3:7] == ["ingest", str(tmp_path / "t"), "--out", str(tmp_path / "p")]
    assert argv[7:] == ["--settle", "0.5", "--timeout", "4.0", "--device", "MI300X"]


async def test_traces_land_as_rounds_on_screen(tmp_path: Path) -> None:
    real = need(REAL)
    traces, profile = tmp_path / "traces", tmp_path / "profile"
    traces.mkdir()
    proc, why = start_ingest(dash_args(traces, profile))
    assert proc is not None, why
    try:
        app = make_app(profile, watch=True, ingest=True)
        async with app.run_test(size=(160, 40)) as pilot:
            await wait_until(pilot, lambda: "ingest:" in static_text(app.query_one("#ingest")))
            writer = slow_copy(real, traces / real.name)
            while writer.is_alive():  # no round while the trace is being written
                assert rounds(profile) == []
                await pilot.pause(0.1)
            writer.join()
            await wait_until(pilot, lambda: rounds(profile) == ["round_0"], timeout=LONG)
            await wait_until(pilot, lambda: app.session.shown is not None
                             and app.session.shown.name == "round_0"
                             and app.pct_table.row_count > 0, timeout=LONG)
            await wait_until(pilot, lambda: "1 round(s) made" in static_text(
                app.query_one("#ingest")), timeout=LONG)
            # a truncated trace: a failure on the ingest row, no round
            cut = real.read_bytes()
            (traces / "cut.pt.trace.json.gz").write_bytes(cut[: len(cut) // 3])
            await wait_until(pilot, lambda: "failed" in static_text(app.query_one("#ingest")),
                             timeout=LONG)
            assert "cut.pt.trace.json.gz" in static_text(app.query_one("#ingest"))
            assert rounds(profile) == ["round_0"]
    finally:
        stop_ingest(proc)
    # the round is what `roofline import torch` writes of the same file
    assert main(["import", "torch", str(real), "--out", str(tmp_path / "by_hand")]) == 0
    assert json.loads((profile / "round_0" / "profile_topN.json").read_text()) == json.loads(
        (tmp_path / "by_hand" / "profile_topN.json").read_text())
    # a restart (a second dashboard on the same directories) imports nothing twice
    shutil.copy(real, traces / "renamed-copy.pt.trace.json.gz")
    proc, why = start_ingest(dash_args(traces, profile))
    assert proc is not None, why
    try:
        deadline = time.monotonic() + 15
        log = profile / ".ingest.log"
        while time.monotonic() < deadline and "already ingested" not in log.read_text():
            time.sleep(0.2)
        assert "already ingested" in log.read_text()
        assert rounds(profile) == ["round_0"]
    finally:
        stop_ingest(proc)
    assert not list(profile.glob(".round_*"))  # no partial round left
