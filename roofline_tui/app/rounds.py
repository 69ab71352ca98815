"""Which round directories a profile directory holds, and which round a changed file belongs to.

Pure filesystem helpers (no Textual): the dashboard asks them, tests exercise them directly.

Ordering: ``round_<integer>`` directories first, in numeric order (``round_2`` before
``round_10``); named rounds (``round_tuning``) after them, oldest modification time first, name as
the tie-break. A directory that holds a ``profile_topN.json`` itself and no ``round_*``
subdirectories is a single round.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from roofline_tui.core.history import order_round_dirs
from roofline_tui.core.round import ARTIFACT_JSON, ARTIFACT_MD, TOPN_NAME

ROUND_PREFIX = "round_"
# Files we write ourselves (exports) never trigger a recompute; neither do editor/atomic temps.
OWN_OUTPUTS = frozenset({ARTIFACT_JSON, ARTIFACT_MD, "profile_roofline.csv"})
_TEMP_SUFFIXES = (".tmp", ".temp", ".swp", ".swx", ".part", ".partial", "~")
# Inputs a round can read. Extension-less paths are directories (a round appearing or going).
_INPUT_SUFFIXES = frozenset({".json", ".md", ".yaml", ".yml", ".csv", ""})


def order_rounds(dirs: Iterable[Path]) -> list[Path]:
    """The engine's round order (numeric, then named by Top-N mtime), shared with history."""
    return order_round_dirs(dirs)


def is_round_dir(path: Path) -> bool:
    return path.name.startswith(ROUND_PREFIX) and path.is_dir()


def discover_rounds(profile_dir: Path) -> list[Path]:
    """The rounds under ``profile_dir`` (empty when it does not exist or holds none yet)."""
    profile_dir = Path(profile_dir)
    try:
        children = [c for c in profile_dir.iterdir() if c.name.startswith(ROUND_PREFIX)]
    except OSError:
        return []
    rounds = [c for c in children if _is_dir(c)]
    if rounds:
        return order_rounds(rounds)
    if (profile_dir / TOPN_NAME).exists() or profile_dir.name.startswith(ROUND_PREFIX):
        return [profile_dir]
    return []


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:
        return False


def is_relevant_change(path: str | Path, root: Path | None = None) -> bool:
    """True for a change the dashboard should react to.

    Ignored: our own ``profile_roofline.*`` exports, hidden files and directories below ``root``
    (the atomic writer's ``.name.XXXX.tmp``, ``.git``), editor and partial-download temps,
    unrelated file types.
    """
    p = Path(path)
    if p.name in OWN_OUTPUTS:
        return False
    parts = p.parts
    if root is not None:
        try:
            parts = Path(os.path.abspath(p)).relative_to(os.path.abspath(root)).parts
        except ValueError:
            parts = (p.name,)
    if any(part.startswith(".") for part in parts if part not in (".", "..")):
        return False
    if p.name.endswith(_TEMP_SUFFIXES) or p.name.startswith("#"):
        return False
    return p.suffix.lower() in _INPUT_SUFFIXES


def round_of(changed: Path, rounds: Iterable[Path]) -> Path | None:
    """The round whose tree holds ``changed`` (None: a shared input or something else).

    Symlinks are resolved on both sides: the watcher may report a change through any alias of a
    directory (``round_1/up/profile/round_2/profile_topN.json`` when ``round_1/up`` links to the
    profile's parent), and the change belongs to the round the file really lives in.
    """
    changed = Path(os.path.realpath(changed))
    best: Path | None = None
    best_len = -1
    for r in rounds:
        root = Path(os.path.realpath(r))
        if changed == root or root in changed.parents:
            if len(root.parts) > best_len:
                best, best_len = r, len(root.parts)
    return best


def round_name(round_dir: Path) -> str:
    return round_dir.name or str(round_dir)
