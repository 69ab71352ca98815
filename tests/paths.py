"""Where the tests find things: the one place that knows the repository's and the fixtures' layout.

Test modules import these names instead of counting ``Path(__file__).parents[N]``, so a test file
can move to another depth of ``tests/`` without its paths breaking.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
REPO_ROOT = TESTS.parent
PACKAGE = REPO_ROOT / "roofline_tui"
DEMO = PACKAGE / "demo"  # the bundled three-round demo (roofline_tui/demo)

FIXTURES = TESTS / "fixtures"
WORKED_EXAMPLE = FIXTURES / "worked_example"  # spec §9, EVAL_DIR layout
WILD_FIXTURES = FIXTURES / "wild"  # trimmed real profiler files (README.md there)
MEASURED_FIXTURES = FIXTURES / "measured"  # stage B/C inputs: task dirs, counter files
ROUNDS_FIXTURES = FIXTURES / "rounds"  # playbook priors
CHART_FIXTURES = FIXTURES / "chart"  # a frozen demo artifact for the chart snapshot

# The project's shared reference folder: a sibling of the checkout, or where ROOFLINE_TUI_SHARED
# points. Tests that read it are marked ``needs_shared`` (or call ``need``) and skip without it.
SHARED = Path(os.environ.get("ROOFLINE_TUI_SHARED") or REPO_ROOT.parent / "shared")
REAL_FORMATS = SHARED / "real-formats"
UPSTREAM_SAMPLES = SHARED / "upstream-samples"

needs_shared = pytest.mark.skipif(not SHARED.is_dir(),
                                  reason=f"the shared reference folder {SHARED} is not present")


def need(path: Path) -> Path:
    """``path``, or skip the test when that real sample is not present."""
    if not path.exists():
        pytest.skip(f"real sample {path} not present")
    return path
