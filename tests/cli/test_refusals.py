"""What the command line refuses, and what it never does (issue 16's CLI surfaces).

Each case ran against the old front door and failed there: a FIFO argument blocked forever
(the subprocess timeout fails the test), ``--head-threshold nan`` analysed nothing and exited
0, a stored artifact the reader rejects was replaced by an empty one, Rich markup in a round
name was applied (or crashed the table), and ``wrote <path>`` printed escape bytes raw.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from .helpers import one_line, roofline

# --------------------------------------------------------------------------- path arguments


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.json"
    os.mkfifo(path)
    return path


@pytest.fixture
def loop(tmp_path: Path) -> Path:
    path = tmp_path / "loop.json"
    path.symlink_to(path)
    return path


def _cases(demo: Path, odd: Path) -> list[list[str | Path]]:
    r0 = demo / "round_0"
    return [
        ["analyze", r0, "--counters", odd],
        ["analyze", r0, "--priors", odd],
        ["analyze", r0, "--env", odd],
        ["analyze", r0, "--model-config", odd],
        ["analyze", r0, "--peaks", odd],
        ["analyze", r0, "--shapes", odd],
        ["analyze", odd],
        ["rounds", demo, "--counters", odd],
        ["rounds", demo, "--priors", odd],
        ["playbook", demo, "--out", odd],
        ["playbook", demo, "--priors-out", odd],
        ["dash", odd],
        ["import", "torch", odd, "--out", demo.parent / "new_round"],
        ["import", "nsys", odd, "--out", demo.parent / "new_round"],
        ["import", "rocprofv3", odd, "--out", demo.parent / "new_round"],
        ["import", "torch", demo.parent / "config.json", "--out", odd],
    ]


@pytest.mark.parametrize("which", range(16))
def test_a_fifo_is_refused_before_it_is_opened(demo_profile: Path, fifo: Path,
                                               which: int) -> None:
    argv = _cases(demo_profile, fifo)[which]
    proc = roofline(*argv, timeout=30)  # the old CLI blocked here on open()
    assert proc.returncode == 2, proc.stderr
    line = one_line(proc)
    assert "pipe.json" in line and ("FIFO" in line or "directory" in line)
    assert not (demo_profile / "round_0" / "profile_roofline.json").exists()
    assert not (demo_profile.parent / "new_round").exists()


@pytest.mark.parametrize("which", [0, 1, 9])
def test_a_device_and_a_symlink_loop_are_refused(demo_profile: Path, loop: Path,
                                                 which: int) -> None:
    device = roofline(*_cases(demo_profile, Path("/dev/zero"))[which], timeout=30)
    assert device.returncode == 2 and "a device" in one_line(device)
    looped = roofline(*_cases(demo_profile, loop)[which], timeout=30)
    assert looped.returncode == 2 and "symlink loop" in one_line(looped)


def test_a_directory_where_a_file_is_meant(demo_profile: Path) -> None:
    proc = roofline("analyze", demo_profile / "round_0", "--counters", demo_profile)
    assert proc.returncode == 2
    assert "is a directory, expected a regular file" in one_line(proc)


def test_missing_counter_file_is_a_usage_error(demo_profile: Path) -> None:
    proc = roofline("analyze", demo_profile / "round_0", "--counters", demo_profile / "nope.csv")
    assert proc.returncode == 2 and "no such file" in one_line(proc)


def test_outputs_that_do_not_exist_yet_are_fine(demo_profile: Path, tmp_path: Path) -> None:
    out = tmp_path / "new" / "book.md"
    proc = roofline("playbook", demo_profile, "--out", out, "--dry-run")
    assert proc.returncode == 0, proc.stderr


# --------------------------------------------------------------------------- number arguments


@pytest.mark.parametrize(("flag", "value"), [
    ("--head-threshold", "nan"), ("--head-threshold", "inf"), ("--head-threshold", "-inf"),
    ("--head-threshold", "-1"), ("--head-threshold", "101"), ("--head-threshold", "lots"),
    ("--max-heads", "0"), ("--max-heads", "-3"), ("--max-heads", "2.5"), ("--max-heads", "1e3"),
])
def test_head_selection_nonsense_is_a_usage_error(demo_profile: Path, flag: str,
                                                  value: str) -> None:
    for cmd, target in (("analyze", demo_profile / "round_0"), ("rounds", demo_profile)):
        proc = roofline(cmd, target, f"{flag}={value}", "--strict" if cmd == "analyze" else "")
        assert proc.returncode == 2, (cmd, proc.stderr)
        assert "Traceback" not in proc.stderr and flag in proc.stderr
    assert not (demo_profile / "round_0" / "profile_roofline.json").exists()


def test_head_selection_at_its_bounds_is_accepted(demo_profile: Path) -> None:
    proc = roofline("analyze", demo_profile / "round_0", "--head-threshold", "100",
                    "--max-heads", "1", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["entries"] == []


# --------------------------------------------------------------------------- the stored artifact

STORED = {
    "nan": '{"skill": "roofline", "stage": "A", "entries": [{"name": "k", "short_name": "k", '
           '"pct_gpu_time": NaN}]}',
    "infinity": '{"skill": "roofline", "stage": "A", "entries": [{"name": "k", '
                '"short_name": "k", "pct_gpu_time": Infinity}]}',
    "no_name": '{"skill": "roofline", "stage": "A", "entries": [{"short_name": "k", '
               '"pct_gpu_time": 12.5}]}',
    "not_json": "{ this was a profile_roofline.json",
}


@pytest.mark.parametrize("kind", sorted(STORED))
def test_a_stored_artifact_is_never_overwritten_without_a_topn(tmp_path: Path,
                                                               kind: str) -> None:
    round_dir = tmp_path / "profile" / "round_0"
    round_dir.mkdir(parents=True)
    stored = round_dir / "profile_roofline.json"
    stored.write_text(STORED[kind])
    proc = roofline("analyze", round_dir)
    assert proc.returncode == 0
    line = one_line(proc)
    assert "no profile_topN.json" in line and "left it as it is" in line
    assert stored.read_text() == STORED[kind]
    assert not (round_dir / "profile_roofline.md").exists()
    strict = roofline("analyze", round_dir, "--strict", "--json")
    assert strict.returncode == 1 and strict.stdout == ""
    assert stored.read_text() == STORED[kind]


def test_a_round_without_topn_or_artifact_still_gets_an_empty_artifact(tmp_path: Path) -> None:
    round_dir = tmp_path / "round_0"
    round_dir.mkdir()
    proc = roofline("analyze", round_dir, "--strict")
    assert proc.returncode == 1 and "wrote an empty artifact" in proc.stderr
    assert json.loads((round_dir / "profile_roofline.json").read_text())["entries"] == []


# --------------------------------------------------------------------------- markup and escapes

MARKUP_LABEL = "round_[bold red]x"
ESCAPE_LABEL = "round_[link=file:x]z\x1b]2;t\x07"
HOSTILE_STAGE = "[i]B\x1b]2;t\x07"


def test_rounds_prints_labels_and_stages_literally(demo_profile: Path) -> None:
    assert roofline("analyze", demo_profile / "round_0").returncode == 0
    stored = json.loads((demo_profile / "round_0" / "profile_roofline.json").read_text())
    shutil.copytree(demo_profile / "round_1", demo_profile / MARKUP_LABEL)
    shutil.copytree(demo_profile / "round_2", demo_profile / ESCAPE_LABEL)
    # a round holding only a stored artifact whose stage is hostile: refused by the typed
    # reader (stage is a closed set), so it is skipped with a note, never printed raw
    (demo_profile / "round_s").mkdir()
    (demo_profile / "round_s" / "profile_roofline.json").write_text(
        json.dumps(dict(stored, stage=HOSTILE_STAGE)))
    argvs: list[list[str | Path]] = [
        ["rounds", demo_profile], ["rounds", demo_profile, "--kernel", "fused_moe_kernel"]]
    for argv in argvs:
        proc = roofline(*argv)
        assert proc.returncode == 0, proc.stderr
        out = proc.stdout
        assert "Traceback" not in proc.stderr
        assert "[bold red]x" in out  # shown, not applied
        assert "[link=file:x]z\\x1b]2;t\\x07" in out
        assert "\x1b" not in out + proc.stderr and "\x07" not in out + proc.stderr
    assert "round_s" in roofline("rounds", demo_profile).stdout  # the skipped round's note


def test_wrote_lines_show_the_path_escaped(demo_profile: Path, tmp_path: Path) -> None:
    evil = tmp_path / "pwn\x1b]0;title\x07\x9b2J\u202egpj.exe"
    shutil.copytree(demo_profile.parent, evil)
    proc = roofline("analyze", evil / "profile" / "round_0")
    assert proc.returncode == 0, proc.stderr
    wrote = [line for line in proc.stdout.splitlines() if line.startswith("wrote ")]
    assert len(wrote) == 1
    for raw in ("\x1b", "\x07", "\x9b", "\u202e"):
        assert raw not in proc.stdout and raw not in proc.stderr
    assert "pwn\\x1b]0;title\\x07\\x9b2J\\u202egpj.exe" in wrote[0]
    out = tmp_path / "imp\x1b[2J"
    from roofline_tui.importers.synth import SynthSpec, write_trace

    trace = write_trace(tmp_path / "t.json", SynthSpec())
    imp = roofline("import", "torch", trace, "--out", out)
    assert imp.returncode == 0, imp.stderr
    assert "\x1b" not in imp.stdout and "imp\\x1b[2J" in imp.stdout


# --------------------------------------------------------------------------- non-UTF-8 names


def test_a_round_directory_named_with_a_non_utf8_byte(demo_profile: Path) -> None:
    """``round_\\xff``: its label is written ``\\xff`` (valid Unicode) in the artifact, the
    pair ids, the JSON and on the terminal; before, every command here raised
    UnicodeEncodeError (the label was hashed and written holding a lone surrogate)."""
    odd = Path(os.fsdecode(os.fsencode(demo_profile) + b"/round_\xff"))
    (demo_profile / "round_2").rename(odd)
    sibling = roofline("analyze", demo_profile / "round_0")
    assert sibling.returncode == 0 and "UnicodeEncodeError" not in sibling.stderr
    art = json.loads((demo_profile / "round_0" / "profile_roofline.json").read_text())
    assert "round-over-round" not in json.dumps(art["skill_errors"])

    own = roofline("analyze", odd, "--strict", "--json")
    assert "Traceback" not in own.stderr and "UnicodeEncodeError" not in own.stderr
    assert json.loads(own.stdout)["round"] == "\\xff"
    table = roofline("analyze", odd)
    assert table.returncode == 0 and "round_\\xff/profile_roofline.json" in table.stdout

    rounds = roofline("rounds", demo_profile, "--json")
    assert rounds.returncode == 0, rounds.stderr
    assert "\\xff" in [r["label"] for r in json.loads(rounds.stdout)["rounds"]]
    shown = roofline("rounds", demo_profile)
    assert shown.returncode == 0 and "\\xff" in shown.stdout, shown.stderr
    book = roofline("playbook", demo_profile, "--dry-run")
    assert book.returncode == 0 and "Traceback" not in book.stderr, book.stderr
