"""Garbage in never raises out of the public functions."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roofline_tui.core.measured import (
    CapturedShapes,
    CounterSet,
    load_counters,
    load_task_dir,
    match_measurement,
)
from roofline_tui.core.measured.counters import SQLITE_MAGIC

SUFFIXES = [".csv", ".json", ".db", ".ncu-rep", ".rocpd", ".txt"]

# prefixes that steer the sniffer into each parser before the garbage starts
PREFIXES = [
    b"",
    SQLITE_MAGIC,
    b'"Dispatch_Id","Kernel_Name","Counter_Name","Counter_Value"\n',
    b"Dispatch_ID,Kernel_Name,SQ_WAVES,TCC_EA0_RDREQ_sum,Start_Timestamp,End_Timestamp\n",
    b'"ID","Process ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n',
    b'"ID","Kernel Name","dram__bytes_read.sum"\n',
    b'{"status": "ok", "cases": [',
]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    prefix=st.sampled_from(PREFIXES),
    body=st.binary(max_size=2000),
    suffix=st.sampled_from(SUFFIXES),
)
def test_load_counters_never_raises(prefix, body, suffix):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / f"garbage{suffix}"
        path.write_bytes(prefix + body)
        result = load_counters([path, Path(d) / "does_not_exist.csv"])
        assert isinstance(result, CounterSet)
        assert result.problems  # at least the missing file is reported
        assert all("\n" not in p for p in result.problems)
        match_measurement(result, body.decode("latin-1")[:40])


@settings(max_examples=100, deadline=None)
@given(
    meta=st.binary(max_size=500), workload=st.binary(max_size=300), regime=st.binary(max_size=200)
)
def test_load_task_dir_never_raises_on_bytes(meta, workload, regime):
    with tempfile.TemporaryDirectory() as d:
        task = Path(d)
        (task / "meta.json").write_bytes(meta)
        (task / "workload.json").write_bytes(workload)
        (task / "regime.json").write_bytes(regime)
        shapes, problems = load_task_dir(task)
        assert shapes is None or isinstance(shapes, CapturedShapes)
        assert shapes is not None or problems


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "cases",
                    "shape_counts",
                    "sig",
                    "count",
                    "dims",
                    "m",
                    "regime",
                    "num_experts",
                    "top_k",
                    "schema",
                    "workload",
                    "quant",
                    "input_shapes",
                    "smoke_detail",
                    "per_case",
                    "a_shape",
                    "weight_norm",
                    "geometry",
                ]
            ),
            inner,
            max_size=5,
        )
    ),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(
    meta=st.dictionaries(
        st.sampled_from(
            [
                "schema",
                "cases",
                "shape_counts",
                "num_experts",
                "top_k",
                "target",
                "attr",
                "workload",
                "regime",
                "dtype",
                "m_buckets",
                "geometry",
                "smoke_detail",
                "a_shape",
                "b_shape",
            ]
        ),
        json_values,
        max_size=8,
    )
)
def test_load_task_dir_never_raises_on_odd_json(meta):
    import json

    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "meta.json").write_text(json.dumps(meta))
        shapes, _problems = load_task_dir(Path(d))
        assert shapes is None or isinstance(shapes, CapturedShapes)
