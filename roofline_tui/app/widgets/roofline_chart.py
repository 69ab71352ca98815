"""The roofline chart in the terminal: a plotext plot of :class:`ChartModel` plus its legend.

Mount ``RooflineChart(artifact)`` anywhere (a tab pane works well). The app drives it with
:meth:`RooflineChart.update_artifact` after every recompute and :meth:`RooflineChart.select` when
the table's cursor moves; when the chart has focus, ``↑`` / ``↓`` step through the kernels and
post :class:`RooflineChart.KernelSelected` so the app can follow.

plotext's own log scale mislabels ticks and drops text, so the plot is drawn on log10 values with
whole-decade ticks labelled in human units (0.1, 1, 10, 1k / 1T, 10T, 1P).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from rich.text import Text
from textual.app import ComposeResult, RenderResult
from textual.binding import Binding
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Static
from textual_plotext import PlotextPlot

from roofline_tui.core import units
from roofline_tui.core.artifact import Artifact
from roofline_tui.core.chart import (
    HEADROOM_COLOURS,
    ChartModel,
    ChartPoint,
    Roof,
    build_chart,
)
from roofline_tui.core.textsafe import printable

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


Cell = tuple[int, int]  # (column, row) of a character cell on the plot canvas


def place_labels(anchors: list[tuple[str, Cell]], cols: int, rows: int,
                 taken: set[Cell] | None = None) -> tuple[dict[str, tuple[Cell, str]], list[str]]:
    """Where each point's label goes so that no label covers another label or a point.

    ``anchors`` are (label, cell of the point) in drawing priority order. Points sharing a cell
    (or touching ones, whose labels could not both fit) are merged into one label ``"2,3,5"``
    placed once. Each label tries right of its point, then left, above and below; a label that
    fits nowhere is left out and returned in the second list (the caller names it in the legend).
    Returns ({label: (start cell, text)}, hidden labels).
    """
    occupied: set[Cell] = set(taken or set()) | {cell for _, cell in anchors}
    groups: list[tuple[list[str], Cell]] = []
    for label, cell in anchors:
        for names, gcell in groups:
            if abs(gcell[0] - cell[0]) <= 1 and gcell[1] == cell[1]:
                names.append(label)
                break
        else:
            groups.append(([label], cell))
    placed: dict[str, tuple[Cell, str]] = {}
    hidden: list[str] = []
    for names, (c, r) in groups:
        text = ",".join(names)
        n = len(text)
        options = [(c + 2, r), (c - 1 - n, r), (c - n // 2, r - 1), (c - n // 2, r + 1)]
        for x0, y0 in options:
            span = {(x0 + i, y0) for i in range(n)}
            if x0 < 0 or x0 + n > cols or not 0 <= y0 < rows or span & occupied:
                continue
            occupied |= span
            for name in names:
                placed[name] = ((x0, y0), text)
            break
        else:
            hidden += names
    return placed, hidden


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
        self.placed: dict[str, tuple[Cell, str]] = {}  # rank label -> (cell, text drawn there)
        self.hidden: list[str] = []  # rank labels with no room on the plot
        self.on_labels: Callable[[], None] | None = None  # told when merges/hidden change

    def render(self) -> RenderResult:
        before = (self.overlaps(), list(self.hidden))
        self.draw()
        if (self.overlaps(), self.hidden) != before and self.on_labels is not None:
            self.call_after_refresh(self.on_labels)
        return super().render()

    def overlaps(self) -> list[str]:
        """Merged labels (points that share a place), e.g. ``["2,3,5"]``."""
        return sorted({text for _, text in self.placed.values() if "," in text})

    # -- drawing -------------------------------------------------------------------------------
    def draw(self) -> None:
        plt = self.plt
        plt.clear_figure()
        m = self.model
        if m is None:
            plt.title("Roofline — no artifact yet")
            return
        xa, ya = m.x_axis, m.y_axis
        plt.title(printable(m.title, limit=120))
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
        # labels: never over another label or point (merged when points coincide)
        def cell(p: ChartPoint) -> Cell:
            return (round((_lg(p.x) - xa.lo) / dx), round((ya.hi - _lg(p.y)) / dy))

        others = [p for p in m.points if p is not sel]
        anchors = [(p.label, cell(p)) for p in others]
        taken: set[Cell] = set()
        if sel is not None:  # the selected point's named label is placed first, to its right
            c, r = cell(sel)
            taken = {(c + 1 + i, r) for i in range(len(self._selected_label(sel)))}
        self.placed, self.hidden = place_labels(anchors, cols, rows, taken)
        for p in others:
            self._point(p, dx, dy, selected=False)
        if sel is not None:  # drawn last, so nothing covers it
            self._point(sel, dx, dy, selected=True)

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
            text = f" {printable(roof.dtype, limit=12)} {units.rate(roof.value, 'FLOP/s')} "
            self.plt.text(text, m.x_axis.hi - dx, _lg(roof.ys[-1]) + dy, color=ROOF_RGB,
                          alignment="right")
        elif roof.kind == "memory" and len(roof.xs) >= 2:
            # a third of the way along the diagonal, one row above it
            x0, x1 = _lg(roof.xs[0]), _lg(roof.xs[-1])
            y0, y1 = _lg(roof.ys[0]), _lg(roof.ys[-1])
            x = x0 + (x1 - x0) * 0.3
            y = y0 + (y1 - y0) * 0.3
            self.plt.text(printable(roof.label, limit=40), x - dx, y + dy, color=ROOF_RGB, alignment="right")

    @staticmethod
    def _selected_label(p: ChartPoint) -> str:
        return f" {p.rank} {printable(p.short_name, limit=28)} "

    def _point(self, p: ChartPoint, dx: float, dy: float, *, selected: bool) -> None:
        marker = SUSPECT_MARKER if p.suspect else SIZE_MARKERS[p.size_band]
        colour = _rgb(p.colour)
        x, y = _lg(p.x), _lg(p.y)
        self.plt.scatter([x], [y], marker=marker, color=colour)
        if selected:
            self.plt.text(self._selected_label(p), x + dx, y, color=LABEL_FG,
                          background=SELECTED_BG, alignment="left")
            return
        where = self.placed.get(p.label)
        if where is None:
            return  # no room: the legend names it
        (c, r), text = where
        if text.split(",")[0] != p.label:
            return  # a merged label is drawn once, by its first point
        xa, ya = self.model.x_axis, self.model.y_axis  # type: ignore[union-attr]
        self.plt.text(text, xa.lo + c * dx, ya.hi - r * dy, color=colour, alignment="left")


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

    # [ and ] step rounds everywhere (the App's keys); here the arrows step kernels
    BINDINGS = [
        Binding("down,j", "step(1)", "Next kernel", key_display="↓", show=True,
                id="chart-next-kernel", tooltip="next kernel (the rankings follow)"),
        Binding("up,k", "step(-1)", "Prev kernel", key_display="↑", show=True,
                id="chart-prev-kernel", tooltip="previous kernel (the rankings follow)"),
    ]

    class KernelSelected(Message):
        """The user stepped the chart's selection to ``short_name`` (keys ``↑`` / ``↓``)."""

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
        self._plot.on_labels = self._labels_changed
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

    def _labels_changed(self) -> None:
        if self.is_mounted:
            self._legend.update(legend_text(self._model, self._selected, self._plot.overlaps(),
                                            self._plot.hidden))

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


def legend_text(m: ChartModel | None, selected: str | None, overlaps: list[str] | None = None,
                hidden: list[str] | None = None) -> Text:
    """The legend under the plot: one line per kernel, the roofs, what is not plotted, the key,
    and which points share a place on the plot (their labels are merged or left out)."""
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
        pct = units.pct_points(p.pct_gpu_time, 2)
        roof = units.pct(p.roofline_pct_raw)
        out.append(f"  {pct:>6} gpu  AI {units.si(p.x, 'FLOP/B'):>12}  "
                   f"{units.rate(p.y, 'FLOP/s'):>13}  roof {roof:>5}  ")
        out.append(printable(p.headroom_class), style=p.colour)
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
        roofs.append(f"{r.dtype} {units.rate(r.y, 'FLOP/s')} {RIDGE_MARKER}ridge "
                     f"{units.si(r.x, 'FLOP/B')}")
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
    if overlaps:
        out.append("\npoints that share a place (one label each group): " + "; ".join(overlaps),
                   style="dim")
    if hidden:
        out.append("\nno room on the plot for labels " + ", ".join(hidden) + " (see the list above)",
                   style="dim")
    for note in m.notes:
        out.append(f"\nnote: {printable(note)}", style="dim")
    return out
