"""Where the tests find things: the one place that knows the repository's and the fixtures' layout.

Test modules import these names instead of counting ``Path(__file__).parents[N]``, so a test file
can move to another depth of ``tests/`` without its paths breaking.
"""

from __future__ import annotations

from pathlib import Path

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

# The project's shared reference folder, a sibling of the checkout; tests that need it skip
# when it is absent.
SHARED = REPO_ROOT.parent / "shared"
REAL_FORMATS = SHARED / "real-formats"
UPSTREAM_SAMPLES = SHARED / "upstream-samples"
