"""Rounds compared: movement, predicted vs actual, contradictions (spec §8.3-§8.4).

:func:`load_history` loads the rounds of a profile directory (:mod:`roofline_tui.core.layout` finds
and orders them, :mod:`.snapshot` loads each) and compares each round with the one before it and with the
baseline (round 0, else the earliest round found).

A kernel is matched across rounds by ``(name, regime)``. The same name under another regime is
reported as *regime changed* and is not compared: a decode launch and a prefill launch do
different work.

Two rounds are compared only when they ran on the same hardware (``gfx``, ``product``) and the
same workload (``isl``, ``osl``, ``conc``, ``tp``); otherwise the reason is stated and nothing is
compared.

The measured end-to-end delta of a round pair is taken from throughput when both rounds have it,
else from TPOT, else from the Top-N's ``total_gpu_time_ms`` (a GPU-time reduction, the same
definition as ``expected_e2e_gain_pct``). Positive means faster.

Noise bands (spec §8.3): an isolated change with ``max(s, 1/s) < 1.034`` and an e2e change under
0.5 % are noise and labelled so. A contradiction (spec §8.4) is a measured isolated speedup above
the earlier round's ``attainable_speedup`` by more than the isolated band.

Nothing here writes a file.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

from roofline_tui.core.analyze import AnalyzeOptions
from roofline_tui.core.artifact import (
    Artifact,
    E2EVerdict,
    IsolatedVerdict,
    PredictedVsActual,
)
from roofline_tui.core.inputs import TopN
from roofline_tui.core.layout import ARTIFACT_JSON, TOPN_NAME, round_dirs, round_label
from roofline_tui.core.metrics import E2E_NOISE_PCT, ISOLATED_NOISE
from roofline_tui.core.rounds.analysis import RoundSources
from roofline_tui.core.rounds.fingerprint import RoundCache
from roofline_tui.core.rounds.reads import Reads, reads_or_new
from roofline_tui.core.rounds.records import (
    KernelObs,
    Movement,
    RoundHistory,
    RoundSnapshot,
    RoundStep,
)
from roofline_tui.core.rounds.snapshot import (
    WORKLOAD_KEYS,
    load_snapshot,
    load_snapshot_cached,
)


def comparability(a: RoundSnapshot, b: RoundSnapshot) -> str | None:
    """``None`` when the rounds may be compared, else why not (hardware or workload differ)."""
    reasons = []
    for field, what in (("gfx", "hardware"), ("product", "hardware")):
        va, vb = getattr(a, field), getattr(b, field)
        if va and vb and str(va).lower() != str(vb).lower():
            reasons.append(f"different {what}: {field} {va} in round {a.label} vs {vb} in "
                           f"round {b.label}")
    for k in WORKLOAD_KEYS:
        va, vb = a.workload.get(k), b.workload.get(k)
        if va is not None and vb is not None and va != vb:
            reasons.append(f"different workload: {k} {va} in round {a.label} vs {vb} in "
                           f"round {b.label}")
    return "; ".join(reasons) or None


def speedup_is_noise(speedup: float) -> bool:
    return max(speedup, 1.0 / speedup) < 1.0 + ISOLATED_NOISE


def e2e_is_noise(delta_pct: float) -> bool:
    return abs(delta_pct) < E2E_NOISE_PCT


def e2e_delta(a: RoundSnapshot, b: RoundSnapshot) -> tuple[float | None, str | None,
                                                           float | None, float | None]:
    """Measured e2e change from ``a`` to ``b`` in percent (positive = faster), its basis, and
    the two raw values."""
    sa, sb = a.serving, b.serving
    if sa and sb and sa.output_throughput_tok_s and sb.output_throughput_tok_s:
        x, y = sa.output_throughput_tok_s, sb.output_throughput_tok_s
        return (y / x - 1.0) * 100.0, "output throughput (serving_metrics.json)", x, y
    if sa and sb and sa.tpot_ms and sb.tpot_ms:
        x, y = sa.tpot_ms, sb.tpot_ms
        return (x / y - 1.0) * 100.0, "TPOT (serving_metrics.json)", x, y
    if a.total_gpu_time_ms and b.total_gpu_time_ms:
        x, y = a.total_gpu_time_ms, b.total_gpu_time_ms
        return (1.0 - y / x) * 100.0, "total GPU time (profile_topN.json)", x, y
    return None, None, None, None


def pair_id(before: RoundSnapshot, after: RoundSnapshot, k0: KernelObs, k1: KernelObs,
            context: str = "") -> str:
    """A stable identifier of a predicted-vs-actual pair: same measurement → same id."""
    text = "\x1f".join([
        context, k0.name, k0.regime, str(before.label), str(after.label),
        f"{k0.t_ms:.6g}", f"{k1.t_ms:.6g}",
        "-" if k0.attainable_speedup is None else f"{k0.attainable_speedup:.4g}",
    ])
    return "pv-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]


def _run_context(r: RoundSnapshot) -> str:
    wl = ",".join(f"{k}={r.workload[k]}" for k in WORKLOAD_KEYS if k in r.workload)
    return f"{r.gfx or '?'}/{r.product or '?'}/{wl}"


def _isolated_verdict(m: float, predicted: float | None) -> tuple[IsolatedVerdict, str]:
    band = 1.0 + ISOLATED_NOISE
    if speedup_is_noise(m):
        return "noise", (f"{m:.3f}× is inside the ±{ISOLATED_NOISE * 100:.1f}% isolated noise band"
                         ": not a real change")
    if m < 1.0:
        return "regression", f"{1 / m:.3f}× slower, beyond the isolated noise band"
    if predicted is None:
        return "unpredicted", f"{m:.3f}× faster; the earlier round made no prediction"
    if m > predicted * band:
        return "contradiction", (
            f"measured {m:.3f}× beats the predicted attainable {predicted:.3f}× by more than the "
            f"{ISOLATED_NOISE * 100:.1f}% isolated band: the byte/FLOP model or target_eff is "
            "wrong for this kernel; prefer the measurement")
    if m >= predicted / band:
        return "at_ceiling", (f"measured {m:.3f}× reached the predicted {predicted:.3f}× "
                              f"(within the {ISOLATED_NOISE * 100:.1f}% band): prediction held")
    return "under_ceiling", (f"measured {m:.3f}× is under the predicted {predicted:.3f}× ceiling: "
                             "consistent, headroom left")


def _e2e_verdict(delta: float | None) -> E2EVerdict:
    if delta is None:
        return "unknown"
    if e2e_is_noise(delta):
        return "noise"
    return "gain" if delta > 0 else "loss"


def compare_rounds(a: RoundSnapshot, b: RoundSnapshot) -> RoundStep:
    """Round ``b`` against the round ``a`` before it."""
    reason = comparability(a, b)
    step = RoundStep(before=a.label, after=b.label, comparable=reason is None,
                     not_compared_reason=reason)
    if reason is not None:
        return step
    if not a.kernels or not b.kernels:
        step.comparable = False
        empty = a if not a.kernels else b
        step.not_compared_reason = f"round {empty.label} has no kernels (no Top-N or artifact)"
        return step
    delta, basis, x, y = e2e_delta(a, b)
    step.e2e_delta_pct, step.e2e_basis, step.e2e_before, step.e2e_after = delta, basis, x, y
    step.e2e_noise = None if delta is None else e2e_is_noise(delta)
    before = {k.key: k for k in a.kernels}
    after = {k.key: k for k in b.kernels}
    names_before = {k.name: k for k in a.kernels}
    names_after = {k.name: k for k in b.kernels}
    for key, k1 in after.items():
        if key in before:
            continue
        k0 = names_before.get(k1.name)
        if k0 is not None:
            step.regime_changed.append(f"{k1.name}: {k0.regime} → {k1.regime}")
        else:
            step.appeared.append(k1.name)
    step.vanished = [k0.name for key, k0 in before.items()
                     if key not in after and k0.name not in names_after]
    step.heads_entered = [n for n in b.heads if n not in a.heads]
    step.heads_left = [n for n in a.heads if n not in b.heads]
    ctx = _run_context(a)
    pairs: list[PredictedVsActual] = []
    for key, k1 in after.items():
        k0 = before.get(key)
        if k0 is None:
            continue
        step.movements.append(kernel_movement(a.label, k0, k1))
        if not (k0.t_ms and k1.t_ms) or math.isclose(k0.t_ms, k1.t_ms, rel_tol=1e-9):
            continue
        m = k0.t_ms / k1.t_ms
        verdict, text = _isolated_verdict(m, k0.attainable_speedup)
        after_pct, after_basis = None, None
        if k1.roofline_pct is not None and not k1.suspect and k1.is_head:
            after_pct, after_basis = k1.roofline_pct, f"round {b.label} artifact"
        elif k0.roofline_pct is not None and not k0.suspect:
            after_pct = k0.roofline_pct * m
            after_basis = f"round {a.label} roofline_pct × measured speedup"
        pv = PredictedVsActual(
            pair_id=pair_id(a, b, k0, k1, ctx), name=k1.name, short_name=k1.short_name,
            regime=k1.regime, op_class=k0.op_class or k1.op_class, round_before=a.label,
            round_after=b.label, t_ms_before=k0.t_ms, t_ms_after=k1.t_ms, measured_speedup=m,
            isolated_noise=verdict == "noise", predicted_speedup=k0.attainable_speedup,
            predicted_e2e_gain_pct=k0.expected_e2e_gain_pct,
            headroom_class_before=k0.headroom_class, target_eff_before=k0.target_eff,
            roofline_pct_before=k0.roofline_pct, roofline_pct_after=after_pct,
            roofline_pct_after_basis=after_basis, e2e_delta_pct=delta, e2e_basis=basis,
            e2e_noise=step.e2e_noise, e2e_verdict=_e2e_verdict(delta),
            contradiction=verdict == "contradiction",
            contradiction_detail=text if verdict == "contradiction" else None,
            verdict=verdict, verdict_text=text)
        if k0.prior:
            pv.prior = k0.prior
        pairs.append(pv)
    real = [p for p in pairs if not p.isolated_noise]
    for p in pairs:
        p.kernels_moved_in_pair = len(real)
    gains = [p.predicted_e2e_gain_pct for p in real
             if p.measured_speedup > 1.0 and p.predicted_e2e_gain_pct is not None]
    step.expected_e2e_gain_pct_sum = sum(gains) if gains else None
    step.pairs = sorted(pairs, key=lambda p: (p.isolated_noise, -(p.measured_speedup), p.name))
    step.movements.sort(key=lambda mv: (-(mv.pct_gpu_time or 0.0), mv.name))
    return step


def kernel_movement(ref_round: str | int, ref: KernelObs, cur: KernelObs) -> Movement:
    """``cur`` against the same kernel ``ref`` of round ``ref_round``: the one place a
    :class:`Movement` is built."""
    dt = (cur.t_ms / ref.t_ms - 1.0) * 100.0 if (cur.t_ms and ref.t_ms) else None
    return Movement(name=cur.name, short_name=cur.short_name, regime=cur.regime,
                    ref_round=ref_round, t_ms_ref=ref.t_ms, t_ms=cur.t_ms, delta_t_pct=dt,
                    pct_gpu_time_ref=ref.pct_gpu_time, pct_gpu_time=cur.pct_gpu_time)


def movement_against(ref: RoundSnapshot, cur: RoundSnapshot) -> dict[tuple[str, str], Movement]:
    """Per kernel key of ``cur``: its movement against ``ref`` (matched name and regime)."""
    ref_k = {k.key: k for k in ref.kernels}
    return {k.key: kernel_movement(ref.label, ref_k[k.key], k)
            for k in cur.kernels if k.key in ref_k}


def build_history(profile_dir: Path, rounds: list[RoundSnapshot],
                  problems: list[str] | None = None, *, gap_after: int | None = None,
                  left_out: list[str | int] | None = None) -> RoundHistory:
    """Compare ``rounds`` (in round order): each with the one before it and with the first.

    ``gap_after`` is the index of a round after which rounds were left out (a bounded history):
    that step is stated, not compared — the two rounds are not consecutive.
    """
    h = RoundHistory(profile_dir=str(profile_dir), rounds=rounds, problems=list(problems or []),
                     left_out=list(left_out or []))
    if not rounds:
        h.problems.append(f"no round_* directory with a {TOPN_NAME} or {ARTIFACT_JSON}")
        return h
    base = rounds[0]
    h.baseline, h.baseline_is_round0 = base.label, base.is_round0
    if not base.is_round0:
        h.problems.append(f"round 0 is missing: the baseline is round {base.label}, the earliest "
                          "round found")
    for r in rounds[1:]:
        h.baseline_comparable[str(r.label)] = comparability(base, r)
    for i, (a, b) in enumerate(zip(rounds, rounds[1:], strict=False)):
        if i == gap_after:
            h.steps.append(RoundStep(
                before=a.label, after=b.label, comparable=False,
                not_compared_reason="not consecutive: the rounds between them were left out of "
                                    "this bounded history"))
        else:
            h.steps.append(compare_rounds(a, b))
    return h


def _window(dirs: list[Path], focus: str, limit: int) -> tuple[int, int]:
    """Where the ``limit`` rounds ending at ``focus`` start and end in ``dirs`` (the first
    ``limit`` when ``focus`` is earlier; the last ones when no round is ``focus``)."""
    f = next((i for i in range(len(dirs) - 1, -1, -1) if dirs[i].name == focus), len(dirs) - 1)
    end = max(f + 1, min(limit, len(dirs)))
    return max(0, end - limit), end


def load_history(
    profile_dir: Path,
    sources: RoundSources | None = None,
    options: AnalyzeOptions | None = None,
    given: dict[str, Artifact] | None = None,
    *,
    focus: str | None = None,
    limit: int | None = None,
    given_topn: dict[str, TopN] | None = None,
    cache: RoundCache[RoundSnapshot] | None = None,
    reads: Reads | None = None,
    dirs: list[Path] | None = None,
) -> RoundHistory:
    """Discover and load the rounds of ``profile_dir`` and compare them.

    ``given`` maps a round directory name (``round_2``) to an artifact to use as is (the
    one being written right now); ``given_topn`` to its Top-N, already parsed. With ``focus``
    (a round directory name) and ``limit``, only the baseline and the ``limit`` rounds ending at
    ``focus`` are loaded; the others are listed in ``left_out``. With ``cache``, the other
    rounds are loaded through it: each is read (and analysed) again only when its inputs
    changed. ``reads``: the memo of the analysis this history is part of (a file the rounds
    share is parsed once). ``dirs``: the rounds of ``profile_dir`` as the caller has just
    listed them (:func:`round_dirs`), not listed again. Never raises for bad input: problems
    are listed.
    """
    reads = reads_or_new(reads)
    profile_dir = Path(profile_dir)
    given = given or {}
    given_topn = given_topn or {}
    if dirs is None:
        dirs = round_dirs(profile_dir)
    first, window = 0, dirs
    if focus is not None and limit is not None and len(dirs) > limit:
        first, end = _window(dirs, focus, max(limit, 2))
        window = dirs[first:end]
    rounds: list[RoundSnapshot] = []
    problems: list[str] = []

    def load(d: Path) -> RoundSnapshot | None:
        try:
            if d.name in given or cache is None:
                snap = load_snapshot(d, sources, options, artifact=given.get(d.name),
                                     topn=given_topn.get(d.name), reads=reads)
            else:
                snap = load_snapshot_cached(d, sources, options, cache, reads=reads)
        except Exception as exc:  # one bad round never hides the others
            problems.append(f"{d.name}: {type(exc).__name__}: {exc}")
            return None
        if not snap.kernels and not snap.topn_found and snap.artifact is None:
            problems.append(f"{d.name}: no {TOPN_NAME} or {ARTIFACT_JSON}; skipped")
            return None
        problems.extend(f"{d.name}: {p}" for p in snap.problems)
        return snap

    gap_after: int | None = None
    left_out: list[str | int] = []
    if window is not dirs:
        after = [round_label(x) for x in dirs[first + len(window):]]
        # the baseline: the first round before the window that loads
        for j, d in enumerate(dirs[:first]):
            base = load(d)
            if base is not None:
                rounds.append(base)
                between = [round_label(x) for x in dirs[j + 1:first]]
                gap_after = 0 if between else None
                left_out = between
                break
        left_out += after
    for d in window:
        snap = load(d)
        if snap is not None:
            rounds.append(snap)
    return build_history(profile_dir, rounds, problems, gap_after=gap_after, left_out=left_out)
