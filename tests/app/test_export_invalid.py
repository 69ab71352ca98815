"""``e`` while the Top-N on disk does not parse (issue 25 item 13): the export is what
``roofline analyze`` writes for that round (with its skill_errors entry), not the last good
result still on screen."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from textual.widgets import Static

from .helpers import make_app, messages, record_toasts, settle, wait_until


async def test_e_on_an_invalid_topn_writes_what_analyze_writes(profile: Path) -> None:
    r = profile / "round_2"
    app = make_app(profile)
    toasts = record_toasts(app)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        shown_rows = app.pct_table.row_count
        (r / "profile_topN.json").write_text('{"top_kernels": [{"name": "k", "pct_gpu_time": ')
        app.apply(app.session.changed([r / "profile_topN.json"]))
        await settle(pilot)
        status = str(app.query_one("#status", Static).content)
        assert "showing the last good result" in status
        assert app.pct_table.row_count == shown_rows  # the last good result stays on screen
        await pilot.press("e")
        await wait_until(pilot, lambda: any(m.startswith("wrote ") for m in messages(toasts)))
    exported = (r / "profile_roofline.json").read_bytes()
    art = json.loads(exported)
    assert art["skill_errors"] and any("profile_topN.json" in e for e in art["skill_errors"])
    assert art["entries"] == []
    assert any("does not parse" in m and "skill_errors" in m for m in messages(toasts))
    (r / "profile_roofline.json").unlink()
    done = subprocess.run([sys.executable, "-m", "roofline_tui", "analyze", str(r)],
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (r / "profile_roofline.json").read_bytes() == exported
