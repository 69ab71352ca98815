"""Static roofline image (``profile_roofline.svg`` / ``.png``) through matplotlib.

matplotlib is the optional ``roofline_tui[plot]`` extra: it is imported inside the functions
that draw, only when an image is asked for, and its absence raises :class:`PlotUnavailable` with
a one-line install hint. (The engine otherwise never imports matplotlib.)

Every label is plain text: mathtext is off (``text.parse_math``), so a ``$`` in a kernel name is
drawn as a ``$``, and strings from files go through the sanitiser first.

The SVG is deterministic (fixed ``svg.hashsalt``, no date, text kept as text), so re-running
``roofline analyze --plot`` on the same inputs rewrites it byte for byte.
"""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any

from roofline_tui.core.artifact import Artifact
from roofline_tui.core.chart import (
    HEADROOM_COLOURS,
    ROOF_COLOUR,
    ChartModel,
    build_chart,
)
from roofline_tui.core.store import atomic_write_bytes
from roofline_tui.core.textsafe import printable
from roofline_tui.core.units import rate as human

PLOT_SVG = "profile_roofline.svg"
PLOT_PNG = "profile_roofline.png"
INSTALL_HINT = "pip install 'roofline_tui[plot]'"
_RC = {
    "svg.hashsalt": "roofline_tui",
    "svg.fonttype": "none",      # <text> elements: searchable, small, stable
    "font.family": "DejaVu Sans",
    "font.size": 9.0,
    "text.parse_math": False,    # plain text: "$_$" in a kernel name is not TeX
    "text.usetex": False,
}
_FIG_SIZE = (10.0, 6.5)
_AXES_RECT = (0.08, 0.27, 0.62, 0.66)


class PlotUnavailable(RuntimeError):
    """matplotlib (the ``plot`` extra) is not installed."""


def _matplotlib() -> Any:
    try:  # the optional plot extra: only here, when an image is drawn
        import matplotlib
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise PlotUnavailable(
            f"the roofline image needs matplotlib, which is not installed ({INSTALL_HINT})"
        ) from exc
    return matplotlib, Figure


def _figure(model: ChartModel) -> Any:
    matplotlib, Figure = _matplotlib()
    with matplotlib.rc_context(_RC):
        fig = Figure(figsize=_FIG_SIZE, dpi=100)
        ax = fig.add_axes(_AXES_RECT)
        _draw(ax, model)
    return fig


def _draw(ax: Any, m: ChartModel) -> None:
    _draw_axes(ax, m)
    _draw_roofs(ax, m)
    _draw_points(ax, m)
    _draw_legend(ax, m)


def _draw_axes(ax: Any, m: ChartModel) -> None:
    """Log axes over the model's ranges, decade ticks, labels and the title."""
    xa, ya = m.x_axis, m.y_axis
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(xa.min, xa.max)
    ax.set_ylim(ya.min, ya.max)
    ax.set_xticks([10.0 ** t for t in xa.ticks()], [xa.tick_label(t) for t in xa.ticks()])
    ax.set_yticks([10.0 ** t for t in ya.ticks()], [ya.tick_label(t) for t in ya.ticks()])
    ax.minorticks_off()
    ax.grid(True, which="major", color="#e5e5e5", linewidth=0.6)
    ax.set_xlabel(f"arithmetic intensity ({xa.unit})")
    ax.set_ylabel(f"performance ({ya.unit})")
    ax.set_title(printable(m.title, limit=160), loc="left", fontsize=11)


def _draw_roofs(ax: Any, m: ChartModel) -> None:
    """Memory and compute roofs (labelled along them), dashed target roofs, ridge points."""
    xa, ya = m.x_axis, m.y_axis
    # on screen, one decade of y rises this many degrees per decade of x (the memory roof's slope)
    px_per_x = _FIG_SIZE[0] * _AXES_RECT[2] / (xa.hi - xa.lo)
    px_per_y = _FIG_SIZE[1] * _AXES_RECT[3] / (ya.hi - ya.lo)
    slope_deg = math.degrees(math.atan2(px_per_y, px_per_x))
    for roof in m.roofs:
        if roof.kind == "memory":
            ax.plot(roof.xs, roof.ys, color=ROOF_COLOUR, linewidth=2.0, solid_capstyle="butt")
            along, above = 24.0, 5.0
            t = math.radians(slope_deg)
            xy_off = (along * math.cos(t) - above * math.sin(t),
                      along * math.sin(t) + above * math.cos(t))
            ax.annotate(roof.label, (roof.xs[0], roof.ys[0]), xytext=xy_off,
                        textcoords="offset points", color=ROOF_COLOUR, fontsize=8,
                        rotation=slope_deg, rotation_mode="anchor")
        elif roof.kind == "compute":
            ax.plot(roof.xs, roof.ys, color=ROOF_COLOUR, linewidth=2.0)
            ax.annotate(roof.label, (roof.xs[-1], roof.ys[-1]), xytext=(-4, 4),
                        textcoords="offset points", ha="right", color=ROOF_COLOUR, fontsize=8)
        else:
            ax.plot(roof.xs, roof.ys, color=roof.colour, linewidth=0.9, linestyle="--",
                    alpha=0.8, label=roof.label)
    for r in m.ridges:
        ax.plot([r.x], [r.y], marker="D", markersize=5, color=ROOF_COLOUR)
        ax.axvline(r.x, color=ROOF_COLOUR, linewidth=0.5, linestyle=":", alpha=0.6)
        ax.annotate(f"ridge {r.dtype} {r.x:.0f}", (r.x, ya.min), xytext=(3, 4),
                    textcoords="offset points", rotation=90, fontsize=7, color=ROOF_COLOUR)


def _draw_points(ax: Any, m: ChartModel) -> None:
    """One labelled marker per head; a suspect one with a dotted line down to its roof."""
    for p in m.points:
        area = 30.0 + 420.0 * p.size
        if p.suspect:
            ax.scatter([p.x], [p.y], s=area, marker="X", c=p.colour, edgecolors="black",
                       linewidths=0.8, zorder=4)
            if p.roof_y is not None:  # where the model says the kernel cannot be: above this
                ax.plot([p.x, p.x], [p.roof_y, p.y], color="black", linewidth=0.6,
                        linestyle=":", zorder=3)
        else:
            ax.scatter([p.x], [p.y], s=area, marker="o", c=p.colour, edgecolors="black",
                       linewidths=0.6, alpha=0.9, zorder=4)
        offset = 1.0 + math.sqrt(area) / 2  # the marker's radius in points, plus a gap
        ax.annotate(printable(p.label, limit=40), (p.x, p.y), xytext=(offset, offset * 0.5),
                    textcoords="offset points", fontsize=9, fontweight="bold", color="black",
                    zorder=5)


def _draw_legend(ax: Any, m: ChartModel) -> None:
    """Kernels by rank (names are long), what was not plotted, the colour key and notes."""
    lines: list[tuple[str, str]] = []
    names = m.legends(64)  # the row labels every table shows, no two the same
    for p, name in zip(m.points, names, strict=False):
        roof_pct = "–" if p.roofline_pct_raw is None else f"{p.roofline_pct_raw:.0%}"
        gpu = "–" if p.pct_gpu_time is None else f"{p.pct_gpu_time:.1f}%"
        flag = "  SUSPECT (raw position)" if p.suspect else ""
        lines.append((p.colour, f"#{p.rank} {name}  —  {gpu} gpu, "
                                f"AI {p.x:.3g}, {human(p.y, 'FLOP/s')}, roof {roof_pct}, "
                                f"{printable(p.headroom_class, limit=20)}{flag}"))
    for n, name in zip(m.not_plotted, names[len(m.points):], strict=False):
        lines.append(("#555555", f"#{n.rank} {name}  —  not plotted: "
                                 f"{printable(n.reason, limit=60)}"))
    fig = ax.figure
    y = 0.17
    for colour, text in lines[:14]:
        fig.text(0.08, y, text, color=colour, fontsize=8, family="DejaVu Sans Mono")
        y -= 0.021
    key = [f"{cls}" for cls in HEADROOM_COLOURS]
    fig.text(0.72, 0.9, "colour = headroom class", fontsize=8, fontweight="bold")
    for i, cls in enumerate(key):
        fig.text(0.73, 0.87 - 0.025 * i, f"● {cls}", color=HEADROOM_COLOURS[cls], fontsize=8)
    fig.text(0.72, 0.74, "size = % GPU time; ✕ = suspect,\nshown at its raw (infeasible) position",
             fontsize=8)
    fig.text(0.72, 0.67, "solid: peak roofs, ◆ ridge points\ndashed: target_eff × roof",
             fontsize=8)
    if any(r.kind == "target" for r in m.roofs):
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 0.55), fontsize=7, frameon=False,
                  title="targets", title_fontsize=8)
    for i, note in enumerate(m.notes[:3]):
        fig.text(0.72, 0.3 - 0.025 * i, f"note: {printable(note, limit=200)}", fontsize=7, color="#555555", wrap=True)


def render_image(model: ChartModel, fmt: str = "svg") -> bytes:
    """The chart as ``svg`` or ``png`` bytes (raises :class:`PlotUnavailable`)."""
    matplotlib, _ = _matplotlib()
    fig = _figure(model)
    buf = io.BytesIO()
    metadata: dict[str, Any] = {"Date": None} if fmt == "svg" else {"Software": None}
    with matplotlib.rc_context(_RC):
        fig.savefig(buf, format=fmt, metadata=metadata)
    return buf.getvalue()


def write_plot(artifact: Artifact, out_dir: Path, *, png: bool = False) -> list[Path]:
    """Write ``profile_roofline.svg`` (and ``.png``) into ``out_dir`` atomically.

    Raises :class:`PlotUnavailable` without matplotlib and ``OSError`` when the directory is not
    writable; nothing is written in either case.
    """
    model = build_chart(artifact)
    images = [(PLOT_SVG, render_image(model, "svg"))]
    if png:
        images.append((PLOT_PNG, render_image(model, "png")))
    return [atomic_write_bytes(Path(out_dir) / name, data) for name, data in images]
