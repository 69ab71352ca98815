"""The headroom column of the gain ranking: an entry without a verdict says why in full
(``– dispatch-bound``), never a cut ``unknown (dispat…``, at 80 and at 200 columns."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from rich.cells import cell_len

from tests.paths import DEMO

from .helpers import column, make_app, settle, static_text, wait_until


@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
async def test_no_verdict_reasons_fit_their_column(tmp_path: Path, size: tuple[int, int]) -> None:
    shutil.copytree(DEMO, tmp_path / "demo")
    app = make_app(tmp_path / "demo" / "profile")
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        table = app.gain_table
        keys = [c.key.value for c in table.ordered_columns]
        assert "headroom" in keys  # kept at 80 columns: the reason an entry has no verdict
        width = table.ordered_columns[keys.index("headroom")].width
        cells = column(table, "headroom")
        # the demo's newest round: the copy kernel's byte model is above peak (suspect), the
        # 3.9 µs Triton kernel is dispatch-bound; both have no verdict
        assert "– suspect" in cells and "– dispatch-bound" in cells
        assert all(cell_len(c) <= width for c in cells), (cells, width)
        # the drill-down keeps the long form
        kernels = column(app.pct_table, "kernel")
        app.pct_table.move_cursor(row=next(i for i, k in enumerate(kernels)
                                           if k.startswith("triton_poi")))
        await pilot.pause()
        await wait_until(pilot, lambda: "dispatch-bound" in static_text(
            app.query_one("#summary-body"), width=400))
        assert "unknown (dispatch-bound)" in static_text(app.query_one("#summary-body"), width=400)
