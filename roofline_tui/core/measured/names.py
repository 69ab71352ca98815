"""Kernel-name normalisation and the matching rule used by ``match_measurement``/``match_task``.

The rule, in order (first rule that yields a candidate wins):

1. **exact**: the name (or one of the candidate's aliases) equals the query string.
1b. **signature**: both are templated and their :func:`~roofline_tui.core.names.signature_key`
   agree (the function name with its template arguments, whatever the profiler's spelling of
   namespaces, return type, value casts and argument list: nsys's ``std::enable_if<…>::type
   internal::gemvx::kernel<…, (int)7, …>(int, T13)`` is ncu's ``enable_if<…>::type kernel<…,
   7, …>(T13)``).
2. **short name**: both reduce to the same *short name*. The short name of a kernel is built
   by demangling an Itanium ``_Z`` symbol to its function name, dropping a leading ``void ``,
   the argument list ``(...)``, template arguments ``<...>``, a ``.kd`` suffix, a
   ``[clone ...]`` suffix and namespaces (last ``::`` component).
3. **prefix**: one short name is a prefix of the other (the shorter one at least 6 characters)
   and the longer one continues with a separator (``_ . < ( [ -`` or a space), or the shorter
   one was cut by its profiler (ends in ``…``/``...``): Tensile
   ``Cijk_Ailk_Bljk_BBS_BH_..._MT256x224x64`` matches a longer ``..._MT256x224x64_MI16x16x1``,
   but ``..._main_l4`` never matches ``..._main_l41``.

Short names come from the one rule in :mod:`roofline_tui.core.names` (also used for the
Top-N's ``short_name``); code-object suffixes `` [clone .kd]``, `` (.kd)`` and ``.kd`` are
dropped there, so counter names match their trace names.

Rules 2 and 3 never join two templated names whose signatures differ: the template arguments
tell ``kernel<…, 7, …>`` from ``kernel<…, 6, …>`` although both short names are ``kernel``.

Within one rule, ties go to the longest matching short name, then to the candidate with the
most dispatches/cases, then to the lexically first name, so the result is deterministic.
Matching is case-sensitive except that rule 2 and 3 also compare lower-cased short names.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable
from typing import Generic, Literal, TypeVar

from ..names import cap_name, is_truncated, name_key, prefix_compatible, signature_key
from ..names import short_name as short_name

T = TypeVar("T")
MatchRule = Literal["exact", "signature", "short name", "prefix"]

MIN_PREFIX = 6
_SEPARATORS = frozenset("_.<( [-")


class NameIndex(Generic[T]):
    """Candidates indexed once by exact name and by match key, so matching N profile kernels
    against K measured ones costs O((N + K) log K), not O(N x K) short-name computations."""

    def __init__(self, candidates: Iterable[T], names_of: Callable[[T], list[str]],
                 size_of: Callable[[T], float]) -> None:
        self.items = list(candidates)
        self.names_of = names_of
        self.size_of = size_of
        self.exact: dict[str, list[T]] = {}
        self.by_key: dict[str, list[T]] = {}
        self.by_sig: dict[str, list[T]] = {}
        self.sigs: dict[int, set[str]] = {}  # id(candidate) -> its names' signatures
        for c in self.items:
            seen: set[str] = set()
            for n in names_of(c):
                self.exact.setdefault(n, []).append(c)
                sig = signature_key(n)
                if sig:
                    self.by_sig.setdefault(sig, []).append(c)
                    self.sigs.setdefault(id(c), set()).add(sig)
                k = name_key(n)
                if k and k not in seen:
                    seen.add(k)
                    self.by_key.setdefault(k, []).append(c)
        self.keys = sorted(self.by_key)

    def match(self, query: str) -> T | None:
        """Apply the matching rule (module docstring) to ``query``."""
        found = self.match_rule(query)
        return found[0] if found is not None else None

    def match_rule(self, query: str) -> tuple[T, MatchRule] | None:
        """The match for ``query`` and the rule that found it (module docstring): ``exact``,
        ``signature``, ``short name`` or ``prefix``; ``None`` when no rule yields one."""
        if not query or not self.items:
            return None
        query = cap_name(query)  # names are capped where they are read: compare like with like
        exact = self.exact.get(query)
        if exact:
            return _pick_scored([(c, len(query)) for c in exact], self.size_of,
                                self.names_of), "exact"
        q_sig = signature_key(query)
        if q_sig:
            by_sig = self.by_sig.get(q_sig)
            if by_sig:
                return _pick_scored([(c, len(q_sig)) for c in by_sig], self.size_of,
                                    self.names_of), "signature"
        q = name_key(query)
        if not q:
            return None

        def compatible(c: T) -> bool:  # the template arguments, where both have them, agree
            theirs = self.sigs.get(id(c))
            return not (q_sig and theirs) or q_sig in theirs

        same = [c for c in self.by_key.get(q, ()) if compatible(c)]
        if same:
            return _pick_scored([(c, len(q)) for c in same], self.size_of,
                                self.names_of), "short name"
        truncated = is_truncated(query)
        q_cut = q.rstrip("….").rstrip() if truncated else q
        pref: dict[int, tuple[T, int]] = {}
        if len(q_cut) >= MIN_PREFIX:
            # candidate keys that extend the query
            i = bisect.bisect_left(self.keys, q_cut)
            while i < len(self.keys) and self.keys[i].startswith(q_cut):
                k = self.keys[i]
                if prefix_compatible(q_cut, k, short_truncated=truncated):
                    for c in self.by_key[k]:
                        if compatible(c):
                            pref.setdefault(id(c), (c, len(q_cut)))
                i += 1
        # candidate keys the query extends (the candidate name was cut)
        for j in range(MIN_PREFIX, len(q_cut)):
            if q_cut[j] not in _SEPARATORS:
                continue
            for c in self.by_key.get(q_cut[:j], ()):
                if id(c) not in pref and compatible(c):
                    pref[id(c)] = (c, j)
        if pref:
            return _pick_scored(list(pref.values()), self.size_of, self.names_of), "prefix"
        return None


def best_match(
    candidates: Iterable[T],
    query: str,
    names_of: Callable[[T], list[str]],
    size_of: Callable[[T], float],
) -> T | None:
    """Apply the matching rule to ``candidates`` (see the module docstring)."""
    return NameIndex(candidates, names_of, size_of).match(query)


def _pick(
    items: list[T], key: Callable[[T], tuple[float, float]], names_of: Callable[[T], list[str]]
) -> T:
    return min(items, key=lambda c: (-key(c)[0], -key(c)[1], names_of(c)[0]))


def _pick_scored(
    scored: list[tuple[T, int]],
    size_of: Callable[[T], float],
    names_of: Callable[[T], list[str]],
) -> T:
    ordered = sorted(scored, key=lambda cs: (-cs[1], -size_of(cs[0]), names_of(cs[0])[0]))
    return ordered[0][0]
