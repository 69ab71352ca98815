"""The terminal chart widget: a snapshot on the demo artifact, and its behaviour under a pilot."""

from __future__ import annotations

from collections.abc import Callable

from textual.app import App, ComposeResult
from textual.widgets import Static

from roofline_tui.app.widgets.roofline_chart import RooflineChart, legend_text
from roofline_tui.core.artifact import Artifact
from roofline_tui.core.chart import build_chart
from tests.paths import CHART_FIXTURES

# A frozen copy of `roofline analyze roofline_tui/demo/profile/round_0 --json`, so the snapshot
# tracks the chart, not every later engine change.
DEMO_ARTIFACT = CHART_FIXTURES / "demo_round0_artifact.json"
SIZE = (120, 40)


def demo_artifact() -> Artifact:
    return Artifact.model_validate_json(DEMO_ARTIFACT.read_text(encoding="utf-8"))


class ChartApp(App[None]):
    def __init__(self, artifact: Artifact | None, selected: str | None = None) -> None:
        super().__init__()
        self.artifact = artifact
        self.selected = selected
        self.messages: list[str] = []

    def compose(self) -> ComposeResult:
        yield RooflineChart(self.artifact, selected=self.selected, id="chart")

    def on_roofline_chart_kernel_selected(self, msg: RooflineChart.KernelSelected) -> None:
        self.messages.append(msg.short_name)


def test_snapshot_demo_chart(snap_compare: Callable[..., bool]) -> None:
    app = ChartApp(demo_artifact(), selected="kernel_paged_attention_2d")
    assert snap_compare(app, terminal_size=SIZE)


def _plot_text(chart: RooflineChart) -> str:
    return chart.query_one("#roofline-plot").render().plain  # type: ignore[union-attr]


async def test_draws_ticks_roof_labels_and_one_rank_label_per_point() -> None:
    app = ChartApp(demo_artifact())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        chart = app.query_one(RooflineChart)
        text = _plot_text(chart)
        for tick in ("0.1", "1k", "1T", "1P"):
            assert tick in text
        assert "fp8 5.03 PFLOP/s" in text and "bf16 2.52 PFLOP/s" in text
        assert "HBM 8 TB/s" in text
        assert "✕" in text  # the suspect marker
        assert chart.selected == "fused_moe_kernel"  # default: the rank-1 plotted head
        assert "1 fused_moe_kernel" in text  # the selected point carries its name
        model = chart.model
        assert model is not None
        for p in model.points:
            assert p.label in text
        legend = str(legend_text(model, chart.selected))
        # the legend names rows as every table does (core.labels): cut in the middle
        assert "not plotted" in legend and "fused_recurrent_gated_de…_fwd_kernel" in legend


async def test_select_highlights_and_keys_step_through_kernels() -> None:
    app = ChartApp(demo_artifact())
    async with app.run_test(size=SIZE) as pilot:
        chart = app.query_one(RooflineChart)
        chart.select("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT64x64x256_MI1")
        await pilot.pause()
        assert "5 Cijk_Alik" in _plot_text(chart)
        assert app.messages == []  # select() from the app posts nothing back
        chart.focus()
        await pilot.press("down")  # wraps round to rank 1 ([ ] step rounds in the app)
        await pilot.pause()
        assert chart.selected == "fused_moe_kernel"
        await pilot.press("up")
        await pilot.pause()
        assert chart.selected.startswith("Cijk_Alik")
        assert app.messages == ["fused_moe_kernel", chart.selected]


async def test_update_artifact_redraws_and_keeps_the_selection() -> None:
    first = demo_artifact()
    app = ChartApp(first)
    async with app.run_test(size=SIZE) as pilot:
        chart = app.query_one(RooflineChart)
        chart.select("kernel_paged_attention_2d")
        await pilot.pause()
        before = _plot_text(chart)
        # a recompute: the paged-attention kernel got 4x faster
        second = first.model_copy(deep=True)
        e = second.entry("kernel_paged_attention_2d")
        assert e is not None and e.achieved_flops is not None
        e.achieved_flops *= 4
        chart.update_artifact(second)
        await pilot.pause()
        after = _plot_text(chart)
        assert after != before
        legend = str(chart.query_one("#roofline-legend", Static).content)
        assert "45.7 TFLOP/s" in legend and "11.4 TFLOP/s" not in legend
        assert chart.selected == "kernel_paged_attention_2d"
        p = chart.model.point("kernel_paged_attention_2d")  # type: ignore[union-attr]
        assert p is not None and p.y == e.achieved_flops
        # a kernel that disappears gives up the selection to the new rank 1
        third = first.model_copy(deep=True)
        third.entries = [x for x in third.entries if x.short_name != "kernel_paged_attention_2d"]
        third.ranking_by_pct.remove("kernel_paged_attention_2d")
        chart.update_artifact(third)
        await pilot.pause()
        assert chart.selected == "fused_moe_kernel"
        chart.update_artifact(None)
        await pilot.pause()
        assert chart.model is None and chart.selected is None
        assert "no artifact" in _plot_text(chart)


def test_chart_model_matches_what_the_widget_draws() -> None:
    a = demo_artifact()
    chart = RooflineChart(a)
    assert chart.model == build_chart(a)
