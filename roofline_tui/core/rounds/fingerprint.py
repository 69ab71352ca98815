"""Fingerprints of a round's inputs, and a cache of per-round results keyed by them.

A live view recomputes one round when one of its files changes, and that recompute compares the
round with every sibling round. Analysing every sibling again each time makes a recompute grow
with the number of rounds. Instead each sibling's result is kept under the fingerprint of the
inputs it was computed from, and re-analysed only when that fingerprint changes.

A file's fingerprint is its size and mtime, plus its content hash when it is small (so a
change within one mtime tick is still seen), or its ctime and inode when it is large. The mtime
counts even for hashed files: whether a stored artifact is current is judged by mtimes.

A round's fingerprint covers everything its analysis may read:

* every file under the round directory (Top-N, stored artifact, serving metrics, ``counters/``);
* the places discovery looks for ``env_report.json`` and ``config.json`` (the round directory
  and its parents), so a file appearing in a nearer place counts even before it is read;
* ``EVAL_DIR/kernels/`` (stage-B task dirs and roofline reports beside ``profile/``);
* explicit sources (peaks, env, model config, shapes, counters, priors) and any file an earlier
  analysis reported reading (``extra``);
* a ``salt``: the options and sources the analysis ran with.

Directory walks are bounded; past the bound the directory's own mtime stands in for the rest.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable
from pathlib import Path
from typing import Generic, TypeVar

from roofline_tui.core import store
from roofline_tui.core.layout import (
    ARTIFACT_JSON,
    CONFIG_NAME,
    COUNTERS_DIR,
    ENV_NAME,
    PARENT_LEVELS,
    TOPN_NAME,
)

SMALL_FILE_BYTES = 1 << 20      # hashed whole up to this size; larger files by their stat
WALK_MAX_ENTRIES = 4096         # files and directories looked at per walked tree
WALK_MAX_DEPTH = 6
DISCOVERED_NAMES = (ENV_NAME, CONFIG_NAME)

Fingerprint = tuple[Hashable, ...]


def file_fingerprint(path: Path | str, *, walk: bool = True) -> Fingerprint:
    """What identifies the content of ``path`` now. A missing file has a fingerprint too (its
    absence), so a file that appears later changes it. A directory is walked when ``walk``;
    inside a walk, a directory reached through a symlink is identified by its stat only, so a
    link loop (``round_0/loop -> ..``) cannot recurse."""
    p = os.fspath(path)
    try:
        st = os.stat(p)
    except OSError:  # missing, or a symlink loop (ELOOP)
        return (p, "absent")
    if stat.S_ISDIR(st.st_mode):
        if not walk:
            return (p, "linked dir", st.st_mtime_ns, st.st_ino)
        return (p, "dir", *tree_fingerprint(Path(p)))
    if not stat.S_ISREG(st.st_mode):
        return (p, "other", st.st_mode)
    if st.st_size <= SMALL_FILE_BYTES:
        try:  # the bounded reader: a FIFO swapped in after the stat is refused, not waited on
            data = store.read_bytes(p, max_bytes=SMALL_FILE_BYTES + 1, head=True)
        except OSError:
            return (p, "unreadable", st.st_size, st.st_mtime_ns)
        return (p, len(data), st.st_mtime_ns, hashlib.blake2b(data, digest_size=16).digest())
    return (p, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def tree_fingerprint(root: Path) -> Fingerprint:
    """Every file under ``root`` (bounded walk, sorted), each by :func:`file_fingerprint`."""
    out: list[Hashable] = []
    seen = 0
    stack: list[tuple[Path, int]] = [(root, 0)]
    while stack:
        d, depth = stack.pop()
        try:
            with os.scandir(d) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            out.append((os.fspath(d), "unlistable"))
            continue
        for e in entries:
            seen += 1
            if seen > WALK_MAX_ENTRIES:
                try:
                    out.append((os.fspath(d), "truncated", os.stat(d).st_mtime_ns))
                except OSError:
                    out.append((os.fspath(d), "truncated"))
                return tuple(out)
            try:
                is_dir = e.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if is_dir:
                out.append((e.path, "d"))  # an empty task directory is an input too
                if depth < WALK_MAX_DEPTH:
                    stack.append((Path(e.path), depth + 1))
                else:
                    out.append((e.path, "deep"))
            else:
                out.append(file_fingerprint(e.path, walk=False))
    return tuple(out)


def round_fingerprint(round_dir: Path, *, extra: Iterable[Path | str | None] = (),
                      salt: Hashable = None) -> Fingerprint:
    """The fingerprint of everything an analysis of ``round_dir`` may read (module docstring)."""
    round_dir = Path(round_dir)
    parts: list[Hashable] = [salt, tree_fingerprint(round_dir)]
    try:
        here = round_dir.resolve()
    except OSError:
        here = round_dir
    for d in [*list(here.parents)[:PARENT_LEVELS]]:
        for name in DISCOVERED_NAMES:
            parts.append(file_fingerprint(d / name))
    if here.parent.name == "profile":  # EVAL_DIR/profile/round_<R>: EVAL_DIR/kernels/
        kernels = here.parent.parent / "kernels"
        parts.append(file_fingerprint(kernels))
    for p in sorted({os.fspath(p) for p in extra if p is not None}):
        parts.append(file_fingerprint(p))
    return tuple(parts)


# --------------------------------------------------------------------------- staleness


def _artifact_inputs(round_dir: Path) -> list[Path]:
    """The files of the round itself that its analysis reads: the Top-N and the counter files
    of ``counters/`` (shared inputs — env_report, config.json, peaks — are fingerprinted by
    :func:`round_fingerprint`)."""
    files = [round_dir / TOPN_NAME]
    try:
        files += sorted(p for p in (round_dir / COUNTERS_DIR).iterdir())[:256]
    except OSError:
        pass
    return files


def artifact_staleness(round_dir: Path, *, computed_from: Fingerprint | None = None,
                       inputs_now: Fingerprint | None = None) -> str | None:
    """The one staleness rule: ``None`` when the stored artifact of ``round_dir`` is current,
    else why it is not.

    When the fingerprint of the inputs the artifact was computed from is known
    (``computed_from``, with ``inputs_now`` taken the same way), the fingerprints decide: any
    change of content counts, even within one mtime tick. Otherwise (an artifact another
    process wrote) modification times are the fallback: the artifact must be at least as new
    as the round's Top-N and counter files."""
    path = round_dir / ARTIFACT_JSON
    try:
        written = path.stat().st_mtime
    except OSError:
        return f"no {ARTIFACT_JSON}"
    if computed_from is not None and inputs_now is not None:
        return None if computed_from == inputs_now else (
            f"the inputs of {ARTIFACT_JSON} changed since it was computed: re-analysed")
    for f in _artifact_inputs(round_dir):
        try:
            if f.stat().st_mtime > written:
                return f"{ARTIFACT_JSON} is older than {f.name}: re-analysed"
        except FileNotFoundError:
            continue
        except OSError as exc:
            return f"{f.name} unreadable ({type(exc).__name__}): re-analysed"
    return None


def inputs_changed(computed_from: Fingerprint | None, inputs_now: Fingerprint) -> bool:
    """Whether a result computed from ``computed_from`` is stale now (no known fingerprint:
    it is)."""
    return computed_from is None or computed_from != inputs_now


V = TypeVar("V")


class RoundCache(Generic[V]):
    """Per-round results kept under their inputs' fingerprint (one entry per round directory,
    the latest; at most ``max_rounds`` directories, least recently used dropped first). Safe to
    share between analysis threads."""

    def __init__(self, max_rounds: int = 256) -> None:
        self.max_rounds = max_rounds
        self._entries: OrderedDict[str, tuple[Fingerprint, V]] = OrderedDict()
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    @staticmethod
    def _key(round_dir: Path) -> str:
        return os.path.realpath(round_dir)

    def get(self, round_dir: Path, fingerprint: Fingerprint) -> V | None:
        """The result stored for ``round_dir`` if it was computed from these same inputs."""
        k = self._key(round_dir)
        with self._lock:
            hit = self._entries.get(k)
            if hit is None or hit[0] != fingerprint:
                self.misses += 1
                return None
            self._entries.move_to_end(k)
            self.hits += 1
            return hit[1]

    def put(self, round_dir: Path, fingerprint: Fingerprint, value: V) -> None:
        k = self._key(round_dir)
        with self._lock:
            self._entries[k] = (fingerprint, value)
            self._entries.move_to_end(k)
            while len(self._entries) > self.max_rounds:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
