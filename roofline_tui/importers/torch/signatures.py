"""A launching op's signature: its name and, per argument position, the dims, the type and (for
the ops whose arguments decide their work, :data:`VALUE_OPS`) the recorded value, cleaned once
from the raw ``Input Dims`` / ``Input type`` / ``Concrete Inputs`` of a ``cpu_op``; launch
geometries (grid, block); ``nn.Module`` names as a path keeps them."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from roofline_tui.core.extension import MAX_VALUE_CHARS, MAX_VALUE_ITEMS
from roofline_tui.core.lazy_re import lazy_compile
from roofline_tui.core.names import cap_name
from roofline_tui.core.textsafe import printable


_NOT_DTYPES = {"", "Scalar", "ScalarList", "TensorList", "GenericList", "None", "Device",
               "Layout", "MemoryFormat"}


_DIM_MAX = 1 << 40  # a dimension beyond this is not a tensor's
_RANK_MAX = 16
_POSITIONS_MAX = 64  # argument positions kept of one op (real ops have at most ~30)
_TYPE_CHARS = 64


_MODULE_INDEX = lazy_compile(r"_\d+$")


def module_name(name: str) -> str:
    """``nn.Module: Qwen2Attention_0`` -> ``Qwen2Attention`` (the profiler numbers every module
    instance; the number says nothing about the layer and would split equal instances)."""
    short = name.removeprefix("nn.Module: ").strip()
    return printable(_MODULE_INDEX.sub("", short), limit=60) or "?"


def _dims_of(value: Any) -> tuple[int, ...] | None:
    """One tensor's dims (``[]`` for a scalar), or None when ``value`` is not a dims list."""
    if value.__class__ is not list or len(value) > _RANK_MAX:
        return None
    for x in value:
        if x.__class__ is not int or not 0 <= x <= _DIM_MAX:
            return None
    return tuple(value)


def _position(value: Any) -> Any:
    """One argument position's dims: a tuple of ints, a tuple of such tuples (a TensorList),
    or None (not dims: kept as a hole so the positions stay in place)."""
    dims = _dims_of(value)
    if dims is not None or value.__class__ is not list or not value:
        return dims
    if len(value) <= _POSITIONS_MAX and all(x.__class__ is list for x in value):
        many = tuple(_dims_of(x) for x in value)
        if all(d is not None for d in many):
            return many
    return None


@dataclass(frozen=True, slots=True)
class Sig:
    """A launching op's signature, per argument position, exactly as the trace records it.

    ``dims[i]`` is the i-th argument's dims (``()`` for a scalar, a tuple of dims for a
    TensorList, None when the trace holds something else there); ``types[i]`` its recorded
    type (``c10::BFloat16``, ``Scalar``, ``""`` ...). ``shapes``/``dtypes`` are the upstream
    Top-N's forms (tensor dims only; the distinct tensor types), kept for upstream readers.
    ``values`` (attention ops only, see :data:`VALUE_OPS`): per position the value Kineto's
    ``Concrete Inputs`` records there (``is_causal``, ``scale``, a window size), None where it
    records none; ``()`` for every other op."""

    op: str | None
    dims: tuple[Any, ...]
    types: tuple[str, ...]
    key: str
    shapes: list[list[int]]
    dtypes: list[str]
    values: tuple[Any, ...] = ()


# ops whose recorded argument values (Concrete Inputs) decide their work: attention, where
# is_causal, the scale and the window sizes are arguments, not tensors
VALUE_OPS = lazy_compile(r"attention|attn|^_vllm_fa\d_C::|^flashinfer::", re.IGNORECASE)
_INT_TEXT = lazy_compile(r"-?\d{1,18}")
_FLOAT_TEXT = lazy_compile(r"-?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d{1,3})?")


def concrete_value(raw: Any) -> Any:
    """One ``Concrete Inputs`` position as a JSON value, or None: Kineto writes each scalar
    argument as text (``"False"``, ``"4096"``, ``"0.088388347648318433"``, ``""`` for a
    tensor or a None); lists of numbers as ``"[1, 2]"`` in some versions. A bool, an int, a
    finite float, a list of at most 16 numbers, or a printable string of at most 64
    characters; anything else is None."""
    if raw.__class__ is not str or not raw or len(raw) > 4 * MAX_VALUE_CHARS:
        return None
    text = raw.strip()
    if text in ("True", "true"):
        return True
    if text in ("False", "false"):
        return False
    if _INT_TEXT.fullmatch(text):
        return int(text)
    if _FLOAT_TEXT.fullmatch(text):
        f = float(text)
        return f if math.isfinite(f) else None
    if text.startswith("[") and text.endswith("]"):
        items = [t.strip() for t in text[1:-1].split(",") if t.strip()]
        if len(items) <= MAX_VALUE_ITEMS and items and all(_INT_TEXT.fullmatch(t) for t in items):
            return [int(t) for t in items]
        return None
    return printable(text, limit=MAX_VALUE_CHARS) if text.isprintable() else None


def _concrete(raw_values: Any, n: int) -> tuple[Any, ...]:
    """The first ``n`` positions of a ``Concrete Inputs`` list as values; () when it holds
    none."""
    if raw_values.__class__ is not list:
        return ()
    out = tuple(concrete_value(v) for v in raw_values[:n])
    return out if any(v is not None for v in out) else ()


def make_sig(op: str | None, raw_dims: Any, raw_types: Any, raw_values: Any = None
             ) -> Sig | None:
    """The :class:`Sig` of one cpu_op's ``Input Dims``/``Input type`` (and, for an op of
    :data:`VALUE_OPS`, its ``Concrete Inputs``: ``raw_values``); None without dims."""
    if not isinstance(raw_dims, list):
        return None
    dims = tuple(_position(d) for d in raw_dims[:_POSITIONS_MAX])
    shapes = _clean_dims(raw_dims)
    types: tuple[str, ...] = ()
    if isinstance(raw_types, list):
        types = tuple(printable(t, limit=_TYPE_CHARS) if isinstance(t, str) else ""
                      for t in raw_types[:_POSITIONS_MAX])
    if not shapes and not any(d == () and k < len(types) and types[k] not in _NOT_DTYPES
                              for k, d in enumerate(dims)):
        return None  # neither a tensor with dims nor a 0-dim tensor: nothing to attach
    op = cap_name(op, limit=200) if isinstance(op, str) else None
    values = _concrete(raw_values, _POSITIONS_MAX) if raw_values is not None else ()
    if values:
        key = json.dumps([op, dims, types, values], separators=(",", ":"))
    else:
        key = json.dumps([op, dims, types], separators=(",", ":"))
    return Sig(op, dims, types, key, shapes, _clean_types(list(types)), values)


def clean_geom(value: tuple[Any, ...] | None) -> tuple[int, ...] | None:
    if value is None or not 0 < len(value) <= 3:
        return None
    if all(x.__class__ is int and 0 <= x <= _DIM_MAX for x in value):
        return value
    return None


def _clean_dims(dims: Any) -> list[list[int]]:
    """The upstream ``shapes`` form: tensor dims only, in order (a TensorList flattened)."""
    out: list[list[int]] = []
    if not isinstance(dims, list):
        return out
    for d in dims[:_POSITIONS_MAX]:
        if not isinstance(d, list) or not d:
            continue
        if all(_is_int(x) for x in d):
            out.append(list(d))
        elif all(isinstance(x, list) for x in d):
            # a TensorList argument: one dims list per tensor, kept in order
            out.extend(list(x) for x in d if x and all(_is_int(v) for v in x))
    return out


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _clean_types(types: Any) -> list[str]:
    if not isinstance(types, list):
        return []
    out: list[str] = []
    for t in types:
        if isinstance(t, str) and t not in _NOT_DTYPES and t not in out:
            out.append(t)
    return out
