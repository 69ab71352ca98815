"""Roofline chart geometry: an :class:`Artifact` turned into what any renderer needs to draw.

Pure data, no drawing library: the terminal widget (plotext) and the static image writer
(matplotlib) both render the same :class:`ChartModel`, so the geometry is tested once, on numbers.

Axes are log-log: x = arithmetic intensity (FLOP/byte), y = FLOP/s. Every coordinate in the model
is in data units (never log10); :class:`Axis` carries its range as decades (log10 exponents).

What is drawn:

* the memory roof ``peak_bw × AI`` from the left edge up to the highest compute ridge;
* one flat compute roof per dtype in play (the dtypes whose peak the heads were measured
  against), starting at that dtype's ridge point ``peak_flops / peak_bw``;
* dashed target roofs ``target_eff × min(peak_bw × AI, peak_flops)``, one per distinct
  (target_eff, dtype) pair among the heads, with the heads they apply to;
* one point per modelled head at ``(AI, achieved FLOP/s)``, labelled by its rank in
  ``ranking_by_pct``. A suspect head (its raw roofline ratio outside (0, 1]) is placed at its raw,
  infeasible position — above the roof — with a distinct marker, never clamped onto the roof.

Entries that cannot be placed (unmodelled, no arithmetic intensity, zero FLOPs) are listed in
``not_plotted`` with the reason. Each point and each entry not plotted carries its row label
(``legend``: ``core.labels.row_labels``, the name every table gives it); a legend cuts them to
its width with :meth:`ChartModel.legends`, no two the same.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Literal

from roofline_tui.core.artifact import Artifact, Entry
from roofline_tui.core.coerce import number
from roofline_tui.core.labels import fit_labels, row_labels
from roofline_tui.core.textsafe import printable
from roofline_tui.core.units import rate

# Colour per headroom class (hex, usable by matplotlib and plotext alike).
HEADROOM_COLOURS: dict[str, str] = {
    "underperforming": "#d62728",
    "moderate": "#ff9f1c",
    "saturated": "#2ca02c",
    "unknown": "#8c8c8c",
}
ROOF_COLOUR = "#1f77b4"
TARGET_COLOUR = "#17becf"

PAD_DECADES = 0.25      # at least this much room between the outermost item and the frame
SNAP_DECADES = 0.5      # ranges are snapped outwards to half decades
RIDGE_ROOM_DECADES = 0.5  # the flat part of the highest compute roof stays visible this far
MIN_SPAN_DECADES = 1.0
DEFAULT_X = (-1.0, 4.0)    # decades, when nothing bounds the axis
DEFAULT_Y = (11.0, 16.0)

Marker = Literal["point", "suspect"]
RoofKind = Literal["memory", "compute", "target"]


@dataclass(frozen=True)
class Axis:
    """One log axis: ``lo``/``hi`` are decades (log10 of the data value)."""

    label: str
    unit: str
    lo: float
    hi: float

    @property
    def min(self) -> float:
        return float(10.0 ** self.lo)

    @property
    def max(self) -> float:
        return float(10.0 ** self.hi)

    def contains(self, value: float, rel_tol: float = 1e-9) -> bool:
        if not (value > 0 and math.isfinite(value)):
            return False
        d = math.log10(value)
        return self.lo - rel_tol <= d <= self.hi + rel_tol

    def ticks(self) -> list[int]:
        """Whole decades inside the range."""
        return list(range(math.ceil(self.lo - 1e-9), math.floor(self.hi + 1e-9) + 1))

    def tick_label(self, decade: int) -> str:
        """Short tick text (the unit lives in the axis label): 0.1, 1, 10, 1k, 1T, 10P."""
        return decade_label(decade)


@dataclass(frozen=True)
class Roof:
    kind: RoofKind
    label: str
    xs: tuple[float, ...]          # polyline vertices, data units, clipped to the axes
    ys: tuple[float, ...]
    dtype: str | None = None
    value: float = 0.0             # B/s for the memory roof, FLOP/s for compute/target roofs
    scale: float = 1.0             # target_eff for target roofs
    dashed: bool = False
    applies_to: tuple[str, ...] = ()  # short names a target roof belongs to
    colour: str = ROOF_COLOUR


@dataclass(frozen=True)
class Ridge:
    dtype: str
    x: float   # FLOP/byte
    y: float   # FLOP/s (the compute peak)


@dataclass(frozen=True)
class ChartPoint:
    rank: int
    short_name: str
    name: str
    x: float                      # arithmetic intensity, FLOP/byte
    y: float                      # achieved FLOP/s (raw, i.e. unclamped, for suspects)
    pct_gpu_time: float | None
    headroom_class: str
    colour: str
    marker: Marker
    size: float                   # 0..1, grows with pct_gpu_time
    size_band: int                # 1..3 for renderers with few marker sizes
    dtype: str | None = None
    roof_y: float | None = None   # attainable FLOP/s at x on this head's roof
    target_y: float | None = None  # target_eff × roof_y
    roofline_pct: float | None = None
    roofline_pct_raw: float | None = None
    target_eff: float | None = None
    bound_type: str = "unknown"
    legend: str = ""  # the row label (core.labels.row_labels, uncut): what the legend names

    @property
    def suspect(self) -> bool:
        return self.marker == "suspect"

    @property
    def label(self) -> str:
        return str(self.rank)


@dataclass(frozen=True)
class NotPlotted:
    rank: int
    short_name: str
    reason: str
    legend: str = ""  # the row label, as ChartPoint.legend


@dataclass(frozen=True)
class ChartModel:
    title: str
    x_axis: Axis
    y_axis: Axis
    peak_bw: float | None
    roofs: tuple[Roof, ...] = ()
    ridges: tuple[Ridge, ...] = ()
    points: tuple[ChartPoint, ...] = ()
    not_plotted: tuple[NotPlotted, ...] = ()
    notes: tuple[str, ...] = ()
    peaks_flops: dict[str, float] = field(default_factory=dict)  # dtypes in play only

    def point(self, short_name: str) -> ChartPoint | None:
        for p in self.points:
            if p.short_name == short_name:
                return p
        return None

    def legends(self, width: int | None = None) -> list[str]:
        """The legend's names, points first then those not plotted (their order here), cut to
        ``width`` with no two the same (``core.labels.fit_labels``)."""
        texts = [printable(p.legend or p.short_name) for p in self.points]
        texts += [printable(n.legend or n.short_name) for n in self.not_plotted]
        return fit_labels(texts, width)

    def roof(self, kind: RoofKind, dtype: str | None = None) -> Roof | None:
        for r in self.roofs:
            if r.kind == kind and (dtype is None or r.dtype == dtype):
                return r
        return None

    def attainable(self, ai: float, dtype: str | None) -> float | None:
        """The roof at ``ai``: ``min(peak_bw × ai, peak_flops[dtype])`` (None if unknown)."""
        return _attainable(self.peak_bw, self.peaks_flops.get(dtype) if dtype else None, ai)


# --------------------------------------------------------------------------------------------
# formatting helpers (human units; SI prefixes)

_PREFIXES = {-3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}


def decade_label(decade: int, unit: str = "") -> str:
    """``10**decade`` in short human form: 0.01, 0.1, 1, 10, 100, 1k … 1T, 10T, 1P."""
    if -3 <= decade < 3 and not unit:
        value = 10.0 ** decade
        return f"{value:g}"
    base = 3 * math.floor(decade / 3)
    base = max(min(base, 18), -3)
    mant = 10 ** (decade - base)
    prefix = _PREFIXES.get(base, f"e{base}")
    return f"{mant:g}{prefix}{unit}"


# --------------------------------------------------------------------------------------------
# geometry

def _finite_pos(v: float | None) -> float | None:
    return number(v, positive=True, text=False)


def _attainable(bw: float | None, peak: float | None, ai: float) -> float | None:
    parts = [v for v in ((bw * ai) if bw else None, peak) if v]
    return min(parts) if parts else None


def _entry_dtype(e: Entry) -> str | None:
    return e.peak_flops_dtype or e.compute_dtype


def _size(pct: float | None) -> tuple[float, int]:
    p = max(0.0, min(pct or 0.0, 100.0))
    size = min(1.0, p / 40.0)
    band = 3 if p >= 20 else 2 if p >= 10 else 1
    return size, band


def _ranked_entries(a: Artifact) -> list[tuple[int, Entry]]:
    order: list[Entry] = []
    seen: set[str] = set()
    for short in a.ranking_by_pct:
        e = a.entry(short)
        if e is not None and short not in seen:
            order.append(e)
            seen.add(short)
    for e in a.entries:
        if e.short_name not in seen:
            order.append(e)
            seen.add(e.short_name)
    return list(enumerate(order, 1))


def _degraded_reason(a: Artifact, e: Entry) -> str | None:
    for d in a.degraded:
        if d.name in (e.name, e.short_name):
            return d.reason
    return None


def _range(values: list[float], default: tuple[float, float]) -> tuple[float, float]:
    logs = [math.log10(v) for v in values if v > 0 and math.isfinite(v)]
    if not logs:
        return default
    lo = math.floor((min(logs) - PAD_DECADES) / SNAP_DECADES) * SNAP_DECADES
    hi = math.ceil((max(logs) + PAD_DECADES) / SNAP_DECADES) * SNAP_DECADES
    if hi - lo < MIN_SPAN_DECADES:
        mid = (hi + lo) / 2
        lo = math.floor((mid - MIN_SPAN_DECADES / 2) / SNAP_DECADES) * SNAP_DECADES
        hi = lo + MIN_SPAN_DECADES
    return lo, hi


def _clip_roof(
    bw: float | None, peak: float | None, scale: float, x_from: float, x_to: float,
    xa: Axis, ya: Axis,
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Vertices of ``scale × min(bw·x, peak)`` for x in [x_from, x_to], clipped to the y axis.

    Each piece is a straight line in log-log space, so the breakpoints (ridge, where the roof
    crosses the bottom or top edge, the ends) are all a renderer needs.
    """
    x_from, x_to = max(x_from, xa.min), min(x_to, xa.max)
    if x_from >= x_to:
        return (), ()
    candidates = {x_from, x_to}
    if bw:
        for edge in (ya.min, ya.max):
            candidates.add(edge / (scale * bw))
        if peak:
            candidates.add(peak / bw)
    xs = sorted(c for c in candidates if x_from * (1 - 1e-12) <= c <= x_to * (1 + 1e-12))
    out_x: list[float] = []
    out_y: list[float] = []
    for x in xs:
        y = _attainable(bw, peak, x)
        if y is None:
            continue
        y *= scale
        if ya.min * (1 - 1e-9) <= y <= ya.max * (1 + 1e-9):
            y = min(max(y, ya.min), ya.max)
            if out_x and math.isclose(out_x[-1], x, rel_tol=1e-12):
                continue
            out_x.append(x)
            out_y.append(y)
    return tuple(out_x), tuple(out_y)


def build_chart(artifact: Artifact) -> ChartModel:
    """The roofline chart of ``artifact``: roofs, ridge points, one point per modelled head."""
    a = artifact
    bw = _finite_pos(a.peaks.hbm_bw_bytes_s)
    peaks_all = {k: v for k, v in (a.peaks.flops or {}).items() if _finite_pos(v)}
    notes: list[str] = []
    if bw is None:
        notes.append("no peak HBM bandwidth for this device: no memory roof")
    if a.peaks.compute_validated is False and peaks_all:
        notes.append("compute peaks unvalidated (bf16 ≠ fp16 in the peak table): "
                     "compute roofs are indicative only")

    points: list[ChartPoint] = []
    skipped: list[NotPlotted] = []
    ranked = _ranked_entries(a)
    names = row_labels([e for _, e in ranked])  # the one row-label rule, uncut
    for (rank, e), legend in zip(ranked, names, strict=True):
        placed = dataclasses.replace(_chart_point(a, rank, e, bw, peaks_all), legend=legend)
        if isinstance(placed, NotPlotted):
            skipped.append(placed)
        else:
            points.append(placed)

    in_play = _dtypes_in_play(points, peaks_all, notes)
    peaks = {d: peaks_all[d] for d in in_play}
    ridges = [Ridge(dtype=d, x=peaks[d] / bw, y=peaks[d]) for d in in_play] if bw else []
    xa, ya = _chart_axes(points, ridges, peaks)
    roofs = _peak_roofs(bw, peaks, xa, ya) + _target_roofs(points, bw, peaks, xa, ya)

    rnd = a.round
    title = "Roofline" + (f" — round {rnd}" if rnd is not None else "")
    title += f" ({a.gfx or 'unknown arch'}, stage {a.stage})"
    return ChartModel(
        title=title, x_axis=xa, y_axis=ya, peak_bw=bw, roofs=tuple(roofs),
        ridges=tuple(ridges), points=tuple(points), not_plotted=tuple(skipped),
        notes=tuple(notes), peaks_flops=peaks,
    )


def _chart_point(
    a: Artifact, rank: int, e: Entry, bw: float | None, peaks_all: dict[str, float]
) -> ChartPoint | NotPlotted:
    """The point of entry ``e``, or why it cannot be plotted."""
    ai = _finite_pos(e.arithmetic_intensity)
    y = _finite_pos(e.achieved_flops)
    if y is None and ai is not None:
        y = _finite_pos((e.achieved_bw_bytes_s or 0) * ai)
    reason: str | None = None
    if not e.modeled:
        why = _degraded_reason(a, e)
        reason = f"not modelled: {why}" if why else "not modelled"
    elif ai is None:
        reason = ("no arithmetic intensity (no FLOPs or no bytes modelled): "
                  "cannot sit on a log axis")
    elif y is None:
        reason = "no achieved FLOP/s (zero FLOPs or no time)"
    if reason is not None:
        return NotPlotted(rank=rank, short_name=e.short_name, reason=reason)
    assert ai is not None and y is not None
    dtype = _entry_dtype(e)
    peak = peaks_all.get(dtype) if dtype else None
    roof_y = _attainable(bw, peak, ai)
    target = _finite_pos(e.target_eff)
    raw = _finite_pos(e.roofline_pct_raw)
    cls = e.headroom_class if e.headroom_class in HEADROOM_COLOURS else "unknown"
    size, band = _size(e.pct_gpu_time)
    return ChartPoint(
        rank=rank, short_name=e.short_name, name=e.name, x=ai, y=y,
        pct_gpu_time=e.pct_gpu_time, headroom_class=cls, colour=HEADROOM_COLOURS[cls],
        marker="suspect" if e.suspect else "point", size=size, size_band=band,
        dtype=dtype, roof_y=roof_y,
        target_y=roof_y * target if (roof_y is not None and target) else None,
        roofline_pct=e.roofline_pct, roofline_pct_raw=raw, target_eff=target,
        bound_type=e.bound_type,
    )


def _dtypes_in_play(
    points: list[ChartPoint], peaks_all: dict[str, float], notes: list[str]
) -> list[str]:
    """Dtypes whose compute roof is drawn, slowest first.

    The ones the heads were measured against; bf16 (or the slowest listed) when no head
    names one, so an all-memory-bound chart still shows where compute starts.
    """
    in_play = sorted({p.dtype for p in points if p.dtype and p.dtype in peaks_all},
                     key=lambda d: peaks_all[d])
    for p in points:
        if p.dtype and p.dtype not in peaks_all and peaks_all:
            notes.append(f"no {p.dtype} compute peak: #{p.rank} has no compute roof")
    if not in_play and peaks_all:
        fallback = "bf16" if "bf16" in peaks_all else min(peaks_all, key=lambda d: peaks_all[d])
        in_play = [fallback]
    return in_play


def _chart_axes(
    points: list[ChartPoint], ridges: list[Ridge], peaks: dict[str, float]
) -> tuple[Axis, Axis]:
    """Axis ranges that keep every point, ridge and compute/target roof level on screen."""
    xs = [p.x for p in points] + [r.x for r in ridges]
    if ridges:
        xs.append(max(r.x for r in ridges) * 10 ** RIDGE_ROOM_DECADES)
    ys = [p.y for p in points] + list(peaks.values())
    ys += [p.target_y for p in points if p.target_y]
    ys += [p.roof_y for p in points if p.roof_y]
    x_lo, x_hi = _range(xs, DEFAULT_X)
    y_lo, y_hi = _range(ys, DEFAULT_Y)
    return (Axis("arithmetic intensity", "FLOP/B", x_lo, x_hi),
            Axis("performance", "FLOP/s", y_lo, y_hi))


def _peak_roofs(bw: float | None, peaks: dict[str, float], xa: Axis, ya: Axis) -> list[Roof]:
    """The memory roof up to the highest ridge, then one compute roof per dtype in play."""
    roofs: list[Roof] = []
    if bw:
        top = max(peaks.values()) if peaks else None
        x_end = top / bw if top else xa.max
        rx, ry = _clip_roof(bw, None, 1.0, xa.min, x_end, xa, ya)
        if rx:
            roofs.append(Roof(kind="memory", label=f"HBM {rate(bw, 'B/s')}", xs=rx, ys=ry,
                              value=bw))
    for d in peaks:
        start = peaks[d] / bw if bw else xa.min
        rx, ry = _clip_roof(None, peaks[d], 1.0, start, xa.max, xa, ya)
        if rx:
            roofs.append(Roof(kind="compute", dtype=d, value=peaks[d], xs=rx, ys=ry,
                              label=f"{d} {rate(peaks[d], 'FLOP/s')}"))
    return roofs


def _target_roofs(
    points: list[ChartPoint], bw: float | None, peaks: dict[str, float], xa: Axis, ya: Axis
) -> list[Roof]:
    """One dashed target roof per (target efficiency, dtype) shared by plotted heads."""
    roofs: list[Roof] = []
    groups: dict[tuple[float, str | None], list[str]] = {}
    for p in points:
        if p.target_eff and p.roof_y is not None:
            groups.setdefault((p.target_eff, p.dtype if p.dtype in peaks else None),
                              []).append(p.short_name)
    for (eff, dt), names in sorted(groups.items(), key=lambda kv: (-kv[0][0], kv[0][1] or "")):
        peak = peaks.get(dt) if dt else None
        rx, ry = _clip_roof(bw, peak, eff, xa.min, xa.max, xa, ya)
        if rx:
            ranks = ", ".join(f"#{p.rank}" for p in points if p.short_name in names)
            roofs.append(Roof(
                kind="target", dtype=dt, value=(peak or 0.0) * eff, scale=eff, dashed=True,
                xs=rx, ys=ry, applies_to=tuple(names), colour=TARGET_COLOUR,
                label=f"target {eff:.0%}{' ' + dt if dt else ''} ({ranks})",
            ))
    return roofs
