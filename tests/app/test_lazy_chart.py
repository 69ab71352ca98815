"""plotext is imported when the Chart tab is first shown, not with the dashboard."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from rich.text import Text

from roofline_tui.app.widgets.roofline_chart import RooflineChart

from .helpers import make_app, settle


def test_the_dashboard_imports_no_plotting_library() -> None:
    code = ("import sys, roofline_tui.app.app\n"
            "print(sorted(m for m in ('plotext', 'textual_plotext', 'matplotlib') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.strip() == "[]"


async def test_the_plot_is_built_when_the_chart_tab_opens(profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(160, 44)) as pilot:
        await settle(pilot)
        assert not app.query("#roofline-plot")  # the Chart tab was never shown
        await pilot.press("c")
        await pilot.pause()
        await pilot.pause()
        chart = app.query_one(RooflineChart)
        plot = chart.query_one("#roofline-plot")
        drawn = plot.render()
        assert isinstance(drawn, Text)
        text = drawn.plain
        assert "1 fused_moe_kernel" in text  # drawn, with the selected kernel's label
        assert "HBM" in text
