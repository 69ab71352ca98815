"""Property-based tests (hypothesis): any JSON value in any field never raises out of analyze,
and the spec's invariants hold on every artifact (issue 8)."""

from __future__ import annotations

import json
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roofline_tui.core.analyze import AnalyzeOptions, RoundInputs, analyze
from roofline_tui.core.artifact import BOUND_TYPES, HEADROOM_CLASSES, Artifact, artifact_to_json
from roofline_tui.core.inputs import load_env_report, load_topn, parse_env_report, parse_topn
from roofline_tui.core.model_config import load_model_config
from roofline_tui.core.peaks import load_peak_table, resolve_peaks
from tests.paths import WORKED_EXAMPLE

FIXTURE = WORKED_EXAMPLE
BASE_TOPN = json.loads((FIXTURE / "profile" / "round_0" / "profile_topN.json").read_text())
BASE_ENV = json.loads((FIXTURE / "env_report.json").read_text())
MODEL, _ = load_model_config(FIXTURE / "config.json")
SECTIONS, _ = load_peak_table()
PEAKS = resolve_peaks(SECTIONS, gfx="gfx950", product="MI355X")

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**12, 10**12)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
ENTRY_KEYS = sorted({k for e in BASE_TOPN["top_kernels"] for k in e})
TOP_KEYS = ["source", "total_gpu_time_ms", "serving", "top_kernels"]


@st.composite
def mutated_topn(draw):
    doc = json.loads(json.dumps(BASE_TOPN))
    for k in draw(st.lists(st.sampled_from(TOP_KEYS[:-1]), max_size=2, unique=True)):
        doc[k] = draw(json_values)
    for entry in doc["top_kernels"]:
        for k in draw(st.lists(st.sampled_from(ENTRY_KEYS), max_size=4, unique=True)):
            entry[k] = draw(json_values)
    if draw(st.booleans()):
        doc["top_kernels"].append(draw(json_values))
    if draw(st.integers(0, 9)) == 0:
        doc = draw(json_values)
    return doc


def check_invariants(art: Artifact, topn_doc) -> None:
    data = json.loads(artifact_to_json(art))
    again = Artifact.model_validate(data)  # the artifact validates against its own model
    assert again.ranking_by_pct == art.ranking_by_pct
    names = [e.short_name for e in art.entries]
    assert len(set(names)) == len(names)
    assert sorted(art.ranking_by_pct) == sorted(names)
    assert sorted(art.ranking_by_expected_gain) == sorted(names)
    inputs_pct = set()
    if isinstance(topn_doc, dict) and isinstance(topn_doc.get("top_kernels"), list):
        for k in topn_doc["top_kernels"]:
            if isinstance(k, dict) and isinstance(k.get("pct_gpu_time"), (int, float)):
                inputs_pct.add(float(k["pct_gpu_time"]))
    for e in art.entries:
        assert e.bound_type in BOUND_TYPES
        assert e.headroom_class in HEADROOM_CLASSES
        assert e.pct_gpu_time in inputs_pct  # copied verbatim, never recomputed
        if e.has_verdict:
            assert e.roofline_pct is not None and 0 < e.roofline_pct <= 1
            assert e.attainable_speedup is not None and e.attainable_speedup >= 1
            assert e.expected_e2e_gain_pct is not None and math.isfinite(e.expected_e2e_gain_pct)
        if e.suspect:
            assert e.headroom_class == "unknown"
        if e.headroom_class == "saturated":
            assert e.byte_reduction_levers
        else:
            assert e.byte_reduction_levers == []
        for v in (e.bytes_est, e.flops_est, e.hbm_util, e.roofline_pct):
            assert v is None or math.isfinite(v)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=mutated_topn(), env_mut=st.dictionaries(st.sampled_from(sorted(BASE_ENV)), json_values,
                                                   max_size=3))
def test_any_json_in_any_field_never_raises(doc, env_mut) -> None:
    topn, _ = parse_topn(doc)
    env_doc = dict(BASE_ENV, **env_mut)
    env, _ = parse_env_report(env_doc)
    art = analyze(RoundInputs(topn=topn, peaks=PEAKS, env=env, model=MODEL),
                  AnalyzeOptions())
    check_invariants(art, doc)


@settings(max_examples=60, deadline=None)
@given(pcts=st.lists(st.floats(0, 100), min_size=0, max_size=30),
       times=st.lists(st.floats(1e-4, 5.0), min_size=30, max_size=30),
       threshold=st.floats(0, 50), max_heads=st.integers(0, 12))
def test_head_selection_and_rankings(pcts, times, threshold, max_heads) -> None:
    kernels = ["fused_moe_kernel", "kernel_paged_attention_2d", "rms_norm_kernel",
               "act_and_mul_kernel", "Cijk_Ailk_Bljk", "nccl_all_reduce", "mystery"]
    doc = {"top_kernels": [
        {"name": f"{kernels[i % len(kernels)]}_{i}", "pct_gpu_time": p,
         "base_latency_ms": {"decode": times[i]}, "served_regimes": ["decode"],
         "shapes": [[[64, 2048], [2048, 4096]]], "calls_per_step": {"decode": 40}}
        for i, p in enumerate(pcts)]}
    topn, problems = parse_topn(doc)
    assert problems == []
    art = analyze(RoundInputs(topn=topn, peaks=PEAKS, model=MODEL),
                  AnalyzeOptions(head_threshold_pct=threshold, max_heads=max_heads))
    check_invariants(art, doc)
    expected = sorted((p for p in pcts if p >= threshold), reverse=True)[:max_heads]
    kept = [e.pct_gpu_time for e in art.entries]
    assert None not in kept
    assert sorted((p for p in kept if p is not None), reverse=True) == expected
    assert art.degraded == [] or all(d.name in art.ranking_by_pct for d in art.degraded)
    verdicts = [art.entry(s) for s in art.ranking_by_expected_gain]
    assert None not in verdicts
    flags = [e.has_verdict for e in verdicts if e is not None]
    assert flags == sorted(flags, reverse=True), "entries with a verdict come first"


@settings(max_examples=80, deadline=None)
@given(raw=st.binary(max_size=400))
def test_loaders_never_raise_on_bytes(raw, tmp_path_factory) -> None:
    d = tmp_path_factory.mktemp("raw")
    for name in ("profile_topN.json", "env_report.json", "config.json"):
        (d / name).write_bytes(raw)
    topn, problems, _ = load_topn(d / "profile_topN.json")
    assert topn is not None or problems
    env, _ = load_env_report(d / "env_report.json")
    model, model_problems = load_model_config(d / "config.json")
    assert model is not None or model_problems
