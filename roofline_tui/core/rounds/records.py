"""What one round holds once loaded, and what comparing rounds finds (spec §8.3-§8.4): data
only, no file is read here.

* :class:`RoundSnapshot` — one round ready to compare: its hardware, workload, serving metrics
  and kernels (:class:`KernelObs`), with the artifact they came from;
* :class:`RoundHistory` — the rounds of a profile directory compared, one :class:`RoundStep`
  per consecutive pair, with each kernel's :class:`Movement`;
* :func:`hardware_of` — the one answer to "which GPU did this round run on".

``snapshot`` loads a snapshot, ``compare`` builds the history, ``analysis`` keeps the history
of the round it analysed: all three import these records, none imports another for them.
"""


from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from roofline_tui.core.artifact import (
    Artifact,
    HeadroomClass,
    PredictedVsActual,
    Regime,
)
from roofline_tui.core.empty import empty_dict, empty_list
from roofline_tui.core.inputs import EnvReport


class Hardware(NamedTuple):
    """The GPU a round ran on: architecture and product (either may be unknown)."""

    gfx: str | None
    product: str | None


def hardware_of(env: EnvReport | None, artifact: Artifact | None) -> Hardware:
    """Which GPU a round ran on: what its ``env_report.json`` says, else what its artifact
    records (the peaks' architecture and product)."""
    gfx = env.gfx if env is not None else None
    product = env.product if env is not None else None
    if artifact is not None:
        gfx = gfx or artifact.gfx
        product = product or artifact.peaks.product
    return Hardware(gfx, product)


class ServingMetrics(BaseModel):
    """``serving_metrics.json``, format ``serving-metrics-v1`` (see the module docstring)."""

    output_throughput_tok_s: float | None = None
    tpot_ms: float | None = None
    ttft_ms: float | None = None


class KernelObs(BaseModel):
    """One kernel in one round, in the regime the analysis uses."""

    name: str
    short_name: str
    regime: Regime
    t_ms: float | None = None
    t_ms_source: str = ""
    pct_gpu_time: float | None = None
    is_head: bool = False
    op_class: str | None = None
    prior: str | None = None  # the target_eff prior key when not the op class (attn_prefill)
    roofline_pct: float | None = None
    suspect: bool = False
    target_eff: float | None = None
    attainable_speedup: float | None = None
    expected_e2e_gain_pct: float | None = None
    headroom_class: HeadroomClass | None = None

    @property
    def key(self) -> tuple[str, Regime]:
        return (self.name, self.regime)


class RoundSnapshot(BaseModel):
    """What one round holds, loaded and ready to compare."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    label: str | int
    dir: str
    numeric: bool
    mtime_iso: str | None = None
    gfx: str | None = None
    product: str | None = None
    workload: dict[str, int] = Field(default_factory=empty_dict)
    stage: str | None = None
    total_gpu_time_ms: float | None = None
    serving: ServingMetrics | None = None
    heads: list[str] = Field(default_factory=empty_list)  # kernel names in the artifact, by pct
    kernels: list[KernelObs] = Field(default_factory=empty_list)
    artifact_source: str = "none"  # file | analyzed | given | none
    topn_found: bool = False
    problems: list[str] = Field(default_factory=empty_list)
    artifact: Artifact | None = Field(default=None, exclude=True)
    # kernel() index, rebuilt when ``kernels`` is replaced
    _by_key: dict[tuple[str, str | None], KernelObs] | None = PrivateAttr(default=None)
    _index_of: list[KernelObs] | None = PrivateAttr(default=None)
    _index_len: int = PrivateAttr(default=0)

    def kernel(self, name: str, regime: str | None = None) -> KernelObs | None:
        """The kernel ``name`` (in ``regime``, else its first row); by index, so that looking up
        every kernel of a 10,000-row round stays linear. The index follows ``kernels`` being
        replaced or grown."""
        if (self._by_key is None or self._index_of is not self.kernels
                or self._index_len != len(self.kernels)):
            by_key: dict[tuple[str, str | None], KernelObs] = {}
            for k in self.kernels:
                by_key.setdefault((k.name, k.regime), k)
                by_key.setdefault((k.name, None), k)
            self._by_key, self._index_of, self._index_len = by_key, self.kernels, len(self.kernels)
        return self._by_key.get((name, regime))

    @property
    def is_round0(self) -> bool:
        return self.label == 0


class Movement(BaseModel):
    """One kernel's per-launch time and share in this round against a reference round."""

    name: str
    short_name: str
    regime: Regime
    ref_round: str | int
    t_ms_ref: float | None = None
    t_ms: float | None = None
    delta_t_pct: float | None = None  # (t / t_ref − 1) × 100: positive = slower
    pct_gpu_time_ref: float | None = None
    pct_gpu_time: float | None = None


class RoundStep(BaseModel):
    """One round against the round before it."""

    before: str | int
    after: str | int
    comparable: bool
    not_compared_reason: str | None = None
    e2e_delta_pct: float | None = None
    e2e_basis: str | None = None
    e2e_noise: bool | None = None
    e2e_before: float | None = None
    e2e_after: float | None = None
    expected_e2e_gain_pct_sum: float | None = None  # over kernels that moved beyond the band
    appeared: list[str] = Field(default_factory=empty_list)
    vanished: list[str] = Field(default_factory=empty_list)
    regime_changed: list[str] = Field(default_factory=empty_list)  # "name: decode → prefill"
    heads_entered: list[str] = Field(default_factory=empty_list)
    heads_left: list[str] = Field(default_factory=empty_list)
    movements: list[Movement] = Field(default_factory=empty_list)
    pairs: list[PredictedVsActual] = Field(default_factory=empty_list)


class RoundHistory(BaseModel):
    profile_dir: str
    rounds: list[RoundSnapshot] = Field(default_factory=empty_list)
    baseline: str | int | None = None
    baseline_is_round0: bool = False
    steps: list[RoundStep] = Field(default_factory=empty_list)  # steps[i]: rounds[i] → rounds[i+1]
    baseline_comparable: dict[str, str | None] = Field(default_factory=empty_dict)  # label → reason
    problems: list[str] = Field(default_factory=empty_list)
    left_out: list[str | int] = Field(default_factory=empty_list)  # rounds a bounded history skipped

    def round(self, label: str | int) -> RoundSnapshot | None:
        for r in self.rounds:
            if r.label == label or str(r.label) == str(label):
                return r
        return None

    def index(self, label: str | int) -> int | None:
        for i, r in enumerate(self.rounds):
            if r.label == label or str(r.label) == str(label):
                return i
        return None

    def pairs(self) -> list[PredictedVsActual]:
        return [p for s in self.steps for p in s.pairs]
