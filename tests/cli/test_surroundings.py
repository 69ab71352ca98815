"""Issue 25 (command line and writers): ``roofline`` never fails because of its surroundings.

Each test runs the real program in a subprocess against a copy of the demo in ``tmp_path`` (which
pytest removes); every process started here is waited for (or killed) before the test ends.
Output streams (a reader that leaves, a full device, a closed descriptor, an ASCII-only
encoding), over-long paths, concurrent writers, symlinked and restricted files, long names,
SIGTERM in the middle of a write, formula-looking CSV cells, bad priors files and UTF-16 input.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from tests.cli.helpers import one_line, roofline
from tests.core.rounds.conftest import read, write
from tests.paths import DEMO, WILD_FIXTURES

NSYS_CSV = WILD_FIXTURES / "doc_nsys2025.3.2_armv8_cuda_gpu_kern_sum_stdout.csv"
ROCPROF_JSON = WILD_FIXTURES / "rocprofv3_mi350x_results_trimmed.json"  # names its device
PROGRAM = [sys.executable, "-m", "roofline_tui"]


@pytest.fixture
def demo_copy(tmp_path: Path) -> Path:
    """tmp/demo: env_report.json, config.json, profile/round_0..2 (the bundled demo)."""
    dst = tmp_path / "demo"
    shutil.copytree(DEMO, dst)
    return dst


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes a test starts; any still running at the end is killed and reaped."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for p in started:
        if p.poll() is None:
            p.kill()
        p.wait(timeout=30)


def shell(script: str, cwd: Path, env: dict[str, str] | None = None,
          timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``script`` in bash, with ``$ROOFLINE`` the program; what it prints is its result."""
    full = dict(os.environ, COLUMNS="200", ROOFLINE=" ".join(PROGRAM), **(env or {}))
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=cwd,
                          env=full, timeout=timeout, errors="backslashreplace")


def no_temps(directory: Path) -> list[str]:
    """Our temp and lock files left in ``directory`` (there should be none)."""
    return sorted(p.name for p in directory.iterdir()
                  if p.name.startswith(".") and p.name.endswith((".tmp", ".lock")))


# --------------------------------------------------------------------------- 1: output streams


def _commands(demo: Path, tmp: Path) -> dict[str, list[str]]:
    prof = demo / "profile"
    return {
        "analyze": ["analyze", str(prof / "round_0")],
        "rounds": ["rounds", str(prof)],
        "schema": ["schema"],
        "playbook": ["playbook", str(prof), "--out", str(tmp / "pb.md")],
        "import": ["import", "nsys", str(NSYS_CSV), "--out", str(tmp / "imported")],
        "devices": ["devices"],
    }


@pytest.mark.parametrize("command", ["analyze", "rounds", "schema", "playbook", "import",
                                     "devices"])
def test_a_reader_that_leaves_ends_the_command_normally(command: str, demo_copy: Path,
                                                        tmp_path: Path) -> None:
    argv = _commands(demo_copy, tmp_path)[command]
    # the read end is closed before the program writes a byte: every write meets EPIPE
    proc = subprocess.Popen([*PROGRAM, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=dict(os.environ, COLUMNS="200"))
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode("utf-8", "replace")
    assert proc.wait(timeout=120) == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err and "Exception ignored" not in err
    if command == "import":  # the job was done: the Top-N is there, whole
        assert read(tmp_path / "imported" / "profile_topN.json")["top_kernels"]


@pytest.mark.parametrize("redirect", [">/dev/full", ">&-", "2>/dev/full", "2>&-",
                                      ">/dev/full 2>/dev/full", ">&- 2>&-"])
@pytest.mark.parametrize("command", ["analyze", "rounds", "schema", "playbook", "import"])
def test_a_full_or_closed_stream_never_changes_the_exit_status(
        command: str, redirect: str, demo_copy: Path, tmp_path: Path) -> None:
    argv = " ".join(f"'{a}'" for a in _commands(demo_copy, tmp_path)[command])
    # fd 3 keeps the shell's own stdout for the status line
    done = shell(f"exec 3>&1; $ROOFLINE {argv} {redirect} 3>&-; echo \"rc=$?\" >&3", tmp_path)
    assert done.stdout.strip().splitlines()[-1] == "rc=0", done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    if command == "analyze":  # the artifact is whole: nothing meant for stdout went into it
        art = read(demo_copy / "profile" / "round_0" / "profile_roofline.json")
        assert art["skill"] == "roofline"
        assert no_temps(demo_copy / "profile" / "round_0") == []


def test_a_full_stdout_keeps_a_strict_failure_a_failure(demo_copy: Path, tmp_path: Path) -> None:
    r0 = demo_copy / "profile" / "round_0"  # the demo records problems: --strict exits 1
    done = shell(f"exec 3>&1; $ROOFLINE analyze '{r0}' --strict >/dev/full 3>&-; "
                 "echo \"rc=$?\" >&3", tmp_path)
    assert done.stdout.strip().endswith("rc=1"), done.stdout + done.stderr
    done = shell(f"exec 3>&1; $ROOFLINE analyze '{r0}' --max-heads 1 --strict >/dev/full 3>&-; "
                 "echo \"rc=$?\" >&3", tmp_path)
    assert done.stdout.strip().endswith("rc=0"), done.stdout + done.stderr


@pytest.mark.parametrize("env", [{"PYTHONIOENCODING": "ascii"},
                                 {"LC_ALL": "C", "LANG": "C", "PYTHONIOENCODING": "",
                                  "PYTHONUTF8": "0"}])
def test_an_ascii_terminal_reads_rules_and_arrows_as_ascii(env: dict[str, str],
                                                           demo_copy: Path) -> None:
    prof = demo_copy / "profile"
    analyzed = roofline("analyze", prof / "round_0", env=env)
    rounds = roofline("rounds", prof, env=env)
    for done in (analyzed, rounds):
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    if env.get("PYTHONIOENCODING") != "ascii" and "·" in analyzed.stdout:
        pytest.skip("this C locale reads as UTF-8 (PEP 538/540)")
    assert analyzed.stdout.isascii() and rounds.stdout.isascii()
    lines = analyzed.stdout.splitlines()
    assert lines[0].startswith("gfx950 . stage A . HBM")  # · as .
    assert set(lines[2].replace(" ", "")) == {"-"}  # the rule ─ as -
    assert "\\u" not in lines[2] and "1.02x" in analyzed.stdout  # × as x
    assert "d GPU" in rounds.stdout and "0 -> 1" in rounds.stdout  # Δ as d, → as ->
    assert lines[-1].startswith("Next (advisory, stage A): kernel_paged_attention_2d -- ")


# --------------------------------------------------------------------------- 3: PATH_MAX


def _deep_round(base: Path, length: int) -> str:
    """A relative path of a round directory whose absolute form is ``length`` bytes."""
    parts: list[str] = []
    left = length - len(str(base)) - 1
    while left > 0:
        k = min(200, left - 2) if left > 202 else left
        parts.append("d" * k)
        left -= k + 1
    cwd = os.getcwd()
    try:
        os.chdir(base)
        for part in parts:  # made one level at a time: the whole is too long for one call
            os.mkdir(part)
            os.chdir(part)
        shutil.copy(DEMO / "profile" / "round_0" / "profile_topN.json", "profile_topN.json")
    finally:
        os.chdir(cwd)
    return "/".join(parts)


@pytest.mark.parametrize("length", [4000, 4200])
def test_a_path_too_long_for_the_system_is_refused_in_one_line(length: int,
                                                               tmp_path: Path) -> None:
    rel = _deep_round(tmp_path, length)
    done = roofline("analyze", rel, cwd=tmp_path)
    assert done.returncode == 2
    assert "too long" in one_line(done)


# --------------------------------------------------------------------------- 11, 18: concurrency


def _profiles(demo: Path, tmp: Path, n: int) -> list[Path]:
    """``n`` copies of the demo profile, each with its own pair ids."""
    out = []
    for i in range(n):
        dst = tmp / f"run{i}"
        shutil.copytree(demo, dst)
        env = read(dst / "env_report.json")  # another run's workload: the same 2 pairs, new ids
        env["workload"]["conc"] = 64 + i
        write(dst / "env_report.json", env)
        out.append(dst / "profile")
    return out


def test_concurrent_playbook_runs_lose_no_row(demo_copy: Path, tmp_path: Path,
                                              procs: list[subprocess.Popen[bytes]]) -> None:
    profiles = _profiles(demo_copy, tmp_path, 6)
    for trial in range(3):
        book = tmp_path / f"book{trial}.md"
        batch = [subprocess.Popen([*PROGRAM, "playbook", str(p), "--out", str(book)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                 for p in profiles]
        procs.extend(batch)
        said = [p.communicate(timeout=300) for p in batch]
        assert [p.returncode for p in batch] == [0] * 6, said
        assert all(b"2 row(s) appended" in out for out, _ in said)
        text = book.read_text(encoding="utf-8")
        rows = [line for line in text.splitlines() if line.startswith("| pv-")]
        assert len(rows) == 12 and len({r.split(" | ")[0] for r in rows}) == 12, trial
        assert text.count("# Backend playbook") == 1
        assert no_temps(tmp_path) == []


def test_concurrent_analyses_of_one_round_leave_a_matching_pair(
        demo_copy: Path, procs: list[subprocess.Popen[bytes]]) -> None:
    r0 = demo_copy / "profile" / "round_0"
    for _ in range(3):
        batch = [subprocess.Popen([*PROGRAM, "analyze", str(r0), "--max-heads", str(n)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                 for n in (1, 2, 3, 4)]
        procs.extend(batch)
        assert [p.wait(timeout=300) for p in batch] == [0] * 4
        heads = read(r0 / "profile_roofline.json")["max_heads"]
        assert f"at most {heads};" in (r0 / "profile_roofline.md").read_text(encoding="utf-8")
        assert no_temps(r0) == []



@pytest.mark.parametrize("target", ["profile_roofline.json", "profile_roofline.csv"])
def test_a_writer_waits_while_another_holds_the_lock(
        demo_copy: Path, procs: list[subprocess.Popen[bytes]], target: str) -> None:
    """Another process holds the lock of the round's artifact (or CSV): analyze finishes its
    work but writes nothing until the lock is released, then writes the whole file."""
    from roofline_tui.core.store import write_lock

    r0 = demo_copy / "profile" / "round_0"
    path = r0 / target
    path.unlink(missing_ok=True)
    extra = ["--csv"] if target.endswith(".csv") else []
    with write_lock(path):
        proc = subprocess.Popen([*PROGRAM, "analyze", str(r0), *extra],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(proc)
        deadline = time.monotonic() + 4.0
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        assert proc.poll() is None, "the writer did not wait for the lock"
        assert not path.exists()
    assert proc.wait(timeout=300) == 0
    assert path.exists() and no_temps(r0) == []


@pytest.mark.parametrize("surface", ["analyze", "playbook", "priors-out"])
@pytest.mark.parametrize("kind", ["directory", "dangling symlink"])
def test_a_lock_path_that_is_no_file_refuses_the_write(demo_copy: Path, tmp_path: Path,
                                                       surface: str, kind: str) -> None:
    """Issue 36 item 4: a directory (or a dangling symlink) named like the lock of the file a
    command writes used to switch locking off and let the write run unlocked, exit 0. Now the
    command says so in one line naming the lock, exits 1 as for any output it cannot write,
    and writes nothing."""
    prof = demo_copy / "profile"
    target = {"analyze": prof / "round_0" / "profile_roofline.json",
              "playbook": tmp_path / "pb.md", "priors-out": tmp_path / "priors.json"}[surface]
    lock = target.parent / f".{target.name}.lock"
    if kind == "directory":
        lock.mkdir()
    else:
        lock.symlink_to(tmp_path / "gone")
    target.unlink(missing_ok=True)
    commands: dict[str, list[str | Path]] = {
        "analyze": ["analyze", prof / "round_0"],
        "playbook": ["playbook", prof, "--out", target],
        "priors-out": ["playbook", prof, "--out", tmp_path / "other.md", "--priors-out", target],
    }
    done = roofline(*commands[surface])
    assert done.returncode == 1, done.stdout + done.stderr
    line = one_line(done)
    assert f"its lock file .{target.name}.lock is a {kind}" in line and "remove it" in line
    assert not target.exists() and os.path.lexists(lock)

# --------------------------------------------------------------------------- 12: import --force


def test_import_never_replaces_a_top_n_without_force(tmp_path: Path) -> None:
    out = tmp_path / "round_0"
    assert roofline("import", "nsys", NSYS_CSV, "--out", out).returncode == 0
    topn = out / "profile_topN.json"
    doc = read(topn)
    doc["note_by_hand"] = "the baseline"
    write(topn, doc)
    before = topn.read_bytes()
    listing = sorted(p.name for p in out.iterdir())
    again = roofline("import", "nsys", NSYS_CSV, "--out", out)
    assert again.returncode == 1
    assert "--force" in one_line(again) and again.stdout == ""
    assert topn.read_bytes() == before and sorted(p.name for p in out.iterdir()) == listing
    forced = roofline("import", "nsys", NSYS_CSV, "--out", out, "--force")
    assert forced.returncode == 0, forced.stderr
    assert (out / "profile_topN.json.prev").read_bytes() == before
    assert "note_by_hand" not in read(topn) and "profile_topN.json.prev" in forced.stdout


# --------------------------------------------------------------------------- 14, 15, 16: files


def test_a_symlinked_playbook_is_appended_at_its_target(demo_copy: Path, tmp_path: Path) -> None:
    shared = tmp_path / "shared" / "playbook.md"
    shared.parent.mkdir()
    shared.write_text("# team playbook\n\nhand-written notes\n", encoding="utf-8")
    link = tmp_path / "knowledge" / "backend_playbook.md"
    link.parent.mkdir()
    link.symlink_to(shared)
    done = roofline("playbook", demo_copy / "profile", "--out", link)
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and os.readlink(link) == str(shared)
    text = shared.read_text(encoding="utf-8")
    assert text.startswith("# team playbook\n\nhand-written notes\n") and text.count("| pv-") == 2


def test_modes_are_kept_and_new_files_follow_the_umask(demo_copy: Path, tmp_path: Path) -> None:
    book = tmp_path / "pb.md"
    book.write_text("# private\n", encoding="utf-8")
    book.chmod(0o600)
    assert roofline("playbook", demo_copy / "profile", "--out", book).returncode == 0
    assert stat.S_IMODE(book.stat().st_mode) == 0o600 and "| pv-" in book.read_text()
    r0 = demo_copy / "profile" / "round_0"
    done = shell(f"umask 077; $ROOFLINE analyze '{r0}' --csv", tmp_path)
    assert "Traceback" not in done.stderr
    for name in ("profile_roofline.json", "profile_roofline.md", "profile_roofline.csv"):
        assert stat.S_IMODE((r0 / name).stat().st_mode) == 0o600, name
    imported = tmp_path / "imported"
    shell(f"umask 077; $ROOFLINE import rocprofv3 '{ROCPROF_JSON}' --out '{imported}'", tmp_path)
    for name in ("profile_topN.json", "profile_topN.md", "env_report.json"):
        assert stat.S_IMODE((imported / name).stat().st_mode) == 0o600, name
    (r0 / "profile_roofline.md").chmod(0o640)
    shell(f"umask 022; $ROOFLINE analyze '{r0}'", tmp_path)
    assert stat.S_IMODE((r0 / "profile_roofline.md").stat().st_mode) == 0o640  # kept
    assert stat.S_IMODE((r0 / "profile_roofline.json").stat().st_mode) == 0o600  # kept


@pytest.mark.parametrize("length", [242, 250, 255])
def test_a_long_output_name_is_writable(length: int, demo_copy: Path, tmp_path: Path) -> None:
    name = "p" * (length - 3) + ".md"
    out = tmp_path / name
    done = roofline("playbook", demo_copy / "profile", "--out", out, "--priors-out",
                    tmp_path / ("q" * (length - 5) + ".json"))
    assert done.returncode == 0, done.stderr
    assert "| pv-" in out.read_text(encoding="utf-8")
    assert read(tmp_path / ("q" * (length - 5) + ".json"))["schema"] == "roofline-priors-v1"
    assert no_temps(tmp_path) == []


# --------------------------------------------------------------------------- 17: SIGTERM


SLOW_DISK = textwrap.dedent("""
    import os, sys, time
    from roofline_tui.cli import main
    def slow_fsync(fd):  # a write that takes long enough to be interrupted
        print("writing", file=sys.__stderr__, flush=True)
        time.sleep(60)
    os.fsync = slow_fsync
    sys.exit(main(sys.argv[1:]))
""")


def test_sigterm_during_a_write_leaves_no_temp(demo_copy: Path, tmp_path: Path,
                                               procs: list[subprocess.Popen[bytes]]) -> None:
    r0 = demo_copy / "profile" / "round_0"
    script = tmp_path / "slow.py"
    script.write_text(SLOW_DISK, encoding="utf-8")
    proc = subprocess.Popen([sys.executable, str(script), "analyze", str(r0)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    procs.append(proc)
    assert proc.stderr is not None
    assert proc.stderr.readline().strip() == b"writing"
    assert [p.name for p in r0.iterdir() if p.name.endswith(".tmp")]  # caught mid-write
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == -signal.SIGTERM
    assert no_temps(r0) == []
    assert not (r0 / "profile_roofline.json").exists()


def test_stale_temps_of_ours_are_removed_by_the_next_write(demo_copy: Path) -> None:
    r0 = demo_copy / "profile" / "round_0"
    old = time.time() - 2 * 3600
    stale = [r0 / ".profile_roofline.json.rl-0123abcd.tmp",
             r0 / ".profile_topN.json.k3x9_q2z.tmp"]  # an earlier version's mkstemp name
    fresh = r0 / ".profile_roofline.md.rl-89abcdef.tmp"  # another writer's, in progress
    foreign = r0 / ".someone_elses.json.abcdefgh.tmp"  # not beside a file of that name
    for p in (*stale, fresh, foreign):
        p.write_text("partial")
    for p in (*stale, foreign):
        os.utime(p, (old, old))
    assert roofline("analyze", r0).returncode == 0
    assert not any(p.exists() for p in stale)
    assert fresh.exists() and foreign.exists()


# --------------------------------------------------------------------------- 19: CSV


FORMULAS = ["=1+1", "+cmd", "-2+3+cmd|' /C calc'!A0", "@SUM(A1)", "\tx=1", "\rfoo"]


def test_csv_cells_a_spreadsheet_would_run_are_text(demo_copy: Path) -> None:
    r1 = demo_copy / "profile" / "round_1"
    topn = read(r1 / "profile_topN.json")
    heads = sorted(topn["top_kernels"], key=lambda k: -k["pct_gpu_time"])[:len(FORMULAS)]
    for row, name in zip(heads, FORMULAS):
        row["short_name"] = name
    write(r1 / "profile_topN.json", topn)
    assert roofline("analyze", r1, "--csv", "--max-heads", "8").returncode == 0
    with (r1 / "profile_roofline.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    cells = {row["short_name"] for row in rows}
    # each behind an apostrophe; the tab shown as a space and the CR as \x0d by the sanitiser
    assert {"'=1+1", "'+cmd", "'-2+3+cmd|' /C calc'!A0", "'@SUM(A1)", "' x=1",
            "'\\x0dfoo"} <= cells, cells
    formula_like = [c for row in rows for c in row.values()
                    if c[:1] in ("=", "+", "-", "@", "\t", "\r")]
    assert formula_like == []
    negative = [row["delta_t_pct_vs_prev"] for row in rows
                if row["delta_t_pct_vs_prev"].startswith("'-")]
    assert negative and all(float(v[1:]) < 0 for v in negative)  # OWASP: quoted, still exact


# --------------------------------------------------------------------------- 21: priors


BAD_PRIORS = {
    "range.json": '{"moe": 1.5}',
    "two.yaml": "moe: 0.5\n---\nattn: 0.4\n",
    "bool.yaml": "moe: true\n",
    "huge.yaml": "moe: " + "9" * 5000 + "\n",
    "huge.json": '{"moe": ' + "9" * 5000 + "}",
}


@pytest.mark.parametrize("name", sorted(BAD_PRIORS))
def test_a_bad_priors_file_degrades_to_the_built_in_priors(name: str, demo_copy: Path,
                                                            tmp_path: Path) -> None:
    r0 = demo_copy / "profile" / "round_0"
    bad = tmp_path / name
    bad.write_text(BAD_PRIORS[name], encoding="utf-8")
    done = roofline("analyze", r0, "--max-heads", "1", "--priors", bad)
    assert done.returncode == 0, done.stderr
    art = read(r0 / "profile_roofline.json")
    reasons = [str(e) for e in art["skill_errors"] if name in str(e)]
    assert reasons and "Exceeds the limit" not in reasons[0]
    assert art["entries"][0]["target_eff"] == 0.9  # the spec §7 prior for the MoE
    strict = roofline("analyze", r0, "--max-heads", "1", "--priors", bad, "--strict")
    assert strict.returncode == 1
    good = roofline("analyze", r0, "--max-heads", "1", "--strict")
    assert good.returncode == 0, good.stderr  # the priors file alone made --strict fail


# --------------------------------------------------------------------------- 22: UTF-16


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-8-sig"])
def test_a_utf16_csv_with_a_bom_imports_like_its_utf8_twin(encoding: str, tmp_path: Path) -> None:
    text = NSYS_CSV.read_text(encoding="utf-8")
    data = text.encode(encoding)
    if encoding == "utf-16-be":
        data = b"\xfe\xff" + data
    src = tmp_path / "kern_sum.csv"
    src.write_bytes(data)
    a = roofline("import", "nsys", NSYS_CSV, "--out", tmp_path / "utf8")
    b = roofline("import", "nsys", src, "--out", tmp_path / "bom")
    assert a.returncode == 0 and b.returncode == 0, b.stderr
    assert (read(tmp_path / "bom" / "profile_topN.json")["top_kernels"]
            == read(tmp_path / "utf8" / "profile_topN.json")["top_kernels"])


# --------------------------------------------------------------------------- 7: the exit path


@pytest.mark.parametrize(("argv", "code"), [
    (["schema"], 0), (["analyze", "missing_dir"], 2), (["devices", "--peaks", "nope.md"], 2),
    (["import", "nsys", "nope.csv", "--out", "r"], 1)])
def test_the_program_exits_with_its_exact_status_and_all_its_output(
        argv: Sequence[str], code: int, tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    with out.open("wb") as fh:  # a file: block-buffered, so a missing final flush would show
        done = subprocess.run([*PROGRAM, *argv], stdout=fh, stderr=subprocess.PIPE,
                              cwd=tmp_path, timeout=120)
    assert done.returncode == code, done.stderr
    if code == 0:
        assert json.loads(out.read_text(encoding="utf-8"))["title"]
    else:
        assert done.stderr.decode().count("\n") == 1


def test_the_console_script_runs_atexit_handlers_before_its_fast_exit(tmp_path: Path) -> None:
    marker = tmp_path / "atexit-ran"
    code = (f"import atexit, pathlib; atexit.register(pathlib.Path({str(marker)!r}).touch); "
            "import runpy, sys; sys.argv = ['roofline', 'schema']; "
            "runpy.run_module('roofline_tui', run_name='__main__', alter_sys=True)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["title"] and marker.exists()



def test_a_utf16_env_report_is_read(demo_copy: Path) -> None:
    env = demo_copy / "env_report.json"  # PowerShell: ConvertTo-Json ... > env_report.json
    env.write_bytes(env.read_text(encoding="utf-8").encode("utf-16"))
    r0 = demo_copy / "profile" / "round_0"
    assert roofline("analyze", r0).returncode == 0
    art = read(r0 / "profile_roofline.json")
    assert art["gfx"] == "gfx950" and not [e for e in art["skill_errors"] if "env_report" in e]
