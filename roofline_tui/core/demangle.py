"""Kernel names for people: Itanium C++ demangling and width-aware cutting.

Profilers report kernels by their symbol: ``_ZN2ck59kernel_gemm_xdl…`` (a mangled C++ name),
``Cijk_Alik_Bljk_…_MT16x16x1024_…`` (a hipBLASLt solution name) or ``void at::native::…<…>``
(already demangled). :func:`demangle` turns the first kind into C++ with the maintained
``cpp_demangle`` library (a binding of the Rust ``cpp_demangle`` crate; unlike the C++ runtime's
``__cxa_demangle`` it knows ``DF16b``, the ``std::bfloat16_t`` that ROCm kernels carry).
:func:`display_name` keeps what tells kernels apart in a table: the qualified function name,
template arguments and parameters folded to ``<…>`` / ``(…)``. :func:`fit` cuts a name to a width
in the middle, or around the first character that differs from the other names shown with it.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

ELLIPSIS = "…"


@lru_cache(maxsize=4096)
def demangle(name: str) -> str | None:
    """The demangled C++ of an Itanium-mangled ``name`` (``_Z…``), or None when it is not one
    or the demangler cannot read it."""
    if not name.startswith("_Z") or len(name) > 16384:
        return None
    try:
        import cpp_demangle
    except ImportError:  # the dependency is declared; without it names stay as they are
        return None
    try:
        out = cpp_demangle.demangle(name)
    except Exception:  # the binding raises ValueError-like errors for names it cannot read
        return None
    return out if isinstance(out, str) and out and out != name else None


def full_name(name: str) -> str:
    """The name to show in full: demangled C++ when ``name`` is mangled, else ``name``."""
    return demangle(name) or name


def _fold(text: str, open_: str, close: str) -> str:
    """Replace every outermost ``open_ … close`` group by ``open_…close``."""
    out: list[str] = []
    depth = 0
    for ch in text:
        if ch == open_:
            if depth == 0:
                out.append(open_ + ELLIPSIS)
            depth += 1
        elif ch == close and depth:
            depth -= 1
            if depth == 0:
                out.append(close)
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def display_name(name: str, *, qualified: bool = False) -> str:
    """What a table shows of a kernel: the function name of a C++ signature (no return type,
    template arguments and parameters folded, namespaces dropped unless ``qualified``), the
    name itself otherwise.

    ``void ck::kernel_gemm<ck::Gridwise<…>>(ck::Arg)`` → ``kernel_gemm<…>``
    (``ck::kernel_gemm<…>`` when qualified).
    """
    demangled = demangle(name)
    text = demangled or name
    if demangled is None and "::" not in text:
        return text  # not C++: "Memcpy HtoD (Pinned -> Device)" stays as it is
    folded = _fold(_fold(text, "<", ">"), "(", ")")
    # drop a leading return type ("void ", "int "): the last space outside any group
    if " " in folded:
        head, _, tail = folded.rpartition(" ")
        if tail and not tail.startswith(("(", "<")) and "::" not in head.split(" ")[-1][-2:]:
            folded = tail
    folded = folded.strip()
    if folded.endswith("(" + ELLIPSIS + ")"):
        folded = folded[: -3].rstrip()
    if not qualified and "::" in folded:
        last = folded.rsplit("::", 1)[1]
        folded = last or folded
    return folded or text


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def fit(text: str, width: int, others: Iterable[str] = ()) -> str:
    """``text`` in at most ``width`` characters, cut in the middle.

    The cut keeps the head and the tail; when ``text`` shares its head and tail with one of
    ``others`` (two hipBLASLt solutions differing only in their tile sizes), the window around
    the first differing character is kept too, so rows that differ still read differently.
    """
    if width <= 0:
        return ""
    if len(text) <= width:
        return text
    if width < 5:
        return text[: width - 1] + ELLIPSIS
    def two_part(t: str) -> str:
        if len(t) <= width:
            return t
        tail = max((width - 1) // 3, 2)
        return t[: width - 1 - tail] + ELLIPSIS + t[-tail:]

    cut = two_part(text)
    rivals = [o for o in others if o != text]
    if cut not in {two_part(o) for o in rivals}:
        return cut
    # head and tail are both shared with a rival: show head … differing window … tail
    differs_at = max((_common_prefix(text, o) for o in rivals), default=0)
    h = max(width // 4, 1)
    t = max(width // 5, 1)
    w = width - h - t - 2
    if w < 3:
        return cut
    start = min(max(differs_at - 2, h), len(text) - t - w)
    return text[:h] + ELLIPSIS + text[start:start + w] + ELLIPSIS + text[-t:]
