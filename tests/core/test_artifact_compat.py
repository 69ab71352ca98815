"""Real upstream artifacts load with our model and round-trip with their extra fields (issue 8)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from roofline_tui.core.artifact import Artifact, artifact_json_schema
from roofline_tui.core.markdown import artifact_to_markdown
from tests.paths import SHARED

SAMPLES = sorted((SHARED / "upstream-samples").glob("profile_roofline.*.json"))


@pytest.mark.skipif(not SAMPLES, reason="shared upstream samples not present")
@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_upstream_artifact_round_trips(path: Path) -> None:
    raw = json.loads(path.read_text())
    art = Artifact.model_validate(raw)
    dumped = art.model_dump(mode="json", exclude_unset=True)
    assert dumped == raw, "every field, extras included, survives a load/dump"
    assert art.entries and all(e.short_name for e in art.entries)
    md = artifact_to_markdown(art)  # our writer renders foreign artifacts too
    assert art.entries[0].short_name in md


def test_suspect_and_comm_entries_of_the_minimax_sample() -> None:
    path = SHARED / "upstream-samples" / "profile_roofline.minimax-m3.round_tuning.json"
    if not path.exists():
        pytest.skip("sample missing")
    art = Artifact.model_validate(json.loads(path.read_text()))
    suspects = [e for e in art.entries if e.suspect]
    assert suspects and all(e.headroom_class == "unknown" for e in suspects)
    assert any(e.op_class == "comm" and not e.modeled for e in art.entries)


def test_schema_command_prints_the_model_schema() -> None:
    proc = subprocess.run([sys.executable, "-m", "roofline_tui", "schema"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0
    schema = json.loads(proc.stdout)
    assert schema == json.loads(json.dumps(artifact_json_schema(), sort_keys=True))
    assert "ranking_by_expected_gain" in schema["properties"]


@pytest.mark.skipif(not SAMPLES, reason="shared upstream samples not present")
def test_analyze_never_replaces_a_stored_artifact_without_a_topn(tmp_path: Path) -> None:
    rnd = tmp_path / "round_0"
    rnd.mkdir()
    (rnd / "profile_roofline.json").write_bytes(SAMPLES[0].read_bytes())
    proc = subprocess.run([sys.executable, "-m", "roofline_tui", "analyze", str(rnd)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    assert "kept the existing profile_roofline.json" in proc.stderr
    assert (rnd / "profile_roofline.json").read_bytes() == SAMPLES[0].read_bytes()
    assert not (rnd / "profile_roofline.md").exists()
