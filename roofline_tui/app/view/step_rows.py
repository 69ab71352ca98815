"""A part of the step ranked among the kernels (``Artifact.step_targets``: idle gaps, exposed
communication, copies) as the gain ranking's rows read it: its row key and the entry its cells
are read from. Neither Rich nor Textual."""

from __future__ import annotations

from roofline_tui.core.artifact import Entry, StepTarget


def step_key(t: StepTarget) -> str:
    return f"step:{t.kind}:{t.regime or '-'}"


def step_entry(t: StepTarget) -> Entry:
    """What a step row's cells read: its part of the step, its gain bound (the span shrinks by
    its share if all of it goes: speedup 1 / (1 - share)) and its route."""
    where = f"{t.regime} step" if t.regime else "step"
    share = float(t.share_of_span)
    route = {"route": "host_side"} if t.kind == "idle gaps" else {}  # (the others: overlap)
    return Entry(name=f"{t.kind} ({where})", short_name=step_key(t), pct_gpu_time=0.0,
                 expected_e2e_gain_pct=t.expected_e2e_gain_pct,
                 attainable_speedup=1.0 / (1.0 - share) if 0.0 <= share < 1.0 else None,
                 notes=t.line, **route)
