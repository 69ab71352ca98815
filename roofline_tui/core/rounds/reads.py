"""Each input file parsed once per analysis: the memo one analysis of a round passes down.

Analysing one round with its history loads every sibling round, and the siblings share files:
one ``env_report.json`` above them all, one model ``config.json``. Without a memo each sibling
parses them again (the demo's round 2 read ``env_report.json`` six times). :class:`Reads`
keeps what was parsed under the file's real path and its stat fingerprint (size, mtime, ctime,
inode: no content read), so a file is parsed once per analysis, and again only when it changed
while the analysis ran.

A memo lives for one analysis (the caller makes it and drops it): what it holds is never
judged current by anyone else.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import TypeVar, cast

from roofline_tui.core.inputs import EnvReport, TopN, load_env_report, read_topn
from roofline_tui.core.model_config import ModelShape, load_model_config
from roofline_tui.core.store import ReadProblem

T = TypeVar("T")


def stat_key(path: Path | str) -> tuple[Hashable, ...] | None:
    """The file's real path and stat identity, or ``None`` when it cannot be stat'ed (then it
    is not memoised: the loader says why in its own words)."""
    try:
        real = os.path.realpath(path)
        st = os.stat(real)
    except (OSError, ValueError):
        return None
    return (real, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


class Reads:
    """Parsed inputs of one analysis, keyed by what was parsed, the file and its stat."""

    def __init__(self) -> None:
        self._memo: dict[tuple[Hashable, ...], object] = {}
        self._lock = threading.Lock()
        self.parsed: dict[str, int] = {}  # kind -> files parsed (not served from the memo)

    def _get(self, kind: str, path: Path | str, load: Callable[[], T],
             *extra: Hashable) -> T:
        key = stat_key(path)
        if key is None:
            return load()
        full = (kind, *key, *extra)
        with self._lock:
            if full in self._memo:
                return cast(T, self._memo[full])
        value = load()
        with self._lock:
            self._memo.setdefault(full, value)
            self.parsed[kind] = self.parsed.get(kind, 0) + 1
        return value

    def env_report(self, path: Path) -> tuple[EnvReport | None, list[str]]:
        env, problems = self._get("env_report", path, lambda: load_env_report(path))
        return env, list(problems)

    def topn(self, path: Path) -> tuple[TopN | None, list[str], ReadProblem | None]:
        topn, problems, problem = self._get("topn", path, lambda: read_topn(path))
        return topn, list(problems), problem

    def model_config(self, path: Path, kv_cache_dtype: str | None
                     ) -> tuple[ModelShape | None, list[str]]:
        model, problems = self._get(
            "model_config", path,
            lambda: load_model_config(path, kv_cache_dtype=kv_cache_dtype), kv_cache_dtype)
        return model, list(problems)


def reads_or_new(reads: Reads | None) -> Reads:
    """The caller's memo, or a fresh one (an analysis on its own)."""
    return reads if reads is not None else Reads()
