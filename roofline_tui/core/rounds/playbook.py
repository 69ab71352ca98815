"""Self-correction across runs (spec §8.5): the playbook, calibration and calibrated priors.

``knowledge/backend_playbook.md`` grows by one markdown table row per predicted-vs-actual pair.
It is only ever appended to: under an advisory lock on ``.backend_playbook.md.lock`` beside it,
the existing text is read, the new block added after it, and the whole written back through an
atomic replace — a hand-edited file keeps every byte (and its mode), concurrent runs lose no
row, and a playbook that is a symlink is appended to at its target. Each row
carries the pair's stable id (``pv-…``); a pair whose id is already anywhere in the file is not
added again, so re-running adds nothing.

Calibration (:class:`PriorCalibration`), per prior key (the op class, or a class's own prior
such as ``attn_prefill`` for compute-bound prefill attention): the achieved fraction of roof
*after* an optimisation (the later round's ``roofline_pct``, or the earlier one × the measured
speedup) against the ``target_eff`` prior the prediction used, with the number of
observations. Only real improvements count (a measured speedup beyond the isolated noise
band). The suggested ``target_eff``:

* an achieved fraction above the prior proves the prior too low → the highest achieved fraction
  (the measurement wins, spec §8.4);
* at least :data:`MIN_OBS_TO_LOWER` observations all below the prior → the highest achieved
  fraction (a systematic shortfall);
* otherwise the prior stays (too little evidence to lower a ceiling).

Calibrated priors file (``roofline-priors-v1``, JSON or YAML), read by ``analyze --priors``::

    {"schema": "roofline-priors-v1",
     "source": "what the values were learnt from",
     "target_eff": {"moe": 0.922, "attn": 0.5},
     "calibration": [ ... one object per op class, informational ... ]}

A bare mapping ``{"moe": 0.92}`` is accepted too.
"""

import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from roofline_tui.core.artifact import PredictedVsActual
from roofline_tui.core.empty import empty_list
from roofline_tui.core.metrics import E2E_NOISE_PCT, ISOLATED_NOISE
from roofline_tui.core.opmodels import MODELS, PRIOR_KEYS, prior_for
from roofline_tui.core.rounds.records import RoundHistory
from roofline_tui.core.store import atomic_write_text, write_lock
from roofline_tui.core.textsafe import md_cell, printable

PRIORS_SCHEMA = "roofline-priors-v1"
MIN_OBS_TO_LOWER = 3
DEFAULT_PLAYBOOK = Path("knowledge") / "backend_playbook.md"
TABLE_HEADER = (
    "| id | op class | kernel | regime | rounds | predicted speedup | predicted e2e gain | "
    "measured speedup | measured e2e | verdict |"
)


class PriorCalibration(BaseModel):
    op_class: str
    prior_target_eff: float
    observations: int
    achieved: list[float] = Field(default_factory=empty_list)
    max_achieved: float
    mean_achieved: float
    suggested_target_eff: float
    rule: str
    kernels: list[str] = Field(default_factory=empty_list)


class PriorsError(Exception):
    """A priors file could not be used; ``str(exc)`` is one line for the user."""


class AppendResult(BaseModel):
    path: str
    added: list[str] = Field(default_factory=empty_list)  # pair ids appended
    already: list[str] = Field(default_factory=empty_list)  # pair ids already in the file
    skipped_noise: int = 0
    text_added: str = ""


# --------------------------------------------------------------------------- calibration


def prior_key(p: PredictedVsActual) -> str | None:
    """The calibration key of a pair: its prior's own key (``attn_prefill``) or its op class."""
    return p.prior or p.op_class


def _prior_for(p: PredictedVsActual) -> float | None:
    if p.target_eff_before is not None:
        return p.target_eff_before
    key = prior_key(p)
    if key in PRIOR_KEYS:
        return PRIOR_KEYS[key].value
    if p.op_class not in MODELS:
        return None
    return prior_for(p.op_class).value


def calibration_observations(pairs: list[PredictedVsActual]) -> list[PredictedVsActual]:
    """Pairs that tell us what a class reaches after optimisation."""
    return [p for p in pairs
            if not p.isolated_noise and p.measured_speedup > 1.0 and p.op_class
            and p.roofline_pct_after is not None and 0.0 < p.roofline_pct_after <= 1.0
            and _prior_for(p) is not None]


def calibrate(pairs: list[PredictedVsActual], min_obs_to_lower: int = MIN_OBS_TO_LOWER
              ) -> list[PriorCalibration]:
    by_class: dict[str, list[PredictedVsActual]] = {}
    for p in calibration_observations(pairs):
        by_class.setdefault(prior_key(p) or "unknown", []).append(p)
    out = []
    for op_class in sorted(by_class):
        obs = by_class[op_class]
        prior = _prior_for(obs[-1]) or 0.0  # the latest prediction's prior
        achieved = [round(p.roofline_pct_after or 0.0, 4) for p in obs]
        best = max(achieved)
        if best > prior:
            suggested, rule = best, (f"achieved {best:.3f} > prior {prior:.3f}: the measurement "
                                     "proves the prior too low")
        elif len(obs) >= min_obs_to_lower:
            suggested, rule = best, (f"{len(obs)} optimisations never got past {best:.3f} < prior "
                                     f"{prior:.3f}: systematic shortfall")
        else:
            suggested, rule = prior, (f"{len(obs)} observation(s) below the prior: too few to "
                                      f"lower it (needs {min_obs_to_lower})")
        out.append(PriorCalibration(
            op_class=op_class, prior_target_eff=prior, observations=len(obs), achieved=achieved,
            max_achieved=best, mean_achieved=round(sum(achieved) / len(achieved), 4),
            suggested_target_eff=round(min(1.0, suggested), 4), rule=rule,
            kernels=sorted({p.short_name for p in obs})))
    return out


def priors_document(cal: list[PriorCalibration], source: str) -> dict[str, Any]:
    return {
        "schema": PRIORS_SCHEMA,
        "source": source,
        "target_eff": {c.op_class: c.suggested_target_eff for c in cal},
        "calibration": [c.model_dump(mode="json") for c in cal],
    }


def write_priors(path: Path, cal: list[PriorCalibration], source: str) -> Path:
    """Write the calibrated priors to ``path`` atomically, under the file's write lock (two
    runs writing the same priors file never interleave)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(priors_document(cal, source), indent=2, sort_keys=True) + "\n"
    with write_lock(path):
        return atomic_write_text(path, text)


def load_priors(path: Path) -> tuple[dict[str, float], str]:
    """``(target_eff overrides by op class, a statement of their source)``.

    The file is read bounded (a regular file of at most 16 MiB) and parsed as JSON, or else as
    YAML without anchors or aliases, at most 64 levels deep; each value goes through the one
    number coercer. Every refusal is a :class:`PriorsError` with a one-line reason.
    """
    from roofline_tui.core.coerce import coerce_number
    from roofline_tui.core.store import (
        MAX_SMALL_BYTES,
        ReadProblem,
        parse_json_text,
        parse_yaml_text,
        read_text,
    )

    path = Path(path)
    name = printable(os.fsdecode(path.name), limit=80)
    try:
        text = read_text(path, max_bytes=MAX_SMALL_BYTES)
    except ReadProblem as exc:
        raise PriorsError(f"{name}: cannot read ({exc.reason})") from None
    data: Any = None
    parsed = False
    if text.lstrip().startswith(("{", "[")):
        try:
            data, parsed = parse_json_text(text, path), True
        except ReadProblem as exc:
            if "nested" in exc.reason:
                raise PriorsError(f"{name}: {exc.reason}") from None
    if not parsed:  # YAML (JSON is YAML too: flow mappings without quotes land here)
        try:
            data = parse_yaml_text(text, name)
        except ValueError as exc:
            raise PriorsError(printable(exc, limit=200)) from None
    if not isinstance(data, dict):
        raise PriorsError(f"{name}: expected a mapping")
    if "target_eff" in data or "schema" in data:
        schema = data.get("schema")
        if schema is not None and schema != PRIORS_SCHEMA:
            raise PriorsError(f"{name}: schema {printable(schema, limit=40)} is not "
                              f"{PRIORS_SCHEMA}")
        values = data.get("target_eff")
        learnt = data.get("source")
    else:
        values, learnt = data, None
    if not isinstance(values, dict) or not values:
        raise PriorsError(f"{name}: no target_eff values")
    out: dict[str, float] = {}
    for op_class, v in values.items():
        if op_class not in PRIOR_KEYS:
            known = ", ".join(sorted(PRIOR_KEYS))
            raise PriorsError(f"{name}: unknown op class {printable(op_class, limit=40)} "
                              f"(known: {known})")
        c = coerce_number(v, positive=True, text=False)
        if c.value is None or c.value > 1.0:
            why = c.problem or f"{c.value:g} is above 1"
            raise PriorsError(f"{name}: target_eff for {op_class} must be a number in (0, 1] "
                              f"({printable(why, limit=60)})")
        out[str(op_class)] = c.value
    where = (f"{name} ({PRIORS_SCHEMA} for {', '.join(sorted(out))}; spec §7 priors for "
             "other classes")
    if learnt:
        where += f"; learnt from {printable(learnt, limit=80)}"
    return out, where + ")"


# --------------------------------------------------------------------------- playbook


def _x(v: float | None) -> str:
    return "–" if v is None else f"{v:.3f}×"


def _pct(v: float | None, digits: int = 2) -> str:
    return "–" if v is None else f"{v:+.{digits}f}%"


def playbook_row(p: PredictedVsActual) -> str:
    e2e = "–"
    if p.e2e_delta_pct is not None:
        basis = (p.e2e_basis or "").split(" (")[0]
        label = "noise" if p.e2e_noise else p.e2e_verdict
        shared = f", shared by {p.kernels_moved_in_pair} kernels" if p.kernels_moved_in_pair > 1 \
            else ""
        e2e = f"{_pct(p.e2e_delta_pct, 3)} ({label}, {basis}{shared})"
    verdict = f"**{p.verdict}**" if p.contradiction else p.verdict
    return "| " + " | ".join([
        p.pair_id, md_cell(p.op_class or "unknown"), f"`{md_cell(p.short_name, limit=60)}`",
        md_cell(p.regime), f"{md_cell(p.round_before)} → {md_cell(p.round_after)}",
        _x(p.predicted_speedup), _pct(p.predicted_e2e_gain_pct), _x(p.measured_speedup), e2e,
        verdict,
    ]) + " |"


def calibration_lines(cal: list[PriorCalibration]) -> list[str]:
    if not cal:
        return ["No calibration observations yet (no op class improved beyond the isolated "
                "noise band with a known fraction of roof)."]
    lines = ["| op class | prior target_eff | achieved after optimisation (max / mean) | "
             "observations | suggested target_eff | why |", "|---|---|---|---|---|---|"]
    for c in cal:
        lines.append(f"| {md_cell(c.op_class)} | {c.prior_target_eff:.3f} | "
                     f"{c.max_achieved:.3f} / {c.mean_achieved:.3f} | {c.observations} | "
                     f"{c.suggested_target_eff:.3f} | {md_cell(c.rule)} |")
    return lines


def _run_description(h: RoundHistory) -> str:
    r = h.rounds[0] if h.rounds else None
    if r is None:
        return ""
    hw = " ".join(x for x in (r.gfx, r.product) if x)
    wl = " ".join(f"{k}={v}" for k, v in r.workload.items())
    return ", ".join(x for x in (hw, wl) if x)


def playbook_block(h: RoundHistory, pairs: list[PredictedVsActual],
                   cal: list[PriorCalibration]) -> str:
    desc = _run_description(h)
    lines = [
        f"## Roofline predicted vs actual — `{md_cell(h.profile_dir, limit=120)}`"
        + (f" ({md_cell(desc)})" if desc else ""),
        "",
        f"Noise bands (spec §8.3): isolated ±{ISOLATED_NOISE * 100:.1f}%, e2e ±{E2E_NOISE_PCT:g}%. "
        "Appended by `roofline playbook`; the id column keeps re-runs from adding a row twice.",
        "",
        TABLE_HEADER,
        "|" + "---|" * 10,
        *[playbook_row(p) for p in pairs],
        "",
        "### Calibration — achieved fraction of roof after optimisation vs the target_eff prior",
        "",
        *calibration_lines(cal),
    ]
    return "\n".join(lines) + "\n"


# A playbook is appended to run after run; past this it is not one we should rewrite.
MAX_PLAYBOOK_BYTES = 64 * 1024 * 1024


def append_playbook(path: Path, h: RoundHistory, *, skip_noise: bool = False,
                    dry_run: bool = False) -> AppendResult:
    """Append the new predicted-vs-actual rows of ``h`` to the playbook at ``path``.

    The read of the existing text and the write of the longer one happen under the playbook's
    write lock (:func:`~roofline_tui.core.store.write_lock`), so concurrent runs each add their
    rows and none is lost. A playbook that is a symlink is appended to where it points (the
    link stays a link); the file keeps its mode.

    Raises ``OSError`` (a :class:`~roofline_tui.core.store.ReadProblem` with a one-line
    reason) when the existing file cannot be read: not a regular file (a FIFO, ``/dev/zero``),
    larger than :data:`MAX_PLAYBOOK_BYTES`, not UTF-8; it is then left untouched. Nothing is
    written when there is nothing new.
    """
    path = Path(path)
    res = AppendResult(path=str(path))
    if dry_run:
        _append(path, h, res, skip_noise=skip_noise, write=False)
        return res
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    _append(target, h, res, skip_noise=skip_noise, write=False)
    if not res.added:  # nothing new: no directory, no lock file, no write
        return res
    target.parent.mkdir(parents=True, exist_ok=True)
    with write_lock(target):  # read again under the lock: another run may have appended since
        res = AppendResult(path=str(path))
        _append(target, h, res, skip_noise=skip_noise, write=True)
    return res


def _append(path: Path, h: RoundHistory, res: AppendResult, *, skip_noise: bool,
            write: bool) -> None:
    from roofline_tui.core.store import read_text

    existing = ""
    if path.exists() or path.is_symlink():
        # UTF-8 only: the text is written back as UTF-8, and must keep every byte
        existing = read_text(path, max_bytes=MAX_PLAYBOOK_BYTES, utf8_only=True)
    new: list[PredictedVsActual] = []
    for p in h.pairs():
        if skip_noise and p.isolated_noise:
            res.skipped_noise += 1
            continue
        if p.pair_id in existing:
            res.already.append(p.pair_id)
        elif p.pair_id not in {q.pair_id for q in new}:
            new.append(p)
    res.added = [p.pair_id for p in new]
    if not new:
        return
    block = playbook_block(h, new, calibrate(h.pairs()))
    if not existing:
        prefix = "# Backend playbook\n\n"
    elif existing.endswith("\n\n"):
        prefix = ""
    elif existing.endswith("\n"):
        prefix = "\n"
    else:
        prefix = "\n\n"
    res.text_added = prefix + block
    if write:
        atomic_write_text(path, existing + res.text_added)
