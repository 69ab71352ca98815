"""Entry.from_parts: one writer per field, notes and assumptions in step order; the
round-over-round fields set only through Entry.with_movement."""

from __future__ import annotations

import pytest

from roofline_tui.core.artifact import Entry
from roofline_tui.core.parts import PartOf, Said, Timing

IDENTITY = {"name": "k", "short_name": "k", "assumptions": [], "alternatives": []}


def test_parts_are_written_with_their_notes_in_step_order() -> None:
    e = Entry.from_parts(IDENTITY, [
        Said(notes=("Regime: decode.",)),
        Timing(t_ms=0.5, source="avg_us/1000", launches_per_step=2.0, regime_assumed=True,
               assumptions=("regime decode is an assumption",), notes=("Time: avg_us.",)),
        PartOf(host="other", why="judged there"),
    ])
    assert e.notes == "Regime: decode. Time: avg_us. No verdict: judged there."
    assert e.assumptions == ["regime decode is an assumption"]
    assert (e.t_ms, e.part_of, e.regime_assumed) == (0.5, "other", True)
    # a field no part wrote stays unwritten in the JSON
    assert "bytes_upper_bound" not in e.model_dump(by_alias=True)


def test_two_parts_writing_one_field_is_refused() -> None:
    twice = Timing(t_ms=1.0, source="x", launches_per_step=None)
    with pytest.raises(ValueError, match="t_ms"):
        Entry.from_parts(IDENTITY, [twice, twice])


def test_with_movement_sets_only_round_over_round_fields() -> None:
    e = Entry.from_parts(IDENTITY, [Said(notes=("Regime: decode.",))])
    e.with_movement("t fell 40%", prev_round=1, contradiction=True)
    assert (e.prev_round, e.contradiction) == (1, True)
    assert e.notes.endswith(" Contradiction (spec §8.4): t fell 40%.")
    with pytest.raises(ValueError, match="roofline_pct"):
        e.with_movement(None, roofline_pct=0.5)
