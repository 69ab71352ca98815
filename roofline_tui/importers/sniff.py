"""What a profiler file is, from one table of rules, and what to run when it is not the kind the
user asked to import.

Every ``roofline import`` command asks :func:`refusal` before it parses anything, so a file of
another tool (an ``.nsys-rep``, a JAX ``.xplane.pb``, an nsys SQLite export given to ``import
torch``) is named in one line with the command that would read it, never a decode error.

Each rule is one row of :data:`RULES`: a test on the file's head (a name suffix, magic bytes,
byte strings, SQLite table names, JSON keys, CSV header cells, text lines) and the answer: what
the file is, which ``import`` command reads it (``None``: none does) and what to run instead.
The first row that matches wins. The head read is bounded (:data:`HEAD_BYTES`, a gzip member
inflated to at most that many bytes) and only regular files are opened.

An SQLite file no command can read as it is gets a row of its own, refused by every command
with what is wrong and what to do (``damaged`` rows): cut off short of what its header
declares, a rollback journal left beside it by a writer that stopped mid-write, a
``-wal``/``-shm``/``-journal`` beside it that is not a file, or gzipped. A database with a
``-wal`` beside it is sniffed with the log read (in a read-only folder too), as it is imported.
"""

from __future__ import annotations

import csv
import gzip
import io
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

from roofline_tui.core import store
from roofline_tui.core.textsafe import printable

HEAD_BYTES = 64 * 1024
SQLITE_MAGIC = b"SQLite format 3\x00"
GZIP_MAGIC = b"\x1f\x8b"
SQLITE_SNIFF_SECONDS = 2.0

# the importers, by their subcommand name
NSYS, ROCPROF, TORCH, RPD, PROTON = "nsys", "rocprofv3", "torch", "rpd", "proton"

_NSYS_EXPORT = ("run `nsys export --type sqlite -o run.sqlite run.nsys-rep` and `roofline "
                "import nsys run.sqlite`, or `nsys stats --report cuda_gpu_kern_sum "
                "run.nsys-rep > kern.txt` and `roofline import nsys kern.txt`")
_COUNTERS = "give it to `roofline analyze --counters`"


@dataclass(frozen=True)
class Rule:
    """One row: ``test`` names how ``pattern`` is matched (every item must match)."""

    kind: str
    test: str  # "suffix" | "magic" | "bytes" | "sqlite" | "json" | "csv" | "text"
    pattern: tuple[str, ...]
    what: str
    reader: str | None  # the `roofline import` subcommand that reads it; None: none does
    instead: str  # what to run when the file was given to another command
    damaged: bool = False  # a file no command reads as it is: the line says what is wrong


RULES: tuple[Rule, ...] = (
    Rule("nsys-rep", "suffix", (".nsys-rep",), "an Nsight Systems report (.nsys-rep)", None,
         _NSYS_EXPORT),
    Rule("qdrep", "suffix", (".qdrep",), "an Nsight Systems report (.qdrep, nsys 2021 and "
         "older)", None, _NSYS_EXPORT.replace("run.nsys-rep", "run.qdrep")),
    Rule("ncu-rep", "suffix", (".ncu-rep",), "an Nsight Compute report (.ncu-rep: hardware "
         "counters, no timeline)", None, _COUNTERS),
    Rule("xplane", "suffix", (".xplane.pb",), "a JAX/XLA profile (XSpace protobuf, "
         ".xplane.pb)", None, "not supported: this tool reads PyTorch (Kineto), rocprofv3 and "
         "Nsight Systems profiles; profile the run with one of them"),
    Rule("xplane-bytes", "bytes", ("/host:metadata",), "a JAX/XLA profile (XSpace protobuf)",
         None, "not supported: this tool reads PyTorch (Kineto), rocprofv3 and Nsight Systems "
         "profiles; profile the run with one of them"),
    Rule("sqlite-truncated", "sqlite-damage", ("truncated",), "a truncated SQLite database",
         None, "the file was cut off (a full disk, a copy or download that did not finish); "
         "export or copy it again and import the new file", damaged=True),
    Rule("sqlite-journal", "sqlite-damage", ("journal",), "an SQLite database its writer did "
         "not finish", None, "a rollback journal left beside it means the program writing "
         "it was killed mid-write (or is still at work), so it may be incomplete; let the "
         "writer finish, or export it again, and import the new file", damaged=True),
    Rule("sqlite-sibling", "sqlite-damage", ("sibling",), "an SQLite database with an odd "
         "file beside it", None, "SQLite reads a -wal, -shm or -journal beside a database as "
         "part of it; move that one away, or copy the database alone, and import it again",
         damaged=True),
    Rule("sqlite-gzip", "gzip", ("SQLite format 3",), "a gzipped SQLite database", None,
         "run `gunzip -k {name}` and import the database it leaves (a gzipped "
         "rocmProfileData trace: `roofline import rpd` reads it as it is)", damaged=True),
    Rule("nsys-sqlite", "sqlite", ("CUPTI_ACTIVITY_KIND_KERNEL",), "an Nsight Systems SQLite "
         "export", NSYS, "import it with `roofline import nsys`"),
    Rule("nsys-sqlite-nokernels", "sqlite", ("TARGET_INFO_SESSION_START_TIME",), "an Nsight "
         "Systems SQLite export", NSYS, "import it with `roofline import nsys`"),
    Rule("rocpd", "sqlite", ("rocpd_kernel_dispatch",), "a rocprofv3 rocpd database",
         ROCPROF, "import it with `roofline import rocprofv3`"),
    Rule("rocpd-views", "sqlite", ("kernels",), "a rocpd database (a `kernels` view)", ROCPROF,
         "import it with `roofline import rocprofv3`"),
    Rule("rpd", "sqlite", ("rocpd_op", "rocpd_string"), "a rocmProfileData trace (.rpd)", RPD,
         "import it with `roofline import rpd`"),
    Rule("sqlite", "magic", ("SQLite format 3",), "an SQLite database with neither Nsight "
         "Systems tables (CUPTI_ACTIVITY_KIND_KERNEL) nor rocpd's `kernels` view", None,
         "import the profiler's own export instead"),
    Rule("rocprofv3-json", "json", ('"rocprofiler-sdk-tool"',), "a rocprofv3 --output-format "
         "json file", ROCPROF, "import it with `roofline import rocprofv3`"),
    Rule("kineto", "json", ('"traceEvents"',), "a PyTorch profiler (Kineto) trace", TORCH,
         "import it with `roofline import torch`"),
    # rpd2tracing.py writes a bare JSON array whose GPU processes are named "GPU<n>" and whose
    # ops carry a "desc" argument (a Kineto array may name a process "GPU 0" too: no "desc")
    Rule("rpd-json", "json", ('"process_name"', '"GPU', '"desc":"'), "a rocmProfileData chrome-trace "
         "export (rpd2tracing JSON)", RPD, "import it with `roofline import rpd`"),
    Rule("proton", "json", ('"frame"', '"metrics"', '"children"'), "a Triton Proton profile "
         "(hatchet JSON)", PROTON, "import it with `roofline import proton`"),
    Rule("nsys-gpu-trace", "csv", ("start(ns)", "duration(ns)", "corrid", "name"),
         "an Nsight Systems cuda_gpu_trace CSV (one row per launch)", NSYS,
         "import it with `roofline import nsys`"),
    Rule("nsys-kern-sum", "text", (r"^\W*Time ?\(%\)",), "an Nsight Systems kernel summary "
         "(nsys stats)", NSYS, "import it with `roofline import nsys`"),
    Rule("nsys-console", "text", (r"^\s*\[\s*\d+\s*/\s*\d+\s*\]\s*Executing\s+'",),
         "an `nsys profile --stats=true` console log", NSYS,
         "import it with `roofline import nsys`"),
    Rule("rocprofv3-summary", "text", (r"^ROCPROFV3 [A-Z_]* ?SUMMARY:",), "a rocprofv3 "
         "--summary report", ROCPROF, "import it with `roofline import rocprofv3`"),
    Rule("nvprof", "text", (r"^==\d+== (NVPROF is profiling|Profiling result)",),
         "an nvprof log (nvprof does not profile Ampere or newer GPUs)", None,
         "profile the run with `nsys profile` and import its `nsys stats` output with "
         "`roofline import nsys`"),
    Rule("ncu-log", "text", (r"^==PROF== ", r'^"ID","Process ID"'), "an Nsight Compute "
         "(ncu / nv-nsight-cu-cli) CSV log (counters per kernel)", None, _COUNTERS),
    Rule("ncu-csv", "csv", ("id", "kernelname", "metricname", "metricvalue"), "an Nsight "
         "Compute CSV (counters per kernel)", None, _COUNTERS),
    # SPM samples name dispatches only, never a kernel: no reader can tie them to one
    Rule("rocprofv3-spm", "csv", ("dispatchid", "countername", "countervalue", "!kernelname"),
         "a rocprofv3 streaming-performance-monitor (SPM) CSV: counter samples by dispatch id "
         "with no kernel names, which no command can tie to a kernel", None,
         "collect per-kernel counters with `rocprofv3 --pmc … --kernel-trace` and give its "
         "counter_collection.csv to `roofline analyze --counters`"),
    Rule("rocprofv3-counters", "csv", ("countername", "countervalue"), "a rocprofv3 "
         "counter_collection.csv (counters)", None, _COUNTERS),
    Rule("rocprof-compute-pmc", "csv", ("dispatchid", "kernelname", "gpuid", "gridsize"),
         "a rocprof-compute pmc_perf.csv (counters)", ROCPROF,
         _COUNTERS + " (its kernel times, when it has them: `roofline import rocprofv3`)"),
    Rule("rocprofv3-kernel-trace", "csv", ("kernelname", "starttimestamp"), "a rocprofv3 "
         "kernel_trace.csv", ROCPROF, "import it with `roofline import rocprofv3`"),
    Rule("rocprofv3-memory-copy", "csv", ("direction", "sourceagentid"), "a rocprofv3 "
         "memory_copy_trace.csv", ROCPROF, "import it with `roofline import rocprofv3`"),
    Rule("rocprofv3-stats", "csv", ("name", "calls", "totaldurationns"), "a rocprofv3 --stats "
         "table", ROCPROF, "import it with `roofline import rocprofv3`"),
    Rule("rocprof-legacy", "csv", ("kernelname", "beginns"), "a rocprof results.csv", ROCPROF,
         "import it with `roofline import rocprofv3`"),
    Rule("rocprof-pmc", "csv", ("kernelname", "grd", "fetchsize"), "a rocprof --pmc counter "
         "file (one row per dispatch, no kernel times)", None, _COUNTERS),
)


@dataclass(frozen=True)
class Head:
    """What the rules look at: the name, the first bytes (inflated when gzipped), and the
    tables of an SQLite database."""

    name: str
    raw: bytes
    text: str
    tables: frozenset[str]
    binary: bool
    gzipped: bool = False  # ``raw`` and ``text`` are the inflated head of a gzip file
    damage: str = ""  # an SQLite file's SqliteState.damage
    detail: str = ""  # the figures behind it


def head_text(path: Path, n: int = 4096) -> str:
    """The first ``n`` characters of a (possibly gzipped) text file; ``""`` when unreadable."""
    try:
        with open(path, "rb") as fh:
            if fh.read(2) == b"\x1f\x8b":
                fh.seek(0)
                with gzip.GzipFile(fileobj=fh) as gz:
                    data = gz.read(n)
            else:
                fh.seek(0)
                data = fh.read(n)
    except (OSError, EOFError, zlib.error):
        return ""
    return data.decode("utf-8", "replace")


def _inflate(raw: bytes) -> bytes:
    try:
        out = zlib.decompressobj(wbits=31).decompress(raw, HEAD_BYTES)
    except zlib.error:
        return raw
    return bytes(out)


def _sqlite_damage(path: Path) -> tuple[str, str]:
    """(what keeps an SQLite file from being read as it is, the figures), or ``("", "")``."""
    from roofline_tui.core.measured.sqlite_ro import sqlite_state

    state = sqlite_state(path)
    return state.damage, state.detail


def _sqlite_tables(path: Path) -> frozenset[str]:
    # only for a file that starts as an SQLite database: the engine's reader is imported here
    import sqlite3

    from roofline_tui.core.measured.sqlite_ro import open_sqlite_ro

    try:
        con, _budget = open_sqlite_ro(path, SQLITE_SNIFF_SECONDS)
    except sqlite3.Error:
        return frozenset()
    try:
        return frozenset(str(r[0]) for r in con.execute(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') LIMIT 100000"))
    except sqlite3.Error:
        return frozenset()
    finally:
        con.close()


def read_head(path: Path) -> Head | None:
    """The head of a regular file, or ``None`` when it cannot be read (the importer then says
    why in its own words)."""
    path = Path(path)
    try:
        raw = store.read_bytes(path, max_bytes=HEAD_BYTES, head=True)
    except store.ReadProblem:
        return None
    tables: frozenset[str] = frozenset()
    damage = detail = ""
    if raw.startswith(SQLITE_MAGIC):
        damage, detail = _sqlite_damage(path)
        tables = frozenset() if damage else _sqlite_tables(path)
    gzipped = raw.startswith(GZIP_MAGIC)
    body = store.utf8_of(_inflate(raw) if gzipped else raw)  # UTF-16 BOM
    sample = body[:4096]
    binary = b"\x00" in sample or _not_text(sample)
    return Head(path.name.lower(), body, body.decode("utf-8", "replace").lstrip("\ufeff"),
                tables, binary, gzipped, damage, detail)


def _not_text(sample: bytes) -> bool:
    """True for bytes that are neither UTF-8 nor mostly printable."""
    try:
        sample.decode("utf-8")
        return False
    except UnicodeDecodeError as exc:
        if exc.start >= len(sample) - 4:  # a character cut by the sample's end
            return False
    printable_bytes = sum(32 <= b < 127 or b in (9, 10, 13) for b in sample)
    return printable_bytes < 0.9 * max(len(sample), 1)


def _norm(cell: str) -> str:
    """A header cell without case, spaces or punctuation but its unit's parentheses:
    ``Kernel_Name`` -> ``kernelname``, ``Start (ns)`` -> ``start(ns)``."""
    return re.sub(r"[^a-z0-9()]", "", cell.strip().strip('"').lower()).replace("()", "")


def _csv_cells(text: str) -> list[set[str]]:
    """The cells of the first lines, each line a set of normalised header names."""
    out: list[set[str]] = []
    lines = text.splitlines()[:60]
    try:
        for row in csv.reader(io.StringIO("\n".join(lines))):
            if len(row) > 1:
                out.append({_norm(c) for c in row})
    except csv.Error:
        pass
    return out


def matches(rule: Rule, head: Head) -> bool:
    """Whether ``rule`` holds for ``head``."""
    if rule.test == "suffix":
        return any(head.name.endswith(p) for p in rule.pattern)
    if rule.test == "magic":
        return all(head.raw.startswith(p.encode()) for p in rule.pattern)
    if rule.test == "bytes":
        return head.binary and all(p.encode() in head.raw[:4096] for p in rule.pattern)
    if rule.test == "sqlite":
        return bool(head.tables) and all(p in head.tables for p in rule.pattern)
    if rule.test == "sqlite-damage":
        return head.damage in rule.pattern
    if rule.test == "gzip":
        return head.gzipped and all(head.raw.startswith(p.encode()) for p in rule.pattern)
    if head.binary:
        return False
    if rule.test == "json":
        start = head.text.lstrip()[:1]
        return start in ("{", "[") and all(p in head.text[:HEAD_BYTES] for p in rule.pattern)
    if rule.test == "csv":  # a "!cell" item: a cell the header must not have
        return any(all((p[1:] not in cells) if p.startswith("!") else (p in cells)
                       for p in rule.pattern) for cells in _csv_cells(head.text))
    if rule.test == "text":
        return all(re.search(p, head.text, re.MULTILINE) for p in rule.pattern)
    raise ValueError(f"unknown sniff test {rule.test!r}")


def sniff(path: Path) -> Rule | None:
    """The first rule that holds for ``path``, or ``None`` (unknown, or unreadable)."""
    head = read_head(path)
    if head is None:
        return None
    return next((r for r in RULES if matches(r, head)), None)


@dataclass(frozen=True)
class Verdict:
    """What :func:`check` found: the rule that held (if any) and the refusal line (if any)."""

    rule: Rule | None
    refusal: str | None


def check(path: Path, reader: str, *, named: bool = True) -> Verdict:
    """The file's kind and, when it is a kind ``roofline import <reader>`` does not read, one
    line naming it and what to run instead. A file of no kind the table knows is left to the
    importer, unless it is binary. ``named``: the line starts with the file's name."""
    head = read_head(path)
    if head is None:
        return Verdict(None, None)
    rule = next((r for r in RULES if matches(r, head)), None)
    name = printable(Path(path).name, limit=120) + ": " if named else ""
    if rule is None:
        if head.binary:
            return Verdict(None, f"{name}binary data of a kind this tool does not know; "
                                 f"`roofline import {reader}` reads text or SQLite exports")
        return Verdict(None, None)
    if rule.reader == reader:
        return Verdict(rule, None)
    if rule.damaged:
        detail = f" ({printable(head.detail, limit=200)})" if head.detail else ""
        instead = rule.instead.replace("{name}", printable(Path(path).name, limit=120))
        return Verdict(rule, f"{name}{rule.what}{detail}; {instead}")
    return Verdict(rule, f"{name}{rule.what}, not for `roofline import {reader}`; "
                         f"{rule.instead}")


def refusal(path: Path, reader: str, *, named: bool = True) -> str | None:
    """The refusal line of :func:`check`, or ``None`` when ``reader`` may read the file."""
    return check(path, reader, named=named).refusal
