"""Where a round came from: the ``source.json`` that ``roofline ingest`` writes into each round
it makes (the trace files, their sizes and hashes, the importer), and the ingest's own state
(``PROFILE/.ingest.json``: what it is importing now, what failed). Read here so the rounds
listing and the dashboard can show them without reading the importers."""

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from roofline_tui.core.layout import INGEST_STATE_NAME, SOURCE_NAME
from roofline_tui.core.store import MAX_SMALL_BYTES, ReadProblem, read_json


class RoundSource(BaseModel):
    """A round's ``source.json``, as much of it as the listing shows."""

    importer: str | None = None
    files: list[str]  # the trace files' names, in the order recorded


def _small_object(path: Path) -> dict[str, Any] | None:
    """The JSON object in a small bookkeeping file; None when absent, unreadable or not one."""
    if not path.exists():
        return None
    try:
        doc = read_json(path, max_bytes=MAX_SMALL_BYTES)
    except ReadProblem:
        return None
    return doc if isinstance(doc, dict) else None


def read_round_source(round_dir: Path) -> RoundSource | None:
    """The source of ``round_dir``, or None when it has no usable ``source.json``."""
    doc = _small_object(Path(round_dir) / SOURCE_NAME)
    if doc is None or not isinstance(doc.get("files"), list):
        return None
    names: list[str] = []
    for f in doc["files"]:
        if isinstance(f, dict):
            name = f.get("name") or (Path(f["path"]).name if isinstance(f.get("path"), str)
                                     else None)
            if isinstance(name, str) and name:
                names.append(name)
    importer = doc.get("importer")
    return RoundSource(importer=importer if isinstance(importer, str) else None, files=names)


class IngestFailure(BaseModel):
    file: str
    reason: str
    time: str | None = None


class IngestStatus(BaseModel):
    """What ``roofline ingest`` says of a profile: the files it is importing now (empty
    between sessions), since when, and its failures (the latest last)."""

    importing: list[str] = []
    since: str | None = None
    failures: list[IngestFailure] = []
    rounds: int = 0


MAX_FAILURES_SHOWN = 20


def read_ingest_status(profile: Path) -> IngestStatus | None:
    """The ingest state of ``profile``; None when no ingest has run there (or its state file
    cannot be read: the ingest itself says why)."""
    doc = _small_object(Path(profile) / INGEST_STATE_NAME)
    if doc is None:
        return None
    raw_now = doc.get("importing")
    now: dict[str, object] = raw_now if isinstance(raw_now, dict) else {}
    listed = now.get("files")
    files = [f for f in listed if isinstance(f, str)][:64] if isinstance(listed, list) else []
    since_raw = now.get("since")
    since = since_raw if isinstance(since_raw, str) else None
    failures: list[IngestFailure] = []
    for f in doc.get("failures") or []:
        if isinstance(f, dict) and isinstance(f.get("path"), str):
            failures.append(IngestFailure(
                file=Path(f["path"]).name, reason=str(f.get("reason") or "?")[:300],
                time=f.get("time") if isinstance(f.get("time"), str) else None))
    rounds = doc.get("rounds")
    return IngestStatus(importing=files, since=since, failures=failures[-MAX_FAILURES_SHOWN:],
                        rounds=len(rounds) if isinstance(rounds, list) else 0)
