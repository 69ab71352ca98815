"""Data-type names as they appear in profiles, configs and counters -> bytes per element."""

from __future__ import annotations

import re

from roofline_tui.core.lazy_re import lazy_compile

# canonical name -> bytes per element
DTYPE_BYTES: dict[str, float] = {
    "fp64": 8.0,
    "fp32": 4.0,
    "tf32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "uint8": 1.0,
    "fp6": 0.75,
    "fp4": 0.5,
    "int4": 0.5,
    "int32": 4.0,
    "int64": 8.0,
    "bool": 1.0,
}

DEFAULT_UNKNOWN_BYTES = 2.0

_ALIASES: list[tuple[re.Pattern[str], str]] = [
    (lazy_compile(p), name)
    for p, name in [
        (r"(mx)?fp4(?!\d)|float4(?!\d)|e2m1|nvfp4|mxfp4|w4a", "fp4"),
        (r"(mx)?fp6(?!\d)|float6(?!\d)|e3m2|e2m3", "fp6"),
        (r"fp8|float8|e4m3|e5m2|f8", "fp8"),
        (r"bf16|bfloat16|bfloat", "bf16"),
        (r"fp16|float16|half|\bf16\b|^f16$", "fp16"),
        (r"tf32|xf32", "tf32"),
        (r"fp64|float64|double|\bf64\b|^f64$", "fp64"),
        (r"fp32|float32|^float$|c10::float|^f32$|\bf32\b", "fp32"),
        (r"uint8|\bu8\b", "uint8"),
        (r"int8|\bi8\b|qint8", "int8"),
        (r"int4|\bi4\b", "int4"),
        (r"int64|long|\bi64\b", "int64"),
        (r"int32|^int$|\bi32\b", "int32"),
        (r"bool", "bool"),
    ]
]


def canonical_dtype(name: object) -> str | None:
    """Map a dtype spelling (``c10::BFloat16``, ``torch.float8_e4m3fn``, ``fp8_e4m3``...) to a
    canonical name such as ``bf16``; ``None`` when it is not recognised."""
    if not isinstance(name, str):
        return None
    s = name.strip().lower()
    if not s:
        return None
    s = s.removeprefix("torch.").removeprefix("c10::")
    if s in DTYPE_BYTES:
        return s
    for pattern, canon in _ALIASES:
        if pattern.search(s):
            return canon
    return None


def dtype_bytes(name: object, *, default: float = DEFAULT_UNKNOWN_BYTES) -> tuple[float, str | None]:
    """Bytes per element for ``name`` and a note when it had to be assumed.

    Unknown or missing names get ``default`` (2 B, the bf16 size) with a note saying so, never an
    exception: a typo in a config must not stop a run.
    """
    canon = canonical_dtype(name)
    if canon is None:
        shown = repr(name) if name is not None else "missing"
        return default, f"dtype {shown} not recognised; assumed {default:g} B/elem"
    return DTYPE_BYTES[canon], None
