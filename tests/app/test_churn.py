"""Churn: a pipeline rewrites the shown round's inputs 1,000 times while the dashboard watches.

The writer runs in the test coroutine, interleaved with short pauses so the app's watcher,
analysis workers and renders run between (and sometimes during) its writes. It writes
non-atomically, leaves truncated files, deletes and re-creates the Top-N, swaps it for a
directory of the same name (unreadable as a file; chmod has no effect as root), writes invalid
UTF-8 and empty files, and makes a new round directory appear and vanish. Afterwards one last
complete write must reach the screen through the watcher, exactly as the engine analyses the
final files, and memory must not have grown between the 200th and the 1,000th write.
"""

from __future__ import annotations

import asyncio
import copy
import gc
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from roofline_tui.app import view
from roofline_tui.core.rounds.annotate import analyze_round_with_history

from .helpers import cells, make_app, read_topn, settle, wait_until, write_topn

WRITES = 1000
MEASURE_FROM = 200
MAX_OBJECT_GROWTH = 25_000     # gc-tracked objects still alive (one kept analysis: ~500)
MAX_RSS_GROWTH = 20 * 2**20   # whole process; generous: allocator arenas, thread stacks


def status_text(app: Any) -> str:
    status = app.query_one("#status")
    return str(status.content) if status.display else ""


def rss_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def expected_tables(round_dir: Path, sources: Any, app: Any) -> tuple[
        list[list[str]], list[list[str]], list[str], list[str]]:
    """What the screen must show for ``round_dir``: the engine's analysis, rendered by ``view``
    with the columns the app shows now."""
    result = analyze_round_with_history(round_dir, sources)
    pct, gain = rendered(result.artifact, app)
    return pct, gain, result.artifact.ranking_by_pct, result.artifact.ranking_by_expected_gain


def rendered(artifact: Any, app: Any) -> tuple[list[list[str]], list[list[str]]]:
    """The cells ``view`` renders for ``artifact`` with the app's current columns (they follow
    the shown result: a change column only with history, for example)."""
    pct_rows, gain_rows = view.rank_rows(artifact)
    display = view.display_names(pct_rows)
    pct = view.table_rows(pct_rows, display, app.rankings.columns["by-pct"])
    gain = view.table_rows(gain_rows, display, app.rankings.columns["by-gain"])
    return ([[c.plain for c in cells] for _, cells, _ in pct],
            [[c.plain for c in cells] for _, cells, _ in gain])


def table_keys(table: Any) -> list[str]:
    return [row.key.value for row in table.ordered_rows]


def watcher_alive(app: Any) -> bool:
    return app.watching and any(w.group == "profile-watcher" and not w.is_finished
                                for w in app.workers)


class Writer:
    """The pipeline: rewrites ``profile_topN.json`` of one round in every way a pipeline can."""

    def __init__(self, pilot: Any, round_dir: Path, seed: int = 8) -> None:
        self.pilot = pilot
        self.round_dir = round_dir
        self.path = round_dir / "profile_topN.json"
        self.base = read_topn(round_dir)
        self.pcts = [k["pct_gpu_time"] for k in self.base["top_kernels"]]
        self.rng = random.Random(seed)
        self.writes = 0
        self.events: dict[str, int] = {}

    def variant(self, i: int) -> bytes:
        """A complete, valid Top-N whose %gpu values are permuted: the ranking moves."""
        data = copy.deepcopy(self.base)
        pcts = list(self.pcts)
        self.rng.shuffle(pcts)
        for k, pct in zip(data["top_kernels"], pcts, strict=True):
            k["pct_gpu_time"] = round(pct + (i % 97) / 100, 2)
        return json.dumps(data, indent=1).encode()

    async def pause(self) -> None:
        """Mostly a blink (writes coalesce in the watcher's debounce); sometimes long enough
        for the watcher to report and the app to analyse whatever is on disk right now."""
        roll = self.rng.random()
        if roll < 0.05:
            await self.pilot.pause(0.25)
        elif roll < 0.5:
            await asyncio.sleep(self.rng.uniform(0.001, 0.01))
        else:
            await asyncio.sleep(0)

    async def write(self, payload: bytes, *, chunks: int = 1) -> None:
        """One non-atomic write: truncate, then the payload in ``chunks`` pieces with pauses."""
        self.writes += 1
        step = max(1, len(payload) // chunks)
        with open(self.path, "wb") as fh:
            for start in range(0, len(payload), step):
                fh.write(payload[start:start + step])
                fh.flush()
                if start + step < len(payload):
                    await asyncio.sleep(self.rng.uniform(0, 0.005))

    async def step(self) -> None:
        """One churn step; each performs exactly one write of ``profile_topN.json``."""
        i = self.writes
        full = self.variant(i)
        kind = self.rng.choices(
            ["full", "chunked", "truncated", "delete", "directory", "utf8", "empty", "round"],
            weights=[30, 20, 15, 8, 6, 8, 5, 8])[0]
        self.events[kind] = self.events.get(kind, 0) + 1
        if kind == "full":
            await self.write(full)
        elif kind == "chunked":  # a reader may catch it half-way
            await self.write(full, chunks=self.rng.randint(2, 4))
        elif kind == "truncated":  # left half-written until a later step
            await self.write(full[: self.rng.randint(1, len(full) - 2)])
        elif kind == "delete":
            self.path.unlink(missing_ok=True)
            await self.pause()
            await self.write(full)  # re-created
        elif kind == "directory":  # unreadable as a file
            self.path.unlink(missing_ok=True)
            self.path.mkdir()
            (self.path / "inner.json").write_text("{}")
            await self.pause()
            shutil.rmtree(self.path)
            await self.write(full)
        elif kind == "utf8":
            await self.write(b'{"top_kernels": [{"name": "\xff\xfe\xc3\x28"}]}')
        elif kind == "empty":
            await self.write(b"")
        elif kind == "round":  # a new round directory appears, is written into, and vanishes
            new = self.round_dir.parent / "round_3"
            new.mkdir(exist_ok=True)
            (new / "profile_topN.json").write_bytes(full[: len(full) // 2])
            await self.pause()
            (new / "profile_topN.json").write_bytes(full)
            await self.write(full)
            await self.pause()
            shutil.rmtree(new)
        await self.pause()


@pytest.mark.slow
async def test_churn_1000_writes_no_crash_final_screen_matches_engine_memory_flat(
        profile: Path) -> None:
    round_dir = profile / "round_2"
    app = make_app(profile, watch=True)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        await wait_until(pilot, lambda: app.watching)
        await pilot.pause(0.25)  # the watcher registers its inotify watches on its first step
        writer = Writer(pilot, round_dir)
        failures: list[str] = []
        seen_notes: set[str] = set()
        t0 = time.perf_counter()
        while writer.writes < WRITES:
            if writer.writes == MEASURE_FROM:
                gc.collect()
                rss0, objects0 = rss_bytes(), len(gc.get_objects())
            await writer.step()
            if os.environ.get("CHURN_TRACE") and writer.writes % 100 == 0:
                print(writer.writes, app.session.generation, round(time.perf_counter() - t0, 1),
                      flush=True)
            note = status_text(app)
            seen_notes.add(note)
            if "analysis failed" in note:  # the engine raised: it never should
                failures.append(note)
            assert app.is_running
        await pilot.pause(0.4)
        gc.collect()
        rss_growth = rss_bytes() - rss0
        object_growth = len(gc.get_objects()) - objects0
        if os.environ.get("CHURN_TRACE"):
            print(f"rss growth {rss_growth / 2**20:.1f} MiB, gc objects {object_growth:+d}")
            print("\n".join(sorted(seen_notes)))

        # the pipeline finishes: one last complete write, seen by the watcher (no keypress)
        final = writer.variant(WRITES + 1)
        shutil.rmtree(profile / "round_3", ignore_errors=True)
        generation = app.session.generation
        round_dir.joinpath("profile_topN.json").write_bytes(final)
        final_result = analyze_round_with_history(round_dir, app.sources)
        by_pct = final_result.artifact.ranking_by_pct
        by_gain = final_result.artifact.ranking_by_expected_gain
        await wait_until(pilot, lambda: app.session.generation > generation and cells(app.pct_table)
                         == rendered(final_result.artifact, app)[0], timeout=15)
        await settle(pilot)
        await pilot.pause(0.5)  # nothing late (a superseded analysis) may overwrite it
        await settle(pilot)
        want_pct, want_gain = rendered(final_result.artifact, app)

        assert failures == []
        # the broken states did reach the app (and were shown in place, not crashed on)
        assert any("waiting for a complete file" in n for n in seen_notes)
        assert any("No profile_topN.json in round_2" in n for n in seen_notes)
        assert watcher_alive(app), "the file watcher died during the churn"
        assert app.session.rounds == [profile / f"round_{i}" for i in range(3)]
        assert app.session.shown == round_dir
        assert status_text(app) == ""
        assert app.pct_table.row_count == len(by_pct) > 0
        assert cells(app.pct_table) == want_pct
        assert cells(app.gain_table) == want_gain
        assert [k.split("#")[0] for k in table_keys(app.pct_table)] == by_pct
        assert [k.split("#")[0] for k in table_keys(app.gain_table)] == by_gain
        assert writer.writes == WRITES
        assert all(writer.events.get(k) for k in ("full", "chunked", "truncated", "delete",
                                                  "directory", "utf8", "empty", "round"))
        assert object_growth < MAX_OBJECT_GROWTH, f"{object_growth} more live objects"
        assert rss_growth < MAX_RSS_GROWTH, f"RSS grew {rss_growth / 2**20:.1f} MiB"
        assert app.busy is False
        assert len(app.session.results) <= 3  # no result kept for a round that went away


async def test_symlink_loop_in_the_watched_tree_neither_hangs_nor_crashes(profile: Path) -> None:
    (profile / "round_0" / "loop").symlink_to("..")        # round_0/loop/round_0/loop/...
    (profile / "round_2" / "self").symlink_to(".")         # the shown round contains itself
    (profile / "round_1" / "up").symlink_to(profile.parent)
    app = make_app(profile, watch=True)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        await wait_until(pilot, lambda: app.watching)
        await pilot.pause(0.25)
        assert app.session.rounds == [profile / f"round_{i}" for i in range(3)]
        data = read_topn(profile / "round_2")
        data["top_kernels"][0]["pct_gpu_time"] = 41.0
        write_topn(profile / "round_2", data)  # the watcher still reports changes
        await wait_until(pilot, lambda: cells(app.pct_table)[0][2] == "41.00", timeout=10)
        await settle(pilot)
        assert status_text(app) == ""
        assert watcher_alive(app)
        assert cells(app.pct_table) == expected_tables(profile / "round_2", app.sources, app)[0]
    for name in ("round_0", "round_2"):
        done = subprocess.run([sys.executable, "-m", "roofline_tui", "analyze",
                               str(profile / name), "--json"],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert json.loads((profile / name / "profile_roofline.json").read_text())["entries"]
