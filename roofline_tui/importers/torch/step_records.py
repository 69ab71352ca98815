"""Serving-step annotations as the collector keeps them: which event names are step labels, a
vLLM step's counts read from ``args``, the regime (prefill or decode) and token count M of a
step, the :class:`StepSpan` record, and the Top-N's serving block made from the step spans."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeGuard

from roofline_tui.core.textsafe import printable
from roofline_tui.importers.common import ServingInfo
from roofline_tui.importers.steps import Group, StepRecord, parse_step_label, phase_aggregates


_STEP_PREFIXES = ("execute_", "step[", "prefill[", "decode[", "eager_decode[", "dummy_")


def is_step_name(name: Any) -> TypeGuard[str]:
    """A label one of the step families may parse (``importers.steps``)."""
    return isinstance(name, str) and name.startswith(_STEP_PREFIXES)


def args_step(name: str, args: dict[str, Any]) -> StepRecord | None:
    """A vLLM ``execute_*`` step whose label has no segments but whose args give the counts
    (``context_tokens``/``num_context_tokens``/``prefill_tokens`` and ``decode_batch``/
    ``num_decode_tokens``/``generation_tokens``), as some builds write it."""
    if not name.startswith("execute_"):
        return None

    def arg_int(*keys: str) -> int | None:
        for k in keys:
            v = args.get(k)
            if isinstance(v, bool):
                continue
            if isinstance(v, (int, float)) and v >= 0 and v == v and v < 2**62:
                return int(v)
            if isinstance(v, str) and v.strip().isdigit() and len(v.strip()) < 19:
                return int(v)
        return None

    ctx = arg_int("context_tokens", "num_context_tokens", "prefill_tokens")
    dec = arg_int("decode_batch", "num_decode_tokens", "generation_tokens")
    if ctx is None and dec is None:
        return None
    ctx, dec = ctx or 0, dec or 0
    context = Group(requests=None, sq=ctx, sk=None, sqsq=None, sqsk=None) if ctx else None
    generation = Group(requests=dec, sq=dec, sk=None, sqsq=None, sqsk=None) if dec else None
    phase = ("mixed" if ctx and dec else "prefill_only" if ctx else
             "decode_only" if dec else "idle")
    return StepRecord(framework="vllm", family="vllm-args", raw=printable(name, limit=400),
                      tokens=ctx + dec, context=context, generation=generation,
                      has_aggregates=False, phase=phase, mode=None, capture_size=ctx + dec,
                      spec_width=None, tbo=False, dummy=False,
                      backfilled=("token counts from the step's args, not its label",),
                      problems=())


def parse_step(name: str, args: dict[str, Any] | None) -> tuple[str, int, int] | None:
    """``(regime, context_tokens, decode_batch)`` of a step label, else None: the short form
    older callers use; :func:`importers.steps.parse_step_label` has the whole record."""
    if not isinstance(name, str):
        return None
    rec = parse_step_label(name) or args_step(name, args if isinstance(args, dict) else {})
    if rec is None:
        return None
    regime, m = step_regime(rec)
    if regime < 0:
        return None
    if regime == 1:
        return ("decode", 0, m)
    ctx = rec.context.sq if rec.context is not None and rec.context.sq is not None else 0
    gen = rec.generation
    dec = (gen.requests if gen.requests is not None else gen.sq or 0) if gen is not None else 0
    return ("prefill", ctx, dec)


def serving_info(steps: list[StepSpan]) -> ServingInfo | None:
    """The serving block's step accounting: the steps that own rows and count in a phase."""
    counted = [s for s in steps if s.rows and s.regime >= 0]
    if not counted:
        return None
    recs = [s.rec for s in counted]
    return ServingInfo(
        n_prefill_steps=sum(1 for s in counted if s.regime == 0),
        n_decode_steps=sum(1 for s in counted if s.regime == 1),
        decode_batches=[s.m for s in counted if s.regime == 1],
        phases=phase_aggregates(recs),
        families=sorted({r.family for r in recs}),
        problems=sorted({p for r in recs for p in r.problems})[:8],
        backfilled=sorted({b for r in recs for b in r.backfilled})[:8],
    )


PHASES = ("prefill", "decode")  # the Top-N's regimes, indexed by a row's phase number


@dataclass
class StepSpan:
    """One step span: where it is (thread id for a CPU annotation, device for a GPU one), its
    parsed record, the regime it counts in (``PHASES`` index, -1: idle or a dummy step) and
    the token count M its kernels ran at."""

    key: int
    ts: float
    end: float
    rec: StepRecord
    regime: int = -1
    m: int = 0
    rows: int = 0  # GPU rows of the chosen device that belong to it


def step_regime(rec: StepRecord) -> tuple[int, int]:
    """(regime index, M) of a step: a step with context tokens is a prefill step (M = all its
    tokens); a step with generation requests only, a decode step (M = its requests)."""
    if rec.dummy or rec.phase == "idle":
        return -1, 0
    ctx, gen = rec.context, rec.generation
    if rec.phase in ("prefill_only", "mixed"):
        m = rec.tokens
        if m is None:
            m = sum(g.sq or 0 for g in (ctx, gen) if g is not None)
        return 0, int(m or 0)
    if gen is not None:
        return 1, int(gen.requests if gen.requests is not None else gen.sq or 0)
    return -1, 0
