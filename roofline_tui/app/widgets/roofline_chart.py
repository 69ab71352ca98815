"""The roofline chart in the terminal: a plotext plot of :class:`ChartModel` plus its legend.

Mount ``RooflineChart(artifact)`` anywhere (a tab pane works well). The app drives it with
:meth:`RooflineChart.update_artifact` after every recompute and :meth:`RooflineChart.select` when
the table's cursor moves; when the chart has focus, ``↑`` / ``↓`` step through the kernels and
post :class:`RooflineChart.KernelSelected` so the app can follow.

plotext's own log scale mislabels ticks and drops text, so the plot is drawn on log10 values with
whole-decade ticks labelled in human units (0.1, 1, 10, 1k / 1T, 10T, 1P).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Static

from roofline_tui.app.widgets.roofline_marks import (
    DASH_MARKER,
    RIDGE_MARKER,
    SIZE_MARKERS,
    SUSPECT_MARKER,
)
from roofline_tui.core import units
from roofline_tui.core.artifact import Artifact
from roofline_tui.core.chart import (
    HEADROOM_COLOURS,
    ChartModel,
    build_chart,
)
from roofline_tui.core.textsafe import printable

if TYPE_CHECKING:
    from roofline_tui.app.widgets.roofline_plot import RooflinePlot


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
        # The plot (plotext) is built the first time the chart is shown: see ``on_show``.
        self._plot: RooflinePlot | None = None
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
        yield self._legend

    def on_show(self) -> None:
        """First shown: import plotext (about 40 ms the dashboard would otherwise pay at start,
        Chart tab open or not) and mount the plot above the legend."""
        if self._plot is not None:
            return
        from roofline_tui.app.widgets.roofline_plot import RooflinePlot

        self._plot = RooflinePlot(id="roofline-plot")
        self._plot.on_labels = self._labels_changed
        self._resolve()
        self.mount(self._plot, before=self._legend)

    def _labels_changed(self) -> None:
        """The plot merged or left out labels: the legend names those points."""
        if self.is_mounted and self._plot is not None:
            self._legend.update(legend_text(self._model, self._selected, self._plot.overlaps(),
                                            self._plot.hidden))

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
        if self._plot is not None:
            self._plot.model = m
            self._plot.selected = self._selected

    def _sync(self) -> None:
        self._resolve()
        # the legend follows even before the chart is mounted (a Static takes new content at
        # any time): the dashboard builds its Chart tab when it opens and fills it at once
        self._legend.update(legend_text(self._model, self._selected))
        if self.is_mounted and self._plot is not None:
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
    names = m.legends(36)  # the row labels every table shows, no two the same
    for p, name in zip(m.points, names, strict=False):
        marker = SUSPECT_MARKER if p.suspect else SIZE_MARKERS[p.size_band]
        style = "reverse" if p.short_name == selected else ""
        out.append(f"{marker} ", style=p.colour)
        out.append(f"{p.rank:>2} ", style=f"bold {style}".strip())
        out.append(f"{name:<36}", style=style)
        pct = units.pct_points(p.pct_gpu_time, 2)
        roof = units.pct(p.roofline_pct_raw)
        out.append(f"  {pct:>6} gpu  AI {units.si(p.x, 'FLOP/B'):>12}  "
                   f"{units.rate(p.y, 'FLOP/s'):>13}  roof {roof:>5}  ")
        out.append(printable(p.headroom_class), style=p.colour)
        if p.suspect:
            out.append("  suspect: raw position", style="bold")
        out.append("\n")
    for n, name in zip(m.not_plotted, names[len(m.points):], strict=False):
        style = "reverse" if n.short_name == selected else "dim"
        out.append(f"  {n.rank:>2} {name}  not plotted: "
                   f"{printable(n.reason, limit=90)}\n", style=style)
    roofs = []
    mem = m.roof("memory")
    if mem is not None:
        roofs.append(mem.label)
    for r in m.ridges:
        roofs.append(f"{printable(r.dtype, limit=12)} {units.rate(r.y, 'FLOP/s')} "
                     f"{RIDGE_MARKER}ridge {units.si(r.x, 'FLOP/B')}")
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
