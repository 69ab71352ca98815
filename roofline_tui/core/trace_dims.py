"""Model dimensions read from the shapes the trace itself recorded, for a run without a config.

A PyTorch profiler trace records, for every CPU op, the dims and types of its tensor arguments.
The importer keeps, per Top-N entry, the ops that launched the kernel under
``entry["x_roofline"]["instances"]``::

    {"op": "vllm::unified_attention_with_output",
     "args": [{"dims": [32, 64, 64], "type": "c10::BFloat16", "role": "input"}, ...],
     "calls": 24, "total_us": 512.3}

Some of those shapes are the model's own dimensions: an attention op's query holds the heads and
the head size, a norm's weight is the hidden size. :func:`dims_from_instances` reads them, with
the evidence for each number, and fills a field only when every reading agrees.

What the numbers are: the shapes one rank ran. Under tensor parallelism the head counts and the
MLP width are that rank's share (the config's value divided by the TP degree); the hidden size is
not split. Nothing here can tell the two apart, so callers should say "from the trace".

Pure: no I/O, no imports beyond the standard library, pydantic and the sanitiser.
"""

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from roofline_tui.core.lazy_re import lazy_compile
from roofline_tui.core.textsafe import printable

__all__ = ["FIELDS", "TraceDims", "describe", "dims_from_instances"]

FIELDS = (
    "hidden_size",
    "num_attention_heads",
    "num_kv_heads",
    "head_dim",
    "intermediate_size",
    "kv_cache_dtype",
)

# Bounds on hostile input: work stays linear and small whatever the file claims.
_MAX_INSTANCES = 20_000
_MAX_ARGS = 64
_MAX_RANK = 8
_MAX_DIM = 1 << 48
_MAX_NOTES = 20

# The importer's role vocabulary (core.topn_ext.Role) less "other", which says nothing.
_ROLES = frozenset({"input", "output", "inplace", "weight", "bias", "scale", "cache", "index",
                    "workspace", "scalar"})


class TraceDims(BaseModel):
    """Model dimensions the trace's op shapes give, each with the evidence that gave it.

    A field is ``None`` when no op said anything about it, or when the readings disagree; in the
    second case :meth:`unresolved_for` says why. ``evidence`` and ``unresolved`` are
    ``(field, one line)`` pairs; ``notes`` lists op instances that were looked at but not read
    (and why).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    hidden_size: int | None = None
    num_attention_heads: int | None = None
    num_kv_heads: int | None = None
    head_dim: int | None = None
    intermediate_size: int | None = None
    kv_cache_dtype: str | None = None  # the cache tensor's raw type, e.g. "c10::BFloat16"
    evidence: tuple[tuple[str, str], ...] = ()
    unresolved: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = ()

    def evidence_for(self, field: str) -> str | None:
        """The one line of evidence behind ``field``'s value (``None`` when it is unset)."""
        return next((line for name, line in self.evidence if name == field), None)

    def unresolved_for(self, field: str) -> str | None:
        """Why ``field`` is unset although the trace spoke about it (``None`` otherwise)."""
        return next((line for name, line in self.unresolved if name == field), None)

    def is_empty(self) -> bool:
        """True when no field was filled."""
        return all(getattr(self, name) is None for name in FIELDS)


# --------------------------------------------------------------------------- parsed input


@dataclass(frozen=True)
class _Arg:
    index: int
    dims: tuple[int, ...] | None  # None: not a tensor (scalar, list, malformed)
    type: str | None
    role: str | None


@dataclass(frozen=True)
class _Op:
    name: str  # as recorded, made printable
    low: str  # lower-cased, for matching
    args: tuple[_Arg, ...]
    has_roles: bool

    def arg(self, index: int | None) -> _Arg | None:
        if index is None or not 0 <= index < len(self.args):
            return None
        return self.args[index]

    def with_role(self, role: str) -> list[_Arg]:
        return [a for a in self.args if a.role == role and a.dims]


def _dims(value: Any) -> tuple[int, ...] | None:
    if not isinstance(value, (list, tuple)) or len(value) > _MAX_RANK:
        return None
    out: list[int] = []
    for d in value:
        if isinstance(d, bool):
            return None
        if isinstance(d, float) and d.is_integer():
            d = int(d)
        if not isinstance(d, int) or not 0 <= d <= _MAX_DIM:
            return None
        out.append(d)
    return tuple(out)


def _parse_arg(index: int, raw: Any) -> _Arg:
    if not isinstance(raw, Mapping):
        return _Arg(index, None, None, None)
    dims = _dims(raw.get("dims"))
    typ = raw.get("type")
    role = raw.get("role")
    return _Arg(
        index,
        dims if dims else None,  # [] is a scalar
        printable(typ, limit=60) if isinstance(typ, str) and typ.strip() else None,
        role.strip().lower() if isinstance(role, str) else None,
    )


def _ops(entries: Iterable[Mapping[str, Any]]) -> Iterator[_Op]:
    seen = 0
    if isinstance(entries, (str, bytes, Mapping)) or not isinstance(entries, Iterable):
        return
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        extra = entry.get("x_roofline")
        instances = extra.get("instances") if isinstance(extra, Mapping) else None
        if not isinstance(instances, (list, tuple)):
            continue
        for inst in instances:
            seen += 1
            if seen > _MAX_INSTANCES:
                return
            if not isinstance(inst, Mapping):
                continue
            name, raw_args = inst.get("op"), inst.get("args")
            if not isinstance(name, str) or not name.strip() or not isinstance(raw_args, list):
                continue
            args = tuple(_parse_arg(i, a) for i, a in enumerate(raw_args[:_MAX_ARGS]))
            # Roles from the importer's op table are used; positional guesses ("roles_from"
            # saying why positional) are not: this module's own argument orders are surer.
            source = inst.get("roles_from")
            trusted = not isinstance(source, str) or source.startswith("table")
            yield _Op(
                name=printable(name.strip(), limit=120),
                low=name.strip().lower(),
                args=args,
                has_roles=trusted and any(a.role in _ROLES for a in args),
            )


# --------------------------------------------------------------------------- readings


@dataclass
class _Readings:
    """Candidate values per field, each with its one-line evidence."""

    by_field: dict[str, list[tuple[int | str, str, bool]]]  # (value, line, corroborating)
    notes: list[str]

    def add(self, field: str, value: int | str, line: str, *, corroborating: bool = False) -> None:
        """Record a reading; a corroborating one (a cache writer's key) counts towards
        agreement but its line is shown only when no primary reading (an attention op) exists."""
        self.by_field.setdefault(field, []).append((value, line, corroborating))

    def note(self, line: str) -> None:
        if line not in self.notes and len(self.notes) < _MAX_NOTES:
            self.notes.append(line)


def _shape(dims: Sequence[int]) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"


def _where(op: _Op, arg: _Arg, what: str) -> str:
    assert arg.dims is not None
    return f"{op.name} arg {arg.index} ({what}) {_shape(arg.dims)}"


# ---- attention

_SKIP_ATTENTION = (
    (lazy_compile(r"backward|_bwd\b|_bwd_|grad"), "a backward op (argument order differs)"),
    (lazy_compile(r"mla|latent"), "latent (MLA) attention: its widths are not the head size"),
    (lazy_compile(r"multi_head_attention|transformer_encoder"),
     "embedding-layout attention: the head count is a scalar argument, not a dim"),
)
_ATTENTION = lazy_compile(r"attention|attn|flash|mha|sdpa")

Layout = Literal["bhsd", "bshd", "thd"]


@dataclass(frozen=True)
class _AttnSpec:
    family: str
    four_d: Layout | None  # how a 4-D query is laid out (None: not known, not read)
    q: int
    k: int | None
    k_cache: int | None = None  # position of a paged key cache [pages, page, H_KV, d]
    v_cache: int | None = None
    q_alone: bool = True  # the query alone is trusted for H_Q and d
    paged_k: bool = False  # a 4-D key beside a 3-D query is a paged cache [pages, page, H, d]


_ATTN_SPECS: tuple[tuple[re.Pattern[str], _AttnSpec], ...] = (
    # SGLang's profiled aiter kernel: (out, workspace, query [B, H_Q, d], k_cache, v_cache, ...)
    (lazy_compile(r"paged_attention_ragged"),
     _AttnSpec("SGLang paged_attention_ragged", None, q=2, k=None, k_cache=3, v_cache=4)),
    # torch SDPA and its backends: [B, H, S, d]
    (lazy_compile(r"scaled_dot_product|sdpa"), _AttnSpec("SDPA", "bhsd", q=0, k=1)),
    # flash-attention family: [B, S, H, d]; varlen [T, H, d]; paged KV [pages, page, H_KV, d]
    (lazy_compile(r"_flash_attention_forward|_efficient_attention_forward|flash_attn|mha_fwd"
                r"|mha_varlen_fwd|fmha|_fa\d_c::|vllm_flash_attn"),
     _AttnSpec("flash-attention", "bshd", q=0, k=1, paged_k=True)),
    # vLLM's attention custom op: query/key/value [T, H, d]
    (lazy_compile(r"unified_attention"), _AttnSpec("vLLM unified_attention", None, q=0, k=1)),
    # anything else named like attention: only token-major [T, H, d] query and key together
    (_ATTENTION, _AttnSpec("attention", None, q=0, k=1, q_alone=False)),
)


def _attn_spec(op: _Op) -> tuple[_AttnSpec | None, str | None]:
    for pattern, why in _SKIP_ATTENTION:
        if pattern.search(op.low):
            return None, why
    for pattern, spec in _ATTN_SPECS:
        if pattern.search(op.low):
            return spec, None
    return None, None


def _heads_and_size(dims: tuple[int, ...], layout: Layout) -> tuple[int, int, str]:
    if layout == "thd":
        return dims[1], dims[2], "[T, H, d]"
    if layout == "bhsd":
        return dims[1], dims[3], "[B, H, S, d]"
    return dims[2], dims[3], "[B, S, H, d]"


def _q_layout(spec: _AttnSpec, rank: int) -> Layout | None:
    if rank == 3:
        return "thd"
    if rank == 4:
        return spec.four_d
    return None


def _read_attention(op: _Op, spec: _AttnSpec, out: _Readings) -> None:
    if op.has_roles:
        inputs = [a for a in op.with_role("input") if len(a.dims or ()) >= 3]
        caches = [a for a in op.with_role("cache") if len(a.dims or ()) >= 3]
        q = inputs[0] if inputs else None
        k = inputs[1] if len(inputs) > 1 else None
        k_cache = caches[0] if caches else None
        v_cache = caches[1] if len(caches) > 1 else None
    else:
        q, k = op.arg(spec.q), op.arg(spec.k)
        k_cache, v_cache = op.arg(spec.k_cache), op.arg(spec.v_cache)

    for cache in (k_cache, v_cache):
        if cache is not None and cache.dims and cache.type:
            out.add("kv_cache_dtype", cache.type, f"{_where(op, cache, 'KV cache')} {cache.type}")

    if q is None or not q.dims:
        if op.has_roles:  # the roles name no query: try the op's known argument order
            _read_attention(replace(op, has_roles=False), spec, out)
            return
        out.note(f"{op.name}: no query tensor found; not read")
        return
    q_layout = _q_layout(spec, len(q.dims))
    if q_layout is None:
        out.note(f"{op.name}: query {_shape(q.dims)} in a layout not known for "
                 f"{spec.family} ops; not read")
        return

    # The key: a second input of the query's layout, or a paged cache [pages, page, H_KV, d].
    paged = "paged [pages, page, H_KV, d]"
    key: tuple[_Arg, str, int, int, str] | None = None  # (arg, label, heads, size, layout)
    if k is not None and k.dims and len(k.dims) == len(q.dims):
        key = (k, "key", *_heads_and_size(k.dims, q_layout))
    elif k is not None and k.dims and len(k.dims) == 4 and q_layout == "thd" and spec.paged_k:
        key = (k, "paged key cache", k.dims[2], k.dims[3], paged)
        if k.type:
            out.add("kv_cache_dtype", k.type, f"{_where(op, k, 'paged key cache')} {k.type}")
    elif (k_cache is not None and k_cache.dims and len(k_cache.dims) == 4
          and q_layout == "thd" and (spec.k_cache is not None or spec.paged_k)):
        key = (k_cache, "key cache", k_cache.dims[2], k_cache.dims[3], paged)

    if key is None and not spec.q_alone:
        out.note(f"{op.name}: no key of the query's layout beside query {_shape(q.dims)}; "
                 "heads not read")
        return

    q_heads, q_size, q_shape = _heads_and_size(q.dims, q_layout)
    if q_heads == 0 or q_size == 0:
        out.note(f"{op.name}: query {_shape(q.dims)} has an empty head axis; not read")
        return
    if key is not None:
        k_heads = key[2]
        if k_heads == 0 or k_heads > q_heads or q_heads % k_heads:
            out.note(f"{op.name}: {q_heads} query heads and {k_heads} key heads do not form "
                     f"grouped-query attention (layout {q_shape}?); not read")
            return
    out.add("num_attention_heads", q_heads,
            f"{_where(op, q, 'query')} as {q_shape}: {q_heads} query heads")
    out.add("head_dim", q_size, f"{_where(op, q, 'query')} as {q_shape}: head size {q_size}")
    if key is not None:
        k_arg, label, k_heads, k_size, k_shape = key
        out.add("num_kv_heads", k_heads,
                f"{_where(op, k_arg, label)} as {k_shape}: {k_heads} KV heads")
        out.add("head_dim", k_size, f"{_where(op, k_arg, label)} as {k_shape}: head size {k_size}")


# ---- KV-cache writers

_CACHE_WRITER = lazy_compile(
    r"reshape_and_cache|concat_and_cache|set_kv_buffer|store_cache|store_kvcache|kv_cache_update"
)


def _read_cache_writer(op: _Op, out: _Readings) -> None:
    """The cache tensors' type, and the heads of the key being written ``[T, H_KV, d]``."""
    latent = "mla" in op.low or "concat_and_cache" in op.low
    if op.has_roles:
        caches = op.with_role("cache")
        inputs = op.with_role("input")
        key = inputs[0] if inputs else None
    elif latent:  # (kv_c, k_pe, kv_cache, slot_mapping, ...)
        caches = [a for a in (op.arg(2),) if a is not None and a.dims]
        key = None
    else:  # (key, value, key_cache, value_cache, slot_mapping, ...)
        caches = [a for a in (op.arg(2), op.arg(3)) if a is not None and a.dims]
        key = op.arg(0)
        # the caches hold at least the rank of the tokens written into them
        if key is not None and key.dims:
            caches = [c for c in caches if c.dims and len(c.dims) >= len(key.dims)]
    for cache in caches:
        if cache.type:
            out.add("kv_cache_dtype", cache.type,
                    f"{_where(op, cache, 'KV cache')} {cache.type}")
    if not latent and key is not None and key.dims and len(key.dims) == 3 and all(key.dims[1:]):
        heads, size = key.dims[1], key.dims[2]
        line = f"{_where(op, key, 'key written to the cache')} as [T, H_KV, d]"
        out.add("num_kv_heads", heads, f"{line}: {heads} KV heads", corroborating=True)
        out.add("head_dim", size, f"{line}: head size {size}", corroborating=True)


# ---- norms

_NORM = lazy_compile(r"rms_?norm|layer_?norm")
_RESIDUAL_NORM = lazy_compile(r"add|residual")


@dataclass(frozen=True)
class _NormReading:
    value: int
    line: str
    residual: bool


def _read_norm(op: _Op, norms: list[_NormReading], out: _Readings) -> None:
    if "backward" in op.low:
        return
    tensors = [a for a in op.args if a.dims]
    wide = [a for a in tensors if len(a.dims or ()) >= 2]
    width = wide[0].dims[-1] if wide and wide[0].dims else None
    if op.has_roles:
        weights = [a for a in op.with_role("weight") if len(a.dims or ()) == 1]
        if not weights:
            _read_norm(replace(op, has_roles=False), norms, out)
            return
    else:
        weights = [a for a in tensors if len(a.dims or ()) == 1]
    weights = [w for w in weights if w.dims and w.dims[0] > 0
               and (w.dims[0] == width or (width is None and op.has_roles))]
    if not weights:
        out.note(f"{op.name}: no 1-D weight matching the normalised width; not read")
        return
    w = weights[0]
    assert w.dims is not None
    residual = bool(_RESIDUAL_NORM.search(op.low))
    kind = "residual-add norm" if residual else "norm"
    norms.append(_NormReading(w.dims[0], f"{_where(op, w, f'{kind} weight')}", residual))


# ---- GEMMs


@dataclass(frozen=True)
class _Gemm:
    k: int
    n: int
    line: str


def _read_gemm(op: _Op, gemms: list[_Gemm]) -> None:
    """K and N of an aten GEMM, from its fixed argument order."""
    name = op.low

    def dims(i: int) -> tuple[int, ...] | None:
        a = op.arg(i)
        return a.dims if a is not None else None

    if name in ("aten::mm", "aten::matmul", "aten::addmm"):
        first = 1 if name == "aten::addmm" else 0
        a, b = dims(first), dims(first + 1)
        if not a or not b or len(b) != 2 or (name == "aten::mm" and len(a) != 2):
            return
        if a[-1] != b[0]:
            return
        k, n = b[0], b[1]
        shapes = f"{_shape(a)} x {_shape(b)}"
    elif name == "aten::linear":
        x, w = dims(0), dims(1)
        if not x or not w or len(w) != 2 or x[-1] != w[1]:
            return
        k, n = w[1], w[0]
        shapes = f"{_shape(x)} x weight {_shape(w)}"
    else:
        return
    gemms.append(_Gemm(k, n, f"{op.name} {shapes} (K={k}, N={n})"))


# ---- act-and-mul

_ACT_AND_MUL = lazy_compile(r"and_mul|mul_and_")
_MOE = lazy_compile(r"moe|expert")


def _read_act_and_mul(op: _Op, out: _Readings) -> None:
    tensors = [a for a in op.args if a.dims and len(a.dims) >= 2]
    if op.has_roles:
        inputs = [a for a in tensors if a.role == "input"]
        outputs = [a for a in tensors if a.role in ("output", "inplace")]
        if len(inputs) != 1:  # the roles do not single out the input: go by widths
            _read_act_and_mul(replace(op, has_roles=False), out)
            return
        x = inputs[0]
        assert x.dims is not None
        if x.dims[-1] % 2:
            out.note(f"{op.name}: input {_shape(x.dims)} has an odd last dim; not read")
            return
        half = x.dims[-1] // 2
        if any(o.dims and o.dims[-1] != half for o in outputs):
            out.note(f"{op.name}: output width is not half the input's {_shape(x.dims)}; "
                     "not read")
            return
        if half:
            out.add("intermediate_size", half,
                    f"{_where(op, x, 'input')} as [T, 2I]: I = {half}")
        return
    # No roles: the output [.., I] and the input [.., 2I] are told apart by their widths.
    pairs = [(a, b) for a in tensors for b in tensors
             if a is not b and a.dims and b.dims and a.dims[:-1] == b.dims[:-1]
             and b.dims[-1] == 2 * a.dims[-1] > 0]
    if len(pairs) == 1:
        small, big = pairs[0]
        assert small.dims is not None and big.dims is not None
        out.add("intermediate_size", small.dims[-1],
                f"{_where(op, big, 'input')} as [T, 2I] beside output {_shape(small.dims)}: "
                f"I = {small.dims[-1]}")
    elif len(tensors) == 1 and tensors[0].dims and tensors[0].dims[-1] % 2 == 0:
        x = tensors[0]
        assert x.dims is not None
        out.add("intermediate_size", x.dims[-1] // 2,
                f"{_where(op, x, 'input')} as [T, 2I]: I = {x.dims[-1] // 2}")
    else:
        out.note(f"{op.name}: no single [T, 2I] input beside a [T, I] output; not read")


# --------------------------------------------------------------------------- resolving


def _agree(readings: Sequence[tuple[Any, str, bool]]) -> tuple[Any, str | None, str | None]:
    """(value, evidence, why unresolved) from one field's readings, primary ones first."""
    if not readings:
        return None, None, None
    values: dict[Any, str] = {}
    for value, line, _ in sorted(readings, key=lambda r: r[2]):  # primary readings first
        values.setdefault(value, line)
    if len(values) == 1:
        (value, line), = values.items()
        more = len(readings) - 1
        agree = "reading agrees" if more == 1 else "readings agree"
        suffix = f" ({more} more {agree})" if more else ""
        return value, line + suffix, None
    shown = "; ".join(f"{v} from {line}" for v, line in list(values.items())[:3])
    extra = f" (and {len(values) - 3} more values)" if len(values) > 3 else ""
    return None, None, f"the trace disagrees: {shown}{extra}; left unset"


def _resolve_hidden(
    norms: list[_NormReading], gemms: list[_Gemm], head_dim: int | None, out: _Readings
) -> tuple[int | None, str | None, str | None]:
    if not norms:
        return None, None, None
    residual = [n for n in norms if n.residual]
    if residual:
        pool, basis = residual, "residual-add norms"
        others = sorted({n.value for n in norms if not n.residual} - {n.value for n in residual})
        if others:
            out.note(f"plain norm weights of {others} not read as the hidden size "
                     "(residual-add norms are present)")
    else:
        pool = [n for n in norms if head_dim is None or n.value != head_dim]
        basis = "norms"
        if head_dim is not None and len(pool) < len(norms):
            out.note(f"norm weights of {head_dim} (the attention head size) are per-head "
                     "q/k norms; not read as the hidden size")
        if not pool:
            return None, None, None
    values = sorted({n.value for n in pool})
    if len(values) > 1:
        confirmed = [v for v in values if any(v in (g.k, g.n) for g in gemms)]
        if len(confirmed) == 1:
            out.note(f"{basis} give {values}; only {confirmed[0]} is a GEMM's K or N")
            pool = [n for n in pool if n.value == confirmed[0]]
    value, line, why = _agree([(n.value, n.line, False) for n in pool])
    if value is None:
        return None, None, why
    match = next((g for g in gemms if value in (g.k, g.n)), None)
    if match is not None:
        line = f"{line}; confirmed by {match.line}"
    elif gemms:
        line = f"{line}; no aten GEMM in the trace has K or N = {value}"
    return value, line, None


def _read_ops(entries: Iterable[Mapping[str, Any]]
              ) -> tuple[_Readings, list[_NormReading], list[_Gemm], list[str]]:
    """Every instance op read by the rule its name picks: (readings, norm weights, GEMMs,
    names of the MoE ops seen)."""
    out = _Readings({}, [])
    norms: list[_NormReading] = []
    gemms: list[_Gemm] = []
    moe_ops: list[str] = []
    for op in _ops(entries):
        if _MOE.search(op.low) and op.name not in moe_ops:
            moe_ops.append(op.name)
        if _NORM.search(op.low):
            _read_norm(op, norms, out)
        elif _ACT_AND_MUL.search(op.low):
            _read_act_and_mul(op, out)
        elif op.low in ("aten::mm", "aten::addmm", "aten::linear", "aten::matmul"):
            _read_gemm(op, gemms)
        elif _CACHE_WRITER.search(op.low):
            _read_cache_writer(op, out)
        elif _ATTENTION.search(op.low):
            spec, why = _attn_spec(op)
            if spec is None:
                out.note(f"{op.name}: {why}; not read")
            else:
                _read_attention(op, spec, out)
    return out, norms, gemms, moe_ops


def dims_from_instances(entries: Iterable[Mapping[str, Any]]) -> TraceDims:
    """Model dimensions from the launching-op instances of raw Top-N entry dicts.

    Reads ``entry["x_roofline"]["instances"]`` of each entry; anything malformed is skipped.
    Argument roles (``input``/``output``/``weight``/``cache``/...) are used when an instance
    carries them from the importer's op table (``roles_from`` absent or ``table:...``), and the
    op's known argument order otherwise, or when the roles name no argument the rule needs.
    The rules:

    - **Attention** (op names with ``attention``/``attn``/``flash``/``mha``/``sdpa``): the query
      gives ``num_attention_heads`` and ``head_dim``, the key ``num_kv_heads`` and ``head_dim``.
      Layouts by op: vLLM ``unified_attention*`` and any 3-D query ``[T, H, d]``; SDPA
      (``scaled_dot_product*``) ``[B, H, S, d]``; flash-attention (``_flash_attention_forward``,
      ``flash_attn::*``, ``mha_fwd``) ``[B, S, H, d]``, with a 4-D key beside a 3-D query read as
      a paged cache ``[pages, page, H_KV, d]``; SGLang ``paged_attention_ragged`` query
      ``[B, H_Q, d]`` (arg 2) and key cache ``[pages, page, H_KV, d]`` (arg 3). An op of another
      name is read only when its query and key are both 3-D. A 4-D query of unknown layout,
      query/key heads that do not form grouped-query attention, backward ops and latent (MLA)
      attention are not read.
    - **KV-cache writers** (``reshape_and_cache*``, ``set_kv_buffer``, ``store_cache``,
      ``kv_cache_update``): the key being written, ``[T, H_KV, d]`` (arg 0, or the first
      ``input``), is a second reading of ``num_kv_heads`` and ``head_dim``; it is what catches
      a paged cache whose layout was misread. Latent (MLA) writers give no heads.
    - **KV-cache dtype**: the raw type of a cache tensor (role ``cache``, a paged key, or args 2
      and 3 of a cache writer).
    - **Hidden size**: the 1-D weight of a norm op (``rms_norm``/``rmsnorm``/``layer_norm``)
      whose length is the normalised tensor's last dim. Residual-add norms (names with ``add``)
      act on the residual stream and, when present, are the only ones read; otherwise norm
      weights equal to the attention head size are per-head q/k norms and are dropped. When
      norms still disagree, the one value that is some GEMM's K or N wins. GEMMs (``aten::mm``,
      ``aten::addmm``, ``aten::linear``, ``aten::matmul``) only confirm: the evidence says
      which GEMM has K or N equal to the hidden size, or that none has.
    - **Intermediate size**: an act-and-mul op (``silu_and_mul``, ``gelu_and_mul``, ...) input
      ``[T, 2I]`` gives I (without roles, the input is the tensor twice as wide as the output
      beside it). Not read when the trace has MoE ops (names with ``moe``/``expert``): there the
      act-and-mul width may be one expert's.

    Every field needs all its readings to agree; differing readings leave it ``None`` with the
    values and their evidence in :attr:`TraceDims.unresolved`.
    """
    out, norms, gemms, moe_ops = _read_ops(entries)
    values: dict[str, Any] = {}
    evidence: list[tuple[str, str]] = []
    unresolved: list[tuple[str, str]] = []

    def settle(field: str, value: Any, line: str | None, why: str | None) -> None:
        if value is not None and line is not None:
            values[field] = value
            evidence.append((field, printable(line, limit=600)))
        elif why is not None:
            unresolved.append((field, printable(why, limit=600)))

    for field in ("num_attention_heads", "num_kv_heads", "head_dim", "kv_cache_dtype"):
        settle(field, *_agree(out.by_field.get(field, [])))
    settle("hidden_size", *_resolve_hidden(norms, gemms, values.get("head_dim"), out))
    inter = out.by_field.get("intermediate_size", [])
    if inter and moe_ops:
        shown = ", ".join(moe_ops[:3])
        settle("intermediate_size", None, None,
               f"the trace has MoE ops ({shown}); an act-and-mul width there may be one "
               "expert's, so it is not read as intermediate_size")
    else:
        settle("intermediate_size", *_agree(inter))

    order = {name: i for i, name in enumerate(FIELDS)}
    return TraceDims(
        **values,
        evidence=tuple(sorted(evidence, key=lambda p: order[p[0]])),
        unresolved=tuple(sorted(unresolved, key=lambda p: order[p[0]])),
        notes=tuple(printable(n, limit=300) for n in out.notes),
    )


def describe(dims: TraceDims) -> list[str]:
    """One line per field the trace spoke about: its value and evidence, or why it is unset.

    Fields no op said anything about get no line, so an empty :class:`TraceDims` gives ``[]``.
    """
    lines: list[str] = []
    for field in FIELDS:
        value = getattr(dims, field)
        if value is not None:
            lines.append(f"{field} {value} from the trace: {dims.evidence_for(field)}")
        else:
            why = dims.unresolved_for(field)
            if why is not None:
                lines.append(f"{field} not taken from the trace: {why}")
    return lines
