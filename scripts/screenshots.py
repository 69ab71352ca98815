#!/usr/bin/env python3
"""Render the dashboard's screenshots (SVG) from the bundled demo, using the app itself.

    python scripts/screenshots.py [OUT_DIR]      # default: screenshots/

Writes main.svg (200x50), main120.svg (120x40: next target, coverage, rankings side by side),
drilldown.svg (the Flags tab of the suspect copy kernel), levers.svg (130x44: the saturated MoE
head's byte-reduction levers), narrow.svg (80x24, stacked), chart.svg (the roofline chart tab,
the rankings stepped aside), history.svg (the fused MoE across the demo's three rounds) and
rounds.svg (one row per round and the predicted-vs-actual pairs), and compare.svg (``--against``
round 0 of a second copy: the B/A and B roof columns, the Compare tab of the fused MoE). The demo is copied to a temporary directory first, so
the bundled files are never touched; the clock is fixed so the output is reproducible.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from roofline_tui.app.app import RooflineApp  # noqa: E402
from roofline_tui.cli.dash import copy_demo  # noqa: E402

SHOTS = (
    # file, size, keys pressed, drill-down tab to open
    ("main.svg", (200, 50), (), None),
    ("main120.svg", (120, 40), (), None),
    ("drilldown.svg", (200, 50), ("down",), "flags"),
    ("levers.svg", (130, 44), (), "levers"),
    ("narrow.svg", (80, 24), (), None),
    ("chart.svg", (200, 50), (), "chart"),
    ("history.svg", (160, 40), (), "history"),
    ("rounds.svg", (160, 40), (), "rounds"),
    ("compare.svg", (200, 50), (), "compare"),
)
AGAINST = Path("other") / "profile" / "round_0"  # (relative: the screenshot names no tmp path)


async def render(profile: Path, size: tuple[int, int], keys: tuple[str, ...], tab: str | None) -> str:
    against = AGAINST if tab == "compare" else None
    app = RooflineApp(profile, watch=False, display_name="profile",
                      clock=lambda: datetime(2025, 1, 2, 12, 34, 56), against=against)
    async with app.run_test(size=size) as pilot:
        for _ in range(300):
            await pilot.pause(0.02)
            if not app.busy and app.session.shown in app.session.results and (
                    app.against is None or app.against.comparison_for(app.shown_result)):
                break
        # what follows the first frame (the selector, the tabs, the footer) is mounted too
        await asyncio.wait_for(app.rest_built.wait(), timeout=10)
        await pilot.press(*keys)
        if tab:
            await pilot.click(f"#--content-tab-{tab}")
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()
        return app.export_screenshot(title="roofline demo")


async def main(out_dir: Path) -> None:
    out_dir = out_dir.resolve()  # (the shots are taken from inside the temporary copy)
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="roofline-shots-"))
    try:
        profile = copy_demo(tmp)
        copy_demo(tmp / AGAINST.parts[0])
        os.chdir(tmp)  # --against is given relative to it
        for name, size, keys, tab in SHOTS:
            svg = await render(profile, size, keys, tab)
            (out_dir / name).write_text(svg, encoding="utf-8")
            print(f"wrote {out_dir / name}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "screenshots"))
