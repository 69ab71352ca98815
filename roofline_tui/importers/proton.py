"""Triton Proton profiles (``proton.finalize()``'s hatchet JSON) -> Top-N.

The call tree is read by :mod:`roofline_tui.core.measured.proton` (the same reader gives
``analyze --counters`` the profile's FLOPs and bytes): each kernel leaf's launches and GPU time,
summed per device. One device is kept — the one with the most GPU time, or ``--device-index``
(Proton's ``device_id``) — and the others' share is said. The device description Proton writes
beside the tree (arch, SM count, clocks) names the GPU's arch.

A profile whose scopes recorded ``flops*``/``bytes`` metrics carries measured values: the
import command copies the profile into the round's ``counters/`` folder, where ``analyze``
finds it as it finds hardware counters (stage C).
"""

from __future__ import annotations

from pathlib import Path

from roofline_tui.core import store
from roofline_tui.core.measured.proton import ProtonProfile, read_proton
from roofline_tui.core.textsafe import printable
from roofline_tui.importers.common import DEFAULT_TOP, ImportProblem, KernelAgg, build_topn
from roofline_tui.importers.device import DeviceInfo, identify
from roofline_tui.importers.sniff import PROTON
from roofline_tui.importers.sniff import check as sniff_check
from roofline_tui.importers.tables import TableImport, choose_device


def _device_info(profile: ProtonProfile, device: int) -> DeviceInfo | None:
    for (kind, did), info in sorted(profile.devices.items()):
        if did == device and info.get("arch"):
            return identify(None, arch_hint=str(info["arch"]), source=f"Proton {kind} device")
    return None


def import_proton(path: Path, *, top: int = DEFAULT_TOP,
                  device_index: int | None = None) -> TableImport:
    """A Proton hatchet profile -> Top-N of one device (nothing is written)."""
    path = Path(path)
    pname = printable(path.name)
    why = store.check_regular(path)
    if why is not None:
        raise ImportProblem(f"{printable(path)}: {printable(why)}")
    verdict = sniff_check(path, PROTON)
    if verdict.refusal:
        raise ImportProblem(verdict.refusal)
    try:
        doc = store.read_json(path)
    except store.ReadProblem as exc:
        raise ImportProblem(f"{pname}: {printable(exc.reason, limit=160)}") from None
    profile = read_proton(doc)
    if not profile.kernels:
        why = profile.problems[0] if profile.problems else "no kernel leaves with launches"
        raise ImportProblem(f"{pname}: {printable(why, limit=160)}")
    per_dev: dict[int, float] = {}
    for k in profile.kernels:
        per_dev[k.device] = per_dev.get(k.device, 0.0) + k.time_ns
    dev, message = choose_device(per_dev, device_index, "device")
    notes = [f"{pname}: {printable(p, limit=200)}" for p in profile.problems]
    aggs = []
    launches = 0
    total_ns = 0.0
    measured = 0
    for k in profile.kernels:
        if k.device != dev:
            continue
        agg = KernelAgg(k.name)
        agg.add(k.time_ns / 1000.0, k.count)
        aggs.append(agg)
        launches += k.count
        total_ns += k.time_ns
        measured += bool(k.flops or k.bytes is not None)
    if len(per_dev) > 1:
        notes.append(f"{pname}: {message}")
    if measured:
        notes.append(f"{pname}: {measured} kernel(s) carry Proton flops/bytes metrics "
                     "(measured values for analyze)")
    doc_out = build_topn(aggs, source=PROTON, total_us=total_ns / 1000.0, launches=launches,
                         top=top, notes=notes)
    return TableImport(doc=doc_out, device_message=message, rows=launches, notes=notes,
                       device_info=_device_info(profile, dev))


def has_metrics(path: Path) -> bool:
    """Whether the profile carries flops/bytes metrics worth copying into ``counters/``."""
    try:
        profile = read_proton(store.read_json(path))
    except store.ReadProblem:
        return False
    return any(k.flops or k.bytes is not None for k in profile.kernels)
