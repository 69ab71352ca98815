"""Issue 34 item 2 on screen: a part of the step large enough to work on (the SGLang Qwen3-8B
decode step is 98 % idle: its GPU work spans 474 ms with 9.8 ms busy) is a row of the gain
ranking, where the engine weighs it (its 97.9 % gain bound before every kernel's), not only a
line above the tables; selecting it shows what it is and its levers."""

from __future__ import annotations

from pathlib import Path

from roofline_tui.app.view.rankings import rank_rows
from roofline_tui.core import reading
from roofline_tui.core.artifact import Artifact, StepTarget
from tests.cli.helpers import roofline
from tests.core.test_reading import round_of, verdict
from tests.paths import REAL_FORMATS, need

from .helpers import column, make_app, row_keys, settle, static_text

WILD = REAL_FORMATS / "wild"
SGLANG = WILD / "tracelens_sglang_qwen3-8b_decode.json.gz"
CAPTURE = WILD / "tracelens_sglang_MI300X_decode_graph_capture_bs32_rank0.json.gz"
QWEN3 = REAL_FORMATS / "configs" / "Qwen3-8B" / "config.json"


def _idle(gain: float, regime: str = "decode") -> StepTarget:
    return StepTarget(kind="idle gaps", regime=regime, share_of_span=gain / 100,
                      expected_e2e_gain_pct=gain, line=f"the GPU is idle {gain:.0f}%",
                      levers=["capture the step in a graph"])


def test_a_step_row_goes_where_its_gain_bound_ranks_it() -> None:
    """Kernels with gains 6, 3 and 1 %; idle gaps bounded at 4 %: between the 6 and the 3.
    The kernels keep their ranks (1, 2, 3) and moves; the step row takes the rank after it."""
    a = round_of(verdict("k6", 6.0), verdict("k3", 3.0), verdict("k1", 1.0))
    a = Artifact.model_validate({**a.model_dump(), "step_targets": [_idle(4.0).model_dump()]})
    order = reading.gain_with_steps(a)
    assert [getattr(x, "short_name", "step") for x in order] == ["k6", "step", "k3", "k1"]
    _pct, gain = rank_rows(a)
    assert [(r.key, r.rank) for r in gain] == [("k6", 1), ("step:idle gaps:decode", 2),
                                               ("k3", 2), ("k1", 3)]
    step = gain[1]
    assert step.step is not None and step.entry.expected_e2e_gain_pct == 4.0
    assert step.entry.attainable_speedup is not None
    assert abs(step.entry.attainable_speedup - 1 / 0.96) < 1e-9  # 1 / (1 - share)


async def test_the_sglang_decode_gain_ranking_starts_with_its_idle_gaps(tmp_path: Path) -> None:
    profile = tmp_path / "profile"
    done = roofline("import", "torch", need(SGLANG), "--capture", need(CAPTURE), "--out",
                    profile / "round_0", "--model-config", need(QWEN3))
    assert done.returncode == 0, done.stderr
    app = make_app(profile)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        keys = row_keys(app.gain_table)
        assert keys[0] == "step:idle gaps:decode" and len(keys) > 1
        assert "step:idle gaps:decode" not in row_keys(app.pct_table)  # not a kernel's time
        first = column(app.gain_table, "kernel")[0]
        assert first.startswith("idle gaps (decode step)")
        assert column(app.gain_table, "rank")[0] == "·"
        assert column(app.gain_table, "gain")[0] == "97.94%"
        app.gain_table.focus()
        await pilot.press("home")
        await pilot.pause()
        assert app.rankings.selected_key == "step:idle gaps:decode"
        text = static_text(app.query_one("#summary-body"), width=160)
        assert "part of the step" in text and "98% of the step's GPU span" in text
        assert "capture the step in a CUDA/HIP graph" in text
        await pilot.press("down")  # the first kernel: its own summary again
        await pilot.pause()
        assert "part of the step" not in static_text(app.query_one("#summary-body"))
