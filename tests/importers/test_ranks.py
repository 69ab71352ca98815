"""Several ranks of one run (issue 23): ``roofline import torch`` given the traces of several
ranks, or a directory of them, writes one rank's Top-N and each kernel's spread across ranks.

The ranks are built here from one real trace (SGLang Qwen3-8B decode on MI300X, rank 0 of its
run): rank 1 runs every kernel 10 % slower and its paged attention twice as slow (a straggler),
rank 2 runs 10 % faster. Every expected figure is computed here from the files written, never
taken from the importer."""

from __future__ import annotations

import copy
import gzip
import json
import os
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from roofline_tui.core.topn_ext import parse_entry_extension
from tests.cli.helpers import one_line, roofline
from tests.paths import REAL_FORMATS, need

SOURCE = REAL_FORMATS / "wild" / "tracelens_sglang_qwen3-8b_decode.json.gz"
STRAGGLER = "paged_attention_ll4mi_QKV"  # the kernel rank 1 runs twice as slow
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
SCALE = {0: 1.0, 1: 1.1, 2: 0.9}


@pytest.fixture(scope="module")
def base() -> dict[str, Any]:
    with gzip.open(need(SOURCE), "rt", encoding="utf-8") as fh:
        doc: dict[str, Any] = json.load(fh)
    return doc


def rank_trace(base: dict[str, Any], rank: int, info_rank: int | None = None) -> dict[str, Any]:
    """The real trace as rank ``rank`` of the run (``distributedInfo.rank`` = ``info_rank``,
    default the same rank; -1: no distributedInfo at all)."""
    doc = copy.deepcopy(base)
    info = rank if info_rank is None else info_rank
    if info < 0:
        doc.pop("distributedInfo", None)
    else:
        doc["distributedInfo"]["rank"] = info
    for ev in doc["traceEvents"]:
        if ev.get("cat") == "kernel" and isinstance(ev.get("dur"), (int, float)):
            factor = SCALE[rank] * (2.0 if rank == 1 and STRAGGLER in ev["name"] else 1.0)
            ev["dur"] = ev["dur"] * factor
    return doc


def write(path: Path, doc: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        json.dump(doc, fh)
    return path


def per_launch(doc: dict[str, Any]) -> tuple[dict[str, float], float]:
    """Each GPU kernel's mean time per launch (µs) and the total GPU time (µs), from the file."""
    sums: dict[str, list[float]] = defaultdict(list)
    for ev in doc["traceEvents"]:
        if ev.get("ph") == "X" and str(ev.get("cat")).lower() in GPU_CATS:
            sums[ev["name"]].append(float(ev["dur"]))
    return ({n: sum(v) / len(v) for n, v in sums.items()},
            sum(sum(v) for v in sums.values()))


def load(out: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((out / "profile_topN.json").read_text())
    return doc


def three_ranks(base: dict[str, Any], folder: Path, names: dict[int, str]
                ) -> dict[int, dict[str, Any]]:
    docs = {r: rank_trace(base, r) for r in SCALE}
    for r, doc in docs.items():
        write(folder / names[r], doc)
    return docs


def check_spread(topn: dict[str, Any], docs: dict[int, dict[str, Any]]) -> int:
    """Every entry's spread against the one computed here; returns the entries checked."""
    means = {r: per_launch(d)[0] for r, d in docs.items()}
    checked = 0
    for entry in topn["top_kernels"]:
        got = entry["x_roofline"]["ranks"]
        per = {r: m[entry["name"]] for r, m in means.items() if entry["name"] in m}
        if not per:
            continue
        values = list(per.values())
        assert got["ranks"] == len(per)
        assert got["min_us"] == pytest.approx(min(values), abs=1e-3)
        assert got["median_us"] == pytest.approx(statistics.median(values), abs=1e-3)
        assert got["max_us"] == pytest.approx(max(values), abs=1e-3)
        assert per[got["slowest_rank"]] == max(values)
        checked += 1
    return checked


def test_a_directory_gives_the_slowest_rank_with_the_spread(base: dict[str, Any],
                                                            tmp_path: Path) -> None:
    run = tmp_path / "run"
    docs = three_ranks(base, run, {r: f"rank-{r}.Apr_03_18_51_38.1102.pt.trace.json.gz"
                                   for r in SCALE})  # HTA's names
    proc = roofline("import", "torch", run, "--out", tmp_path / "round")
    assert proc.returncode == 0, proc.stderr
    assert "3 rank trace(s)" in proc.stdout and "Top-N of rank 1 (the slowest" in proc.stdout
    topn = load(tmp_path / "round")
    totals = {r: per_launch(d)[1] for r, d in docs.items()}
    assert max(totals, key=lambda r: totals[r]) == 1
    assert topn["total_gpu_time_ms"] == pytest.approx(totals[1] / 1000.0, abs=1e-4)
    block = topn["x_roofline"]["ranks"]
    assert block["rank"] == 1 and block["chosen_by"] == "slowest"
    assert [t["rank"] for t in block["traces"]] == [0, 1, 2]
    assert [t["gpu_time_ms"] for t in block["traces"]] == pytest.approx(
        [totals[r] / 1000.0 for r in (0, 1, 2)], abs=1e-4)
    assert check_spread(topn, docs) >= 10
    # the straggler shows in the .md: rank 1's time over the median (rank 0's), on rank 1
    md = (tmp_path / "round" / "profile_topN.md").read_text()
    assert "## Ranks" in md and "this Top-N is rank **1** (the slowest rank" in md
    ratio = f"{2.0 * SCALE[1] / SCALE[0]:.2f}×"
    rows = [line for line in md.splitlines() if STRAGGLER in line and ratio in line]
    assert rows and rows[0].rstrip().endswith("| 1 |"), md


def test_rank_names_the_top_n_written(base: dict[str, Any], tmp_path: Path) -> None:
    names = {r: f"dp0_pp0_tp{r}_dcp0_ep0_rank{r}.1757000000.pt.trace.json.gz" for r in SCALE}
    docs = three_ranks(base, tmp_path / "run", names)  # vLLM's names, given one by one
    files = [tmp_path / "run" / names[r] for r in (2, 0, 1)]
    proc = roofline("import", "torch", *files, "--rank", "2", "--out", tmp_path / "round")
    assert proc.returncode == 0, proc.stderr
    assert "Top-N of rank 2 (named with --rank)" in proc.stdout
    topn = load(tmp_path / "round")
    assert topn["total_gpu_time_ms"] == pytest.approx(per_launch(docs[2])[1] / 1000.0,
                                                      abs=1e-4)
    assert topn["x_roofline"]["ranks"]["chosen_by"] == "--rank"
    assert check_spread(topn, docs) >= 10
    assert "named with `--rank`" in (tmp_path / "round" / "profile_topN.md").read_text()


def test_atom_rank_directories_and_distributed_info(base: dict[str, Any],
                                                    tmp_path: Path) -> None:
    """ATOM's ``rank_<r>/`` layout (the file names say no rank); and files named after
    nothing, whose rank is their ``distributedInfo.rank``."""
    docs = three_ranks(base, tmp_path / "atom", {r: f"rank_{r}/trace.json.gz" for r in SCALE})
    proc = roofline("import", "torch", tmp_path / "atom", "--out", tmp_path / "r1")
    assert proc.returncode == 0, proc.stderr
    traces = load(tmp_path / "r1")["x_roofline"]["ranks"]["traces"]
    assert [t["file"] for t in traces] == [f"rank_{r}/trace.json.gz" for r in (0, 1, 2)]
    for r, name in ((0, "a.json.gz"), (1, "b.json.gz")):
        write(tmp_path / "plain" / name, rank_trace(base, r))
    proc = roofline("import", "torch", tmp_path / "plain", "--out", tmp_path / "r2")
    assert proc.returncode == 0, proc.stderr
    topn = load(tmp_path / "r2")
    assert topn["x_roofline"]["ranks"]["rank"] == 1
    assert check_spread(topn, {r: docs[r] for r in (0, 1)}) >= 10


def test_conflicting_or_missing_ranks_are_refused_in_one_line(base: dict[str, Any],
                                                              tmp_path: Path) -> None:
    write(tmp_path / "a" / "x_rank0.json.gz", rank_trace(base, 0))
    write(tmp_path / "a" / "x_rank1.json.gz", rank_trace(base, 1, info_rank=0))  # a bad copy
    proc = roofline("import", "torch", tmp_path / "a", "--out", tmp_path / "r")
    assert proc.returncode == 1
    assert ("x_rank1.json.gz: its name says rank 1 but its distributedInfo.rank is 0"
            in one_line(proc))
    write(tmp_path / "b" / "x_rank0.json.gz", rank_trace(base, 0))
    write(tmp_path / "b" / "y-rank-0.json.gz", rank_trace(base, 0))
    proc = roofline("import", "torch", tmp_path / "b", "--out", tmp_path / "r")
    assert proc.returncode == 1 and "are both rank 0: give one trace per rank" in one_line(proc)
    write(tmp_path / "c" / "one.json.gz", rank_trace(base, 0, info_rank=-1))
    write(tmp_path / "c" / "two.json.gz", rank_trace(base, 1, info_rank=-1))
    proc = roofline("import", "torch", tmp_path / "c", "--out", tmp_path / "r")
    assert proc.returncode == 1 and "one.json.gz: no rank in its name" in one_line(proc)
    proc = roofline("import", "torch", tmp_path / "a" / "x_rank0.json.gz",
                    tmp_path / "b" / "y-rank-0.json.gz", "--out", tmp_path / "r")
    assert proc.returncode == 1 and "both rank 0" in one_line(proc)
    write(tmp_path / "d" / "x_rank0.json.gz", rank_trace(base, 0))
    write(tmp_path / "d" / "x_rank2.json.gz", rank_trace(base, 2))
    proc = roofline("import", "torch", tmp_path / "d", "--rank", "1", "--out", tmp_path / "r")
    assert proc.returncode == 1
    assert one_line(proc).endswith("--rank 1: no trace of that rank; ranks: 0, 2")
    assert not (tmp_path / "r" / "profile_topN.json").exists()


def test_one_trace_has_no_rank_block(base: dict[str, Any], tmp_path: Path) -> None:
    """A single trace is imported as before: no rank block, no spread, no rank section; a
    directory holding one trace gives the same Top-N."""
    trace = write(tmp_path / "one" / "x_rank0.json.gz", rank_trace(base, 0))
    a = roofline("import", "torch", trace, "--out", tmp_path / "a")
    b = roofline("import", "torch", tmp_path / "one", "--out", tmp_path / "b")
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    assert "rank trace(s)" not in a.stdout
    doc = load(tmp_path / "a")
    assert "ranks" not in doc["x_roofline"]
    assert not any("ranks" in e.get("x_roofline", {}) for e in doc["top_kernels"])
    assert "## Ranks" not in (tmp_path / "a" / "profile_topN.md").read_text()
    assert (tmp_path / "a" / "profile_topN.json").read_bytes() == (
        tmp_path / "b" / "profile_topN.json").read_bytes()


def test_a_spread_read_back_is_checked() -> None:
    """The Top-N reader takes the spread through the extension's parser: a good one is typed,
    one with min > max is dropped with a one-line reason."""
    good = {"ranks": 3, "min_us": 1.5, "median_us": 2.0, "max_us": 4.25, "slowest_rank": 7}
    ext, problems = parse_entry_extension({"ranks": good})
    assert ext is not None and ext.ranks is not None and not problems
    assert (ext.ranks.max_us, ext.ranks.slowest_rank) == (4.25, 7)
    ext, problems = parse_entry_extension({"ranks": dict(good, min_us=9.0)})
    assert ext is not None and ext.ranks is None
    assert problems == ["x_roofline.ranks: min, median and max are out of order, ignored"]
    ext, problems = parse_entry_extension({"ranks": dict(good, max_us="1e999")})
    assert ext is not None and ext.ranks is None and len(problems) == 1


# --------------------------------------------------------------------------- issue 36 item 3


def _make_bad(path: Path, kind: str) -> None:
    """``path`` (a rank's trace name) as something that cannot be read."""
    if kind == "dangling symlink":
        path.symlink_to(path.parent / "moved-away.json.gz")
    elif kind == "FIFO":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:  # damaged: the first half of a gzip trace (a copy cut short)
        data = gzip.compress(b'{"traceEvents": [' + b'{"ph": "X", "ts": 1}, ' * 5000 + b"]}")
        path.write_bytes(data[: len(data) // 2])


BAD_KINDS = {"dangling symlink": "is a dangling symlink", "FIFO": "is a FIFO (named pipe)",
             "directory": "is a directory", "damaged": "cannot read trace"}


@pytest.mark.parametrize("kind", list(BAD_KINDS))
def test_a_rank_that_cannot_be_read_is_never_dropped_silently(base: dict[str, Any],
                                                              tmp_path: Path,
                                                              kind: str) -> None:
    """Issue 36 item 3, the attack: of three ranks, rank 1 (the straggler, 10 % slower and
    its paged attention twice as slow: the rank the default must name) cannot be read. Before
    the fix a dangling symlink, a FIFO or a directory in its place was skipped without a word
    and rank 0 was written as "the slowest", exit 0.

    Without a flag: one line naming rank 1's file and why, exit 1, nothing written. With
    ``--skip-bad-ranks``: ranks 0 and 2 are read, the slowest of them is rank 0 (GPU time
    scaled 1.0 against 0.9), and the summary line, the Top-N's notes and its .md all say that
    rank 1 was kept out and why."""
    run = tmp_path / "run"
    names = {r: f"dp0_pp0_tp{r}_dcp0_ep0_rank{r}.1757000000.pt.trace.json.gz" for r in SCALE}
    for r in (0, 2):
        write(run / names[r], rank_trace(base, r))
    _make_bad(run / names[1], kind)
    said = f"{names[1]}: {BAD_KINDS[kind]}"
    out = tmp_path / "round"
    refused = roofline("import", "torch", run, "--out", out)
    assert refused.returncode == 1 and refused.stdout == ""
    line = one_line(refused)
    assert said in line and "nothing written" in line and "--skip-bad-ranks" in line
    assert not out.exists()

    done = roofline("import", "torch", run, "--out", out, "--skip-bad-ranks")
    assert done.returncode == 0, done.stderr
    summary = done.stdout.splitlines()[0]
    assert summary.startswith("2 rank trace(s) read: 0 (")
    assert "Top-N of rank 0 (the slowest of those read: most GPU time)" in summary
    assert f"; 1 kept out by --skip-bad-ranks (cannot be read): {names[1]} ({BAD_KINDS[kind]}" in (
        summary)
    topn = load(out)
    assert [t["rank"] for t in topn["x_roofline"]["ranks"]["traces"]] == [0, 2]
    assert topn["x_roofline"]["ranks"]["rank"] == 0
    note = [n for n in topn["notes"] if "--skip-bad-ranks" in n]
    assert len(note) == 1 and f"{names[1]} ({BAD_KINDS[kind]}" in note[0]
    assert "of the 2 read" in note[0] and note[0] in done.stderr  # said as a warning too
    assert "kept out by --skip-bad-ranks" in (out / "profile_topN.md").read_text()
    # the straggler cannot be asked for by number either
    asked = roofline("import", "torch", run, "--out", tmp_path / "r2", "--skip-bad-ranks",
                     "--rank", "1")
    assert asked.returncode == 1
    assert (f"error: --rank 1: that rank's trace cannot be read: {names[1]} "
            f"({BAD_KINDS[kind]}") in one_line(asked)


def test_an_atom_rank_directory_without_a_trace_is_accounted_for(base: dict[str, Any],
                                                                 tmp_path: Path) -> None:
    """ATOM's layout with ``rank_1/`` empty (its trace was never copied) and ``rank_2`` a
    dangling symlink: each is named, exit 1; with ``--skip-bad-ranks`` rank 0 alone is read
    and imported as one trace, and the Top-N says which ranks are missing."""
    write(tmp_path / "atom" / "rank_0" / "trace.json.gz", rank_trace(base, 0))
    (tmp_path / "atom" / "rank_1").mkdir()
    (tmp_path / "atom" / "rank_2").symlink_to(tmp_path / "elsewhere")
    refused = roofline("import", "torch", tmp_path / "atom", "--out", tmp_path / "r")
    assert refused.returncode == 1
    line = one_line(refused)
    assert line.split("error: ", 1)[1].startswith(
        "rank_1/: holds no trace file (*.json, *.json.gz): a rank's trace that cannot be read "
        "(and 1 more: rank_2/ (is a dangling symlink)); nothing written")
    done = roofline("import", "torch", tmp_path / "atom", "--out", tmp_path / "r",
                    "--skip-bad-ranks")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("1 rank trace read (rank_0/trace.json.gz); 2 kept out")
    note = [n for n in load(tmp_path / "r")["notes"] if "--skip-bad-ranks" in n]
    assert note and "rank_1/ (holds no trace file" in note[0] and "rank_2/ (is a dangling" in (
        note[0])


@pytest.mark.parametrize("rank", [None, 2])
def test_ranks_read_in_parallel_give_the_same_top_n_byte_for_byte(
        base: dict[str, Any], tmp_path: Path, rank: int | None) -> None:
    """Issue 38 item 1: --jobs N reads the ranks in worker processes; the files written are
    the same bytes as --jobs 1 writes (the default, the slowest rank, and --rank)."""
    run = tmp_path / "run"
    three_ranks(base, run, {r: f"trace-TP-{r}.json.gz" for r in SCALE})
    pick = ["--rank", str(rank)] if rank is not None else []
    written = {}
    for jobs in ("1", "3"):
        out = tmp_path / f"jobs{jobs}"
        done = roofline("import", "torch", run, "--out", out, "--jobs", jobs, *pick)
        assert done.returncode == 0, done.stderr
        written[jobs] = {name: (out / name).read_bytes()
                         for name in ("profile_topN.json", "profile_topN.md", "env_report.json")}
        written[jobs]["stdout"] = done.stdout.replace(str(out), "OUT").encode()
    assert written["1"] == written["3"]


def test_a_truncated_rank_read_in_parallel_is_named_or_kept_out(base: dict[str, Any],
                                                                tmp_path: Path) -> None:
    run = tmp_path / "run"
    three_ranks(base, run, {r: f"trace-TP-{r}.json.gz" for r in SCALE})
    cut = run / "trace-TP-1.json.gz"
    cut.write_bytes(cut.read_bytes()[: cut.stat().st_size // 2])
    refused = roofline("import", "torch", run, "--out", tmp_path / "r", "--jobs", "2")
    assert refused.returncode == 1 and "trace-TP-1.json.gz" in one_line(refused)
    assert not (tmp_path / "r").exists()
    done = roofline("import", "torch", run, "--out", tmp_path / "r", "--jobs", "2",
                    "--skip-bad-ranks")
    assert done.returncode == 0, done.stderr
    assert [t["rank"] for t in load(tmp_path / "r")["x_roofline"]["ranks"]["traces"]] == [0, 2]


@pytest.fixture(scope="module")
def dask_scheduler():
    """A 2-worker Dask cluster on this machine (worker processes, as on a real cluster)."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster:
        yield cluster.scheduler_address


@pytest.mark.parametrize("rank", [None, 2])
def test_ranks_read_by_dask_workers_give_the_same_top_n_byte_for_byte(
        base: dict[str, Any], tmp_path: Path, dask_scheduler: str, rank: int | None) -> None:
    """Issue 38 item 2: --dask ADDRESS sends each rank's import to a Dask cluster's workers
    (they read the traces at the paths given) and merges here: the files written and the lines
    printed are those of --jobs 1."""
    run = tmp_path / "run"
    three_ranks(base, run, {r: f"trace-TP-{r}.json.gz" for r in SCALE})
    pick = ["--rank", str(rank)] if rank is not None else []
    written = {}
    for how in (["--jobs", "1"], ["--dask", dask_scheduler]):
        out = tmp_path / how[0].lstrip("-")
        done = roofline("import", "torch", run, "--out", out, *how, *pick)
        assert done.returncode == 0, done.stderr
        written[how[0]] = {name: (out / name).read_bytes()
                           for name in ("profile_topN.json", "profile_topN.md",
                                        "env_report.json")}
        written[how[0]]["stdout"] = done.stdout.replace(str(out), "OUT").encode()
    assert written["--jobs"] == written["--dask"]


def test_dask_without_the_extra_or_with_a_bad_address_is_refused(tmp_path: Path) -> None:
    """Without dask.distributed installed, --dask says which extra to install (exit 2, one
    line); an address that is not a scheduler's is refused the same way, before anything is
    read; --dask and --jobs are one or the other."""
    hide = ("import importlib.util as u, sys; f = u.find_spec; "
            "u.find_spec = lambda n, *a: None if n == 'distributed' else f(n, *a); "
            "from roofline_tui.cli import main; raise SystemExit(main(sys.argv[1:]))")
    trace = need(SOURCE)
    done = subprocess.run([sys.executable, "-c", hide, "import", "torch", str(trace), "--out",
                           str(tmp_path / "r"), "--dask", "tcp://127.0.0.1:8786"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert one_line(done) == ("roofline import torch: error: --dask needs the dask extra "
                              "(dask.distributed), not installed: "
                              "pip install 'roofline_tui[dask]'")
    assert not (tmp_path / "r").exists()
    both = roofline("import", "torch", trace, "--out", tmp_path / "r", "--jobs", "2", "--dask",
                    "tcp://127.0.0.1:8786")
    assert both.returncode == 2 and "not allowed with argument" in both.stderr
    pytest.importorskip("distributed")
    bad = roofline("import", "torch", trace, "--out", tmp_path / "r", "--dask", "host:port")
    assert bad.returncode == 2
    assert "--dask host:port: not a Dask scheduler's address" in one_line(bad)
    assert not (tmp_path / "r").exists()


def test_a_trace_a_dask_worker_cannot_open_is_named_as_given(tmp_path: Path) -> None:
    """A worker reads the absolute path; its line names the trace as it was given, and says
    that the workers read it at that path (the storage must be shared)."""
    from roofline_tui.importers.dask_ranks import _as_given
    from roofline_tui.importers.ranks import RankRead

    given = Path("run") / "trace-TP-1.json.gz"
    sent = given.absolute()
    read = _as_given(RankRead(sent, problem=f"{sent}: file not found"), given, sent)
    assert read.path == given
    assert read.problem is not None
    assert read.problem.startswith(f"{given}: file not found (read by a Dask worker: every "
                                   "worker must see the trace at this path")
    fatal = _as_given(RankRead(sent, fatal="trace-TP-1.json.gz: no GPU kernel"), given, sent)
    assert fatal.fatal == "trace-TP-1.json.gz: no GPU kernel"


def test_ranks_are_handed_to_workers_named_rank_first_then_largest_first(
        tmp_path: Path) -> None:
    """Issue 38: the rank ``--rank`` names goes first (its Top-N is built too), then the
    largest traces (a long read started last leaves the other workers idle); equal sizes
    keep their order, a trace that cannot be sized goes last."""
    from roofline_tui.importers.ranks import submission_order

    sizes = {"trace-TP-0.json": 10, "trace-TP-1.json": 30, "trace-TP-2.json": 20,
             "trace-TP-3.json": 20}
    paths = []
    for name, size in sizes.items():
        (tmp_path / name).write_bytes(b" " * size)
        paths.append(tmp_path / name)
    gone = tmp_path / "trace-TP-4.json"
    paths.insert(0, gone)
    names = [p.name for p in submission_order(paths, None)]
    assert names == ["trace-TP-1.json", "trace-TP-2.json", "trace-TP-3.json",
                     "trace-TP-0.json", "trace-TP-4.json"]
    names = [p.name for p in submission_order(paths, 0)]
    assert names == ["trace-TP-0.json", "trace-TP-1.json", "trace-TP-2.json",
                     "trace-TP-3.json", "trace-TP-4.json"]


class _Shared(list[float]):
    """Stands for the pool's shared ``multiprocessing.Array``: a list with a lock."""

    def get_lock(self) -> Any:
        import threading

        return threading.Lock()


def test_a_rank_beaten_by_one_another_worker_read_is_not_analysed(
        base: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 38: the workers share the slowest rank summed so far; a rank that is already
    beaten (less GPU time, or as much and a higher rank) comes back without its Top-N, a
    rank that beats it is built and becomes the slowest; ``--rank`` always builds its rank."""
    from roofline_tui.importers import ranks
    from roofline_tui.importers.torch import DEFAULT_OPTIONS

    path = write(tmp_path / "trace-TP-2.json.gz", rank_trace(base, 2))
    total = per_launch(rank_trace(base, 2))[1]

    def read(shared: list[float], wanted: int | None = None) -> ranks.RankRead:
        monkeypatch.setattr(ranks, "_SLOWEST", shared)
        return ranks.read_rank(path, DEFAULT_OPTIONS, None, wanted)

    slower = _Shared([total * 2, 5.0])
    got = read(slower)
    assert got.kernels is not None and got.result is None
    assert list(slower) == [total * 2, 5.0]
    tie_lower = _Shared([got.kernels.total_us, 1.0])
    assert read(tie_lower).result is None
    tie_higher = _Shared([got.kernels.total_us, 3.0])
    assert read(tie_higher).result is not None
    assert list(tie_higher) == [got.kernels.total_us, 2.0]
    faster = _Shared([total / 2, 0.0])
    assert read(faster).result is not None and list(faster) == [got.kernels.total_us, 2.0]
    unset = _Shared([0.0, -1.0])
    assert read(unset).result is not None and list(unset)[1] == 2.0
    assert read(_Shared([total * 2, 5.0]), wanted=2).result is not None
    assert got.kernels.total_us == pytest.approx(total, rel=1e-9)
