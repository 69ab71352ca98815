"""Issue 16, the boundary: reads bounded and of regular files only, alias-free YAML, one number
coercer, strict UTF-8 JSON writes, json+md written as a pair.

Each test reproduces one failure of the issue; a user would notice each as a hang, a traceback,
a file that is not JSON, or a json that does not match its md.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from roofline_tui.core import store
from roofline_tui.core.analyze import AnalyzeOptions
from roofline_tui.core.artifact import NON_FINITE_PROBLEM, Artifact, artifact_to_json
from roofline_tui.core.inputs import load_env_report, parse_topn
from roofline_tui.core.peaks import load_peak_table
from roofline_tui.core.rounds.analysis import analyze_round, write_artifact
from roofline_tui.core.rounds.playbook import PriorsError, load_priors
from roofline_tui.core.store import ReadProblem, WriteProblem, read_json, read_text

HUGE = "9" * 400  # a 400-digit JSON integer: OverflowError in float() before the fix


def finishes(fn, seconds: float = 10.0):
    """Run ``fn`` in a daemon thread; fail (instead of hanging the suite) if it blocks."""
    box: dict = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            box["error"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"blocked for more than {seconds} s"
    if "error" in box:
        raise box["error"]
    return box.get("value")


def cli(*args: str, timeout: float = 90) -> subprocess.CompletedProcess:
    env = dict(os.environ, COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "roofline_tui", *args], capture_output=True,
                          text=True, timeout=timeout, env=env)


def strict_load(path: Path):
    """The artifact as a strict parser sees it: UTF-8 bytes, no NaN/Infinity literals."""
    def refuse(token: str):
        raise AssertionError(f"{token} is not JSON")

    return json.loads(path.read_bytes().decode("utf-8"), parse_constant=refuse)


# --------------------------------------------------------------------------- bounded reads


def test_a_fifo_is_refused_at_once_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "profile_topN.json"
    os.mkfifo(fifo)
    with pytest.raises(ReadProblem, match="FIFO"):
        finishes(lambda: read_json(fifo))
    with pytest.raises(ReadProblem, match="FIFO"):
        finishes(lambda: read_text(fifo))


def test_a_device_is_refused_without_reading_it() -> None:
    # /dev/zero never ends: reading it grew memory until MemoryError
    with pytest.raises(ReadProblem, match="device"):
        finishes(lambda: read_json(Path("/dev/zero")))


def test_the_size_is_checked_before_reading(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    with open(big, "wb") as fh:  # sparse: 300 MiB of size, nothing on disk
        fh.truncate(300 * 1024 * 1024)
    t0 = time.perf_counter()
    with pytest.raises(ReadProblem, match="too large"):
        read_json(big)
    assert time.perf_counter() - t0 < 1.0  # refused from fstat, not after reading 300 MiB
    with pytest.raises(ReadProblem, match="too large"):
        read_text(big, max_bytes=1024)
    assert store.read_bytes(big, max_bytes=16, head=True) == b"\0" * 16


def test_directories_missing_files_and_symlink_loops_give_one_line(tmp_path: Path) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    for path, words in ((tmp_path, "directory"), (tmp_path / "nope", "not found"),
                        (loop, "cannot read")):
        with pytest.raises(ReadProblem) as info:
            read_json(path)
        assert words in str(info.value) and "\n" not in str(info.value)


def test_json_depth_is_limited(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ReadProblem, match="nested deeper than 64"):
        read_json(deep)
    deep.write_text("[" * 700_000 + "]" * 700_000)  # past the pre-check size: the decoder's guard
    with pytest.raises(ReadProblem, match="nested"):
        read_json(deep)
    ok = tmp_path / "ok.json"
    ok.write_text("[" * 64 + "]" * 64)
    assert read_json(ok) is not None
    # brackets inside strings are not nesting
    strs = tmp_path / "strings.json"
    strs.write_text(json.dumps({"name": "[" * 500 + "\\\"" + "{" * 500}))
    assert read_json(strs)["name"].startswith("[[[")


def test_an_integer_past_pythons_digit_limit_is_a_field_problem_not_a_file_problem(
    tmp_path: Path,
) -> None:
    p = tmp_path / "t.json"
    p.write_text('{"top_kernels": [{"name": "k", "pct_gpu_time": 50, "calls": ' + "7" * 5000
                 + "}]}")
    topn, problems = parse_topn(read_json(p))
    assert topn.entries[0].calls is None
    assert any("calls ignored: a huge integer is too large" in x for x in problems)


def test_a_fifo_in_a_sibling_round_does_not_block_analysis(demo_profile: Path) -> None:
    """``roofline analyze round_1`` reads its siblings for history: a FIFO named
    profile_topN.json in round_0 hung it forever."""
    topn = demo_profile / "round_0" / "profile_topN.json"
    topn.unlink()
    os.mkfifo(topn)
    proc = cli("analyze", str(demo_profile / "round_1"), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert strict_load(demo_profile / "round_1" / "profile_roofline.json")["entries"]


def test_a_fifo_top_n_in_the_round_itself_is_a_recorded_problem(demo_profile: Path) -> None:
    rnd = demo_profile / "round_2"
    (rnd / "profile_topN.json").unlink()
    os.mkfifo(rnd / "profile_topN.json")
    art = finishes(lambda: analyze_round(rnd).artifact, 30)
    assert any("FIFO" in str(e) for e in art.skill_errors)


# --------------------------------------------------------------------------- YAML


BOMB = "\n".join(
    ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    + [f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 10) + "]"
       for i in range(5)]
)


def test_priors_with_aliases_are_refused_before_expansion(tmp_path: Path) -> None:
    p = tmp_path / "priors.yaml"
    p.write_text(BOMB + "\ntarget_eff: {gemm: 0.5}\n")
    with pytest.raises(PriorsError, match="aliases"):
        load_priors(p)


def test_priors_nested_100k_deep_is_one_line_not_a_recursion_error(tmp_path: Path) -> None:
    for text in ("[" * 100_000 + "]" * 100_000, "a:\n" + "".join(
            " " * i + "- \n" for i in range(1, 3000))):
        p = tmp_path / "priors.json"
        p.write_text(text)
        with pytest.raises(PriorsError, match="nested|mapping"):
            load_priors(p)


def test_priors_huge_and_nonfinite_values_are_refused_with_the_reason(tmp_path: Path) -> None:
    p = tmp_path / "priors.json"
    p.write_text('{"target_eff": {"gemm": ' + HUGE + "}}")
    with pytest.raises(PriorsError, match="400-digit integer is too large"):
        load_priors(p)
    p.write_text('target_eff: {gemm: .nan}\n')
    with pytest.raises(PriorsError, match="not finite"):
        load_priors(p)


def test_priors_from_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "priors.json"
    os.mkfifo(fifo)
    with pytest.raises(PriorsError, match="FIFO"):
        finishes(lambda: load_priors(fifo))


PEAKS_HEAD = "# MI355X\n\n```yaml\ngfx: gfx950\nproduct: MI355X\nhbm_bw_bytes_s: 8.0e12\n"


def test_a_peaks_md_alias_bomb_is_skipped_with_a_reason(tmp_path: Path) -> None:
    p = tmp_path / "peaks.md"
    bomb_block = BOMB.replace("\n", "\n") + "\nsource: *f\n"
    p.write_text(PEAKS_HEAD + bomb_block + "```\n")
    sections, problems = load_peak_table(p)
    assert sections == []
    assert any("YAML anchors and aliases" in x for x in problems)


def test_peaks_below_plausible_are_refused(tmp_path: Path) -> None:
    """An HBM peak of 1e-300 B/s made every ratio infinite (Infinity in the artifact)."""
    p = tmp_path / "peaks.md"
    p.write_text(PEAKS_HEAD.replace("8.0e12", "1e-300") + "```\n")
    sections, problems = load_peak_table(p)
    assert sections == [] and any("hbm_bw_bytes_s" in x for x in problems)


def test_the_bundled_peak_table_is_parsed_once_per_process(monkeypatch, tmp_path: Path) -> None:
    from roofline_tui.core import peaks

    # an empty cache directory: the first load parses (and precompiles), no later one does
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    calls: list[int] = []
    real = peaks.parse_peaks_md

    def counted(text: str) -> tuple[list[peaks.PeakSection], list[str]]:
        calls.append(1)
        return real(text)

    monkeypatch.setattr(peaks, "parse_peaks_md", counted)
    monkeypatch.setattr(peaks, "_TABLE_CACHE", {})
    first, _ = load_peak_table()
    for _ in range(3):
        again, _ = load_peak_table()
        assert again == first and again is not first  # the same sections, in a new list
    assert len(calls) == 1
    # shared, so frozen: a caller cannot edit the table every later round reads
    import pydantic

    with pytest.raises(pydantic.ValidationError):
        first[0].hbm_bw_bytes_s = 1.0  # type: ignore[misc]
    again.clear()
    assert load_peak_table()[0] == first
    import yaml

    assert store._yaml_loader() is yaml.CSafeLoader


def test_an_edited_peaks_file_is_parsed_again(tmp_path: Path) -> None:
    p = tmp_path / "peaks.md"
    p.write_text(PEAKS_HEAD + "```\n")
    assert load_peak_table(p)[0][0].hbm_bw_bytes_s == 8e12
    p.write_text(PEAKS_HEAD.replace("8.0e12", "5.3e12") + "```\n")
    os.utime(p, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
    assert load_peak_table(p)[0][0].hbm_bw_bytes_s == 5.3e12


# --------------------------------------------------------------------------- numbers


TOPN_FIELDS = ("calls", "total_ms", "avg_us", "serving_weighted_pct", "rank")


@pytest.mark.parametrize("field", TOPN_FIELDS)
def test_a_400_digit_integer_in_a_top_n_field_is_a_recorded_problem(field: str) -> None:
    doc = {"top_kernels": [{"name": "gemm_kernel", "pct_gpu_time": 40.0,
                            field: json.loads(HUGE)}]}
    topn, problems = parse_topn(doc)
    assert getattr(topn.entries[0], field) is None
    assert any(f"{field} ignored: a 400-digit integer is too large" in p for p in problems)


def test_huge_integers_in_maps_shapes_and_top_level_are_dropped() -> None:
    big = json.loads(HUGE)
    doc = {"total_gpu_time_ms": big, "num_kernel_launches": big,
           "serving": {"n_decode_steps": big, "analytic_calls": {"decode": big}},
           "top_kernels": [{"name": "k", "pct_gpu_time": 10, "shapes": [[[big, 4]]],
                            "calls_per_step": {"decode": big}, "est_shape": {"decode": {"M": big}},
                            "base_latency_ms": {"decode": big}}]}
    topn, _ = parse_topn(doc)
    e = topn.entries[0]
    assert topn.total_gpu_time_ms is None and topn.num_kernel_launches is None
    assert topn.serving is not None and topn.serving.n_decode_steps is None
    assert e.shapes == [] and e.calls_per_step == {} and e.est_m == {}
    assert e.base_latency_ms == {}


def test_negative_counts_and_absurd_percentages_are_refused() -> None:
    doc = {"top_kernels": [
        {"name": "a_kernel", "pct_gpu_time": 1e300},
        {"name": "b_kernel", "pct_gpu_time": 30, "calls": -5, "avg_us": -1},
        {"name": "c_kernel", "pct_gpu_time": "NaN"},
    ]}
    topn, problems = parse_topn(doc)
    assert [e.name for e in topn.entries] == ["b_kernel"]
    assert topn.entries[0].calls is None and topn.entries[0].avg_us is None
    text = "\n".join(problems)
    assert "a_kernel" in text and "1e+300 is too large" in text
    assert "calls ignored: -5 is negative" in text
    assert "avg_us ignored: -1 is not positive" in text
    assert "c_kernel" in text and "not finite" in text


def test_workload_overflow_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "env_report.json"
    p.write_text('{"gfx": "gfx950", "workload": {"isl": 1e308, "osl": ' + HUGE
                 + ', "conc": -4, "tp": "8"}}')
    env, problems = load_env_report(p)
    assert env is not None
    assert env.workload.isl is None and env.workload.osl is None and env.workload.conc is None
    assert env.workload.tp == 8
    assert len(problems) == 3 and all("\n" not in x for x in problems)


def test_analyze_with_huge_numbers_everywhere_exits_0_and_strict_exits_1(
    demo_profile: Path,
) -> None:
    rnd = demo_profile / "round_0"
    doc = json.loads((rnd / "profile_topN.json").read_text())
    doc["top_kernels"][0]["calls"] = "@HUGE@"
    doc["top_kernels"][1]["total_ms"] = "@HUGE@"
    doc["top_kernels"][2]["name"] = "weird\ud800kernel"
    text = json.dumps(doc).replace('"@HUGE@"', HUGE)
    (rnd / "profile_topN.json").write_text(text)
    env = demo_profile.parent / "env_report.json"
    env.write_text(env.read_text().replace('"isl": 1024', '"isl": ' + HUGE))
    proc = cli("analyze", str(rnd))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    art = strict_load(rnd / "profile_roofline.json")
    errors = "\n".join(map(str, art["skill_errors"]))
    assert "calls ignored: a 400-digit integer is too large" in errors
    assert "total_ms ignored" in errors
    (rnd / "profile_roofline.md").read_bytes().decode("utf-8")
    assert cli("analyze", str(rnd), "--strict").returncode == 1


# --------------------------------------------------------------------------- writes


def test_non_finite_values_are_written_as_null_and_recorded() -> None:
    art = Artifact(skill_errors=[])
    art.total_gpu_time_ms = float("inf")
    text = artifact_to_json(art)
    data = json.loads(text, parse_constant=lambda t: pytest.fail(f"{t} written"))
    assert data["total_gpu_time_ms"] is None
    assert any(NON_FINITE_PROBLEM in e and "total_gpu_time_ms" in e for e in art.skill_errors)
    assert data["skill_errors"] == art.skill_errors
    artifact_to_json(art)
    assert len(art.skill_errors) == 1  # recorded once, however often it is written


def test_writes_are_valid_utf8_whatever_the_strings(tmp_path: Path) -> None:
    art = Artifact(skill_errors=["bad \ud800 name \x1b]52;c;QUJD\x07 \u202e \x9b"])
    json_path, md_path = write_artifact(art, tmp_path)
    data = strict_load(json_path)
    raw = json_path.read_text(encoding="utf-8")
    for ch in ("\x1b", "\u202e", "\x9b", "\x07"):
        assert ch not in raw
    assert data["skill_errors"][0].startswith("bad \ufffd name \x1b]52")  # escapes, same value
    md = md_path.read_bytes().decode("utf-8")
    assert "\x1b" not in md and "\u202e" not in md and "\x9b" not in md


def _old_pair(tmp_path: Path) -> tuple[Path, Path]:
    j, m = tmp_path / "profile_roofline.json", tmp_path / "profile_roofline.md"
    j.write_text('{"old": true}\n')
    m.write_text("# old\n")
    return j, m


def test_md_path_being_a_directory_leaves_both_old_files(tmp_path: Path) -> None:
    j = tmp_path / "profile_roofline.json"
    j.write_text('{"old": true}\n')
    (tmp_path / "profile_roofline.md").mkdir()
    with pytest.raises(WriteProblem) as info:
        write_artifact(Artifact(), tmp_path)
    assert "profile_roofline.md" in str(info.value) and "json" not in str(info.value)
    assert json.loads(j.read_text()) == {"old": True}
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_full_disk_on_the_second_file_replaces_neither(tmp_path: Path, monkeypatch) -> None:
    j, m = _old_pair(tmp_path)
    real = os.fsync
    count = {"n": 0}

    def fsync(fd: int) -> None:
        count["n"] += 1
        if count["n"] == 2:  # the md's temp file
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)  # store calls os.fsync
    with pytest.raises(WriteProblem, match="profile_roofline.md: No space left"):
        write_artifact(Artifact(), tmp_path)
    assert j.read_text() == '{"old": true}\n' and m.read_text() == "# old\n"
    assert not list(tmp_path.glob(".*.tmp"))


def test_both_files_are_replaced_together(tmp_path: Path) -> None:
    j, m = _old_pair(tmp_path)
    write_artifact(Artifact(gfx="gfx950"), tmp_path)
    assert strict_load(j)["gfx"] == "gfx950" and "gfx950" in m.read_text()


def test_analyze_cli_names_the_md_when_it_cannot_be_written(worked_example: Path) -> None:
    (worked_example / "profile_roofline.md").mkdir()
    proc = cli("analyze", str(worked_example))
    assert proc.returncode == 1
    assert "profile_roofline.md" in proc.stderr and "Traceback" not in proc.stderr
    assert not (worked_example / "profile_roofline.json").exists()


def test_reading_a_round_with_options_is_unaffected(worked_example: Path) -> None:
    """Sanity: the bounded reader reads the real files exactly as before."""
    art = analyze_round(worked_example, None, AnalyzeOptions()).artifact
    assert art.entries and art.peaks.source == "table"
    assert not [e for e in art.skill_errors if "cannot read" in str(e)]


def test_copy_keeps_no_temp_files(tmp_path: Path) -> None:
    for _ in range(3):
        write_artifact(Artifact(), tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["profile_roofline.json",
                                                          "profile_roofline.md"]
    shutil.rmtree(tmp_path)


# --------------------------------------------------------------------------- SQLite (stage C)


def _rocpd(path: Path, pmc_view: str) -> None:
    import sqlite3

    con = sqlite3.connect(path)
    con.execute("CREATE TABLE kernels (dispatch_id INTEGER, name TEXT)")
    con.execute(pmc_view)
    con.commit()
    con.close()


def test_a_rocpd_name_cannot_add_uri_parameters(worked_example: Path) -> None:
    """``evil?mode=rwc&x=.db`` under counters/ made analyze create an empty ``counters/evil``
    and read that instead."""
    counters = worked_example / "counters"
    counters.mkdir()
    db = counters / "evil?mode=rwc&x=.db"
    _rocpd(db, "CREATE TABLE pmc_events (dispatch_id INTEGER, name TEXT, counter_name TEXT, "
               "counter_value REAL, duration REAL)")
    before = sorted(p.name for p in counters.iterdir())
    art = analyze_round(worked_example).artifact
    assert sorted(p.name for p in counters.iterdir()) == before
    assert not (counters / "evil").exists()
    assert art.entries


def test_a_rocpd_view_that_never_ends_is_stopped(tmp_path: Path, monkeypatch) -> None:
    from roofline_tui.core.measured.counters import load_counters

    db = tmp_path / "run.db"
    _rocpd(db, "CREATE VIEW pmc_events AS WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL "
               "SELECT x + 1 FROM n) SELECT x AS dispatch_id, 'k' AS name, 'FETCH_SIZE' AS "
               "counter_name, 1.0 AS counter_value, 1.0 AS duration FROM n")
    from roofline_tui.core.measured import sqlite_ro as _util

    monkeypatch.setattr(_util, "SQLITE_TIME_BUDGET_S", 1.0)
    t0 = time.perf_counter()
    result = finishes(lambda: load_counters([db]), 30)
    assert time.perf_counter() - t0 < 10
    assert any("time budget (1 s)" in p for p in result.problems), result.problems


def test_a_fifo_named_like_a_database_is_not_opened(tmp_path: Path) -> None:
    from roofline_tui.core.measured.counters import load_counters

    fifo = tmp_path / "run.db"
    os.mkfifo(fifo)
    result = finishes(lambda: load_counters([fifo]), 10)
    assert any("FIFO" in p for p in result.problems)


def test_lone_surrogate_escapes_are_read_as_visible_text(tmp_path: Path) -> None:
    p = tmp_path / "s.json"
    p.write_text('{"k\\ud800": ["x\\udfff", {"n": "\\ud83d\\ude00 ok"}]}')
    assert read_json(p) == {"k\\ud800": ["x\\udfff", {"n": "\U0001f600 ok"}]}


@pytest.mark.parametrize("kind", ["dev_zero", "fifo", "huge"])
def test_the_playbook_is_read_bounded(demo_profile: Path, tmp_path: Path, kind: str) -> None:
    """``playbook --out /dev/zero`` grew memory until MemoryError; a FIFO blocked."""
    from roofline_tui.core.rounds.compare import load_history
    from roofline_tui.core.rounds.playbook import append_playbook

    out = tmp_path / "playbook.md"
    if kind == "dev_zero":
        out.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(out)
    else:
        with open(out, "wb") as fh:
            fh.truncate(200 * 1024 * 1024)
    h = load_history(demo_profile)
    with pytest.raises(OSError) as info:
        finishes(lambda: append_playbook(out, h), 20)
    assert "\n" not in str(info.value)
    assert any(w in str(info.value) for w in ("device", "FIFO", "too large"))


def test_a_deeply_nested_json_counter_file_is_unknown_not_a_crash(tmp_path: Path) -> None:
    from roofline_tui.core.measured.counters import load_counters

    deep = tmp_path / "roofline.json"
    deep.write_text('{"a":' + "[" * 5000 + "]" * 5000 + "}")
    result = load_counters([deep])
    assert not any("stopped early" in p for p in result.problems), result.problems


def test_duplicate_short_names_become_distinct(demo_profile: Path) -> None:
    """``x, x, x#2`` deduped to ``x, x#2, x#2``: the rankings held one entry twice and lost
    another, and the CLI table showed it so."""
    rnd = demo_profile / "round_0"
    path = rnd / "profile_topN.json"
    doc = json.loads(path.read_text())
    for k, short in zip(doc["top_kernels"][:3], ["x", "x", "x#2"]):
        k["short_name"] = short
        k["pct_gpu_time"] = 20.0
    path.write_text(json.dumps(doc))
    art = analyze_round(rnd).artifact
    names = [e.short_name for e in art.entries]
    assert len(names) == len(set(names))
    assert {"x", "x#2"} <= set(names) and sum(n.startswith("x") for n in names) == 3
    assert sorted(art.ranking_by_pct) == sorted(names)
    assert sorted(art.ranking_by_expected_gain) == sorted(names)
