"""Safe output (issue 8): atomic artifacts, untouched inputs, clear errors when writing fails."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path

import pytest

from roofline_tui.cli import main as cli_main
from roofline_tui.core import store
from roofline_tui.core.rounds.analysis import analyze_round, write_artifact


def _digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_reader_never_sees_a_partial_artifact(worked_example: Path) -> None:
    art = analyze_round(worked_example).artifact
    write_artifact(art, worked_example)
    target = worked_example / "profile_roofline.json"
    stop = threading.Event()
    bad: list[str] = []
    reads = 0

    def reader() -> None:
        nonlocal reads
        while not stop.is_set():
            try:
                text = target.read_text()
            except FileNotFoundError:
                bad.append("missing")
                continue
            reads += 1
            try:
                json.loads(text)
            except ValueError:
                bad.append(text[-40:])

    t = threading.Thread(target=reader)
    t.start()
    try:
        for _ in range(1000):
            write_artifact(art, worked_example)
    finally:
        stop.set()
        t.join()
    assert reads > 0
    assert bad == []
    assert not list(worked_example.glob(".*.tmp"))


def test_inputs_are_never_written(worked_example: Path) -> None:
    eval_dir = worked_example.parent.parent
    before = _digest(eval_dir)
    assert cli_main(["analyze", str(worked_example)]) == 0
    after = _digest(eval_dir)
    new = set(after) - set(before)
    assert new == {"profile/round_0/profile_roofline.json", "profile/round_0/profile_roofline.md"}
    assert all(after[k] == v for k, v in before.items())


def test_unwritable_directory_gives_one_clear_line(worked_example: Path, monkeypatch,
                                                   capsys) -> None:
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(store, "_new_temp", refuse)
    assert cli_main(["analyze", str(worked_example)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot write the artifact" in err[0]
    assert "Permission denied" in err[0]
    assert not (worked_example / "profile_roofline.json").exists()


def test_failed_write_leaves_the_previous_artifact(worked_example: Path, monkeypatch) -> None:
    art = analyze_round(worked_example).artifact
    write_artifact(art, worked_example)
    good = (worked_example / "profile_roofline.json").read_bytes()

    def crash(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", crash)  # store calls os.replace
    with pytest.raises(OSError):
        write_artifact(art, worked_example)
    assert (worked_example / "profile_roofline.json").read_bytes() == good
    assert not [p for p in os.listdir(worked_example) if p.endswith(".tmp")]
