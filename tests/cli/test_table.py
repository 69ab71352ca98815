"""The plain-text table of the headless commands: columns line up in terminal cells, even with
wide characters, and text is printed as written (no markup is interpreted)."""

from __future__ import annotations

import pytest
from rich.cells import cell_len

from roofline_tui.cli.table import Column, render_table


def test_columns_line_up_in_cells_with_wide_characters() -> None:
    out = render_table([Column("kernel"), Column("%gpu", "right")],
                       [["注意力内核", "12.50"], ["gemm", "3.00"], ["[bold]x[/bold]", "0.25"]],
                       title="title")
    lines = out.splitlines()
    assert lines[0] == "title"
    # "注意力内核" is 5 characters but 10 cells: the widest kernel cell is "[bold]x[/bold]" (14)
    assert lines[1] == "kernel           %gpu"
    assert lines[2] == "─" * 14 + "  " + "─" * 5
    assert lines[3] == "注意力内核      12.50"
    assert lines[5] == "[bold]x[/bold]   0.25"  # literal: nothing interpreted
    # the right-aligned column ends in the same terminal cell on every line
    assert {cell_len(line) for line in lines[1:]} == {21}


def test_a_short_row_is_refused() -> None:
    with pytest.raises(ValueError):
        render_table([Column("a"), Column("b")], [["only one"]])


def test_trailing_blanks_are_dropped() -> None:
    out = render_table([Column("a"), Column("note")], [["x", ""]])
    assert all(not line.endswith(" ") for line in out.splitlines())
