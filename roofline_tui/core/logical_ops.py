"""Logical ops across kernel names: kernels one launching-op call launched together.

A split-K attention op launches its main kernel and a reduce kernel (``paged_attention_ll4mi_QKV``
and ``paged_attention_ll4mi_reduce``; ``kernel_unified_attention_3d`` and ``reduce_segments``);
flash-decoding adds a combine, MLA decode a stage-2 reduce. The Top-N lists them as separate
kernels, but they are one logical op: its bytes and FLOPs are the op's, its time is the sum of
both kernels' (spec §3, "per-launch, not aggregate"). The importer records, per instance, the
other kernels the same op calls launched (``x_roofline.instances[].with``); this module reads
that link and decides which partners join an entry's logical op:

* the partner must be launched by the same op call for (nearly) every launch of the entry in the
  regime (:data:`LINKED_SHARE`), so the link is the trace's, not a guess;
* it must be a companion of the same op class (an attention reduce/combine kernel), not another
  op's kernel that happens to share a wrapper (a cuBLAS workspace memset, the MoE router): only
  attention joins today (:data:`JOINING_CLASSES`), GEMM epilogues and MoE stages keep their own
  models;
* the bigger kernel (more GPU time) carries the logical op; the partner's own entry says it is
  judged there and gets no verdict of its own, so the gain is not counted twice.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from roofline_tui.core.inputs import TopN, TopNEntry
from roofline_tui.core.lazy_re import lazy_compile

LINKED_SHARE = 0.9  # of the entry's launches whose op call also launched the partner
JOINING_CLASSES = frozenset({"attn"})
# a partner of an attention op: its reduce / combine / merge kernel, or another attention kernel
_COMPANION = lazy_compile(r"reduce|combine|merge|finali[sz]e|attention|attn|mla|flash|paged",
                        re.IGNORECASE)


class Partner(NamedTuple):
    """Another Top-N kernel launched by the same op calls as an entry."""

    entry: TopNEntry
    linked_calls: int  # the entry's launches whose op call also launched this one
    calls: int  # the entry's launches in the regime
    op: str  # the launching op


def _timed(entry: TopNEntry, regime: str) -> bool:
    """Whether the entry has a per-launch time to add (the sources the engine's
    ``per_launch_time`` reads): a kernel whose time cannot be added is not joined."""
    return bool(entry.base_latency_ms.get(regime) or entry.avg_us
                or (entry.total_ms and entry.calls))


def _calls_in(entry: TopNEntry, regime: str) -> int:
    if entry.ext is None:
        return 0
    return sum(inst.phase(regime)[0] for inst in entry.ext.instances)


def partners(entry: TopNEntry, topn: TopN, regime: str, op_class: str,
             class_of: Callable[[TopNEntry], str]) -> list[Partner]:
    """The kernels that join ``entry``'s logical op in ``regime`` (module docstring)."""
    if op_class not in JOINING_CLASSES or entry.ext is None:
        return []
    calls = _calls_in(entry, regime)
    if not calls:
        return []
    linked: dict[str, tuple[int, str]] = {}
    for inst in entry.ext.instances:
        n_here, _us = inst.phase(regime)
        if not n_here or inst.op is None:
            continue
        share = n_here / inst.calls if inst.calls else 0.0
        for w in inst.with_kernels:
            got, op = linked.get(w.kernel, (0, inst.op))
            linked[w.kernel] = (got + round(w.calls * share), op)
    if not linked:
        return []
    by_name = {e.name: e for e in topn.entries}
    out = []
    for name, (n, op) in sorted(linked.items(), key=lambda kv: (-kv[1][0], kv[0])):
        other = by_name.get(name)
        if other is None or n < LINKED_SHARE * calls or not _timed(other, regime):
            continue
        if not _COMPANION.search(name) or class_of(other) not in (op_class, "unknown",
                                                                   "elementwise"):
            continue
        out.append(Partner(entry=other, linked_calls=n, calls=calls, op=op))
    return out


def carrier(entry: TopNEntry, topn: TopN, regime: str, op_class: str,
            class_of: Callable[[TopNEntry], str]) -> Partner | None:
    """The bigger kernel whose logical op ``entry`` is part of (``entry`` is then judged
    there), else None. The same link seen from the other side: the bigger kernel lists this
    one as a partner."""
    if entry.ext is None:
        return None
    names = {w.kernel for inst in entry.ext.instances for w in inst.with_kernels}
    for other in topn.entries:
        if other.name not in names or other.name == entry.name:
            continue
        bigger = (other.total_ms or 0.0, other.pct_gpu_time) > (entry.total_ms or 0.0,
                                                                 entry.pct_gpu_time)
        if not bigger:
            continue
        other_class = class_of(other)
        for p in partners(other, topn, regime, other_class, class_of):
            if p.entry.name == entry.name:
                return Partner(entry=other, linked_calls=p.linked_calls, calls=p.calls,
                               op=p.op)
    return None
