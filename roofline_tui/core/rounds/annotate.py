"""Round-over-round fields added to one round's artifact, and the façade that analyses a round
with its history: what both ``roofline analyze`` and the dashboard show."""

from __future__ import annotations

from pathlib import Path

from roofline_tui.core.analyze import AnalyzeOptions
from roofline_tui.core.artifact import (
    Artifact,
    MovementE2E,
    MovementRow,
    PredictedVsActual,
    RoundContext,
    RoundMovement,
    rounded,
)
from roofline_tui.core.inputs import TopN
from roofline_tui.core.layout import round_dirs, round_label
from roofline_tui.core.metrics import E2E_NOISE_PCT, ISOLATED_NOISE
from roofline_tui.core.rounds.analysis import RoundResult, RoundSources, analyze_round
from roofline_tui.core.rounds.compare import load_history, movement_against
from roofline_tui.core.rounds.fingerprint import RoundCache
from roofline_tui.core.rounds.reads import Reads, reads_or_new
from roofline_tui.core.rounds.records import KernelObs, Movement, RoundHistory, RoundSnapshot


def round_movement(h: RoundHistory, label: str | int) -> RoundMovement | None:
    """The movement section of round ``label`` as data (``markdown.movement_lines`` renders it):
    for each head (and each kernel that moved beyond the noise band) its per-launch time against
    the previous round and the baseline, and the predicted-vs-actual verdict."""
    i = h.index(label)
    if i is None:
        return None
    cur = h.rounds[i]
    if i == 0:
        return RoundMovement(round=cur.label, baseline_round=h.baseline,
                             baseline_is_round0=h.baseline_is_round0,
                             later_rounds=[r.label for r in h.rounds[1:]])
    prev = h.rounds[i - 1]
    step = h.steps[i - 1]
    base_reason = h.baseline_comparable.get(str(cur.label))
    mv = RoundMovement(round=cur.label, baseline_round=h.baseline,
                       baseline_is_round0=h.baseline_is_round0, prev_round=prev.label,
                       isolated_noise_band=ISOLATED_NOISE, e2e_noise_band_pct=E2E_NOISE_PCT,
                       not_compared_with_baseline=base_reason,
                       not_compared_with_prev=None if step.comparable
                       else step.not_compared_reason or "not comparable")
    if not step.comparable:
        return mv
    if (step.e2e_delta_pct is not None and step.e2e_basis is not None
            and step.e2e_before is not None and step.e2e_after is not None):
        mv.e2e = MovementE2E(basis=step.e2e_basis, before=step.e2e_before,
                             after=step.e2e_after, delta_pct=step.e2e_delta_pct,
                             noise=bool(step.e2e_noise),
                             expected_e2e_gain_pct_sum=step.expected_e2e_gain_pct_sum)
    base = h.rounds[0]
    vs_base = movement_against(base, cur) if base_reason is None else {}
    pairs = {(p.name, p.regime): p for p in step.pairs}
    moves = {(m.name, m.regime): m for m in step.movements}
    keys = [k.key for k in cur.kernels if k.is_head]
    keys += [k.key for k in prev.kernels if k.is_head and k.key not in keys and k.key in moves]
    keys += [key for key, p in pairs.items() if not p.isolated_noise and key not in keys]
    rows: list[MovementRow] = []
    for key in keys:
        m = moves.get(key)
        if m is None:
            continue
        p = pairs.get(key)
        mb = vs_base.get(key)
        rows.append(MovementRow(
            short_name=m.short_name, regime=m.regime, t_ms=m.t_ms,
            delta_t_pct_vs_prev=m.delta_t_pct,
            delta_t_pct_vs_baseline=mb.delta_t_pct if mb else None,
            pct_gpu_time_prev=m.pct_gpu_time_ref, pct_gpu_time=m.pct_gpu_time,
            measured_speedup=p.measured_speedup if p else None,
            predicted_speedup=p.predicted_speedup if p else None,
            verdict=p.verdict if p else "unchanged"))
    mv.kernels = rows
    return mv


def annotate_artifact(artifact: Artifact, h: RoundHistory, label: str | int) -> Artifact:
    """Add round-over-round fields to ``artifact`` (round ``label`` of ``h``), in place.

    Entry fields: ``baseline_round``, ``t_ms_baseline``, ``delta_t_pct_vs_baseline`` and, when the
    baseline is round 0, ``t_ms_round0``, ``delta_t_pct_vs_round0``, ``pct_gpu_time_round0``;
    ``prev_round``, ``t_ms_prev``, ``delta_t_pct_vs_prev``, ``pct_gpu_time_prev`` (and the share
    change in points, ``delta_pct_gpu_time_pts_vs_prev`` / ``…_vs_round0``); for a moved
    kernel ``measured_speedup_vs_prev``, ``predicted_speedup_prev``,
    ``predicted_e2e_gain_pct_prev``, ``isolated_verdict``, ``contradiction`` (+ detail);
    ``regime_changed_from`` / ``new_in_round``. Artifact fields: ``movement`` (the section's
    data) and ``round_history`` (a summary of this round's step).
    """
    i = h.index(label)
    if i is None:
        return artifact
    cur = h.rounds[i]
    artifact.movement = round_movement(h, label)
    ctx = RoundContext(baseline_round=h.baseline, baseline_is_round0=h.baseline_is_round0,
                       rounds=[r.label for r in h.rounds])
    if h.left_out:
        shown = ", ".join(str(x) for x in h.left_out[:3])
        more = f" … {h.left_out[-1]}" if len(h.left_out) > 3 else ""
        ctx.rounds_considered = (
            f"bounded history: {len(h.rounds)} of {len(h.rounds) + len(h.left_out)} rounds "
            f"compared (the baseline and at most {HISTORY_LIMIT} ending at this round); not "
            f"compared: {shown}{more}")
    artifact.round_history = ctx
    if i == 0:
        return artifact
    base, prev, step = h.rounds[0], h.rounds[i - 1], h.steps[i - 1]
    base_reason = h.baseline_comparable.get(str(cur.label))
    vs_base = movement_against(base, cur) if base_reason is None else {}
    moves = {(m.name, m.regime): m for m in step.movements} if step.comparable else {}
    pairs = {(p.name, p.regime): p for p in step.pairs}
    prev_names = {k.name: k for k in prev.kernels}
    ctx.prev_round = prev.label
    ctx.comparable_with_prev = step.comparable
    ctx.comparable_with_baseline = base_reason is None
    ctx.not_compared_reason = "; ".join(
        x for x in (step.not_compared_reason, base_reason) if x) or None
    ctx.e2e_delta_pct = step.e2e_delta_pct
    ctx.e2e_basis = step.e2e_basis
    ctx.e2e_noise = step.e2e_noise
    ctx.expected_e2e_gain_pct_sum = step.expected_e2e_gain_pct_sum
    ctx.appeared = step.appeared
    ctx.vanished = step.vanished
    ctx.regime_changed = step.regime_changed
    ctx.heads_entered = step.heads_entered
    ctx.heads_left = step.heads_left
    ctx.contradictions = [p.name for p in step.pairs if p.contradiction]
    ctx.predicted_vs_actual = list(step.pairs)
    for e in artifact.entries:
        key = (e.name, e.regime or "decode")
        p = pairs.get(key)
        e.with_movement(f"{p.contradiction_detail}" if p is not None and p.contradiction else None,
                        **_entry_movement(e.name, key, vs_base.get(key), moves.get(key), p,
                                          base, prev, step.comparable, prev_names))
    return artifact


def _entry_movement(name: str, key: tuple[str, str], mb: Movement | None, mv: Movement | None,
                    p: PredictedVsActual | None, base: RoundSnapshot, prev: RoundSnapshot,
                    comparable: bool, prev_names: dict[str, KernelObs]) -> dict[str, object]:
    """One entry's round-over-round fields (only those that apply): against the baseline and
    the previous round, and its predicted-vs-actual pair."""
    out: dict[str, object] = {}
    if mb is not None:
        out.update(baseline_round=base.label, t_ms_baseline=mb.t_ms_ref,
                   delta_t_pct_vs_baseline=rounded(mb.delta_t_pct, 2))
        if base.is_round0:
            out.update(t_ms_round0=mb.t_ms_ref, delta_t_pct_vs_round0=rounded(mb.delta_t_pct, 2),
                       pct_gpu_time_round0=mb.pct_gpu_time_ref,
                       delta_pct_gpu_time_pts_vs_round0=_pts(mb))
    if mv is not None:
        out.update(prev_round=prev.label, t_ms_prev=mv.t_ms_ref,
                   delta_t_pct_vs_prev=rounded(mv.delta_t_pct, 2),
                   pct_gpu_time_prev=mv.pct_gpu_time_ref,
                   delta_pct_gpu_time_pts_vs_prev=_pts(mv))
    elif comparable:
        k0 = prev_names.get(name)
        if k0 is not None and k0.regime != key[1]:
            out["regime_changed_from"] = k0.regime
        elif k0 is None:
            out["new_in_round"] = True
    if p is not None:
        out.update(measured_speedup_vs_prev=rounded(p.measured_speedup, 4),
                   predicted_speedup_prev=p.predicted_speedup,
                   predicted_e2e_gain_pct_prev=p.predicted_e2e_gain_pct,
                   isolated_verdict=p.verdict, contradiction=p.contradiction)
        if p.contradiction:
            out["contradiction_detail"] = p.contradiction_detail
    return out


def _pts(mv: Movement) -> float | None:
    """Change of the GPU-time share in percentage points."""
    if mv.pct_gpu_time is None or mv.pct_gpu_time_ref is None:
        return None
    return round(mv.pct_gpu_time - mv.pct_gpu_time_ref, 2)


# How many rounds (ending at the analysed one) the history of one round loads, besides the
# baseline: analysing one round never re-reads an unbounded number of siblings.
HISTORY_LIMIT = 8


def annotate_round(artifact: Artifact, round_dir: Path, sources: RoundSources | None = None,
                   options: AnalyzeOptions | None = None, *, topn: TopN | None = None,
                   cache: RoundCache[RoundSnapshot] | None = None,
                   reads: Reads | None = None,
                   ) -> tuple[Artifact, RoundHistory | None]:
    """Add movement to the artifact of ``round_dir`` when sibling rounds exist. Never raises:
    a failure is appended to ``skill_errors`` and the artifact is returned unchanged. ``topn``
    is the round's Top-N as already parsed; ``cache`` keeps the sibling rounds between calls
    (see :func:`~roofline_tui.core.rounds.compare.load_history`); ``reads`` the analysis's memo
    of parsed inputs."""
    round_dir = Path(round_dir)
    try:
        profile_dir = round_dir.resolve().parent
        siblings = round_dirs(profile_dir)
        name = round_dir.resolve().name
        if len(siblings) < 2 or name not in {s.name for s in siblings}:
            return artifact, None
        h = load_history(profile_dir, sources, options, given={name: artifact}, focus=name,
                         limit=HISTORY_LIMIT, given_topn={name: topn} if topn else None,
                         cache=cache, reads=reads, dirs=siblings)
        label = round_label(round_dir)
        if h.index(label) is None:
            return artifact, h
        return annotate_artifact(artifact, h, label), h
    except Exception as exc:  # L5: history never fails the analysis
        artifact.skill_errors.append(f"round-over-round movement: {type(exc).__name__}: {exc}")
        return artifact, None


def analyze_round_with_history(
    round_dir: Path, sources: RoundSources | None = None, options: AnalyzeOptions | None = None,
    *, cache: RoundCache[RoundSnapshot] | None = None, reads: Reads | None = None,
) -> RoundResult:
    """``analyze_round`` plus round-over-round movement when sibling rounds exist: what both
    ``roofline analyze`` and the dashboard show. ``result.history`` keeps the comparison.

    The round's Top-N is parsed once (the history reuses it). A caller that analyses again and
    again (the dashboard) passes a ``cache`` so that only the sibling rounds whose inputs changed
    are loaded again: a recompute then costs about the same with 1 round or 20. Every input
    file is parsed once per call (``reads``, made here unless given), siblings included."""
    reads = reads_or_new(reads)
    result = analyze_round(round_dir, sources, options, reads=reads)
    if result.topn_found:
        result.artifact, result.history = annotate_round(
            result.artifact, round_dir, sources, options, topn=result.topn, cache=cache,
            reads=reads)
    return result
