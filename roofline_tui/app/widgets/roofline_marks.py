"""What the roofline plot draws and its legend names, shared by
:mod:`~roofline_tui.app.widgets.roofline_chart` (the legend) and
:mod:`~roofline_tui.app.widgets.roofline_plot` (the plot area): the markers of points, ridges
and target roofs, and where each point's label goes. Kept apart so that neither widget imports
the other for them: the chart imports the plot (and plotext) only when first shown.
"""

from __future__ import annotations

# markers shared by the plot and the legend
SIZE_MARKERS = {1: "•", 2: "●", 3: "◉"}
SUSPECT_MARKER = "✕"
RIDGE_MARKER = "◆"
DASH_MARKER = "·"

Cell = tuple[int, int]  # (column, row) of a character cell on the plot canvas


def place_labels(anchors: list[tuple[str, Cell]], cols: int, rows: int,
                 taken: set[Cell] | None = None) -> tuple[dict[str, tuple[Cell, str]], list[str]]:
    """Where each point's label goes so that no label covers another label or a point.

    ``anchors`` are (label, cell of the point) in drawing priority order. Points sharing a cell
    (or touching ones on the same row, whose labels could not both fit) are merged into one
    label ``"2,3,5"`` placed once. Each label tries right of its point, then left, above and
    below; a label that fits nowhere is left out and returned in the second list (the legend
    names it). Returns ({label: (start cell, text)}, hidden labels).
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
