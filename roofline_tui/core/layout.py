"""The one rule for round directories: their files, how they are found, ordered and labelled.

Used by the engine (``core.rounds``, stage B/C discovery), the CLI (``analyze``, ``rounds``,
``playbook``), the importers and the dashboard; it imports nothing of the engine but a type.

* A *profile directory* holds one ``round_<R>`` directory per optimisation round (spec §2:
  ``profile/round_<R>/profile_topN.json``). :func:`round_dirs` lists them.
* Order: ``round_<integer>`` first, in numeric order (``round_2`` before ``round_10``); named
  rounds (``round_tuning``) after them, by the modification time of their Top-N (the folder's own
  mtime changes whenever an artifact is written, which would reorder rounds), the name breaking
  ties.
* Label: the integer of a numeric round, the tag of a named one (``tuning``), otherwise the
  directory name.
* The dashboard and the CLI also accept one round directly: :func:`rounds_at` returns the round
  directories under a path, or the path itself when it is a round (it holds a Top-N or is named
  ``round_*``).
* Environment: ``env_report.json`` in the round or up to three parents; the model's
  ``config.json`` beside it, in the directory env_report's ``model`` names, or in the round.

Pure filesystem helpers: nothing here reads a file's content.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from roofline_tui.core.lazy_re import lazy_compile

if TYPE_CHECKING:
    from roofline_tui.core.inputs import EnvReport

TOPN_NAME = "profile_topN.json"
ENV_NAME = "env_report.json"
CONFIG_NAME = "config.json"
# beside a config.json an import copied into the round: where it came from and how found
CONFIG_SOURCE_NAME = "config.source.json"
ARTIFACT_JSON = "profile_roofline.json"
ARTIFACT_MD = "profile_roofline.md"
SERVING_NAME = "serving_metrics.json"
SOURCE_NAME = "source.json"  # where an ingested round came from (roofline ingest)
INGEST_STATE_NAME = ".ingest.json"  # roofline ingest's state in a profile directory
COUNTERS_DIR = "counters"
ROUND_PREFIX = "round_"
PARENT_LEVELS = 3  # how far above a round env_report.json is looked for

_NUMERIC = lazy_compile(r"^round_(\d+)$")

# Files we write ourselves never trigger a recompute; neither do editor/atomic temps.
CSV_NAME = "profile_roofline.csv"
OWN_OUTPUTS = frozenset({ARTIFACT_JSON, ARTIFACT_MD, CSV_NAME})
_TEMP_SUFFIXES = (".tmp", ".temp", ".swp", ".swx", ".part", ".partial", "~")
# Inputs a round can read. Extension-less paths are directories (a round appearing or going).
_INPUT_SUFFIXES = frozenset({".json", ".md", ".yaml", ".yml", ".csv", ""})


# --------------------------------------------------------------------------- naming


def is_numeric_round(round_dir: Path) -> bool:
    return bool(_NUMERIC.match(round_dir.name))


def _readable(name: str) -> str:
    """A file name as valid Unicode: the bytes of a name that is not UTF-8 (``round_\\xff``,
    held by Python as lone surrogates) written as visible ``\\xNN`` escapes, so a label can
    be hashed, written as JSON and printed; every other name is returned unchanged."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(name).decode("utf-8", "backslashreplace")
    return name


@functools.lru_cache(maxsize=4096)  # a history of 1,000 rounds labels each on every recompute
def round_label(round_dir: Path) -> str | int:
    """``round_3`` → 3, ``round_tuning`` → ``"tuning"``, anything else → its name. Always valid
    Unicode (a non-UTF-8 name's bytes are written ``\\xNN``)."""
    name = _readable(round_dir.name)
    if name.startswith(ROUND_PREFIX):
        tag = name[len(ROUND_PREFIX):]
        return int(tag) if tag.isdigit() and tag.isascii() else tag
    return name or _readable(str(round_dir))


def round_name(round_dir: Path) -> str:
    """The directory name shown for a round (``round_3``), as valid Unicode."""
    return _readable(round_dir.name or str(round_dir))


# --------------------------------------------------------------------------- discovery


def topn_mtime(round_dir: Path) -> float:
    """When the round's Top-N (else its artifact, else the folder) last changed; 0 if unknown."""
    for p in (round_dir / TOPN_NAME, round_dir / ARTIFACT_JSON, round_dir):
        try:
            return p.stat().st_mtime
        except OSError:
            continue
    return 0.0


def _numeric_key(c: Path) -> tuple[int, str]:
    return int(c.name[len(ROUND_PREFIX):]), c.name


def _named_key(c: Path) -> tuple[float, str]:
    return topn_mtime(c), c.name


def order_round_dirs(dirs: Iterable[Path]) -> list[Path]:
    """Numeric rounds in numeric order, then named rounds by Top-N mtime, name breaking ties."""
    dirs = list(dirs)
    numeric = sorted((c for c in dirs if is_numeric_round(c)), key=_numeric_key)
    named = sorted((c for c in dirs if not is_numeric_round(c)), key=_named_key)
    return numeric + named


def round_dirs(profile_dir: Path) -> list[Path]:
    """The ``round_*`` directories of ``profile_dir``, in round order (empty when none or
    unreadable)."""
    profile_dir = Path(profile_dir)
    try:
        # scandir: a plain entry is told a directory from its directory entry, without a stat
        # per round (a profile of 1,000 rounds is listed on every recompute)
        with os.scandir(profile_dir) as it:
            names = [e.name for e in it if e.name.startswith(ROUND_PREFIX) and _entry_is_dir(e)]
    except OSError:
        return []
    numeric = tuple(n for n in names if _NUMERIC.match(n))
    named = sorted((profile_dir / n for n in names if not _NUMERIC.match(n)), key=_named_key)
    return [*_numeric_rounds(profile_dir, numeric), *named]


@functools.lru_cache(maxsize=8)
def _numeric_rounds(profile_dir: Path, names: tuple[str, ...]) -> tuple[Path, ...]:
    """The numeric rounds ``names`` of ``profile_dir`` as paths, in numeric order (as
    :func:`order_round_dirs` orders them): the same names give the same paths without building
    and sorting them again."""
    return tuple(sorted((profile_dir / n for n in names), key=_numeric_key))


def _entry_is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()  # follows a symlink, as Path.is_dir does
    except OSError:
        return False


def rounds_at(path: Path) -> list[Path]:
    """The rounds a user pointed at: the ``round_*`` directories under ``path``, or ``path``
    itself when it is one round; empty when neither (yet)."""
    path = Path(path)
    found = round_dirs(path)
    if found:
        return found
    if (path / TOPN_NAME).exists() or path.name.startswith(ROUND_PREFIX):
        return [path]
    return []


def side_round(path: Path) -> Path:
    """The round one side of a comparison names: an artifact's (or Top-N's) directory, a
    profile's last round (the order of :func:`round_dirs`), or the directory itself."""
    path = Path(path)
    if path.is_file():
        return path.parent
    found = round_dirs(path)
    return found[-1] if found else path


def find_env_report(round_dir: Path) -> Path | None:
    here = round_dir.resolve()
    for d in [here, *list(here.parents)[:PARENT_LEVELS]]:
        candidate = d / ENV_NAME
        if candidate.is_file():
            return candidate
    return None


def find_model_config(env_path: Path | None, env: EnvReport | None, round_dir: Path) -> Path | None:
    candidates: list[Path] = []
    if env_path is not None:
        candidates.append(env_path.parent / CONFIG_NAME)
    if env is not None and env.model:
        model = Path(env.model)
        if not model.is_absolute() and env_path is not None:
            model = env_path.parent / model
        candidates += [model / CONFIG_NAME, model]
    candidates.append(round_dir / CONFIG_NAME)
    for c in candidates:
        try:
            if c.is_file() and c.suffix == ".json":
                return c
        except OSError:
            continue
    return None


# --------------------------------------------------------------------------- file changes


def is_relevant_change(path: str | Path, root: Path | None = None) -> bool:
    """True for a change a watcher should react to.

    Ignored: our own ``profile_roofline.*`` exports, hidden files and directories below ``root``
    (the atomic writer's ``.name.XXXX.tmp``, ``.git``), editor and partial-download temps,
    unrelated file types.
    """
    p = Path(path)
    if p.name in OWN_OUTPUTS:
        return False
    parts = p.parts
    if root is not None:
        try:
            parts = Path(os.path.abspath(p)).relative_to(os.path.abspath(root)).parts
        except ValueError:
            parts = (p.name,)
    if any(part.startswith(".") for part in parts if part not in (".", "..")):
        return False
    if p.name.endswith(_TEMP_SUFFIXES) or p.name.startswith("#"):
        return False
    return p.suffix.lower() in _INPUT_SUFFIXES


def round_of(changed: Path, rounds: Iterable[Path]) -> Path | None:
    """The round whose tree holds ``changed`` (None: a shared input or something else).

    Symlinks are resolved on both sides: a watcher may report a change through any alias of a
    directory (``round_1/up/profile/round_2/profile_topN.json`` when ``round_1/up`` links to the
    profile's parent), and the change belongs to the round the file really lives in.
    """
    changed = Path(os.path.realpath(changed))
    best: Path | None = None
    best_len = -1
    for r in rounds:
        root = Path(os.path.realpath(r))
        if changed == root or root in changed.parents:
            if len(root.parts) > best_len:
                best, best_len = r, len(root.parts)
    return best


# ------------------------------------------------ stage B/C inputs beside a round (spec §5)
# Only where they are: the parsers live in core.measured and are imported by whoever reads them.

COUNTER_SUFFIXES = {".csv", ".db", ".rocpd", ".sqlite", ".sqlite3", ".ncu-rep", ".hatchet"}
# CSVs a profiler writes next to its counters that hold no counters
NON_COUNTER_CSV = (
    "kernel_trace",
    "agent_info",
    "sysinfo",
    "memory_copy",
    "hip_api",
    "hsa_api",
    "marker_api",
    "memory_allocation",
    "scratch_memory",
    "stats",
    "domain_stats",
)


def discover_counter_files(round_dir: Path) -> list[Path]:
    """Counter files under ``ROUND_DIR/counters/`` (any depth), plus roofline-v1 reports under
    ``EVAL_DIR/kernels/*/roofline/`` when ROUND_DIR is ``EVAL_DIR/profile/round_<R>``.

    Kept: ``*.csv`` except profiler side files (kernel_trace, agent_info, sysinfo, API traces),
    rocpd databases (``*.db``, ``*.rocpd``, ``*.sqlite*``), ``*.ncu-rep``, Proton ``*.hatchet`` and
    ``*_roofline.json``. Sorted, no duplicates; missing directories give ``[]``.
    """
    found: list[Path] = []
    try:
        root = Path(round_dir) / "counters"
        if root.is_dir():
            for p in sorted(root.rglob("*")):
                if not p.is_file():
                    continue
                name = p.name.lower()
                if name.endswith("_roofline.json"):
                    found.append(p)
                elif p.suffix.lower() in COUNTER_SUFFIXES:
                    if p.suffix.lower() == ".csv" and any(t in name for t in NON_COUNTER_CSV):
                        continue
                    found.append(p)
        rd = Path(round_dir)
        if rd.parent.name == "profile":
            found.extend(discover_roofline_files(rd.parent.parent))
    except OSError:
        pass
    return list(dict.fromkeys(found))


def discover_roofline_files(eval_dir: Path) -> list[Path]:
    """``EVAL_DIR/kernels/<k>/roofline/{baseline,post}_roofline.json`` (also under ``ut/``)."""
    out: list[Path] = []
    try:
        kernels = Path(eval_dir) / "kernels"
        if kernels.is_dir():
            for pattern in ("*/roofline/*_roofline.json", "*/ut/roofline/*_roofline.json"):
                out.extend(sorted(kernels.glob(pattern)))
    except OSError:
        pass
    return out


def discover_task_dirs(eval_dir: Path) -> list[Path]:
    """``<EVAL_DIR>/kernels/*_task/`` sorted; a task keeping its files in ``ut/`` yields the
    ``ut`` directory. Missing ``kernels/`` gives ``[]``."""
    out: list[Path] = []
    try:
        root = Path(eval_dir) / "kernels"
        if not root.is_dir():
            return []
        for d in sorted(root.glob("*_task")):
            if not d.is_dir():
                continue
            ut = d / "ut"
            out.append(ut if not (d / "meta.json").exists() and ut.is_dir() else d)
    except OSError:
        return out
    return out
