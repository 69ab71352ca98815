"""Kernel-name normalisation and the matching rule used by ``match_measurement``/``match_task``.

The rule, in order (first rule that yields a candidate wins):

1. **exact**: the name (or one of the candidate's aliases) equals the query string.
2. **short name**: both reduce to the same *short name*. The short name of a kernel is built
   by demangling an Itanium ``_Z`` symbol to its function name, dropping a leading ``void ``,
   the argument list ``(...)``, template arguments ``<...>``, a ``.kd`` suffix, a
   ``[clone ...]`` suffix and namespaces (last ``::`` component).
3. **prefix**: one short name is a prefix of the other (the shorter one at least 6 characters),
   e.g. Tensile ``Cijk_Ailk_Bljk_BBS_BH_..._MT256x224x64`` against a truncated profile name.

Within one rule, ties go to the longest matching short name, then to the candidate with the
most dispatches/cases, then to the lexically first name, so the result is deterministic.
Matching is case-sensitive except that rule 2 and 3 also compare lower-cased short names.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")

MIN_PREFIX = 6


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
        m = re.match(r"(\d+)", s)
        if not m:
            break
        n = int(m.group(1))
        start = len(m.group(1))
        name = s[start : start + n]
        if len(name) < n or not name:
            break
        parts.append(name)
        s = s[start + n :]
        if not nested:
            break
        if s.startswith("I"):  # template args: stop, the name is known
            break
        if s.startswith("E"):
            break
    return parts[-1] if parts else None


def _strip_balanced(s: str, open_c: str, close_c: str) -> str:
    out = []
    depth = 0
    for ch in s:
        if ch == open_c:
            depth += 1
        elif ch == close_c and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def short_name(name: str) -> str:
    """Reduce a kernel symbol to a comparable short name (see the module docstring)."""
    s = (name or "").strip()
    if not s:
        return ""
    demangled = _demangle_function_name(s.split()[0]) if s.startswith("_Z") else None
    if demangled:
        return demangled
    s = re.sub(r"\s*\[clone [^\]]*\]\s*$", "", s)
    s = s.removeprefix("void ")
    # the argument list: the first top-level '(' after the name (keep operator() intact)
    s = _strip_balanced(s, "<", ">")
    paren = s.find("(")
    if paren > 0:
        s = s[:paren]
    s = s.strip()
    s = s.removesuffix(".kd")
    if "::" in s:
        s = s.rsplit("::", 1)[-1]
    parts = s.split()
    return parts[-1] if parts else ""


def best_match(
    candidates: Iterable[T],
    query: str,
    names_of: Callable[[T], list[str]],
    size_of: Callable[[T], float],
) -> T | None:
    """Apply the matching rule to ``candidates`` (see the module docstring)."""
    items = list(candidates)
    if not query or not items:
        return None
    # 1. exact
    exact = [c for c in items if query in names_of(c)]
    if exact:
        return _pick(exact, lambda c: (len(query), size_of(c)), names_of)
    q_short = short_name(query)
    if not q_short:
        return None
    q_low = q_short.lower()
    # 2. same short name
    same: list[tuple[T, int]] = []
    for c in items:
        for n in names_of(c):
            sn = short_name(n)
            if sn and (sn == q_short or sn.lower() == q_low):
                same.append((c, len(sn)))
                break
    if same:
        return _pick_scored(same, size_of, names_of)
    # 3. prefix either way
    pref: list[tuple[T, int]] = []
    for c in items:
        best = 0
        for n in names_of(c):
            sn = short_name(n).lower()
            if not sn:
                continue
            shorter = min(len(sn), len(q_low))
            if shorter >= MIN_PREFIX and (sn.startswith(q_low) or q_low.startswith(sn)):
                best = max(best, shorter)
        if best:
            pref.append((c, best))
    if pref:
        return _pick_scored(pref, size_of, names_of)
    return None


def _pick(items: list[T], key: Callable[[T], tuple], names_of: Callable[[T], list[str]]) -> T:
    return min(items, key=lambda c: (-key(c)[0], -key(c)[1], names_of(c)[0]))


def _pick_scored(
    scored: list[tuple[T, int]],
    size_of: Callable[[T], float],
    names_of: Callable[[T], list[str]],
) -> T:
    ordered = sorted(scored, key=lambda cs: (-cs[1], -size_of(cs[0]), names_of(cs[0])[0]))
    return ordered[0][0]
