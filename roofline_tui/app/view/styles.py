"""The dashboard's look: colours, flag symbols, legends, and the small text helpers every pane
uses (untrusted text into a literal :class:`rich.text.Text`, a signed change, the headroom cell).

Presentation only; which flags an entry has and their order is ``core.reading``.
"""

from __future__ import annotations

from rich.text import Text

from roofline_tui.core import demangle, reading, units
from roofline_tui.core import metrics as M
from roofline_tui.core.artifact import Entry
from roofline_tui.core.textsafe import printable

HEADROOM_STYLE = {
    "underperforming": "bold red",
    "moderate": "yellow",
    "saturated": "green",
    "unknown": "dim",
}
# Symbols and styles of the flags; which flags an entry has, and their order, is
# ``core.reading`` (one rule for the screen, the CLI, the Markdown and the CSV).
FLAG_STYLE = {
    "suspect": "bold magenta",
    "dispatch-bound": "cyan",
    "unmodelled": "bright_black",
    "contradiction": "bold magenta",
    "caution": "bold yellow",
    "counters-contradict": "bold magenta",
    "regime-assumed": "yellow",
}
# One character per flag in the tables (the legend is in the help screen and the Flags tab).
FLAG_SYMBOL = {
    "suspect": "✕",
    "dispatch-bound": "D",
    "unmodelled": "U",
    "contradiction": "C",
    "caution": "!",
    "counters-contradict": "≠",
    "regime-assumed": "~",
}
# the flags a row shows (advisory is shown once per round: the ADVISORY banner)
FLAG_ORDER = tuple(f for f in reading.FLAGS if f not in reading.ROUND_FLAGS)
FLAG_MEANING = {
    "caution": "the speedup is implausible (model caution): measure before sizing the prize; "
               "never the next target",
    "suspect": "the byte/FLOP model gives an impossible rate: above the peak (roofline shown "
               "clamped, 100%!), under 0.1% of it (0%!: the model under-counts) or no bytes "
               "at all; no verdict",
    "contradiction": "a measured speedup beat the prediction: the model is wrong for this kernel",
    "counters-contradict": "hardware counters contradict the byte/FLOP model",
    "dispatch-bound": "per-launch time within launch-overhead scale: fuse or capture a graph",
    "unmodelled": "no byte/FLOP model for this kernel: see Degraded",
    "regime-assumed": "no step annotation or recorded shape says the regime: it is assumed",
}
# The bound types (core.metrics decides them; core.routing routes on them), in words for the
# help screen. The thresholds are the engine's own constants.
BOUND_MEANING = (
    ("memory-bound", f"{M.UTIL_BOUND_THRESHOLD:.0%} or more of a peak used, arithmetic intensity "
                     "(FLOP/byte) below the ridge point: the HBM bandwidth roof limits it"),
    ("compute-bound", f"{M.UTIL_BOUND_THRESHOLD:.0%} or more of a peak used, arithmetic "
                      "intensity above the ridge point: the FLOP/s roof limits it"),
    ("latency-bound", f"both the HBM and the compute use under {M.UTIL_BOUND_THRESHOLD:.0%} of "
                      "their peaks: neither roof is the limit, the time goes to waiting "
                      "(occupancy, dependency chains, a small grid); the levers are occupancy, "
                      "fusion or split-K, not fewer bytes"),
    ("dispatch-bound", f"latency-bound with launches of at most {M.DISPATCH_FLOOR_S * 1e6:g} µs "
                       f"({M.DISPATCH_FACTOR:g}× the ~{M.LAUNCH_OVERHEAD_S * 1e6:g} µs launch "
                       "overhead): the launch, not the kernel body, is the cost (flag D, no "
                       "verdict)"),
    ("unknown", "no usable byte/FLOP model: no bound, no verdict"),
)
HEADROOM_MEANING = (
    ("underperforming", "far below what a good kernel of this class reaches: tuning headroom"),
    ("moderate", "some headroom left"),
    ("saturated", "done with tuning, not with optimization: move fewer bytes"),
    ("unknown", "no verdict (suspect, dispatch-bound, unmodelled, low confidence)"),
)
# Markers that carry the headroom class without colour (NO_COLOR): they lead the kernel cells
# of both rankings, so the targets stand out in monochrome too.
HEADROOM_MARKER = {
    "underperforming": "▲",
    "moderate": "△",
    "saturated": "·",
    "unknown": " ",
}
MARKER_GAP = " "  # between the marker and the kernel name


def headroom_marker(e: Entry) -> Text:
    """The headroom class of ``e`` as one glyph, in its colour (blank without a verdict)."""
    cls = e.headroom_class
    return Text(HEADROOM_MARKER.get(cls, " "), style=HEADROOM_STYLE.get(cls, ""))


OTHER_LEGEND = (
    ("100%! / 0%!", "magenta", "a suspect roofline (✕): clamped at the peak, or under 0.1% of it"),
    ("↑3 / ↓2", "green", "places a kernel moved in the gain ranking vs the GPU-time ranking"),
    ("ADVISORY", "bold black on yellow",
     "stage A / low confidence: pct_gpu_time order rules, the measurement decides"),
)
LABEL_STYLE = "bold"
DIM = "dim"


def safe(text: object, limit: int | None = None, style: str = "") -> Text:
    """Untrusted text as a literal :class:`Text` (control characters made visible)."""
    return Text(printable("–" if text is None else text, limit=limit), style=style)


caution = reading.caution  # why an entry's speedup must not be taken at face value, or None


def entry_flags(e: Entry) -> list[str]:
    """The flags a row shows, most important first (``core.reading.row_flags``: advisory is
    shown once per round)."""
    return list(reading.row_flags(e))


def flags_text(e: Entry) -> Text:
    out = Text()
    for f in entry_flags(e):
        out.append(FLAG_SYMBOL[f], style=FLAG_STYLE[f])
    return out


def full_name(e: Entry) -> str:
    """The kernel's full name as shown in the drill-down and the row tooltip (demangled)."""
    return printable(demangle.full_name(e.name))


# What the headroom cell of an entry without a verdict reads: why there is none, in at most
# HEADROOM_WIDTH cells ("unknown (dispatch-bound)" did not fit and was cut).
NO_VERDICT = reading.NO_VERDICT_LABEL
HEADROOM_WIDTH = max(16, *(len(v) for v in NO_VERDICT.values()))


def headroom_text(e: Entry, *, compact: bool = True) -> Text:
    """The headroom class; without a verdict, why there is none (the table's compact form, or
    ``unknown (dispatch-bound)`` in the drill-down)."""
    flag = reading.no_verdict_flag(e)
    if flag is not None and compact:
        return Text(NO_VERDICT[flag], style=FLAG_STYLE.get(flag, DIM))
    out = Text(printable(e.headroom_class, limit=20), style=HEADROOM_STYLE.get(e.headroom_class, ""))
    if flag is not None:
        out.append(" (" + flag + ")", style=FLAG_STYLE.get(flag, DIM))
    return out


def signed_pct(d: float | None, digits: int = 1) -> str:
    """A signed change in percent through the one formatter: ``-4.5%``, ``+0.8%``."""
    if d is None:
        return units.DASH
    return ("+" if d > 0 else "-" if d < 0 else "±") + units.pct_points(abs(d), digits)
