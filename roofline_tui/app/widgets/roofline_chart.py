"""The roofline chart in the terminal: a plotext plot of :class:`ChartModel` plus its legend.

Mount ``RooflineChart(artifact)`` anywhere (a tab pane works well). The app drives it with
:meth:`RooflineChart.update_artifact` after every recompute and :meth:`RooflineChart.select` when
the table's cursor moves; when the chart has focus, ``[`` / ``]`` step through the kernels and
post :class:`RooflineChart.KernelSelected` so the app can follow.

plotext's own log scale mislabels ticks and drops text, so the plot is drawn on log10 values with
whole-decade ticks labelled in human units (0.1, 1, 10, 1k / 1T, 10T, 1P).
"""

from __future__ import annotations

import math

from rich.text import Text
from textual.app import ComposeResult, RenderResult
from textual.binding import Binding
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Static
from textual_plotext import PlotextPlot

from roofline_tui.core.artifact import Artifact
from roofline_tui.core.chart import (
    HEADROOM_COLOURS,
    ChartModel,
    ChartPoint,
    Roof,
    build_chart,
)
from roofline_tui.core.textsafe import printable
from roofline_tui.core.units import rate as human

SIZE_MARKERS = {1: "•", 2: "●", 3: "◉"}
SUSPECT_MARKER = "✕"
RIDGE_MARKER = "◆"
DASH_MARKER = "·"
ROOF_RGB = (31, 119, 180)
TARGET_RGB = (23, 190, 207)
LABEL_FG = (255, 255, 255)
SELECTED_BG = (40, 40, 160)


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    h = hex_colour.lstrip("#")
    return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)


def _lg(v: float) -> float:
    return math.log10(v)


class RooflinePlot(PlotextPlot):
    """The plot area alone; it redraws from ``model`` on every render (so resizes just work)."""

    DEFAULT_CSS = """
    RooflinePlot {
        width: 1fr;
        height: 1fr;
        min-height: 12;
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id, classes=classes)
        self.model: ChartModel | None = None
        self.selected: str | None = None

    def render(self) -> RenderResult:
        self.draw()
        return super().render()

    # -- drawing -------------------------------------------------------------------------------
    def draw(self) -> None:
        plt = self.plt
        plt.clear_figure()
        m = self.model
        if m is None:
            plt.title("Roofline — no artifact yet")
            return
        xa, ya = m.x_axis, m.y_axis
        plt.title(m.title)
        plt.xlabel(f"arithmetic intensity ({xa.unit}, log)")
        plt.ylabel(f"{ya.unit} (log)")
        plt.xlim(xa.lo, xa.hi)
        plt.ylim(ya.lo, ya.hi)
        xt, yt = xa.ticks(), ya.ticks()
        plt.xticks(xt, [xa.tick_label(t) for t in xt])
        plt.yticks(yt, [ya.tick_label(t) for t in yt])
        # log-decades per character cell, to space dashes and offset labels
        cols = max(self.size.width - 10, 10)
        rows = max(self.size.height - 5, 5)
        dx = (xa.hi - xa.lo) / cols
        dy = (ya.hi - ya.lo) / rows

        sel = m.point(self.selected) if self.selected else None
        for roof in m.roofs:
            if roof.kind == "target":
                if sel is not None and sel.short_name in roof.applies_to:
                    self._dashed(roof, dx, dy)
                continue
            plt.plot([_lg(x) for x in roof.xs], [_lg(y) for y in roof.ys],
                     marker="braille", color=ROOF_RGB)
        for roof in m.roofs:
            self._roof_label(roof, m, dx, dy)
        for ridge in m.ridges:
            plt.scatter([_lg(ridge.x)], [_lg(ridge.y)], marker=RIDGE_MARKER, color=ROOF_RGB)
        for p in m.points:
            if p is not sel:
                self._point(p, dx, selected=False)
        if sel is not None:  # drawn last, so nothing covers it
            self._point(sel, dx, selected=True)

    def _dashed(self, roof: Roof, dx: float, dy: float) -> None:
        xs: list[float] = []
        ys: list[float] = []
        pts = list(zip([_lg(x) for x in roof.xs], [_lg(y) for y in roof.ys], strict=True))
        for (x0, y0), (x1, y1) in zip(pts, pts[1:], strict=False):
            cells = math.hypot((x1 - x0) / dx, (y1 - y0) / dy)
            n = max(int(cells / 2), 1)
            for i in range(n + 1):
                t = i / n
                xs.append(x0 + (x1 - x0) * t)
                ys.append(y0 + (y1 - y0) * t)
        self.plt.scatter(xs, ys, marker=DASH_MARKER, color=TARGET_RGB)

    def _roof_label(self, roof: Roof, m: ChartModel, dx: float, dy: float) -> None:
        if roof.kind == "compute" and roof.xs:
            text = f" {roof.dtype} {human(roof.value, 'FLOP/s')} "
            self.plt.text(text, m.x_axis.hi - dx, _lg(roof.ys[-1]) + dy, color=ROOF_RGB,
                          alignment="right")
        elif roof.kind == "memory" and len(roof.xs) >= 2:
            # a third of the way along the diagonal, one row above it
            x0, x1 = _lg(roof.xs[0]), _lg(roof.xs[-1])
            y0, y1 = _lg(roof.ys[0]), _lg(roof.ys[-1])
            x = x0 + (x1 - x0) * 0.3
            y = y0 + (y1 - y0) * 0.3
            self.plt.text(roof.label, x - dx, y + dy, color=ROOF_RGB, alignment="right")

    def _point(self, p: ChartPoint, dx: float, *, selected: bool) -> None:
        marker = SUSPECT_MARKER if p.suspect else SIZE_MARKERS[p.size_band]
        colour = _rgb(p.colour)
        x, y = _lg(p.x), _lg(p.y)
        self.plt.scatter([x], [y], marker=marker, color=colour)
        if selected:
            label = f" {p.rank} {printable(p.short_name, limit=28)} "
            self.plt.text(label, x + dx, y, color=LABEL_FG, background=SELECTED_BG,
                          alignment="left")
        else:
            self.plt.text(p.label, x + dx, y, color=colour, alignment="left")


class RooflineChart(Widget, can_focus=True):
    """Roofline chart of one artifact: plot on top, legend (kernels, roofs, not plotted) below.

    Args:
        artifact: the artifact to draw (``None``: an empty chart until ``update_artifact``).
        selected: short name of the kernel to highlight (default: the rank-1 plotted kernel).
    """

    DEFAULT_CSS = """
    RooflineChart {
        layout: vertical;
        height: 1fr;
        width: 1fr;
    }
    RooflineChart > #roofline-legend {
        height: auto;
        max-height: 50%;
        padding: 0 1;
    }
    RooflineChart:focus > #roofline-legend {
        background: $boost;
    }
    """

    BINDINGS = [
        Binding("]", "step(1)", "next kernel", show=True),
        Binding("[", "step(-1)", "previous kernel", show=True),
    ]

    class KernelSelected(Message):
        """The user stepped the chart's selection to ``short_name`` (keys ``[`` / ``]``)."""

        def __init__(self, chart: RooflineChart, short_name: str) -> None:
            super().__init__()
            self.chart = chart
            self.short_name = short_name

        @property
        def control(self) -> RooflineChart:
            return self.chart

    def __init__(
        self,
        artifact: Artifact | None = None,
        *,
        selected: str | None = None,
        name: str | None = None,
        id: str | None = None,  # noqa: A002
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._artifact = artifact
        self._model: ChartModel | None = build_chart(artifact) if artifact is not None else None
        self._selected = selected
        self._plot = RooflinePlot(id="roofline-plot")
        self._resolve()
        self._legend = Static(legend_text(self._model, self._selected), id="roofline-legend")

    # -- public API ----------------------------------------------------------------------------
    @property
    def model(self) -> ChartModel | None:
        """The geometry currently drawn."""
        return self._model

    @property
    def selected(self) -> str | None:
        """Short name of the highlighted kernel (``None`` when nothing is plotted)."""
        return self._selected

    def update_artifact(self, artifact: Artifact | None) -> None:
        """Redraw for a new artifact; the selection is kept when that kernel is still there."""
        self._artifact = artifact
        self._model = build_chart(artifact) if artifact is not None else None
        self._sync()

    def select(self, short_name: str | None) -> None:
        """Highlight ``short_name`` (no message is posted: the caller already knows)."""
        self._selected = short_name
        self._sync()

    # -- internals -----------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield self._plot
        yield self._legend

    def _known(self, short: str | None) -> bool:
        m = self._model
        if m is None or short is None:
            return False
        return m.point(short) is not None or any(n.short_name == short for n in m.not_plotted)

    def _resolve(self) -> None:
        """Keep the selection on a known kernel and hand the plot what to draw."""
        m = self._model
        if not self._known(self._selected):
            self._selected = m.points[0].short_name if (m is not None and m.points) else None
        self._plot.model = m
        self._plot.selected = self._selected

    def _sync(self) -> None:
        self._resolve()
        if self.is_mounted:
            self._legend.update(legend_text(self._model, self._selected))
            self._plot.refresh()

    def action_step(self, delta: int) -> None:
        m = self._model
        if m is None or not m.points:
            return
        names = [p.short_name for p in m.points]
        i = names.index(self._selected) if self._selected in names else -delta
        self.select(names[(i + delta) % len(names)])
        assert self._selected is not None
        self.post_message(self.KernelSelected(self, self._selected))


def legend_text(m: ChartModel | None, selected: str | None) -> Text:
    """The legend under the plot: one line per kernel, the roofs, what is not plotted, the key."""
    out = Text(no_wrap=True, overflow="ellipsis")
    if m is None:
        out.append("No artifact to chart yet.", style="dim")
        return out
    for p in m.points:
        marker = SUSPECT_MARKER if p.suspect else SIZE_MARKERS[p.size_band]
        style = "reverse" if p.short_name == selected else ""
        out.append(f"{marker} ", style=p.colour)
        out.append(f"{p.rank:>2} ", style=f"bold {style}".strip())
        out.append(f"{printable(p.short_name, limit=36):<36}", style=style)
        pct = "–" if p.pct_gpu_time is None else f"{p.pct_gpu_time:5.2f}%"
        roof = "–" if p.roofline_pct_raw is None else f"{p.roofline_pct_raw:.0%}"
        out.append(f"  {pct:>6} gpu  AI {p.x:8.3g}  {human(p.y, 'FLOP/s'):>13}  "
                   f"roof {roof:>5}  ")
        out.append(p.headroom_class, style=p.colour)
        if p.suspect:
            out.append("  suspect: raw position", style="bold")
        out.append("\n")
    for n in m.not_plotted:
        style = "reverse" if n.short_name == selected else "dim"
        out.append(f"  {n.rank:>2} {printable(n.short_name, limit=36)}  not plotted: "
                   f"{printable(n.reason, limit=90)}\n", style=style)
    roofs = []
    mem = m.roof("memory")
    if mem is not None:
        roofs.append(mem.label)
    for r in m.ridges:
        roofs.append(f"{r.dtype} {human(r.y, 'FLOP/s')} {RIDGE_MARKER}ridge {r.x:.0f} FLOP/B")
    out.append("roofs: " + (" · ".join(roofs) if roofs else "none (no peaks known)"), style="dim")
    sel = m.point(selected) if selected else None
    if sel is not None and sel.target_eff:
        out.append(f" · {DASH_MARKER}{DASH_MARKER} target {sel.target_eff:.0%} (#{sel.rank})",
                   style="dim")
    out.append("\n")
    out.append("colour: ", style="dim")
    for cls in ("underperforming", "moderate", "saturated", "unknown"):
        out.append(cls, style=HEADROOM_COLOURS[cls])
        out.append(" ")
    out.append(f" size: {SIZE_MARKERS[1]}<10% {SIZE_MARKERS[2]}<20% {SIZE_MARKERS[3]}≥20% gpu  "
               f"{SUSPECT_MARKER} suspect", style="dim")
    for note in m.notes:
        out.append(f"\nnote: {note}", style="dim")
    return out
