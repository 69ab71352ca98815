"""The plot area of :class:`~roofline_tui.app.widgets.roofline_chart.RooflineChart`, drawn with
plotext. Kept apart so that plotext and textual-plotext are imported only when a chart is first
shown, not with the dashboard.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from textual.app import RenderResult
from textual_plotext import PlotextPlot

from roofline_tui.app.widgets.roofline_marks import (
    DASH_MARKER,
    RIDGE_MARKER,
    SIZE_MARKERS,
    SUSPECT_MARKER,
    Cell,
    place_labels,
)
from roofline_tui.core.chart import ChartModel, ChartPoint, Roof
from roofline_tui.core.demangle import fit
from roofline_tui.core.textsafe import printable
from roofline_tui.core.units import rate as human

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
        plt.xticks([float(t) for t in xt], [xa.tick_label(t) for t in xt])
        plt.yticks([float(t) for t in yt], [ya.tick_label(t) for t in yt])
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
        taken: set[Cell] = set()
        if sel is not None:  # the selected point's named label goes first, to its right
            c, r = cell(sel)
            taken = {(c + 1 + i, r) for i in range(len(self._selected_label(sel)))}
        self.placed, self.hidden = place_labels([(p.label, cell(p)) for p in others], cols, rows,
                                                taken)
        for p in others:
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
            text = f" {printable(roof.dtype, limit=12)} {human(roof.value, 'FLOP/s')} "
            self.plt.text(text, m.x_axis.hi - dx, _lg(roof.ys[-1]) + dy, color=ROOF_RGB,
                          alignment="right")
        elif roof.kind == "memory" and len(roof.xs) >= 2:
            # a third of the way along the diagonal, one row above it
            x0, x1 = _lg(roof.xs[0]), _lg(roof.xs[-1])
            y0, y1 = _lg(roof.ys[0]), _lg(roof.ys[-1])
            x = x0 + (x1 - x0) * 0.3
            y = y0 + (y1 - y0) * 0.3
            self.plt.text(printable(roof.label, limit=40), x - dx, y + dy, color=ROOF_RGB,
                          alignment="right")

    @staticmethod
    def _selected_label(p: ChartPoint) -> str:
        return f" {p.rank} {fit(printable(p.legend or p.short_name), 28)} "

    def _point(self, p: ChartPoint, dx: float, *, selected: bool) -> None:
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
        assert self.model is not None
        xa, ya = self.model.x_axis, self.model.y_axis
        cols = max(self.size.width - 10, 10)
        rows = max(self.size.height - 5, 5)
        self.plt.text(text, xa.lo + c * (xa.hi - xa.lo) / cols, ya.hi - r * (ya.hi - ya.lo) / rows,
                      color=colour, alignment="left")
