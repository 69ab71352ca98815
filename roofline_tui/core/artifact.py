"""The output artifact ``profile_roofline.json`` (spec §2 field names, plus upstream extras).

Both models allow extra fields, so real upstream artifacts load and round-trip with every field
they carry. Numbers are SI: bytes, FLOPs, seconds-derived rates (B/s, FLOP/s); ``t_ms`` keeps the
spec's millisecond unit because that is its name.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

BOUND_TYPES = ("memory", "compute", "latency", "unknown")
HEADROOM_CLASSES = ("underperforming", "moderate", "saturated", "unknown")
ROUTES = (
    "kernel_tuning",
    "kernel_occupancy",
    "byte_reduction",
    "byte_reduction_or_fusion",
    "host_side",
    "low_priority",
    "pct_order",
)
DOCTRINE = (
    "roofline_pct measures how well a kernel executes its current algorithm's byte/FLOP budget, "
    "not whether that budget is necessary: a saturated head is done with tuning, not with "
    "optimization. Advisory only; pct_gpu_time stays the primary key and the measurement decides."
)


class Alternative(BaseModel):
    """A byte/FLOP candidate the feasibility rule considered (spec §4)."""

    model_config = ConfigDict(extra="allow")

    label: str
    bytes_est: float
    flops_est: float
    roofline_pct_raw: float | None = None
    feasible: bool
    chosen: bool = False
    note: str = ""


class Entry(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    short_name: str
    pct_gpu_time: float | None = None
    regime: str | None = None
    op_class: str = "unknown"
    modeled: bool = False
    t_ms: float | None = None
    launches_per_step: float | None = None
    bytes_est: float | None = None
    flops_est: float | None = None
    achieved_bw_bytes_s: float | None = None
    achieved_flops: float | None = None
    hbm_util: float | None = None
    compute_util: float | None = None
    arithmetic_intensity: float | None = None
    ridge_point: float | None = None
    bound_type: str = "unknown"
    roofline_pct: float | None = None
    target_eff: float | None = None
    attainable_speedup: float | None = None
    expected_e2e_gain_pct: float | None = None
    headroom_class: str = "unknown"
    confidence: str = "low"
    suspect: bool = False
    byte_reduction_levers: list[str] = Field(default_factory=list)
    notes: str = ""

    @property
    def has_verdict(self) -> bool:
        return self.headroom_class in ("underperforming", "moderate", "saturated")


class PeaksInfo(BaseModel):
    model_config = ConfigDict(extra="allow")

    hbm_bw_bytes_s: float | None = None
    flops: dict[str, float] = Field(default_factory=dict)
    source: str = "none"
    confidence: str = "low"


class Degraded(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    reason: str


class Artifact(BaseModel):
    model_config = ConfigDict(extra="allow")

    skill: str = "roofline"
    skill_version: str = "1"
    gfx: str | None = None
    peaks: PeaksInfo = Field(default_factory=PeaksInfo)
    stage: str = "A"
    entries: list[Entry] = Field(default_factory=list)
    ranking_by_pct: list[str] = Field(default_factory=list)
    ranking_by_expected_gain: list[str] = Field(default_factory=list)
    degraded: list[Degraded] = Field(default_factory=list)
    skill_errors: list[Any] = Field(default_factory=list)

    def entry(self, short_name: str) -> Entry | None:
        """The entry with this short name (rankings refer to entries by short name)."""
        return next((e for e in self.entries if e.short_name == short_name), None)

    def entries_by_short_name(self) -> dict[str, Entry]:
        return {e.short_name: e for e in self.entries}


Stage = Literal["A", "B", "C"]


def _round_floats(value: Any) -> Any:
    """Stable rounding (7 significant digits) so output is byte-identical and diffable; a NaN
    or infinity (not JSON) becomes ``null``."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        if value == 0.0:
            return value
        return float(f"{value:.7g}")
    if isinstance(value, dict):
        return {k: _round_floats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_round_floats(v) for v in value]
    return value


def _non_finite(value: Any, where: str, bad: list[str]) -> None:
    """Append the place of every NaN/infinity in ``value`` to ``bad``."""
    if isinstance(value, float):
        if not math.isfinite(value):
            bad.append(where or "value")
    elif isinstance(value, dict):
        for k, v in value.items():
            _non_finite(v, f"{where}.{k}" if where else str(k), bad)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _non_finite(v, f"{where}[{i}]", bad)


NON_FINITE_PROBLEM = "non-finite values written as null (JSON has no NaN/Infinity): "


def artifact_to_json(artifact: Artifact) -> str:
    """Deterministic, strict JSON text: sorted keys, rounded floats, trailing newline.

    Non-finite numbers (an overflow from hostile input that got past the coercer) are written
    as ``null`` and recorded once in the artifact's ``skill_errors``, so ``--strict`` sees
    them. Strings are written as valid UTF-8 with terminal-active characters escaped.
    """
    from roofline_tui.core.store import strict_json_dumps

    bad: list[str] = []
    # the python-mode dump shows every non-finite float (the json-mode one silently turns
    # those in untyped extras into None), the json-mode one is what is written
    _non_finite(artifact.model_dump(mode="python", exclude_none=False), "", bad)
    data = _round_floats(artifact.model_dump(mode="json", exclude_none=False))
    if bad:
        names = [e.short_name for e in artifact.entries]
        shown = [_entry_path(p, names) for p in bad[:6]]
        more = f" and {len(bad) - 6} more" if len(bad) > 6 else ""
        problem = NON_FINITE_PROBLEM + ", ".join(shown) + more
        if problem not in artifact.skill_errors:
            artifact.skill_errors.append(problem)
        data["skill_errors"] = _round_floats(
            artifact.model_dump(mode="json", include={"skill_errors"})["skill_errors"])
    return strict_json_dumps(data, indent=2, sort_keys=True) + "\n"


def _entry_path(path: str, names: list[str]) -> str:
    """``entries[2].hbm_util`` -> ``entries[fused_moe].hbm_util`` (the entry's short name)."""
    from roofline_tui.core.textsafe import printable

    if path.startswith("entries["):
        idx, _, rest = path[len("entries["):].partition("]")
        if idx.isdigit() and int(idx) < len(names):
            return f"entries[{printable(names[int(idx)], limit=40)}]{rest}"
    return printable(path, limit=80)


def artifact_json_schema() -> dict[str, Any]:
    return Artifact.model_json_schema()
