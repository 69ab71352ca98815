"""roofline_tui.ingest: completeness, sessions, state, round numbers (no import, no analysis)."""

from __future__ import annotations

import gzip
import json
import os
import zlib
from pathlib import Path

import pytest

from roofline_tui import ingest
from roofline_tui.cli import ingest as cli_ingest
from roofline_tui.core.rounds.source import read_round_source
from roofline_tui.ingest import (
    State,
    StateProblem,
    Tracker,
    candidate_files,
    check_complete,
    group_sessions,
    next_round,
    remove_partials,
)

DOC = json.dumps({"traceEvents": [{"ph": "X", "name": f"k{i}"} for i in range(2000)]}).encode()


def test_the_cli_defaults_are_the_modules() -> None:
    assert cli_ingest.DEFAULT_SETTLE == ingest.DEFAULT_SETTLE_S
    assert cli_ingest.DEFAULT_TIMEOUT == ingest.DEFAULT_TIMEOUT_S
    assert cli_ingest.POLL == ingest.POLL_S


def test_a_whole_gzip_is_complete_and_hashed(tmp_path: Path) -> None:
    p = tmp_path / "a.pt.trace.json.gz"
    p.write_bytes(gzip.compress(DOC))
    c = check_complete(p)
    assert c.complete, c.reason
    import hashlib

    assert c.sha256 == hashlib.sha256(p.read_bytes()).hexdigest()
    assert c.content_sha256 == hashlib.sha256(DOC).hexdigest()  # the same as the plain .json
    plain = tmp_path / "a.pt.trace.json"
    plain.write_bytes(DOC)
    assert check_complete(plain).content_sha256 == c.content_sha256


@pytest.mark.parametrize("cut", [10, 100, -8, -1])
def test_a_truncated_gzip_is_not(tmp_path: Path, cut: int) -> None:
    p = tmp_path / "a.json.gz"
    p.write_bytes(gzip.compress(DOC)[:cut])
    c = check_complete(p)
    assert not c.complete and "ends early" in c.reason


def test_several_gzip_members_and_trailing_zeros_are_complete(tmp_path: Path) -> None:
    p = tmp_path / "m.json.gz"
    p.write_bytes(gzip.compress(DOC[:1000]) + gzip.compress(DOC[1000:]) + b"\0" * 16)
    assert check_complete(p).complete


def test_a_highly_compressed_gzip_is_read_in_bounded_chunks(tmp_path: Path) -> None:
    body = b'{"traceEvents": [' + b" " * (64 << 20) + b"]}"
    p = tmp_path / "big.json.gz"
    co = zlib.compressobj(9, zlib.DEFLATED, 31)
    p.write_bytes(co.compress(body) + co.flush())
    assert p.stat().st_size < 1 << 20
    assert check_complete(p).complete


@pytest.mark.parametrize(("text", "complete"), [
    (b'{"traceEvents": []}\n  ', True), (b"[1, 2]", True), (b'{"traceEvents": [', False),
    (b"", False), (b"garbage", False)])
def test_plain_json_ends_with_a_bracket(tmp_path: Path, text: bytes, complete: bool) -> None:
    p = tmp_path / "t.json"
    p.write_bytes(text)
    assert check_complete(p).complete is complete


def test_candidates_skip_hidden_temp_and_non_trace_files(tmp_path: Path) -> None:
    for name in ("a.pt.trace.json.gz", ".hidden.json", "b.json.tmp", "config.json", "x.txt",
                 "run.sqlite", "rank_1/t.json"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("{}")
    (tmp_path / "capture_traces").mkdir()
    (tmp_path / "capture_traces" / "c.json").write_text("{}")
    names = [p.relative_to(tmp_path).as_posix() for p in candidate_files(tmp_path)]
    assert names == ["a.pt.trace.json.gz", "rank_1/t.json", "run.sqlite"]


def _sessions(tmp_path: Path, names: list[str]) -> list[list[str]]:
    paths = [tmp_path / n for n in names]
    return [[p.name for p in s.files] for s in group_sessions(paths, tmp_path)]


def test_ranks_of_one_session_group_and_timestamps_may_differ(tmp_path: Path) -> None:
    # tensorboard_trace_handler: each rank stamps its file (ms) when it writes it
    assert _sessions(tmp_path, ["rank1.1712345678950.pt.trace.json.gz",
                                "rank0.1712345678901.pt.trace.json.gz"]) == [
        ["rank0.1712345678901.pt.trace.json.gz", "rank1.1712345678950.pt.trace.json.gz"]]
    # two profiling runs ten minutes apart: two sessions
    assert _sessions(tmp_path, ["rank0.1712345678901.pt.trace.json.gz",
                                "rank1.1712345678950.pt.trace.json.gz",
                                "rank0.1712346278901.pt.trace.json.gz",
                                "rank1.1712346278999.pt.trace.json.gz"]) == [
        ["rank0.1712345678901.pt.trace.json.gz", "rank1.1712345678950.pt.trace.json.gz"],
        ["rank0.1712346278901.pt.trace.json.gz", "rank1.1712346278999.pt.trace.json.gz"]]


def test_sglang_names_group_by_profile_id(tmp_path: Path) -> None:
    got = _sessions(tmp_path, ["1712345678.12-TP-1.trace.json.gz", "1712345678.12-TP-0.trace.json.gz",
                               "1712349999.50-TP-0.trace.json.gz"])
    assert got == [["1712345678.12-TP-0.trace.json.gz", "1712345678.12-TP-1.trace.json.gz"],
                   ["1712349999.50-TP-0.trace.json.gz"]]


def test_names_without_a_rank_are_a_session_each(tmp_path: Path) -> None:
    assert _sessions(tmp_path, ["host_1.1712345678901.pt.trace.json", "host_2.1712345678902.pt.trace.json"]) == [
        ["host_1.1712345678901.pt.trace.json"], ["host_2.1712345678902.pt.trace.json"]]


def test_the_next_round_is_one_past_the_highest(tmp_path: Path) -> None:
    assert next_round(tmp_path) == 0
    (tmp_path / "round_1").mkdir()
    (tmp_path / "round_tuning").mkdir()
    assert next_round(tmp_path) == 2
    (tmp_path / "round_2").write_text("a file takes the name too")
    assert next_round(tmp_path) == 3


def test_partial_rounds_are_hidden_and_removed_on_start(tmp_path: Path) -> None:
    p = ingest.partial_dir(tmp_path, 4)
    assert p.name.startswith(".round_4.partial-") and p.is_dir()
    (p / "profile_topN.json").write_text("{}")
    (tmp_path / ".round_9.notours").mkdir()
    assert remove_partials(tmp_path) == [p.name]
    assert not p.exists() and (tmp_path / ".round_9.notours").is_dir()


def test_place_round_never_replaces_a_round_made_meanwhile(tmp_path: Path) -> None:
    (tmp_path / "round_0").mkdir()  # empty: a plain rename would replace it
    p = ingest.partial_dir(tmp_path, 0)
    assert ingest.place_round(p, tmp_path, 0) == tmp_path / "round_1"
    assert not any((tmp_path / "round_0").iterdir())


def test_a_state_file_that_cannot_be_read_is_refused(tmp_path: Path) -> None:
    (tmp_path / ".ingest.json").write_text("{not json")
    with pytest.raises(StateProblem):
        State.load(tmp_path)
    (tmp_path / ".ingest.json").write_text('{"rounds": 3}')
    with pytest.raises(StateProblem):
        State.load(tmp_path)


def test_state_round_trips_and_source_json_also_counts(tmp_path: Path) -> None:
    trace = tmp_path / "t.json"
    trace.write_bytes(DOC)
    c = check_complete(trace)
    (tmp_path / "prof").mkdir()
    s = State.load(tmp_path / "prof")
    s.add_round("round_0", "torch", "t.json", [ingest.source_record(trace, c)])
    again = State.load(tmp_path / "prof")
    assert again.ingested_as(c) == "round_0" and again.same_file_ingested(trace, c)
    # the state lost: the round's source.json still says where it came from
    (tmp_path / "prof" / ".ingest.json").unlink()
    (tmp_path / "prof" / "round_0").mkdir()
    ingest.write_source(tmp_path / "prof" / "round_0", importer="torch", session="t.json",
                        trace_dir=tmp_path, sources=[ingest.source_record(trace, c)])
    assert State.load(tmp_path / "prof").ingested_as(c) == "round_0"
    src = read_round_source(tmp_path / "prof" / "round_0")
    assert src is not None and src.files == ["t.json"] and src.importer == "torch"
    assert read_round_source(tmp_path) is None


def test_the_tracker_waits_for_settle_and_gives_up_after_timeout(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    good, bad = d / "good.json", d / "bad.json.gz"
    good.write_bytes(DOC)
    bad.write_bytes(gzip.compress(DOC)[:50])
    t = Tracker(d, State(profile=tmp_path), settle=2.0, timeout=10.0)
    first = t.poll(now=100.0)
    # a plain JSON document's end is a guess ("}" may close an inner object): it waits for
    # the settle time; a gzip stream cut short waits too
    assert not first.ready and first.pending == 2
    second = t.poll(now=102.5)
    assert [s.files for s, _ in second.ready] == [[good]] and second.pending == 1
    t.mark_done(good)
    assert not t.poll(now=105.0).failed
    late = t.poll(now=111.0)
    assert [(p, size) for p, size, _ in late.failed] == [(bad, 50)]
    assert "ends early" in late.failed[0][2]
    os.utime(good, ns=(1, 1))  # rewritten (new mtime): a candidate again
    assert t.poll(now=112.0).pending == 1


def test_a_whole_gzip_renamed_into_the_directory_is_taken_at_once(tmp_path: Path) -> None:
    """A framework's rename (or a copy finished between two looks): the first look finds a
    gzip stream whose trailer checks out, so no settle time is waited; written in two steps,
    it waits for the settle time as any other file."""
    d = tmp_path / "d"
    d.mkdir()
    staged = tmp_path / "staged.json.gz"
    staged.write_bytes(gzip.compress(DOC))
    staged.rename(d / "trace.json.gz")
    t = Tracker(d, State(profile=tmp_path), settle=2.0, timeout=10.0)
    assert [s.files for s, _ in t.poll(now=100.0).ready] == [[d / "trace.json.gz"]]
    t.mark_done(d / "trace.json.gz")
    slow = d / "slow.json.gz"
    whole = gzip.compress(DOC + b" " * 10)
    slow.write_bytes(whole[:20])
    assert not t.poll(now=101.0).ready  # seen incomplete
    slow.write_bytes(whole)  # now whole, but it was seen changing: settle first
    assert not t.poll(now=101.5).ready
    assert [s.files for s, _ in t.poll(now=104.0).ready] == [[slow]]
