"""The Flags tab explains a contradiction (spec §8.4) instead of printing ``True`` (issue 11)."""

from __future__ import annotations

from rich.console import Console

from roofline_tui.app.view import flags
from roofline_tui.core.artifact import Artifact, Entry


def _text(renderable: object) -> str:
    console = Console(width=200, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_contradiction_flag_shows_the_detail() -> None:
    detail = "measured 1.200× beats the predicted attainable 1.022× by more than the 3.4% band"
    e = Entry(name="fused_moe_kernel", short_name="fused_moe_kernel", modeled=True,
              headroom_class="saturated", confidence="high", contradiction=True,
              contradiction_detail=detail)
    shown = _text(flags(e, Artifact(entries=[e])))
    assert "contradiction" in shown and detail in shown
    assert "True" not in shown
