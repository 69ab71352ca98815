"""The device a profile was recorded on, and the ``env_report.json`` an import leaves behind.

A profile names its GPU (Kineto ``deviceProperties[].name``, rocprofv3 agent info,
rocprof-compute ``sysinfo.csv``). When the round has no ``env_report.json`` yet, the importer
writes one where ``analyze`` and ``dash`` discover it (the round directory), so the next
analysis runs on that device's peaks. An existing report (in the round directory or up to three
parents, the places ``analyze`` looks) is never overwritten.
"""

from __future__ import annotations

import contextlib
import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roofline_tui.core.coerce import integer

# names only: the products of the bundled peak table come from its precompiled form, so a
# trace import loads no models (the table itself, with them, only the first time)
from roofline_tui.core.device_names import (
    ProductEntry,
    bundled_products,
    match_product,
    normalize_arch,
)
from roofline_tui.core.layout import CONFIG_NAME, ENV_NAME, PARENT_LEVELS
from roofline_tui.core.names import cap_name
from roofline_tui.core.store import write_new_file
from roofline_tui.core.textsafe import printable

_PROP_KEYS = ("id", "name", "totalGlobalMem", "computeMajor", "computeMinor", "numSms",
              "warpSize", "maxThreadsPerBlock", "sharedMemPerBlock", "gcnArchName",
              "Gfx_Target_Version", "Cu_Count", "Simd_Count", "Num_Xcc",
              "Max_Engine_Clk_Fcompute", "Product_Name", "Model_Name")


# (computeMajor, computeMinor, CUs) of ROCm devices -> (gfx, product or None)
_AMD_BY_CC_CUS = {
    (9, 0, 104): ("gfx90a", None),  # MI210, or one GCD of MI250
    (9, 0, 110): ("gfx90a", None),  # one GCD of MI250X
    (9, 4, 304): ("gfx942", "MI300X"),
    (9, 4, 228): ("gfx942", "MI300A"),
    (9, 5, 256): ("gfx950", None),  # MI350X or MI355X: the clock tells them apart
}


@dataclass
class DeviceInfo:
    """What a profile says about its GPU. ``arch`` is ``gfxNNN`` / ``sm_XX`` when known."""

    name: str | None = None
    arch: str | None = None
    product: str | None = None
    source: str = ""
    props: dict[str, Any] = field(default_factory=dict)

    def label(self) -> str:
        bits = [b for b in (self.product or self.name, self.arch) if b]
        return printable(" / ".join(bits), limit=80) if bits else "unknown device"


def _clean_props(props: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k in _PROP_KEYS:
        v = props.get(k)
        if isinstance(v, str):
            out[k] = cap_name(v, 200)
        elif (n := integer(v, nonneg=False)) is not None:
            out[k] = n
    return out


def _bundled_products() -> list[ProductEntry]:
    """The bundled table's (product, arch) pairs, in its order: from the precompiled table, or
    (none yet, or stale) from the table itself, which writes the precompiled form for next
    time."""
    found = bundled_products()
    if found is not None:
        return found
    from roofline_tui.core.peaks import load_peak_table

    sections, _problems = load_peak_table(None)
    return [ProductEntry(sec.product, sec.gfx) for sec in sections]


def identify(name: str | None, props: Mapping[str, Any] | None = None,
             arch_hint: str | None = None, source: str = "") -> DeviceInfo:
    """A :class:`DeviceInfo` from a device name, its properties and/or an arch string.

    The arch comes from ``arch_hint`` (``gfx950``, ``gfx942:sramecc+``), from the name when it
    is an arch, from NVIDIA compute capability (``sm_90``), or from the product's section of
    the bundled peak table (``AMD Instinct MI300X`` -> ``gfx942``). The product is the peak
    table's product when the name matches one, else the name as written."""
    props = dict(props or {})
    clean_name = cap_name(name.strip(), 200) if isinstance(name, str) and name.strip() else None
    arch = normalize_arch(arch_hint) if arch_hint else None
    if arch is not None and not (arch.startswith("gfx") or arch.startswith("sm_")):
        arch = None
    if arch is None and clean_name and clean_name.lower().startswith("gfx"):
        arch = normalize_arch(clean_name)
    product = None
    if clean_name and not clean_name.lower().startswith("gfx"):
        sec = match_product(clean_name, _bundled_products())
        if sec is not None:
            product = sec.product
            arch = arch or sec.gfx
    if arch is None:
        major, minor = integer(props.get("computeMajor")), integer(props.get("computeMinor"))
        warp = integer(props.get("warpSize"))
        nvidia = (clean_name or "").lower().startswith("nvidia") or warp == 32
        if nvidia and major is not None and minor is not None:
            arch = f"sm_{major}{minor}"
        elif warp == 64 and major is not None and minor is not None:
            # ROCm reports gfx9<minor><stepping> as computeMajor/Minor 9/<minor>: the stepping
            # comes from the CU count of the known Instinct parts
            known = _AMD_BY_CC_CUS.get((major, minor, integer(props.get("numSms")) or 0))
            if known:
                arch = known[0]
                product = product or known[1]
    return DeviceInfo(name=clean_name, arch=arch, product=product, source=source,
                      props=_clean_props(props))


def from_kineto(header: Mapping[str, Any], device: int, source: str) -> DeviceInfo | None:
    """The chosen device's entry of a Kineto trace's ``deviceProperties`` (by ``id``; a trace
    with one entry, or several alike, also answers for a device index it does not list)."""
    props = header.get("deviceProperties")
    if not isinstance(props, list):
        return None
    maps = [p for p in props if isinstance(p, Mapping)]
    if not maps:
        return None
    chosen = next((p for p in maps if integer(p.get("id"), nonneg=False) == device), None)
    if chosen is None:
        names = {str(p.get("name")) for p in maps}
        if len(maps) == 1 or len(names) == 1:
            chosen = maps[0]
        else:
            return None
    where = f"{source} deviceProperties[id={chosen.get('id', '?')}]"
    info = identify(chosen.get("name") if isinstance(chosen.get("name"), str) else None,
                    chosen, source=where)
    if info.name is None and info.arch is None:
        return None
    return info


def find_existing_env(out_dir: Path) -> Path | None:
    try:
        here = Path(out_dir).resolve()
    except OSError:
        return None
    for d in [here, *list(here.parents)[:PARENT_LEVELS]]:
        with contextlib.suppress(OSError):
            if (d / ENV_NAME).exists():
                return d / ENV_NAME
    return None


def write_env_report(out_dir: Path, info: DeviceInfo | None, tool: str,
                     workload: dict[str, int] | None = None) -> tuple[Path | None, str]:
    """Write ``out_dir/env_report.json`` for ``info`` (and the ``workload`` the import was
    told: isl/osl/conc) unless a report already exists where ``analyze`` would find it.
    Returns ``(path written or None, one line saying what happened)``. Creation is exclusive:
    a report created meanwhile is never replaced."""
    told = ", ".join(f"--{k} {v}" for k, v in (workload or {}).items())
    existing = find_existing_env(out_dir)
    if existing is not None:
        kept = f"kept the existing {printable(existing)} (device not rewritten"
        if told:
            kept += f"; {told} not written into it: set its workload there"
        return None, kept + ")"
    if info is None or (info.arch is None and info.product is None):
        named = (f"its device {printable(info.name, limit=60)!r} is not in the peak table"
                 if info is not None and info.name else "the profile does not name its device")
        lost = f" ({told} not recorded either)" if told else ""
        return None, (f"{named}: no env_report.json written{lost}; analyze will need --device "
                      "NAME (or an env_report.json with gfx)")
    doc: dict[str, Any] = {}
    if info.arch:
        doc["gfx"] = info.arch
    if info.product:
        doc["product"] = info.product
    if info.name:
        doc["device_name"] = info.name
    if info.props:
        doc["device_props"] = info.props
    if workload:
        doc["workload"] = dict(workload)
    doc["source"] = f"roofline import {tool}: {info.source}" if info.source else tool
    text = json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    path = Path(out_dir) / ENV_NAME
    # exclusive (a report that appeared meanwhile is never overwritten); the umask's mode
    if not write_new_file(path, text.encode("utf-8")):
        return None, f"kept the existing {printable(path)} (device not rewritten)"
    return path, f"wrote {printable(path)}: {info.label()}"


def next_steps(out_dir: Path, env_path: Path | None, *,
               config_missing: str | None = None) -> list[str]:
    """What to run next, and what analyze will miss (the model's config.json);
    ``config_missing`` says why the look-up from the trace found none."""
    env = env_path or find_existing_env(out_dir)
    # without an env_report the device is unknown to analyze: the command says so itself
    device = "" if env is not None else " --device NAME"
    lines = [f"next: roofline analyze {shlex.quote(printable(out_dir))}{device}"]
    where = [Path(out_dir) / CONFIG_NAME]
    if env is not None:
        where.insert(0, env.parent / CONFIG_NAME)
    if not any(p.is_file() for p in where):
        places = " or ".join(printable(p) for p in dict.fromkeys(where))
        lines.append("note: no model config.json found: analyze needs one for kernels without "
                     f"recorded shapes (MoE, attention); it looks for {places} (or the "
                     "directory env_report.json's `model` names); "
                     + (f"looked up from the trace: {printable(config_missing, limit=600)}; "
                        if config_missing else "")
                     + "import again with "
                     "--model ORG/NAME (from the local Hugging Face cache) or --model-config "
                     "FILE to copy it into the round, or give analyze --model-config FILE")
    return lines
