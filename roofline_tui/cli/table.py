"""Plain-text tables for the headless commands (``analyze``'s rankings, ``rounds``, ``playbook``).

A table here is a title line, a header, a rule and one line per row, columns two cells apart.
Widths are measured in terminal cells with :mod:`rich.cells` (a wide character counts two), so a
CJK kernel name still lines up; the rest of Rich (its console, markup and layout engine, about
25 ms of import, a third of a bare Python start) is not needed to print a table of short strings.

Cells are text that the caller has already passed through the sanitiser (``args.shown``): this
module adds no markup and interprets none, so ``[bold]`` in a kernel name is printed as written.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Literal, NamedTuple, TextIO

from rich.cells import cell_len

Align = Literal["left", "right"]

GAP = "  "
RULE = "─"


class Column(NamedTuple):
    header: str
    align: Align = "left"


def _pad(text: str, width: int, align: Align) -> str:
    fill = " " * max(width - cell_len(text), 0)
    return fill + text if align == "right" else text + fill


def render_table(columns: Sequence[Column], rows: Sequence[Sequence[str]],
                 title: str | None = None) -> str:
    """The table as text, one ``\\n``-terminated line each (no trailing blanks)."""
    if any(len(r) != len(columns) for r in rows):
        raise ValueError("every row needs one cell per column")
    widths = [max([cell_len(c.header), *(cell_len(r[i]) for r in rows)])
              for i, c in enumerate(columns)]
    lines = [title] if title else []
    lines.append(GAP.join(_pad(c.header, w, c.align) for c, w in zip(columns, widths)))
    lines.append(GAP.join(RULE * w for w in widths))
    lines += [GAP.join(_pad(cell, w, c.align) for cell, c, w in zip(row, columns, widths))
              for row in rows]
    return "".join(line.rstrip() + "\n" for line in lines)


def print_table(columns: Sequence[Column], rows: Sequence[Sequence[str]],
                title: str | None = None, *, file: TextIO | None = None) -> None:
    out = file or sys.stdout
    out.write(render_table(columns, rows, title))
    out.flush()
