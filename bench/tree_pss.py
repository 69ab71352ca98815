"""Run a command and report the peak PSS of its whole process tree (the command and every
worker it starts), sampled every few milliseconds from ``/proc/<pid>/smaps_rollup``.

    python bench/tree_pss.py COMMAND [ARG ...]

Prints one JSON line, ``{"p50_s": <peak PSS in KiB>, "samples": N}`` (the probe harness reads
``p50_s`` as a run's value; here it is a memory figure, in KiB). PSS, not RSS: pages the
workers share with their parent (the interpreter, the imported modules) are counted once,
split between the processes that map them, so the sum over the tree is what the tree costs.
Linux only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

INTERVAL_S = 0.005


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError):
            continue
    return out


def _tree(root: int) -> list[int]:
    seen, todo = [], [root]
    while todo:
        pid = todo.pop()
        seen.append(pid)
        todo += _children(pid)
    return seen


def _pss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def main(argv: list[str]) -> int:
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL)
    peak = samples = 0
    while proc.poll() is None:
        peak = max(peak, sum(_pss_kib(p) for p in _tree(proc.pid)))
        samples += 1
        time.sleep(INTERVAL_S)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode != 0:
        sys.stderr.write(err[-2000:])
        return proc.returncode
    print(json.dumps({"p50_s": float(peak), "samples": samples}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]) if os.path.isdir("/proc") else 2)
