"""Shared fixtures: copies of the bundled rounds in a temp dir, never the originals."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.paths import DEMO, WORKED_EXAMPLE


@pytest.fixture
def worked_example(tmp_path: Path) -> Path:
    """The spec §9 worked example (EVAL_DIR layout); returns the round_0 directory."""
    dst = tmp_path / "eval"
    shutil.copytree(WORKED_EXAMPLE, dst)
    return dst / "profile" / "round_0"


@pytest.fixture
def demo_profile(tmp_path: Path) -> Path:
    """A copy of the bundled three-round demo; returns its profile/ directory."""
    dst = tmp_path / "demo"
    shutil.copytree(DEMO, dst, ignore=shutil.ignore_patterns("profile_roofline.*"))
    return dst / "profile"
