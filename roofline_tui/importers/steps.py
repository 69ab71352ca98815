"""Serving-framework step labels (vLLM, SGLang, ATOM) -> one normalised record per step, and the
per-phase sums the Top-N's ``serving`` block reports.

Background: ``shared/docs/serving-annotations.md`` sections 2.2, 3.2, 4.1, 5.1 and 9.2/9.6.

Every forward step of a serving framework is wrapped in a ``record_function`` (or NVTX) range
whose *name* describes the step. A request *i* of a step has N_Q(i) query tokens this step and
N_KV(i) visible KV tokens (its cached prefix plus this step's tokens). The detailed labels carry,
per request group, Σ N_Q (``sq``), Σ N_KV (``sk``), Σ N_Q² (``sqsq``) and Σ N_Q·N_KV (``sqsk``).
Two groups are kept apart: *context* (prefill, including continuing chunks of a chunked prefill)
and *generation* (decode). :class:`StepRecord` holds both, whatever the framework wrote.

Families, all matched at the start of the name (a longer name is allowed after the match):

``vllm-detailed``
    ``execute_{T}_context_{Rc}(sq..sk..sqsq..sqsk..)_generation_{Rg}(sq..sk..sqsq..sqsk..)``.
    The keys inside the parentheses are read by name. Self-check: ``T == c_sq + g_sq``.
``vllm-native``
    ``execute_context_{Rc}({Σq_c})_generation_{Rg}({Σq_g})``: counts only.
``vllm-legacy``
    ``execute_new_{n}_cached_{m}``: request counts only. New requests are taken as context and
    cached ones as generation. (A cached request can still be a continuing prefill chunk; the
    label cannot tell, and this is said in ``backfilled``.)
``vllm-pair``
    ``execute_context_{Rc}({a}_{b})_generation_{Rg}({c})``, optionally with ``{T}_`` after
    ``execute_``. **What the source says.** No public emitter of this form was found. What was
    found are the readers in AMD-AGI/TraceLens that were written for it:

    * commit d4e2f815 (2026-01-23, "Feat/inference custom (#466)") adds
      ``examples/custom_workflows/split_vllm_trace_annotation.py`` and ``split_vllm_trace_simple.py``
      whose step pattern is ``execute_context_\\d+\\(\\d+_\\d+\\)_generation_\\d+\\(\\d+\\)``. The
      same commit adds ``vllm_unified_attention_with_output.get_param_details`` in
      ``TraceLens/PerfModel/perf_model.py``. That function turns ``(``, ``)`` into ``_``, splits the
      label on ``_`` and reads token 3 as ``sum_ctx_tokens``, token 4 as ``sum_ctx_squared_tokens``
      and token 8 as ``sum_gen_tokens``. Its prefill FLOPs are ``2·H_Q·Σq²·d``.
    * commit 54c5a0a6 (2026-02-11, "added roofline support using custom annotation") keeps that
      reading for labels without ``sq``. It sets ``c_sq = c_sk = a`` and ``c_sqsq = c_sqsk = b``
      (a fresh prefill assumed) and zeros every ``g_*`` field.
    * The vLLM v0.13 patch of commit 8c85b33f still has a leftover ``IterationDetails`` field
      ``num_ctx_squared_tokens`` (the sum of ``num_tokens * num_tokens`` over context requests),
      placed between the context request count and the context tokens.

    So ``a`` is Σ N_Q and ``b`` is Σ N_Q² of the context group, and ``c`` is Σ N_Q of the
    generation group. ``888_788544`` is one fresh 888-token request (888² = 788544). Σ N_KV and
    Σ N_Q·N_KV are not in the label. This module leaves them unknown rather than assume no prefix
    hit as TraceLens does, and it writes this reading into ``backfilled``. ``b`` is kept only
    when it is consistent with ``a`` and ``Rc`` (a ≤ b ≤ a² and Rc·b ≥ a²); otherwise it is
    dropped and the failure goes to ``problems``.
``sglang``
    ``step[MODE k=v ...]``. Keys are read by name, never by position. Modes are case-insensitive,
    and the lower-case forms of the PR #23419 text are accepted (``prefill`` means EXTEND,
    ``mixed ... ext= dec=``). DECODE and TARGET_VERIFY give the generation group with
    ``requests = bs``. EXTEND gives the context group with ``requests = bs``. MIXED uses ``c=`` and
    ``g=``. A label whose keys name a group (``c_*`` or ``g_*``) files it where the keys say. That
    is how TraceLens's own patch, which writes TARGET_VERIFY under ``c_``, is read.
``atom``
    ``prefill[...]``, ``decode[...]``, ``eager_decode[...]`` and their ``dummy_`` variants
    (``dummy=True``; skip them). The keys are ``bs=<real>[/<graph>]``, ``tok``, ``ctx`` (an int, a
    list, or ``[a, b, c]...+N`` when truncated), ``p``, ``d``, ``spec``, ``sqsq``, ``sqsk``, ``sk``
    and ``tbo``. ATOM writes one group per forward, so ``prefill`` gives the context group and the
    decode kinds give the generation group, with ``sq = tok``. A decode label with ``p > 0`` also
    holds prefill sequences. They stay in the generation group and ``backfilled`` says so.

Back-fills (doc 9.2). Each one is written as a line of ``StepRecord.backfilled``:

* SGLang DECODE/TARGET_VERIFY without ``g_sq``: ``g_sq = bs`` when ``g_sqsq == bs`` (or when the
  label has no ``g_sqsq``); otherwise ``round(sqrt(g_sqsq·bs))``, which assumes every request
  has the same query width.
* SGLang EXTEND without ``c_sq``: ``c_sq = toks``.

Numbers are read as Python ints, exact at any size. A run of digits longer than the
interpreter's int-conversion limit (``sys.get_int_max_str_digits()``, 4300 by default) is not
read: that field is None and the record says why.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from roofline_tui.core.lazy_re import lazy_compile

RAW_CHARS = 400  # StepRecord.raw keeps at most this many characters of the label

_GROUP_FIELDS = ("requests", "sq", "sk", "sqsq", "sqsk")
_AGG_FIELDS = ("sk", "sqsq", "sqsk")


# ---------------------------------------------------------------------------------------------
# records
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Group:
    """One request group of one step: context (prefill) or generation (decode)."""

    requests: int | None  # Rc / Rg / bs; None when the label does not say
    sq: int | None  # Σ query tokens
    sk: int | None  # Σ KV length, this step's tokens included
    sqsq: int | None  # Σ query²
    sqsk: int | None  # Σ query·KV

    def active(self) -> bool:
        """True when the group holds work: requests or tokens above zero, or counts unknown
        (the label names the group but does not count it)."""
        if self.requests is None and self.sq is None:
            return True
        return (self.requests or 0) > 0 or (self.sq or 0) > 0

    def has_aggregates(self) -> bool:
        return self.sk is not None and self.sqsq is not None and self.sqsk is not None


@dataclass(frozen=True)
class StepRecord:
    """One serving step, normalised (see the module docstring for the families)."""

    framework: str  # "vllm" | "sglang" | "atom"
    family: str  # "vllm-detailed" | "vllm-native" | "vllm-legacy" | "vllm-pair" | "sglang" | "atom"
    raw: str  # the label, at most RAW_CHARS characters
    tokens: int | None  # T: all query tokens of the step
    context: Group | None
    generation: Group | None
    has_aggregates: bool  # sk/sqsq/sqsk known for every non-empty group
    phase: str  # "decode_only" | "prefill_only" | "mixed" | "idle"
    mode: str | None  # SGLang forward mode (upper case), ATOM kind; None for vLLM
    capture_size: int | None  # what a graph capture is chosen by (vLLM T, SGLang bs, ATOM graph bs)
    spec_width: int | None  # query tokens per decode request when > 1 (MTP / EAGLE)
    tbo: bool  # ATOM two-batch-overlap step
    dummy: bool  # ATOM dummy_* (and SGLang DUMMY_*) forwards: skip them
    backfilled: tuple[str, ...]  # one line per value not read from the label, and why
    problems: tuple[str, ...]  # failed self-checks
    kv_lengths: tuple[int, ...] | None = None  # per-request KV lengths when the label lists all


class _Notes:
    """The back-fill and problem lines collected while one label is parsed."""

    def __init__(self) -> None:
        self.backfilled: list[str] = []
        self.problems: list[str] = []

    def fill(self, line: str) -> None:
        self.backfilled.append(line)

    def problem(self, line: str) -> None:
        self.problems.append(line)


def _int(digits: str, what: str, notes: _Notes) -> int | None:
    """``digits`` (ASCII 0-9 only) as an exact int, or None when it is too long to convert."""
    limit = sys.get_int_max_str_digits()
    if limit and len(digits) > limit:
        notes.problem(f"{what}: {len(digits)} digits, over the int-conversion limit; not read")
        return None
    return int(digits)


def _opt_int(digits: str | None, what: str, notes: _Notes) -> int | None:
    return None if digits is None else _int(digits, what, notes)


def _check_group(name: str, g: Group, notes: _Notes) -> None:
    """Relations every group obeys when each request has ≥ 1 query token and N_KV ≥ N_Q."""
    r, sq, sk, qq, qk = g.requests, g.sq, g.sk, g.sqsq, g.sqsk
    if r == 0:
        nonzero = [f"{k}={v}" for k, v in (("sq", sq), ("sk", sk), ("sqsq", qq), ("sqsk", qk))
                   if v not in (None, 0)]
        if nonzero:
            notes.problem(f"{name}: 0 requests but {', '.join(nonzero)}")
        return
    if r is not None and sq is not None and sq < r:
        notes.problem(f"{name}: sq={sq} < requests={r}")
    if sq is not None and qq is not None:
        if qq < sq:
            notes.problem(f"{name}: sqsq={qq} < sq={sq}")
        elif qq > sq * sq:
            notes.problem(f"{name}: sqsq={qq} > sq²={sq * sq}")
        elif r is not None and r * qq < sq * sq:
            notes.problem(f"{name}: requests·sqsq={r * qq} < sq²={sq * sq}")
    if sq is not None and sk is not None and sk < sq:
        notes.problem(f"{name}: sk={sk} < sq={sq}")
    if qq is not None and qk is not None and qk < qq:
        notes.problem(f"{name}: sqsk={qk} < sqsq={qq}")


def _phase(context: Group | None, generation: Group | None) -> str:
    c = context is not None and context.active()
    g = generation is not None and generation.active()
    if c and g:
        return "mixed"
    if c:
        return "prefill_only"
    if g:
        return "decode_only"
    return "idle"


def _has_aggregates(groups: list[Group]) -> bool:
    """At least one group carries the aggregates, and every non-empty group does."""
    if not any(g.has_aggregates() for g in groups):
        return False
    return all(g.has_aggregates() for g in groups if g.active())


def _uniform_width(g: Group | None) -> int | None:
    """Query tokens per request of a generation group when that is a whole number > 1."""
    if g is None or not g.requests or g.sq is None or g.sq % g.requests:
        return None
    w = g.sq // g.requests
    return w if w > 1 else None


def _total_tokens(groups: list[Group]) -> int | None:
    if any(g.sq is None for g in groups):
        return None
    return sum(g.sq or 0 for g in groups)


def _record(framework: str, family: str, name: str, notes: _Notes, *, tokens: int | None,
            context: Group | None, generation: Group | None, mode: str | None,
            capture_size: int | None, spec_width: int | None, tbo: bool = False,
            dummy: bool = False, kv_lengths: tuple[int, ...] | None = None) -> StepRecord:
    for label, grp in (("context", context), ("generation", generation)):
        if grp is not None:
            _check_group(label, grp, notes)
    groups = [g for g in (context, generation) if g is not None]
    return StepRecord(
        framework=framework, family=family, raw=name[:RAW_CHARS], tokens=tokens,
        context=context, generation=generation, has_aggregates=_has_aggregates(groups),
        phase=_phase(context, generation), mode=mode, capture_size=capture_size,
        spec_width=spec_width, tbo=tbo, dummy=dummy, backfilled=tuple(notes.backfilled),
        problems=tuple(notes.problems), kv_lengths=kv_lengths)


# ---------------------------------------------------------------------------------------------
# vLLM
# ---------------------------------------------------------------------------------------------

_VLLM = lazy_compile(r"execute_(?:([0-9]+)_)?context_([0-9]+)\(([^()]*)\)"
                     r"_generation_([0-9]+)\(([^()]*)\)", re.ASCII)
_VLLM_LEGACY = lazy_compile(r"execute_new_([0-9]+)_cached_([0-9]+)(?![0-9])", re.ASCII)
_KEYED_TOKEN = lazy_compile(r"(sqsq|sqsk|sq|sk)([0-9]+)", re.ASCII)  # longest key first
_PLAIN = lazy_compile(r"[0-9]+", re.ASCII)
_PAIR = lazy_compile(r"([0-9]+)_([0-9]+)", re.ASCII)


def _keyed(inner: str) -> list[tuple[str, str]] | None:
    """``sq8155sk8430…`` as (key, digits) pairs, or None unless the whole text is such pairs."""
    pos, out = 0, []
    while pos < len(inner):
        m = _KEYED_TOKEN.match(inner, pos)
        if m is None:
            return None
        out.append((m.group(1), m.group(2)))
        pos = m.end()
    return out or None


def _vllm_group(name: str, requests: int | None, inner: str, notes: _Notes
                ) -> tuple[Group, str]:
    """One parenthesised group, and the form it was written in:
    "keyed", "plain", "pair" or "bad"."""
    pairs = _keyed(inner)
    if pairs is not None:
        vals: dict[str, int | None] = {}
        for key, digits in pairs:
            if key in vals:
                notes.problem(f"{name}: key {key} given twice; the first is kept")
                continue
            vals[key] = _int(digits, f"{name} {key}", notes)
        absent = [k for k in ("sq", "sk", "sqsq", "sqsk") if k not in vals]
        if absent:
            notes.problem(f"{name}: the label has no {', '.join(absent)}")
        return Group(requests, vals.get("sq"), vals.get("sk"), vals.get("sqsq"),
                     vals.get("sqsk")), "keyed"
    if _PLAIN.fullmatch(inner):
        return Group(requests, _int(inner, f"{name} tokens", notes), None, None, None), "plain"
    if m := _PAIR.fullmatch(inner):
        a = _int(m.group(1), f"{name} tokens", notes)
        b = _int(m.group(2), f"{name} squared tokens", notes)
        sqsq = b
        if a is not None and b is not None:
            ok = a <= b <= a * a if a > 0 else b == 0
            if ok and requests is not None and requests > 0:
                ok = requests * b >= a * a
            if not ok:
                notes.problem(f"{name} ({inner}): {b} cannot be Σq² of {requests} requests "
                              f"with Σq = {a}; not kept")
                sqsq = None
        kept = f"sq={a}, sqsq={sqsq}" if sqsq is not None else f"sq={a}"
        notes.fill(f"{name} ({inner}) read as {kept}: the TraceLens reader of this form "
                   f"(Σ tokens, Σ tokens²); sk and sqsk are not in the label, left unknown")
        return Group(requests, a, None, sqsq, None), "pair"
    notes.problem(f"{name} ({inner[:60]}): contents not understood")
    return Group(requests, None, None, None, None), "bad"


def _parse_vllm(name: str) -> StepRecord | None:
    notes = _Notes()
    if m := _VLLM.match(name):
        t = _opt_int(m.group(1), "T", notes)
        rc = _int(m.group(2), "context requests", notes)
        rg = _int(m.group(4), "generation requests", notes)
        ctx, c_form = _vllm_group("context", rc, m.group(3), notes)
        gen, g_form = _vllm_group("generation", rg, m.group(5), notes)
        forms = {c_form, g_form}
        if "pair" in forms:
            family = "vllm-pair"
        elif "keyed" in forms:
            family = "vllm-detailed"
        elif "plain" in forms:
            family = "vllm-native"
        else:
            family = "vllm-detailed" if m.group(1) is not None else "vllm-native"
        if len(forms - {"bad"}) > 1 and forms - {"bad"} != {"pair", "plain"}:
            notes.problem(f"the two groups are written in different forms ({c_form}, {g_form})")
        both = _total_tokens([ctx, gen])
        tokens = t
        if t is not None and both is not None and t != both:
            notes.problem(f"T={t} != c_sq + g_sq = {both}")
        if t is None:
            tokens = both
            if family == "vllm-detailed" and both is not None:
                notes.fill(f"T = c_sq + g_sq = {both} (label has no T)")
        return _record("vllm", family, name, notes, tokens=tokens, context=ctx, generation=gen,
                       mode=None, capture_size=tokens, spec_width=_uniform_width(gen))
    if m := _VLLM_LEGACY.match(name):
        new = _int(m.group(1), "new requests", notes)
        cached = _int(m.group(2), "cached requests", notes)
        notes.fill("legacy label: new requests counted as context and cached ones as "
                   "generation (a cached request may still be a continuing prefill chunk)")
        return _record("vllm", "vllm-legacy", name, notes, tokens=None,
                       context=Group(new, None, None, None, None),
                       generation=Group(cached, None, None, None, None),
                       mode=None, capture_size=None, spec_width=None)
    return None


# ---------------------------------------------------------------------------------------------
# SGLang
# ---------------------------------------------------------------------------------------------

_SGLANG = lazy_compile(r"step\[([A-Za-z_]+)([^\]]*)\]", re.ASCII)
_DIGITS = lazy_compile(r"[0-9]+", re.ASCII)
_SGLANG_KEYS = frozenset({"bs", "toks", "c", "g", "ext", "dec"} |
                         {f"{p}_{k}" for p in "cg" for k in ("sq", "sk", "sqsq", "sqsk")})


def _kv_tokens(body: str, known: frozenset[str], notes: _Notes) -> dict[str, int | None]:
    """``k=v`` words of a label body; keys lower-cased; unknown keys ignored."""
    out: dict[str, int | None] = {}
    for word in body.split():
        key, eq, val = word.partition("=")
        key = key.lower()
        if not eq or key not in known:
            continue
        if key in out:
            notes.problem(f"key {key} given twice; the first is kept")
            continue
        if not _DIGITS.fullmatch(val):
            notes.problem(f"{key}={val[:40]}: not a whole number")
            continue
        out[key] = _int(val, key, notes)
    return out


def _sg_group(kv: dict[str, int | None], prefix: str, requests: int | None) -> Group:
    return Group(requests, kv.get(f"{prefix}_sq"), kv.get(f"{prefix}_sk"),
                 kv.get(f"{prefix}_sqsq"), kv.get(f"{prefix}_sqsk"))


def _decode_sq(bs: int | None, sqsq: int | None, notes: _Notes, *,
               one_token: bool = True) -> int | None:
    """Back-fill g_sq of a decode-like group whose label does not give it (doc 9.2).
    ``one_token``: without g_sqsq, assume one query token per request (not for a verify step,
    whose width is the draft length)."""
    if bs is None or (sqsq is None and not one_token):
        return None
    if sqsq is None:
        notes.fill(f"g_sq = bs = {bs} (label has no g_sq or g_sqsq; one query token per "
                   "request assumed)")
        return bs
    if sqsq == bs:
        notes.fill(f"g_sq = bs = {bs} (label has no g_sq; g_sqsq == bs)")
        return bs
    n = sqsq * bs
    r = math.isqrt(n)
    if (r + 1) * (r + 1) - n < n - r * r:
        r += 1
    exact = "" if r * r == n else "; g_sqsq·bs is not a square, so the widths differ"
    notes.fill(f"g_sq = round(sqrt(g_sqsq·bs)) = {r} (label has no g_sq; the same query "
               f"width for every request assumed{exact})")
    return r


def _sg_mixed(kv: dict[str, int | None], bs: int | None, notes: _Notes
              ) -> tuple[Group, Group]:
    """The context and generation groups of a MIXED step: the requests each side has, filled
    from ``bs`` when the label gives one side only, and the text form of PR #23419 (``ext``,
    ``dec``) read as the query tokens."""
    c_req, g_req = kv.get("c"), kv.get("g")
    dec, ext = kv.get("dec"), kv.get("ext")
    if g_req is None and dec is not None:
        g_req = dec
        notes.fill(f"generation requests = dec = {dec} (PR #23419 text form)")
    if bs is not None and (c_req is None) != (g_req is None):
        if c_req is None and g_req is not None and g_req <= bs:
            c_req = bs - g_req
            notes.fill(f"context requests = bs - g = {c_req} (label has no c=)")
        elif g_req is None and c_req is not None and c_req <= bs:
            g_req = bs - c_req
            notes.fill(f"generation requests = bs - c = {g_req} (label has no g=)")
    ctx = _sg_group(kv, "c", c_req)
    gen = _sg_group(kv, "g", g_req)
    if ctx.sq is None and ext is not None:
        ctx = Group(ctx.requests, ext, ctx.sk, ctx.sqsq, ctx.sqsk)
        notes.fill(f"c_sq = ext = {ext} (PR #23419 text form; ext read as the prefill "
                   "tokens)")
    if gen.sq is None and dec is not None and gen.sqsq is None:
        gen = Group(gen.requests, dec, gen.sk, gen.sqsq, gen.sqsk)
        notes.fill(f"g_sq = dec = {dec} (one token per decode request)")
    if bs is not None and c_req is not None and g_req is not None and c_req + g_req != bs:
        notes.problem(f"c + g = {c_req + g_req} != bs = {bs}")
    return ctx, gen


def _parse_sglang(name: str) -> StepRecord | None:
    m = _SGLANG.match(name)
    if m is None:
        return None
    notes = _Notes()
    mode = m.group(1).upper()
    kv = _kv_tokens(m.group(2), _SGLANG_KEYS, notes)
    bs, toks = kv.get("bs"), kv.get("toks")
    has_c = any(k == "c" or k.startswith("c_") for k in kv)
    has_g = any(k == "g" or k.startswith("g_") for k in kv)
    ctx: Group | None = None
    gen: Group | None = None
    extend_like = mode in ("EXTEND", "PREFILL") or "EXTEND" in mode or "PREFILL" in mode
    decode_like = mode == "DECODE" or mode == "TARGET_VERIFY" or "DECODE" in mode

    if mode == "MIXED":
        ctx, gen = _sg_mixed(kv, bs, notes)
    elif has_c or has_g:
        # the keys say where the work goes (TraceLens's patch files TARGET_VERIFY under c_)
        if has_c:
            c_req = kv.get("c", bs if not has_g else None)
            ctx = _sg_group(kv, "c", c_req)
            if mode == "TARGET_VERIFY":
                notes.fill("TARGET_VERIFY filed under context, as the label's c_ keys say "
                           "(TraceLens patch; upstream files it under g_)")
        if has_g:
            g_req = kv.get("g", bs if not has_c else None)
            gen = _sg_group(kv, "g", g_req)
            if mode == "TARGET_VERIFY":
                notes.fill("TARGET_VERIFY filed under generation (upstream)")
    elif mode == "IDLE":
        pass
    elif extend_like:
        ctx = Group(bs, None, None, None, None)
    elif decode_like:
        gen = Group(bs, None, None, None, None)
        if mode == "TARGET_VERIFY":
            notes.fill("TARGET_VERIFY filed under generation (upstream)")
    elif not mode.startswith("DUMMY"):
        notes.problem(f"mode {mode}: no request group is known for it")

    # back-fills of the per-group query tokens
    if ctx is not None and ctx.sq is None and toks is not None and (extend_like or not has_g):
        ctx = Group(ctx.requests, toks, ctx.sk, ctx.sqsq, ctx.sqsk)
        notes.fill(f"c_sq = toks = {toks} (label has no c_sq)")
    elif ctx is not None and ctx.sq is not None and toks is not None and extend_like \
            and gen is None and ctx.sq != toks:
        notes.problem(f"toks={toks} != c_sq={ctx.sq}")
    if gen is not None and gen.sq is None and (decode_like or mode == "MIXED"):
        sq = _decode_sq(gen.requests, gen.sqsq, notes, one_token=mode != "TARGET_VERIFY")
        gen = Group(gen.requests, sq, gen.sk, gen.sqsq, gen.sqsk)

    groups = [g for g in (ctx, gen) if g is not None]
    tokens = _total_tokens(groups) if groups else (0 if mode == "IDLE" else None)
    if tokens is None and extend_like and gen is None:
        tokens = toks
    return _record("sglang", "sglang", name, notes, tokens=tokens, context=ctx, generation=gen,
                   mode=mode, capture_size=bs, spec_width=_uniform_width(gen),
                   dummy=mode.startswith("DUMMY"))


# ---------------------------------------------------------------------------------------------
# ATOM
# ---------------------------------------------------------------------------------------------

_ATOM = lazy_compile(r"(dummy_)?(prefill|decode|eager_decode)\[(.*)\]", re.ASCII | re.DOTALL)
_ATOM_CTX = lazy_compile(r"(?<!\S)ctx=(\[[^\]]*\](?:\.\.\.\+[0-9]+)?|[0-9]+)", re.ASCII)
_ATOM_BS = lazy_compile(r"(?<!\S)bs=([0-9]+)(?:/([0-9]+))?(?!\S)", re.ASCII)
_ATOM_KEYS = frozenset({"tok", "p", "d", "spec", "sqsq", "sqsk", "sk", "tbo"})
_TRUNCATED = lazy_compile(r"\[([^\]]*)\]\.\.\.\+([0-9]+)", re.ASCII)


def _atom_ctx(text: str, bs: int | None, notes: _Notes) -> tuple[int, ...] | None:
    """The per-request KV lengths of ``ctx=``, or None when truncated or unreadable."""
    if _DIGITS.fullmatch(text):
        n = _int(text, "ctx", notes)
        values: tuple[int, ...] | None = None if n is None else (n,)
        count = 1
    elif m := _TRUNCATED.fullmatch(text):
        shown = [s for s in m.group(1).split(",") if s.strip()]
        more = _int(m.group(2), "ctx count", notes)
        values, count = None, len(shown) + (more or 0)
        if more is None:
            count = -1
    else:
        parts = [s.strip() for s in text[1:-1].split(",")] if text[1:-1].strip() else []
        if not all(_DIGITS.fullmatch(p) for p in parts):
            notes.problem(f"ctx={text[:60]}: not a list of whole numbers")
            return None
        read = [_int(p, "ctx", notes) for p in parts]
        values = None if any(v is None for v in read) else tuple(v or 0 for v in read)
        count = len(parts)
    if bs is not None and count >= 0 and count != bs:
        notes.problem(f"ctx lists {count} sequences but bs={bs}")
    return values


def _parse_atom(name: str) -> StepRecord | None:
    m = _ATOM.match(name)
    if m is None:
        return None
    notes = _Notes()
    dummy = m.group(1) is not None
    kind = m.group(2)
    body = m.group(3)
    bs = graph = None
    if b := _ATOM_BS.search(body):
        bs = _int(b.group(1), "bs", notes)
        graph = _opt_int(b.group(2), "graph bs", notes)
        body = body[:b.start()] + " " + body[b.end():]
    kv_lengths = None
    if c := _ATOM_CTX.search(body):
        kv_lengths = _atom_ctx(c.group(1), bs, notes)
        body = body[:c.start()] + " " + body[c.end():]
    kv = _kv_tokens(body, _ATOM_KEYS, notes)
    tok, p, d, spec = kv.get("tok"), kv.get("p"), kv.get("d"), kv.get("spec")
    width = spec + 1 if spec is not None and spec > 0 else None
    group = Group(bs, tok, kv.get("sk"), kv.get("sqsq"), kv.get("sqsk"))
    ctx = gen = None
    if kind == "prefill":
        ctx = group
    else:
        gen = group
        if p:
            line = (f"the decode label holds p={p} prefill sequences; all {bs} requests are "
                    "kept in the generation group (ATOM writes one group)")
            if tok is not None and d is not None:
                line += f"; by doc 6.3 the prefill share is tok - d·w = {tok - d * (width or 1)}"
            notes.fill(line)
        if d is not None and bs is not None and (p or 0) + d != bs:
            notes.problem(f"p + d = {(p or 0) + d} != bs = {bs}")
        if not p and tok is not None and bs is not None and tok != bs * (width or 1):
            notes.problem(f"tok={tok} != bs·(spec+1) = {bs * (width or 1)}")
    if graph is not None and bs is not None and graph < bs:
        notes.problem(f"graph bs {graph} < real bs {bs}")
    return _record("atom", "atom", name, notes, tokens=tok, context=ctx, generation=gen,
                   mode=("dummy_" if dummy else "") + kind,
                   capture_size=graph if graph is not None else bs, spec_width=width,
                   tbo=bool(kv.get("tbo")), dummy=dummy, kv_lengths=kv_lengths)


# ---------------------------------------------------------------------------------------------
# public parsing API
# ---------------------------------------------------------------------------------------------


def parse_step_label(name: str) -> StepRecord | None:
    """The step record of a serving-framework step label, or None when ``name`` is not one
    (``ProfilerStep#6``, ``## Call CompiledFxGraph … ##``, ``capture_32_FULL``, …).

    A label that is a step label but fails a self-check is still returned, with the failure in
    ``problems``. Never raises, for any string."""
    if not isinstance(name, str):
        return None
    if name.startswith("execute_"):
        return _parse_vllm(name)
    if name.startswith("step["):
        return _parse_sglang(name)
    if name.startswith(("prefill[", "decode[", "eager_decode[", "dummy_")):
        return _parse_atom(name)
    return None


_CAPTURE_VLLM = lazy_compile(r"capture_([0-9]+)_(?:(\w+?)_)?(FULL|PIECEWISE)", re.ASCII)
_CAPTURE_SGLANG = lazy_compile(r"capture_([0-9]+)_DECODE", re.ASCII)
_CAPTURE_ATOM = lazy_compile(r"capture_graph_bs_([0-9]+)", re.ASCII)


def capture_label(name: str) -> tuple[int, str] | None:
    """``(size, mode)`` of a graph-capture window label, else None.

    * vLLM ``capture_<N>_[<subsystem>_](FULL|PIECEWISE)``: size in tokens; the mode keeps the
      subsystem (``capture_32_draft_FULL`` -> ``(32, "draft_FULL")``);
    * TraceLens's SGLang patch ``capture_<bs>_DECODE`` -> ``(bs, "DECODE")``;
    * ATOM ``capture_graph_bs_<bs>`` -> ``(bs, "GRAPH")``.

    The whole name must match."""
    if not isinstance(name, str) or not name.startswith("capture_"):
        return None
    limit = sys.get_int_max_str_digits()

    def size(digits: str) -> int | None:
        return None if limit and len(digits) > limit else int(digits)

    if m := _CAPTURE_SGLANG.fullmatch(name):
        n = size(m.group(1))
        return None if n is None else (n, "DECODE")
    if m := _CAPTURE_VLLM.fullmatch(name):
        n = size(m.group(1))
        if n is None:
            return None
        sub = m.group(2)
        return (n, f"{sub}_{m.group(3)}" if sub else m.group(3))
    if m := _CAPTURE_ATOM.fullmatch(name):
        n = size(m.group(1))
        return None if n is None else (n, "GRAPH")
    return None


# ---------------------------------------------------------------------------------------------
# JSON and aggregation
# ---------------------------------------------------------------------------------------------


def _json_num(x: int | Fraction | None) -> int | float | None:
    """Ints stay ints; other ratios become floats rounded to 3 decimals (an int when whole,
    or when too large for a float)."""
    if x is None or isinstance(x, int):
        return x
    if x.denominator == 1:
        return int(x.numerator)
    try:
        return round(x.numerator / x.denominator, 3)
    except OverflowError:
        return x.numerator // x.denominator


def _group_dict(g: Group | None) -> dict[str, int | None] | None:
    if g is None:
        return None
    return {"requests": g.requests, "sq": g.sq, "sk": g.sk, "sqsq": g.sqsq, "sqsk": g.sqsk}


def step_to_dict(rec: StepRecord) -> dict[str, Any]:
    """A JSON-ready dict of one record (groups as dicts, tuples as lists)."""
    return {
        "framework": rec.framework, "family": rec.family, "raw": rec.raw,
        "tokens": rec.tokens, "context": _group_dict(rec.context),
        "generation": _group_dict(rec.generation), "has_aggregates": rec.has_aggregates,
        "phase": rec.phase, "mode": rec.mode, "capture_size": rec.capture_size,
        "spec_width": rec.spec_width, "tbo": rec.tbo, "dummy": rec.dummy,
        "kv_lengths": None if rec.kv_lengths is None else list(rec.kv_lengths),
        "backfilled": list(rec.backfilled), "problems": list(rec.problems),
    }


def _median(values: list[Fraction]) -> Fraction:
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def _ratio(a: int | None, b: int | None) -> int | float | None:
    if a is None or not b:
        return None
    return _json_num(Fraction(a, b))


class _PhaseSums:
    def __init__(self) -> None:
        self.steps = 0
        self.sums: dict[str, int] = dict.fromkeys(_GROUP_FIELDS, 0)
        self.missing: set[str] = set()
        self.with_aggregates = 0
        self.with_backfills = 0
        self.with_problems = 0
        self.frameworks: set[str] = set()
        self.per_request: list[Fraction] = []
        self.all_listed = True  # every counted step lists its requests' KV lengths
        self.step_means: list[Fraction] = []

    def add(self, rec: StepRecord, g: Group, only_group: bool) -> None:
        self.steps += 1
        self.frameworks.add(rec.framework)
        for f in _GROUP_FIELDS:
            v = getattr(g, f)
            if v is None:
                self.missing.add(f)
            else:
                self.sums[f] += v
        self.with_aggregates += g.has_aggregates()
        self.with_backfills += bool(rec.backfilled)
        self.with_problems += bool(rec.problems)
        if only_group and rec.kv_lengths:
            self.per_request.extend(Fraction(v) for v in rec.kv_lengths)
        else:
            self.all_listed = False
        if g.sk is not None and g.requests:
            self.step_means.append(Fraction(g.sk, g.requests))

    def result(self) -> dict[str, Any]:
        total = {f: (None if f in self.missing else self.sums[f]) for f in _GROUP_FIELDS}
        if self.all_listed and self.per_request:
            values = self.per_request
            of = "KV length per request (from the labels' per-request context lists)"
        else:
            values = self.step_means
            of = "mean KV length per request of each step (sk / requests)"
            if not values:
                of = "not derivable: no counted step gives sk and a request count"
        context: dict[str, Any] = {
            "min": _json_num(min(values)) if values else None,
            "median": _json_num(_median(values)) if values else None,
            "max": _json_num(max(values)) if values else None,
            "of": of, "values": len(values),
        }
        return {
            "steps": self.steps, **total,
            "missing": [f for f in _GROUP_FIELDS if f in self.missing],
            "steps_with_aggregates": self.with_aggregates,
            "steps_with_backfills": self.with_backfills,
            "steps_with_problems": self.with_problems,
            "frameworks": sorted(self.frameworks),
            "mean_kv_per_request": _ratio(total["sk"], total["requests"]),
            "mean_query_per_request": _ratio(total["sq"], total["requests"]),
            "context": context,
        }


def phase_aggregates(steps: Iterable[StepRecord]) -> dict[str, dict[str, Any]]:
    """Per-group sums over ``steps`` for the Top-N's ``serving`` block.

    Keys: ``"prefill"`` (context groups) and ``"decode"`` (generation groups), each present only
    when at least one step has that group non-empty. Dummy and idle steps are skipped. Each value
    holds:

    * ``steps``: the steps counted;
    * ``requests``, ``sq``, ``sk``, ``sqsq``, ``sqsk``: sums over those steps. A sum is None when
      any counted step lacks the field, and ``missing`` names those fields;
    * ``steps_with_aggregates``, ``steps_with_backfills``, ``steps_with_problems``, and
      ``frameworks``;
    * ``mean_kv_per_request`` (Σsk / Σrequests) and ``mean_query_per_request`` (Σsq /
      Σrequests), when known;
    * ``context``: min/median/max of the KV length. It is per request when every counted step
      lists its requests' lengths (ATOM ``ctx``, not truncated). Otherwise it is one value per
      step, that step's sk / requests. ``of`` says which, and ``values`` how many.

    JSON-ready: ints stay ints and other ratios are floats rounded to 3 decimals."""
    acc = {"prefill": _PhaseSums(), "decode": _PhaseSums()}
    for rec in steps:
        if rec.dummy or rec.phase == "idle":
            continue
        live = [(k, g) for k, g in (("prefill", rec.context), ("decode", rec.generation))
                if g is not None and g.active()]
        for key, g in live:
            acc[key].add(rec, g, only_group=len(live) == 1)
    return {key: a.result() for key, a in acc.items() if a.steps}
