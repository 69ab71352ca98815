"""The served model found from what the trace records, in the local Hugging Face cache, offline.

``roofline import`` and ``roofline ingest`` without ``--model``/``--model-config`` call
:func:`look_up` after the import, with the Top-N document just built and the files it came
from. The model is settled by evidence, never by a guess:

1. **A field that names it.** A trace's header (its top-level keys before ``traceEvents``) may
   name the model: TraceLens/moca record ``metadata.experiment.repo_id``; ``model``,
   ``model_name``, ``served_model_name`` and ``model_id`` (top level or under ``metadata``)
   are read too. A Hub repo id is looked up in the cache (``core.model_lookup``), a local
   path to a model directory or ``config.json`` is read where it exists. The config found is
   taken unless the trace's dims contradict it.
2. **The model's class.** The ``nn.Module`` class names the trace records: the Top-N
   instances' module paths (the innermost modules around each launch) and every
   ``nn.Module: <Class>_<n>`` span of the graph-capture traces (their outermost module is the
   model itself, ``GptOssForCausalLM``). A cached config's ``architectures`` entry is seen in
   the trace when the class itself is there, or its backbone or decoder layer
   (``Qwen2ForCausalLM``: ``Qwen2Model``, ``Qwen2DecoderLayer``).
3. **The dims.** Of the cached configs of a class seen, only those whose dims agree with the
   shapes the trace recorded survive: the hidden size (a residual norm's weight, or the one
   dim every GEMM weight shares) must be the config's, every aten GEMM weight that has the
   hidden size on one side must have on the other a width of the config (q/k/v, fused qkv,
   attention output, MLP ``intermediate_size`` or the fused gate/up, vocab, the MoE router's
   expert count, the MLA ranks), and the heads/head size/MLP width read by
   ``core.trace_dims`` must be the config's, all at one tensor-parallel degree (one that
   divides the world size the trace records, or a power of two up to 64 when it records
   none). At least one quantity besides the hidden size must agree.

Exactly one survivor: its ``config.json`` is the :class:`~roofline_tui.importers.finish.
ConfigChoice`, with how it was found and the evidence (written to ``config.source.json``).
None, or several: nothing is chosen, and :attr:`Lookup.reason` says in one line which
candidates there were (or why none) so the caller can say which flag to give.

Strictly offline: only the file system is read; the cache folder is found as
``core.model_lookup.hf_cache_dir`` finds it (each repo's ``refs/main`` snapshot). Everything
read is bounded: a few trace headers, the capture traces' text (:data:`MAX_SCAN_BYTES` and
:data:`MAX_SCAN_SECONDS` of this thread's CPU time in all), :data:`MAX_REPOS` cache entries,
configs of at most :data:`MAX_CONFIG_BYTES`. An import with nothing to look up (no field naming
a model, no module class) reads no cache and loads none of the engine's models.
"""

from __future__ import annotations

import functools
import gzip
import io
import os
import re
import time
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roofline_tui.core.lazy_re import lazy_compile
from roofline_tui.core.textsafe import printable

if TYPE_CHECKING:
    from roofline_tui.core.model_config import ModelShape
    from roofline_tui.core.trace_dims import TraceDims
    from roofline_tui.importers.finish import ConfigChoice

__all__ = ["Evidence", "Lookup", "gather", "look_up", "module_classes", "named_model"]

# bounds on what is read
MAX_TRACE_HEADERS = 4  # traces whose header is read for a model name
MAX_CAPTURE_FILES = 16  # capture traces scanned for module names
MAX_SCAN_BYTES = 1 << 30  # decompressed bytes scanned over all capture traces ...
MAX_SCAN_SECONDS = 5.0  # ... and the reading thread's CPU time they may take
MAX_REPOS = 4096  # cache entries looked at
MAX_CONFIG_BYTES = 4 << 20  # a config.json larger than this is not a model's config
MAX_CLASSES = 512  # distinct module class names kept
MAX_INSTANCES = 20_000
MAX_SHOWN = 4  # candidates named in one line
_SCAN_CHUNK = 1 << 20
_TP_DEGREES = (1, 2, 4, 8, 16, 32, 64)
_VOCAB_PAD = 64  # vLLM/SGLang pad the vocab to a multiple of this before splitting it

_CLASS = lazy_compile(r"[A-Za-z_][A-Za-z0-9_]{0,100}")
_INDEX = lazy_compile(r"_\d+$")
# "nn.Module: GptOssForCausalLM_0" as a JSON string value (compiled on first use)
_MODULE_SPAN = rb'"nn\.Module: ([A-Za-z_][A-Za-z0-9_]{0,100})"'
_OVERLAP = 160  # longer than any match above: a match cut by a chunk end is found in the next
_ARCH_SUFFIX = lazy_compile(r"(ForCausalLM|ForConditionalGeneration|LMHeadModel)$")
# the classes of a model's own stack that name it (a backbone, its decoder layer, the LM head)
_STEM_CLASSES = ("Model", "DecoderLayer", "ForCausalLM", "ForConditionalGeneration")

# header fields that name the served model, most specific first
_NAME_FIELDS: tuple[tuple[str, ...], ...] = (
    ("metadata", "experiment", "repo_id"),
    ("metadata", "served_model_name"),
    ("metadata", "model_name"),
    ("metadata", "model_id"),
    ("metadata", "model"),
    ("served_model_name",),
    ("model_name",),
    ("model_id",),
    ("model",),
)

_NOTHING_MORE = "nothing but the hidden size to compare"

_GEMMS = frozenset({"aten::mm", "aten::matmul", "aten::addmm", "aten::linear"})


# --------------------------------------------------------------------------- evidence


@dataclass(frozen=True)
class Weight:
    """A GEMM weight the trace recorded: ``K`` (the reduced dim) and ``N`` (the output's)."""

    k: int
    n: int
    op: str

    def shown(self) -> str:
        return f"{self.op} weight K={self.k} N={self.n}"


@dataclass
class Evidence:
    """What the trace records about its model (see the module docstring)."""

    named: list[tuple[str, str]] = field(default_factory=list)  # (model, field it came from)
    classes: dict[str, str] = field(default_factory=dict)  # class name -> where seen
    hidden: int | None = None
    hidden_from: str = ""
    weights: list[Weight] = field(default_factory=list)
    dims: TraceDims | None = None
    world_size: int | None = None
    notes: list[str] = field(default_factory=list)

    def tp_degrees(self) -> tuple[int, ...]:
        if self.world_size:
            return tuple(t for t in range(1, self.world_size + 1) if self.world_size % t == 0)
        return _TP_DEGREES


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _instances(doc: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    entries = doc.get("top_kernels")
    if not isinstance(entries, list):
        return
    seen = 0
    for entry in entries:
        instances = _mapping(_mapping(entry).get("x_roofline")).get("instances")
        if not isinstance(instances, list):
            continue
        for inst in instances:
            seen += 1
            if seen > MAX_INSTANCES:
                return
            if isinstance(inst, Mapping):
                yield inst


def _class_name(raw: str) -> str | None:
    name = _INDEX.sub("", raw.strip())
    return name if _CLASS.fullmatch(name) else None


def _add_class(classes: dict[str, str], name: str | None, where: str) -> None:
    if name and name not in classes and len(classes) < MAX_CLASSES:
        classes[name] = where


def _dims(value: Any) -> tuple[int, ...] | None:
    if not isinstance(value, list) or len(value) > 8:
        return None
    if not all(isinstance(d, int) and not isinstance(d, bool) and 0 < d < 1 << 40 for d in value):
        return None
    return tuple(value)


def _weight(inst: Mapping[str, Any]) -> Weight | None:
    """K and N of an aten GEMM's weight, from the op's fixed argument order."""
    op = inst.get("op")
    args = inst.get("args")
    if op not in _GEMMS or not isinstance(args, list):
        return None

    def dims(i: int) -> tuple[int, ...] | None:
        return _dims(_mapping(args[i]).get("dims")) if i < len(args) else None

    if op == "aten::linear":  # (input [.., K], weight [N, K])
        x, w = dims(0), dims(1)
        if x and w and len(w) == 2 and x[-1] == w[1]:
            return Weight(w[1], w[0], op)
        return None
    first = 1 if op == "aten::addmm" else 0  # addmm(bias, input, weight [K, N])
    x, w = dims(first), dims(first + 1)
    if x and w and len(w) == 2 and x[-1] == w[0]:
        return Weight(w[0], w[1], str(op))
    return None


def _hidden(ev: Evidence) -> None:
    dims = ev.dims
    if dims is not None and dims.hidden_size is not None:
        ev.hidden = dims.hidden_size
        ev.hidden_from = f"hidden_size {dims.hidden_size} from {dims.evidence_for('hidden_size')}"
        return
    if not ev.weights:
        return
    shared = set.intersection(*({w.k, w.n} for w in ev.weights))
    if len(shared) == 1:
        (ev.hidden,) = shared
        ev.hidden_from = (f"hidden_size {ev.hidden}: the one dim all {len(ev.weights)} GEMM "
                          "weight shape(s) of the trace share")
    elif shared:
        ev.notes.append(f"the GEMM weights share {sorted(shared)}: no single hidden size")


@functools.cache
def _module_span() -> re.Pattern[bytes]:
    return re.compile(_MODULE_SPAN)


def module_classes(path: Path, budget: list[int], *,
                   seconds: float = MAX_SCAN_SECONDS) -> list[str]:
    """The ``nn.Module`` class names of a chrome trace (gzipped or not), in order of first
    appearance; ``budget[0]`` is the decompressed bytes left to scan (shared by the files of
    one look-up, spent as read), ``seconds`` the reading thread's CPU time this file may take.
    An unreadable or damaged file gives what was read."""
    span = _module_span()
    stop = time.thread_time() + seconds
    found: dict[str, None] = {}
    try:
        raw = open(path, "rb")  # noqa: SIM115 - closed below
    except (OSError, ValueError):
        return []
    try:
        head = raw.read(2)
        raw.seek(0)
        fh: Any = gzip.GzipFile(fileobj=raw, mode="rb") if head == b"\x1f\x8b" else raw
        tail = b""
        while budget[0] > 0 and time.thread_time() < stop:
            chunk = fh.read(min(_SCAN_CHUNK, budget[0]))
            if not chunk:
                break
            budget[0] -= len(chunk)
            buf = tail + chunk
            keep = max(0, len(buf) - _OVERLAP)
            for m in span.finditer(buf):
                if m.start() >= keep:
                    break
                name = _class_name(m.group(1).decode("ascii"))
                if name and len(found) < MAX_CLASSES:
                    found.setdefault(name)
            tail = buf[keep:]
        for m in span.finditer(tail):
            name = _class_name(m.group(1).decode("ascii"))
            if name and len(found) < MAX_CLASSES:
                found.setdefault(name)
    except (OSError, EOFError, zlib.error, ValueError):
        pass
    finally:
        raw.close()
    return list(found)


def trace_header(path: Path) -> dict[str, Any]:
    """The top-level keys of a chrome trace that come before its ``traceEvents`` (where the
    profiler writes its metadata); ``{}`` for a file that cannot be read so far."""
    from roofline_tui.importers.common import ImportProblem
    from roofline_tui.importers.jsonstream import TraceEventStream

    try:
        raw = open(path, "rb")  # noqa: SIM115 - closed below
    except (OSError, ValueError):
        return {}
    try:
        head = raw.read(2)
        raw.seek(0)
        binary: Any = gzip.GzipFile(fileobj=raw, mode="rb") if head == b"\x1f\x8b" else raw
        text = io.TextIOWrapper(binary, encoding="utf-8-sig", errors="strict")
        stream = TraceEventStream(text)
        next(stream.event_batches(), None)  # the header is read up to traceEvents' start
        return stream.header
    except (ImportProblem, OSError, EOFError, zlib.error, ValueError, MemoryError):
        return {}
    finally:
        raw.close()


def named_model(header: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(model, field)`` when a header field names the served model (a Hub repo id or a
    local path), else ``None``."""
    for keys in _NAME_FIELDS:
        value: Any = header
        for key in keys:
            value = _mapping(value).get(key)
        if isinstance(value, str) and value.strip() and len(value) <= 300:
            return value.strip(), ".".join(keys)
    return None


def gather(doc: Mapping[str, Any], *, traces: Sequence[Path] = (),
           captures: Sequence[Path] = (), dims: bool = True) -> Evidence:
    """The evidence of the Top-N ``doc``, the headers of ``traces`` and the module names of
    the graph-capture traces ``captures``; with ``dims=False`` the model dims are left to
    :func:`settle_dims` (reading them loads the engine's models: an import with nothing to
    look up does not)."""
    ev = Evidence()
    for path in list(traces)[:MAX_TRACE_HEADERS]:
        got = named_model(trace_header(Path(path)))
        if got is not None:
            ev.named.append((got[0], f"{got[1]} of {printable(Path(path).name, limit=120)}"))
            break
    seen_weights: set[tuple[int, int]] = set()
    for inst in _instances(doc):
        module = inst.get("module")
        if isinstance(module, str):
            for part in module.split("/")[:8]:
                _add_class(ev.classes, _class_name(part), "the Top-N's module paths")
        w = _weight(inst)
        if w is not None and (w.k, w.n) not in seen_weights:
            seen_weights.add((w.k, w.n))
            ev.weights.append(w)
    files = list(dict.fromkeys(Path(p) for p in captures))
    joined = _joined_captures(doc)
    if joined:  # the captures the import joined are this run's: only those are read
        files = [p for p in files if p.name in joined] or files
    budget = [MAX_SCAN_BYTES]
    stop = time.thread_time() + MAX_SCAN_SECONDS
    for path in files[:MAX_CAPTURE_FILES]:
        where = f"capture trace {printable(path.name, limit=120)}"
        left = stop - time.thread_time()
        if left <= 0 or budget[0] <= 0:
            ev.notes.append("the capture traces' module names were read within a bound "
                            f"({MAX_SCAN_BYTES >> 20} MiB, {MAX_SCAN_SECONDS:g} s)")
            break
        for name in module_classes(path, budget, seconds=left):
            _add_class(ev.classes, name, where)
    world = _mapping(_mapping(doc.get("x_roofline")).get("distributed")).get("world_size")
    if isinstance(world, int) and not isinstance(world, bool) and 1 <= world <= 4096:
        ev.world_size = world
    if dims:
        settle_dims(ev, doc)
    return ev


def _joined_captures(doc: Mapping[str, Any]) -> set[str]:
    """The file names of the graph-capture traces the import joined (``x_roofline.captures``)."""
    used = _mapping(doc.get("x_roofline")).get("captures")
    if not isinstance(used, list):
        return set()
    return {c["file"] for c in used[:256]
            if isinstance(c, Mapping) and isinstance(c.get("file"), str)}


def settle_dims(ev: Evidence, doc: Mapping[str, Any]) -> None:
    """``ev``'s model dims (``core.trace_dims``) and hidden size, from ``doc``'s instances."""
    from roofline_tui.core.trace_dims import dims_from_instances

    entries = doc.get("top_kernels")
    ev.dims = dims_from_instances(entries if isinstance(entries, list) else [])
    _hidden(ev)


# --------------------------------------------------------------------------- agreement


@dataclass
class Agreement:
    ok: bool
    tp: int
    agreed: list[str]
    conflicts: list[str]


def _widths(shape: ModelShape, t: int) -> dict[int, str] | None:
    """The GEMM widths (the dim other than the hidden size) of ``shape`` on one rank of
    tensor parallelism ``t``, each with its name; ``None`` when ``t`` cannot split it."""
    nq, nkv, d = shape.num_attention_heads, shape.num_kv_heads, shape.head_dim
    if nq % t:
        return None
    if nkv >= t:
        if nkv % t:
            return None
        kv = nkv // t
    elif t % nkv == 0:
        kv = 1  # fewer KV heads than ranks: each rank keeps a copy of one
    else:
        return None
    out: dict[int, str] = {}

    def add(width: int | None, name: str, split: bool = True) -> None:
        if width is None or width <= 0:
            return
        if split:
            if width % t:
                return
            width //= t
        out.setdefault(width, name)

    if shape.attention_kind == "mla" and shape.mla is not None:
        m = shape.mla
        add(m.q_lora_rank, "q_lora_rank", split=False)
        add(m.kv_lora_rank + m.qk_rope_head_dim, "kv_lora_rank + qk_rope_head_dim", split=False)
        add(nq * (m.qk_nope_head_dim + m.qk_rope_head_dim), "q projection")
        add(nq * m.v_head_dim, "attention output")
    else:
        q, k = nq * d // t, kv * d
        out.setdefault(q + 2 * k, "qkv projection")
        out.setdefault(q, "q projection / attention output")
        out.setdefault(k, "k/v projection")
        out.setdefault(2 * k, "kv projection")
    sizes = [shape.intermediate_size] + [mk.intermediate_size for mk in shape.mlp_kinds]
    for size in sizes:
        add(size, "intermediate_size")
        add(2 * size if size else None, "fused gate/up projection (2 x intermediate_size)")
    for size in (shape.moe_intermediate_size, shape.shared_expert_intermediate_size):
        add(size, "moe intermediate size")
        add(2 * size if size else None, "fused expert gate/up (2 x moe intermediate size)")
    if shape.num_experts:
        add(shape.num_experts, "MoE router (num_experts)", split=False)
    if shape.num_shared_experts or shape.shared_expert_intermediate_size:
        add(1, "shared expert gate", split=False)
    if shape.vocab_size:
        v = shape.vocab_size
        padded = -(-v // _VOCAB_PAD) * _VOCAB_PAD
        add(v, "vocab_size", split=False)
        add(v, "vocab_size")
        add(padded, "vocab_size padded", split=False)
        add(padded, "vocab_size padded")
    return out


def _agree_at(shape: ModelShape, ev: Evidence, t: int) -> Agreement | None:
    widths = _widths(shape, t)
    if widths is None:
        return None
    hidden = shape.hidden_size
    agreed: list[str] = []
    conflicts: list[str] = []
    for w in ev.weights:
        if hidden not in (w.k, w.n):
            continue
        other = w.n if w.k == hidden else w.k
        name = widths.get(other)
        if name is None:
            conflicts.append(f"{w.shown()}: {other} is no width of this config")
        elif f"{name} {other}" not in agreed:
            agreed.append(f"{name} {other}")
    dims = ev.dims
    if dims is not None:
        kv = shape.num_kv_heads // t if shape.num_kv_heads >= t else 1
        checks: list[tuple[str, int | None, int | None]] = [
            ("num_attention_heads", dims.num_attention_heads, shape.num_attention_heads // t),
            ("num_key_value_heads", dims.num_kv_heads, kv),
        ]
        if shape.attention_kind != "mla":
            checks.append(("head_dim", dims.head_dim, shape.head_dim))
        if dims.intermediate_size is not None and shape.intermediate_size:
            checks.append(("intermediate_size", dims.intermediate_size,
                           shape.intermediate_size // t if shape.intermediate_size % t == 0
                           else None))
        for name, seen, want in checks:
            if seen is None:
                continue
            if seen == want:
                if f"{name} {seen}" not in agreed:
                    agreed.append(f"{name} {seen}")
            else:
                conflicts.append(f"the trace's {name} is {seen}, this config's "
                                 f"{want if want is not None else 'does not split'}")
    return Agreement(ok=not conflicts and bool(agreed), tp=t, agreed=agreed,
                     conflicts=conflicts)


def agreement(shape: ModelShape, ev: Evidence) -> Agreement:
    """Whether ``shape``'s dims agree with the trace's (module docstring), at the smallest
    tensor-parallel degree they agree at; else the conflicts at the first degree tried."""
    if ev.hidden is None:
        return Agreement(False, 1, [], ["the trace records no hidden size (no norm weight, "
                                        "no GEMM weight shapes)"])
    if shape.hidden_size != ev.hidden:
        return Agreement(False, 1, [], [f"hidden_size {shape.hidden_size}, the trace's is "
                                        f"{ev.hidden}"])
    first: Agreement | None = None
    for t in ev.tp_degrees():
        got = _agree_at(shape, ev, t)
        if got is None:
            continue
        if got.ok:
            return got
        first = first or got
    if first is None:
        return Agreement(False, 1, [], ["its heads do not split over the trace's world size"])
    if not first.conflicts:
        first.conflicts.append(_NOTHING_MORE)
    return first


# --------------------------------------------------------------------------- the cache


@dataclass
class Candidate:
    repo: str
    path: Path
    data: bytes
    shape: ModelShape
    arch: str
    seen_as: str  # the class the trace recorded, and where


def _architectures(raw: Any) -> list[str]:
    out: list[str] = []
    for cfg in (raw, _mapping(raw).get("text_config"), _mapping(raw).get("llm_config")):
        archs = _mapping(cfg).get("architectures")
        if isinstance(archs, list):
            out.extend(a for a in archs[:8] if isinstance(a, str) and _CLASS.fullmatch(a))
    return list(dict.fromkeys(out))


def arch_seen(arch: str, classes: Mapping[str, str]) -> str | None:
    """How the trace's module classes show architecture ``arch``: the class itself, or the
    same model's backbone / decoder layer / LM head (``Qwen2ForCausalLM``: ``Qwen2Model``)."""
    if arch in classes:
        return f"{arch} in {classes[arch]}"
    m = _ARCH_SUFFIX.search(arch)
    stem = arch[: m.start()] if m else ""
    for suffix in _STEM_CLASSES if stem else ():
        name = stem + suffix
        if name in classes:
            return f"{name} in {classes[name]}"
    return None


def _cached_repos(cache: Path) -> list[str]:
    try:
        entries = os.scandir(cache)
    except (OSError, ValueError):
        return []
    out: list[str] = []
    with entries:
        for n, entry in enumerate(entries):
            if n >= MAX_REPOS:
                break
            name = entry.name
            if not name.startswith("models--"):
                continue
            parts = name.removeprefix("models--").split("--")
            if len(parts) == 2 and all(parts):
                out.append("/".join(parts))
    return sorted(out)


def _read_config(path: Path) -> tuple[bytes, Any] | None:
    import json

    from roofline_tui.core.store import ReadProblem, read_bytes

    try:
        data = read_bytes(path, max_bytes=MAX_CONFIG_BYTES)
        return data, json.loads(data)
    except (ReadProblem, OSError, ValueError, RecursionError):
        return None


def _shape(raw: Any) -> ModelShape | None:
    from roofline_tui.core.model_config import ConfigProblem, normalize_config

    if not isinstance(raw, dict):
        return None
    try:
        return normalize_config(raw)
    except (ConfigProblem, ValueError, TypeError, KeyError):
        return None


def candidates(classes: Mapping[str, str]) -> tuple[list[Candidate], Path, int]:
    """The cached configs (refs/main) whose architecture the trace's classes show, the cache
    folder and how many repos it holds."""
    from roofline_tui.core.model_lookup import find_cached_config, hf_cache_dir

    cache = hf_cache_dir()
    repos = _cached_repos(cache)
    out: list[Candidate] = []
    for repo in repos:
        path, _account = find_cached_config(repo)
        if path is None:
            continue
        got = _read_config(path)
        if got is None:
            continue
        data, raw = got
        for arch in _architectures(raw):
            seen = arch_seen(arch, classes)
            if seen is None:
                continue
            shape = _shape(raw)
            if shape is not None:
                out.append(Candidate(repo, path, data, shape, arch, seen))
            break
    return out, cache, len(repos)


# --------------------------------------------------------------------------- the look-up


@dataclass
class Lookup:
    """The config found (``choice``), or why none was (``reason``, one line, no flag named:
    the caller says which to give)."""

    choice: ConfigChoice | None
    reason: str


def _names(cands: Iterable[Candidate]) -> str:
    names = [printable(c.repo, limit=100) for c in cands]
    more = f" and {len(names) - MAX_SHOWN} more" if len(names) > MAX_SHOWN else ""
    return ", ".join(names[:MAX_SHOWN]) + more


def _choice(path: Path, data: bytes, how: str, evidence: list[str]) -> ConfigChoice:
    from roofline_tui.importers.finish import ConfigChoice

    return ConfigChoice(path=path, how=printable(how, limit=280), data=data,
                        evidence=tuple(printable(line, limit=600) for line in evidence))


def _brief(a: Agreement, ev: Evidence) -> str:
    """``hidden_size 2880, qkv projection 5120, vocab_size 201088 and 4 more``."""
    shown = [f"hidden_size {ev.hidden}", *a.agreed[:2]]
    more = f" and {len(a.agreed) - 2} more" if len(a.agreed) > 2 else ""
    return ", ".join(shown) + more + _tp(a, ev)


def _tp(a: Agreement, ev: Evidence) -> str:
    if a.tp == 1:
        return ""
    recorded = (f"the trace's world size {ev.world_size}" if ev.world_size
                else "the trace records no world size")
    return f" at tensor parallelism {a.tp} ({recorded})"


def _named(ev: Evidence) -> tuple[Lookup | None, str]:
    """The model a trace field names: the look-up's answer, or ``None`` and a prefix for the
    reason when that model is not here (the classes are tried next)."""
    from roofline_tui.core.model_lookup import find_cached_config

    model, where = ev.named[0]
    shown = printable(model, limit=120)
    local = Path(model).expanduser() if model.startswith(("/", "~")) else None
    if local is not None:
        path: Path = local / "config.json" if local.is_dir() else local
        account = f"{printable(path, limit=200)} on this machine"
        if path.name != "config.json" or not path.is_file():
            return None, f"the trace's {where} names {shown}, no model config.json here; "
    else:
        cached, account = find_cached_config(model)
        if cached is None:
            return None, f"the trace's {where} names {shown}: {printable(account)}; "
        path = cached
    got = _read_config(path)
    shape = _shape(got[1]) if got is not None else None
    if got is None or shape is None:
        return Lookup(None, f"the trace's {where} names {shown}, whose config.json at "
                            f"{printable(path, limit=200)} describes no model"), ""
    if ev.hidden is None:
        agreed = brief = "the trace settles no hidden size to check it against"
    else:
        a = agreement(shape, ev)
        if not a.ok and a.conflicts != [_NOTHING_MORE]:  # (the name is the evidence here)
            return Lookup(None, f"the trace's {where} names {shown}, but its config disagrees "
                                f"with the trace's dims ({'; '.join(a.conflicts[:3])})"), ""
        agreed = f"{', '.join([f'hidden_size {ev.hidden}', *a.agreed])} agree{_tp(a, ev)}"
        brief = f"its dims agree ({_brief(a, ev)})"
    how = f"looked up: the trace's {where} names {shown}; {brief}"
    evidence = [f"the trace's {where}: {shown}", account, ev.hidden_from, agreed]
    return Lookup(_choice(path, got[0], how, [e for e in evidence if e]), ""), ""


def look_up(doc: Mapping[str, Any], *, traces: Sequence[Path] = (),
            captures: Sequence[Path] = ()) -> Lookup:
    """The served model's config from what ``doc`` and its files record (module docstring).
    Never raises for bad input, never reads the network."""
    try:
        ev = gather(doc, traces=traces, captures=captures, dims=False)
        if ev.named or ev.classes:
            settle_dims(ev, doc)
    except (OSError, ValueError, RecursionError, MemoryError) as exc:
        return Lookup(None, f"the trace could not be read for its model ({type(exc).__name__})")
    prefix = ""
    if ev.named:
        found, prefix = _named(ev)
        if found is not None:
            return found
    if not ev.classes:
        return Lookup(None, prefix + "the profile names no model and records no nn.Module class "
                      "(a PyTorch trace taken with with_modules=True, or the run's "
                      "graph-capture trace, would)")
    cands, cache, n_repos = candidates(ev.classes)
    where = printable(cache, limit=200)
    if not cands:
        shown = ", ".join(printable(c, limit=60) for c in list(ev.classes)[:6])
        held = f"{n_repos} model(s)" if n_repos else "no models"
        return Lookup(None, prefix + f"no config in the Hugging Face cache {where} ({held}) "
                      f"is of an architecture the trace's module classes show ({shown})")
    results = [(c, agreement(c.shape, ev)) for c in cands]
    kept = [(c, a) for c, a in results if a.ok]
    archs = ", ".join(dict.fromkeys(c.arch for c in cands))
    if len(kept) > 1:
        return Lookup(None, prefix + f"{len(kept)} cached {archs} configs agree with the "
                      f"trace's dims ({_names(c for c, _ in kept)}): the trace does not tell "
                      "them apart")
    if not kept:
        why = "; ".join(f"{printable(c.repo, limit=100)}: {a.conflicts[0]}"
                        for c, a in results[:MAX_SHOWN])
        return Lookup(None, prefix + f"no cached {archs} config agrees with the trace's dims "
                      f"({why})")
    (c, a), = kept
    dropped = [(d, da) for d, da in results if d is not c]
    agreed = ", ".join(a.agreed)
    how = (f"looked up in the Hugging Face cache: {printable(c.repo, limit=100)}, the one "
           f"cached {c.arch} config whose dims agree with the trace ({_brief(a, ev)})")
    evidence = [
        *([f"{prefix.rstrip('; ')}"] if prefix else []),
        f"architecture {c.arch}: {c.seen_as}",
        ev.hidden_from,
        f"agreeing with the trace: {agreed}{_tp(a, ev)}",
        f"config.json of {printable(c.repo, limit=100)} from the Hugging Face cache {where} "
        f"(snapshot {printable(c.path.parent.name, limit=40)})",
        *(f"not taken: {printable(d.repo, limit=100)} ({da.conflicts[0]})"
          for d, da in dropped[:MAX_SHOWN]),
    ]
    return Lookup(_choice(c.path, c.data, how, [e for e in evidence if e]), "")
