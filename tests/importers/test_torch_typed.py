"""The typed trace reader (issue 38 item 3: ``importers.kineto_events``, msgspec records) and the
collector's fast reader (``importers.torch.typed_loop``) leave exactly the state that the dict
reader and :meth:`Collector.add`, one event at a time, leave: the same rows in every typed
array, the same interned names, threads, signatures and geometries (same order, same ids), the
same counters and caches. Checked on the synthetic and real traces and on events with every
field missing, mistyped, out of range or oddly spelt, in batches small enough that the odd
events reach the typed loop; and the pieces that decide what the typed path may take: the long
digit runs it leaves to the careful decoder, the splitter's cut, the step split's shortcut."""

from __future__ import annotations

import gzip
import io
import json
import random
from array import array
from typing import Any

import pytest

from roofline_tui.importers import step_time
from roofline_tui.importers.jsonstream import _DIGITS_TO_0, _LONG_DIGITS, TraceEventStream
from roofline_tui.importers.kineto_events import Event, TypedEventStream, long_digit_run
from roofline_tui.importers.synth import SynthSpec, synthetic_trace
from roofline_tui.importers.torch import collect
from roofline_tui.importers.torch.collector import Collector
from roofline_tui.importers.torch.step_join import _compute_in_steps, _rows_not_compute
from roofline_tui.importers.torch.typed_loop import read_batches
from tests.importers.conftest import REAL

def _state(col: Collector) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in vars(col).items():
        if isinstance(value, array):
            out[name] = (value.typecode, value.tolist())
        else:
            out[name] = value
    return out


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


def _reference(text: str) -> dict[str, Any]:
    """The dict reader's events, one at a time through ``add``."""
    col = Collector()
    for ev in TraceEventStream(io.StringIO(text)).events():
        col.add(ev)
    return _state(col)


def _typed(text: str, batch: int = 1 << 15) -> tuple[dict[str, Any], int]:
    """The typed reader's batches through ``read_batches``; and how many events came as
    typed records."""
    col = Collector()
    typed = 0

    def batches() -> Any:
        nonlocal typed
        for b in TypedEventStream(io.StringIO(text), batch=batch).event_batches():
            typed += sum(ev.__class__ is Event for ev in b)
            yield b

    read_batches(col, batches())
    return _state(col), typed


def _assert_same(text: str, batch: int = 1 << 15) -> int:
    want = _reference(text)
    got, typed = _typed(text, batch)
    assert want.keys() == got.keys()
    for key in want:
        assert want[key] == got[key], key
    return typed


def _doc(events: list[Any]) -> str:
    """A trace of ``events`` (those holding an infinity left out: JSON has none)."""
    kept = []
    for ev in events:
        try:
            kept.append(json.dumps(ev, allow_nan=False))
        except ValueError:
            continue
    return '{"schemaVersion": 1, "traceEvents": [\n' + ",\n".join(kept) + "\n]}"


def test_synthetic_trace() -> None:
    doc = synthetic_trace(SynthSpec(prefill_steps=2, decode_steps=5, layers=3, extra_device=3))
    n = len(doc["traceEvents"])
    assert _assert_same(json.dumps(doc)) >= n - 1  # all but the metadata event's batch start
    assert _assert_same(json.dumps(doc), batch=400) >= n // 2


@pytest.mark.parametrize("name", [
    "tracelens_h100_qwen1.5-0.5b.json.gz",
    "tracelens_vllm_decode_full_graph_execution.json.gz",
    "tracelens_sglang_qwen3-8b_decode.json.gz",
    "tracelens_sglang_MI300X_decode_graph_capture_bs32_rank0.json.gz",
    "kineto_tbplugin_2021-01_resnet50_autograd_api_worker0.pt.trace.json.gz",
    "hta_A100-80GB_graph-launch_negative_queue_rank0.json.gz",
])
def test_real_traces(name: str) -> None:
    path = REAL / "wild" / name
    if not path.is_file():
        pytest.skip(f"{path} not present")
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        text = fh.read()
    # every batch of a real trace is read typed (C++ names' "}," inside strings included)
    assert _assert_same(text) >= 0.99 * len(json.loads(text)["traceEvents"])


def test_collect_reads_typed(tmp_path: Any) -> None:
    doc = synthetic_trace(SynthSpec(prefill_steps=1, decode_steps=3, layers=2))
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    col, header = collect(path, progress=False)
    assert _state(col) == _reference(json.dumps(doc)) and header["schemaVersion"] == 1


def test_odd_events() -> None:
    rng = random.Random(38)
    doc = synthetic_trace(SynthSpec(prefill_steps=1, decode_steps=3, layers=2))
    base = list(doc["traceEvents"])
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
        {"ph": "X", "cat": "cpu_op", "name": "vllm::unified_attention", "pid": 1, "tid": 2,
         "ts": 6.0, "dur": 3.0, "args": {"Input Dims": [[8, 16], []], "Input type":
                                         ["float", "Scalar"], "Concrete Inputs": ["", "0.5"]}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": "p", "tid": 2.0,
         "ts": 6.0, "dur": 3.0, "args": {"Input Dims": [[8, 16], []],
                                         "Input type": ["float", "Scalar"]}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "pid": 1, "tid": 2, "ts": 6.0,
         "dur": 3.0, "args": {"Input Dims": [[2**70]], "Input type": ["float"]}},
        {"ph": "X", "cat": "python_function", "name": "nn.Module: Linear_0", "pid": 1,
         "tid": 2, "ts": 6.0, "dur": 3.0, "args": {}},
        {"ph": "X", "cat": "user_annotation", "name": "execute_model", "pid": 1, "tid": 2,
         "ts": 6, "dur": 30, "args": {"num_context_tokens": 12, "decode_batch": 3}},
        {"ph": "X", "cat": ["kernel"], "name": "k", "ts": 1.0, "dur": 1.0, "args": {}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": True, "tid": 2,
         "ts": 7.0, "dur": 1.0, "args": {"correlation": 14}},
    ]
    events: list[Any] = list(base)
    for _ in range(3000):
        events.append(_mutate(rng.choice(base), rng))
    rng.shuffle(events)
    text = _doc(base + events)
    for batch in (300, 700, 1 << 15):  # one or two events a batch: the odd ones reach the loop
        typed = _assert_same(text, batch)
        if batch < 1000:
            assert typed > len(events) // 3


@pytest.mark.parametrize("value", [2**63, 10**40, -(10**63), 10**63, 10**64, -(10**64),
                                   int("9" * 80), 1.5e300, 12345678901234567890.5])
def test_long_numbers_read_as_the_dict_reader_reads_them(value: Any) -> None:
    """A number of many digits in a field the collector reads: a batch with a run of 64
    digits is the careful decoder's (its integer an infinity), a shorter run msgspec's."""
    doc = synthetic_trace(SynthSpec(prefill_steps=1, decode_steps=2, layers=2))
    events = doc["traceEvents"]
    op = json.loads(json.dumps(events[1]))  # a cpu_op
    assert op["cat"] == "cpu_op"
    dims = dict(op, args=dict(op["args"], **{"Input Dims": [[value, 4]]}))
    values = dict(op, name="vllm::unified_attention",
                  args=dict(op["args"], **{"Concrete Inputs": [value, str(value)]}))
    events[1:2] = [dims, values, dict(op, ts=value), dict(events[3], ts=value)]
    _assert_same(_doc(events), batch=400)


def test_long_digit_run() -> None:
    rng = random.Random(7)
    for _ in range(3000):
        parts = []
        for _ in range(rng.randint(0, 6)):
            parts.append(rng.choice(["", " ", '", "', "é", "\ud800", "x" * rng.randint(0, 9)]))
            parts.append("".join(rng.choice("0123456789") for _ in range(rng.choice(
                [rng.randint(0, 70), 63, 64, 65]))))
        text = "".join(parts)
        want = _LONG_DIGITS in text.encode("utf-8", "surrogatepass").translate(_DIGITS_TO_0)
        assert long_digit_run(text) == want, text


def test_lambda_names_do_not_split_batches() -> None:
    """A "}," inside a kernel name (a C++ lambda) is not taken for the end of an event."""
    name = "void at::native::kernel<{lambda(int)#1}, {lambda()#2}, float>(int, {lambda()#3})"
    events = [{"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": i,
               "dur": 1, "args": {"device": 0, "correlation": i}} for i in range(2000)]
    sizes = [len(b) for b in TraceEventStream(io.StringIO(_doc(events))).event_batches()]
    assert sum(sizes) == len(events) and max(sizes) > 50 and sizes.count(1) <= 2


def test_all_compute_steps_split_as_the_per_kind_path() -> None:
    """Where every collective or copy row lies outside the steps split, the all-compute path
    gives each step's split number for number."""
    rng = random.Random(3)
    for _ in range(300):
        n = rng.randint(1, 60)
        ts = array("d", sorted(rng.choice([rng.uniform(0, 100), float(rng.randint(0, 50))])
                               for _ in range(n)))
        dur = array("d", (rng.choice([0.0, -0.0, rng.uniform(0, 5), 1.0]) for _ in range(n)))
        regimes = [rng.choice([0, 1, -1]) for _ in range(rng.randint(0, 4))]
        step_of = array("q", (rng.randrange(-1, len(regimes)) for _ in range(n)))
        kinds = array("b", (rng.choice([0, 0, 0, 1, 2]) if step_of[p] < 0
                            or regimes[step_of[p]] < 0 or rng.random() < 0.1 else 0
                            for p in range(n)))
        full = step_time.step_time_block(ts, dur, kinds, step_of, regimes)
        others = [p for p, k in enumerate(kinds) if k]
        g_name = array("q", (100 + k for k in kinds))  # a name per kind
        assert sorted(_rows_not_compute(g_name, range(n), [101, 102]) or []) == others
        if _compute_in_steps(others, step_of, regimes):
            fast = step_time.step_time_block(ts, dur, None, step_of, regimes)
            assert json.dumps(fast) == json.dumps(full)

