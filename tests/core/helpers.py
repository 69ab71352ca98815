from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from roofline_tui.core.analyze import AnalyzeOptions
from roofline_tui.core.artifact import Artifact, Entry
from roofline_tui.core.rounds.analysis import RoundSources, analyze_round


def run(round_dir: Path, sources: RoundSources | None = None, **opts: Any) -> Artifact:
    return analyze_round(round_dir, sources, AnalyzeOptions(**opts)).artifact


def entry(artifact: Artifact, short: str) -> Entry:
    e = artifact.entry(short)
    assert e is not None, f"{short} not in {[x.short_name for x in artifact.entries]}"
    return e


def edit_topn(round_dir: Path, fn) -> None:
    path = round_dir / "profile_topN.json"
    data = json.loads(path.read_text())
    fn(data)
    path.write_text(json.dumps(data))


def kernel(data: dict, name: str) -> dict:
    return next(k for k in data["top_kernels"] if k["name"] == name)
