"""``roofline dash PROFILE_DIR`` and ``roofline demo``: the Textual dashboard.

Textual is imported inside the two command functions only: no other command pays for it.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from importlib import resources
from pathlib import Path

from roofline_tui.cli.args import (
    add_analysis_arguments,
    add_path,
    add_source_arguments,
    options_from_args,
    shown,
    sources_from_args,
)

DEMO_PROFILE = "profile"


def register_dash(sub: argparse._SubParsersAction) -> None:
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
    add_path(p, "round_dir", need="new-dir", metavar="PROFILE_DIR")
    add_source_arguments(p)
    add_analysis_arguments(p)  # the same settings as analyze: `e` writes what they compute
    p.set_defaults(func=run_dash)


def register_demo(sub: argparse._SubParsersAction) -> None:
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
    add_analysis_arguments(d)
    d.set_defaults(func=run_demo)


def run_dash(args: argparse.Namespace) -> int:
    # Textual: only for the dashboard
    from roofline_tui.app.app import RooflineApp

    options, code = options_from_args("dash", args)
    if options is None:
        return code
    app = RooflineApp(args.round_dir, sources_from_args(args), options=options)
    app.run()
    return 0


def copy_demo(dest_root: Path) -> Path:
    """Copy the bundled demo into ``dest_root``; returns its profile directory. Artifacts a
    previous run wrote into the bundled tree, hidden files and caches are left out."""
    from roofline_tui.core.rounds.layout import ARTIFACT_JSON, ARTIFACT_MD  # the demo only

    src = resources.files("roofline_tui") / "demo"
    with resources.as_file(src) as src_path:
        shutil.copytree(src_path, dest_root, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns(ARTIFACT_JSON, ARTIFACT_MD, ".*",
                                                      "__pycache__"))
    return dest_root / DEMO_PROFILE


def run_demo(args: argparse.Namespace) -> int:
    options, code = options_from_args("demo", args)
    if options is None:  # refused before the temporary copy is made
        return code
    root = Path(tempfile.mkdtemp(prefix="roofline-demo-"))
    profile = copy_demo(root)
    # Textual: only for the dashboard
    from roofline_tui.app.app import RooflineApp

    app = RooflineApp(profile, watch_root=root, display_name=str(profile), demo=True,
                      options=options)
    try:
        app.run()
    finally:
        print(f"roofline demo: the demo profile is in {shown(profile)}", file=sys.stdout)
    return 0
