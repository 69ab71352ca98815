"""``roofline dash PROFILE_DIR`` and ``roofline demo``.

Textual is imported inside the command functions only, so ``roofline analyze`` (which builds the
same parser) never pays for it.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from importlib import resources
from pathlib import Path

from roofline_tui.commands.analyze import add_round_arguments, sources_from_args
from roofline_tui.core.rounds.layout import ARTIFACT_JSON, ARTIFACT_MD
from roofline_tui.core.textsafe import printable

DEMO_PROFILE = "profile"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "dash",
        help="live dashboard over a profile directory (rounds recomputed as files change)",
        description=(
            "Watch PROFILE_DIR (a directory of round_* directories, or a single round directory) "
            "and show, for the shown round, both rankings (by GPU time and by expected gain) "
            "with a drill-down per kernel. Changed inputs are recomputed live. Keys: e export, "
            "r recompute, / filter, [ ] rounds, ? help, q quit. A PROFILE_DIR that does not "
            "exist yet is waited for."
        ),
    )
    add_round_arguments(p)
    p.set_defaults(func=run_dash)
    d = sub.add_parser(
        "demo",
        help="the dashboard on a bundled demo profile, copied into a temporary directory",
        description=(
            "Copy the bundled demo (three rounds modelled on the spec's §9 example; the %GPU "
            "shares differ from §9's) into a temporary "
            "directory and open the dashboard on it. Edit the files there to see live "
            "recompute; the directory is kept and its path printed on exit."
        ),
    )
    d.set_defaults(func=run_demo)


def _check_files(args: argparse.Namespace) -> str | None:
    for flag, path in (("--env", args.env), ("--model-config", args.model_config),
                       ("--peaks", args.peaks)):
        if path is not None and not path.is_file():
            return f"{flag} {printable(str(path))}: no such file"
    return None


def run_dash(args: argparse.Namespace) -> int:
    problem = _check_files(args)
    if problem:
        print(f"roofline dash: error: {problem}", file=sys.stderr)
        return 2
    from roofline_tui.app.app import RooflineApp

    app = RooflineApp(args.round_dir, sources_from_args(args))
    app.run()
    return 0


def copy_demo(dest_root: Path) -> Path:
    """Copy the bundled demo into ``dest_root``; returns its profile directory."""
    src = resources.files("roofline_tui") / "demo"
    with resources.as_file(src) as src_path:
        shutil.copytree(src_path, dest_root, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns(ARTIFACT_JSON, ARTIFACT_MD, ".*",
                                                      "__pycache__"))
    return dest_root / DEMO_PROFILE


def run_demo(args: argparse.Namespace) -> int:
    root = Path(tempfile.mkdtemp(prefix="roofline-demo-"))
    profile = copy_demo(root)
    from roofline_tui.app.app import RooflineApp

    app = RooflineApp(profile, watch_root=root, display_name=str(profile), demo=True)
    try:
        app.run()
    finally:
        print(f"roofline demo: the demo profile is in {profile}")
    return 0
