"""Hardware peak table: parse ``peaks.md``, pick the section for a GPU, derive a fallback.

The table format is the upstream skill's: markdown prose with one fenced ``yaml`` block per
section (``gfx``, optional ``product``, ``cu``/``sms``, ``hbm_bw_bytes_s``,
``flops: {dtype: FLOP/s}``, ``l2_bytes``, ``mall_bytes``, plus this project's ``source``,
``default`` and ``measured_flops`` keys).

Each section can carry two compute figures per dtype: ``flops``, the data sheet's, and
``measured_flops``, a public measurement of what a matmul really reaches (with its source, stack
and date). The resolved :class:`Peaks` divide by the measured ceiling where there is one and by
the data sheet otherwise, and say per dtype which one (``flops_basis``, ``flops_source``).

Nothing here raises on bad input: a broken block becomes a problem string, an unknown GPU becomes a
``Peaks`` with ``source="derived"`` or ``"none"`` and low confidence (spec §6 L1).
"""


import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from roofline_tui.core.coerce import number

# device names (arch and product keys) live without the models (re-exported: __all__)
from roofline_tui.core.device_names import (
    CC_RE,
    COMPILED_FORMAT,
    GFX_RE,
    MAX_PEAKS_BYTES,
    bundled_path,
    gfx_from_target_version,
    match_product,
    normalize_arch,
    normalize_product,
    read_compiled,
    sized_board_product,
)
from roofline_tui.core.dtypes import canonical_dtype
from roofline_tui.core.empty import empty_dict, empty_list
from roofline_tui.core.lazy_re import lazy_compile
from roofline_tui.core.metrics import ISOLATED_NOISE
from roofline_tui.core.store import (
    ReadProblem,
    atomic_write_text,
    parse_yaml_text,
    read_bytes,
    read_text,
)
from roofline_tui.core.textsafe import printable

__all__ = [
    "FlopsBasis",
    "MeasuredCeiling",
    "PeakSection",
    "Peaks",
    "CDNA_FLOPS_PER_CU_CLOCK",
    "HostLink",
    "compute_axis_veto",
    "compute_roof_confidence",
    "derive_peaks_from_props",
    "host_link_for",
    "load_peak_table",
    "match_product",
    "normalize_arch",
    "normalize_product",
    "parse_peaks_md",
    "peak_flops_for",
    "resolve_peaks",
    "roof_for_rate",
    "sized_board_product",
]


class MeasuredCeiling(BaseModel):
    """A public measurement of the matmul rate one product reaches in one dtype."""

    flops: float
    source: str
    stack: str | None = None   # software the figure was measured with (torch, ROCm/CUDA, knobs)
    date: str | None = None    # when the figure was published
    shape: str | None = None   # the best M×N×K the measurement found
    note: str | None = None

    def label(self) -> str:
        """``measured: <source>; <stack>; <date>[; <note>]`` — the roof's provenance in one
        line."""
        parts = [self.source, self.stack, self.date or "date unknown", self.note]
        return "measured: " + "; ".join(p for p in parts if p)


class PeakSection(BaseModel):
    """One yaml block of a peak table. Frozen: a parsed table is shared by every round of a
    process (:func:`load_peak_table` hands out the cached sections, not copies)."""

    model_config = ConfigDict(frozen=True)

    gfx: str
    product: str | None = None
    cu: int | None = None
    hbm_bw_bytes_s: float
    flops: dict[str, float] = Field(default_factory=empty_dict)  # the data sheet's figures
    measured_flops: dict[str, MeasuredCeiling] = Field(default_factory=empty_dict)
    unmeasured: str | None = None  # why the dtypes without a measured ceiling have none
    l2_bytes: int | None = None
    mall_bytes: int | None = None
    source: str | None = None
    default: bool = False
    title: str = ""


# Which figure a dtype's compute roof is: a public measurement, the data sheet, or derived from
# device properties (CU × clock × per-CU rate).
FlopsBasis = Literal["measured", "data sheet", "derived"]


class Peaks(BaseModel):
    """The resolved denominators for one run (spec §2 ``peaks``).

    ``flops`` holds the compute roof in use per dtype: the measured ceiling where the table has
    one, else the data sheet (or the derived figure). ``flops_data_sheet`` and
    ``flops_measured`` keep both figures; ``flops_basis``/``flops_source`` say per dtype which
    one ``flops`` is and where it comes from.

    ``compute_validated`` is the §8.2 check: ``True`` only when measured bf16 and fp16
    ceilings agree within the isolated noise band; ``None`` when the check cannot be made
    (fewer than two measured figures: equal data-sheet figures prove nothing); ``False`` when
    the pair disagrees (the compute axis is then not usable) or there are no compute peaks.
    ``compute_check`` says which, in words.
    """

    gfx: str | None = None
    product: str | None = None
    hbm_bw_bytes_s: float | None = None
    flops: dict[str, float] = Field(default_factory=empty_dict)
    flops_data_sheet: dict[str, float] = Field(default_factory=empty_dict)
    flops_measured: dict[str, float] = Field(default_factory=empty_dict)
    flops_basis: dict[str, FlopsBasis] = Field(default_factory=empty_dict)
    flops_source: dict[str, str] = Field(default_factory=empty_dict)
    unmeasured: str | None = None
    l2_bytes: int | None = None
    cu: int | None = None
    source: Literal["table", "derived", "none"]
    confidence: Literal["high", "medium", "low"]
    citation: str | None = None
    compute_validated: bool | None = False
    compute_check: str | None = None
    problems: list[str] = Field(default_factory=empty_list)

    def provenance(self) -> dict[str, Any]:
        """The per-dtype roof provenance as artifact ``peaks`` fields (sorted, JSON-ready)."""
        return {
            "flops_data_sheet": dict(sorted(self.flops_data_sheet.items())),
            "flops_measured": dict(sorted(self.flops_measured.items())),
            "flops_basis": dict(sorted(self.flops_basis.items())),
            "flops_source": dict(sorted(self.flops_source.items())),
            "compute_check": self.compute_check,
        }


# ---------------------------------------------------------------------------------------------
# parsing


_FENCE_OPEN_RE = lazy_compile(r"^\s*(```|~~~)\s*(\w*)")
_HEADING_RE = lazy_compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")


def _one_line(text: object, limit: int = 160) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


# Plausible magnitudes for a peak (SI units): a bandwidth below 1 MB/s or a rate below
# 1 MFLOP/s is a typo or an attack, and would turn every ratio into an overflow.
PEAK_MIN = 1e6
PEAK_MAX = 1e20


def _as_float(value: Any) -> float | None:
    """A positive number (PyYAML reads ``8.0e12`` as a string) through the one coercer."""
    return number(value, positive=True)


def _as_peak(value: Any) -> float | None:
    """A peak rate: a positive number within [PEAK_MIN, PEAK_MAX]."""
    f = number(value, positive=True)
    return f if f is not None and PEAK_MIN <= f <= PEAK_MAX else None


def _as_int(value: Any) -> int | None:
    f = _as_float(value)
    if f is None or f >= 2**63:
        return None
    return int(round(f))


def _yaml_blocks(text: str) -> list[tuple[str, int, str]]:
    """(heading title, 1-based line of the fence, body) for each ```yaml / ```yml block."""
    blocks: list[tuple[str, int, str]] = []
    title = ""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _FENCE_OPEN_RE.match(line)
        if m:
            fence, lang = m.group(1), m.group(2).lower()
            start = i
            body: list[str] = []
            i += 1
            while i < len(lines) and not lines[i].lstrip().startswith(fence):
                body.append(lines[i])
                i += 1
            if lang in ("yaml", "yml"):
                blocks.append((title, start + 1, "\n".join(body)))
            i += 1
            continue
        h = _HEADING_RE.match(line)
        if h:
            title = h.group(1)
        i += 1
    return blocks


# keys of a ``measured_flops`` mapping that are not dtypes: defaults for its entries, and why the
# other dtypes have no measurement
_MEASURED_META = ("source", "stack", "date", "shape", "note", "unmeasured")


def _text(value: Any, limit: int = 300) -> str | None:
    """A one-line string from a YAML scalar (an unquoted date reads as a ``date``)."""
    if value is None or isinstance(value, Mapping | list):
        return None
    s = _one_line(value, limit)
    return s or None


def _measured_from(
    raw: Any, data_sheet: Mapping[str, float], where: str, problems: list[str]
) -> tuple[dict[str, MeasuredCeiling], str | None]:
    """The ``measured_flops`` of one block, and the reason given for the dtypes without one.

    ``measured_flops`` is either a string (no measurement exists, and why) or a mapping:
    ``source``/``stack``/``date``/``shape`` apply to every entry, ``unmeasured`` says why the
    other dtypes have none, and each dtype key holds a FLOP/s number or a mapping with ``flops``
    and its own ``source``/``stack``/``date``/``shape``/``note``. An entry without a source,
    or above the data sheet's figure for its dtype, is reported and dropped.
    """
    if raw is None:
        return {}, None
    if not isinstance(raw, Mapping):
        why = _text(raw)
        if why is None:
            problems.append(f"{where}: 'measured_flops' is neither a mapping nor a note; ignored")
        return {}, why
    defaults = {k: _text(raw.get(k)) for k in _MEASURED_META}
    out: dict[str, MeasuredCeiling] = {}
    for key, value in raw.items():
        if str(key) in _MEASURED_META:
            continue
        canon = canonical_dtype(str(key))
        fields = dict(defaults)
        if isinstance(value, Mapping):
            fields.update({k: _text(value.get(k)) for k in _MEASURED_META if k in value})
            val = _as_peak(value.get("flops", value.get("value")))
        else:
            val = _as_peak(value)
        label = _one_line(key, 40)
        if canon is None or val is None:
            problems.append(f"{where}: measured_flops entry {label!r} ignored")
            continue
        if canon in out:
            problems.append(f"{where}: duplicate measured_flops entry for {canon}; kept the first")
            continue
        source = fields.get("source")
        if not source:
            problems.append(f"{where}: measured {canon} ceiling has no source; ignored (an "
                            "unsourced figure cannot be told from a guess)")
            continue
        sheet = data_sheet.get(canon)
        if sheet is not None and val > sheet:
            problems.append(f"{where}: measured {canon} ceiling {val:.4g} is above the data "
                            f"sheet's {sheet:.4g} FLOP/s; ignored")
            continue
        out[canon] = MeasuredCeiling(flops=val, source=source, stack=fields.get("stack"),
                                     date=fields.get("date"), shape=fields.get("shape"),
                                     note=fields.get("note"))
    return out, defaults.get("unmeasured")


def _section_from_mapping(
    data: Mapping[Any, Any], title: str, where: str, problems: list[str]
) -> PeakSection | None:
    gfx = normalize_arch(data.get("gfx"))
    if not gfx:
        problems.append(f"{where}: no 'gfx' key; block skipped")
        return None
    hbm = _as_peak(data.get("hbm_bw_bytes_s"))
    if hbm is None:
        problems.append(f"{where}: missing or invalid hbm_bw_bytes_s; block skipped")
        return None
    flops: dict[str, float] = {}
    raw_flops = data.get("flops")
    if isinstance(raw_flops, Mapping):
        for key, value in raw_flops.items():
            canon = canonical_dtype(str(key))
            val = _as_peak(value)
            if canon is None or val is None:
                problems.append(f"{where}: flops entry {_one_line(key, 40)!r} ignored")
                continue
            if canon in flops:
                problems.append(f"{where}: duplicate flops entry for {canon}; kept the first")
                continue
            flops[canon] = val
    elif raw_flops is not None:
        problems.append(f"{where}: 'flops' is not a mapping; no compute peaks")
    measured, unmeasured = _measured_from(data.get("measured_flops"), flops, where, problems)
    product = data.get("product")
    source = data.get("source")
    default = data.get("default", False)
    return PeakSection(
        gfx=gfx,
        product=(str(product).strip() or None) if product is not None else None,
        cu=_as_int(data.get("cu", data.get("sms", data.get("cus")))),
        hbm_bw_bytes_s=hbm,
        flops=flops,
        measured_flops=measured,
        unmeasured=unmeasured,
        l2_bytes=_as_int(data.get("l2_bytes")),
        mall_bytes=_as_int(data.get("mall_bytes")),
        source=_one_line(source, 400) if source is not None else None,
        default=default is True or str(default).strip().lower() in ("true", "yes", "1"),
        title=_one_line(title, 200),
    )


def parse_peaks_md(text: str) -> tuple[list[PeakSection], list[str]]:
    """Sections of a ``peaks.md`` document and one-line problems for the blocks that were skipped.

    Never raises: unreadable text, broken YAML and blocks without ``gfx`` or a bandwidth are
    reported and skipped.
    """
    sections: list[PeakSection] = []
    problems: list[str] = []
    if not isinstance(text, str):
        return sections, ["peak table is not text"]
    try:
        blocks = _yaml_blocks(text)
    except Exception as exc:  # pragma: no cover - defensive
        return sections, [f"peak table unreadable: {_one_line(exc)}"]
    for n, (title, line, body) in enumerate(blocks, start=1):
        where = f"yaml block {n} (line {line}" + (f", '{_one_line(title, 60)}')" if title else ")")
        try:
            data = parse_yaml_text(body, where)
        except Exception as exc:  # aliases, depth, syntax: one line, block skipped
            problems.append(_one_line(exc, 200))
            continue
        if data is None:
            continue
        if not isinstance(data, Mapping):
            problems.append(f"{where}: not a mapping; block skipped")
            continue
        try:
            sec = _section_from_mapping(data, title, where, problems)
        except Exception as exc:
            problems.append(f"{where}: {_one_line(exc, 120)}")
            continue
        if sec is not None:
            sections.append(sec)
    defaults: dict[str, int] = {}
    for sec in sections:
        if sec.default:
            defaults[sec.gfx] = defaults.get(sec.gfx, 0) + 1
    for gfx, count in defaults.items():
        if count > 1:
            problems.append(f"{gfx}: {count} sections say default: true; the first one is used")
    return sections, problems



# parsed tables by (path, size, mtime_ns): the bundled table is parsed once per process, a
# --peaks file again only when it changes
_TABLE_CACHE: dict[tuple[str, int, int], tuple[list[PeakSection], list[str]]] = {}


def _parse_cached(key: tuple[str, int, int], text: str, label: str
                  ) -> tuple[list[PeakSection], list[str]]:
    hit = _TABLE_CACHE.get(key)
    if hit is None:
        sections, problems = parse_peaks_md(text)
        if not sections:
            problems.append(f"peak table {label} has no usable sections")
        if len(_TABLE_CACHE) >= 8:
            _TABLE_CACHE.clear()
        hit = _TABLE_CACHE[key] = (sections, problems)
    # new lists: callers may append to them; the sections are frozen and shared
    return list(hit[0]), list(hit[1])


def load_peak_table(path: Path | str | None = None) -> tuple[list[PeakSection], list[str]]:
    """Parse ``path``, or the table bundled in ``roofline_tui/data/peaks.md`` when ``None``.

    The file is read through the bounded reader (a regular file of at most
    :data:`MAX_PEAKS_BYTES`) and its YAML without aliases (:func:`parse_yaml_text`); a table
    already parsed in this process is not parsed again. The bundled table is read from its
    precompiled form (:func:`_bundled_sections`) when one matches it. Never raises; an
    unreadable file gives no sections and one problem line.
    """
    if path is None:
        target: Path | str = bundled_path()
        label = "bundled peaks.md"
    else:
        target = Path(path)
        label = printable(os.fsdecode(path), limit=120)
    try:
        st = os.stat(target)
        key = (os.fsdecode(target), st.st_size, st.st_mtime_ns)
        if key in _TABLE_CACHE:
            return _parse_cached(key, "", label)
        if path is None:
            compiled = _bundled_sections(Path(target))
            if compiled is not None:
                _TABLE_CACHE[key] = compiled
                return _parse_cached(key, "", label)
        text = read_text(target, max_bytes=MAX_PEAKS_BYTES, errors="replace")
    except (OSError, ValueError) as exc:
        why = exc.reason if isinstance(exc, ReadProblem) else _one_line(exc, 120)
        return [], [f"cannot read peak table {label}: {printable(why, limit=160)}"]
    return _parse_cached(key, text, label)


# The bundled table, precompiled: its sections as JSON, written on first use to the user's cache
# directory (core.device_names.compiled_location: keyed by a hash of the table and of this
# module, whose code turns the table into sections). A start-up then validates the sections
# (pydantic, as every input) without importing or running YAML.


def _bundled_sections(md_path: Path) -> tuple[list[PeakSection], list[str]] | None:
    """The bundled table's sections from its precompiled JSON, building that file when it is
    missing or does not match (unreadable, corrupt, another table's, another parser's); None
    when the table itself cannot be read (the caller then says why)."""
    try:
        md = read_bytes(md_path, max_bytes=MAX_PEAKS_BYTES)
        digest, cache, doc = read_compiled(md)
    except OSError:
        return None
    if doc is not None:
        try:
            return [PeakSection.model_validate(sec) for sec in doc.sections], list(doc.problems)
        except ValueError:  # pydantic's ValidationError: rebuilt below
            pass
    sections, problems = parse_peaks_md(md.decode("utf-8", errors="replace"))
    if not sections:
        return None  # nothing worth keeping: the caller parses and says so
    out = {"format": COMPILED_FORMAT, "sha256": digest,
           "sections": [sec.model_dump(mode="json") for sec in sections],
           "problems": problems}
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(cache, json.dumps(out, indent=1, sort_keys=True) + "\n")
    except (OSError, ValueError):
        pass  # a read-only home: parsed again next time, nothing else changes
    return sections, problems


# ---------------------------------------------------------------------------------------------
# derived peaks (spec §6 L1)


# dense FLOP per CU per clock, from hardware-peaks.md (AMD CDNA 2/3/4 white papers)
CDNA_FLOPS_PER_CU_CLOCK: dict[str, dict[str, float]] = {
    "cdna2": {"fp64": 256, "fp32": 256, "bf16": 1024, "fp16": 1024, "int8": 1024},
    "cdna3": {
        "fp64": 256,
        "fp32": 256,
        "tf32": 1024,
        "bf16": 2048,
        "fp16": 2048,
        "fp8": 4096,
        "int8": 4096,
    },
    "cdna4": {
        "fp64": 128,
        "fp32": 256,
        "bf16": 4096,
        "fp16": 4096,
        "fp8": 8192,
        "int8": 8192,
        "fp6": 16384,
        "fp4": 16384,
    },
}

_CDNA_OF_ARCH = {
    "gfx90a": "cdna2",
    "gfx940": "cdna3",
    "gfx941": "cdna3",
    "gfx942": "cdna3",
    "gfx950": "cdna4",
}

# normalised key (lower case, no separators) -> (field, multiplier to SI)
# torch deviceProperties / CUDA use kHz for clockRate and memoryClockRate; rocprofv3 agent_info
# and rocprof-compute sysinfo use MHz.
_PROP_KEYS: dict[str, tuple[str, float]] = {
    "numsms": ("cu", 1),
    "multiprocessorcount": ("cu", 1),
    "cucount": ("cu", 1),
    "cupergpu": ("cu", 1),
    "cus": ("cu", 1),
    "cu": ("cu", 1),
    "clockratehz": ("clock_hz", 1),
    "clockratekhz": ("clock_hz", 1e3),
    "clockrate": ("clock_hz", 1e3),
    "clockratemhz": ("clock_hz", 1e6),
    "maxengineclkfcompute": ("clock_hz", 1e6),
    "maxsclk": ("clock_hz", 1e6),
    "maxsclkmhz": ("clock_hz", 1e6),
    "memoryclockratehz": ("mem_clock_hz", 1),
    "memoryclockratekhz": ("mem_clock_hz", 1e3),
    "memoryclockrate": ("mem_clock_hz", 1e3),
    "memoryclockratemhz": ("mem_clock_hz", 1e6),
    "maxmclk": ("mem_clock_hz", 1e6),
    "memorybuswidthbits": ("bus_bits", 1),
    "memorybuswidth": ("bus_bits", 1),
    "l2cachesize": ("l2_bytes", 1),
    "l2bytes": ("l2_bytes", 1),
    "totalglobalmem": ("mem_bytes", 1),
    "totalmemory": ("mem_bytes", 1),
    "vramtotal": ("mem_bytes", 1),
}
_ARCH_KEYS = ("gcnarchname", "gfxarch", "gpuarch", "arch", "gfx", "name")
_NAME_KEYS = ("productname", "marketingname", "gpumodel", "name", "modelname")


def _norm_key(key: object) -> str:
    return re.sub(r"[^a-z0-9]", "", str(key).lower())


def _pick_props(device_props: Any) -> dict[str, Any]:
    """One flat property dict: a mapping as is, or the first GPU-looking mapping of a list."""
    if isinstance(device_props, Mapping):
        return {_norm_key(k): v for k, v in device_props.items()}
    if isinstance(device_props, Sequence) and not isinstance(device_props, str | bytes):
        maps = [p for p in device_props if isinstance(p, Mapping)]
        for p in maps:
            norm = {_norm_key(k): v for k, v in p.items()}
            if str(norm.get("agenttype", "GPU")).strip().upper() == "GPU":
                return norm
    return {}


def _props_vendor(props: Mapping[str, Any]) -> Literal["amd", "nvidia"] | None:
    keys = ("name", "productname", "vendorname", "gpumodel")
    text = " ".join(str(props.get(k, "")) for k in keys).lower()
    if any(k in props for k in ("gcnarchname", "gfxtargetversion", "maxengineclkfcompute")):
        return "amd"
    if "gfx" in text or "amd" in text or "radeon" in text or "instinct" in text:
        return "amd"
    if "nvidia" in text:
        return "nvidia"
    warp = _as_int(props.get("warpsize"))
    if warp == 64:
        return "amd"
    if warp == 32:
        return "nvidia"
    return None


def _arch_from_props(props: Mapping[str, Any]) -> str | None:
    for key in _ARCH_KEYS:
        val = props.get(key)
        if isinstance(val, str) and GFX_RE.search(val.lower()):
            return normalize_arch(val)
    tv = _as_int(props.get("gfxtargetversion"))
    if tv:
        arch = gfx_from_target_version(tv)
        if arch:
            return arch
    if _props_vendor(props) == "nvidia":
        major, minor = _as_int(props.get("computemajor")), props.get("computeminor")
        minor_i = 0 if minor in (0, "0") else _as_int(minor)
        if major is not None and minor_i is not None:
            return f"sm_{major}{minor_i}"
    return None


def _name_from_props(props: Mapping[str, Any]) -> str | None:
    for key in _NAME_KEYS:
        val = props.get(key)
        if isinstance(val, str):
            s = val.strip()
            low = s.lower()
            if s and low not in ("unknown", "ip discovery") and not low.startswith("gfx"):
                return s
    return None


def _read_prop_numbers(props: Mapping[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, (field, scale) in _PROP_KEYS.items():
        if field in out or key not in props:
            continue
        val = _as_float(props[key])
        if val is not None:
            out[field] = val * scale
    return out


def derive_peaks_from_props(
    device_props: Any, *, gfx: str | None = None, product: str | None = None
) -> Peaks:
    """Low-confidence peaks from device properties (spec §6 L1).

    ``hbm ≈ memory_clock_hz × bus_width_bits / 8 × 2`` and
    ``flops[dtype] ≈ CUs × clock_hz × rate`` with the CDNA 2/3/4 per-CU-per-clock rates.
    Whatever cannot be derived stays empty, and the problems say why.
    """
    props = _pick_props(device_props)
    arch = normalize_arch(gfx) or _arch_from_props(props)
    nums = _read_prop_numbers(props)
    problems: list[str] = []
    hbm: float | None = None
    implausible: list[str] = []
    if "mem_clock_hz" in nums and "bus_bits" in nums:
        hbm = _as_peak(nums["mem_clock_hz"] * nums["bus_bits"] / 8 * 2)
        if hbm is None:
            implausible.append("memory bandwidth")
    flops: dict[str, float] = {}
    family = _CDNA_OF_ARCH.get(arch or "")
    cu = _as_int(nums.get("cu")) if "cu" in nums else None
    if family and cu and "clock_hz" in nums:
        for dtype, rate in CDNA_FLOPS_PER_CU_CLOCK[family].items():
            val = _as_peak(cu * nums["clock_hz"] * rate)
            if val is None:
                implausible.append(f"{dtype} peak")
            else:
                flops[dtype] = val
    label = arch or "GPU arch unknown"
    if hbm is None and not flops:
        if implausible:
            label += f" (implausible {', '.join(implausible[:3])} from device properties)"
        return _no_peaks(
            arch,
            product,
            f"{label}: no peak-table section, and the device properties lack the clocks "
            "needed to derive peaks; roofline ratios unavailable",
        )
    problems.append(
        f"{label}: no peak-table section; peaks derived from device properties "
        "(confidence low, display only)"
    )
    if implausible:
        problems.append(f"device properties give an implausible {', '.join(implausible[:3])} "
                        f"(outside {PEAK_MIN:g}..{PEAK_MAX:g} per second); not used")
    if hbm is None:
        problems.append("memory bandwidth not derivable (no memory clock / bus width)")
    else:
        problems.append("derived memory bandwidth may read low (on HBM3/HBM3E often ~2x low)")
    if not flops:
        why = "no CU count or clock" if family else "no per-CU rates known for this arch"
        problems.append(f"compute peaks not derivable ({why})")
    validated, check = _check_bf16_fp16(flops, {}, basis="derived")
    if validated is False and flops:
        problems.append(check)
    l2 = _as_int(nums.get("l2_bytes")) if "l2_bytes" in nums else None
    how = "derived from device properties: CUs × engine clock × per-CU rate (display only)"
    return Peaks(
        gfx=arch,
        product=product or _name_from_props(props),
        hbm_bw_bytes_s=hbm,
        flops=flops,
        flops_basis=dict.fromkeys(flops, "derived"),
        flops_source=dict.fromkeys(flops, how),
        l2_bytes=l2,
        cu=cu,
        source="derived",
        confidence="low",
        citation="derived from device properties (spec §6 L1)",
        compute_validated=validated if flops else False,
        compute_check=check if flops else None,
        problems=problems,
    )


# ---------------------------------------------------------------------------------------------
# resolution


def _check_bf16_fp16(
    flops: Mapping[str, float], measured: Mapping[str, float], *, basis: str = "data sheet"
) -> tuple[bool | None, str]:
    """The §8.2 cross-check: bf16 and fp16 run at one matrix rate, so two *measurements* of it
    must agree within the isolated noise band. ``(True, why)`` when measured bf16 and fp16
    ceilings agree; ``(False, why)`` when a pair disagrees (measured beyond the band, or two
    ``flops`` figures that differ: the compute axis is not usable); ``(None, why)`` when there
    is nothing to check: fewer than two measured figures (two data-sheet figures are equal by
    construction and prove nothing)."""
    mb, mf = measured.get("bf16"), measured.get("fp16")
    if mb is not None and mf is not None:
        gap = abs(mb - mf) / max(mb, mf)
        if gap <= ISOLATED_NOISE:
            return True, (f"validated (§8.2): the measured bf16 ({mb / 1e12:.1f}) and fp16 "
                          f"({mf / 1e12:.1f} TFLOP/s) ceilings agree within {gap:.1%}, inside "
                          f"the {ISOLATED_NOISE:.1%} isolated noise band")
        return False, (f"measured bf16 ceiling {mb:.4g} and fp16 ceiling {mf:.4g} FLOP/s differ "
                       f"by {gap:.1%}, beyond the {ISOLATED_NOISE:.1%} noise band: compute-axis "
                       "peaks are mis-calibrated and unusable; memory axis still valid (§8.2)")
    bf16, fp16 = flops.get("bf16"), flops.get("fp16")
    if bf16 is not None and fp16 is not None and not math.isclose(bf16, fp16, rel_tol=1e-6):
        return False, (
            f"bf16 peak {bf16:.4g} != fp16 peak {fp16:.4g}: compute-axis peaks are "
            "mis-calibrated and unusable; memory axis still valid (§8.2)"
        )
    one = next((d for d in ("bf16", "fp16") if d in measured), None)
    have = (f"only {one} has a measured ceiling" if one
            else "no measured bf16 or fp16 ceiling")
    if bf16 is None or fp16 is None:
        return None, f"not validated (§8.2): {have}, and the bf16/fp16 pair is incomplete"
    return None, (f"not validated (§8.2): {have}; the {basis} bf16 and fp16 figures are equal "
                  "by construction, which proves nothing about either")


def _no_peaks(gfx: str | None, product: str | None, why: str) -> Peaks:
    return Peaks(
        gfx=gfx,
        product=product,
        hbm_bw_bytes_s=None,
        flops={},
        source="none",
        confidence="low",
        compute_validated=False,
        problems=[why],
    )


def _from_section(sec: PeakSection, problems: list[str]) -> Peaks:
    measured = {d: m.flops for d, m in sec.measured_flops.items()}
    validated, check = _check_bf16_fp16(sec.flops, measured)
    problems = list(problems)
    if validated is False:
        problems.append(f"{sec.title or sec.gfx}: {check}")
    sheet = f"data sheet: {sec.source}" if sec.source else "data sheet (no source given)"
    roofs = {**sec.flops, **measured}
    basis: dict[str, FlopsBasis] = {
        d: "measured" if d in measured else "data sheet" for d in roofs}
    where = {d: sec.measured_flops[d].label() if d in measured else sheet for d in roofs}
    cite = " — ".join(p for p in (sec.title, sec.source) if p) or None
    if sec.measured_flops:
        sources = "; ".join(sorted({m.source for m in sec.measured_flops.values()}))
        dtypes = ", ".join(sorted(measured))
        cite = "; ".join(p for p in (cite, f"measured matmul ceilings ({dtypes}): {sources}")
                         if p)
    return Peaks(
        gfx=sec.gfx,
        product=sec.product,
        hbm_bw_bytes_s=sec.hbm_bw_bytes_s,
        flops=roofs,
        flops_data_sheet=dict(sec.flops),
        flops_measured=measured,
        flops_basis=basis,
        flops_source=where,
        unmeasured=sec.unmeasured,
        l2_bytes=sec.l2_bytes,
        cu=sec.cu,
        source="table",
        confidence="high",
        citation=cite,
        compute_validated=validated if roofs else False,
        compute_check=check if roofs else None,
        problems=problems,
    )


def _default_for_arch(sections: Sequence[PeakSection], arch: str) -> PeakSection | None:
    mine = [s for s in sections if s.gfx == arch]
    for sec in mine:
        if sec.default:
            return sec
    for sec in mine:
        if not sec.product:
            return sec
    return None


def _label(sec: PeakSection) -> str:
    return f"{sec.gfx}/{sec.product}" if sec.product else sec.gfx


def resolve_peaks(
    sections: Sequence[PeakSection],
    *,
    gfx: str | None,
    product: str | None = None,
    device: str | None = None,
    device_props: Any = None,
) -> Peaks:
    """The peaks for one GPU.

    Order: ``device`` (CLI ``--device``) matched against section products (or read as an arch
    name); the environment ``product``; the arch's ``default: true`` section (or its section
    without ``product``); peaks derived from ``device_props``; finally ``source="none"``.
    Product-only sections (e.g. upstream ``r9700``) never answer a bare arch lookup.
    """
    try:
        return _resolve(list(sections or []), gfx, product, device, device_props)
    except Exception as exc:  # the run never fails because of the peak table (spec §6 L5)
        return _no_peaks(
            normalize_arch(gfx) if isinstance(gfx, str) else None,
            product if isinstance(product, str) else None,
            f"peak resolution failed: {_one_line(exc, 120)}",
        )


def _resolve(
    sections: list[PeakSection],
    gfx: str | None,
    product: str | None,
    device: str | None,
    device_props: Any,
) -> Peaks:
    problems: list[str] = []
    product = (product.strip() or None) if isinstance(product, str) else None
    device = (device.strip() or None) if isinstance(device, str) else None
    props = _pick_props(device_props) if device_props is not None else {}
    arch = _profile_arch(gfx, props, problems)

    # 1. explicit --device
    if device:
        peaks = _peaks_for_device(sections, device, arch, props, problems)
        if peaks is not None:
            return peaks

    # 2. product from the environment report, then the device name in the properties
    unmatched: list[str] = [device] if device else []
    peaks = _peaks_for_product(sections, product, arch, props, problems, unmatched)
    if peaks is not None:
        return peaks

    # 3. the arch's default section: confidence high only when no product contradicts it
    if arch:
        peaks = _peaks_for_arch(sections, arch, device, props, problems, unmatched)
        if peaks is not None:
            return peaks

    # 4. derived, 5. nothing
    if props:
        derived = derive_peaks_from_props(props, gfx=arch, product=product)
        derived.problems = problems + derived.problems
        return derived
    why = (
        f"{arch}: not in the peak table and no device properties to derive peaks from; "
        "roofline ratios unavailable"
        if arch
        else "GPU arch unknown (no gfx, product or device properties); roofline ratios unavailable"
    )
    return _no_peaks(arch, product, "; ".join([*problems, why]) if problems else why)


def _profile_arch(gfx: str | None, props: dict[str, Any], problems: list[str]) -> str | None:
    """The profile's arch, from ``gfx`` unless it is a compute capability on an AMD device,
    else from the device properties."""
    vendor = _props_vendor(props) if props else None
    arch = normalize_arch(gfx)
    if (
        arch
        and arch.startswith("sm_")
        and vendor == "amd"
        and isinstance(gfx, str)
        and CC_RE.match(gfx.strip())
    ):
        problems.append(
            f"arch {gfx!r} is a compute capability reported by an AMD device, not an NVIDIA "
            "sm arch; ignored"
        )
        arch = None
    if arch is None and props:
        arch = _arch_from_props(props)
    return arch


def _peaks_for_device(
    sections: list[PeakSection],
    device: str,
    arch: str | None,
    props: dict[str, Any],
    problems: list[str],
) -> Peaks | None:
    """The section ``--device`` names (a product or an arch); None when it names none."""
    sec = match_product(device, sections)
    if sec is None:
        dev_arch = normalize_arch(device)
        if dev_arch and _default_for_arch(sections, dev_arch):
            sec = _default_for_arch(sections, dev_arch)
    if sec is not None:
        if arch and sec.gfx != arch:
            problems.append(
                f"--device {device!r} ({_label(sec)}) overrides the profile's arch {arch}"
            )
        return _with_props_checks(_from_section(sec, problems), props)
    problems.append(f"--device {device!r} matches no section of the peak table")
    return None


def _peaks_for_product(
    sections: list[PeakSection],
    product: str | None,
    arch: str | None,
    props: dict[str, Any],
    problems: list[str],
    unmatched: list[str],
) -> Peaks | None:
    """The section of the reported product, else of the device name in the properties
    (a board number sized by its memory); names that match nothing go to ``unmatched``."""
    candidates = [(product, "product")]
    if props:
        candidates.append((_name_from_props(props), "device name"))
    mem = _read_prop_numbers(props).get("mem_bytes") if props else None
    for cand, what in candidates:
        if not cand:
            continue
        sec = match_product(cand, sections)
        why_board: str | None = None
        if sec is None and mem:
            board = sized_board_product(cand, mem)
            sec = match_product(board, sections) if board else None
            why_board = (f"{cand!r} is a board number; its {mem / 1e9:.1f} GB of memory "
                         "(deviceProperties) pick this part") if sec is not None else None
        if sec is not None and (arch is None or sec.gfx == arch):
            peaks = _from_section(sec, problems)
            if why_board:
                peaks.citation = "; ".join(p for p in (peaks.citation, why_board) if p)
            return _with_props_checks(peaks, props)
        if sec is not None:
            problems.append(
                f"{what} {cand!r} ({_label(sec)}) disagrees with arch {arch}; ignored"
            )
        unmatched.append(cand)
    return None


def _peaks_for_arch(
    sections: list[PeakSection],
    arch: str,
    device: str | None,
    props: dict[str, Any],
    problems: list[str],
    unmatched: list[str],
) -> Peaks | None:
    """The arch's default section, at confidence medium when a named product is unknown."""
    sec = _default_for_arch(sections, arch)
    if sec is not None:
        if unmatched:
            named = ", ".join(repr(u) for u in unmatched)
            problems.append(
                f"product {named} not in the peak table; using the {arch} default "
                f"({sec.product or arch}) at confidence medium: its bandwidth and peaks may "
                "differ (pass --device to pick a section)"
            )
            peaks = _from_section(sec, problems)
            peaks.confidence = "medium"
            return _with_props_checks(peaks, props)
        if device and sec.product:
            problems.append(f"using {arch} default section ({sec.product})")
        return _with_props_checks(_from_section(sec, problems), props)
    only_products = sorted({s.product for s in sections if s.gfx == arch and s.product})
    if only_products:
        problems.append(
            f"{arch} has only product-specific sections ({', '.join(only_products)}); "
            "pass --device to use one"
        )
    return None


class _Partitionable(NamedTuple):
    """A part whose one device may be a slice of the chip: its whole-chip counts."""

    units: int                       # CUs (AMD) or SMs (NVIDIA) of the whole chip
    dies: int | None                 # XCDs (AMD): a CPX partition is one of them
    mem_bytes: float                 # the whole chip's HBM as the runtime reports it
    vendor: Literal["amd", "nvidia"]


# Parts that can be partitioned (AMD compute partitions SPX/DPX/TPX/QPX/CPX, NVIDIA MIG), by
# normalised product: whole-chip CUs/SMs and XCDs (hardware-peaks.md; the bundled table's
# ``cu``/``sms`` agree, and win when a section has them), HBM in GiB as runtimes report it.
_PARTITIONABLE: dict[str, _Partitionable] = {
    "mi300x": _Partitionable(304, 8, 192 * 2**30, "amd"),
    "mi325x": _Partitionable(304, 8, 256 * 2**30, "amd"),
    "mi300a": _Partitionable(228, 6, 128 * 2**30, "amd"),
    "mi355x": _Partitionable(256, 8, 288 * 2**30, "amd"),
    "mi350x": _Partitionable(256, 8, 288 * 2**30, "amd"),
    "h100": _Partitionable(132, None, 80 * 2**30, "nvidia"),
    "h200": _Partitionable(132, None, 141 * 2**30, "nvidia"),
}
_COMPUTE_PARTITION_KEYS = ("computepartition", "currentcomputepartition",
                           "acceleratorpartition", "computepartitionmode")
_MEMORY_PARTITION_KEYS = ("memorypartition", "currentmemorypartition", "memorypartitionmode",
                          "npsmode", "nps")
_AMD_MODES = ("SPX", "DPX", "TPX", "QPX", "CPX")
_NPS_RE = lazy_compile(r"^(?:nps)?\s*([1248])$")
_MIG_RE = lazy_compile(r"\bmig\b")


def _prop_text(props: Mapping[str, Any], keys: Sequence[str]) -> str | None:
    for key in keys:
        val = props.get(key)
        if isinstance(val, str) and val.strip():
            return val.strip()
        if isinstance(val, int) and not isinstance(val, bool):
            return str(val)
    return None


def _partition_mode(props: Mapping[str, Any], part: _Partitionable, cu: int, full: int
                    ) -> tuple[bool, str]:
    """Whether ``cu`` of ``full`` units is a partition of the chip, and its name."""
    share = cu / full
    name = " ".join(str(props.get(k, "")) for k in _NAME_KEYS).lower()
    if part.vendor == "nvidia":
        # MIG instances below the full 7g profile hold at most half the SMs; a count between
        # half and all is another SKU (H100 PCIe: 114 SMs), not a slice
        return bool(_MIG_RE.search(name)) or share <= 0.5, "a MIG instance"
    explicit = (_prop_text(props, _COMPUTE_PARTITION_KEYS) or "").upper()
    if explicit in _AMD_MODES:
        return explicit != "SPX", f"{explicit} compute partition"
    n = round(full / cu)
    if n < 2 or abs(full / cu - n) > 0.02 * n:
        return False, ""
    names = {2: "DPX", 3: "TPX", 4: "QPX"}
    if part.dies:
        names[part.dies] = "CPX"
    mode = names.get(n)
    return mode is not None, f"1/{n} of the chip, a {mode} compute partition"


def _memory_share(props: Mapping[str, Any], nums: Mapping[str, float], part: _Partitionable,
                  unit_share: float) -> tuple[float, str]:
    """The share of the chip's HBM bandwidth one partition streams, and why.

    AMD: the memory partition (NPS) decides, not the compute partition: under NPS1 every HBM
    stack is interleaved across the whole chip and each compute partition reaches all of them,
    so the roof stays the chip's; NPSk gives each partition 1/k of the stacks (rocprof-compute
    counts 128 HBM channels under NPS1, 128/k under NPSk). NVIDIA MIG: an instance owns its
    memory slices (and their L2 and controllers), so it streams its share of the memory."""
    explicit = _prop_text(props, _MEMORY_PARTITION_KEYS)
    m = _NPS_RE.match(explicit.lower()) if explicit else None
    if part.vendor == "amd" and m:
        k = int(m.group(1))
        if k == 1:
            return 1.0, ("memory partition NPS1: every partition reaches all the HBM stacks, so "
                         "the bandwidth roof stays the full chip's")
        return 1.0 / k, f"memory partition NPS{k}: the partition streams 1/{k} of the HBM"
    mem = nums.get("mem_bytes")
    if mem:
        s = mem / part.mem_bytes
        k = min((1, 2, 4, 8), key=lambda k: abs(s * k - 1))
        if abs(s * k - 1) <= 0.15:
            gib = f"{mem / 2**30:.0f} GiB"
            if part.vendor == "nvidia":
                return 1.0 / k, (f"the MIG instance holds {gib}, 1/{k} of the memory slices: "
                                 f"HBM bandwidth × 1/{k}")
            if k == 1:
                return 1.0, (f"the device sees all {gib} of HBM: memory partition NPS1 "
                             "assumed, every partition reaches all the HBM stacks, so the "
                             "bandwidth roof stays the full chip's")
            return 1.0 / k, (f"the device sees {gib}, 1/{k} of the HBM: memory partition "
                             f"NPS{k} assumed, HBM bandwidth × 1/{k}")
    if part.vendor == "nvidia":
        return unit_share, ("the MIG instance's memory slices are unknown: HBM bandwidth "
                            "scaled by the SM share as the nearest estimate")
    return 1.0, ("memory partition unknown: NPS1 (the default) assumed, every partition "
                 "reaches all the HBM stacks, so the bandwidth roof stays the full chip's "
                 "(under NPS4 it would be a quarter)")


def _scale_to_partition(peaks: Peaks, props: Mapping[str, Any], nums: Mapping[str, float],
                        part: _Partitionable, cu: int, full: int, mode: str) -> Peaks:
    share = cu / full
    mem_share, mem_why = _memory_share(props, nums, part, share)
    unit = "SMs" if part.vendor == "nvidia" else "CUs"
    where = peaks.product or peaks.gfx or "the part"
    peaks.flops = {k: v * share for k, v in peaks.flops.items()}
    peaks.flops_data_sheet = {k: v * share for k, v in peaks.flops_data_sheet.items()}
    peaks.flops_measured = {k: v * share for k, v in peaks.flops_measured.items()}
    peaks.flops_source = {k: f"{v}; scaled by {cu}/{full} {unit} to the partition"
                          for k, v in peaks.flops_source.items()}
    if peaks.hbm_bw_bytes_s is not None:
        peaks.hbm_bw_bytes_s *= mem_share
    if part.vendor == "nvidia" and peaks.l2_bytes and mem_share < 1.0:
        peaks.l2_bytes = int(peaks.l2_bytes * mem_share)  # MIG slices carry their L2
    peaks.cu = cu
    if peaks.confidence == "high":
        peaks.confidence = "medium"
    peaks.problems.append(
        f"device reports {cu} of the {where}'s {full} {unit} ({mode}): compute peaks scaled "
        f"by {cu}/{full} = {share:.4g}; {mem_why}; peaks confidence {peaks.confidence} "
        f"(the table's whole-chip figures scaled to the {cu}-{unit[:-1]} partition)")
    peaks.citation = "; ".join(
        p for p in (peaks.citation, f"scaled to a {cu}-{unit[:-1]} partition ({mode}) of the "
                    f"{full}-{unit[:-1]} chip, HBM × {mem_share:.4g}") if p)
    return peaks


def _with_props_checks(peaks: Peaks, props: Mapping[str, Any]) -> Peaks:
    """Compare the profiled device's CU/SM count with the whole chip's.

    A partition of a part that can be partitioned (an MI300X in CPX mode exposes 38 of 304
    CUs; an H100 MIG instance 16 of 132 SMs) gets the table's peaks scaled to it: compute by
    the CU/SM share, HBM bandwidth by the partition's memory share (:func:`_memory_share`),
    confidence medium with a note naming the count. Any other disagreement (another SKU,
    a part that cannot be partitioned) is only flagged."""
    if not props:
        return peaks
    nums = _read_prop_numbers(props)
    cu = _as_int(nums["cu"]) if "cu" in nums else None
    part = _PARTITIONABLE.get(normalize_product(peaks.product) or "")
    full = peaks.cu or (part.units if part is not None else None)
    if cu is None or full is None or cu == full:
        return peaks
    if part is not None and 0 < cu < full:
        is_partition, mode = _partition_mode(props, part, cu, full)
        if is_partition:
            return _scale_to_partition(peaks, props, nums, part, cu, full, mode)
    peaks.problems.append(
        f"device reports {cu} CUs/SMs but the table section has {full} (partition mode "
        "or a different SKU?); compute peaks may be off"
    )
    return peaks


# ---------------------------------------------------------------------------------------------
# per-dtype lookup

# A sub-byte float the device has no matrix cores for (fp4/fp6 on CDNA 3 or Hopper) falls to
# bf16, the dtype a dequantising kernel computes in there, never to the faster fp8 roof; the
# op models decide the dtype that runs first (core.precision), so this is the last resort.
_FALLBACKS: dict[str, tuple[str, ...]] = {
    "fp4": ("bf16",),
    "fp6": ("bf16",),
    "fp8": ("bf16",),
    "int4": ("int8", "fp8", "bf16"),
    "uint8": ("int8", "fp8", "bf16"),
    "int8": ("fp8", "bf16"),
    "fp16": ("bf16",),
    "bf16": ("fp16",),
    "tf32": ("fp32",),
    "fp64": ("fp32",),
    "fp32": ("tf32", "bf16"),
}


def _tflops(value: float) -> str:
    return f"{value / 1e12:.1f} TFLOP/s"


def _roof_note(peaks: Peaks, dtype: str) -> str:
    """Which compute roof ``dtype`` is judged against, its figure and its source, in words."""
    value = peaks.flops[dtype]
    basis = peaks.flops_basis.get(dtype, "data sheet")
    source = peaks.flops_source.get(dtype)
    where = peaks.product or peaks.gfx or "this GPU"
    if basis == "measured":
        note = f"{dtype} compute roof {_tflops(value)}, {source or 'measured'}"
        sheet = peaks.flops_data_sheet.get(dtype)
        if sheet:
            note += f" ({value / sheet:.1%} of the {_tflops(sheet)} data sheet)"
        return note
    if basis == "derived":
        return f"{dtype} compute roof {_tflops(value)}, {source or 'derived'}"
    note = (f"{dtype} compute roof {_tflops(value)}, {source or 'data sheet'}; no public "
            f"measured {dtype} ceiling for {where}")
    if peaks.unmeasured:
        note += f" ({peaks.unmeasured})"
    note += ", so a compute-axis verdict is one confidence step lower"
    twin = {"fp16": "bf16", "bf16": "fp16"}.get(dtype)
    if twin and peaks.flops_basis.get(twin) == "measured":
        note += (f"; the measured {twin} ceiling is {_tflops(peaks.flops[twin])} and both run at "
                 "one matrix rate, so this roof likely overstates what a matmul reaches")
    return note


def peak_flops_for(peaks: Peaks, dtype: str | None) -> tuple[float | None, str | None, str | None]:
    """(compute roof in FLOP/s, dtype whose roof was used, note) for a kernel running in ``dtype``.

    The roof is the measured ceiling when the table has one for that dtype, else the data sheet
    (or the derived figure); the note always names which, its figure and its source (and, for a
    data-sheet roof, that a compute-axis verdict is one confidence step lower), so every entry
    can state the roof it was judged against (``peaks.flops_basis[dtype]`` and
    ``peaks.flops_source[dtype]`` carry the same).

    A dtype without its own peak falls back to the nearest slower path (int8 -> fp8 -> bf16;
    tf32 -> fp32; fp64 -> fp32); fp4 and fp6 without matrix cores fall to bf16, the dtype a
    kernel that dequantises them computes in, never to the faster fp8 roof; an unknown dtype
    uses bf16, each said in the note. ``(None, None, note)`` when the peaks hold no compute numbers at all.
    """
    flops = peaks.flops or {}
    where = peaks.product or peaks.gfx or "this GPU"
    if not flops:
        return None, None, f"no compute peaks for {where}"
    canon = canonical_dtype(dtype) if dtype is not None else None
    if canon is not None and canon in flops:
        return flops[canon], canon, _roof_note(peaks, canon)
    chain = _FALLBACKS.get(canon, ("bf16",)) if canon else ("bf16",)
    for alt in (*chain, "bf16", "fp16", "fp32"):
        if alt in flops:
            if canon is None:
                shown = repr(dtype) if dtype is not None else "missing"
                note = f"dtype {shown} not recognised; used the {alt} peak"
            elif canon in ("fp4", "fp6"):
                note = (f"no {canon} matrix cores on {where}: a kernel with {canon} operands "
                        f"dequantises them there; used the {alt} peak, never a faster roof")
            else:
                note = f"no {canon} peak for {where}; used the {alt} peak"
            return flops[alt], alt, f"{note}. {_roof_note(peaks, alt)}"
    alt, value = max(flops.items(), key=lambda kv: kv[1])
    return value, alt, (f"no {canon or 'matching'} peak for {where}; used the {alt} peak. "
                        f"{_roof_note(peaks, alt)}")


_ONE_STEP_LOWER: dict[str, Literal["high", "medium", "low"]] = {
    "high": "medium", "medium": "low", "low": "low"}


def is_measured_roof(peaks: Peaks, dtype: str | None) -> bool:
    """Whether the compute roof of ``dtype`` is a measured ceiling (not a data-sheet or a
    derived figure)."""
    return dtype is not None and peaks.flops_basis.get(dtype) == "measured"


def compute_roof_confidence(
    peaks: Peaks, roof_axis: str | None, dtype: str | None,
    confidence: Literal["high", "medium", "low"],
) -> Literal["high", "medium", "low"]:
    """An entry's confidence after its compute roof is taken into account: one step lower when
    its verdict is on the compute axis and that roof is not a measured ceiling (a data-sheet
    figure says what the silicon could do, not what a matmul reaches). Other entries keep
    ``confidence``."""
    if roof_axis != "compute" or not peaks.flops:
        return confidence
    if is_measured_roof(peaks, dtype):
        return confidence
    return _ONE_STEP_LOWER[confidence]


def roof_for_rate(
    peaks: Peaks, dtype: str | None, roof: float | None, achieved: float
) -> tuple[float | None, str | None]:
    """The compute roof to judge an ``achieved`` FLOP/s against, and a note when it moved.

    A measured ceiling is the best rate one public benchmark found, not a physical limit: a
    kernel can beat it. A rate above the measured ceiling by no more than the isolated noise
    band (3.4 %, which cannot be told from the ceiling itself) and below the data sheet's
    figure is at that ceiling: the roof becomes the rate itself (``roofline_pct`` 1.0, not an
    infeasible ratio). Further above, the ratio stays above 1 and the sanity band flags it,
    with a note: either the model over-counts or the ceiling is stale for this stack."""
    if (roof is None or dtype is None or not achieved > roof
            or peaks.flops_basis.get(dtype) != "measured"):
        return roof, None
    sheet = peaks.flops_data_sheet.get(dtype)
    over = achieved / roof - 1.0
    if over <= ISOLATED_NOISE and (sheet is None or achieved <= sheet):
        return achieved, (f"Roof: {_tflops(achieved)} is {over:.1%} above the measured {dtype} "
                          f"ceiling ({_tflops(roof)}), inside the {ISOLATED_NOISE:.1%} noise "
                          "band: taken as at the ceiling (roof = this rate).")
    where = (f"below the {_tflops(sheet)} data sheet" if sheet is not None and achieved <= sheet
             else "also above the data sheet" if sheet is not None else "no data sheet figure")
    return roof, (f"Roof: {_tflops(achieved)} is {over:.1%} above the measured {dtype} ceiling "
                  f"({_tflops(roof)}; {where}): the byte/FLOP model over-counts, or the ceiling "
                  "is stale for this stack.")


def compute_axis_veto(peaks: Peaks) -> str | None:
    """Why compute-axis numbers on these peaks must not carry a verdict (§8.2), or ``None``.

    Only a failed check vetoes: a bf16/fp16 pair that disagrees (measured ceilings beyond the
    isolated noise band, or two table figures that differ). A check that could not be made
    (``compute_validated is None``) does not; its entries carry a note instead."""
    if peaks.compute_validated is False and peaks.flops:
        return "compute-axis peak unvalidated: bf16 ≠ fp16 " + (
            "(measured ceilings)" if {"bf16", "fp16"} <= set(peaks.flops_measured)
            else "in the peak table")
    return None


# ---------------------------------------------------------------------------------------------
# host link (host <-> device copies)


class HostLink(NamedTuple):
    """The link a host↔device copy crosses, one direction (a copy moves one way)."""

    bytes_s: float
    name: str


# 16 / 32 GT/s per lane × 16 lanes × 128b/130b encoding / 8 bits, per direction.
_PCIE3_X16 = HostLink(8e9 * 16 * 128 / 130 / 8, "PCIe Gen3 x16, 15.8 GB/s per direction")
_PCIE4_X16 = HostLink(16e9 * 16 * 128 / 130 / 8, "PCIe Gen4 x16, 31.5 GB/s per direction")
_PCIE5_X16 = HostLink(32e9 * 16 * 128 / 130 / 8, "PCIe Gen5 x16, 63.0 GB/s per direction")
_NVLINK_C2C = HostLink(450e9, "NVLink-C2C, 450 GB/s per direction (900 GB/s total)")

# The host interface of each part (vendor data sheets): PCIe generation by arch, with the
# Grace superchips on NVLink-C2C and the MI300A APU sharing its HBM with the CPU.
_HOST_LINK_BY_PRODUCT: dict[str, HostLink | None] = {
    "gh200480gb": _NVLINK_C2C,
    "gh200144ghbm3e": _NVLINK_C2C,
    "gb200": _NVLINK_C2C,
    "mi300a": None,  # unified HBM: see host_link_for
    "8060s": None,  # Strix Halo: LPDDR5X shared with the CPU
}
_HOST_LINK_BY_ARCH: dict[str, HostLink] = {
    "gfx90a": _PCIE4_X16,
    "gfx942": _PCIE5_X16,
    "gfx950": _PCIE5_X16,
    "gfx1100": _PCIE4_X16,
    "sm_75": _PCIE3_X16,
    "sm_80": _PCIE4_X16,
    "sm_86": _PCIE4_X16,
    "sm_89": _PCIE4_X16,
    "sm_90": _PCIE5_X16,
    "sm_100": _PCIE5_X16,
    "sm_120": _PCIE5_X16,
}


def host_link_for(peaks: Peaks) -> tuple[HostLink | None, str]:
    """The host-link peak a host↔device copy on this GPU is judged against, and where it came
    from; ``(None, reason)`` when the link is unknown (the copy then gets no verdict)."""
    product = normalize_product(peaks.product) or ""
    if product in _HOST_LINK_BY_PRODUCT:
        link = _HOST_LINK_BY_PRODUCT[product]
        if link is not None:
            return link, f"{peaks.product}: {link.name}"
        if peaks.hbm_bw_bytes_s:
            kind = "LPDDR5X" if product == "8060s" else "HBM"
            return (HostLink(peaks.hbm_bw_bytes_s, f"unified {kind} shared with the CPU (APU)"),
                    f"{peaks.product}: host memory is the device {kind}, so a copy streams it")
    link = _HOST_LINK_BY_ARCH.get(peaks.gfx or "")
    if link is None:
        where = peaks.product or peaks.gfx or "this GPU"
        return None, f"host-link bandwidth of {where} unknown"
    note = f"{peaks.gfx} parts use {link.name}"
    if peaks.confidence != "high" or peaks.source != "table":
        note += " (assumed from the arch; the exact part is not confirmed)"
    return link, note
