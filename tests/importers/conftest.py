from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import REAL_FORMATS, REPO_ROOT, need  # noqa: F401 - need: for the tests here

REAL = REAL_FORMATS
REPO = REPO_ROOT


def run_cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "roofline_tui", "import", *map(str, args)],
                          capture_output=True, text=True, cwd=REPO, timeout=120)


@pytest.fixture
def cli():
    return run_cli


