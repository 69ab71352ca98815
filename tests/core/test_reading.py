"""Issue 22: one reading of an entry (core/reading.py) — its flags, why it has no verdict, the
advisory rule and the next target — rendered the same by the Markdown, the CSV, the CLI table
and the dashboard."""

from __future__ import annotations

import csv
import io
import json
import re
from contextlib import redirect_stdout
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roofline_tui.app import view
from roofline_tui.cli.analyze import print_summary
from roofline_tui.core import reading
from roofline_tui.core.analyze import rank_entries
from roofline_tui.core.artifact import (
    HEADROOM_CLASSES,
    Artifact,
    CorroborationRow,
    Entry,
    artifact_json_schema,
    artifact_to_json,
)
from roofline_tui.core.markdown import artifact_to_markdown
from roofline_tui.core.opmodels import LeverContext, byte_reduction_levers
from roofline_tui.core.rounds.analysis import analyze_round
from roofline_tui.core.table_csv import artifact_to_csv
from roofline_tui.core.textsafe import md_cell
from tests.paths import DEMO

SYMBOL_TO_FLAG = {symbol: flag for flag, symbol in view.FLAG_SYMBOL.items()}


def verdict(short: str, gain: float, *, headroom: str = "underperforming", **kw) -> Entry:
    """An entry with a verdict: modelled, ``headroom``, ``gain`` % expected end to end."""
    fields = dict(name=short, short_name=short, modeled=True, headroom_class=headroom,
                  bound_type="memory", roofline_pct=0.3, target_eff=0.9,
                  attainable_speedup=1.5, expected_e2e_gain_pct=gain, pct_gpu_time=10.0,
                  confidence="medium", route="kernel_tuning")
    fields.update(kw)
    return Entry(**fields)


def round_of(*entries: Entry, stage: str = "B", gain_order: list[str] | None = None) -> Artifact:
    """A round of ``entries``, ranked as the engine ranks (or in an upstream file's own gain
    order)."""
    by_pct, by_gain = rank_entries(list(entries))
    return Artifact(entries=list(entries), ranking_by_pct=by_pct,
                    ranking_by_expected_gain=gain_order or by_gain, stage=stage)


# -- the flag rule ----------------------------------------------------------------------------

def test_counters_that_contradict_the_model_read_the_same_everywhere() -> None:
    """The issue's entry: counters contradict the model. Before, the CSV showed no flag, the md
    and the CLI ``counters-contradict``, the screen ``caution, counters-contradict`` (its notes
    said the number was not credible). Now every renderer shows both, from one rule."""
    e = verdict("k", 2.0, notes="Stage C. The 12x speedup is not credible here. Measure.",
                corroboration=[CorroborationRow(counter="MemUnitBusy", value=5.0,
                                                verdict="contradicts",
                                                explanation="the memory system is idle")])
    a = round_of(e)
    assert reading.flags(e) == ["caution", "counters-contradict"]
    assert reading.caution(e) == "The 12x speedup is not credible here."
    assert _md_flags(a)["k"] == ["caution", "counters-contradict"]
    assert _csv(a)[0]["flags"] == "caution counters-contradict"
    assert _cli_flags(a)["k"] == ["caution", "counters-contradict"]
    assert view.entry_flags(e) == ["caution", "counters-contradict"]
    assert view.flags_text(e).plain == "!≠"


def test_flag_order_and_the_per_round_advisory() -> None:
    e = Entry(name="k", short_name="k", suspect=True, dispatch_bound=True, contradiction=True,
              regime_assumed=True, model_caution="above 10×", confidence="low")
    assert reading.flags(e) == ["caution", "suspect", "contradiction", "dispatch-bound",
                                "unmodelled", "regime-assumed", "advisory"]
    assert reading.row_flags(e) == reading.flags(e)[:-1]  # advisory: once per round
    # advisory: flagged, or of low confidence (an upstream file may set only the confidence)
    assert reading.is_advisory(Entry(name="a", short_name="a", confidence="low"))
    assert reading.is_advisory(Entry(name="a", short_name="a", confidence="high", advisory=True))
    assert not reading.is_advisory(Entry(name="a", short_name="a", confidence="medium"))
    assert reading.round_is_advisory(round_of(verdict("x", 1.0), verdict("y", 1.0,
                                                                         confidence="low")))


def test_the_no_verdict_label_is_the_first_no_verdict_flag() -> None:
    e = Entry(name="k", short_name="k", modeled=True, dispatch_bound=True, suspect=True)
    assert reading.no_verdict_flag(e) == "suspect"
    assert reading.no_verdict_label(e) == "– suspect"
    assert view.headroom_text(e).plain == "– suspect"
    assert reading.no_verdict_label(verdict("v", 1.0, suspect=True)) is None  # has a verdict
    assert reading.no_verdict_label(Entry(name="u", short_name="u")) == "– unmodelled"


# -- the next target --------------------------------------------------------------------------

def test_caution_is_skipped() -> None:
    a = round_of(verdict("wild", 9.0, model_caution="12x is NOT credible"), verdict("ok", 2.0))
    nt = reading.next_target(a)
    assert nt.short_name == "ok" and not nt.host_side
    assert [(s.short_name, s.reason) for s in nt.skipped] == [("wild", "caution")]
    assert "12x is NOT credible" in nt.skipped[0].detail
    assert nt.line.startswith("Next: ok — kernel_tuning — underperforming: memory-bound at 30%")
    assert nt.line.endswith(" · skipped higher: 1 with an implausible speedup (!)")


def test_a_host_side_entry_above_is_named_with_its_levers() -> None:
    a = round_of(verdict("cijk", 5.0, editable=False, route="host_side"), verdict("mine", 2.0))
    nt = reading.next_target(a)
    assert nt.short_name == "mine" and not nt.host_side
    assert nt.skipped[0].reason == "host-side"
    assert "dispatch, tuning DB, backend" in nt.skipped[0].detail
    # the editable-first rule says what it traded: the bigger host-side win, with its size
    assert nt.skipped[0].expected_e2e_gain_pct == 5.0
    assert nt.line.endswith(" · above it: cijk — a bigger win host-side: gain 5.00% vs 2.00% "
                            "here, passed over for an editable call site (dispatch, tuning DB, "
                            "backend)")
    # no editable entry qualifies: the host-side one is the pick, its levers host-side
    alone = reading.next_target(round_of(verdict("cijk", 5.0, editable=False,
                                                 route="host_side")))
    assert alone.short_name == "cijk" and alone.host_side and alone.skipped == []
    assert alone.line == ("Next: cijk — host-side levers only (dispatch, tuning DB, backend) "
                          "(gain 5.00%, speedup 1.50×, confidence medium)")


def test_never_a_zero_gain_pick() -> None:
    # an upstream file's gain order may rank 0.00 % entries first; the engine ranks them last
    a = round_of(verdict("flat", 0.004), verdict("none", 0.0, headroom="moderate"),
                 verdict("real", 0.4, headroom="moderate"),
                 gain_order=["flat", "none", "real"])
    nt = reading.next_target(a)
    assert nt.short_name == "real"
    assert {s.short_name: s.reason for s in nt.skipped} == {"flat": "zero-gain",
                                                              "none": "zero-gain"}
    assert "skipped higher: 2 with 0.00% gain" in nt.line
    only_zero = reading.next_target(round_of(verdict("flat", 0.0)))
    assert only_zero.kernel is None and "gain 0.00" not in only_zero.line
    assert only_zero.line == ("Next: no entry with a verdict qualifies: follow the GPU-time "
                              "order · skipped with a verdict: 1 with 0.00% gain")


def test_a_saturated_top_says_so_with_its_lever_then_the_next_real_opportunity() -> None:
    # a big saturated head still gains more than a small underperforming one: it ranks first
    moe = verdict("fused_moe_kernel", 4.0, headroom="saturated", roofline_pct=0.92,
                  route="byte_reduction",
                  byte_reduction_levers=["make sure unrouted experts are never read: streaming "
                                         "all of them costs 13% more",
                                         "constraint: isl/osl stay as supplied"])
    a = round_of(moe, verdict("paged_attention", 3.0, bound_type="latency"))
    nt = reading.next_target(a)
    assert nt.short_name == "paged_attention"
    (sat,) = nt.skipped
    assert sat.reason == "saturated" and sat.detail.startswith("saturated at 92% of its memory")
    assert sat.lever is not None and sat.lever.startswith("make sure unrouted experts")
    # the pick first, as the artifact's next_target names it; then the saturated one above it
    assert nt.line.startswith("Next: paged_attention — kernel_tuning — underperforming: "
                              "latency-bound")
    assert nt.line.endswith(" · above it: fused_moe_kernel: saturated, no tuning headroom — "
                            "move fewer bytes: make sure unrouted experts are…")
    # nothing else has headroom: it says so, then names the saturated entry
    alone = reading.next_target(round_of(moe.model_copy(update={"expected_e2e_gain_pct": 0.0})))
    assert alone.kernel is None and alone.why == "no other entry has tuning headroom"
    assert alone.line == ("Next: no other entry has tuning headroom · fused_moe_kernel: "
                          "saturated, no tuning headroom — move fewer bytes: make sure unrouted "
                          "experts are…")


def test_a_host_side_pick_skips_only_what_ranks_above_it() -> None:
    """The pick is host-side (no editable entry qualifies): ``cijk`` at 5.00 %. Below it rank a
    saturated compute-bound GEMM (0.40 %) and a 0.00 % entry. Before, every entry with a verdict
    was listed as skipped, and the line opened with the GEMM that ranks below the pick, told to
    "move fewer bytes". Now nothing ranked below the pick is named."""
    gemm = verdict("nvjet_sat", 0.4, headroom="saturated", bound_type="compute",
                   roofline_pct=0.95, route="byte_reduction",
                   byte_reduction_levers=byte_reduction_levers("gemm", _compute_bound("nvjet")))
    a = round_of(verdict("cijk", 5.0, editable=False, route="host_side"), gemm,
                 verdict("flat", 0.0))
    nt = reading.next_target(a)
    assert nt.short_name == "cijk" and nt.host_side and nt.skipped == []
    assert nt.line == ("Next: cijk — host-side levers only (dispatch, tuning DB, backend) "
                       "(gain 5.00%, speedup 1.50×, confidence medium)")


def _compute_bound(short: str) -> LeverContext:
    return LeverContext(short_name=short, bound_type="compute", weight_dtype="bf16",
                        kv_dtype=None, alternatives=[], chosen_label=None, neighbours=[])


def test_a_saturated_compute_bound_gemm_above_the_pick_names_its_own_lever() -> None:
    """A saturated compute-bound GEMM (6.00 %) ranks above the editable pick (2.00 %): it is
    named after the pick, with its own lever — fewer FLOPs (the engine's first lever for a
    compute-bound saturated entry), never "move fewer bytes"."""
    gemm = verdict("nvjet_sat", 6.0, headroom="saturated", bound_type="compute",
                   roofline_pct=0.95, route="byte_reduction",
                   byte_reduction_levers=byte_reduction_levers("gemm", _compute_bound("nvjet")))
    nt = reading.next_target(round_of(gemm, verdict("mine", 2.0)))
    assert nt.short_name == "mine"
    (sat,) = nt.skipped
    assert sat.reason == "saturated" and sat.bound_type == "compute"
    assert sat.lever is not None and sat.lever.startswith("compute-bound and saturated")
    assert nt.line.startswith("Next: mine — kernel_tuning")
    assert nt.line.endswith(" · above it: nvjet_sat: saturated, no tuning headroom — do fewer "
                            "FLOPs: lower precision, skipping padded tiles")
    assert "move fewer bytes" not in nt.line


def test_editable_first_says_what_it_traded_on_mi300x_qwen15() -> None:
    """Qwen1.5-0.5B-Chat decode on MI300X: the CK flash-attention kernel (a precompiled .so, no
    editable call site: host-side, a backend switch) takes 20.3 % of GPU time at 0.2143 of its
    roof against a 0.50 target: 0.50 / 0.2143 = 2.333×, gain 20.3·(1 − 1/2.333) = 11.60 %. A
    triton fused add-RMSNorm kernel takes 9.9 % at 0.4861 against 0.875: 1.80×, gain
    9.9·(1 − 1/1.8) = 4.40 %. Editable first picks the 4.40 % kernel; the line names the
    11.60 % host-side win it passed over, with both sizes."""
    attn = verdict("FmhaFwdKernel", 11.6, editable=False, route="host_side",
                   name="void ck_tile::kentry<128, 1, ck_tile::FmhaFwdKernel<ck_tile::"
                        "BlockFmhaPipelineQRKSVSAsync<ck_tile::BlockFmhaPipelineProblem<"
                        "ck_tile::bf16_t> > > >(ck_tile::FmhaFwdKernel::Kargs)",
                   bound_type="latency", roofline_pct=0.2143, target_eff=0.5,
                   attainable_speedup=2.333, pct_gpu_time=20.3)
    norm = verdict("triton_red_fused_add_rms_norm_0", 4.4, roofline_pct=0.4861,
                   target_eff=0.875, attainable_speedup=1.8, pct_gpu_time=9.9)
    nt = reading.next_target(round_of(attn, norm))
    assert nt.short_name == "triton_red_fused_add_rms_norm_0" and not nt.host_side
    assert nt.line.startswith("Next: triton_red_fused_add_rms_norm_0 — kernel_tuning — "
                              "underperforming: memory-bound at 49% of its roof, target 88% "
                              "(gain 4.40%, speedup 1.80×, confidence medium)")
    (host,) = nt.skipped
    assert host.reason == "host-side" and host.expected_e2e_gain_pct == 11.6
    assert nt.line.endswith(f" · above it: {host.label} — a bigger win host-side: gain 11.60% "
                            "vs 4.40% here, passed over for an editable call site (dispatch, "
                            "tuning DB, backend)")


def test_part_of_another_logical_op_is_skipped() -> None:
    a = round_of(verdict("reduce", 4.0, part_of="main"), verdict("other", 1.0))
    nt = reading.next_target(a)
    assert nt.short_name == "other"
    assert nt.skipped[0].reason == "part-of" and "main" in nt.skipped[0].detail


def test_advisory_and_empty_rounds() -> None:
    a = round_of(verdict("k", 2.0, confidence="low", advisory=True), stage="A")
    nt = reading.next_target(a)
    assert nt.advisory and nt.line.startswith("Next (advisory, stage A): k — ")
    assert reading.next_target(Artifact()).line == "Next: nothing analysed yet"
    none = reading.next_target(round_of(Entry(name="u", short_name="u", confidence="high")))
    assert none.line == "Next: no entry has a trustworthy verdict: follow the GPU-time order"


def test_the_demo_rounds_and_the_artifact_field() -> None:
    r0 = analyze_round(DEMO / "profile" / "round_0").artifact
    assert r0.next_target is not None and r0.next_target.short_name == "kernel_paged_attention_2d"
    r2 = analyze_round(DEMO / "profile" / "round_2").artifact
    nt = r2.next_target
    assert nt is not None and nt == reading.next_target(r2)
    # the hipBLASLt GEMM (3.38 %, host-side) is the pick; the MoE (saturated, 0.00 %) ranks
    # below it, so it was not passed over and is not named (before, every entry with a verdict
    # was listed as skipped behind a host-side pick, and the MoE led the line)
    assert nt.host_side and nt.short_name is not None and nt.short_name.startswith("Cijk_")
    assert nt.skipped == [] and "fused_moe_kernel" not in nt.line
    assert nt.line.startswith(f"Next (advisory, stage A): {nt.label} — host-side levers only")
    stored = json.loads(artifact_to_json(r2))["next_target"]
    assert stored["line"] == nt.line and stored["skipped"] == []
    loaded = Artifact.model_validate(json.loads(artifact_to_json(r2))).next_target
    assert loaded is not None and loaded.model_dump() == nt.model_dump()
    schema = artifact_json_schema()
    assert "NextTarget" in schema["$defs"] and "next_target" in schema["properties"]
    assert "NextSkipped" in schema["$defs"]


# -- the four renderers agree -----------------------------------------------------------------

def _md_flags(a: Artifact) -> dict[str, list[str]]:
    md = artifact_to_markdown(a)
    rows = [line for line in md.splitlines() if re.match(r"^\| \d+ \| `", line)]
    out: dict[str, list[str]] = {}
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        if len(cells) != 19:  # the two-rankings table below starts alike
            continue
        flags = cells[-1]
        out[cells[1].strip("`")] = [] if flags == "–" else flags.split(", ")
    return out


def _csv(a: Artifact) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(artifact_to_csv(a))))


def _cli(a: Artifact) -> list[str]:
    buf = io.StringIO()
    with redirect_stdout(buf):
        print_summary(a, Path("round_0/profile_roofline.json"))
    return buf.getvalue().splitlines()


def _cli_flags(a: Artifact) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in _cli(a)[3:-2]:  # title, header, rule … rows … wrote, Next
        cells = re.split(r"\s{2,}", line.strip())
        out[cells[1]] = [] if cells[-1] == "–" else cells[-1].split(", ")
    return out


NAME = st.text(alphabet="abcdefghij_", min_size=1, max_size=8)
RARELY = st.sampled_from([False, False, False, True])  # a flag on about one entry in four
GAINS = st.one_of(st.none(), st.sampled_from([0.0, 0.001, 0.004, 0.005, 0.5, 3.2]),
                  st.floats(0.0, 30.0, allow_nan=False))


@st.composite
def artifacts(draw: st.DrawFn) -> Artifact:
    entries: list[Entry] = []
    for i in range(draw(st.integers(0, 6))):
        short = f"k{i}_{draw(NAME)}"
        entries.append(Entry(
            name=short, short_name=short,
            pct_gpu_time=draw(st.floats(0.0, 40.0)),
            modeled=draw(st.booleans()),
            headroom_class=draw(st.sampled_from((*HEADROOM_CLASSES, "underperforming",
                                                 "moderate"))),
            bound_type=draw(st.sampled_from(["memory", "compute", "latency"])),
            roofline_pct=draw(st.floats(0.0, 1.0)),
            expected_e2e_gain_pct=draw(GAINS),
            attainable_speedup=draw(st.one_of(st.none(), st.floats(1.0, 20.0))),
            confidence=draw(st.sampled_from(["low", "medium", "high"])),
            advisory=draw(st.booleans()),
            suspect=draw(RARELY),
            dispatch_bound=draw(RARELY),
            contradiction=draw(RARELY),
            regime_assumed=draw(RARELY),
            editable=draw(st.sampled_from([None, True, False])),
            model_caution=draw(st.sampled_from([None, None, None, "12x is not credible"])),
            notes=draw(st.sampled_from(["", "fine", "", "The 75x speedup is implausible here."])),
            part_of=draw(st.sampled_from([None, None, None, None, "k0_x"])),
            route=draw(st.sampled_from([None, "kernel_tuning", "host_side", "byte_reduction"])),
            byte_reduction_levers=draw(st.sampled_from(
                [[], ["fuse `q` (quant, 1% GPU) into this kernel: removes a round-trip"]])),
            corroboration=[CorroborationRow(counter="c", value=1.0, verdict=v, explanation="x")
                           for v in draw(st.lists(st.sampled_from(
                               ["supports", "contradicts", "neutral"]), max_size=2))],
        ))
    by_pct, by_gain = rank_entries(entries)
    if draw(st.booleans()):  # an upstream file's own order
        by_gain = draw(st.permutations(by_gain))
    return Artifact(entries=entries, ranking_by_pct=by_pct, ranking_by_expected_gain=by_gain,
                    stage=draw(st.sampled_from(["A", "B", "C"])))


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(artifacts())
def test_markdown_csv_cli_and_dashboard_agree(a: Artifact) -> None:
    nt = reading.next_target(a)
    md = artifact_to_markdown(a)
    rows = _csv(a)
    cli = _cli(a)
    md_flags = _md_flags(a)
    cli_flags = _cli_flags(a)
    assert len(rows) == len(a.entries) == len(md_flags) == len(cli_flags)
    for e in a.entries:
        every = list(reading.flags(e))
        per_row = [f for f in every if f not in reading.ROUND_FLAGS]
        assert md_flags[e.short_name] == every
        row = next(r for r in rows if r["short_name"] == e.short_name)
        assert row["flags"].split() == every
        assert row["next_target"] == reading.next_role(nt, e)
        assert cli_flags[e.short_name] == per_row
        assert view.entry_flags(e) == per_row
        assert [SYMBOL_TO_FLAG[c] for c in view.flags_text(e).plain] == per_row
    # the same next target: the md's line near the top, the CLI's last line, the screen's line
    assert f"**{md_cell(nt.line)}**" in md.splitlines()[:4]
    assert cli[-1] == nt.line
    assert view.next_target(a).plain == nt.line
    picks = [r["short_name"] for r in rows if r["next_target"].startswith("next")]
    assert picks == ([nt.short_name] if nt.short_name else [])
    # the rule itself: never a 0.00 % gain, a caution, a suspect, a saturated or a part-of pick;
    # a host-side pick only when no editable entry qualifies
    if nt.short_name is not None:
        pick = a.entry(nt.short_name)
        assert pick is not None and pick.has_verdict
        assert round(pick.expected_e2e_gain_pct or 0.0, 2) > 0
        assert not (reading.caution(pick) or pick.suspect or pick.part_of)
        assert pick.headroom_class != "saturated"
        assert nt.host_side == (pick.editable is False)
        if not nt.host_side:
            ranked = reading.gain_order(a)
            above = ranked[:next(i for i, e in enumerate(ranked) if e is pick)]
            assert {s.short_name for s in nt.skipped} == {e.short_name for e in above
                                                          if e.has_verdict}
