"""A readable label for a head kernel that one library name shares between several jobs.

One hipBLASLt ``Cijk_…`` solution serves the QKV, O and MLP projections alike; one
``elementwise_kernel`` serves every copy and multiply. Their short names differ only somewhere
in the middle (or not at all), so a one-line reading that cuts them reads the same for all.
What tells them apart is what the trace recorded of the launching op (``core.topn_ext``
instances): the GEMM's shape and the module that launched it, the elementwise op and its
tensor, the attention op.

:func:`label_of` answers from the entry's dominant instance (most time), adding ``+N shapes``
when the entry holds other shapes too:

* a GEMM: ``GEMM 32×4096→24576 (MergedColumnParallelLinear)``: operand A's dims, then the
  output's last axis N; the module when recorded, else the op;
* attention: the launching op (``vllm::unified_attention_with_output``);
* anything else: the op with the dtype and dims of the tensor it writes
  (``aten::copy_ bf16 [16,16,559,64]``); without a recorded op, an elementwise kernel's functor
  read from its name (``direct_copy_kernel_cuda``);
* nothing recorded: the short name, as before.

Pure, bounded (:data:`LABEL_MAX` characters) and printable (``core.textsafe``).

:func:`row_labels` is the one rule every table names its rows by (the CLI table, the CSV's
``label`` column, the ``.md`` tables, the chart legend, the dashboard's rankings):

1. each row reads its recorded label (above) when it says more than the short name, else the
   kernel's display name (demangled, templates folded: ``par_ranged2d_kernel<…>``);
2. rows that would still read the same get what their full names differ by, after `` · ``:
   the first differing word of the demangled name at each point where the rows part
   (``par_ranged2d_kernel<…> · PdV_kernel … instance 2``; the vLLM MoE pair
   ``vllm::moe_forward bf16 [32,3072]`` and ``… · swiglu``), else the regime;
3. only when nothing recorded differs, ``#N`` (N = 2, 3, … in row order);
4. cut to a renderer's width (:func:`fit_labels`): the part after `` · `` is kept and the rest
   cut in the middle; rows the cut would make equal keep the window where they differ, and
   ``#N`` again is the last resort. No two rows come out the same.
"""

from __future__ import annotations

import itertools
import math
import os
import re
from collections import defaultdict
from collections.abc import Callable, Sequence

from roofline_tui.core.artifact import Entry
from roofline_tui.core.demangle import display_name, fit, full_name
from roofline_tui.core.dtypes import canonical_dtype
from roofline_tui.core.inputs import TopNEntry
from roofline_tui.core.lazy_re import lazy_compile
from roofline_tui.core.textsafe import printable
from roofline_tui.core.topn_ext import Instance

__all__ = ["DETAIL_SEP", "LABEL_MAX", "fit_labels", "label_of", "row_labels"]

LABEL_MAX = 60

# module leaves that name a layer type, not a role: the parent says more
_GENERIC_MODULES = frozenset({
    "Linear", "LazyLinear", "Conv1d", "Conv2d", "Conv3d", "Embedding", "Module", "Sequential",
    "ModuleList", "ModuleDict", "Identity", "Dropout"})

# a functor or a *_kernel_cuda lambda host inside an ATen elementwise kernel's name
_FUNCTOR = lazy_compile(r"\b(\w*Functor\w*|\w+_kernel_cuda)\b")


def label_of(entry: TopNEntry, op_class: str) -> str:
    """The entry's readable label (see the module docstring); its short name when the trace
    recorded nothing that says more."""
    short = entry.short_name
    instances = [i for i in (entry.ext.instances if entry.ext is not None else [])
                 if i.op is not None]
    text: str | None = None
    if instances:
        top = max(instances, key=lambda i: i.total_us)
        text = _describe(top, op_class)
        if text is not None:
            others = {_describe(i, op_class) for i in instances if i is not top}
            others.discard(text)
            folded = entry.ext.folded.instances if entry.ext and entry.ext.folded else 0
            more = len(others) + max(folded, 0)
            if more:
                suffix = f" +{more} shape{'s' if more > 1 else ''}"
                return printable(text, limit=LABEL_MAX - len(suffix)) + suffix
    elif op_class == "elementwise":
        m = _FUNCTOR.search(entry.name)
        text = m.group(1) if m else None
    return printable(text if text else short, limit=LABEL_MAX)


def _describe(inst: Instance, op_class: str) -> str | None:
    op = inst.op or ""
    if op_class == "gemm":
        shape = _gemm_shape(inst)
        if shape is not None:
            where = _module(inst.module) or op
            return f"GEMM {shape} ({where})" if where else f"GEMM {shape}"
        return op or None
    if op_class == "attn":
        return op or None
    dims, dtype = _written(inst)
    parts = [op] + ([dtype] if dtype else []) + ([_dims(dims)] if dims is not None else [])
    return " ".join(p for p in parts if p) or None


def _plain(dims: object) -> list[int] | None:
    if isinstance(dims, list) and dims and all(type(d) is int for d in dims):
        return list(dims)
    return None


def _first(inst: Instance, *roles: str) -> list[int] | None:
    for role in roles:
        for a in inst.args:
            d = _plain(a.dims) if a.role == role else None
            if d is not None:
                return d
    return None


def _gemm_shape(inst: Instance) -> str | None:
    """``M×K→N`` (A's dims, then N), from operand A (first input) and B (first weight) as the
    op stores B: ``linear`` [N, K], matmul [..., K, N]; an ``out=`` argument gives N itself."""
    a = _first(inst, "input")
    if a is None:
        return None
    b = _first(inst, "weight")
    out = _first(inst, "output")
    k = a[-1]
    n: int | None = None
    if b is not None and inst.output == "linear":
        n = b[0]
    elif b is not None and inst.output == "gemm":
        n = b[-1] if len(b) > 1 else None
    elif out is not None:
        n = out[-1]
    elif b is not None and len(b) >= 2:
        n = b[-1] if b[-2] == k else (b[0] if b[-1] == k and len(b) == 2 else None)
    head = "×".join(str(d) for d in a)
    if n is None:
        return None if b is None else f"{head}·{'×'.join(str(d) for d in b)}"
    if len(a) == 1:
        head = f"1×{head}"
    return f"{head}→{n}"


def _module(path: str | None) -> str | None:
    """The module that says the role: the innermost part of the path that is not a bare layer
    type (``Qwen2DecoderLayer/Qwen2MLP/Linear`` → ``Qwen2MLP``)."""
    if not path:
        return None
    parts = [p for p in path.split("/") if p]
    for p in reversed(parts):
        if p not in _GENERIC_MODULES:
            return p
    return parts[-1] if parts else None


def _written(inst: Instance) -> tuple[list[int] | None, str | None]:
    """The dims and canonical dtype of the tensor the op writes (else the one it reads)."""
    for role in ("output", "inplace", "input", "weight"):
        for a in inst.args:
            d = _plain(a.dims) if a.role == role else None
            if d is not None and math.prod(d) > 0:
                return d, canonical_dtype(a.type)
    return None, None


def _dims(dims: list[int]) -> str:
    return "[" + ",".join(str(d) for d in dims) + "]"


# -- one row label per table row ----------------------------------------------------------------

DETAIL_SEP = " · "  # between what a row reads and what tells it from its look-alikes
_NAME_SCAN = 2048  # characters of a full name compared (a megabyte-long name costs no more)
_SNIPPET_MAX = 24
_NAME_MAX = 200  # a display name longer than this is cut in the middle (the words added still tell)
_MAX_PARTS = 3  # parting words a row shows at most (then ``#N`` tells the rest apart)
_TOKEN = lazy_compile(r"[A-Za-z]+|\d+|[^\sA-Za-z\d]")


def _base(e: Entry) -> str:
    """What a row reads before any disambiguation: the recorded label when it says more than
    the short name, else the display name."""
    label = getattr(e, "label", None)
    if isinstance(label, str) and label.strip() and label != e.short_name:
        return printable(label, limit=LABEL_MAX)
    return fit(printable(display_name(e.name) if e.name else e.short_name),
               _NAME_MAX)


def _run_at(text: str, start: int, end: int) -> str:
    """The word around ``text[start:end]``: the identifier run holding it when short
    (``PdV_kernel``), else its letters-and-digits run (``MT256x32x64`` of a hipBLASLt name), at
    most :data:`_SNIPPET_MAX` characters."""
    for extra in ("_", ""):
        a, b = start, end
        while a > 0 and (text[a - 1].isascii() and text[a - 1].isalnum() or text[a - 1] in extra):
            a -= 1
        while b < len(text) and (text[b].isascii() and text[b].isalnum() or text[b] in extra):
            b += 1
        if b - a <= _SNIPPET_MAX:
            return text[a:b]
    return text[start:end][:_SNIPPET_MAX]


def _snippet(text: str, tokens: list[re.Match[str]], k: int) -> str:
    """The words that name token ``k`` of ``text`` (where it parts from its look-alikes): a
    punctuation token by the word after it, a number by the word it follows (``instance 2``,
    ``(int)7``; a bare template argument stays a bare number)."""
    j = k
    while j < len(tokens) and not tokens[j].group()[0].isalnum():
        j += 1
    if j == len(tokens):
        return tokens[k].group()
    word = _run_at(text, tokens[j].start(), tokens[j].end())
    if word.isdigit() and j >= 1:
        # a number says what it counts by the word just before it: ``instance 2``, ``(int)7``
        prev = next((t for t in reversed(tokens[:j]) if t.group().isalnum()), None)
        gap = text[prev.end():tokens[j].start()] if prev is not None else ""
        if prev is not None and prev.group().isalpha():
            if gap == " ":
                word = f"{prev.group()} {word}"
            elif gap == ")" and text[:prev.start()].endswith("("):
                word = f"({prev.group()}){word}"
    return word


def _parting_words(names: list[str]) -> list[list[str]]:
    """For each of ``names`` (one look-alike group), the words at each point where the group
    parts, walking the names' tokens as a trie: ``[]`` for a name that ends where the others
    go on, or for names that never part; at most :data:`_MAX_PARTS` each."""
    texts = [n[:_NAME_SCAN] for n in names]
    toks = [_TOKEN.findall(t) for t in texts]
    # each name's tokens as one string, every token closed by NUL, so the tokens a group
    # shares are found at C speed (os.path.commonprefix), not token by token
    joined = ["\0".join(ts) + "\0" for ts in toks]
    offsets = [[0, *itertools.accumulate(len(t) + 1 for t in ts)] for ts in toks]
    out: list[list[str]] = [[] for _ in names]

    def token(i: int, k: int) -> str | None:
        return toks[i][k] if k < len(toks[i]) else None

    stack: list[tuple[list[int], int]] = [(list(range(len(names))), 0)]
    while stack:  # (a group that agrees on its first k tokens, k)
        members, k = stack.pop()
        members = [i for i in members if len(out[i]) < _MAX_PARTS]
        if len(members) < 2:
            continue
        shared = os.path.commonprefix([joined[i][offsets[i][min(k, len(toks[i]))]:]
                                       for i in members])
        k += shared.count("\0")  # the whole tokens all of them share from k on
        buckets: dict[str | None, list[int]] = defaultdict(list)
        for i in members:
            buckets[token(i, k)].append(i)
        if len(buckets) < 2:
            continue  # the same name to the end: nothing here tells them apart
        for tok, group in buckets.items():
            if tok is None:
                continue  # this name ends where the others go on: it reads without a word
            for i in group:
                near = list(itertools.islice(_TOKEN.finditer(texts[i]), k + 16))
                word = _snippet(texts[i], near, k)
                if not out[i] or out[i][-1] != word:
                    out[i].append(word)
            stack.append((group, k + 1))
    return out


def _numbered(texts: list[str], same: Callable[[str], str] = lambda t: t,
              width: int | None = None) -> list[str]:
    """``texts`` with ``#N`` added to each repeat (as rendered by ``same``), the last resort:
    N = 2, 3, … in row order, never a text another row already reads."""
    out = list(texts)
    taken = {same(t) for t in out}
    seen: dict[str, int] = defaultdict(int)
    for i, t in enumerate(texts):
        key = same(t)
        seen[key] += 1
        if seen[key] == 1:
            continue
        n = seen[key]
        while True:
            tag = f"#{n}"
            head = t if width is None else fit(t, max(width - len(tag), 1))
            cand = head + tag
            if same(cand) not in taken:
                break
            n += 1
        taken.add(same(cand))
        out[i] = cand
    return out


def _full_labels(entries: Sequence[Entry]) -> list[str]:
    base = [_base(e) for e in entries]
    groups: dict[str, list[int]] = defaultdict(list)
    for i, b in enumerate(base):
        groups[b].append(i)
    detail: list[list[str]] = [[] for _ in entries]
    for members in groups.values():
        if len(members) < 2:
            continue
        words = _parting_words([full_name(entries[i].name or entries[i].short_name)
                                for i in members])
        for i, w in zip(members, words, strict=True):
            detail[i] = [printable(x) for x in w]
        # rows whose names never part: the regime, when it differs
        still: dict[str, list[int]] = defaultdict(list)
        for i in members:
            still[" … ".join(detail[i])].append(i)
        for same in still.values():
            regimes = {entries[i].regime for i in same}
            if len(same) > 1 and len(regimes) > 1:
                for i in same:
                    detail[i].append(printable(entries[i].regime or "no regime"))
    texts = [b + (DETAIL_SEP + " … ".join(d) if d else "") for b, d in zip(base, detail,
                                                                           strict=True)]
    return _numbered(texts)


def fit_labels(texts: Sequence[str], width: int | None = None,
               rendered: Callable[[str], str] = lambda t: t) -> list[str]:
    """Row labels cut to ``width`` characters with no two the same (as ``rendered`` writes
    them, e.g. a Markdown cell's escaping): what follows the last `` · `` is kept and the rest
    cut in the middle; rows the cut makes equal keep the window where they differ; ``#N`` is
    the last resort. ``width`` None: uncut, still distinct."""
    texts = list(texts)
    if width is None:
        return _numbered(texts, rendered)
    width = max(width, 1)
    cut: list[str] = []
    for t in texts:
        head, sep, tail = t.rpartition(DETAIL_SEP)
        room = width - len(sep) - len(tail)
        if len(t) <= width:
            cut.append(t)
        elif sep and room >= 8:
            cut.append(fit(head, room) + sep + tail)
        else:
            cut.append(fit(t, width))
    # rows the cut made equal: each keeps the window where it differs from the others
    by: dict[str, list[int]] = defaultdict(list)
    for i, c in enumerate(cut):
        by[rendered(c)].append(i)
    for members in by.values():
        if len(members) > 1:
            rivals = [texts[i] for i in members]
            for i in members:
                cut[i] = fit(texts[i], width, rivals)
    return _numbered(cut, rendered, width)


def row_labels(entries: Sequence[Entry], width: int | None = None,
               rendered: Callable[[str], str] = lambda t: t) -> list[str]:
    """What each of ``entries`` reads as a table row (the module docstring's rule), printable,
    at most ``width`` characters (None: uncut), no two the same as ``rendered`` writes them."""
    return fit_labels(_full_labels(entries), width, rendered)

