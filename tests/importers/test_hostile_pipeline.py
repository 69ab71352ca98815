"""Issue 16 through the importers: hostile names and numbers in a torch trace, a rocprofv3
kernel trace (CSV and rocpd), and an nsys kernel summary go through import → write → analyze →
write. Each step either refuses in one line (ImportProblem) or writes files that are valid
UTF-8, strict JSON, and free of any character a terminal would act on; the importers refuse
hostile files (FIFO, device, directory, huge) at once."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roofline_tui.core.artifact import Artifact
from roofline_tui.core.rounds.analysis import analyze_round, write_artifact
from roofline_tui.importers.common import ImportProblem, write_round
from roofline_tui.importers.synth import SynthSpec, synthetic_trace
from roofline_tui.importers.nsys import import_nsys
from roofline_tui.importers.rocprof import import_rocprofv3
from roofline_tui.importers.torch import import_torch

SETTINGS = settings(max_examples=20, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
NAMES = ["\x1b]52;c;ZXZpbA==\x07kern", "\x1b[2Jclear_kernel", "\u202eevil_kernel",
         "[bold red]markup[/]", "pipe|kernel", "$_$math", "lone\ud800kernel", "\x9bc1_kernel",
         "a" * 5000, "", " ", "void f<|>(int)"]
NUMBERS: list[Any] = [10**400, -(10**400), 1e308, 1e-300, -1, 0, float("nan"), float("inf"),
                      2**63, "12", None, True, [], {}]


def check_pair(json_path: Path) -> dict:
    raw = json_path.read_bytes().decode("utf-8")
    assert RAW.search(raw.replace("\n", "").replace("\t", "")) is None
    data = json.loads(raw, parse_constant=lambda t: pytest.fail(f"{t} written"))
    md = json_path.with_suffix(".md").read_bytes().decode("utf-8")
    assert RAW.search(md.replace("\n", "")) is None
    return data


def import_then_analyze(tmp: Path, do_import: Callable[[], Any]) -> None:
    """import → profile_topN.json/.md → analyze → profile_roofline.json/.md, all checked."""
    try:
        result = do_import()
    except ImportProblem as exc:
        assert str(exc) and "\n" not in str(exc) and RAW.search(str(exc)) is None
        return
    rnd = tmp / "eval" / "profile" / "round_0"
    topn_path = write_round(result.doc, rnd)
    doc = check_pair(topn_path)
    assert doc["top_kernels"]
    art = analyze_round(rnd).artifact
    json_path, _ = write_artifact(art, rnd)
    data = check_pair(json_path)
    Artifact.model_validate(data)
    names = [e["short_name"] for e in data["entries"]]
    assert len(names) == len(set(names))


def _trace(edits: list[tuple[int, str, Any]]) -> dict:
    doc = synthetic_trace(SynthSpec(prefill_steps=1, decode_steps=2, layers=2))
    kernels = [e for e in doc["traceEvents"] if e.get("cat") == "kernel"]
    for i, key, value in edits:
        kernels[i % len(kernels)][key] = value
    return doc


@SETTINGS
@given(edits=st.lists(st.tuples(st.integers(0, 40), st.sampled_from(["name", "dur", "ts"]),
                                st.sampled_from(NAMES + NUMBERS)), min_size=1, max_size=5))
def test_hostile_torch_trace_through_the_pipeline(tmp_path_factory, edits) -> None:
    tmp = tmp_path_factory.mktemp("torch")
    trace = tmp / "trace.json"
    trace.write_text(json.dumps(_trace(edits), allow_nan=True))
    import_then_analyze(tmp, lambda: import_torch(trace, progress=False))


ROCPROF_HEAD = ('"Kind","Agent_Id","Queue_Id","Stream_Id","Thread_Id","Dispatch_Id","Kernel_Id",'
                '"Kernel_Name","Correlation_Id","Start_Timestamp","End_Timestamp"')


def _csv_cell(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, allow_nan=True)
    return '"' + text.replace('"', '""') + '"'


@SETTINGS
@given(rows=st.lists(st.tuples(st.sampled_from(NAMES + ["gemm_kernel", "fused_moe_kernel"]),
                               st.sampled_from(NUMBERS + [1000, 2000]),
                               st.sampled_from(NUMBERS + [5000, 9000])), min_size=1, max_size=6))
def test_hostile_rocprofv3_csv_through_the_pipeline(tmp_path_factory, rows) -> None:
    tmp = tmp_path_factory.mktemp("rocprof")
    lines = [ROCPROF_HEAD]
    for i, (name, start, end) in enumerate(rows + [("gemm_kernel", 100, 900)]):
        lines.append(",".join(['"KERNEL_DISPATCH"', "2", "1", "1", "7", str(i + 1), "3",
                               _csv_cell(name), str(i), _csv_cell(start), _csv_cell(end)]))
    path = tmp / "kernel_trace.csv"
    path.write_text("\n".join(lines) + "\n", errors="surrogatepass")
    import_then_analyze(tmp, lambda: import_rocprofv3([path]))


@SETTINGS
@given(rows=st.lists(st.tuples(st.sampled_from(NAMES + ["gemm_kernel"]),
                               st.sampled_from(NUMBERS + [1000]),
                               st.sampled_from(NUMBERS + [5000])), min_size=1, max_size=5))
def test_hostile_rocpd_through_the_pipeline(tmp_path_factory, rows) -> None:
    tmp = tmp_path_factory.mktemp("rocpd")
    db = tmp / "run.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE kernels (name TEXT, start, \"end\", agent_id, dispatch_id)")
    con.execute("CREATE VIEW rocpd_kernel AS SELECT * FROM kernels")
    for i, (name, start, end) in enumerate(rows):
        vals = [v.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
                if isinstance(v, str) else (str(v) if isinstance(v, (int, list, dict))
                                            and not isinstance(v, bool) and not (
                                                isinstance(v, int) and abs(v) < 2**63) else v)
                for v in (name, start, end)]
        con.execute("INSERT INTO kernels VALUES (?, ?, ?, 0, ?)", (*vals, i))
    con.commit()
    con.close()
    import_then_analyze(tmp, lambda: import_rocprofv3([db]))


NSYS_HEAD = ("Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),"
             "StdDev (ns),Name")


@SETTINGS
@given(rows=st.lists(st.tuples(st.sampled_from(NAMES + ["saxpy_kernel"]),
                               st.sampled_from(NUMBERS + [50.0]),
                               st.sampled_from(NUMBERS + [179106560]),
                               st.sampled_from(NUMBERS + [61])), min_size=1, max_size=5))
def test_hostile_nsys_summary_through_the_pipeline(tmp_path_factory, rows) -> None:
    tmp = tmp_path_factory.mktemp("nsys")
    lines = [NSYS_HEAD]
    for name, pct, total, n in rows:
        lines.append(",".join([_csv_cell(pct), _csv_cell(total), _csv_cell(n), "1", "1", "1",
                               "1", "0", _csv_cell(name)]))
    path = tmp / "cuda_gpu_kern_sum.csv"
    path.write_text("\n".join(lines) + "\n", errors="surrogatepass")
    import_then_analyze(tmp, lambda: import_nsys(path))


def _fifo(p: Path) -> None:
    os.mkfifo(p)


def _dev_zero(p: Path) -> None:
    p.symlink_to("/dev/zero")


def _directory(p: Path) -> None:
    p.mkdir()


def _sparse(p: Path) -> None:
    with open(p, "wb") as fh:
        fh.truncate(40 * 1024**3)  # 40 GiB of size, nothing on disk


@pytest.mark.parametrize("state", [_fifo, _dev_zero, _directory, _sparse],
                         ids=lambda f: f.__name__.lstrip("_"))
@pytest.mark.parametrize("which", ["torch", "rocprofv3", "nsys"])
def test_importers_refuse_hostile_files_at_once(tmp_path: Path, which: str, state) -> None:
    path = tmp_path / ("trace.json" if which == "torch" else "input.csv")
    state(path)
    fn = {"torch": lambda: import_torch(path, progress=False),
          "rocprofv3": lambda: import_rocprofv3([path]),
          "nsys": lambda: import_nsys(path)}[which]
    box: dict[str, BaseException] = {}

    def work() -> None:
        try:
            fn()
        except BaseException as exc:  # noqa: BLE001 - checked below
            box["error"] = exc

    t = threading.Thread(target=work, daemon=True)
    t.start()
    t.join(20)
    assert not t.is_alive(), f"import {which} blocked on a {state.__name__.lstrip('_')}"
    assert isinstance(box.get("error"), ImportProblem), box.get("error")
    assert "\n" not in str(box["error"])
