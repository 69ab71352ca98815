"""Tolerant loaders for the round's inputs: ``profile_topN.json`` and ``env_report.json``.

Every field beyond ``name`` and ``pct_gpu_time`` may be missing or malformed in real files. A bad
field is dropped with a one-line note; a bad entry is dropped with a reason; a bad file gives a
reason. Nothing here raises for bad input.
"""


import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from roofline_tui.core.bulk import Biggest, NotStreamable, collector_paused, stream_object
from roofline_tui.core.coerce import coerce_number, integer, number
from roofline_tui.core.empty import empty_dict, empty_list
from roofline_tui.core.lazy_re import lazy_compile
from roofline_tui.core.names import cap_name, short_name_of
from roofline_tui.core.store import (
    NO_MEMORY,
    ReadProblem,
    parse_json_text,
    read_bytes,
    read_json,
)
from roofline_tui.core.textsafe import printable, valid_unicode
from roofline_tui.core.topn_ext import (
    EXTENSION_KEY,
    DocExtension,
    EntryExtension,
    parse_doc_extension,
    parse_entry_extension,
)

REGIMES = ("decode", "prefill")


# --------------------------------------------------------------------------- field coercion


def _num(value: Any, *, positive: bool = False, nonneg: bool = False) -> float | None:
    """A finite number from a file field through the one coercer, or ``None``."""
    return number(value, positive=positive, nonneg=nonneg)


def _int(value: Any, *, positive: bool = False) -> int | None:
    """A count (negative refused) through the one coercer, or ``None``."""
    return integer(value, positive=positive)


def _str(value: Any) -> str | None:
    """A non-blank string from a file, made encodable (lone surrogates written as escapes)."""
    return valid_unicode(value) if isinstance(value, str) and value.strip() else None


# A share of GPU time is a percentage: anything above this is not a share of anything.
PCT_MAX = 100.0


def _regime_map(value: Any, *, positive: bool = True) -> dict[str, float]:
    """``{"prefill": x, "decode": y}`` with only finite numbers kept."""
    out: dict[str, float] = {}
    if type(value) is dict or isinstance(value, dict):
        for key in REGIMES:
            v = value.get(key)
            if v is not None:
                f = _num(v, positive=positive, nonneg=not positive)
                if f is not None:
                    out[key] = f
    return out


# A tensor dimension or rank beyond these is not a shape (products of dims must stay finite).
MAX_DIM = 2**40
MAX_RANK = 16
_INT_ONLY = {int}


def _shapes(value: Any) -> list[list[list[int]]]:
    """``shapes`` is a list of shape sets; each set a list of dims lists. Keep the valid ones."""
    out: list[list[list[int]]] = []
    if not isinstance(value, list):
        return out
    for shape_set in value:
        if not isinstance(shape_set, list):
            continue
        dims_list: list[list[int]] = []
        for dims in shape_set:
            # every dim a plain int (type, not isinstance: a bool is not a dimension) in range;
            # tested with C-level set/min/max (a 10,000-row Top-N has ~20,000 dims lists)
            if isinstance(dims, list) and len(dims) <= MAX_RANK and (not dims or (
                    set(map(type, dims)) == _INT_ONLY and min(dims) >= 0
                    and max(dims) <= MAX_DIM)):
                dims_list.append(list(dims))
            else:
                dims_list.append([])  # keep positions: a scalar/None argument has no dims
        if any(dims_list):
            out.append(dims_list)
    return out


# --------------------------------------------------------------------------- models


class StepAggregates(BaseModel):
    """One phase's sums over the profiled steps' annotations (``serving.phases[phase]``):
    Σ query tokens, Σ KV length, Σ query², Σ query·KV, in tokens and tokens². None: some
    counted step's label did not say."""

    steps: int
    requests: int | None = None
    sq: int | None = None
    sk: int | None = None
    sqsq: int | None = None
    sqsk: int | None = None
    mean_kv_per_request: float | None = None
    context_min: float | None = None
    context_median: float | None = None
    context_max: float | None = None
    context_of: str | None = None


class Serving(BaseModel):
    """The optional ``serving`` block: step counts of the profiled window."""

    model_config = ConfigDict(extra="allow")

    phases: dict[str, StepAggregates] = Field(default_factory=empty_dict)
    n_prefill_steps: int | None = None
    n_decode_steps: int | None = None
    decode_batch_captured: int | None = None
    decode_batch_steady: int | None = None
    steady: bool | None = None
    analytic_calls: dict[str, float] = Field(default_factory=empty_dict)
    note: str | None = None


class TopNEntry(BaseModel):
    """One ``top_kernels[i]`` after coercion. ``raw`` keeps the original dict for display."""

    name: str
    short_name: str
    pct_gpu_time: float
    rank: int | None = None
    calls: int | None = None
    total_ms: float | None = None
    avg_us: float | None = None
    shapes: list[list[list[int]]] = Field(default_factory=empty_list)
    dtypes: list[str] = Field(default_factory=empty_list)
    classification: str | None = None
    backend_guess: str | None = None
    editable: bool | None = None
    phase: str | None = None
    served_regimes: list[str] = Field(default_factory=empty_list)
    phase_calls_measured: dict[str, float] = Field(default_factory=empty_dict)
    calls_per_step: dict[str, float] = Field(default_factory=empty_dict)
    base_latency_ms: dict[str, float] = Field(default_factory=empty_dict)
    est_m: dict[str, int] = Field(default_factory=empty_dict)  # est_shape[regime].M
    serving_weighted_pct: float | None = None
    input_notes: list[str] = Field(default_factory=empty_list)
    # what our importers recorded beyond the upstream fields (core.topn_ext): instances
    ext: EntryExtension | None = None
    raw: dict[str, Any] = Field(default_factory=empty_dict, exclude=True)


class GraphReplay(BaseModel):
    """Launch accounting of a trace whose kernels were (partly) replayed from CUDA/HIP graphs:
    the Top-N then misses or cannot shape the replayed kernels."""

    launch_calls: int | None = None  # runtime *LaunchKernel calls
    graph_launches: int | None = None  # cudaGraphLaunch / hipGraphLaunch calls
    kernel_events: int | None = None  # kernel events recorded on the chosen device
    replayed_launches: int | None = None  # kernels carrying a graph launch's correlation
    capture_shaped_launches: int | None = None  # of which shaped from a graph-capture trace
    warning: str | None = None


class TopNTail(BaseModel):
    """The rows of a big Top-N beyond the kept ones (:data:`KEEP_ROWS`): each was read once and
    checked for a name and a share, then only counted here (no model, no object kept)."""

    rows: int
    pct_gpu_time: float  # their shares summed
    max_pct_gpu_time: float  # the largest share among them


class TopN(BaseModel):
    source: str | None = None
    total_gpu_time_ms: float | None = None
    num_kernel_launches: int | None = None
    num_distinct_kernels: int | None = None
    serving: Serving | None = None
    entries: list[TopNEntry] = Field(default_factory=empty_list)
    # what the importer noticed about the profile as a whole (bad rows skipped, kernels
    # replayed from CUDA/HIP graphs that the Top-N misses ...), one line each
    notes: list[str] = Field(default_factory=empty_list)
    graph_replay: GraphReplay | None = None
    ext: DocExtension | None = None
    # a big Top-N's rows beyond the kept ones, summarised (None: every row is in ``entries``)
    tail: TopNTail | None = None

    @property
    def rows(self) -> int:
        """How many usable rows the file has: those kept as entries and the summarised tail."""
        return len(self.entries) + (self.tail.rows if self.tail is not None else 0)


class Workload(BaseModel):
    isl: int | None = None
    osl: int | None = None
    conc: int | None = None
    tp: int | None = None


class EnvReport(BaseModel):
    model_config = ConfigDict(extra="allow")

    gfx: str | None = None
    product: str | None = None
    backend: str | None = None
    model: str | None = None
    model_arch_class: str | None = None
    model_dtype: str | None = None
    kv_cache_dtype: str | None = None
    workload: Workload = Field(default_factory=Workload)
    device_props: dict[str, Any] | None = None


# --------------------------------------------------------------------------- parsing


# the optional numbers of an entry: (key, positive, nonneg)
_OPTIONAL_NUMBERS = (
    ("rank", True, False),
    ("calls", False, True),
    ("total_ms", False, True),
    ("avg_us", True, False),
    ("serving_weighted_pct", False, True),
)


def usable_row(raw: Any, index: int) -> tuple[str, float] | str:
    """What makes a Top-N row usable at all: ``(name, pct_gpu_time)``, or why it is skipped."""
    if not isinstance(raw, dict):
        return f"top_kernels[{index}]: not an object, skipped"
    name = _str(raw.get("name")) or _str(raw.get("short_name"))
    if name is None:
        return f"top_kernels[{index}]: no kernel name, skipped"
    name = cap_name(name)  # a megabyte name is cut here, with a digest of the whole
    pct_raw = raw.get("pct_gpu_time")
    pct_c = coerce_number(pct_raw, nonneg=True)
    pct = pct_c.value
    if pct is None or pct > PCT_MAX:
        why = pct_c.problem if pct is None else f"{pct:g} is above {PCT_MAX:g}"
        return (
            f"top_kernels[{index}] ({printable(name, limit=60)}): pct_gpu_time is not a percentage "
            f"({printable(why, limit=60)}), skipped"
        )
    return name, pct


def parse_entry(raw: Any, index: int) -> tuple[TopNEntry | None, str | None]:
    """Coerce one Top-N entry; ``(None, reason)`` when it cannot be used at all."""
    usable = usable_row(raw, index)
    if isinstance(usable, str):
        return None, usable
    name, pct = usable
    notes: list[str] = []
    given_short = _str(raw.get("short_name"))
    # a file's short name is capped like its name (a megabyte one would fill both rankings)
    short = cap_name(given_short) if given_short is not None else short_name_of(name)
    notes.extend(_notes(raw.get("notes"), limit=8))
    opt: dict[str, float | None] = {}
    for key, positive, nonneg in _OPTIONAL_NUMBERS:
        value = raw.get(key)
        if value is None:
            opt[key] = None
            continue
        f = number(value, positive=positive, nonneg=nonneg)
        if f is None:
            why = coerce_number(value, positive=positive, nonneg=nonneg).problem
            notes.append(f"{key} ignored: {printable(why, limit=60)}")
        elif key == "serving_weighted_pct" and f > PCT_MAX:
            notes.append(f"{key} ignored: {f:g} is above {PCT_MAX:g}")
            f = None
        opt[key] = f
    rank, calls, total_ms, avg_us, swp = (opt[k] for k, _, _ in _OPTIONAL_NUMBERS)

    base_latency = _regime_map(raw.get("base_latency_ms"))
    if isinstance(raw.get("base_latency_ms"), dict) and len(base_latency) < len(
            raw["base_latency_ms"]):
        bad = [k for k in REGIMES if k in raw["base_latency_ms"] and k not in base_latency]
        if bad:
            notes.append(f"base_latency_ms[{','.join(bad)}] ignored (not a positive number)")
    est_m: dict[str, int] = {}
    est_shape = raw.get("est_shape")
    if isinstance(est_shape, dict):
        for regime in REGIMES:
            block = est_shape.get(regime)
            if isinstance(block, dict):
                m = _int(block.get("M"), positive=True)
                if m:
                    est_m[regime] = m
    served = raw.get("served_regimes")
    served_list = [r for r in served if r in REGIMES] if isinstance(served, list) else []
    dtypes = raw.get("dtypes")
    editable = raw.get("editable")
    ext, ext_problems = parse_entry_extension(raw.get(EXTENSION_KEY))
    notes.extend(ext_problems)
    entry = TopNEntry(
        name=name,
        short_name=short,
        pct_gpu_time=pct,
        rank=int(round(rank)) if rank is not None else None,
        calls=int(round(calls)) if calls is not None else None,
        total_ms=total_ms,
        avg_us=avg_us,
        shapes=_shapes(raw.get("shapes")),
        dtypes=[d for d in dtypes if isinstance(d, str)][:16] if isinstance(dtypes, list) else [],
        classification=_str(raw.get("classification")),
        backend_guess=_str(raw.get("backend_guess")),
        editable=editable if isinstance(editable, bool) else None,
        phase=_str(raw.get("phase")),
        served_regimes=served_list,
        phase_calls_measured=_regime_map(raw.get("phase_calls_measured"), positive=False),
        calls_per_step=_regime_map(raw.get("calls_per_step")),
        base_latency_ms=base_latency,
        est_m=est_m,
        serving_weighted_pct=swp,
        input_notes=notes,
        ext=ext,
        raw=raw,
    )
    return entry, None


def parse_topn(data: Any, streamed: "StreamedRows | None" = None) -> tuple[TopN, list[str]]:
    """Parse a loaded ``profile_topN.json`` document into :class:`TopN` plus problems.

    ``streamed``: the document's rows were read one by one (:func:`read_topn` on a big file)
    and only the kept ones are given, with the reasons the others were skipped."""
    problems: list[str] = []
    if not isinstance(data, dict):
        return TopN(), [f"profile_topN.json: top level is {type(data).__name__}, expected an object"]
    rows: list[tuple[int, Any]]
    skipped: list[tuple[int, str]] = []
    if streamed is not None:
        rows, skipped = streamed.kept, streamed.skipped
    else:
        kernels = data.get("top_kernels")
        if kernels is None:
            kernels = data.get("kernels")  # the workload-v1 sibling has the same entry fields
        if not isinstance(kernels, list):
            problems.append("profile_topN.json: no top_kernels list")
            kernels = []
        rows = list(enumerate(kernels))
    entries: list[TopNEntry] = []
    by_row: list[tuple[int, list[str]]] = [(i, [f"profile_topN.json: {why}"]) for i, why in skipped]
    with collector_paused():  # thousands of acyclic rows: no collector passes while they grow
        for i, raw in rows:
            entry, reason = parse_entry(raw, i)
            if entry is None:
                by_row.append((i, [f"profile_topN.json: {reason}"]))
            else:
                entries.append(entry)
                if entry.input_notes:
                    by_row.append((i, [f"profile_topN.json: top_kernels[{i}] "
                                       f"({printable(entry.short_name, limit=60)}): {note}"
                                       for note in entry.input_notes]))
    by_row.sort(key=lambda r: r[0])  # file order, as one pass over every row would say them
    for _i, said in by_row:
        problems += said
    serving = None
    sv = data.get("serving")
    if isinstance(sv, dict):
        analytic = sv.get("analytic_calls")
        serving = Serving(
            n_prefill_steps=_int(sv.get("n_prefill_steps")),
            n_decode_steps=_int(sv.get("n_decode_steps")),
            decode_batch_captured=_int(sv.get("decode_batch_captured"), positive=True),
            decode_batch_steady=_int(sv.get("decode_batch_steady"), positive=True),
            steady=sv.get("steady") if isinstance(sv.get("steady"), bool) else None,
            analytic_calls=_regime_map(analytic, positive=False),
            note=_str(sv.get("note")),
            phases=_phases(sv.get("phases")),
        )
    elif sv is not None:
        problems.append("profile_topN.json: serving is not an object, ignored")
    doc_ext, ext_problems = parse_doc_extension(data.get(EXTENSION_KEY))
    problems += [f"profile_topN.json: {p}" for p in ext_problems]
    topn = TopN(
        ext=doc_ext,
        source=_str(data.get("source")),
        total_gpu_time_ms=_num(data.get("total_gpu_time_ms"), positive=True),
        num_kernel_launches=_int(data.get("num_kernel_launches")),
        num_distinct_kernels=_int(data.get("num_distinct_kernels")),
        serving=serving,
        entries=entries,
        notes=_notes(data.get("notes")),
        graph_replay=_graph_replay(data.get("graph_replay")),
    )
    if streamed is not None and streamed.tail is not None:
        tail = streamed.tail
        topn.tail = tail
        topn.notes.append(
            f"{tail.rows:,} rows beyond the {len(entries):,} biggest were read and summarised, "
            f"not kept: {tail.pct_gpu_time:.4g} % of GPU time together, none above "
            f"{tail.max_pct_gpu_time:.4g} %")
    return topn, problems


_BIG = 10**30  # a token sum beyond this is no run's (it stays exact as an int below it)


def _big_int(value: Any) -> int | None:
    return value if type(value) is int and 0 <= value <= _BIG else None


def _phases(value: Any) -> dict[str, StepAggregates]:
    """``serving.phases``: the step aggregates per regime, each field through the coercers."""
    out: dict[str, StepAggregates] = {}
    if not isinstance(value, dict):
        return out
    for regime in REGIMES:
        raw = value.get(regime)
        if not isinstance(raw, dict):
            continue
        steps = _int(raw.get("steps"), positive=True)
        if steps is None:
            continue
        got = raw.get("context")
        ctx: dict[str, Any] = got if isinstance(got, dict) else {}
        out[regime] = StepAggregates(
            steps=steps, **{k: _big_int(raw.get(k)) for k in ("requests", "sq", "sk", "sqsq",
                                                               "sqsk")},
            mean_kv_per_request=_num(raw.get("mean_kv_per_request"), nonneg=True),
            context_min=_num(ctx.get("min"), nonneg=True),
            context_median=_num(ctx.get("median"), nonneg=True),
            context_max=_num(ctx.get("max"), nonneg=True),
            context_of=printable(ctx["of"], limit=120) if isinstance(ctx.get("of"), str)
            else None)
    return out


def _notes(value: Any, limit: int = 50) -> list[str]:
    if not isinstance(value, list):
        return []
    return [printable(n, limit=300) for n in value[:limit] if isinstance(n, str) and n.strip()]


def _graph_replay(value: Any) -> GraphReplay | None:
    if not isinstance(value, dict):
        return None
    warning = value.get("warning")
    return GraphReplay(
        launch_calls=_int(value.get("launch_calls")),
        graph_launches=_int(value.get("graph_launches")),
        kernel_events=_int(value.get("kernel_events")),
        replayed_launches=_int(value.get("replayed_launches")),
        capture_shaped_launches=_int(value.get("capture_shaped_launches")),
        warning=printable(warning, limit=300) if isinstance(warning, str) else None,
    )


def load_topn(path: Path) -> tuple[TopN | None, list[str], bool]:
    """Load ``profile_topN.json``: ``(topn or None, problems, incomplete)``.

    ``incomplete`` is True when the file looks half-written (empty or truncated JSON).
    """
    topn, problems, unreadable = read_topn(path)
    return topn, problems, unreadable is not None and unreadable.incomplete


def read_topn(path: Path) -> tuple[TopN | None, list[str], ReadProblem | None]:
    """Load ``profile_topN.json``: ``(topn or None, problems, why it could not be read)``.

    The third element is the reader's typed problem (``None`` when the file parsed), so callers
    tell a half-written file (``.incomplete``) from a corrupt one without matching strings.

    A file above :data:`BULK_BYTES` is read row by row: its :data:`KEEP_ROWS` biggest rows by
    ``pct_gpu_time`` (and as many by ``serving_weighted_pct``) become entries, every other row
    is checked for a name and a share and only counted (``TopN.tail``), so memory stays near
    the file's size whatever the number of rows.
    """
    try:
        try:
            big = Path(path).stat().st_size > BULK_BYTES
        except (OSError, ValueError):
            big = False  # the reader says why, in its own words
        if big:
            topn, problems = _read_big_topn(Path(path))
            return topn, problems, None
        data = read_json(path)
    except ReadProblem as exc:
        return None, [str(exc)], exc
    except MemoryError:
        short = ReadProblem(path, NO_MEMORY)
        return None, [str(short)], short
    topn, problems = parse_topn(data)
    return topn, problems, None


# A Top-N file above this size is read row by row; smaller ones are parsed whole, every row kept.
BULK_BYTES = 8 * 2**20
# Rows a big Top-N keeps as entries (by share of GPU time, and as many by serving-weighted
# share): heads, the kernels their levers and logical ops name, the dashboard's list below
# the heads. Rows beyond them hold less GPU time each than every kept one.
KEEP_ROWS = 2_000
_ROW_KEYS = ("top_kernels", "kernels")
# a \uD800-\uDFFF escape: such a document is parsed whole (store writes the lone surrogates
# back as visible text there)
_SURROGATE_ESCAPE = lazy_compile(r"\\u[dD][89a-fA-F]")


def _reject_constant(token: str) -> Any:
    raise ValueError(f"{token} is not JSON")


_ROW_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


@dataclass(eq=False)
class StreamedRows:
    """The rows of one array of a Top-N read row by row: the kept ones ``(index, raw)`` in file
    order, the skipped ones' reasons, and the summary of the rest."""

    kept: list[tuple[int, Any]] = field(default_factory=list)
    skipped: list[tuple[int, str]] = field(default_factory=list)
    tail: TopNTail | None = None


@dataclass(eq=False)
class _RowSink:
    """Collects one streamed array: every row checked once, the biggest kept, the rest summed."""

    by_pct: Biggest = field(default_factory=lambda: Biggest(KEEP_ROWS))
    by_swp: Biggest = field(default_factory=lambda: Biggest(KEEP_ROWS))
    skipped: list[tuple[int, str]] = field(default_factory=list)
    usable: int = 0
    pct_sum: float = 0.0

    def take(self, index: int, raw: Any) -> None:
        # the common row decided here as usable_row decides it (a non-blank name, a share of
        # GPU time): a 1,000,000-row Top-N is otherwise a million names capped and checked
        # only to be dropped; any other row, and every skipped one, goes through usable_row
        pct: float | None = None
        if type(raw) is dict:
            name = raw.get("name")
            if type(name) is str and name and not name.isspace():
                pct = number(raw.get("pct_gpu_time"), nonneg=True)
                if pct is not None and pct > PCT_MAX:
                    pct = None
        if pct is None:
            usable = usable_row(raw, index)
            if isinstance(usable, str):
                self.skipped.append((index, usable))
                return
            pct = usable[1]
        self.usable += 1
        self.pct_sum += pct
        self.by_pct.push(pct, index, raw)
        swp_raw = raw.get("serving_weighted_pct")  # (absent from most Top-Ns)
        swp = number(swp_raw, nonneg=True) if swp_raw is not None else None
        self.by_swp.push(swp if swp is not None and swp <= PCT_MAX else None, index, raw)

    def rows(self) -> StreamedRows:
        kept = dict(self.by_pct.items())
        kept.update(self.by_swp.items())
        out = StreamedRows(kept=sorted(kept.items(), key=lambda r: r[0]), skipped=self.skipped)
        left = self.usable - len(kept)
        if left > 0:
            kept_pct = [usable_row(raw, i) for i, raw in out.kept]
            kept_sum = math.fsum(u[1] for u in kept_pct if not isinstance(u, str))
            smallest = min((u[1] for u in kept_pct if not isinstance(u, str)), default=0.0)
            out.tail = TopNTail(rows=left, pct_gpu_time=max(self.pct_sum - kept_sum, 0.0),
                                max_pct_gpu_time=smallest)
        return out


def _read_big_topn(path: Path) -> tuple[TopN, list[str]]:
    """:func:`read_topn` of a big file (raises :class:`ReadProblem`)."""
    raw = read_bytes(path)
    if not raw.strip():
        raise ReadProblem(path, "file is empty (still being written?)", incomplete=True)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ReadProblem(path, "not UTF-8 text") from None
    del raw
    sinks = {key: _RowSink() for key in _ROW_KEYS}
    if not _SURROGATE_ESCAPE.search(text):
        try:
            with collector_paused():  # a million acyclic rows decoded and dropped
                doc = stream_object(text, _ROW_KEYS, lambda key, i, row: sinks[key].take(i, row),
                                    _ROW_DECODER)
        except NotStreamable:
            pass
        else:
            del text
            # which array the whole-document parse would read: top_kernels unless it is null
            # (every list under one of these keys was streamed, its place left empty)
            rows_key = "top_kernels" if doc.get("top_kernels") is not None else "kernels"
            if isinstance(doc.get(rows_key), list):
                return parse_topn(doc, sinks[rows_key].rows())
            return parse_topn(doc)
    # not a document the row reader takes as it is: parsed whole (which says what is wrong)
    return parse_topn(parse_json_text(text, path))


def launches_per_step(entry: TopNEntry, regime: str, topn: TopN) -> float | None:
    """Launches per step of ``entry`` in ``regime``: its ``calls_per_step``, else the regime's
    measured calls over the serving block's step count; None when neither is known."""
    if regime in entry.calls_per_step:
        return entry.calls_per_step[regime]
    sv = topn.serving
    steps = None
    if sv is not None:
        steps = sv.n_decode_steps if regime == "decode" else sv.n_prefill_steps
    if steps and regime in entry.phase_calls_measured:
        return entry.phase_calls_measured[regime] / steps
    return None


# Tokens per request, concurrency or tensor parallelism beyond this are not a workload (and would
# overflow the byte models' products).
WORKLOAD_MAX = 1e9


def parse_env_report(data: Any) -> tuple[EnvReport, list[str]]:
    problems: list[str] = []
    if not isinstance(data, dict):
        return EnvReport(), ["env_report.json: top level is not an object, ignored"]
    wl_raw = data.get("workload")
    wl = Workload()
    if isinstance(wl_raw, dict):
        vals: dict[str, int | None] = {}
        for key in ("isl", "osl", "conc", "tp"):
            v = wl_raw.get(key)
            c = coerce_number(v, positive=True, max_abs=WORKLOAD_MAX)
            if v is not None and c.value is None:
                problems.append(f"env_report.json: workload.{key} ignored: "
                                f"{printable(c.problem, limit=60)}")
            vals[key] = None if c.value is None else max(int(round(c.value)), 1)
        wl = Workload(**vals)
    elif wl_raw is not None:
        problems.append("env_report.json: workload is not an object, ignored")
    props = data.get("device_props") or data.get("device_properties")
    extra = {
        k: v
        for k, v in data.items()
        if k not in {"gfx", "product", "backend", "model", "model_arch_class", "model_dtype",
                     "kv_cache_dtype", "workload", "device_props", "device_properties"}
    }
    env = EnvReport(
        gfx=_str(data.get("gfx")),
        product=_str(data.get("product")),
        backend=_str(data.get("backend")),
        model=_str(data.get("model")),
        model_arch_class=_str(data.get("model_arch_class")),
        model_dtype=_str(data.get("model_dtype")),
        kv_cache_dtype=_str(data.get("kv_cache_dtype")),
        workload=wl,
        device_props=props if isinstance(props, dict) else None,
        **extra,
    )
    return env, problems


def load_env_report(path: Path) -> tuple[EnvReport | None, list[str]]:
    try:
        data = read_json(path)
    except ReadProblem as exc:
        return None, [str(exc)]
    env, problems = parse_env_report(data)
    return env, problems
