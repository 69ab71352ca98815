"""Playbook (spec §8.5): idempotent append, hand edits kept, calibration, calibrated priors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from roofline_tui.cli import main
from roofline_tui.core.artifact import PredictedVsActual
from roofline_tui.core.rounds.compare import load_history
from roofline_tui.core.rounds.playbook import (
    MIN_OBS_TO_LOWER,
    PriorsError,
    append_playbook,
    calibrate,
    load_priors,
    write_priors,
)

from .conftest import ATTN, FIXTURES, MOE, read, speed_up


def rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("| pv-")]


def test_playbook_rows_and_idempotence(profile: Path, tmp_path: Path) -> None:
    out = tmp_path / "knowledge" / "backend_playbook.md"
    h = load_history(profile)
    res = append_playbook(out, h)
    assert len(res.added) == 2 and res.already == []
    text = out.read_text()
    r = rows(text)
    assert len(r) == 2
    moe_row = next(x for x in r if MOE in x)
    assert "| moe |" in moe_row and "0 → 1" in moe_row and "1.047×" in moe_row
    assert "1.022×" in moe_row and "at_ceiling" in moe_row and "noise" in moe_row
    attn_row = next(x for x in r if ATTN in x)
    assert "| attn |" in attn_row and "1 → 2" in attn_row and "1.560×" in attn_row
    assert "under_ceiling" in attn_row and "+4.087%" in attn_row
    assert "### Calibration" in text

    mtime = out.stat().st_mtime_ns
    again = append_playbook(out, load_history(profile))
    assert again.added == [] and sorted(again.already) == sorted(res.added)
    assert out.read_text() == text and out.stat().st_mtime_ns == mtime  # not even rewritten


def test_hand_edited_playbook_is_appended_to_never_rewritten(profile: Path, tmp_path: Path) -> None:
    out = tmp_path / "backend_playbook.md"
    own = ("# Our playbook\r\n\r\nLesson: fp8 KV halves attention bytes.\r\n"
           "| keep | this | table |\r\n")  # CRLF and no trailing blank line: kept byte for byte
    out.write_bytes(own.encode())
    append_playbook(out, load_history(profile))
    first = out.read_bytes()
    assert first.startswith(own.encode()) and len(rows(first.decode())) == 2

    # the user edits one of our rows and adds prose after it: still nothing is re-added
    edited = first.decode().replace("under_ceiling |", "under_ceiling (see PR 12) |")
    edited += "\nMore notes by hand.\n"
    out.write_bytes(edited.encode())
    assert append_playbook(out, load_history(profile)).added == []
    assert out.read_bytes().decode() == edited

    # a new round appends after the hand-written text, leaving it intact
    shutil.copytree(profile / "round_2", profile / "round_3")
    gemm = "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT64x64x256_MI16x16x1"
    speed_up(profile / "round_3", gemm, 1.5)
    res = append_playbook(out, load_history(profile))
    assert len(res.added) == 1
    final = out.read_bytes().decode()
    assert final.startswith(edited) and len(rows(final)) == 3
    new = final[len(edited):]
    assert new.startswith("\n## Roofline predicted vs actual")  # a fresh table, valid markdown


def test_skip_noise_and_dry_run(profile: Path, tmp_path: Path) -> None:
    speed_up(profile / "round_1", "triton_poi_fused_add_mul_sigmoid_silu_0", 1.01)
    out = tmp_path / "pb.md"
    dry = append_playbook(out, load_history(profile), dry_run=True)
    assert not out.exists() and len(dry.added) == 4  # 2 real + noise in 0→1 and back in 1→2
    res = append_playbook(out, load_history(profile), skip_noise=True)
    assert res.skipped_noise == 2 and len(res.added) == 2


def test_calibration_from_the_spec_run(profile: Path) -> None:
    cal = {c.op_class: c for c in calibrate(load_history(profile).pairs())}
    moe, attn = cal["moe"], cal["attn"]
    # MoE: 0.881 of roof × 1.047 → 0.922 after tuning, above its 0.90 prior: prior raised
    assert moe.observations == 1 and moe.prior_target_eff == 0.9
    assert moe.max_achieved == pytest.approx(0.9223, abs=1e-3)
    assert moe.suggested_target_eff == pytest.approx(0.9223, abs=1e-3)
    # attention reached 0.278 against 0.50: one attempt is too little to lower the ceiling
    assert attn.observations == 1 and attn.max_achieved == pytest.approx(0.278, abs=1e-3)
    assert attn.suggested_target_eff == 0.5


def _obs(achieved: float, prior: float = 0.5, speedup: float = 1.2) -> PredictedVsActual:
    return PredictedVsActual(
        pair_id="pv-x", name="k", short_name="k", regime="decode", op_class="attn",
        round_before=0, round_after=1, t_ms_before=speedup, t_ms_after=1.0,
        measured_speedup=speedup, isolated_noise=False, predicted_speedup=2.0,
        target_eff_before=prior, roofline_pct_after=achieved)


def test_calibration_rules() -> None:
    few = calibrate([_obs(0.30), _obs(0.35)])[0]
    assert few.observations == 2 and few.suggested_target_eff == 0.5
    many = calibrate([_obs(0.30), _obs(0.35), _obs(0.32)])[0]
    assert MIN_OBS_TO_LOWER == 3
    assert many.suggested_target_eff == pytest.approx(0.35)
    assert many.mean_achieved == pytest.approx((0.30 + 0.35 + 0.32) / 3, abs=1e-4)
    # noise and slowdowns are not observations of what the class reaches
    noisy = _obs(0.9)
    noisy.isolated_noise = True
    slower = _obs(0.9, speedup=0.8)
    assert calibrate([noisy, slower]) == []


def test_priors_roundtrip_and_errors(profile: Path, tmp_path: Path) -> None:
    cal = calibrate(load_history(profile).pairs())
    path = write_priors(tmp_path / "priors.json", cal, source="spec run")
    values, where = load_priors(path)
    assert values == {"attn": 0.5, "moe": pytest.approx(0.9223, abs=1e-4)}
    assert "priors.json" in where and "spec run" in where
    yaml_values, _ = load_priors(FIXTURES / "priors.yaml")
    assert yaml_values == {"moe": 0.93, "attn": 0.4}
    bad = tmp_path / "bad.json"
    for text, msg in (('{"moe": 1.5}', "(0, 1]"), ('{"warp": 0.5}', "unknown op class"),
                      ('{"schema": "other", "target_eff": {"moe": 0.9}}', "schema"),
                      ("[1, 2]", "mapping"), ("{}", "no target_eff")):
        bad.write_text(text)
        with pytest.raises(PriorsError, match=msg.replace("(", r"\(").replace("]", r"\]")):
            load_priors(bad)


def test_analyze_with_priors_states_them(profile: Path, tmp_path: Path) -> None:
    priors = FIXTURES / "priors.yaml"
    r0 = profile / "round_0"
    assert main(["analyze", str(r0), "--json", "--priors", str(priors)]) == 0
    art = read(r0 / "profile_roofline.json")
    assert "priors.yaml" in art["target_eff_source"]
    by = {e["op_class"]: e for e in art["entries"]}
    assert by["moe"]["target_eff"] == 0.93 and "priors.yaml" in by["moe"]["target_eff_source"]
    assert by["attn"]["target_eff"] == 0.4
    assert by["gemm"]["target_eff"] == 0.9 and "priors" not in by["gemm"]["target_eff_source"]
    assert "priors.yaml" in (r0 / "profile_roofline.md").read_text()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"moe": 0}))
    # a bad priors file degrades like a bad peak table: built-in priors, the reason recorded
    assert main(["analyze", str(r0), "--priors", str(bad)]) == 0
    assert any("bad.json" in str(e) for e in read(r0 / "profile_roofline.json")["skill_errors"])
