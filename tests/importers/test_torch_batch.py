"""The collector's batch path (``_Collector.add_batch``: common event shapes handled inline)
leaves exactly the state that :meth:`_Collector.add`, one event at a time, leaves: the same
rows in every typed array, the same interned names, threads, signatures and geometries (in the
same order, so the same ids), the same counters. Checked on the synthetic and real traces and
on events with every field missing, mistyped, out of range or oddly spelt."""

from __future__ import annotations

import gzip
import json
import random
from array import array
from typing import Any

import pytest

from roofline_tui.importers.synth import SynthSpec, synthetic_trace
from roofline_tui.importers.torch_trace import _Collector
from tests.importers.conftest import REAL


def _state(col: _Collector) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in vars(col).items():
        if isinstance(value, array):
            out[name] = (value.typecode, value.tolist())
        else:
            out[name] = value
    return out


def _both(events: list[Any], *, batch: int = 7) -> tuple[dict[str, Any], dict[str, Any]]:
    one = _Collector()
    for ev in events:
        one.add(ev)
    many = _Collector()
    for k in range(0, len(events), batch):
        many.add_batch(events[k:k + batch])
    return _state(one), _state(many)


def _assert_same(events: list[Any], **kw: Any) -> None:
    one, many = _both(events, **kw)
    assert one.keys() == many.keys()
    for key in one:
        assert one[key] == many[key], key


def test_synthetic_trace() -> None:
    doc = synthetic_trace(SynthSpec(prefill_steps=2, decode_steps=5, layers=3, extra_device=3))
    _assert_same(doc["traceEvents"])


@pytest.mark.parametrize("name", [
    "tracelens_h100_qwen1.5-0.5b.json.gz",
    "tracelens_vllm_decode_full_graph_execution.json.gz",
    "tracelens_sglang_qwen3-8b_decode.json.gz",
    "kineto_tbplugin_2021-01_resnet50_autograd_api_worker0.pt.trace.json.gz",
    "hta_A100-80GB_graph-launch_negative_queue_rank0.json.gz",
])
def test_real_traces(name: str) -> None:
    path = REAL / "wild" / name
    if not path.is_file():
        pytest.skip(f"{path} not present")
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        doc = json.load(fh)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    _assert_same(events, batch=97)


_ODD_VALUES: list[Any] = [
    None, True, False, 0, -1, 7, 2**62, -(2**62), 2**63, 10**31, 1.5, -0.0, 0.0, -3.0, 1e31,
    float("inf"), "12", "", "x", [], [1], {}, {"a": 1},
]


def _mutate(ev: dict[str, Any], rng: random.Random) -> Any:
    """The event with a few of its fields (or its args' fields) removed or replaced."""
    out = json.loads(json.dumps(ev))
    for _ in range(rng.randint(1, 3)):
        target = out
        if isinstance(out.get("args"), dict) and rng.random() < 0.5:
            target = out["args"]
        keys = list(target) + ["ph", "pid", "tid", "external id", "Input dims", "grid", "block"]
        key = rng.choice(keys)
        roll = rng.random()
        if roll < 0.25:
            target.pop(key, None)
        elif roll < 0.35 and key == "cat" and isinstance(target.get(key), str):
            target[key] = target[key].upper()
        else:
            target[key] = rng.choice(_ODD_VALUES)
    if rng.random() < 0.02:
        return rng.choice([None, 3, "event", [out]])
    return out


def test_odd_events() -> None:
    rng = random.Random(26)
    doc = synthetic_trace(SynthSpec(prefill_steps=1, decode_steps=3, layers=2))
    base = [ev for ev in doc["traceEvents"]]
    base += [
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2,
         "args": {"device": 0, "correlation": 9, "grid": [4, 1, 1], "block": [128, 1, 1]}},
        {"ph": "X", "cat": "Kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 3.0, "dur": 1.0,
         "args": {"device": 0, "correlation": 10, "external id": 3}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 1, "tid": 2,
         "ts": 4.0, "dur": 1.0, "args": {"correlation": 11}},
        {"ph": "s", "cat": "ac2g", "id": 12, "pid": 1, "tid": 2, "ts": 5.0},
        {"ph": "X", "cat": "cpu_op", "name": "aiter::ck_moe_stage1", "pid": 1, "tid": 2,
         "ts": 6.0, "dur": 3.0, "args": {"Input Dims": [[8, 16]], "Input type": ["float"]}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": "p", "tid": 2.0,
         "ts": 6.0, "dur": 3.0, "args": {"Input Dims": [[8, 16], []],
                                         "Input type": ["float", "Scalar"]}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 2, "ts": 6.0,
         "dur": 3.0, "args": {"Input Dims": [[None]], "Input type": [None]}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "pid": 1, "tid": 2, "ts": 6.0,
         "dur": 3.0, "args": {"Input Dims": [[2**70]], "Input type": ["float"]}},
        {"ph": "X", "cat": "python_function", "name": "nn.Module: Linear_0", "pid": 1,
         "tid": 2, "ts": 6.0, "dur": 3.0, "args": {}},
        {"ph": "X", "cat": ["kernel"], "name": "k", "ts": 1.0, "dur": 1.0, "args": {}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": -1, "tid": -1,
         "ts": 7.0, "dur": 1.0, "args": {"correlation": 13}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": True, "tid": 2,
         "ts": 7.0, "dur": 1.0, "args": {"correlation": 14}},
    ]
    events: list[Any] = list(base)
    for _ in range(4000):
        events.append(_mutate(rng.choice(base), rng))
    rng.shuffle(events)
    events = base + events  # each shape seen once plainly first: the caches then hit
    for size in (1, 5, 64):
        _assert_same(events, batch=size)

