"""Kernel names: the one short-name rule, the one cap on name length, and name comparison.

Used by the Top-N loader, every importer and the stage-B/C matchers, so a kernel gets the same
short name wherever it is read.

**The short-name rule.** From the full symbol:

1. an Itanium-mangled symbol (``_Z...``) is reduced to its function name;
2. a code-object suffix is dropped: `` [clone .kd]``, `` (.kd)``, ``.kd``, `` [clone <x>]``;
3. unnamed namespaces (``(anonymous namespace)``, ``<unnamed>``, ```anonymous namespace'``)
   are dropped as namespace components;
4. a leading return type (``void ``) is dropped;
5. the name ends at the first ``(`` outside template brackets (the argument list), template
   arguments ``<...>`` are dropped, and the last ``::`` component is kept (its last word, so a
   return type such as ``unsigned`` does not survive);
6. at most :data:`SHORT_NAME_MAX` characters (the upstream limit) for display.

A name with no identifier left keeps its first characters as written (callers sanitise every
name before it reaches a terminal or markdown).

**Caps.** A name longer than :data:`NAME_CAP` characters is cut at the boundary (when it is
read) to its first characters plus a digest of the full text, so two long names that share a
prefix stay distinct and the same long name in two files still compares equal, while no later
step works on megabytes of text.
"""

from __future__ import annotations

import re

from roofline_tui.core.lazy_re import lazy_compile

SHORT_NAME_MAX = 60
NAME_CAP = 16384  # characters kept of a kernel name read from a file (real ones stay below)
_DIGEST_CHARS = 16

_KD_SUFFIX = lazy_compile(r"(?:\s*\[clone\s+[^\]]*\]|\s*\(\.kd\)|\.kd)\s*$")
_UNNAMED_NS = lazy_compile(r"\(anonymous namespace\)::|`anonymous namespace'::|<unnamed>::")
_IDENT = lazy_compile(r"[A-Za-z_~$][\w$~]*")
_PLAIN = lazy_compile(r"[A-Za-z_]\w*", re.ASCII)


def cap_name(name: str, limit: int = NAME_CAP) -> str:
    """``name`` cut to ``limit`` characters plus a digest of the full name when longer.

    Lone surrogates (valid JSON escapes such as ``"\\ud800"``) are replaced, so the name can be
    encoded as UTF-8 later."""
    if not isinstance(name, str):
        name = str(name)
    if len(name) > limit:
        import hashlib  # (OpenSSL: loaded only for a name this long)

        digest = hashlib.sha1(name.encode("utf-8", "surrogatepass")).hexdigest()[:_DIGEST_CHARS]
        name = f"{name[: max(limit - _DIGEST_CHARS - 4, 1)]}…#{digest}"
    return name.encode("utf-8", "replace").decode("utf-8") if _has_surrogate(name) else name


def _has_surrogate(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _demangle_function_name(sym: str) -> str | None:
    """Function name of an Itanium-mangled symbol (``_ZN2at6native6kernelEv`` -> ``kernel``)."""
    if not sym.startswith("_Z"):
        return None
    s = sym[2:]
    nested = s.startswith("N")
    if nested:
        s = s[1:]
        while s[:1] in ("K", "V", "r"):  # cv-qualifiers of a member function
            s = s[1:]
    parts: list[str] = []
    while s:
        if s.startswith("St"):  # std::
            s = s[2:]
            continue
        m = re.match(r"(\d{1,6})", s)
        if not m:
            break
        n = int(m.group(1))
        start = len(m.group(1))
        name = s[start : start + n]
        if len(name) < n or not name:
            break
        parts.append(name)
        s = s[start + n :]
        if not nested or s.startswith(("I", "E")):
            break
    return parts[-1] if parts else None


def strip_code_object_suffix(name: str) -> str:
    """``micro_tk(micro_globals) [clone .kd]`` / ``k (.kd)`` / ``k.kd`` -> the bare symbol."""
    prev = None
    s = name.strip()
    while prev != s:  # "[clone .kd]" after ".kd" and the like
        prev = s
        s = _KD_SUFFIX.sub("", s).rstrip()
    return s


def _head(s: str) -> str:
    """Text before the argument list, template arguments removed (one linear scan)."""
    out: list[str] = []
    depth = 0
    for ch in s:
        if ch == "<":
            depth += 1
        elif ch == ">":
            if depth:
                depth -= 1
        elif depth == 0:
            if ch == "(":
                if "".join(out).strip():  # "(" after a name: the argument list starts
                    break
            out.append(ch)
    return "".join(out)


def short_name(name: str, limit: int | None = SHORT_NAME_MAX) -> str:
    """The short name of a kernel symbol (module docstring); ``""`` for an empty name."""
    s = (name or "").strip()
    if not s:
        return ""
    s = s[:NAME_CAP]
    if _PLAIN.fullmatch(s) and not s.startswith("_Z"):
        # a bare identifier (a Triton kernel, a hipBLASLt solution) is its own short name
        return s[:limit] if limit else s
    if s.startswith("_Z"):
        demangled = _demangle_function_name(s.split()[0])
        if demangled:
            return demangled[:limit] if limit else demangled
    s = strip_code_object_suffix(s)
    s = _UNNAMED_NS.sub("", s)
    s = re.sub(r"^(?:void|static|inline)\s+", "", s)
    head = _head(s).strip()
    parts = [p.strip() for p in head.split("::") if p.strip()]
    words = parts[-1].split() if parts else []
    while len(words) > 1 and words[0] in _TYPE_WORDS:
        words = words[1:]
    first = words[0] if words else ""
    m = _IDENT.match(first)
    # nothing name-like at the start (e.g. a name starting with ESC): keep it as written;
    # every caller sanitises names before showing them
    out = m.group(0) if m else s
    return out[:limit] if limit else out


# a value cast in a template argument list: nsys prints ``(bool)0, (int)7`` where ncu prints
# ``0, 7``
_VALUE_CAST = lazy_compile(r"\((?:(?:unsigned|signed|long|short)\s+)*(?:bool|char|short|int|long|"
                           r"long long|__int128)\)(?=-?\d)")
_QUALIFIER = lazy_compile(r"(?<![\w:])(?:(?:[A-Za-z_]\w*|\(anonymous namespace\))::)+")
_SPACE = lazy_compile(r"\s+")


def _last_token(s: str) -> str:
    """The text after the last space outside ``<>``/``()`` (the function name with its template
    and argument lists; a return type such as ``enable_if<…>::type`` before it is dropped)."""
    depth = 0
    start = 0
    for i, ch in enumerate(s):
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth = max(depth - 1, 0)
        elif ch == " " and depth == 0:
            start = i + 1
    return s[start:]


def _without_arguments(s: str) -> str:
    """``s`` without a trailing top-level ``(…)`` argument list."""
    if not s.endswith(")"):
        return s
    depth = 0
    for i in range(len(s) - 1, -1, -1):
        ch = s[i]
        if ch == ")":
            depth += 1
        elif ch == "(":
            depth -= 1
            if depth == 0:
                return s[:i]
    return s


def signature_key(name: str) -> str | None:
    """A templated kernel's identity across profilers: its function name (no namespace, no
    return type, no argument list) with its template arguments, value casts and namespace
    qualifiers removed and spaces dropped; ``None`` for a name without template arguments.

    nsys's ``std::enable_if<!T7, void>::type internal::gemvx::kernel<int, …, (bool)0, (int)7,
    …>(int, T13)`` and ncu's ``enable_if<!T7, void>::type kernel<int, …, 0, 7, …>(T13)`` share
    one key, and the ``(int)6`` instantiation beside it has another."""
    s = strip_code_object_suffix((name or "").strip()[:NAME_CAP])
    if not s or is_truncated(s) or "<" not in s:
        return None
    s = _without_arguments(_last_token(s))
    head, lt, args = s.partition("<")
    if not lt or not args.endswith(">"):
        return None
    head = head.rsplit("::", 1)[-1]
    args = _QUALIFIER.sub("", _VALUE_CAST.sub("", args))
    return _SPACE.sub("", f"{head}<{args}").lower() or None


def short_name_of(name: str) -> str:
    """The one short-name rule (:func:`short_name`, at most :data:`SHORT_NAME_MAX` chars);
    ``"?"`` when nothing is left. Importers and the Top-N loader share it (it lives here, not
    in ``core.inputs``, so an importer does not load the loader's pydantic models)."""
    return short_name(name) or "?"


_TYPE_WORDS = frozenset({"unsigned", "signed", "const", "volatile", "int", "long", "short",
                         "char", "float", "double", "bool", "auto", "__global__",
                         "__device__", "__launch_bounds__", "extern", "struct", "class"})


def name_key(name: str) -> str:
    """The short name used for matching (no length limit, case folded)."""
    return short_name(name, limit=None).lower()


def is_truncated(name: str) -> bool:
    """A name a profiler cut for display (``…`` / ``...`` at its end)."""
    s = name.rstrip()
    return s.endswith(("…", "..."))


def prefix_compatible(short: str, long: str, *, short_truncated: bool = False) -> bool:
    """``short`` names the same kernel as ``long`` by prefix: either ``short`` was cut by the
    profiler, or ``long`` continues past it with a separator (``_``, ``.``, ``<``, ``(``,
    space). ``..._main_l4`` is not a prefix match of ``..._main_l41``."""
    if not long.startswith(short) or len(short) == len(long):
        return long == short
    if short_truncated:
        return True
    return long[len(short)] in "_.<( [-"
