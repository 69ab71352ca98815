"""The run's own evidence of what the device reaches (issue 21, part 3).

A roof from a data sheet can sit far above what any kernel reaches with this software stack
(MI300X matmuls top out near half the data-sheet bf16 rate). The run itself holds a lower bound
on the reachable rate: the best achieved rate among its own trustworthy entries. For each op
class and compute dtype on the compute axis, and for the memory axis as a whole, the best rate of
the run's modelled entries that are neither suspect nor dispatch-bound (their recorded
instances included) is *demonstrated*: some kernel of this run, on this device and stack, did it.

Every entry on that axis then states the best figure and who reached it, and a
``demonstrated_speedup = best / this`` (at least 1). That is evidence, not a target: the best
kernel may do easier work. When the roof-based ``attainable_speedup`` exceeds the demonstrated
one by more than :data:`GAP` and the roof in use is a data-sheet figure, the entry says so and
its confidence drops one step: the promise rests on a number nothing in this run approaches.

The other way round, a measured ceiling can be stale: a kernel of this run may beat it
(:func:`raised_roofs`). A rate above the ceiling beyond the noise band, and not above the data
sheet, is something this device and stack did; the engine then raises that dtype's compute roof
to the best such rate for every entry of the run, one confidence step lower, instead of calling
the fastest kernel a model error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple

from roofline_tui.core import units
from roofline_tui.core.artifact import Confidence, Demonstrated, Entry

GAP = 1.5  # attainable over demonstrated speedup beyond which a data-sheet roof is doubted
_LOWER: dict[Confidence, Confidence] = {"high": "medium", "medium": "low", "low": "low"}


def one_step_lower(confidence: Confidence) -> Confidence:
    """high → medium → low (low stays low)."""
    return _LOWER[confidence]


class _Best(NamedTuple):
    rate: float
    by: str


def _key(e: Entry, axis: str) -> tuple[str, str, str]:
    if axis == "compute":
        return ("compute", e.op_class, e.compute_dtype or "?")
    return ("memory", "", "")


def _usable(e: Entry) -> bool:
    return (e.modeled and not e.suspect and not e.dispatch_bound and e.t_unit_ms is not None
            and e.t_unit_ms > 0)


def _rates(e: Entry) -> Iterable[tuple[str, float, str]]:
    """(axis, rate, who) of the entry itself and of each instance the fold modelled."""
    if e.achieved_flops:
        yield "compute", e.achieved_flops, e.short_name
    if e.achieved_bw_bytes_s:
        yield "memory", e.achieved_bw_bytes_s, e.short_name
    for r in e.instances:
        if not r.t_ms or r.t_ms <= 0:
            continue
        who = f"{e.short_name} ({r.op or 'instance'} {r.shapes})".strip()
        t = r.t_ms / 1000.0
        if r.flops_est:
            yield "compute", r.flops_est / t, who
        if r.bytes_est:
            yield "memory", r.bytes_est / t, who


def annotate(entries: list[Entry],
             datasheet_roof: Callable[[Entry], bool] = lambda e: False) -> None:
    """Fill ``entry.demonstrated`` for every entry with a roof axis (module docstring);
    ``datasheet_roof(entry)`` says whether the roof the entry's verdict used is a data sheet."""
    best: dict[tuple[str, str, str], _Best] = {}
    for e in entries:
        if not _usable(e):
            continue
        for axis, rate, who in _rates(e):
            k = _key(e, axis)
            if k not in best or rate > best[k].rate:
                best[k] = _Best(rate, who)
    for e in entries:
        roof = e.roof_axis
        if roof is None or not _usable(e):
            continue  # a suspect or dispatch-bound rate is no measure of anything
        side: str = roof
        found = best.get(_key(e, side))
        this = e.achieved_flops if side == "compute" else e.achieved_bw_bytes_s
        if found is None or not this:
            continue
        unit = "FLOP/s" if side == "compute" else "B/s"
        speedup = max(1.0, found.rate / this)
        what = (f"the best {e.op_class} at {e.compute_dtype} of this run" if side == "compute"
                else "the best memory-axis kernel of this run")
        shown = f"{units.rate(found.rate, unit.removesuffix('/s'))}/s"
        if found.by == e.short_name:
            note = f"this kernel is {what}: {shown}"
        else:
            note = f"{what} reaches {shown} ({found.by})"
        doubted = False
        if (e.attainable_speedup and e.attainable_speedup > GAP * speedup
                and datasheet_roof(e)):
            doubted = True
            note += (f"; the roof promises {e.attainable_speedup:.2f}×, more than {GAP:g}× the "
                     f"{speedup:.2f}× this run demonstrates, and the roof is a data-sheet "
                     "figure: confidence lowered one step")
            e.confidence = _LOWER[e.confidence]
            e.advisory = e.confidence == "low"
        e.demonstrated = Demonstrated(axis=side, best_rate=found.rate, unit=unit, by=found.by,
                                      demonstrated_speedup=speedup, roof_doubted=doubted,
                                      note=note)


class RaisedRoof(NamedTuple):
    """A compute roof this run beat: the measured ceiling, the best rate above it and who."""

    dtype: str
    ceiling: float
    data_sheet: float
    rate: float
    by: str

    def note(self) -> str:
        """The sentence every entry judged on the raised roof carries."""
        def r(x: float) -> str:
            return units.rate(x, "FLOP/s", digits=4)
        return (f"Roof: raised from the measured {self.dtype} ceiling ({r(self.ceiling)}) to "
                f"{r(self.rate)}, the rate this run demonstrated ({self.by}, "
                f"{self.rate / self.ceiling:.2f}× the ceiling, below the {r(self.data_sheet)} "
                "data sheet): the ceiling is stale for this stack, so the roof is what the run "
                "reached; confidence lowered one step")


def raised_roofs(entries: Iterable[Entry], ceilings: Mapping[str, tuple[float, float]],
                 noise: float) -> dict[str, RaisedRoof]:
    """Per compute dtype whose roof is a measured ceiling (``ceilings[dtype]`` = (ceiling, data
    sheet)), the best rate this run's entries reached above ``ceiling·(1 + noise)`` on the
    compute axis without exceeding the data sheet (module docstring). Entries that are
    unmodelled, dispatch-bound or untimed are no evidence; a suspect one is, since beating the
    ceiling is what made it suspect. Beyond the data sheet the model over-counts: no raise."""
    out: dict[str, RaisedRoof] = {}
    for e in entries:
        dtype = e.peak_flops_dtype or e.compute_dtype
        if (dtype is None or dtype not in ceilings or e.roof_axis != "compute" or not e.modeled
                or e.dispatch_bound or not e.t_unit_ms or e.t_unit_ms <= 0
                or not e.achieved_flops):
            continue
        ceiling, sheet = ceilings[dtype]
        rate = e.achieved_flops
        if not ceiling * (1.0 + noise) < rate <= sheet:
            continue
        if dtype not in out or rate > out[dtype].rate:
            out[dtype] = RaisedRoof(dtype, ceiling, sheet, rate, e.short_name)
    return out
