"""`roofline import torch` benchmark, as ratios (run through ``bench/run``; this file alone runs
just these: ``python bench/bench_import.py [--quick] [--tree DIR ...]``).

A synthetic Kineto trace with 120,000 GPU kernels (20,000 with ``--quick``) is written once; then,
interleaved, the whole ``roofline import torch TRACE --out DIR`` process and a process that only
does ``json.load`` of the same file. Two figures: wall time over the ``json.load`` process's, and
peak RSS (each child's own, from ``wait4``) over the ``json.load`` process's.

A third: the same trace as eight ranks of one run (``rank0.json`` … ``rank7.json``, ``--rank 7``:
the rank analysed is the last one read), peak RSS over the one-trace import's: the ranks are read
one at a time (``--jobs 1``), so it stays about 1×. Measured only in trees that read several
ranks. A fourth: the same eight ranks read by worker processes (the default ``--jobs``), wall
time over the ``--jobs 1`` import's.

A fifth (issue 38 item 2): the same eight ranks sent with ``--dask`` to a Dask cluster of 2
single-threaded worker processes on this machine, wall time over ``--jobs 2``'s. The cluster
(``dask scheduler`` and ``dask worker --nworkers 2 --nthreads 1``, each its own process with
the tree on its ``PYTHONPATH``, as on a real cluster) is started before anything is timed and
stays up for the whole run, so the figure is what a user of a running cluster waits for: the
import command's start, its connection to the scheduler, the workers' reads of the traces
(from the paths given) and the merge; the cluster's own start-up is not in it. Measured only
where ``dask.distributed`` is installed (``pip install 'roofline_tui[dask]'``) and the tree
has ``--dask``.

A sixth (issue 38 item 1): the peak PSS of the whole process tree of the default-``--jobs``
import of the eight ranks (``bench/tree_pss.py`` sums ``/proc/<pid>/smaps_rollup`` over the
command and its workers every 5 ms) over the same of a one-trace import; goal: the workers'
number × 1.2. A seventh (issue 38 item 4): ``roofline dash --traces`` with its ingest running,
the trace gzipped and renamed into the watched directory, until its round's rankings are
painted (``probes.py ingest``), over ``roofline import torch`` of the same ``.json.gz``.

A reference without a goal: two ``json.load``s of the trace in two processes at once over the
same two one after the other, what two processes gain on this machine at all (they share its
memory bandwidth and caches); the workers' figure cannot be much below it.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from harness import BENCH, PYTHON, Context, Figure, Probe, Tree, child_env

RANKS = 8  # issue 38: a TP8 node's ranks
# the workers `--jobs` starts by default: the CPUs this process may use, at most one per rank
JOBS = max(1, min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                  else (os.cpu_count() or 1), RANKS))
TREE_PSS = str(BENCH / "tree_pss.py")

FIGURES = [
    Figure("import_time", "`roofline import torch`, 120k kernels, time", "`json.load` of the file",
           0.3, "{tree}:import_torch", "floor:json_load"),  # goals: issue 38 item 3 (0.5: 26)
    Figure("import_memory", "`roofline import torch`, 120k kernels, peak memory",
           "`json.load` of the file", 0.1, "{tree}:import_torch", "floor:json_load",
           what="maxrss_kib", unit="KiB"),
    Figure("import_ranks_memory",
           f"`roofline import torch`, {RANKS} ranks of that trace, peak memory",
           "the import of one rank", 1.2, "{tree}:import_ranks", "{tree}:import_torch",
           what="maxrss_kib", unit="KiB"),
    # issue 38: the ranks read by worker processes (--jobs: the CPUs available); the goal is
    # 0.6x with 2 to 7 workers, 0.2x with 8
    Figure("import_ranks_parallel", f"`roofline import torch`, {RANKS} ranks, workers (default "
           f"--jobs: {JOBS} here), time", "the same with `--jobs 1`",
           0.2 if JOBS >= 8 else 0.6, "{tree}:import_ranks_jobs", "{tree}:import_ranks"),
    # what two processes gain on this machine at all (memory bandwidth and caches shared)
    Figure("two_loads", "reference: two `json.load`s of that trace at once, time",
           "the same one after the other", None, "floor:two_loads_at_once",
           "floor:two_loads_apart"),
    # issue 38 item 2: the ranks read by a running 2-worker Dask cluster on the same 2 cores
    Figure("import_ranks_dask", f"`roofline import torch`, {RANKS} ranks, `--dask`, 2-worker "
           "cluster (its start-up not timed), time", "the same with `--jobs 2`", 1.5,
           "{tree}:import_ranks_dask", "{tree}:import_ranks_jobs2"),
    # issue 38 item 1: the whole process tree's memory (PSS: pages shared with the parent
    # counted once) while the workers read the ranks, over one rank's import; goal: jobs × 1.2
    Figure("import_ranks_pss", f"`roofline import torch`, {RANKS} ranks, workers (default "
           f"--jobs: {JOBS} here), peak PSS of the process tree", "the import of one rank (its "
           "PSS)", 1.2 * JOBS, "{tree}:import_ranks_pss", "{tree}:import_one_pss",
           unit="KiB"),
    # issue 38 item 4: a complete trace renamed into the directory `dash --traces` watches,
    # until its round's rankings are painted, over the CLI import of the same file
    Figure("ingest_to_screen", "`roofline dash --traces`, the trace as `.json.gz` renamed "
           "into DIR → its round painted", "`roofline import torch` of the same file", 1.3,
           "{tree}:ingest_paint", "{tree}:import_gz"),
]
DASK_WORKERS = 2

PROBES = str(BENCH / "probes.py")
JSON_LOAD = "import json, sys\nwith open(sys.argv[1], 'rb') as fh:\n    json.load(fh)\n"
# this machine's own scaling over two processes: two `json.load`s of the trace at once, or one
# after the other (argv: the trace, "at_once" or "apart") -- what two workers can gain here
TWO_LOADS = ("import subprocess, sys\n"
             f"cmd = [sys.executable, '-c', {JSON_LOAD!r}, sys.argv[1]]\n"
             "if sys.argv[2] == 'at_once':\n"
             "    procs = [subprocess.Popen(cmd) for _ in range(2)]\n"
             "    codes = [p.wait() for p in procs]\n"
             "else:\n"
             "    codes = [subprocess.run(cmd).returncode for _ in range(2)]\n"
             "raise SystemExit(max(codes))\n")


def write_trace(path: Path, kernels: int) -> None:
    """The bench's own tree writes the trace (the same file for every tree measured)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from roofline_tui.importers.synth import SynthSpec
    from roofline_tui.importers.synth import write_trace as write

    layers = 25
    steps = max(1, kernels // (layers * 4))  # 4 kernels per layer per step
    prefill = max(1, steps // 40)
    write(path, SynthSpec(prefill_steps=prefill, decode_steps=steps - prefill, layers=layers))


def add_probes(ctx: Context) -> None:
    n = ctx.cfg["import_runs"]
    trace = ctx.work / "trace.json"
    write_trace(trace, ctx.cfg["import_kernels"])
    ctx.probes.append(Probe("floor:json_load", [PYTHON, "-c", JSON_LOAD, str(trace)], None, n=n))
    for mode in ("at_once", "apart"):
        ctx.probes.append(Probe(f"floor:two_loads_{mode}",
                                [PYTHON, "-c", TWO_LOADS, str(trace), mode], None, n=n))
    ranks = ctx.work / "ranks"
    ranks.mkdir(exist_ok=True)
    for r in range(RANKS):
        # copied without reading it in: a child's peak RSS (from wait4) is never below this
        # process's own peak at the fork, so holding the 76 MB trace here once made every
        # import read 102 MiB, whatever it really used
        shutil.copyfile(trace, ranks / f"rank{r}.json")
    gz = ctx.work / "gz" / "trace.pt.trace.json.gz"
    gz.parent.mkdir(exist_ok=True)
    with open(trace, "rb") as src, gzip.open(gz, "wb", compresslevel=6) as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
    for tree in ctx.trees:
        out = ctx.work / tree.label / "import_round"
        # every run writes into the same round: a tree that keeps an existing Top-N unless
        # told otherwise is told (--force)
        force = ["--force"] if _has_force(tree.path) else []
        ctx.probes.append(Probe(f"{tree.label}:import_torch",
                                [PYTHON, "-m", "roofline_tui", "import", "torch", str(trace),
                                 "--out", str(out), *force], tree, n=n))
        if (tree.path / "roofline_tui" / "ingest.py").is_file():
            ctx.probes.append(Probe(f"{tree.label}:import_gz",
                                    [PYTHON, "-m", "roofline_tui", "import", "torch", str(gz),
                                     "--out", str(ctx.work / tree.label / "gz_round"), *force],
                                    tree, n=n))
            runs = ctx.work / tree.label / "ingest_runs"
            runs.mkdir(parents=True, exist_ok=True)
            ctx.probes.append(Probe(f"{tree.label}:ingest_paint",
                                    [PYTHON, PROBES, "ingest", "dash", str(runs), str(gz)],
                                    tree, reads="p50", n=n))
        if (tree.path / "roofline_tui" / "importers" / "ranks.py").is_file():
            # one worker: the ranks one after another (the memory figure's subject)
            serial = ["--jobs", "1"] if _has_option(tree.path, '"--jobs"') else []
            ctx.probes.append(Probe(
                f"{tree.label}:import_ranks",
                [PYTHON, "-m", "roofline_tui", "import", "torch", str(ranks), "--rank",
                 str(RANKS - 1), "--out", str(ctx.work / tree.label / "ranks_round"), *force,
                 *serial], tree, n=n))
            if serial:
                ctx.probes.append(Probe(
                    f"{tree.label}:import_one_pss",
                    [PYTHON, TREE_PSS, PYTHON, "-m", "roofline_tui", "import", "torch",
                     str(trace), "--out", str(ctx.work / tree.label / "pss_one_round"),
                     *force], tree, reads="p50", n=n))
                ctx.probes.append(Probe(
                    f"{tree.label}:import_ranks_pss",
                    [PYTHON, TREE_PSS, PYTHON, "-m", "roofline_tui", "import", "torch",
                     str(ranks), "--rank", str(RANKS - 1), "--out",
                     str(ctx.work / tree.label / "pss_ranks_round"), *force], tree,
                    reads="p50", n=n))
                ctx.probes.append(Probe(
                    f"{tree.label}:import_ranks_jobs",
                    [PYTHON, "-m", "roofline_tui", "import", "torch", str(ranks), "--rank",
                     str(RANKS - 1), "--out", str(ctx.work / tree.label / "ranks_jobs_round"),
                     *force], tree, n=n))
            if _has_option(tree.path, '"--dask"'):
                address = start_dask(ctx, tree)
                if address is not None:
                    ctx.probes.append(Probe(
                        f"{tree.label}:import_ranks_jobs2",
                        [PYTHON, "-m", "roofline_tui", "import", "torch", str(ranks), "--rank",
                         str(RANKS - 1), "--out",
                         str(ctx.work / tree.label / "ranks_jobs2_round"), *force, "--jobs",
                         str(DASK_WORKERS)], tree, n=n))
                    # warmed up: a running cluster's workers have the importer loaded
                    ctx.probes.append(Probe(
                        f"{tree.label}:import_ranks_dask",
                        [PYTHON, "-m", "roofline_tui", "import", "torch", str(ranks), "--rank",
                         str(RANKS - 1), "--out",
                         str(ctx.work / tree.label / "ranks_dask_round"), *force, "--dask",
                         address], tree, n=n, warmup=True))


def start_dask(ctx: Context, tree: Tree) -> str | None:
    """A Dask scheduler and ``DASK_WORKERS`` single-threaded worker processes for ``tree``
    (its roofline_tui on their ``PYTHONPATH``), up and joined before anything is timed;
    stopped by ``ctx.cleanup``. Returns the scheduler's address; None (and a note) where
    ``dask.distributed`` is not installed or the cluster does not come up."""
    env = child_env(tree)
    if subprocess.run([PYTHON, "-c", "import distributed"], env=env,
                      capture_output=True, timeout=120).returncode != 0:
        ctx.notes.append(f"--dask figure of {tree.label}: not measured (dask.distributed is "
                         "not installed: pip install 'roofline_tui[dask]')")
        return None
    where = ctx.work / tree.label / "dask"
    where.mkdir(parents=True, exist_ok=True)
    info = where / "scheduler.json"
    procs: list[subprocess.Popen[bytes]] = []

    def stop() -> None:
        for proc in reversed(procs):  # each in its own session: its group is its own
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                    proc.wait(timeout=30)
                except (OSError, subprocess.TimeoutExpired):
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=30)

    ctx.cleanup.append(stop)
    common = {"env": env, "cwd": str(where), "stdin": subprocess.DEVNULL,
              "start_new_session": True}
    with open(where / "scheduler.log", "wb") as log:
        procs.append(subprocess.Popen(
            [PYTHON, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
             "--no-dashboard", "--scheduler-file", str(info)], stdout=log, stderr=log,
            **common))
    deadline = time.monotonic() + 120
    while not info.is_file() and time.monotonic() < deadline and procs[0].poll() is None:
        time.sleep(0.2)
    try:
        address = str(json.loads(info.read_text())["address"])
    except (OSError, ValueError, KeyError):
        ctx.notes.append(f"--dask figure of {tree.label}: not measured (the scheduler did not "
                         f"start: {where / 'scheduler.log'})")
        stop()
        return None
    with open(where / "workers.log", "wb") as log:
        procs.append(subprocess.Popen(
            [PYTHON, "-m", "dask", "worker", address, "--nworkers", str(DASK_WORKERS),
             "--nthreads", "1", "--no-dashboard", "--local-directory", str(where)],
            stdout=log, stderr=log, **common))
    joined = subprocess.run(
        [PYTHON, "-c", "import sys; from distributed import Client\n"
         "with Client(sys.argv[1], timeout=60) as c: c.wait_for_workers(int(sys.argv[2]), "
         "timeout=120)", address, str(DASK_WORKERS)], env=env, capture_output=True, timeout=300)
    if joined.returncode != 0:
        ctx.notes.append(f"--dask figure of {tree.label}: not measured (the workers did not "
                         f"join: {where / 'workers.log'})")
        stop()
        return None
    ctx.notes.append(f"--dask cluster of {tree.label}: `dask scheduler` + `dask worker "
                     f"--nworkers {DASK_WORKERS} --nthreads 1` on this machine, started and "
                     "joined before timing, idle between its probes' runs")
    return address


def _has_force(root: Path) -> bool:
    return _has_option(root, '"--force"')


def _has_option(root: Path, option: str) -> bool:
    try:
        return option in (root / "roofline_tui" / "cli" / "imports.py").read_text()
    except OSError:
        return False


if __name__ == "__main__":
    import run_all

    raise SystemExit(run_all.main(["--only", "import", *sys.argv[1:]]))
