"""The dashboard imports its modules with the cyclic collector off (issue 26): the collector must
be on again once they are imported, or a long session's cyclic garbage would never be freed."""

from __future__ import annotations

import subprocess
import sys

from tests.paths import REPO_ROOT


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO_ROOT, timeout=120)


def test_the_collector_is_on_after_the_dashboard_is_imported() -> None:
    proc = _run("import gc\nimport roofline_tui.app.app\n"
                "class Cycle:\n    pass\n"
                "a = Cycle(); a.me = a; del a\n"
                "print(gc.isenabled(), gc.collect() >= 1, gc.get_freeze_count() > 0)")
    assert proc.returncode == 0, proc.stderr
    # on, still collecting new cycles, and what the import built is frozen out of its passes
    assert proc.stdout.split() == ["True", "True", "True"]


def test_a_collector_turned_off_by_the_caller_stays_off() -> None:
    proc = _run("import gc\ngc.disable()\nimport roofline_tui.app.app\nprint(gc.isenabled())")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False"]


def test_an_in_process_diff_leaves_the_collector_as_it_was() -> None:
    """A program's ``roofline diff`` keeps the collector off to its exit (two analysed rounds
    held at once, nearly nothing in a cycle); a caller running the CLI in its own process
    gets the collector back on, nothing of its own frozen."""
    rounds = REPO_ROOT / "roofline_tui" / "demo" / "profile"
    proc = _run("import contextlib, gc, io\nfrom roofline_tui.cli import main\n"
                "frozen = gc.get_freeze_count()\n"
                "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
                f"    code = main(['diff', {str(rounds / 'round_0')!r}, "
                f"{str(rounds / 'round_2')!r}])\n"
                "print(code, gc.isenabled(), gc.get_freeze_count() == frozen, "
                "'(A) vs' in out.getvalue())")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["0", "True", "True", "True"]
