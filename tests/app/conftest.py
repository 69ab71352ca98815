"""Fixtures for the dashboard tests: a fresh copy of the bundled demo profile per test."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofline_tui.cli.dash import copy_demo


@pytest.fixture
def demo_root(tmp_path: Path) -> Path:
    root = tmp_path / "demo"
    copy_demo(root)
    return root


@pytest.fixture
def profile(demo_root: Path) -> Path:
    return demo_root / "profile"
