"""The one reading of an entry: its flags, why it has no verdict, whether it is advisory, and the
round's headline answer, which kernel to work on next.

Every renderer takes these from here and only formats them: the Markdown (``core/markdown.py``),
the CSV (``core/table_csv.py``), ``roofline analyze``'s table (``cli/analyze.py``) and the
dashboard (``app/view.py``, which owns the symbols and styles). Nothing here formats for a
terminal; strings that come from a file pass through :func:`printable`.

Flags, most important first (:data:`FLAGS` is the order):

* ``caution`` — the speedup is not to be taken at face value: the entry's ``model_caution``, or
  a ``notes`` sentence saying the number is not credible (upstream writes it there);
* ``suspect`` — the model implies an impossible rate: above peak, under 0.1 % of it (it
  under-counts), or no bytes at all (spec L3);
* ``contradiction`` — a measured speedup beat the prediction (spec §8.4);
* ``counters-contradict`` — a stage-C counter contradicts the bound type;
* ``dispatch-bound`` — the per-launch time is within launch-overhead scale;
* ``unmodelled`` — no byte/FLOP model;
* ``regime-assumed`` — nothing recorded says which regime the kernel ran in;
* ``advisory`` — stage A / low confidence: rank on pct_gpu_time. A table shows it once per round
  (:data:`ROUND_FLAGS`, :func:`row_flags`); the files keep it on each row.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

from roofline_tui.core import units
from roofline_tui.core.artifact import (
    Artifact,
    CounterFileJoin,
    Entry,
    NextSkipped,
    NextSkipReason,
    NextTarget,
    StepTarget,
)
from roofline_tui.core.demangle import display_name, fit
from roofline_tui.core.labels import LABEL_MAX
from roofline_tui.core.lazy_re import lazy_compile
from roofline_tui.core.textsafe import printable
from roofline_tui.core.topn_ext import RankSpread, RankTrace

if TYPE_CHECKING:
    from roofline_tui.core.inputs import TopN

__all__ = [
    "FLAGS",
    "Flag",
    "LinePart",
    "NO_VERDICT_LABEL",
    "ROUND_FLAGS",
    "RankView",
    "caution",
    "flags",
    "gain_order",
    "is_advisory",
    "next_line",
    "next_parts",
    "next_role",
    "next_target",
    "no_verdict_flag",
    "no_verdict_label",
    "own_lever",
    "rank_tag",
    "rank_view",
    "round_is_advisory",
    "row_flags",
    "several_ranks",
    "spread_ratio",
    "spread_text",
]

Flag = Literal["caution", "suspect", "contradiction", "counters-contradict", "dispatch-bound",
               "unmodelled", "regime-assumed", "advisory"]
FLAGS: tuple[Flag, ...] = get_args(Flag)
# flags a table states once for the round (its header), not on every row
ROUND_FLAGS: frozenset[Flag] = frozenset({"advisory"})

# What the headroom cell of an entry without a verdict reads: the first of these flags it has.
NO_VERDICT_LABEL: dict[Flag, str] = {
    "suspect": "– suspect",
    "contradiction": "– contradiction",
    "counters-contradict": "– counters ≠",
    "dispatch-bound": "– dispatch-bound",
    "unmodelled": "– unmodelled",
}

_CAUTION_WORDS = lazy_compile(r"not credible|implausible|do not quote", re.IGNORECASE)


# ---------------------------------------------------------------------------------------------
# one entry


def caution(e: Entry) -> str | None:
    """Why this entry's speedup must not be taken at face value, or None.

    The entry's ``model_caution`` (a sentence: the field is a string, so an upstream file's
    ``true`` does not load); failing that, the ``notes`` sentence that says the number is not
    credible.
    """
    if e.model_caution and e.model_caution.strip():
        return e.model_caution.strip()
    notes = e.notes or ""
    m = _CAUTION_WORDS.search(notes)
    if m:
        start = max(notes.rfind(". ", 0, m.start()) + 2, 0) if ". " in notes[:m.start()] else 0
        end = notes.find(". ", m.end())
        return notes[start:end + 1 if end >= 0 else len(notes)].strip()
    return None


def is_advisory(e: Entry) -> bool:
    """The advisory rule for one entry: flagged advisory, or of low confidence (stage A)."""
    return bool(e.advisory) or e.confidence == "low"


def round_is_advisory(artifact: Artifact) -> bool:
    """A round is advisory when any of its entries is."""
    return any(is_advisory(e) for e in artifact.entries)


def flags(e: Entry) -> list[Flag]:
    """The entry's flags, in :data:`FLAGS` order."""
    found: set[Flag] = set()
    if caution(e):
        found.add("caution")
    if e.suspect:
        found.add("suspect")
    if e.contradiction:
        found.add("contradiction")
    if any(c.verdict == "contradicts" for c in e.corroboration):
        found.add("counters-contradict")
    if e.dispatch_bound:
        found.add("dispatch-bound")
    if not e.modeled:
        found.add("unmodelled")
    if e.regime_assumed:
        found.add("regime-assumed")
    if is_advisory(e):
        found.add("advisory")
    return [f for f in FLAGS if f in found]


def row_flags(e: Entry) -> list[Flag]:
    """The flags a table row shows: :func:`flags` less those stated once per round."""
    return [f for f in flags(e) if f not in ROUND_FLAGS]


def no_verdict_flag(e: Entry) -> Flag | None:
    """The flag that says why an entry has no verdict (None when it has one, or none says)."""
    if e.has_verdict:
        return None
    return next((f for f in flags(e) if f in NO_VERDICT_LABEL), None)


def no_verdict_label(e: Entry) -> str | None:
    """``– dispatch-bound``: the short form of :func:`no_verdict_flag`."""
    f = no_verdict_flag(e)
    return None if f is None else NO_VERDICT_LABEL[f]


# ---------------------------------------------------------------------------------------------
# several ranks of one run


@dataclass(frozen=True)
class RankView:
    """The ranks (or GPUs) a round's Top-N was built from, and each kernel's spread across them.

    Read from the Top-N's extension (``core.topn_ext``: the document's ``RankSet``, each row's
    ``RankSpread``); the artifact does not carry it, so a renderer is handed one beside the
    artifact (:func:`rank_view` of the round's Top-N)."""

    unit: str  # "rank" (one trace per rank) or "device" (the GPUs of one export)
    rank: int  # the rank (or device) whose Top-N this is
    chosen_by: str  # --rank, --device-index or slowest
    traces: tuple[RankTrace, ...]
    spreads: dict[str, RankSpread]  # by the kernel's full name

    @property
    def several(self) -> bool:
        """Whether there is a spread to speak of: two traces (or GPUs) or more."""
        return len(self.traces) >= 2

    def spread_of(self, e: Entry) -> RankSpread | None:
        """The entry's spread across the ranks, or None (one trace, or not recorded for it)."""
        return self.spreads.get(e.name) if self.several else None


def rank_view(topn: TopN | None) -> RankView | None:
    """The rank block of a parsed Top-N, or None when it records none (a single-trace import
    from before rank blocks, an upstream Top-N)."""
    ext = getattr(topn, "ext", None)
    block = getattr(ext, "ranks", None)
    if topn is None or block is None:
        return None
    spreads: dict[str, RankSpread] = {}
    for k in topn.entries:
        spread = k.ext.ranks if k.ext is not None else None
        if spread is not None:
            spreads.setdefault(k.name, spread)
    return RankView(unit=block.unit, rank=block.rank, chosen_by=block.chosen_by,
                    traces=tuple(block.traces), spreads=spreads)


def several_ranks(view: RankView | None) -> RankView | None:
    """``view`` when it has two traces or more (the tables then get a spread column), else
    None."""
    return view if view is not None and view.several else None


def spread_ratio(s: RankSpread) -> float | None:
    """The slowest rank's time per launch over the median's (1.0: no straggler); None when the
    median is zero."""
    return s.max_us / s.median_us if s.median_us > 0 else None


def rank_tag(rank: int, unit: str = "rank") -> str:
    """``r1`` for rank 1, ``gpu1`` for device 1."""
    return f"{'gpu' if unit == 'device' else 'r'}{rank}"


def spread_text(s: RankSpread | None, unit: str = "rank") -> str:
    """The spread in one cell: max/median per launch and the slowest rank, ``1.21× r1``;
    ``–`` without one."""
    if s is None:
        return units.DASH
    ratio = spread_ratio(s)
    shown = units.DASH if ratio is None else f"{ratio:.2f}×"
    return f"{shown} {rank_tag(s.slowest_rank, unit)}"


# ---------------------------------------------------------------------------------------------
# the next target


def gain_order(artifact: Artifact) -> list[Entry]:
    """The entries in the gain ranking's order (a repeated short name takes the next entry of
    that name; entries the ranking does not name follow, in file order)."""
    by_short: dict[str, list[int]] = defaultdict(list)
    for i, e in enumerate(artifact.entries):
        by_short[e.short_name].append(i)
    used: dict[str, int] = defaultdict(int)
    order: list[int] = []
    for name in artifact.ranking_by_expected_gain:
        idx = by_short.get(name, [])
        if used[name] < len(idx):
            order.append(idx[used[name]])
            used[name] += 1
    taken = set(order)
    order += [i for i in range(len(artifact.entries)) if i not in taken]
    return [artifact.entries[i] for i in order]


def gain_with_steps(artifact: Artifact) -> list[Entry | StepTarget]:
    """The gain ranking with the step's own targets (``artifact.step_targets``: idle gaps,
    exposed communication, copies) among its entries: each before the first entry whose
    expected gain is lower (no gain counts as lower), as the Next line weighs them."""
    out: list[Entry | StepTarget] = list(gain_order(artifact))
    for step in sorted(artifact.step_targets, key=lambda t: -t.expected_e2e_gain_pct):
        at = next((i for i, x in enumerate(out) if _gain(x) < step.expected_e2e_gain_pct),
                  len(out))
        out.insert(at, step)
    return out


def _gain(x: Entry | StepTarget) -> float:
    g = x.expected_e2e_gain_pct
    return float(g) if isinstance(g, (int, float)) else float("-inf")


def label_of(e: Entry, limit: int = 40) -> str:
    """The readable name: the demangled function name (or the name itself), printable, cut in
    the middle past ``limit`` (the tail tells library kernels apart). An entry whose recorded
    launches say more (``Entry.label``, core.labels: a GEMM's shape and module, an op) leads
    with that, its short name kept in brackets so its table row can still be found."""
    name = fit(printable(display_name(e.name)), limit)
    label = getattr(e, "label", None)
    if isinstance(label, str) and label.strip() and label not in (e.short_name, name):
        return f"{printable(label, limit=LABEL_MAX)} [{fit(printable(e.short_name), limit)}]"
    return name


def _zero_gain(e: Entry) -> bool:
    g = e.expected_e2e_gain_pct
    return g is None or round(g, 2) <= 0.0


def _lever(e: Entry) -> str | None:
    levers = [lv for lv in e.byte_reduction_levers if not lv.startswith("constraint:")]
    return printable(levers[0]) if levers else None


def _skip_reason(e: Entry) -> tuple[NextSkipReason, str] | None:
    """Why an entry with a verdict is not the next target; None when it qualifies (an
    editable one) or is host-side with a real gain (``host-side``, decided by the caller)."""
    if e.part_of:
        return "part-of", f"judged in the logical op of {printable(e.part_of, limit=60)}"
    why = caution(e)
    if why:
        return "caution", printable(why, limit=200)
    if e.suspect:
        return "suspect", printable(e.no_verdict_reason or "the model implies a rate above peak",
                                    limit=200)
    if e.headroom_class == "saturated":
        return "saturated", (f"saturated at {units.pct(e.roofline_pct)} of its "
                             f"{printable(e.bound_type)} roof, no tuning headroom")
    if _zero_gain(e):
        return "zero-gain", f"expected gain {units.pct_points(e.expected_e2e_gain_pct, 2)}"
    return None


def _why(e: Entry) -> str:
    """One clause: where the kernel sits against its roof."""
    return (f"{printable(e.headroom_class)}: {printable(e.bound_type)}-bound at "
            f"{units.pct(e.roofline_pct)} of its roof, target {units.pct(e.target_eff)}")


HOST_SIDE_WHY = "host-side levers only (dispatch, tuning DB, backend)"


def next_target_of(artifact: Artifact) -> NextTarget:
    """The artifact's stored next target (the engine fills it), else computed here (an
    artifact from an older version or another tool)."""
    return artifact.next_target if artifact.next_target is not None else next_target(artifact)


def next_target(artifact: Artifact) -> NextTarget:
    """Which kernel to work on next, and what of the step comes before it.

    A part of the step (``artifact.step_targets``: idle gaps, exposed communication, copies)
    whose bound is above the pick's gain is said first (``step_first``). The kernel is the top
    of the gain ranking among entries with a verdict, an editable call site, no model
    caution, not suspect, not saturated, not judged inside another entry's logical op, and an
    expected gain above 0.00 %. When no editable entry qualifies, the top host-side entry (with
    a real gain) is the pick, its levers host-side. Only the entries with a verdict ranked
    above the pick were passed over (all of them when there is no pick): they are listed in
    ``skipped`` with the reason — a saturated one with its own lever and roof, a host-side one
    above an editable pick with its gain, so the line can say what the editable-first rule
    traded. An entry ranked below the pick is never named.

    Never raises: values read from a file that are not what the schema says (a hand-edited
    artifact) are carried as they are (built without validation) and printed escaped.
    """
    ranked = gain_order(artifact)
    verdict = [e for e in ranked if e.has_verdict]
    reasons = [_skip_reason(e) for e in verdict]
    pick_i = next((i for i, (e, r) in enumerate(zip(verdict, reasons))
                   if r is None and e.editable is not False), None)
    host_i = None
    if pick_i is None:
        host_i = next((i for i, (e, r) in enumerate(zip(verdict, reasons)) if r is None), None)
    chosen = pick_i if pick_i is not None else host_i
    skipped: list[NextSkipped] = []
    for i in range(len(verdict) if chosen is None else chosen):  # those ranked above the pick
        e, r = verdict[i], reasons[i]
        reason, detail = r if r is not None else ("host-side", HOST_SIDE_WHY)
        fields: dict[str, Any] = {"short_name": e.short_name, "label": label_of(e),
                                     "reason": reason, "detail": detail}
        if reason == "saturated":
            fields.update(lever=_lever(e), bound_type=e.bound_type)
        if reason in ("saturated", "host-side") and e.expected_e2e_gain_pct is not None:
            fields["expected_e2e_gain_pct"] = e.expected_e2e_gain_pct
        skipped.append(NextSkipped.model_construct(**fields))
    values: dict[str, Any] = {"stage": artifact.stage, "advisory": round_is_advisory(artifact),
                                 "skipped": skipped}
    if chosen is not None:
        e = verdict[chosen]
        values.update(kernel=e.name, short_name=e.short_name, label=label_of(e), route=e.route,
                      headroom_class=e.headroom_class, confidence=e.confidence,
                      expected_e2e_gain_pct=e.expected_e2e_gain_pct,
                      attainable_speedup=e.attainable_speedup, host_side=pick_i is None,
                      why=HOST_SIDE_WHY if pick_i is None else _why(e))
    elif not artifact.entries:
        values["why"] = "nothing analysed yet"
    elif any(s.reason == "saturated" for s in skipped):
        values["why"] = "no other entry has tuning headroom"
    elif skipped:
        values["why"] = "no entry with a verdict qualifies: follow the GPU-time order"
    else:
        values["why"] = "no entry has a trustworthy verdict: follow the GPU-time order"
    step = artifact.step_targets[0] if artifact.step_targets else None
    pick_gain = values.get("expected_e2e_gain_pct")
    if step is not None and step.expected_e2e_gain_pct > (
            pick_gain if isinstance(pick_gain, (int, float)) else 0.0):
        values["step_first"] = step  # the step's own idle/communication bound beats the pick
    nt = NextTarget.model_construct(**values)
    nt.line = next_line(nt)
    return nt


# -- the line --------------------------------------------------------------------------------

# What a piece of the line is, so a styled renderer (the dashboard) can colour it; the plain
# renderers join the texts.
LinePart = Literal["lead", "advisory", "saturated", "name", "plain", "numbers", "host",
                   "skipped", "dim"]

_SKIP_PHRASE: dict[NextSkipReason, str] = {
    "caution": "with an implausible speedup (!)",
    "suspect": "suspect",
    "zero-gain": "with 0.00% gain",
    "part-of": "judged in another kernel's logical op",
    "saturated": "more saturated",
    "host-side": "more host-side",
}


def lever_headline(lever: str, limit: int = 36) -> str:
    """A lever's first clause, without its parentheses, for the one-line reading
    (``fuse `x` (act, 1.07% GPU) into this kernel: removes…`` → ``fuse `x` into this kernel``)."""
    head = printable(re.sub(r"\s*\([^()]*\)", "", lever.split(": ", 1)[0]).strip() or lever)
    if len(head) > limit:
        cut = head[:limit].rsplit(" ", 1)[0]
        head = (cut if len(cut) > limit // 2 else head[:limit - 1]) + "…"
    return head


def _numbers(nt: NextTarget) -> str:
    return (f"(gain {units.pct_points(nt.expected_e2e_gain_pct, 2)}, speedup "
            f"{units.ratio(nt.attainable_speedup)}, confidence {printable(nt.confidence)})")


def own_lever(s: NextSkipped) -> str:
    """A saturated entry's own lever in a few words: a compute-bound one can only do fewer
    FLOPs (the engine's first lever for it says how), any other moves fewer bytes."""
    lever = s.lever or ""
    said, _, rest = lever.partition(": ")
    if s.bound_type == "compute" or said.startswith("compute-bound"):
        how = re.search(r"\(([^()]*)\)", rest if said.startswith("compute-bound") else lever)
        return "do fewer FLOPs" + (f": {printable(how.group(1), limit=60)}" if how else "")
    return "move fewer bytes" + (f": {lever_headline(lever)}" if lever else "")


def _passed_over(nt: NextTarget, s: NextSkipped) -> list[tuple[str, LinePart]]:
    """An entry ranked above the pick, named: a saturated one with its own lever, a host-side
    one with its gain against the pick's (what the editable-first rule traded)."""
    out: list[tuple[str, LinePart]] = [(" · above it: " if nt.kernel is not None else " · ",
                                        "plain")]
    if s.reason == "saturated":
        return out + [(s.label, "saturated"),
                      (f": saturated, no tuning headroom — {own_lever(s)}", "plain")]
    out.append((s.label, "plain"))
    gain, mine = s.expected_e2e_gain_pct, nt.expected_e2e_gain_pct
    if gain is None or mine is None:
        return out + [(" (host-side levers only)", "host")]
    bigger = "a bigger win " if gain > mine else ""
    return out + [(f" — {bigger}host-side: gain {units.pct_points(gain, 2)} vs "
                   f"{units.pct_points(mine, 2)} here, passed over for an editable call site "
                   "(dispatch, tuning DB, backend)", "host")]


def next_parts(nt: NextTarget) -> list[tuple[str, LinePart]]:
    """The line as (text, part) pieces; :func:`next_line` is their texts joined. The pick (or
    why there is none) comes first, as the artifact's ``next_target`` names it; then the first
    saturated entry and, above an editable pick, the first host-side one ranked above it, in
    gain order; then the other passed-over entries, counted by reason."""
    out: list[tuple[str, LinePart]] = []
    if nt.advisory:
        out += [("Next ", "lead"), (f"(advisory, stage {printable(nt.stage)})", "advisory"),
                (": ", "lead")]
    else:
        out.append(("Next: ", "lead"))
    step = getattr(nt, "step_first", None)
    if step is not None:
        out += [(printable(step.line), "host"),
                (f" (up to {step.expected_e2e_gain_pct:.1f}% of the span); then: ", "plain")]
    skipped = list(nt.skipped)
    saturated = next((s for s in skipped if s.reason == "saturated"), None)
    host_above = None if nt.host_side or nt.kernel is None else next(
        (s for s in skipped if s.reason == "host-side"), None)
    if nt.kernel is not None:
        out.append((nt.label, "name"))
        if nt.route and not nt.host_side:  # a host-side pick's route says what its why says
            out.append((f" — {printable(nt.route, limit=30)}", "plain"))
        out += [(f" — {nt.why} ", "plain"), (_numbers(nt), "numbers")]
    else:
        out.append((nt.why, "dim"))
    for s in skipped:
        if s is saturated or s is host_above:
            out += _passed_over(nt, s)
    rest = [s for s in skipped if s is not saturated and s is not host_above]
    if rest:
        counts: dict[NextSkipReason, int] = {}
        for s in rest:
            counts[s.reason] = counts.get(s.reason, 0) + 1
        where = "higher" if nt.kernel is not None else "with a verdict"
        what = ", ".join(f"{n} {_SKIP_PHRASE[r]}" for r, n in counts.items())
        out.append((f" · skipped {where}: {what}", "skipped"))
    return out


def next_line(nt: NextTarget) -> str:
    """The next target in one line, as every renderer prints it."""
    return "".join(text for text, _ in next_parts(nt))


def next_role(nt: NextTarget, e: Entry) -> str:
    """Where ``e`` stands in the next-target reading, for a per-entry column: ``next``,
    ``next (host-side)``, ``skipped: <reason>``, or empty."""
    if nt.short_name is not None and e.short_name == nt.short_name and e.name == nt.kernel:
        return "next (host-side)" if nt.host_side else "next"
    skip = next((s for s in nt.skipped if s.short_name == e.short_name), None)
    return f"skipped: {skip.reason}" if skip is not None else ""


def counter_join_line(j: CounterFileJoin) -> str:
    """One counter file's join, in one line: what it measured, what was applied where, what
    matched nothing, what was withheld and why (the first reason of each kind)."""
    arch = f", {j.arch}" if j.arch else ""
    parts = [f"counters {j.file} ({j.source}{arch}): {j.kernels} kernel(s) measured"]
    if j.matched:
        shown_ = "; ".join(f"{fit(display_name(m.kernel), 48)} → {m.entry} by {m.rule}"
                           for m in j.matched[:3])
        more = f" and {len(j.matched) - 3} more" if len(j.matched) > 3 else ""
        parts.append(f"{len(j.matched)} applied ({shown_}{more})")
    else:
        parts.append("none applied")
    if j.not_applied:
        first = j.not_applied[0]
        parts.append(f"{len(j.not_applied)} withheld ({fit(display_name(first.kernel), 48)}: "
                     f"{first.reason})")
    if j.unmatched_count:
        parts.append(f"{j.unmatched_count} matched no head entry")
    if j.arch_warning:
        parts.append(f"warning: {j.arch_warning}")
    return printable(", ".join(parts))


def step_split_lines(a: Artifact) -> list[str]:
    """The step as a whole, one line per regime (or for the trace): span, busy and idle, and
    the communication and copies with nothing beside them, per step."""
    out: list[str] = []
    for g in a.step_split:
        where = (f"{g.regime} step (mean of {g.steps})" if g.regime and g.steps
                 else "the trace (one span: no serving steps)")
        line = (f"{where}: span {units.millis(g.span_ms)} = busy {units.millis(g.busy_ms)} + "
                f"idle {units.millis(g.idle_ms)} ({g.idle_share:.0%}; longest gap "
                f"{units.millis(g.largest_gap_ms)})")
        if g.comm_ms:
            line += (f"; communication {units.millis(g.comm_ms)}, "
                     f"{units.millis(g.comm_exposed_ms)} exposed ({g.comm_exposed_share:.0%})")
        if g.copy_ms:
            line += (f"; copies {units.millis(g.copy_ms)}, {units.millis(g.copy_exposed_ms)} "
                     f"exposed ({g.copy_exposed_share:.0%})")
        out.append(printable(line))
    if a.step_split and a.step_split_note:
        out.append(printable(a.step_split_note))
    return out
