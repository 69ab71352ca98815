"""What every benchmark shares: trees under test, probes (one child process each), figures.

A *probe* is one command run in a fresh child process, many times. Each run gives a value: the
child's wall time (start to exit, taken here), a time the child reports (the first paint, as
``time.monotonic()``, the same system-wide clock the parent started it by), or a p50 the child
computes; plus the child's peak RSS from ``os.wait4``. A probe's figure is the *minimum* over its
runs: on a shared, loaded machine the minimum is the run that was disturbed least.

A child's peak RSS counts the pages it shares with this process between its fork and its exec:
the bench process must stay small (big inputs are generated in child processes), or every
child's peak RSS reads at least this process's size.

A *figure* is a ratio: one probe's minimum over its floor probe's minimum. The floors run in the
same loop, interleaved with what they are floors for, so both see the same machine. Absolute
times are kept only as illustrations.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
PYTHON = os.environ.get("PYTHON") or sys.executable


@dataclass
class Tree:
    """A source tree of roofline_tui to measure (its root goes on the children's PYTHONPATH)."""

    label: str
    path: Path

    @property
    def commit(self) -> str:
        try:
            out = subprocess.run(["git", "-C", str(self.path), "rev-parse", "--short", "HEAD"],
                                 capture_output=True, text=True, timeout=10)
            dirty = subprocess.run(["git", "-C", str(self.path), "status", "--porcelain",
                                    "--untracked-files=no"],
                                   capture_output=True, text=True, timeout=10).stdout.strip()
            return out.stdout.strip() + ("+dirty" if dirty else "")
        except (OSError, subprocess.SubprocessError):
            return ""

    @property
    def demo(self) -> Path:
        return self.path / "roofline_tui" / "demo"


def child_env(tree: Tree | None) -> dict[str, str]:
    """The environment of a child: ``PYTHONPATH`` is the tree (nothing else), and
    ``PYTHONDONTWRITEBYTECODE`` is dropped so that the tree's modules get compiled ``.pyc`` files
    as an installed package would (without them every start-up pays for compiling)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "PYTHONSTARTUP")}
    if tree is not None:
        env["PYTHONPATH"] = str(tree.path)
    return env


@dataclass
class Run:
    value_s: float | None
    wall_s: float
    maxrss_kib: int
    report: dict[str, Any]


@dataclass
class Probe:
    """One command measured ``n`` times; ``reads`` says which value a run gives."""

    key: str
    argv: list[str]
    tree: Tree | None
    reads: str = "wall"          # "wall" | "paint" | "p50"
    n: int = 5
    warmup: bool = False
    timeout_s: float = 900
    runs: list[Run] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def run_once(self) -> Run:
        env = child_env(self.tree)
        # ``python -m``/``-c`` put the working directory ahead of PYTHONPATH on sys.path: run a
        # tree's probe from that tree, or a bench started inside one tree would measure that
        # tree under every label
        cwd = str(self.tree.path) if self.tree is not None else None
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            t0 = time.monotonic()
            proc = subprocess.Popen(self.argv, stdout=out, stderr=err, env=env, cwd=cwd,
                                    stdin=subprocess.DEVNULL)
            # wait4 reaps the child and gives its own rusage (peak RSS of that process alone);
            # a timer kills a child that hangs, so the wait is a plain blocking one
            killer = threading.Timer(self.timeout_s, proc.kill)
            killer.start()
            try:
                _pid, status, usage = os.wait4(proc.pid, 0)
            finally:
                killer.cancel()
            wall = time.monotonic() - t0
            proc.returncode = os.waitstatus_to_exitcode(status)
            out.seek(0)
            err.seek(0)
            stdout = out.read().decode(errors="replace")
            stderr = err.read().decode(errors="replace")
        if proc.returncode != 0:
            raise RuntimeError(f"{self.key}: exit {proc.returncode}: {' '.join(self.argv)}\n"
                               + stderr[-2000:])
        report: dict[str, Any] = {}
        if self.reads != "wall":
            report = json.loads(stdout.strip().splitlines()[-1])
        if self.reads == "wall":
            value: float | None = wall
        elif self.reads == "paint":
            value = report["painted_monotonic"] - t0
        else:
            value = report["p50_s"]
        return Run(value, wall, usage.ru_maxrss, report)

    def measure(self) -> None:
        try:
            self.runs.append(self.run_once())
        except (RuntimeError, OSError, ValueError, KeyError, IndexError) as exc:
            self.errors.append(str(exc))
            print(f"[bench] FAILED {exc}", file=sys.stderr, flush=True)

    @property
    def done(self) -> bool:
        return len(self.runs) >= self.n or len(self.errors) >= 2

    def best(self, what: str = "value_s") -> float | None:
        vals = [getattr(r, what) for r in self.runs if getattr(r, what) is not None]
        return min(vals) if vals else None


@dataclass
class Figure:
    """``num`` / ``den``: keys of probes, ``{tree}`` standing for each tree's label; a ``den``
    starting ``const:`` names one of the context's constants instead of a probe."""

    id: str
    title: str
    floor: str
    goal: float | None  # None: a reference figure, shown for context, with no goal
    num: str
    den: str
    what: str = "value_s"        # or "maxrss_kib"
    unit: str = "s"              # how the illustration shows the minimums

    def keys(self, tree: Tree) -> tuple[str, str]:
        return self.num.format(tree=tree.label), self.den.format(tree=tree.label)


def clean_venv(work: Path) -> tuple[str, str]:
    """A fresh virtual environment with nothing in it (``python -m venv --without-pip``, no
    system site-packages): the interpreter of ``python -c pass`` as a clean install starts it.
    Returns its python and how it was made."""
    where = work / "clean-venv"
    subprocess.run([PYTHON, "-m", "venv", "--without-pip", str(where)], check=True,
                   capture_output=True, timeout=300)
    python = where / "bin" / "python"
    if not python.exists():
        python = where / "Scripts" / "python.exe"
    base = subprocess.run([str(python), "-c", "import sys; print(sys._base_executable)"],
                          capture_output=True, text=True, timeout=60).stdout.strip()
    how = (f"`{Path(PYTHON).name} -m venv --without-pip` in a temp dir (no pip, no system "
           f"site-packages; base interpreter {base or '?'})")
    return str(python), how


def compile_tree(tree: Tree) -> None:
    """Write the tree's ``.pyc`` files before anything is measured (as an install does), so no
    probe pays for compiling and the editable tree starts as an installed package would."""
    subprocess.run([PYTHON, "-m", "compileall", "-q", str(tree.path / "roofline_tui"),
                    str(BENCH)], env=child_env(tree), capture_output=True, timeout=600)


def copy_demo(tree: Tree, dst: Path) -> Path:
    """A copy of the tree's bundled demo (no stored artifacts); returns its profile directory."""
    shutil.copytree(tree.demo, dst, ignore=shutil.ignore_patterns(
        "profile_roofline.*", "__pycache__", ".*"))
    return dst / "profile"


@dataclass
class Context:
    trees: list[Tree]
    work: Path
    cfg: dict[str, int]
    memory_trees: set[str] = field(default_factory=set)  # labels measured over live updates
    probes: list[Probe] = field(default_factory=list)
    after: list[Callable[[], dict[str, Any]]] = field(default_factory=list)
    # floors that are not probes: a file's size (KiB, to divide a peak RSS by), by key
    constants: dict[str, float] = field(default_factory=dict)
    # how each floor was made, printed with the figures
    notes: list[str] = field(default_factory=list)
    # run once the probes are done, whatever happened (stops what add_probes started: a cluster)
    cleanup: list[Callable[[], None]] = field(default_factory=list)


def machine() -> dict[str, Any]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gib = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_gib = round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = None
    try:
        import textual

        textual_version = textual.__version__
    except ImportError:
        textual_version = "?"
    return {"nproc": len(os.sched_getaffinity(0)), "cpu_model": model or platform.processor(),
            "mem_total_gib": mem_gib, "loadavg_1min_at_start": load,
            "python": platform.python_version(), "executable": PYTHON,
            "platform": platform.platform(), "textual": textual_version}
