"""How an artifact looks on screen, by pane: :mod:`.styles` (colours, symbols, shared text
helpers), :mod:`.rankings` (rows, columns, cells), :mod:`.header` (the lines above the tables),
:mod:`.panes` (the drill-down) and :mod:`.history` (round over round).

Presentation only. Every number comes from the engine's :class:`Artifact`; nothing here decides a
verdict, a rank or a route. Everything untrusted (kernel names, reasons, notes, paths) goes through
``printable`` into a :class:`rich.text.Text`, never into markup, so ``[bold]`` or an ESC sequence in
a kernel name is shown literally. Rich only, no Textual: testable on its own.

This face holds what the dashboard's widgets and the tests read from ``view`` itself; anything
else is imported from its own module (``view.rankings``, ``view.styles``, ...), so a helper a
pane keeps to itself is not part of the package's surface.
"""

from __future__ import annotations

from roofline_tui.app.view.header import (
    coverage_line,
    info_lines,
    next_target,
    status_lines,
    title_line,
)
from roofline_tui.app.view.history import (
    history_view,
    rounds_view,
)
from roofline_tui.app.view.panes import (
    assumptions,
    degraded_view,
    flags,
    levers,
    ranks_view,
    raw_json,
    step_view,
    summary,
)
from roofline_tui.app.view.rankings import (
    GAIN_COLUMNS_ALL,
    PCT_COLUMNS_ALL,
    Row,
    cut,
    display_names,
    fit_columns,
    kernel_text,
    matches,
    move_text,
    rank_moves,
    rank_rows,
    roofline_text,
    table_rows,
)
from roofline_tui.app.view.styles import (
    BOUND_MEANING,
    FLAG_MEANING,
    FLAG_ORDER,
    FLAG_STYLE,
    FLAG_SYMBOL,
    HEADROOM_MARKER,
    HEADROOM_MEANING,
    HEADROOM_STYLE,
    OTHER_LEGEND,
    caution,
    entry_flags,
    flags_text,
    headroom_text,
    safe,
)

__all__ = [
    "BOUND_MEANING",
    "FLAG_MEANING",
    "FLAG_ORDER",
    "FLAG_STYLE",
    "FLAG_SYMBOL",
    "GAIN_COLUMNS_ALL",
    "HEADROOM_MARKER",
    "HEADROOM_MEANING",
    "HEADROOM_STYLE",
    "OTHER_LEGEND",
    "PCT_COLUMNS_ALL",
    "Row",
    "assumptions",
    "caution",
    "coverage_line",
    "cut",
    "degraded_view",
    "display_names",
    "entry_flags",
    "fit_columns",
    "flags",
    "flags_text",
    "headroom_text",
    "history_view",
    "info_lines",
    "kernel_text",
    "levers",
    "matches",
    "move_text",
    "next_target",
    "rank_moves",
    "rank_rows",
    "ranks_view",
    "raw_json",
    "roofline_text",
    "rounds_view",
    "safe",
    "status_lines",
    "step_view",
    "summary",
    "table_rows",
    "title_line",
]
