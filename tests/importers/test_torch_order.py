"""The Top-N of a trace does not depend on how its events are laid out: the importer's fast
paths (events already in time order, correlation ids counted from 0) and its general ones
(any order, any ids) give the same files."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from roofline_tui.importers.synth import SynthSpec, write_trace
from tests.importers.conftest import REAL, run_cli

GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
FLOW_CATS = {"ac2g", "async"}


def _load(path: Path) -> dict[str, Any]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        doc: dict[str, Any] = json.load(fh)
    return doc


def _host_reversed(doc: dict[str, Any]) -> dict[str, Any]:
    """The GPU events where they were, every host-side event in the opposite order."""
    events: list[Any] = doc["traceEvents"]
    host = [ev for ev in events if not (isinstance(ev, dict) and ev.get("cat") in GPU_CATS)]
    host.reverse()
    it = iter(host)
    out = [ev if isinstance(ev, dict) and ev.get("cat") in GPU_CATS else next(it)
           for ev in events]
    return {**doc, "traceEvents": out}


def _far_ids(doc: dict[str, Any]) -> dict[str, Any]:
    """Every correlation id moved far past the number of events (ids are not counters)."""
    shift = 1 << 40
    out = []
    for ev in doc["traceEvents"]:
        if isinstance(ev, dict):
            ev = dict(ev)
            args = ev.get("args")
            if isinstance(args, dict) and isinstance(args.get("correlation"), int):
                ev["args"] = {**args, "correlation": args["correlation"] + shift}
            if ev.get("cat") in FLOW_CATS and isinstance(ev.get("id"), int):
                ev["id"] += shift
        out.append(ev)
    return {**doc, "traceEvents": out}


def _import(tmp: Path, label: str, doc: dict[str, Any]) -> tuple[bytes, bytes, str]:
    where = tmp / label
    where.mkdir()
    trace = where / "trace.json"
    trace.write_text(json.dumps(doc), encoding="utf-8")
    out = where / "round"
    proc = run_cli("torch", trace, "--out", out, "--no-capture-discovery")
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[0].replace(str(where), "DIR")
    return ((out / "profile_topN.json").read_bytes(), (out / "profile_topN.md").read_bytes(),
            first)


def _shaped(files: tuple[bytes, bytes, str]) -> bool:
    """Launching ops were found (so the comparisons below mean something)."""
    return b'"shapes": [\n        [' in files[0]


def test_synthetic_trace_same_top_n_in_any_order(tmp_path: Path) -> None:
    doc = _load(write_trace(tmp_path / "synth.json", SynthSpec(decode_steps=4, layers=3)))
    base = _import(tmp_path, "as_written", doc)
    assert _shaped(base)
    assert _import(tmp_path, "host_reversed", _host_reversed(doc)) == base
    assert _import(tmp_path, "far_ids", _far_ids(doc)) == base


def test_real_trace_same_top_n_with_any_correlation_ids(tmp_path: Path) -> None:
    # (its host events are not reordered: a real trace's shape sets tied on launches are
    # listed in the order the trace first records them, which is part of its output)
    path = REAL / "wild" / "tracelens_h100_qwen1.5-0.5b.json.gz"
    if not path.is_file():
        pytest.skip(f"{path} not present")
    doc = _load(path)
    base = _import(tmp_path, "as_written", doc)
    assert _shaped(base)
    assert _import(tmp_path, "far_ids", _far_ids(doc)) == base
