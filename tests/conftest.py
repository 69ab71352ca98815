"""Shared fixtures: copies of the bundled rounds in a temp dir, never the originals."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.paths import DEMO, WORKED_EXAMPLE


@pytest.fixture(scope="session")
def _empty_hf_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("empty-hf-cache")


@pytest.fixture(autouse=True)
def _no_local_hf_cache(_empty_hf_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test (and the commands it runs) sees an empty Hugging Face cache unless it sets
    its own: an import without --model looks the model up in the local cache, and what this
    machine happens to hold must not decide a test."""
    monkeypatch.setenv("HF_HUB_CACHE", str(_empty_hf_cache))


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
