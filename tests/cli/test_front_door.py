"""The one front door: the command table, what building the parser imports, the help text."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from roofline_tui.cli import COMMANDS, build_parser, main
from tests.paths import REPO_ROOT

from .helpers import roofline


def _subcommands(parser) -> dict:
    return parser._subparsers._group_actions[0].choices


def test_the_table_lists_every_command_once_in_help_order() -> None:
    names = [name for name, _ in COMMANDS]
    assert names == ["analyze", "schema", "dash", "demo", "import", "ingest", "rounds", "diff",
                     "playbook", "calibrate", "devices"]
    assert list(_subcommands(build_parser())) == names
    help_text = roofline("--help").stdout
    for name in names:
        assert f"    {name}" in help_text


def test_console_script_and_module_entry_points() -> None:
    (ep,) = [e for e in entry_points(group="console_scripts") if e.name == "roofline"]
    assert ep.value == "roofline_tui.cli:main"
    version = roofline("--version")
    assert version.returncode == 0 and "roofline_tui" in version.stdout
    assert roofline().returncode == 2  # no command: help on stderr, a usage error


def test_a_command_named_first_gets_its_own_parser_only(capsys) -> None:
    """``roofline NAME ...`` builds only NAME's parser: its help is the one the whole table
    gives; a misspelt command still lists every command."""
    whole = _subcommands(build_parser())
    for name, _ in COMMANDS:
        alone = _subcommands(build_parser(name))
        assert list(alone) == [name]
        assert alone[name].format_help() == whole[name].format_help()
    wrong = roofline("analyz", "x")
    assert wrong.returncode == 2
    assert "invalid choice: 'analyz'" in wrong.stderr
    assert all(f"'{name}'" in wrong.stderr for name, _ in COMMANDS)
    bad = roofline("analyze", "--max-heads", "0", "x")
    assert bad.returncode == 2 and bad.stderr.startswith("usage: roofline analyze")


@pytest.mark.parametrize("argv", [["analyze", "--help"], ["rounds", "--help"],
                                  ["playbook", "--help"], ["dash", "--help"],
                                  ["import", "torch", "--help"], ["schema", "--help"]])
def test_every_command_has_help(argv: list[str], capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 0
    assert "usage: roofline" in capsys.readouterr().out


def test_commands_that_read_rounds_share_the_source_and_analysis_arguments() -> None:
    parser = build_parser()
    shared = {"--env", "--model-config", "--peaks", "--device", "--shapes", "--counters"}
    analysis = {"--head-threshold", "--max-heads", "--priors"}
    for name in ("analyze", "rounds", "playbook", "dash"):
        flags = {s for a in _subcommands(parser)[name]._actions for s in a.option_strings}
        assert shared <= flags, name
        if name != "dash":  # the dashboard analyses with the defaults
            assert analysis <= flags, name
    args = parser.parse_args(["rounds", "p", "--shapes", "k", "--counters", "a.csv", "b.db",
                              "--max-heads", "3"])
    assert args.shapes == Path("k") and args.counters == [Path("a.csv"), Path("b.db")]
    assert args.max_heads == 3


def test_help_states_the_engines_defaults() -> None:
    """The parser does not import the engine to state its defaults; they must still agree. The
    analysis defaults are one value: the leaf core.defaults, read by the parser and the engine."""
    from roofline_tui.cli import imports, rounds
    from roofline_tui.core import analyze, defaults
    from roofline_tui.core.rounds.playbook import DEFAULT_PLAYBOOK
    from roofline_tui.importers.common import DEFAULT_TOP

    options = analyze.AnalyzeOptions()
    assert options.head_threshold_pct == defaults.DEFAULT_HEAD_THRESHOLD_PCT
    assert options.max_heads == defaults.DEFAULT_MAX_HEADS
    flags = {s: a.help for a in _subcommands(build_parser())["analyze"]._actions
             for s in a.option_strings}
    shown = f"(default {defaults.DEFAULT_HEAD_THRESHOLD_PCT:g})"  # "(default 5)", not 5.0
    assert flags["--head-threshold"].endswith(shown)
    assert flags["--max-heads"].endswith(f"(default {defaults.DEFAULT_MAX_HEADS})")
    assert int(imports.DEFAULT_TOP_HELP) == DEFAULT_TOP
    assert rounds.DEFAULT_PLAYBOOK == DEFAULT_PLAYBOOK


def _modules_after(code: str) -> set[str]:
    probe = code + "\nimport sys\nprint(' '.join(sorted(sys.modules)))\n"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=REPO_ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return set(proc.stdout.split())


HEAVY = ("textual", "rich", "matplotlib", "plotext", "watchfiles", "yaml", "pydantic",
         "roofline_tui.importers", "roofline_tui.core.rounds", "roofline_tui.core.analyze",
         "roofline_tui.app")


def test_building_the_parser_imports_nothing_heavy() -> None:
    loaded = _modules_after("from roofline_tui.cli import build_parser; build_parser()")
    assert not [m for m in loaded if m.startswith(HEAVY)]
    assert "roofline_tui.core.defaults" in loaded  # the help states the engine's own values


def test_the_analysis_defaults_are_a_leaf() -> None:
    """core.defaults imports nothing (the parser imports it to build its help)."""
    import ast

    tree = ast.parse((REPO_ROOT / "roofline_tui" / "core" / "defaults.py").read_text())
    assert not [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]


def test_analyze_json_imports_no_rich_importers_playbook_or_textual(demo_profile: Path) -> None:
    code = ("import contextlib, io\nfrom roofline_tui.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()), "
            "contextlib.redirect_stderr(io.StringIO()):\n"
            f"    assert main(['analyze', {str(demo_profile / 'round_0')!r}, '--json']) == 0\n")
    loaded = _modules_after(code)
    assert not [m for m in loaded if m.startswith(
        ("textual", "rich", "matplotlib", "plotext", "watchfiles", "roofline_tui.importers",
         "roofline_tui.core.rounds.playbook", "roofline_tui.app",
         # a round without counter files never loads the counter readers
         "roofline_tui.core.measured.amd", "roofline_tui.core.measured.ncu",
         "roofline_tui.core.measured.roofline_v1", "sqlite3"))]
    # the human table does use rich, and nothing else it did not use before
    loaded = _modules_after(code.replace(", '--json'", ""))
    assert "rich" in loaded and "roofline_tui.importers" not in loaded


def test_analyze_with_priors_imports_the_priors_reader(demo_profile: Path, tmp_path: Path) -> None:
    priors = tmp_path / "priors.json"
    priors.write_text('{"schema": "roofline-priors-v1", "target_eff": {"moe": 0.7}}')
    proc = roofline("analyze", demo_profile / "round_0", "--json", "--priors", priors)
    assert proc.returncode == 0, proc.stderr
    assert '"target_eff_source"' in proc.stdout and "priors.json" in proc.stdout
