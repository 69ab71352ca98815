"""Triton Proton profiles (hatchet JSON): the kernel tree, and its metrics as stage-C values.

Proton (the profiler Triton ships) writes ``<name>.hatchet``: a JSON array whose first element
is the call tree — nodes ``{"frame": {"name", "type"}, "metrics": {...}, "children": [...]}``
under a ``ROOT`` — and whose second element describes the devices (``{"CUDA": {"0": {"arch":
"89", "num_sms": 128, ...}}}``, ``HIP`` likewise). A kernel is a leaf whose metrics carry a
positive ``count`` (launches) and ``time (ns)`` (total GPU time) with its ``device_id``; inner
nodes are the user's scopes. The same kernel under two scopes is one kernel: its leaves add up.

Where the user's scopes recorded them, ``flops<bits>`` (``flops8``, ``flops16``, ``flops32``,
``flops64``) and ``bytes`` are that kernel's FLOPs and DRAM bytes over all its launches: they
become the kernel's measured values (per launch), as counters would. Proton counts FLOPs by
operand width, not type: 16-bit FLOPs are judged on the fp16 roof (bf16 runs at the same rate on
every device of the peak table), 8-bit ones on the fp8 roof (the int8 rate where a device has
no fp8 path is not assumed: said in the note).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from roofline_tui.core.coerce import integer, number
from roofline_tui.core.names import cap_name
from roofline_tui.core.peaks import normalize_arch

from .models import KernelMeasurement

MAX_NODES = 2_000_000  # tree nodes walked at most
MAX_DEPTH = 256
_FLOP_DTYPES = {"flops8": "fp8", "flops16": "fp16", "flops32": "fp32", "flops64": "fp64"}


@dataclass
class ProtonKernel:
    """One kernel of one device, summed over its leaves."""

    name: str
    device: int
    device_type: str
    count: int = 0
    time_ns: float = 0.0
    flops: dict[str, float] = field(default_factory=dict)  # canonical dtype -> FLOPs, total
    bytes: float | None = None


@dataclass
class ProtonProfile:
    kernels: list[ProtonKernel]
    devices: dict[tuple[str, int], dict[str, Any]]  # (CUDA|HIP, id) -> arch, num_sms, ...
    problems: list[str]


def looks_like_proton(doc: object) -> bool:
    if not isinstance(doc, list) or not doc or not isinstance(doc[0], dict):
        return False
    root = doc[0]
    return isinstance(root.get("frame"), dict) and isinstance(root.get("children"), list)


def _add_leaf(node: dict[str, Any], out: dict[tuple[int, str], ProtonKernel],
              problems: list[str]) -> None:
    metrics = node.get("metrics")
    frame = node.get("frame")
    if not isinstance(metrics, dict) or not isinstance(frame, dict):
        return
    name = frame.get("name")
    count = integer(metrics.get("count"))
    time_ns = number(metrics.get("time (ns)"))
    dev = integer(metrics.get("device_id"))
    if not isinstance(name, str) or not name.strip() or not count or time_ns is None:
        return
    if dev is None:
        problems.append(f"kernel {cap_name(name, 60)!r}: no device_id; taken as device 0")
        dev = 0
    kind = metrics.get("device_type")
    key = (dev, name.strip())
    k = out.get(key)
    if k is None:
        k = out[key] = ProtonKernel(cap_name(name.strip()), dev,
                                    kind if isinstance(kind, str) else "?")
    k.count += count
    k.time_ns += time_ns
    for metric, dtype in _FLOP_DTYPES.items():
        v = number(metrics.get(metric))
        if v:
            k.flops[dtype] = k.flops.get(dtype, 0.0) + v
    b = number(metrics.get("bytes"))
    if b:
        k.bytes = (k.bytes or 0.0) + b


def _devices(meta: object) -> dict[tuple[str, int], dict[str, Any]]:
    out: dict[tuple[str, int], dict[str, Any]] = {}
    if not isinstance(meta, dict):
        return out
    for kind, devs in meta.items():
        if not isinstance(kind, str) or not isinstance(devs, dict):
            continue
        for did, props in devs.items():
            d = integer(did)
            if d is None or not isinstance(props, dict):
                continue
            arch = props.get("arch")
            text = str(arch) if isinstance(arch, (str, int)) else None
            info: dict[str, Any] = {}
            if text:
                info["arch"] = (normalize_arch(text) if kind.upper() == "HIP" or
                                text.startswith(("gfx", "sm")) else normalize_arch(f"sm_{text}"))
            for key in ("num_sms", "clock_rate", "memory_clock_rate", "bus_width"):
                v = integer(props.get(key))
                if v is not None:
                    info[key] = v
            out[(kind.upper(), d)] = info
    return out


def read_proton(doc: object) -> ProtonProfile:
    """The kernels and devices of a parsed hatchet document (never raises on odd content)."""
    if not looks_like_proton(doc):
        return ProtonProfile([], {}, ["not a Proton hatchet profile (no call tree)"])
    assert isinstance(doc, list)
    problems: list[str] = []
    kernels: dict[tuple[int, str], ProtonKernel] = {}
    stack: list[tuple[Any, int]] = [(doc[0], 0)]
    seen = 0
    while stack:
        node, depth = stack.pop()
        seen += 1
        if seen > MAX_NODES or depth > MAX_DEPTH:
            problems.append(f"call tree cut at {MAX_NODES:,} nodes / depth {MAX_DEPTH}")
            break
        if not isinstance(node, dict):
            continue
        children = node.get("children")
        if isinstance(children, list) and children:
            stack.extend((c, depth + 1) for c in reversed(children))
        else:
            _add_leaf(node, kernels, problems)
    devices = _devices(doc[1]) if len(doc) > 1 else {}
    return ProtonProfile(sorted(kernels.values(), key=lambda k: (-k.time_ns, k.name)), devices,
                         problems[:20])


def measurements(profile: ProtonProfile, path: str) -> list[KernelMeasurement]:
    """Each kernel with recorded FLOPs or bytes as a stage-C measurement (per launch)."""
    out: list[KernelMeasurement] = []
    for k in profile.kernels:
        if not k.flops and k.bytes is None:
            continue
        flops = {d: v / k.count for d, v in k.flops.items()}
        dominant = max(flops, key=lambda d: flops[d]) if flops else None
        notes = [f"Proton metrics of {k.count:,} launch(es) on {k.device_type} device "
                 f"{k.device}: FLOPs and bytes as the profiled scopes recorded them"]
        if "fp8" in flops:
            notes.append("Proton's flops8 counts 8-bit FLOPs (fp8 or int8): judged on the fp8 "
                         "roof")
        out.append(KernelMeasurement(
            kernel=k.name, dispatches=k.count,
            bytes_per_dispatch=None if k.bytes is None else k.bytes / k.count,
            flops_per_dispatch=sum(flops.values()) if flops else None,
            flops_dtype=dominant, duration_s=k.time_ns / k.count / 1e9,
            flops_by_dtype=flops,
            missing=[] if k.bytes is not None else ["bytes"],
            source="proton", path=path, notes=notes,
            arch=profile.devices.get((k.device_type.upper(), k.device), {}).get("arch")))
    return out
