"""Calibration keeps the prefill-attention prior apart from paged decode (issue 12 item 2)."""

from __future__ import annotations

import json
from pathlib import Path

from roofline_tui.core.artifact import PredictedVsActual
from roofline_tui.core.rounds.playbook import calibrate, load_priors, priors_document


def _pair(short: str, prior: str | None, before: float, after: float) -> PredictedVsActual:
    pv = PredictedVsActual(
        pair_id=f"pv-{short}", name=short, short_name=short, regime="prefill", op_class="attn",
        round_before=0, round_after=1, t_ms_before=1.2, t_ms_after=1.0, measured_speedup=1.2,
        isolated_noise=False, target_eff_before=before, roofline_pct_after=after)
    if prior:
        pv.prior = prior
    return pv


def test_prefill_and_decode_attention_calibrate_separately(tmp_path: Path) -> None:
    """A prefill flash kernel reached 0.80 against its 0.75 prior (0.80 > 0.75: the prior is
    too low → 0.80); a paged decode kernel reached 0.30 against 0.50 (one observation below the
    prior: too few to lower it → 0.50). Mixed under one 'attn' key they would have suggested
    0.80 for paged decode."""
    cal = {c.op_class: c for c in calibrate([_pair("flash_fwd", "attn_prefill", 0.75, 0.80),
                                            _pair("paged_attn", None, 0.50, 0.30)])}
    assert cal["attn_prefill"].suggested_target_eff == 0.80
    assert cal["attn"].suggested_target_eff == 0.50
    f = tmp_path / "priors.json"
    f.write_text(json.dumps(priors_document(list(cal.values()), "test")))
    values, _ = load_priors(f)
    assert values == {"attn": 0.50, "attn_prefill": 0.80}


def test_pair_without_a_prior_key_omits_it() -> None:
    assert "prior" not in _pair("x", None, 0.5, 0.3).model_dump()
