"""Whatever bytes arrive, the importer API returns a document or raises ImportProblem."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roofline_tui.importers.common import ImportProblem
from roofline_tui.importers.nsys import import_nsys
from roofline_tui.importers.rocprof import import_rocprofv3
from roofline_tui.importers.torch import import_torch

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=6), kids,
                                                              max_size=4),
    max_leaves=20,
)
event = st.fixed_dictionaries(
    {},
    optional={
        "ph": st.sampled_from(["X", "M", "s", 1]),
        "cat": st.sampled_from(["kernel", "gpu_memcpy", "cuda_runtime", "cpu_op",
                                "gpu_user_annotation", None]),
        "name": st.sampled_from(["k", "execute_context_1(5)_generation_2(2)", 3]) | st.text(
            max_size=5),
        "pid": json_values, "tid": json_values,
        "ts": st.integers(-5, 100) | st.floats(allow_nan=False) | st.text(max_size=3),
        "dur": st.integers(-5, 100) | st.floats(allow_nan=False) | st.none(),
        "args": st.dictionaries(st.sampled_from(["correlation", "device", "External id",
                                                 "Input Dims", "Input type"]), json_values,
                                max_size=5) | json_values,
    },
)
trace_docs = st.one_of(
    json_values,
    st.fixed_dictionaries({"traceEvents": st.lists(event | json_values, max_size=12)},
                          optional={"deviceProperties": json_values}),
)


def _write(data: bytes, suffix: str) -> Path:
    fh = tempfile.NamedTemporaryFile(suffix=suffix, delete=False)  # noqa: SIM115
    fh.write(data)
    fh.close()
    return Path(fh.name)


def _check(fn, path: Path) -> None:
    try:
        doc = fn(path)
    except ImportProblem as exc:
        assert str(exc) and "\n" not in str(exc)
    else:
        assert doc["top_kernels"]
    finally:
        path.unlink()


@SETTINGS
@given(trace_docs, st.integers(0, 60))
def test_torch_never_raises_other_errors(doc, cut: int) -> None:
    text = json.dumps(doc)
    if cut:
        text = text[: max(0, len(text) - cut)]
    _check(lambda p: import_torch(p, progress=False, chunk=16).doc,
           _write(text.encode(), ".json"))


@SETTINGS
@given(st.binary(max_size=300))
def test_torch_arbitrary_bytes(data: bytes) -> None:
    _check(lambda p: import_torch(p, progress=False).doc, _write(data, ".json"))


csv_cell = st.one_of(st.text(max_size=6), st.integers(-10, 10**6).map(str),
                     st.sampled_from(['"Agent 2"', "1e3", "nan", ""]))
header = st.lists(st.sampled_from(["Kind", "Agent_Id", "Kernel_Name", "Start_Timestamp",
                                   "End_Timestamp", "Direction", "Counter_Name", "Time (%)",
                                   "Total Time (ns)", "Instances", "Name", "x"]),
                  min_size=1, max_size=8)


@SETTINGS
@given(header, st.lists(st.lists(csv_cell, max_size=9), max_size=6), st.text(max_size=40))
def test_tables_never_raise_other_errors(head, rows, preamble) -> None:
    text = preamble + "\n" + ",".join(head) + "\n" + "\n".join(",".join(r) for r in rows)
    data = text.encode("utf-8", "surrogatepass")
    _check(lambda p: import_rocprofv3([p]).doc, _write(data, ".csv"))
    _check(lambda p: import_nsys(p).doc, _write(data, ".csv"))


@SETTINGS
@given(st.binary(max_size=300))
def test_tables_arbitrary_bytes(data: bytes) -> None:
    _check(lambda p: import_rocprofv3([p]).doc, _write(data, ".csv"))
    _check(lambda p: import_nsys(p).doc, _write(data, ".csv"))
