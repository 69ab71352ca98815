"""Live ingest of raw profiler traces: which files of a trace directory are complete, how they
group into profiling sessions, and what has already been ingested. ``roofline ingest`` (its
command line, :mod:`roofline_tui.cli.ingest`) imports and analyses what this module hands it.

A profiler writes its traces into a directory (``VLLM_TORCH_PROFILER_DIR``,
``SGLANG_TORCH_PROFILER_DIR``, ``torch.profiler.tensorboard_trace_handler``):

* **Files**: the trace files directly in the directory (``*.json``, ``*.json.gz``, nsys
  ``*.sqlite`` exports) and in its ``rank_<r>/`` sub-directories; hidden files, temp names and
  the JSON files a profile directory holds that are not traces are never candidates. A
  framework's ``capture_traces/`` sub-directory is not scanned: the torch importer finds it
  beside the trace it belongs to.
* **Completeness**: a file is taken once its size and mtime have not changed for the settle
  time *and* its content is whole — or at once when it is whole the first time it is seen and
  its end is sealed (a gzip stream's trailer: its CRC and length verified), as a file renamed
  into the directory is: a gzip stream decompressed to its end (streamed, bounded
  memory) holding one JSON document, a plain JSON document that begins with ``{``/``[`` and
  ends with ``}``/``]``, an SQLite file whose size is a whole number of pages with no journal
  beside it. A file that stays incomplete ``timeout`` seconds after it last changed is a
  failure (one line why).
* **Sessions**: the ranks of one profiling run become one round. A file's rank comes from its
  name (``…rank0…``, ``rank-3``, ``-TP-1``) or its ``rank_<r>/`` directory, as the torch
  importer reads it (:func:`roofline_tui.importers.ranks.rank_in_path`). Files whose names are
  the same once the rank is taken out belong to one session; a timestamp in the name (10 to 19
  digits, or seconds with a fraction: tensorboard's milliseconds, SGLang's profile id) may
  differ between ranks by up to :data:`SESSION_WINDOW_S`. A name without a rank is a session
  of its own.
* **State**: ``PROFILE/.ingest.json`` (written atomically) records every round made (its
  source files: path, size, sha256 of the bytes and of the trace's content, decompressed) and
  every failure. A trace whose bytes or content were ingested before (also under another name:
  a vLLM ``.json`` and the ``.json.gz`` compressed from it) is never imported again; a failure
  is not retried while the file keeps its size and mtime.

Nothing here writes into the trace directory: it is only listed, stat'ed and read.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import stat
import time
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from roofline_tui.core.layout import INGEST_STATE_NAME, ROUND_PREFIX, SOURCE_NAME
from roofline_tui.core.lazy_re import lazy_compile
from roofline_tui.core.store import (
    MAX_SMALL_BYTES,
    ReadProblem,
    atomic_write_text,
    check_regular,
    read_json,
    strict_json_dumps,
)
from roofline_tui.importers.ranks import rank_in_path

STATE_NAME = INGEST_STATE_NAME  # one name, the one core.rounds.source reads
STATE_VERSION = 1
SOURCE_VERSION = 1
DEFAULT_SETTLE_S = 2.0
DEFAULT_TIMEOUT_S = 60.0
POLL_S = 0.5
# ranks of one session whose name timestamps differ by at most this much (each rank's handler
# stamps its own file when it writes it)
SESSION_WINDOW_S = 120.0
READ_CHUNK = 1 << 20
# JSON files a trace directory may hold that are not traces
NOT_TRACES = frozenset({"profile_topN.json", "profile_roofline.json", "env_report.json",
                        "config.json", "generation_config.json", "tokenizer_config.json",
                        "execution_details.json", "source.json", STATE_NAME})
_TEMP_ENDINGS = (".tmp", ".temp", ".part", ".partial", ".swp", "~", ".crdownload")
_SQLITE_MAGIC = b"SQLite format 3\x00"
_RANK_DIR = lazy_compile(r"^(?:.*[_.-])?rank[_-]?\d{1,6}$", re.IGNORECASE)
# a timestamp in a name: 10-19 digits (s, ms, µs, ns since the epoch) or seconds.fraction
_STAMP = lazy_compile(r"(?<![0-9])(\d{10}\.\d{1,9}|\d{10,19})(?![0-9])")
PARTIAL_MARK = ".partial-"
_PARTIAL = lazy_compile(r"^\.round_\d+\.partial-[0-9a-z_]+$")
_NUMERIC_ROUND = lazy_compile(r"^round_(\d+)$")

Kind = Literal["torch", "nsys", "rocprofv3"]
# rocprofv3 writes <output dir>/<host>/<pid>_kernel_trace.csv (or <pid>_results.db with
# --output-format rocpd), with <pid>_memory_copy_trace.csv and <pid>_agent_info.csv beside it
ROCPROF_MAIN = ("_kernel_trace.csv", "_results.db")
ROCPROF_COMPANIONS = ("_memory_copy_trace.csv", "_agent_info.csv")


def kind_of(path: Path) -> Kind | None:
    """The importer a candidate file goes to, or None when it is no trace file."""
    name = path.name
    low = name.lower()
    if name.startswith((".", "#")) or low.endswith(_TEMP_ENDINGS) or name in NOT_TRACES:
        return None
    if low.endswith((".json", ".json.gz")):
        return "torch"
    if low.endswith(".sqlite"):
        return "nsys"
    if low.endswith(ROCPROF_MAIN):
        return "rocprofv3"
    return None


def rocprof_companions(main: Path) -> list[Path]:
    """The memory-copy and agent-info files of the same rocprofv3 run as ``main`` (same
    directory, same ``<pid>_`` prefix), those that exist."""
    for ending in ROCPROF_MAIN:
        if main.name.lower().endswith(ending):
            prefix = main.name[: -len(ending)]
            return [c for c in (main.with_name(prefix + e) for e in ROCPROF_COMPANIONS)
                    if c.is_file()]
    return []


def candidate_files(trace_dir: Path) -> list[Path]:
    """The trace files of ``trace_dir`` and of its ``rank_<r>/`` sub-directories, sorted;
    empty when the directory cannot be listed."""
    out: list[Path] = []
    try:
        entries = sorted(os.scandir(trace_dir), key=lambda e: e.name)
    except OSError:
        return out
    for entry in entries:
        try:
            is_dir = entry.is_dir()
        except OSError:
            continue
        if is_dir and _RANK_DIR.match(entry.name):
            with contextlib.suppress(OSError):
                out.extend(Path(e.path) for e in sorted(os.scandir(entry.path),
                                                        key=lambda e: e.name)
                           if _is_file(e) and kind_of(Path(e.path)) is not None)
        elif is_dir and not entry.name.startswith("."):  # rocprofv3's <host>/ directory
            with contextlib.suppress(OSError):
                out.extend(Path(e.path) for e in sorted(os.scandir(entry.path),
                                                        key=lambda e: e.name)
                           if _is_file(e) and kind_of(Path(e.path)) == "rocprofv3")
        elif not is_dir and _is_file(entry) and kind_of(Path(entry.path)) is not None:
            out.append(Path(entry.path))
    return out


def _is_file(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file()
    except OSError:
        return False


# --------------------------------------------------------------------------- completeness


@dataclass(frozen=True)
class Check:
    """What reading a file to its end found."""

    complete: bool
    reason: str  # why it is not complete ("" when it is)
    sha256: str = ""  # of the file's bytes
    content_sha256: str = ""  # of the trace's content (the decompressed bytes of a gzip)
    size: int = 0
    sealed: bool = False  # its end is verified (a gzip trailer's CRC and length), not guessed


class _Tail:
    """The first and last non-whitespace bytes of a stream, and its hash."""

    def __init__(self) -> None:
        self.first = b""
        self.last = b""
        self.final = b""  # the very last byte (whitespace included)
        self.hash = hashlib.sha256()

    def feed(self, data: bytes) -> None:
        if not data:
            return
        self.hash.update(data)
        self.final = data[-1:]
        stripped = data.strip()
        if stripped:
            if not self.first:
                self.first = stripped[:1]
            self.last = stripped[-1:]

    def csv_problem(self) -> str | None:
        """A CSV table is whole when it has a row and ends with its line's newline (a writer
        flushes whole lines; a cut file ends mid-row)."""
        if not self.first:
            return "is empty"
        if self.final not in (b"\n", b"\r"):
            return "the CSV ends mid-row (still being written?)"
        return None

    def json_problem(self) -> str | None:
        if self.first == b"\xef":  # a UTF-8 byte-order mark
            self.first = b"{"
        if self.first not in (b"{", b"["):
            return "does not begin like a JSON document" if self.first else "is empty"
        if self.last not in (b"}", b"]"):
            return "the JSON document ends early (still being written?)"
        return None


def _gzip_check(fh: Any, tail: _Tail, raw: Any) -> str | None:
    """Decompress every member of a gzip file to its end, in bounded memory; the reason when
    it does not end."""
    d = zlib.decompressobj(wbits=31)
    members = 0
    pending = b""
    while True:
        data = pending or fh.read(READ_CHUNK)
        if not pending:
            raw.update(data)
        pending = b""
        if not data:
            break
        if d.eof:  # a new member (or trailing padding)
            if not data.strip(b"\x00"):
                continue
            d = zlib.decompressobj(wbits=31)
        try:
            while data:
                tail.feed(d.decompress(data, READ_CHUNK))
                if d.eof:
                    members += 1
                    pending = d.unused_data
                    break
                data = d.unconsumed_tail
            while not d.eof and not pending:
                out = d.decompress(b"", READ_CHUNK)
                if not out:
                    break
                tail.feed(out)
                if d.eof:
                    members += 1
                    pending = d.unused_data
        except zlib.error as exc:
            return f"not a valid gzip stream ({exc})"
    if not d.eof or members == 0:
        return "the gzip stream ends early (still being written, or truncated)"
    return None


def check_complete(path: Path) -> Check:
    """Read ``path`` to its end (streamed) and say whether it is a whole trace."""
    why = check_regular(path)
    if why is not None:
        return Check(False, why)
    raw = hashlib.sha256()
    tail = _Tail()
    size = 0
    try:
        with open(path, "rb") as fh:
            head = fh.read(2)
            fh.seek(0)
            if path.name.lower().endswith((".sqlite", ".db")):
                problem = _sqlite_check(path, fh, raw)
                size = os.fstat(fh.fileno()).st_size
                if problem is not None:
                    return Check(False, problem, size=size)
                return Check(True, "", raw.hexdigest(), raw.hexdigest(), size)
            sealed = head == b"\x1f\x8b"
            if sealed:
                problem = _gzip_check(fh, tail, raw)
            else:
                problem = None
                while chunk := fh.read(READ_CHUNK):
                    raw.update(chunk)
                    tail.feed(chunk)
            size = fh.tell()
    except OSError as exc:
        return Check(False, f"cannot read it ({exc.strerror or exc})")
    if problem is None:
        problem = (tail.csv_problem() if path.name.lower().endswith(".csv")
                   else tail.json_problem())
    if problem is not None:
        return Check(False, problem, size=size)
    return Check(True, "", raw.hexdigest(), tail.hash.hexdigest(), size, sealed)


def _sqlite_check(path: Path, fh: Any, raw: Any) -> str | None:
    head = fh.read(100)
    raw.update(head)
    if len(head) < 100 or not head.startswith(_SQLITE_MAGIC):
        return "not an SQLite database (yet)"
    page = int.from_bytes(head[16:18], "big")
    page = 65536 if page == 1 else page
    while chunk := fh.read(READ_CHUNK):
        raw.update(chunk)
    size = fh.tell()
    if page < 512 or size % page:
        return "the SQLite file is not a whole number of pages (still being written?)"
    for suffix in ("-journal", "-wal"):
        if os.path.exists(f"{path}{suffix}"):
            return f"its {suffix[1:]} file is beside it (still being written)"
    return None


# --------------------------------------------------------------------------- sessions


@dataclass(frozen=True)
class Name:
    """What a trace's path says about its session."""

    template: str  # the relative path, rank and timestamp taken out
    rank: int | None
    stamp: float | None  # seconds since the epoch


def _stamp_seconds(text: str) -> float:
    if "." in text:
        return float(text)
    digits = len(text)
    scale = {10: 1.0, 13: 1e3, 16: 1e6, 19: 1e9}.get(digits)
    return int(text) / scale if scale else float(int(text))


def name_of(path: Path, trace_dir: Path) -> Name:
    try:
        rel = path.relative_to(trace_dir).as_posix()
    except ValueError:
        rel = path.name
    rank = rank_in_path(path)
    template = rel
    if rank is not None:
        token = re.compile(rf"(rank[_-]?|-TP-)0*{rank}(?!\d)", re.IGNORECASE)
        template = token.sub(lambda m: m.group(1) + "{rank}", rel)
    stamp: float | None = None
    if rank is not None:
        m = _STAMP.search(template)
        if m is not None:
            stamp = _stamp_seconds(m.group(1))
            template = template[:m.start()] + "{time}" + template[m.end():]
    return Name(template=template, rank=rank, stamp=stamp)


@dataclass
class Session:
    """The files of one profiling run (one per rank), in rank order."""

    key: str
    files: list[Path] = field(default_factory=list)
    ranks: list[int | None] = field(default_factory=list)

    @property
    def kind(self) -> Kind:
        return kind_of(self.files[0]) or "torch"

    def ranks_contiguous(self) -> bool:
        """Ranks 0..max all present (or no ranks at all)."""
        known = sorted(r for r in self.ranks if r is not None)
        return not known or known == list(range(known[-1] + 1))


def group_sessions(files: Sequence[Path], trace_dir: Path) -> list[Session]:
    """Files grouped into sessions (module docstring), in the order their first file sorts."""
    named = [(p, name_of(p, trace_dir)) for p in files]
    out: list[Session] = []
    by_template: dict[str, list[tuple[Path, Name]]] = {}
    for p, n in named:
        if n.rank is None or kind_of(p) != "torch":
            out.append(Session(key=n.template, files=[p], ranks=[n.rank]))
        else:
            by_template.setdefault(n.template, []).append((p, n))
    for template, members in by_template.items():
        members.sort(key=lambda pn: (pn[1].stamp or 0.0, pn[1].rank or 0, pn[0].name))
        current: Session | None = None
        start = 0.0
        for p, n in members:
            stamp = n.stamp or 0.0
            if current is None or n.rank in current.ranks or stamp - start > SESSION_WINDOW_S:
                start = stamp
                key = template if n.stamp is None else template.replace("{time}", f"{stamp:.3f}")
                current = Session(key=key)
                out.append(current)
            current.files.append(p)
            current.ranks.append(n.rank)
    for s in out:
        order = sorted(range(len(s.files)), key=lambda i: (s.ranks[i] or 0, s.files[i].name))
        s.files = [s.files[i] for i in order]
        s.ranks = [s.ranks[i] for i in order]
    out.sort(key=lambda s: min(str(p) for p in s.files))
    return out


# --------------------------------------------------------------------------- the watch


@dataclass
class Seen:
    """One candidate file as the polls saw it."""

    path: Path
    first_seen: float
    size: int
    mtime_ns: int
    changed_at: float  # when size or mtime last changed (or first seen)
    check: Check | None = None  # of the current (size, mtime); None: not read yet

    def stable(self, now: float, settle: float) -> bool:
        return now - self.changed_at >= settle


@dataclass
class Poll:
    """What one poll found: sessions whose every file is complete, and files given up on."""

    ready: list[tuple[Session, list[Check]]] = field(default_factory=list)
    failed: list[tuple[Path, int, str]] = field(default_factory=list)  # path, size, reason
    duplicates: list[tuple[Path, str]] = field(default_factory=list)  # path, where it went
    pending: int = 0  # files not yet complete


class Tracker:
    """The candidate files of a trace directory across polls: their stability, completeness
    and session. ``known`` decides what is already done (ingested or failed before)."""

    def __init__(self, trace_dir: Path, state: State, *, settle: float = DEFAULT_SETTLE_S,
                 timeout: float = DEFAULT_TIMEOUT_S) -> None:
        self.trace_dir = trace_dir
        self.state = state
        self.settle = settle
        self.timeout = timeout
        self.seen: dict[Path, Seen] = {}
        self.done: set[Path] = set()  # taken, failed or skipped in this run (same size/mtime)
        self._done_stat: dict[Path, tuple[int, int]] = {}

    def _observe(self, path: Path, now: float) -> Seen | None:
        try:
            st = os.stat(path)
        except OSError:
            self.seen.pop(path, None)
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        seen = self.seen.get(path)
        if seen is None:
            seen = Seen(path, now, st.st_size, st.st_mtime_ns, now)
            self.seen[path] = seen
        elif (seen.size, seen.mtime_ns) != (st.st_size, st.st_mtime_ns):
            seen.size, seen.mtime_ns, seen.changed_at, seen.check = (
                st.st_size, st.st_mtime_ns, now, None)
        return seen

    def mark_done(self, path: Path) -> None:
        seen = self.seen.pop(path, None)
        self.done.add(path)
        if seen is not None:
            self._done_stat[path] = (seen.size, seen.mtime_ns)

    def _is_done(self, path: Path) -> bool:
        if path not in self.done:
            return False
        try:
            st = os.stat(path)
        except OSError:
            return True
        if self._done_stat.get(path, (st.st_size, st.st_mtime_ns)) != (st.st_size,
                                                                         st.st_mtime_ns):
            self.done.discard(path)  # rewritten since: a new candidate
            return False
        return True

    def poll(self, now: float | None = None) -> Poll:
        """One look at the directory (``now``: ``time.monotonic()``)."""
        now = time.monotonic() if now is None else now
        result = Poll()
        complete: dict[Path, Check] = {}
        waiting: list[Path] = []
        for path in candidate_files(self.trace_dir):
            if self._is_done(path):
                continue
            seen = self._observe(path, now)
            if seen is None:
                continue
            if self.state.failed_before(path, seen.size, seen.mtime_ns):
                self.mark_done(path)
                continue
            stable = seen.stable(now, self.settle)
            # a file never seen to change is read at once: one whose end is sealed (a whole
            # gzip stream) arrived whole, by a rename or a copy finished between two looks
            first_look = seen.changed_at == seen.first_seen
            if seen.check is None and (stable or first_look):
                seen.check = check_complete(path)
                if not _unchanged(seen):  # it moved while being read: look again later
                    seen.check = None
            check = seen.check
            if check is not None and check.complete and (stable or check.sealed):
                where = self.state.ingested_as(check)
                if where is not None:
                    if not self.state.same_file_ingested(path, check):
                        result.duplicates.append((path, where))
                    self.mark_done(path)
                    continue
                complete[path] = check
                continue
            if now - seen.changed_at >= self.timeout:
                reason = check.reason if check is not None else "never stopped changing"
                result.failed.append((path, seen.size, f"{reason} ({_secs(self.timeout)} "
                                                        "after it last changed)"))
                self.mark_done(path)
                continue
            waiting.append(path)
            result.pending += 1
        self._sessions(complete, waiting, now, result)
        return result

    def _sessions(self, complete: dict[Path, Check], waiting: list[Path], now: float,
                  result: Poll) -> None:
        blocked = set(waiting)
        taken_content: dict[str, Path] = {}
        for session in group_sessions([*complete, *waiting], self.trace_dir):
            if any(p in blocked for p in session.files):
                continue
            if not session.ranks_contiguous():
                newest = max(self.seen[p].changed_at for p in session.files)
                if now - newest < self.timeout:  # a missing rank may still come
                    result.pending += len(session.files)
                    continue
            checks = [complete[p] for p in session.files]
            files, kept = [], []
            for p, c in zip(session.files, checks, strict=True):
                if c.content_sha256 in taken_content:  # the same trace twice in this poll
                    result.duplicates.append((p, taken_content[c.content_sha256].name))
                    self.mark_done(p)
                    continue
                taken_content[c.content_sha256] = p
                files.append(p)
                kept.append(c)
            if files:
                session.files = files
                session.ranks = [rank_in_path(p) for p in files]
                result.ready.append((session, kept))


def _unchanged(seen: Seen) -> bool:
    try:
        st = os.stat(seen.path)
    except OSError:
        return False
    return (st.st_size, st.st_mtime_ns) == (seen.size, seen.mtime_ns)


def _secs(s: float) -> str:
    return f"{s:g} s"


# --------------------------------------------------------------------------- state


class StateProblem(Exception):
    """``.ingest.json`` exists but cannot be used (one line why)."""


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def source_record(path: Path, check: Check) -> dict[str, Any]:
    return {"path": str(path.absolute()), "name": path.name, "size": check.size,
            "sha256": check.sha256, "content_sha256": check.content_sha256}


@dataclass
class State:
    """``PROFILE/.ingest.json``: the rounds made and the failures, across runs."""

    profile: Path
    rounds: list[dict[str, Any]] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)
    trace_dir: str = ""
    # the session being imported now (file names and when it began), for the dashboard's
    # progress row; empty between sessions
    importing: dict[str, Any] = field(default_factory=dict)
    _hashes: dict[str, str] = field(default_factory=dict)  # sha256 / content sha256 -> round
    _paths: set[tuple[str, str]] = field(default_factory=set)  # (path, sha256) ingested

    @property
    def path(self) -> Path:
        return self.profile / STATE_NAME

    @classmethod
    def load(cls, profile: Path) -> State:
        """The state of ``profile`` (empty when it has none yet), with the hashes of every
        round's ``source.json`` too (a state file lost or moved still skips what the rounds
        came from). Raises :class:`StateProblem` for a state file that cannot be read."""
        state = cls(profile=profile)
        path = state.path
        if path.exists() or path.is_symlink():
            try:
                doc = read_json(path, max_bytes=MAX_SMALL_BYTES)
            except ReadProblem as exc:
                raise StateProblem(f"{path}: {exc.reason}") from None
            if not isinstance(doc, dict) or not isinstance(doc.get("rounds", []), list) \
                    or not isinstance(doc.get("failures", []), list):
                raise StateProblem(f"{path}: not an ingest state (no rounds/failures lists)")
            state.rounds = [r for r in doc.get("rounds", []) if isinstance(r, dict)]
            state.failures = [f for f in doc.get("failures", []) if isinstance(f, dict)]
            state.trace_dir = str(doc.get("trace_dir") or "")
        for r in state.rounds:
            state._remember(r.get("round"), r.get("sources"))
        for round_dir in numeric_rounds(profile).values():
            try:
                src = read_json(round_dir / SOURCE_NAME, max_bytes=MAX_SMALL_BYTES)
            except ReadProblem:
                continue
            if isinstance(src, dict):
                state._remember(round_dir.name, src.get("files"))
        return state

    def _remember(self, round_name: object, sources: object) -> None:
        if not isinstance(sources, list):
            return
        for s in sources:
            if not isinstance(s, dict):
                continue
            for key in ("sha256", "content_sha256"):
                h = s.get(key)
                if isinstance(h, str) and h:
                    self._hashes.setdefault(h, str(round_name))
            if isinstance(s.get("path"), str) and isinstance(s.get("sha256"), str):
                self._paths.add((s["path"], s["sha256"]))

    def ingested_as(self, check: Check) -> str | None:
        """The round a trace with these bytes (or this content) was ingested as."""
        return self._hashes.get(check.sha256) or self._hashes.get(check.content_sha256)

    def same_file_ingested(self, path: Path, check: Check) -> bool:
        """This very file (same path, same bytes) was ingested before: not worth a line."""
        return (str(path.absolute()), check.sha256) in self._paths

    def failed_before(self, path: Path, size: int, mtime_ns: int) -> bool:
        absolute = str(path.absolute())
        return any(f.get("path") == absolute and f.get("size") == size
                   and f.get("mtime_ns") == mtime_ns for f in self.failures)

    def add_round(self, round_name: str, importer: str, session: str,
                  sources: list[dict[str, Any]]) -> None:
        self.rounds.append({"round": round_name, "importer": importer, "session": session,
                            "time": now_iso(), "sources": sources})
        self._remember(round_name, sources)
        self.save()

    def add_failure(self, path: Path, size: int, reason: str, *, sha256: str = "") -> None:
        try:
            mtime_ns: int | None = os.stat(path).st_mtime_ns
        except OSError:
            mtime_ns = None
        rec: dict[str, Any] = {"path": str(path.absolute()), "size": size, "mtime_ns": mtime_ns,
                               "reason": reason, "time": now_iso()}
        if sha256:
            rec["sha256"] = sha256
        self.failures.append(rec)
        self.save()

    def begin(self, names: list[str]) -> None:
        """Record the session being imported (saved at once: the dashboard shows it)."""
        self.importing = {"files": names, "since": now_iso()}
        self.save()

    def end(self) -> None:
        if self.importing:
            self.importing = {}
            self.save()

    def save(self) -> None:
        doc = {"version": STATE_VERSION, "trace_dir": self.trace_dir, "rounds": self.rounds,
               "failures": self.failures, "importing": self.importing}
        atomic_write_text(self.path, strict_json_dumps(doc, indent=2) + "\n")


# --------------------------------------------------------------------------- rounds


def numeric_rounds(profile: Path) -> dict[int, Path]:
    """``round_<N>`` directories of ``profile`` by N."""
    out: dict[int, Path] = {}
    try:
        names = os.listdir(profile)
    except OSError:
        return out
    for name in names:
        m = _NUMERIC_ROUND.match(name)
        if m and (profile / name).is_dir():
            out[int(m.group(1))] = profile / name
    return out


def next_round(profile: Path) -> int:
    """The next free round number: one past the highest ``round_<N>`` (0 when none). A
    name taken by anything (a file, a link) is skipped."""
    used = numeric_rounds(profile)
    n = max(used) + 1 if used else 0
    while os.path.lexists(profile / f"{ROUND_PREFIX}{n}"):
        n += 1
    return n


def partial_dir(profile: Path, n: int) -> Path:
    """A new, empty, hidden directory inside ``profile`` to build round ``n`` in (the mode a
    directory made by hand gets: 0777 less the umask)."""
    import secrets

    while True:
        path = profile / f".{ROUND_PREFIX}{n}{PARTIAL_MARK}{secrets.token_hex(4)}"
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue


def remove_partials(profile: Path) -> list[str]:
    """Remove the partial round directories an interrupted ingest left (only ours, by name)."""
    removed: list[str] = []
    try:
        names = os.listdir(profile)
    except OSError:
        return removed
    for name in names:
        if _PARTIAL.match(name):
            shutil.rmtree(profile / name, ignore_errors=True)
            removed.append(name)
    return removed


def place_round(partial: Path, profile: Path, n: int) -> Path:
    """Rename ``partial`` to ``round_<n>`` (the next free number from ``n`` on, should a
    round have appeared meanwhile); never onto anything that exists."""
    while True:
        target = profile / f"{ROUND_PREFIX}{n}"
        if not os.path.lexists(target):
            try:
                os.rename(partial, target)
                return target
            except OSError:
                if not os.path.lexists(target):
                    raise
        n += 1


def write_source(round_dir: Path, *, importer: str, session: str, trace_dir: Path,
                 sources: list[dict[str, Any]]) -> Path:
    doc = {"version": SOURCE_VERSION, "ingested_by": "roofline ingest", "importer": importer,
           "trace_dir": str(trace_dir.absolute()), "session": session, "time": now_iso(),
           "files": sources}
    return atomic_write_text(round_dir / SOURCE_NAME, strict_json_dumps(doc, indent=2) + "\n")


def total_size(checks: Iterable[Check]) -> int:
    return sum(c.size for c in checks)
