"""``roofline dash`` and ``roofline demo`` from the command line (the app's run() stubbed)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from roofline_tui.app import app as app_module
from roofline_tui.cli import build_parser, main


@pytest.fixture
def launched(monkeypatch: pytest.MonkeyPatch) -> list[app_module.RooflineApp]:
    apps: list[app_module.RooflineApp] = []
    monkeypatch.setattr(app_module.RooflineApp, "run", lambda self, *a, **k: apps.append(self))
    # no terminal under pytest: the check that refuses to start without one passes here
    monkeypatch.setattr("roofline_tui.cli.dash.terminal_problem", lambda: None)
    return apps


def test_dash_and_demo_are_registered() -> None:
    parser = build_parser()
    args = parser.parse_args(["dash", "prof", "--device", "H200", "--peaks", "p.md"])
    assert args.round_dir == Path("prof") and args.device == "H200" and args.peaks == Path("p.md")
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert "PROFILE_DIR" in commands.choices["dash"].format_usage()
    assert parser.parse_args(["demo"]).func.__name__ == "run_demo"


def test_dash_runs_on_a_directory_that_does_not_exist_yet(tmp_path: Path, launched) -> None:
    assert main(["dash", str(tmp_path / "not-yet"), "--device", "MI355X"]) == 0
    (app,) = launched
    assert app.profile_dir == tmp_path / "not-yet" and app.sources.device == "MI355X"


def test_dash_refuses_a_missing_explicit_input_file(tmp_path: Path, launched, capsys) -> None:
    assert main(["dash", str(tmp_path), "--env", str(tmp_path / "nope.json")]) == 2
    assert "--env" in capsys.readouterr().err and not launched


def test_demo_copies_the_bundled_profile_and_prints_where(launched, capsys) -> None:
    assert main(["demo"]) == 0
    (app,) = launched
    profile = app.profile_dir
    try:
        assert sorted(p.name for p in profile.iterdir()) == ["round_0", "round_1", "round_2"]
        assert (app.watch_root / "env_report.json").is_file()
        assert not list(profile.rglob("profile_roofline.*"))
        assert app.display_name == str(profile) and app.demo
        assert str(profile) in capsys.readouterr().out
    finally:
        import shutil

        shutil.rmtree(app.watch_root)


class _DiesOnTheTty:
    """An App whose run fails the way Textual's driver does on a hung-up tty."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def run(self) -> None:
        raise self.exc


@pytest.mark.parametrize("exc", [OSError(5, "Input/output error"),
                                 __import__("termios").error(5, "Input/output error")])
def test_a_tty_error_once_the_terminal_is_gone_ends_like_q(
        monkeypatch: pytest.MonkeyPatch, exc: BaseException) -> None:
    """Issue 36 item 11: a terminal closed while Textual starts application mode made its tty
    calls fail (EIO) out of ``app.run``, and the dashboard ended with a traceback nobody could
    read and exit 1. With the terminal gone it ends as ``q`` does; with the terminal still
    there the same error is a real one and is raised."""
    from roofline_tui.cli import dash

    monkeypatch.setattr(dash, "_terminal_present", lambda: False)
    dash.launch(_DiesOnTheTty(exc))  # type: ignore[arg-type]
    monkeypatch.setattr(dash, "_terminal_present", lambda: True)
    with pytest.raises(type(exc)):
        dash.launch(_DiesOnTheTty(exc))  # type: ignore[arg-type]
    with pytest.raises(ValueError):  # any other error is never swallowed
        monkeypatch.setattr(dash, "_terminal_present", lambda: False)
        dash.launch(_DiesOnTheTty(ValueError("a bug")))  # type: ignore[arg-type]
