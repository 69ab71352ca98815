"""Round fingerprints: what must and must not count as a change of a round's inputs."""

from __future__ import annotations

import os
from pathlib import Path

from roofline_tui.core.rounds import fingerprint as fp
from roofline_tui.core.rounds.fingerprint import RoundCache, file_fingerprint, round_fingerprint


def _eval_dir(tmp_path: Path) -> Path:
    """EVAL_DIR/{env_report.json, config.json, profile/round_0/profile_topN.json}."""
    (tmp_path / "env_report.json").write_text('{"gfx": "gfx942"}')
    (tmp_path / "config.json").write_text('{"hidden_size": 4096}')
    r = tmp_path / "profile" / "round_0"
    r.mkdir(parents=True)
    (r / "profile_topN.json").write_text('{"top_kernels": [{"name": "a", "pct_gpu_time": 30.0}]}')
    return r


def test_nothing_changed_is_no_change_and_a_touch_is_one(tmp_path: Path) -> None:
    r = _eval_dir(tmp_path)
    before = round_fingerprint(r)
    assert round_fingerprint(r) == before
    topn = r / "profile_topN.json"
    os.utime(topn, ns=(1, 1))  # a stored artifact is current or not by mtimes: a touch counts
    assert round_fingerprint(r) != before


def test_same_size_change_within_one_mtime_tick_is_a_change(tmp_path: Path) -> None:
    r = _eval_dir(tmp_path)
    topn = r / "profile_topN.json"
    st = topn.stat()
    before = round_fingerprint(r)
    topn.write_text(topn.read_text().replace("30.0", "31.0"))  # same size
    os.utime(topn, ns=(st.st_atime_ns, st.st_mtime_ns))          # same mtime
    assert round_fingerprint(r) != before


def test_every_input_place_counts(tmp_path: Path) -> None:
    r = _eval_dir(tmp_path)
    changes = [
        lambda: (tmp_path / "env_report.json").write_text('{"gfx": "gfx950"}'),
        lambda: (tmp_path / "config.json").write_text('{"hidden_size": 8192}'),
        # an env_report appearing nearer the round than the one read so far
        lambda: (tmp_path / "profile" / "env_report.json").write_text("{}"),
        lambda: (r / "counters").mkdir(),
        lambda: (r / "counters" / "pmc_perf.csv").write_text("Kernel_Name\n"),
        lambda: (r / "profile_roofline.json").write_text("{}"),  # a stored artifact
        lambda: (tmp_path / "kernels" / "gemm_task").mkdir(parents=True),
        lambda: (tmp_path / "kernels" / "gemm_task" / "meta.json").write_text("{}"),
    ]
    seen = {round_fingerprint(r)}
    for change in changes:
        change()
        now = round_fingerprint(r)
        assert now not in seen
        seen.add(now)


def test_explicit_sources_and_salt_count(tmp_path: Path) -> None:
    r = _eval_dir(tmp_path)
    peaks = tmp_path / "elsewhere" / "peaks.md"
    peaks.parent.mkdir()
    peaks.write_text("| a |")
    a = round_fingerprint(r, extra=[peaks], salt="opts-1")
    assert round_fingerprint(r, extra=[peaks], salt="opts-1") == a
    assert round_fingerprint(r, extra=[peaks], salt="opts-2") != a
    peaks.write_text("| b |")
    assert round_fingerprint(r, extra=[peaks], salt="opts-1") != a
    peaks.unlink()
    assert round_fingerprint(r, extra=[peaks], salt="opts-1") != a  # gone is a change too


def test_large_files_count_by_stat(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(fp, "SMALL_FILE_BYTES", 8)
    f = tmp_path / "big.json"
    f.write_text("0123456789abcdef")
    a = file_fingerprint(f)
    f.write_text("0123456789abcdeX")  # same size; mtime or ctime moves with the write
    os.utime(f, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns + 1_000_000))
    assert file_fingerprint(f) != a


def test_walk_is_bounded(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(fp, "WALK_MAX_ENTRIES", 5)
    for i in range(20):
        (tmp_path / f"f{i:02d}").write_text("x")
    got = fp.tree_fingerprint(tmp_path)
    last = got[-1]
    assert len(got) == 6 and isinstance(last, tuple) and last[1] == "truncated"  # 5 files, then the marker


def test_cache_hits_only_on_the_same_fingerprint_and_stays_bounded(tmp_path: Path) -> None:
    cache: RoundCache[str] = RoundCache(max_rounds=2)
    a, b, c = (tmp_path / n for n in "abc")
    cache.put(a, ("k1",), "A1")
    assert cache.get(a, ("k1",)) == "A1"
    assert cache.get(a, ("k2",)) is None
    cache.put(a, ("k2",), "A2")  # replaces: one entry per round
    assert len(cache) == 1 and cache.get(a, ("k2",)) == "A2"
    cache.put(b, ("k",), "B")
    cache.put(c, ("k",), "C")  # a is the least recently used: dropped
    assert len(cache) == 2 and cache.get(a, ("k2",)) is None
    assert cache.get(c, ("k",)) == "C"
    assert (cache.hits, cache.misses) == (3, 2)


def test_symlink_loops_inside_a_round_do_not_recurse(tmp_path: Path) -> None:
    """``round_0/loop -> ..`` and ``round_0/self -> .``: the walk identifies a linked directory
    by its stat and stops there (it once recursed until the stack ran out)."""
    rnd = tmp_path / "profile" / "round_0"
    rnd.mkdir(parents=True)
    (rnd / "profile_topN.json").write_text("{}")
    (rnd / "loop").symlink_to("..")
    (rnd / "self").symlink_to(".")
    walked = fp.tree_fingerprint(rnd)
    kinds = {row[0].rsplit("/", 1)[-1]: row[1] for row in walked if isinstance(row, tuple)}
    assert kinds["loop"] == "linked dir" and kinds["self"] == "linked dir"
    assert fp.tree_fingerprint(rnd) == walked
