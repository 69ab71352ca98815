"""Stages B and C (spec §5): sharpen a head's estimate with captured shapes and counters.

* Stage B — the Kernel Extractor captured the real shapes of a kernel. Each captured case is run
  through the same op-class model; cases are folded weighted by calls × latency, per roof axis,
  never averaged across axes. Confidence ``medium``.
* Stage C — hardware counters measured bytes and/or FLOPs of the isolated kernel. A measured
  axis replaces the model on that axis. Confidence ``high`` only when the roof's own axis was
  measured. Time stays the profile's per-launch time (counter runs inflate durations).

A missing or partial counter set never fails anything (spec §6 L4): the entry keeps its
stage-A/B result and says why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roofline_tui.core.artifact import (
    BytesBasis,
    Confidence,
    CorroborationRow,
    CorroborationVerdict,
    MeasurementBasis,
    Stage,
)
from roofline_tui.core.dtypes import canonical_dtype
from roofline_tui.core.layout import (
    discover_counter_files,
    discover_roofline_files,
    discover_task_dirs,
)
from roofline_tui.core.metrics import UTIL_BOUND_THRESHOLD
from roofline_tui.core.opmodels import OpContext

# The stage-B/C parsers (sqlite3, the counter dialects, their models: about a twentieth of a
# run's start-up) are imported by load_refinements and for_kernel, only when a round has captured
# shapes or counter files.
if TYPE_CHECKING:
    from collections.abc import Sequence

    from roofline_tui.core.measured.joins import HeadName, JoinPlan
    from roofline_tui.core.measured.models import (
        CapturedShapes,
        CounterSet,
        KernelMeasurement,
        ShapeCase,
    )

# Measured bytes this far from the model (either way) flag the byte model as disagreeing.
DISAGREEMENT_FACTOR = 1.5


# Corroborating counters (spec §5 stage C): percentages, 0–100.
SUPPORT_PCT = 100.0 * UTIL_BOUND_THRESHOLD   # a unit this busy can be what binds the kernel
IDLE_PCT = 30.0                              # a unit this idle cannot be what binds it


@dataclass(eq=False)
class MeasuredAxes:
    bytes_unit: float | None
    flops_unit: float | None
    basis: MeasurementBasis
    notes: list[str]
    bytes_basis: BytesBasis | None = None  # set when counters measured the bytes


def _reads_only(m: KernelMeasurement) -> bool:
    return (m.bytes_per_dispatch is None and m.read_bytes_per_dispatch is not None
            and "WRITE_SIZE" in m.missing)


def corroborate(bound_type: str, counters: dict[str, float]) -> list[CorroborationRow]:
    """Compare the roofline's ``bound_type`` with the counters that can confirm it.

    * memory-bound: DRAM throughput % (ncu) or MemUnitStalled (AMD) high supports it; DRAM
      throughput low while the SM / MFMA units are busy contradicts it.
    * compute-bound: MfmaUtil (AMD) or SM throughput % (ncu) high supports it; low contradicts.
    * latency-bound: no unit busy supports it (low occupancy says why); a busy memory or
      compute unit contradicts it.
    ``OccupancyPercent`` only explains, it never decides.
    """
    def pick(*names: str) -> tuple[str, float] | None:
        for n in names:
            if n in counters:
                return n, counters[n]
        return None

    mem = pick("DramThroughputPct", "MemUnitStalled", "MemUnitBusy", "MemoryThroughputPct")
    comp = pick("MfmaUtil", "SmThroughputPct", "VALUUtilization")
    out: list[CorroborationRow] = []

    def add(c: tuple[str, float], verdict: CorroborationVerdict, why: str) -> None:
        out.append(CorroborationRow(counter=c[0], value=c[1], verdict=verdict,
                                    explanation=f"{c[0]} {c[1]:.0f}% {why}"))

    if bound_type == "memory":
        if mem is not None:
            if mem[1] >= SUPPORT_PCT:
                add(mem, "supports", "supports memory-bound")
            elif mem[1] < IDLE_PCT:
                add(mem, "contradicts", "contradicts memory-bound: the memory system is mostly idle")
            else:
                add(mem, "neutral", "neither confirms nor refutes memory-bound")
        if comp is not None and comp[1] >= SUPPORT_PCT and (mem is None or mem[1] < SUPPORT_PCT):
            add(comp, "contradicts", "contradicts memory-bound: the compute units are the busy ones")
    elif bound_type == "compute":
        if comp is not None:
            if comp[1] >= SUPPORT_PCT:
                add(comp, "supports", "supports compute-bound")
            elif comp[1] < IDLE_PCT:
                add(comp, "contradicts", "contradicts compute-bound: the matrix/SM units are "
                                         "mostly idle (often an unvalidated compute peak)")
            else:
                add(comp, "neutral", "neither confirms nor refutes compute-bound")
    elif bound_type == "latency":
        present = [c for c in (mem, comp) if c is not None]
        busy = [c for c in present if c[1] >= SUPPORT_PCT]
        for c in busy:
            add(c, "contradicts", "contradicts latency-bound: that unit is near its ceiling")
        if not busy:
            for c in present:
                add(c, "supports", "supports latency-bound: no unit near its ceiling")
    occ = pick("OccupancyPercent")
    if occ is not None and bound_type in ("latency", "memory", "compute"):
        low = occ[1] < IDLE_PCT
        add(occ, "neutral", "occupancy: low, a likely cause of latency-bound behaviour" if low
            else "occupancy")
    return out


@dataclass(eq=False)
class KernelRefinement:
    """What stage B/C know about one kernel."""

    captured: CapturedShapes | None = None
    measurement: KernelMeasurement | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def usable_measurement(self) -> bool:
        m = self.measurement
        return m is not None and (
            m.bytes_per_dispatch is not None or m.flops_per_dispatch is not None
            or m.roofline_pct is not None or _reads_only(m)
        )

    @property
    def stage(self) -> Stage:
        if self.usable_measurement:
            return "C"
        if self.captured is not None and self.captured.cases:
            return "B"
        return "A"

    def regime_cases(self, regime: str) -> list[ShapeCase]:
        if self.captured is None:
            return []
        cases = [c for c in self.captured.cases if c.input_shapes or c.m]
        same = [c for c in cases if c.regime == regime]
        return same or [c for c in cases if c.regime is None]

    def context(self, ctx: OpContext) -> OpContext:
        """Stage-B dtypes and MoE geometry from the task's regime/meta files."""
        cap = self.captured
        if cap is None:
            return ctx
        updates: dict[str, Any] = {}
        for key in ("weight_dtype", "activation_dtype", "kv_dtype"):
            value = canonical_dtype(getattr(cap, key, None))
            if value:
                updates[key] = value
        moe = cap.moe
        if moe is not None and ctx.model is not None:
            patch: dict[str, int] = {}
            if moe.num_experts:
                patch["num_experts"] = moe.num_experts
            if moe.top_k:
                patch["top_k"] = moe.top_k
            if moe.hidden_size:
                patch["hidden_size"] = moe.hidden_size
            if moe.intermediate_size_per_tp:
                patch["moe_intermediate_size"] = moe.intermediate_size_per_tp
            if patch:
                updates["model"] = ctx.model.model_copy(update=patch)
                # the captured geometry is already per rank
                updates["workload"] = ctx.workload.model_copy(update={"tp": 1})
            if moe.weight_dtype:
                updates["weight_dtype"] = canonical_dtype(moe.weight_dtype) or ctx.weight_dtype
        return ctx._replace(**updates) if updates else ctx

    def measured(self, n_launch: int, model_bytes: float) -> MeasuredAxes:
        """Measured bytes/FLOPs for one modelled unit (per-dispatch means × launches)."""
        m = self.measurement
        notes: list[str] = []
        if m is None:
            return MeasuredAxes(None, None, "model", notes)
        b = m.bytes_per_dispatch * n_launch if m.bytes_per_dispatch is not None else None
        f = m.flops_per_dispatch * n_launch if m.flops_per_dispatch is not None else None
        src = f"{m.source} ({Path(m.path).name}, {m.dispatches} dispatches)"
        bytes_basis: BytesBasis | None = "reads+writes" if b is not None else None
        if b is None and _reads_only(m) and m.read_bytes_per_dispatch is not None:
            b = m.read_bytes_per_dispatch * n_launch
            bytes_basis = "reads only"
            notes.append(
                f"Counters in {src} have FETCH_SIZE but no WRITE_SIZE: bytes are reads only "
                f"({b / 1e6:.1f} MB per unit), a lower bound on the traffic; confidence lowered."
            )
        if b is None and f is None:
            if m.missing:
                notes.append(
                    f"Counters in {src} lack {', '.join(m.missing)} (L4): the analytic result "
                    "stands"
                )
            return MeasuredAxes(None, None, "model", notes)
        basis: MeasurementBasis = "counters" if (b is not None and f is not None) else "mixed"
        what = " and ".join(x for x, v in (("bytes", b), ("FLOPs", f)) if v is not None)
        notes.append(
            f"Stage C: measured {what} from {src} replace the model on "
            f"{'both axes' if basis == 'counters' else 'that axis'}; time stays the profile's "
            "per-launch time (counter runs inflate durations)."
        )
        if b is not None:
            notes.append("Counters see traffic below L2 (fabric/DRAM side), not the HBM pins.")
            if model_bytes > 0 and not (
                1 / DISAGREEMENT_FACTOR <= b / model_bytes <= DISAGREEMENT_FACTOR
            ):
                notes.append(
                    f"Model disagreement: measured {b / 1e6:.1f} MB vs modelled "
                    f"{model_bytes / 1e6:.1f} MB per unit."
                )
        if m.missing:
            notes.append(f"Missing counters: {', '.join(m.missing)}.")
        return MeasuredAxes(b, f, basis, notes, bytes_basis)

    def confidence(self, roof_axis: str | None) -> Confidence:
        m = self.measurement
        if m is not None and self.usable_measurement:
            if m.roofline_pct is not None and m.bytes_per_dispatch is None:
                return "high"  # rocprof-compute measured the roofline itself
            axis_measured = (
                m.bytes_per_dispatch is not None if roof_axis != "compute"
                else m.flops_per_dispatch is not None
            )
            if axis_measured:
                return "high"
            return "medium"  # the other axis only, or reads without writes
        if self.stage == "B":
            return "medium"
        return "low"


@dataclass(eq=False)
class Refinements:
    tasks: list[CapturedShapes] = field(default_factory=list)
    counters: CounterSet | None = None
    # which head gets which measured kernel, settled over all heads (core.measured.joins);
    # without one, each name is matched on its own
    counter_plan: JoinPlan | None = None

    def plan_counters(self, heads: Sequence[HeadName], round_arch: str | None
                      ) -> JoinPlan | None:
        """Settle the counter joins of these heads (and keep the plan for ``for_kernel``)."""
        if self.counters is None:
            self.counter_plan = None
            return None
        from roofline_tui.core.measured.joins import plan_joins

        self.counter_plan = plan_joins(self.counters, heads, round_arch)
        return self.counter_plan

    def for_kernel(self, name: str) -> KernelRefinement | None:
        from roofline_tui.core.measured.counters import match_measurement
        from roofline_tui.core.measured.shapes import match_task

        captured = match_task(self.tasks, name) if self.tasks else None
        if self.counter_plan is not None:
            measurement = self.counter_plan.by_head.get(name)
        else:
            measurement = match_measurement(self.counters, name) if self.counters else None
        if captured is None and measurement is None:
            return None
        return KernelRefinement(captured=captured, measurement=measurement)


def eval_dir_of(round_dir: Path) -> Path | None:
    """EVAL_DIR is the parent of ``profile/`` (``EVAL_DIR/profile/round_<R>/``)."""
    parent = round_dir.resolve().parent
    return parent.parent if parent.name == "profile" else None


def load_refinements(
    round_dir: Path,
    *,
    shapes_dir: Path | None = None,
    counter_files: list[Path] | None = None,
) -> tuple[Refinements | None, list[str]]:
    """Discover and load stage-B task dirs and stage-C counter files for one round."""
    problems: list[str] = []
    tasks: list[CapturedShapes] = []
    eval_dir = eval_dir_of(round_dir)
    if shapes_dir is not None:
        task_dirs = discover_task_dirs(shapes_dir.parent if shapes_dir.name == "kernels"
                                       else shapes_dir)
        if not task_dirs and shapes_dir.is_dir():  # a single task dir, or a folder of tasks
            task_dirs = sorted(p for p in shapes_dir.glob("*_task") if p.is_dir()) or [shapes_dir]
    else:
        task_dirs = discover_task_dirs(eval_dir) if eval_dir is not None else []
    if task_dirs:  # stage B's parser: only when there are task dirs
        from roofline_tui.core.measured.shapes import load_task_dir
    for d in task_dirs:
        captured, task_problems = load_task_dir(d)
        problems += task_problems
        if captured is not None:
            tasks.append(captured)
    files = list(counter_files or [])
    if not files:
        files = discover_counter_files(round_dir)
        if eval_dir is not None:
            files += discover_roofline_files(eval_dir)
    counters = None
    if files:  # stage C's parsers: only when there are counter files
        from roofline_tui.core.measured.counters import load_counters

        counters = load_counters(files)
        problems += counters.problems
    if not tasks and counters is None:
        return None, problems
    return Refinements(tasks=tasks, counters=counters), problems
