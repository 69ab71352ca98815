"""Where a round came from: the ``source.json`` that ``roofline ingest`` writes into each round
it makes (the trace files, their sizes and hashes, the importer). Read here so the rounds
listing can name a round's source without reading the importers."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from roofline_tui.core.layout import SOURCE_NAME
from roofline_tui.core.store import MAX_SMALL_BYTES, ReadProblem, read_json


class RoundSource(BaseModel):
    """A round's ``source.json``, as much of it as the listing shows."""

    importer: str | None = None
    files: list[str]  # the trace files' names, in the order recorded


def read_round_source(round_dir: Path) -> RoundSource | None:
    """The source of ``round_dir``, or None when it has no usable ``source.json``."""
    path = Path(round_dir) / SOURCE_NAME
    if not path.exists():
        return None
    try:
        doc = read_json(path, max_bytes=MAX_SMALL_BYTES)
    except ReadProblem:
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("files"), list):
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
