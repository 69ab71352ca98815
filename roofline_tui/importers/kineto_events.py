"""Kineto trace events decoded by msgspec into typed records (issue 38 item 3).

:class:`TypedEventStream` is the trace reader of ``importers.jsonstream`` whose batches are
decoded straight into :class:`Event` records: only the fields the torch importer reads are
built, every other key of an event or of its ``args`` is skipped by the decoder without building
an object for it; and the checks the collector's fast reader (``importers.torch.typed_loop``)
makes of a number (a finite time, a duration not negative, an id that fits its arrays) are made
by the decoder, as it reads the number. A batch the typed decoder does not read whole (an event
that is not an object, ``args`` that is not one, a time or id of another type or out of range,
an infinite number, a lone surrogate, a nesting too deep) is decoded as before (orjson, then the
json module, then item by item) and read by the collector's dict path: those batches are lists
of dicts, these lists of :class:`Event`.

What a record holds is what orjson gives for those keys, except that a time or duration written
as an integer is its float (:func:`core.coerce.number`, through which the collector reads every
time, gives the same float for both). msgspec and orjson both read integers within 64 bits
exactly and floats correctly rounded; msgspec reads longer integers exactly, as the json module
does (a batch with a run of 64 digits, where the careful decoder reads an infinity, is left to
the base class); msgspec's skipping of the other keys is at least as strict as the json module
(every batch it reads, the json module reads). :func:`event_dict` turns a record back into the
dict the collector's general path reads (``importers.torch.collector.Collector.add``): every key
that path reads is a field here; a key absent from the event stays absent, so ``ev.get("ph",
"X")`` still tells a missing ``ph`` from a null one.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from roofline_tui.core.coerce import MAX_ABS
from roofline_tui.importers.jsonstream import _DIGITS_TO_0, _LONG_DIGITS, TraceEventStream

_UNSET: Any = msgspec.UNSET
_SAMPLE_RUN = b"0" * (len(_LONG_DIGITS) // 8)
ID_LIMIT = 1 << 62  # (ids must fit the torch collector's typed arrays)

# what the collector's fast reader takes: a time, a duration and an id as it checks them (a
# number the coercer takes, not negative, inside the arrays' range), the bounds open so that
# an integer rounded to a float at a bound is refused as the integer is
Time = Annotated[float, msgspec.Meta(gt=-MAX_ABS, lt=MAX_ABS)]
Duration = Annotated[float, msgspec.Meta(ge=0, lt=MAX_ABS)]
Id = Annotated[int, msgspec.Meta(gt=-ID_LIMIT, lt=ID_LIMIT)]


class Args(msgspec.Struct, gc=False):
    """The ``args`` keys the collector reads (None: absent or null, which it never tells
    apart: it reads them all with ``get``)."""

    ext: Id | None = msgspec.field(default=None, name="External id")
    ext_old: Any = msgspec.field(default=None, name="external id")  # PyTorch 1.8-1.9
    correlation: Id | None = None
    device: Id | None = None
    stream: Any = None
    grid: Any = None
    block: Any = None
    dims: Any = msgspec.field(default=None, name="Input Dims")
    dims_old: Any = msgspec.field(default=None, name="Input dims")
    types: Any = msgspec.field(default=None, name="Input type")
    values: Any = msgspec.field(default=None, name="Concrete Inputs")
    # a vLLM step's counts (importers.torch.step_records.args_step)
    context_tokens: Any = None
    num_context_tokens: Any = None
    prefill_tokens: Any = None
    decode_batch: Any = None
    num_decode_tokens: Any = None
    generation_tokens: Any = None


class Event(msgspec.Struct, gc=False):
    """The keys of a trace event the collector reads (UNSET: absent)."""

    ph: Any = _UNSET
    cat: Any = _UNSET
    name: Any = _UNSET
    pid: Any = _UNSET
    tid: Any = _UNSET
    ts: Time | msgspec.UnsetType = _UNSET
    dur: Duration | msgspec.UnsetType = _UNSET
    id: Any = _UNSET
    args: Args | None | msgspec.UnsetType = _UNSET


_DECODER = msgspec.json.Decoder(list[Event])
_ARG_NAMES = tuple((f.name, f.encode_name) for f in msgspec.structs.fields(Args))
_EVENT_NAMES = tuple(f.name for f in msgspec.structs.fields(Event) if f.name != "args")


def event_dict(ev: Event) -> dict[str, Any]:
    """``ev`` as the dict the collector's general path reads: the keys present in the event,
    ``args`` a dict of the ``args`` keys read that are not null (or None, as recorded)."""
    out = {k: v for k in _EVENT_NAMES if (v := getattr(ev, k)) is not _UNSET}
    args = ev.args
    if args is not _UNSET:
        out["args"] = args if args is None else {
            key: v for attr, key in _ARG_NAMES if (v := getattr(args, attr)) is not None}
    return out


def long_digit_run(text: str) -> bool:
    """Whether ``text`` holds a run of 64 ASCII digits, where the json module's careful
    decoder (``jsonstream._parse_int``) and msgspec read an integer differently. Such a run
    covers 8 consecutive characters of every 8th one, so a run of 8 digits in that sample
    (an eighth of the text to translate) is looked for first."""
    sample = text[::8].encode("utf-8", "surrogatepass").translate(_DIGITS_TO_0)
    if _SAMPLE_RUN not in sample:
        return False
    return _LONG_DIGITS in text.encode("utf-8", "surrogatepass").translate(_DIGITS_TO_0)


class TypedEventStream(TraceEventStream):
    """:class:`TraceEventStream` whose batches are lists of :class:`Event` where the typed
    decoder reads them whole (else lists of dicts, as the base class reads them)."""

    def _decode_batch(self, text: str) -> list[Any] | None:
        # msgspec reads every number as the json module does (integers exactly, floats
        # correctly rounded; one out of a float's range it refuses) but for an integer of
        # more than 64 characters, which the careful decoder makes an infinity
        if not long_digit_run(text):
            try:
                # (the text, not its bytes: from a str msgspec refuses a lone surrogate
                # anywhere, where from bytes it would not look inside a key it skips)
                return _DECODER.decode(text)
            except (msgspec.DecodeError, ValueError, RecursionError):
                pass
        return super()._decode_batch(text)
