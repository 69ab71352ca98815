"""View models of a run's rounds, for the dashboard's Rounds/History views and ``roofline
rounds``: one summary row per round and one series per kernel across rounds."""

from pathlib import Path

from pydantic import BaseModel, Field

from roofline_tui.core.empty import empty_list
from roofline_tui.core.rounds.records import RoundHistory
from roofline_tui.core.rounds.source import RoundSource, read_round_source


class RoundSummaryRow(BaseModel):
    """One row of the dashboard's Rounds view."""

    label: str | int
    time_iso: str | None
    stage: str | None
    n_heads: int
    heads: list[str]
    total_gpu_time_ms: float | None
    delta_total_pct_vs_prev: float | None  # GPU time change, positive = slower
    output_throughput_tok_s: float | None
    e2e_delta_pct_vs_prev: float | None  # positive = faster
    e2e_basis: str | None
    e2e_noise: bool | None
    comparable_with_prev: bool | None
    not_compared_reason: str | None
    contradictions: int
    artifact_source: str
    problems: int
    source: RoundSource | None = None  # the trace files it was ingested from (source.json)


class SeriesPoint(BaseModel):
    label: str | int
    present: bool
    is_head: bool = False
    t_ms: float | None = None
    pct_gpu_time: float | None = None
    delta_t_pct_vs_prev: float | None = None
    delta_t_pct_vs_baseline: float | None = None
    attainable_speedup: float | None = None  # this round's prediction for the next round
    expected_e2e_gain_pct: float | None = None
    headroom_class: str | None = None
    measured_speedup_vs_prev: float | None = None
    predicted_speedup_prev: float | None = None
    verdict: str | None = None
    contradiction: bool = False
    comparable_with_prev: bool | None = None


class KernelSeries(BaseModel):
    """One kernel across rounds, for the History tab (table and sparkline)."""

    name: str
    short_name: str
    regime: str
    op_class: str | None = None
    points: list[SeriesPoint] = Field(default_factory=empty_list)

    def sparkline_values(self) -> list[float | None]:
        return [p.t_ms for p in self.points]


def round_summary_rows(h: RoundHistory) -> list[RoundSummaryRow]:
    """One row per round for the Rounds view."""
    rows = []
    for i, r in enumerate(h.rounds):
        step = h.steps[i - 1] if i > 0 else None
        prev = h.rounds[i - 1] if i > 0 else None
        d_total = None
        if step is not None and step.comparable and prev and prev.total_gpu_time_ms \
                and r.total_gpu_time_ms:
            d_total = (r.total_gpu_time_ms / prev.total_gpu_time_ms - 1.0) * 100.0
        rows.append(RoundSummaryRow(
            label=r.label, time_iso=r.mtime_iso, stage=r.stage, n_heads=len(r.heads),
            heads=list(r.heads), total_gpu_time_ms=r.total_gpu_time_ms,
            delta_total_pct_vs_prev=d_total,
            output_throughput_tok_s=r.serving.output_throughput_tok_s if r.serving else None,
            e2e_delta_pct_vs_prev=step.e2e_delta_pct if step else None,
            e2e_basis=step.e2e_basis if step else None,
            e2e_noise=step.e2e_noise if step else None,
            comparable_with_prev=step.comparable if step else None,
            not_compared_reason=step.not_compared_reason if step else None,
            contradictions=sum(p.contradiction for p in step.pairs) if step else 0,
            artifact_source=r.artifact_source, problems=len(r.problems),
            source=read_round_source(Path(r.dir)) if r.dir else None,
        ))
    return rows


def kernel_keys(h: RoundHistory) -> list[tuple[str, str]]:
    """Every (name, regime) seen in any round, heads first, by their largest share."""
    best: dict[tuple[str, str], tuple[bool, float]] = {}
    for r in h.rounds:
        for k in r.kernels:
            was = best.get(k.key, (False, 0.0))
            best[k.key] = (was[0] or k.is_head, max(was[1], k.pct_gpu_time or 0.0))
    return sorted(best, key=lambda key: (not best[key][0], -best[key][1], key))


def kernel_series(h: RoundHistory, name: str, regime: str | None = None) -> KernelSeries | None:
    """Per-launch time and %gpu of one kernel across rounds, with predictions and outcomes.

    ``regime`` defaults to the regime of the kernel's first appearance as a head (else its
    first appearance). One point per round; ``present`` is False where the kernel is absent.
    """
    found = [k for r in h.rounds for k in r.kernels
             if k.name == name and (regime is None or k.regime == regime)]
    if not found:
        return None
    first = next((k for k in found if k.is_head), found[0])
    regime = first.regime
    series = KernelSeries(name=name, short_name=first.short_name, regime=regime,
                          op_class=next((k.op_class for k in found if k.op_class), None))
    base = h.rounds[0]
    for i, r in enumerate(h.rounds):
        k = r.kernel(name, regime)
        step = h.steps[i - 1] if i > 0 else None
        pt = SeriesPoint(label=r.label, present=k is not None,
                         comparable_with_prev=step.comparable if step else None)
        series.points.append(pt)
        if k is None:
            continue
        pt.is_head, pt.t_ms, pt.pct_gpu_time = k.is_head, k.t_ms, k.pct_gpu_time
        pt.attainable_speedup = k.attainable_speedup
        pt.expected_e2e_gain_pct = k.expected_e2e_gain_pct
        pt.headroom_class = k.headroom_class
        if step is not None and step.comparable:
            for mv in step.movements:
                if mv.name == name and mv.regime == regime:
                    pt.delta_t_pct_vs_prev = mv.delta_t_pct
            for p in step.pairs:
                if p.name == name and p.regime == regime:
                    pt.measured_speedup_vs_prev = p.measured_speedup
                    pt.predicted_speedup_prev = p.predicted_speedup
                    pt.verdict, pt.contradiction = p.verdict, p.contradiction
        if i > 0 and h.baseline_comparable.get(str(r.label)) is None:
            b = base.kernel(name, regime)
            if b is not None and b.t_ms and k.t_ms:
                pt.delta_t_pct_vs_baseline = (k.t_ms / b.t_ms - 1.0) * 100.0
    return series


def all_kernel_series(h: RoundHistory) -> list[KernelSeries]:
    out = []
    for name, regime in kernel_keys(h):
        s = kernel_series(h, name, regime)
        if s is not None:
            out.append(s)
    return out
