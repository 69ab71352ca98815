"""Which counter rows go to which head entry, decided once for a round, and the account of it.

:class:`~roofline_tui.core.measured.names.NameIndex` finds, for each head, the measured kernel
its name matches and the rule that matched (exact, signature, short name, prefix). Matching
head by head can hand one measured kernel to several heads: two ``kernel<…>`` rows of cuBLAS
whose template arguments differ but whose short names agree, or a row matched exactly by one
head and by its short name by another. :func:`plan_joins` settles that in one place:

* a kernel matched by its full name or its signature goes to those heads only; a head that
  reached it by a weaker rule is told which head it belongs to;
* a kernel several heads reach by short name or prefix goes to the one whose recorded launch
  (grid and block) equals the counter file's, when both sides recorded one; otherwise to none
  of them, and the account says so — counters are never spread over heads by a guess;
* counters collected on another architecture than the round's are not applied (bytes and
  FLOPs of a kernel depend on the chip it ran on) and the account says which arch each side is.

Every counter file gets a :class:`FileJoin`: its kernels, what each matched and by which rule,
what matched nothing, what was ambiguous or withheld, and the arch warning.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..peaks import normalize_arch
from .models import CounterSet, KernelMeasurement
from .names import MatchRule

Launch = tuple[tuple[int, ...], tuple[int, ...]]
STRONG: frozenset[str] = frozenset({"exact", "signature"})


@dataclass(frozen=True)
class HeadName:
    """A head as the join sees it: its full name, short name and recorded launches."""

    name: str
    short_name: str
    launches: frozenset[Launch] = frozenset()


@dataclass
class Joined:
    kernel: str
    entry: str  # the head's short name
    rule: str  # a MatchRule, or "short name + launch" when the launch told the heads apart


@dataclass
class Unjoined:
    kernel: str
    entries: list[str]  # the heads that reached it
    reason: str


@dataclass
class FileJoin:
    path: str
    source: str
    arch: str | None
    kernels: int
    matched: list[Joined] = field(default_factory=list)
    not_applied: list[Unjoined] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)  # kernels no head reached
    arch_warning: str | None = None


@dataclass
class JoinPlan:
    by_head: dict[str, KernelMeasurement]  # head full name -> its measurement
    files: list[FileJoin]


def _launch(m: KernelMeasurement) -> Launch | None:
    if m.grid and m.block:
        return tuple(m.grid), tuple(m.block)
    return None


def _settle(m: KernelMeasurement, claims: list[tuple[HeadName, MatchRule]]
            ) -> tuple[list[Joined], list[Unjoined]]:
    """The heads ``m`` is applied to, and the ones it is not applied to with why."""
    strong = [(h, r) for h, r in claims if r in STRONG]
    weak = [(h, r) for h, r in claims if r not in STRONG]
    if strong:
        joined = [Joined(m.kernel, h.short_name, r) for h, r in strong]
        owners = ", ".join(h.short_name for h, _ in strong)
        left = [Unjoined(m.kernel, [h.short_name], f"its {r} also fits, but the full name "
                         f"belongs to {owners}") for h, r in weak]
        return joined, left
    if len(weak) == 1:
        h, r = weak[0]
        return [Joined(m.kernel, h.short_name, r)], []
    names = [h.short_name for h, _ in weak]
    launch = _launch(m)
    if launch is not None and any(h.launches for h, _ in weak):
        same = [h for h, _ in weak if launch in h.launches]
        if len(same) == 1:
            others = [n for n in names if n != same[0].short_name]
            return ([Joined(m.kernel, same[0].short_name, "short name + launch")],
                    [Unjoined(m.kernel, others, "shares the short name; its recorded launch "
                              "differs from the counter file's")] if others else [])
        why = (f"{len(weak)} heads share its short name and "
               + (f"{len(same)} of them recorded its launch" if same
                  else "none recorded its launch") + f" (grid {list(launch[0])}, block "
               f"{list(launch[1])})")
    else:
        why = (f"{len(weak)} heads share its short name and the "
               + ("counter file" if launch is None else "trace") + " recorded no launch "
               "geometry to tell them apart")
    return [], [Unjoined(m.kernel, names, f"ambiguous: {why}; profile the counters with full "
                         "kernel names (ncu --print-kernel-base mangled/demangled) to apply them")]


def plan_joins(counters: CounterSet, heads: Sequence[HeadName], round_arch: str | None
               ) -> JoinPlan:
    """Match every head to at most one measured kernel, settle shared kernels, and account
    per counter file (see the module docstring)."""
    index = counters.name_index()
    claims: dict[int, list[tuple[HeadName, MatchRule]]] = {}
    for h in heads:
        found = index.match_rule(h.name)
        if found is not None:
            claims.setdefault(id(found[0]), []).append((h, found[1]))
    want = normalize_arch(round_arch) if round_arch else None
    by_head: dict[str, KernelMeasurement] = {}
    files: dict[str, FileJoin] = {}
    by_short = {h.short_name: h for h in heads}
    for m in counters.measurements.values():
        arch = normalize_arch(m.arch) if m.arch else None
        fj = files.get(m.path)
        if fj is None:
            fj = files[m.path] = FileJoin(path=m.path, source=m.source, arch=arch, kernels=0)
        fj.kernels += 1
        if arch and fj.arch != arch:
            fj.arch = fj.arch or arch
        mine = claims.get(id(m), [])
        if not mine:
            fj.unmatched.append(m.kernel)
            continue
        joined, left = _settle(m, mine)
        fj.not_applied += left
        if arch and want and arch != want:
            fj.not_applied += [Unjoined(m.kernel, [j.entry], f"collected on {arch}, the round "
                                        f"ran on {want}: not applied") for j in joined]
            fj.arch_warning = (f"the counters were collected on {arch} and the round ran on "
                               f"{want}: none of them is applied; collect them on the round's "
                               "GPU")
            continue
        fj.matched += joined
        for j in joined:
            by_head[by_short[j.entry].name] = m
    return JoinPlan(by_head=by_head, files=list(files.values()))
