"""Run ``roofline`` as a user would: a subprocess, with a timeout (a hang fails the test)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def roofline(*args: str | Path, cwd: Path | None = None, timeout: float = 60,
             env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = dict(os.environ, COLUMNS="200", **(env or {}))
    return subprocess.run([sys.executable, "-m", "roofline_tui", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          env=full_env, errors="backslashreplace")


def one_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The single non-empty stderr line of a refused command (no traceback, no usage block)."""
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert "Traceback" not in proc.stderr, proc.stderr
    assert len(lines) == 1, proc.stderr
    return lines[0]
