"""Issue 16, property tests: hostile values and hostile filesystem states for every reader.

Each reader's file in a copy of the demo profile (plus a stage-B task dir and stage-C counter
files) is replaced by a hostile version; the round is then analysed with its history and the
artifact written. Whatever the input: nothing raises, nothing blocks, every recorded problem is
one line, the json is strict UTF-8 JSON that validates as an artifact, and no character a
terminal would act on reaches the json or the md raw.

Hostile values: 400-digit integers, 1e308, 1e-300, NaN/Infinity literals (as Python's
``json.dump`` writes them), negative counts, booleans, wrong types, deep nesting, and strings
with ESC/OSC sequences, C1 controls, bidi overrides, lone surrogates, ``|`` and Rich markup.
Example counts are kept small (the suite must stay fast on two cores).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roofline_tui.core.analyze import AnalyzeOptions
from roofline_tui.core.artifact import Artifact
from roofline_tui.core.rounds.analysis import RoundSources, write_artifact
from roofline_tui.core.rounds.annotate import analyze_round_with_history
from roofline_tui.core.rounds.playbook import PriorsError, load_priors
from tests.paths import DEMO, MEASURED_FIXTURES

MEASURED = MEASURED_FIXTURES

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# characters that must never reach an output raw (newline and tab are fine in a file)
RAW_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")

HOSTILE_STRINGS = [
    "\x1b]52;c;ZXZpbA==\x07", "\x1b[2J\x1b[H", "\u202eevil", "[bold red]red[/]", "a|b|c",
    "$_$", "\ud800", "x\udfff", "\x9b31m", "\x00nul", "\x1b]0;title\x1b\\", "`code`",
    "<script>", "\n\r\t", "a" * 300,
]
HOSTILE_NUMBERS: list[Any] = [
    10**400, -(10**400), 1e308, -1e308, 1e-300, float("nan"), float("inf"), float("-inf"),
    -1, -0.0, 0, 2**63, 2**64 + 1, 1e300, 3.5, True, False,
]
hostile_scalar = st.one_of(
    st.sampled_from(HOSTILE_NUMBERS), st.sampled_from(HOSTILE_STRINGS), st.none(),
    st.integers(), st.floats(), st.text(max_size=12),
)
hostile_value = st.recursive(
    hostile_scalar,
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=6), kids,
                                                              max_size=3),
    max_leaves=8,
)


# --------------------------------------------------------------------------- the round


def make_profile(root: Path) -> Path:
    """A copy of the demo (three rounds, env_report, config.json, serving metrics) with a
    stage-B task dir and stage-C counter files; returns the round analysed (round_1)."""
    shutil.copytree(DEMO, root / "demo", ignore=shutil.ignore_patterns("profile_roofline.*"))
    eval_dir = root / "demo"
    shutil.copytree(MEASURED / "eval" / "kernels" / "fused_moe_kernel_task",
                    eval_dir / "kernels" / "fused_moe_kernel_task")
    counters = eval_dir / "profile" / "round_1" / "counters"
    counters.mkdir()
    shutil.copy(MEASURED / "counters" / "worked_example_moe" / "counter_collection.csv",
                counters / "counter_collection.csv")
    shutil.copy(MEASURED / "counters" / "ncu_gemm_details.csv", counters / "ncu_details.csv")
    return eval_dir / "profile" / "round_1"


TARGETS = {
    "env_report": "../../env_report.json",
    "config": "../../config.json",
    "topn": "profile_topN.json",
    "sibling_topn": "../round_0/profile_topN.json",
    "serving_metrics": "serving_metrics.json",
    "sibling_artifact": "../round_0/profile_roofline.json",
    "meta": "../../kernels/fused_moe_kernel_task/meta.json",
    "counter_csv": "counters/counter_collection.csv",
    "ncu_csv": "counters/ncu_details.csv",
    "rocpd": "counters/run.db",
    "peaks": "../../peaks.md",
    "priors": "../../priors.json",
}


def target(rnd: Path, key: str) -> Path:
    return Path(os.path.normpath(rnd / TARGETS[key]))


def check_outputs(json_path: Path, md_path: Path) -> None:
    raw = json_path.read_bytes().decode("utf-8")  # strict UTF-8
    data = json.loads(raw, parse_constant=lambda t: pytest.fail(f"{t} is not JSON"))
    Artifact.model_validate(data)
    md = md_path.read_bytes().decode("utf-8")
    for name, text in (("json", raw), ("md", md)):
        bad = RAW_UNSAFE.search(text.replace("\n", "").replace("\t", ""))
        assert bad is None, f"{name} holds {bad.group()!r} raw"
    names = [e["short_name"] for e in data["entries"]]
    assert len(names) == len(set(names))
    for err in data["skill_errors"]:
        if isinstance(err, str):
            assert "\n" not in err


def run_pipeline(rnd: Path, *, peaks: bool = False, priors: bool = False,
                 timeout: float = 60.0) -> None:
    """``roofline analyze`` in process, bounded in time; every check above on its output."""
    box: dict[str, BaseException] = {}

    def work() -> None:
        try:
            options = AnalyzeOptions()
            if priors:
                try:
                    options.target_eff_overrides, options.target_eff_source = load_priors(
                        target(rnd, "priors"))
                except PriorsError as exc:  # the CLI's one-line usage error
                    assert str(exc) and "\n" not in str(exc)
                    assert RAW_UNSAFE.search(str(exc)) is None
            sources = RoundSources(peaks=target(rnd, "peaks") if peaks else None)
            result = analyze_round_with_history(rnd, sources, options)
            if not result.display_only:
                check_outputs(*write_artifact(result.artifact, rnd))
        except BaseException as exc:  # noqa: BLE001 - reported below
            box["error"] = exc

    t = threading.Thread(target=work, daemon=True)
    t.start()
    t.join(timeout)
    assert not t.is_alive(), f"analysis blocked for {timeout} s"
    if "error" in box:
        raise box["error"]


def with_profile(fn: Callable[[Path], None]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        fn(make_profile(Path(tmp)))


def dump_json(value: Any) -> str:
    """JSON as upstream Python writes it: NaN/Infinity literals, surrogates as escapes."""
    return json.dumps(value, allow_nan=True)


# --------------------------------------------------------------------------- mutation


def paths_of(doc: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix] if prefix else []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += paths_of(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:6]):
            out += paths_of(v, (*prefix, i))
    return out


def set_path(doc: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    node = doc
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return doc


@st.composite
def mutated(draw, base: Any, *, max_edits: int = 5) -> Any:
    doc = json.loads(json.dumps(base))
    paths = paths_of(doc)
    for _ in range(draw(st.integers(1, max_edits))):
        path = draw(st.sampled_from(paths))
        try:
            doc = set_path(doc, path, draw(hostile_value))
        except (KeyError, IndexError, TypeError):
            continue  # an earlier edit replaced a parent
    if draw(st.integers(0, 15)) == 0:
        doc = draw(hostile_value)
    return doc


def map_leaves(doc: Any, fn: Callable[[Any], Any]) -> Any:
    if isinstance(doc, dict):
        return {k: map_leaves(v, fn) for k, v in doc.items()}
    if isinstance(doc, list):
        return [map_leaves(v, fn) for v in doc]
    return fn(doc)


def sweep(base: Any) -> list[tuple[str, Any]]:
    """Deterministic cases: every number in the document becomes one hostile number, or every
    string gets one hostile string appended (names, schema, dtypes, stages all at once)."""
    cases: list[tuple[str, Any]] = []
    for h in HOSTILE_NUMBERS:
        cases.append((f"numbers={h!r:.20}", map_leaves(base, _number_becomes(h))))
    for s in HOSTILE_STRINGS:
        cases.append((f"strings+={s!r:.20}", map_leaves(base, _text_gains(s))))
    return cases


def _number_becomes(h: Any) -> Callable[[Any], Any]:
    """A leaf rewrite: every number (not a bool) becomes ``h``."""
    return lambda v: h if isinstance(v, (int, float)) and not isinstance(v, bool) else v


def _text_gains(s: str) -> Callable[[Any], Any]:
    """A leaf rewrite: every string gets ``s`` appended."""
    return lambda v: v + s if isinstance(v, str) else v


def load_base(key: str) -> Any:
    with tempfile.TemporaryDirectory() as tmp:
        return json.loads(target(make_profile(Path(tmp)), key).read_text())


BASES = {key: load_base(key) for key in ("env_report", "config", "topn", "serving_metrics",
                                         "meta")}


# --------------------------------------------------------------------------- JSON readers


@pytest.mark.parametrize("key", sorted(BASES))
def test_each_hostile_value_everywhere_in_each_json_reader(key: str) -> None:
    for label, doc in sweep(BASES[key]):
        def go(rnd: Path, doc=doc) -> None:
            target(rnd, key).write_text(dump_json(doc))
            run_pipeline(rnd)

        try:
            with_profile(go)
        except AssertionError as exc:
            raise AssertionError(f"{key} with {label}: {exc}") from exc


@pytest.mark.parametrize("key", sorted(BASES))
def test_hostile_values_in_each_json_reader(key: str) -> None:
    @SETTINGS
    @given(doc=mutated(BASES[key]))
    def run(doc: Any) -> None:
        def go(rnd: Path) -> None:
            target(rnd, key).write_text(dump_json(doc))
            run_pipeline(rnd)

        with_profile(go)

    run()


@SETTINGS
@given(doc=mutated(BASES["topn"]))
def test_hostile_values_in_a_sibling_rounds_top_n(doc: Any) -> None:
    def go(rnd: Path) -> None:
        target(rnd, "sibling_topn").write_text(dump_json(doc))
        run_pipeline(rnd)

    with_profile(go)


@SETTINGS
@given(entry=st.dictionaries(st.sampled_from(["short_name", "name", "headroom_class",
                                              "bound_type", "roofline_pct", "pct_gpu_time",
                                              "notes", "route", "stage"]),
                             hostile_value, max_size=6),
       top=st.dictionaries(st.sampled_from(["stage", "gfx", "round", "skill_errors"]),
                           hostile_value, max_size=3))
def test_hostile_stored_artifact_in_a_sibling_round(entry: dict, top: dict) -> None:
    def go(rnd: Path) -> None:
        run_pipeline(rnd.parent / "round_0")  # a real stored artifact first
        path = target(rnd, "sibling_artifact")
        data = json.loads(path.read_text())
        data.update(top)
        if data.get("entries") and isinstance(data["entries"], list):
            data["entries"][0].update(entry)
        path.write_text(dump_json(data))
        run_pipeline(rnd)

    with_profile(go)


# --------------------------------------------------------------------------- text readers


csv_cell = st.one_of(st.sampled_from(HOSTILE_STRINGS), st.sampled_from(
    ["9" * 400, "1e400", "-1e400", "nan", "inf", "-5", "1e308", "1e-300", "", '"', "1,5",
     "27.595.520", "0x10"]), st.text(max_size=8))


@st.composite
def mutated_csv(draw, text: str) -> str:
    lines = text.splitlines()
    for _ in range(draw(st.integers(1, 6))):
        i = draw(st.integers(0, len(lines) - 1))
        cells = lines[i].split(",")
        j = draw(st.integers(0, len(cells) - 1))
        value = draw(csv_cell)
        cells[j] = '"' + value.replace('"', '""') + '"' if draw(st.booleans()) else value
        lines[i] = ",".join(cells)
    if draw(st.integers(0, 10)) == 0:
        lines = lines[: draw(st.integers(0, len(lines)))]
    return "\n".join(lines) + "\n"


COUNTER_CSV = (MEASURED / "counters" / "worked_example_moe" / "counter_collection.csv"
               ).read_text()
NCU_CSV = (MEASURED / "counters" / "ncu_gemm_details.csv").read_text()


@pytest.mark.parametrize("key,base", [("counter_csv", COUNTER_CSV), ("ncu_csv", NCU_CSV)])
def test_hostile_cells_in_counter_csvs(key: str, base: str) -> None:
    @SETTINGS
    @given(text=mutated_csv(base))
    def run(text: str) -> None:
        def go(rnd: Path) -> None:
            target(rnd, key).write_text(text, errors="surrogatepass")
            run_pipeline(rnd)

        with_profile(go)

    run()


@SETTINGS
@given(rows=st.lists(st.tuples(csv_cell, st.sampled_from(["FETCH_SIZE", "WRITE_SIZE",
                                                           "SQ_INSTS_VALU_MFMA_MOPS_F8",
                                                           "\x1b[2J"]),
                               st.one_of(st.sampled_from(HOSTILE_NUMBERS[:12]), csv_cell),
                               st.integers(-5, 5)), max_size=6))
def test_hostile_rows_in_a_rocpd_database(rows: list) -> None:
    import sqlite3

    def go(rnd: Path) -> None:
        con = sqlite3.connect(target(rnd, "rocpd"))
        con.execute("CREATE TABLE pmc_events (kernel_name TEXT, dispatch_id INTEGER, "
                    "counter_name TEXT, value, duration)")
        for name, counter, value, did in rows:
            if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**63:
                value = str(value)
            # sqlite stores UTF-8: a lone surrogate cannot even be written into the database
            name, value = (v.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
                           if isinstance(v, str) else v for v in (name, value))
            con.execute("INSERT INTO pmc_events VALUES (?, ?, ?, ?, ?)",
                        ("fused_moe_kernel" if did > 2 else name, did, counter, value, 1000))
        con.commit()
        con.close()
        run_pipeline(rnd)

    with_profile(go)


PEAKS_BASE = {"gfx": "gfx950", "product": "MI355X", "hbm_bw_bytes_s": 8.0e12,
              "flops": {"bf16": 2.5e15, "fp8": 5.0e15}, "source": "test", "default": True}
SURROGATES: tuple[Literal["Cs"]] = ("Cs",)  # YAML cannot hold lone surrogates
yaml_safe_value = st.recursive(
    st.one_of(st.sampled_from([h for h in HOSTILE_NUMBERS if not isinstance(h, bool)]),
              st.sampled_from([s for s in HOSTILE_STRINGS if not re.search("[\ud800-\udfff]",
                                                                            s)]),
              st.none(), st.booleans(), st.text(alphabet=st.characters(
                  exclude_categories=SURROGATES), max_size=10)),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=5), kids,
                                                              max_size=3),
    max_leaves=6,
)


@SETTINGS
@given(edits=st.dictionaries(st.sampled_from(["gfx", "product", "hbm_bw_bytes_s", "flops",
                                              "source", "default", "cu", "l2_bytes"]),
                             yaml_safe_value, max_size=4),
       tail=st.sampled_from(["", "x: &a [1, 2]\ny: *a\n", "deep: " + "[" * 200 + "]" * 200,
                             "bad: [unclosed\n", "\t: tab\n", "!!python/object:os.system x\n"]))
def test_hostile_peaks_md(edits: dict, tail: str) -> None:
    block = dict(PEAKS_BASE, **edits)
    body = yaml.safe_dump(block, allow_unicode=True) + tail

    def go(rnd: Path) -> None:
        target(rnd, "peaks").write_text(f"# MI355X {edits.get('product', '')}\n\n```yaml\n"
                                        f"{body}```\n", errors="surrogatepass")
        run_pipeline(rnd, peaks=True)

    with_profile(go)


@SETTINGS
@given(values=st.dictionaries(st.sampled_from(["gemm", "moe", "attention_decode",
                                               "\x1b[2J", "elementwise"]), hostile_value,
                              max_size=4),
       wrap=st.sampled_from(["doc", "bare", "yaml", "deep"]))
def test_hostile_priors(values: dict, wrap: str) -> None:
    if wrap == "doc":
        text = dump_json({"schema": "roofline-priors-v1", "target_eff": values,
                          "source": "\x1b]52;c;QQ==\x07"})
    elif wrap == "bare":
        text = dump_json(values)
    elif wrap == "deep":
        text = "[" * 5000 + "]" * 5000
    else:
        text = yaml.safe_dump({"target_eff": json.loads(dump_json(values).replace(
            "\\ud", "\\\\ud"))})

    def go(rnd: Path) -> None:
        target(rnd, "priors").write_text(text)
        run_pipeline(rnd, priors=True)

    with_profile(go)


# --------------------------------------------------------------------------- filesystem states


def _fifo(p: Path) -> None:
    os.mkfifo(p)


def _directory(p: Path) -> None:
    p.mkdir()


def _loop(p: Path) -> None:
    p.symlink_to(p)


def _dev_zero(p: Path) -> None:
    p.symlink_to("/dev/zero")


def _empty(p: Path) -> None:
    p.write_bytes(b"")


def _binary(p: Path) -> None:
    p.write_bytes(b"\xff\xfe\x00\x1b[2J" + bytes(range(256)))


def _truncated(p: Path) -> None:
    p.write_text('{"top_kernels": [{"name": "fused_moe_kernel", "pct_gpu_time": 2')


def _sparse_huge(p: Path) -> None:
    with open(p, "wb") as fh:
        fh.truncate(600 * 1024 * 1024)


def _dangling(p: Path) -> None:
    p.symlink_to(p.parent / "does-not-exist")


FS_STATES = {f.__name__.lstrip("_"): f for f in (_fifo, _directory, _loop, _dev_zero, _empty,
                                                  _binary, _truncated, _sparse_huge, _dangling)}
FS_TARGETS = ["env_report", "config", "topn", "sibling_topn", "serving_metrics", "meta",
              "counter_csv", "ncu_csv", "peaks", "priors"]


@pytest.mark.parametrize("key", FS_TARGETS)
def test_hostile_filesystem_states_for_every_reader(key: str) -> None:
    """Each state in turn replaces the reader's file: the run finishes (no FIFO wait, no
    /dev/zero read, no 600 MiB read), raises nothing and writes a valid pair."""
    for state, make in FS_STATES.items():
        def go(rnd: Path, make=make) -> None:
            path = target(rnd, key)
            if path.exists() or path.is_symlink():
                path.unlink()
            make(path)
            run_pipeline(rnd, peaks=key == "peaks", priors=key == "priors", timeout=30)

        try:
            with_profile(go)
        except AssertionError as exc:
            raise AssertionError(f"{key} as {state}: {exc}") from exc


def test_a_non_utf8_round_directory_name_is_analysed(tmp_path: Path) -> None:
    rnd = make_profile(tmp_path)
    odd = Path(os.fsdecode(bytes(rnd.parent) + b"/round_\xff\x1b[2J"))
    shutil.copytree(rnd.parent / "round_0", odd)
    run_pipeline(rnd)
    run_pipeline(odd)
