"""Every head's levers, from evidence: the rows of :mod:`roofline_tui.core.lever_table` that
match its op class, backend, bound, headroom and editability, each filled with the facts read
from the entry (its kernel name, its recorded launch and shape, its verdict, the heads beside
it). A row that names a fact this entry does not have is left out: nothing is guessed.

The expected effect is always tied to the entry's verdict: "bounded by the roof: up to S×" for a
head with headroom, the GPU time the fused kernels take for a fusion, the sibling's roofline %
for an MoE stage; without a verdict, why the gain is not knowable and what would settle it.
"""

from __future__ import annotations

import math
import string
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

from roofline_tui.core import lever_table as LT
from roofline_tui.core.artifact import Entry, Lever
from roofline_tui.core.dtypes import canonical_dtype, dtype_bytes
from roofline_tui.core.lazy_re import lazy_compile
from roofline_tui.core.metrics import DISPATCH_FACTOR, LAUNCH_OVERHEAD_S, expected_e2e_gain_pct

MAX_LEVERS = 5
# Facts a text may leave out: they add detail, they never decide whether a row applies.
_OPTIONAL = frozenset({"gsu", "launch", "gap", "for_shape"})

_BACKENDS = [(key, lazy_compile(pattern), why) for key, pattern, why in LT.BACKENDS]
_TENSILE_TILE = lazy_compile(r"_MT(\d+)x(\d+)x(\d+)_")
_TENSILE_MI = lazy_compile(r"_MI(\d+x\d+x\d+)_")
_TENSILE_GSU = lazy_compile(r"_(GSU[A-Z0-9]*)_")
_CUBLAS_TILE = lazy_compile(r"tilesize(\d+x\d+x\d+)")
_CUBLAS_SPLIT = lazy_compile(r"(segment_k_(?:on|off)|splitK\w*)")
_OGS_BLOCKS = lazy_compile(r"^_matmul_ogs_[NT]+_\w+?_(\d+)x(\d+)x(\d+)x(\d+)(?:_|$)")
_GEMM_LABEL = lazy_compile(r"^GEMM ([\d×]+)→(\d+)")
_OP_LABEL = lazy_compile(r"^(\S+) (\w+) \[([\d,]+)\]")
_MOE_STAGE = lazy_compile(r"MoE stage (\d)")


class LaunchFacts(NamedTuple):
    """What the Top-N recorded of a head's launches (its first instance that has them)."""

    grid: tuple[int, ...] | None = None
    block: tuple[int, ...] | None = None
    dims: tuple[int, ...] | None = None  # the first input operand's dims


def backend_of(name: str, short_name: str) -> tuple[str, str]:
    """The backend a kernel name says (table :data:`lever_table.BACKENDS`), and why; ("", "")
    when no convention matches."""
    for text in (short_name, name):
        for key, rx, why in _BACKENDS:
            if rx.search(text):
                return key, why
    return "", ""


def _wave(gfx: str | None) -> int | None:
    for prefix, size, _ in LT.WAVE_SIZE:
        if gfx and gfx.startswith(prefix):
            return size
    return None


def _verdict_facts(e: Entry) -> dict[str, str]:
    """The verdict's facts: at_pct, up_to (headroom), saturated, gain_unknown."""
    f: dict[str, str] = {}
    pct, te, sp = e.roofline_pct, e.target_eff, e.attainable_speedup
    if e.has_verdict and pct is not None and te is not None:
        f["at_pct"] = (f"at {pct:.0%} of its {e.roof_axis or e.bound_type} roof "
                       f"(target {te:.0%}, {e.bound_type}-bound)")
    if e.headroom_class == "saturated" and pct is not None and te is not None:
        f["saturated"] = f"saturated: at {pct:.0%} of its roof against a target of {te:.0%}"
        if sp is not None:
            f["left"] = f"{sp:.2f}×"
    elif e.has_verdict and sp is not None:
        gain = e.expected_e2e_gain_pct
        said = f" ({gain:.2f}% end to end)" if gain is not None else ""
        caution = f"; model caution: {e.model_caution}" if e.model_caution else ""
        f["up_to"] = f"bounded by the roof: up to {sp:.2f}× on this kernel{said}{caution}"
    if not e.has_verdict:
        why = e.no_verdict_reason or "no headroom verdict"
        f["gain_unknown"] = (f"gain not knowable: {why}; a verdict (recorded shapes, counters, "
                             "or the step's idle time) would bound it")
        f["up_to"] = f["gain_unknown"]
        f["at_pct"] = f"no verdict ({why})"
    return f


def _gemm_dims(e: Entry, launch: LaunchFacts) -> tuple[int | None, int | None, int | None]:
    """(M, K, N) from the GEMM label, else M and K from the recorded first input."""
    m = _GEMM_LABEL.match(e.label or "")
    if m is not None:
        a = [int(d) for d in m.group(1).split("×") if d]
        if a:
            return math.prod(a[:-1]) if len(a) > 1 else 1, a[-1], int(m.group(2))
    if launch.dims and len(launch.dims) >= 2:
        # an MoE op records the layer's input: its tokens, but not every stage's K
        k = launch.dims[-1] if e.op_class == "gemm" else None
        return math.prod(launch.dims[:-1]), k, None
    return None, None, None


def _shape_facts(e: Entry, launch: LaunchFacts) -> dict[str, str]:
    f: dict[str, str] = {}
    m, k, n = _gemm_dims(e, launch)
    if m is None:
        return f
    if k is not None:
        f["shape"] = f"{m}×{k}→{n}" if n is not None else f"M={m}, K={k}"
        f["for_shape"] = f" for GEMM {f['shape']}"
    if m <= LT.SMALL_M and (k is None or n is None or k >= n):
        against = (f" against K = {k} ≥ N = {n}" if k is not None and n is not None
                   else f", K = {k}" if k is not None else "")
        f["small_m"] = (f"M = {m} tokens (≤ {LT.SMALL_M}){against}: few output tiles along M, "
                        "a long K loop per program")
    return f


def _name_facts(e: Entry, backend: str) -> dict[str, str]:
    f: dict[str, str] = {}
    name = e.name or e.short_name
    if backend == "hipblaslt" and (t := _TENSILE_TILE.search(name)):
        mi = _TENSILE_MI.search(name)
        f["tile"] = (f"macro tile MT{t.group(1)}x{t.group(2)} (DepthU {t.group(3)})"
                     + (f", MFMA {mi.group(1)}" if mi else ""))
        if g := _TENSILE_GSU.search(name):
            f["gsu"] = f", {g.group(1)}"
    if backend == "cublas" and (t := _CUBLAS_TILE.search(name)):
        s = _CUBLAS_SPLIT.search(name)
        f["cublas_tile"] = f"tile {t.group(1)}" + (f", {s.group(1)}" if s else "")
    if backend == "triton" and (b := _OGS_BLOCKS.match(e.short_name) or _OGS_BLOCKS.match(name)):
        f["blocks"] = (f"BLOCK_M={b.group(1)} BLOCK_N={b.group(2)} BLOCK_K={b.group(3)} "
                       f"SPLIT_K={b.group(4)}")
    return f


def _launch_fact(launch: LaunchFacts, gfx: str | None) -> dict[str, str]:
    if launch.grid is None or launch.block is None:
        return {}
    threads = math.prod(launch.block)
    wave = _wave(gfx)
    warps = (f", {threads // wave} warps of {wave}" if wave and threads % wave == 0 else "")
    grid = "×".join(str(g) for g in launch.grid)
    block = "×".join(str(b) for b in launch.block)
    said = f"grid {grid}, block {block}{warps}"
    return {"launch": f" ({said})", "grid": said}


def _fusion_facts(e: Entry, siblings: Sequence[Entry]) -> dict[str, str]:
    """The elementwise heads that read and write this head's recorded shape."""
    mine = _OP_LABEL.match(e.label or "")
    if e.op_class != "elementwise" or mine is None:
        return {}
    shape, dtype = mine.group(3), mine.group(2)
    others = [s for s in siblings if s is not e and s.op_class == "elementwise"
              and (m := _OP_LABEL.match(s.label or "")) is not None and m.group(3) == shape]
    if not others:
        return {}
    pct = sum(s.pct_gpu_time or 0.0 for s in others)
    dims = [int(d) for d in shape.split(",") if d]
    size, _ = dtype_bytes(canonical_dtype(dtype) or dtype)
    nbytes = math.prod(dims) * size
    with_ = ", ".join(f"`{(_OP_LABEL.match(s.label or '') or mine).group(1)}` "
                      f"[{s.short_name}] ({s.pct_gpu_time or 0.0:.2f}%)" for s in others)
    return {"fuse_with": with_, "fuse_pct": f"{pct:.2f}%", "fuse_shape": f"[{shape}] {dtype}",
            "fuse_bytes": f"{nbytes / 1e6:.1f} MB"}


def _moe_facts(e: Entry, siblings: Sequence[Entry]) -> dict[str, str]:
    """The MoE stage beside this one, when this one reaches a lower roofline % than it."""
    me = _MOE_STAGE.search(e.model or "")
    pct, sp = e.roofline_pct, e.attainable_speedup
    if e.op_class != "moe" or me is None or not pct or sp is None or not e.has_verdict:
        return {}
    for s in siblings:
        other = _MOE_STAGE.search(s.model or "")
        if (s is e or s.op_class != "moe" or other is None or other.group(1) == me.group(1)
                or s.roofline_pct is None or s.roofline_pct <= pct or not s.has_verdict):
            continue
        ratio = min(s.roofline_pct / pct, sp)
        gain = expected_e2e_gain_pct(e.pct_gpu_time or 0.0, ratio)
        return {"sibling": (f"its sibling MoE stage {other.group(1)} `{s.short_name}` reaches "
                            f"{s.roofline_pct:.0%} of its roof"),
                "lag": (f"to its sibling's {s.roofline_pct:.0%}: {ratio:.2f}× on this kernel "
                        f"({gain:.2f}% end to end); bounded by the roof: up to {sp:.2f}×")}
    return {}


def _dispatch_fact(e: Entry) -> dict[str, str]:
    if not e.dispatch_bound or e.t_ms is None:
        return {}
    return {"t_us": (f"{e.t_ms * 1000:.1f} µs per launch, within {DISPATCH_FACTOR:g}× the "
                     f"~{LAUNCH_OVERHEAD_S * 1e6:g} µs launch overhead: the launch is the cost")}


def facts_of(e: Entry, siblings: Sequence[Entry], launch: LaunchFacts, gfx: str | None
             ) -> tuple[str, dict[str, str]]:
    """The entry's backend and every fact the table's texts may name."""
    backend, why = backend_of(e.name, e.short_name)
    f = _verdict_facts(e)
    f.update(_shape_facts(e, launch))
    f.update(_name_facts(e, backend))
    f.update(_launch_fact(launch, gfx))
    f.update(_fusion_facts(e, siblings))
    f.update(_moe_facts(e, siblings))
    f.update(_dispatch_fact(e))
    f["backend"] = backend or "backend not recognised from the name"
    if e.op_class == "attn":
        f["alt_backends"] = LT.ATTENTION_ALTERNATIVES.get(backend, LT.ATTENTION_ALTERNATIVES[""])
    return backend, f


def _names(text: str) -> set[str]:
    return {field for _, field, _, _ in string.Formatter().parse(text) if field}


def _fill(text: str, facts: Mapping[str, str]) -> str | None:
    need = _names(text)
    if any(n not in facts and n not in _OPTIONAL for n in need):
        return None
    return text.format_map({n: facts.get(n, "") for n in need})


def _applies(row: LT.LeverRow, e: Entry, backend: str, facts: Mapping[str, str]) -> bool:
    return (not any(f in facts for f in row.unless)
            and (not row.op_classes or e.op_class in row.op_classes)
            and (not row.backends or backend in row.backends)
            and (not row.bounds or e.bound_type in row.bounds)
            and (not row.headroom or e.headroom_class in row.headroom)
            and (row.editable is None or e.editable is row.editable))


def _rows(row: LT.LeverRow, e: Entry, facts: Mapping[str, str]) -> Iterable[Lever]:
    """The lever(s) one row makes: the byte-reduction row, one per §7.1 lever of the entry."""
    byte_levers = ([lv for lv in e.byte_reduction_levers if not lv.startswith("constraint:")]
                   if "byte_lever" in _names(row.action) else [""])
    for lv in byte_levers:
        here = {**facts, "byte_lever": lv} if lv else facts
        action, evidence, effect = (_fill(t, here) for t in (row.action, row.evidence, row.effect))
        if action is None or evidence is None or effect is None:
            return
        yield Lever(key=row.key, name=row.name, family=row.family, action=action,
                    evidence=evidence, expected_effect=effect, source=row.source)


def select(e: Entry, siblings: Sequence[Entry], launch: LaunchFacts = LaunchFacts(),
           gfx: str | None = None) -> list[Lever]:
    """The head's ranked levers (at most :data:`MAX_LEVERS`; a saturated head keeps every
    byte-reduction lever of spec §7.1)."""
    backend, facts = facts_of(e, siblings, launch, gfx)
    out: list[Lever] = []
    for row in LT.TABLE:
        if _applies(row, e, backend, facts):
            out += list(_rows(row, e, facts))
    keep = [lv for lv in out if lv.family == "byte_reduction"]
    rest = [lv for lv in out if lv.family != "byte_reduction"]
    return keep + rest[:max(MAX_LEVERS - len(keep), 1 if rest else 0)]


def attach(entries: Sequence[Entry], launches: Mapping[str, LaunchFacts], gfx: str | None
           ) -> None:
    """Set every entry's ``levers`` (the heads beside it are its siblings)."""
    for e in entries:
        e.levers = select(e, entries, launches.get(e.short_name, LaunchFacts()), gfx)
