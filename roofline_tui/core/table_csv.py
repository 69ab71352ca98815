"""``profile_roofline.csv``: one row per entry with the dashboard tables' columns.

The next target (``core.reading.next_target``) is a column, ``next_target``: ``next`` (or
``next (host-side)``) on the pick's row, ``skipped: <reason>`` on the rows it passed over, empty
elsewhere. A column, not a trailing comment row: ``csv.DictReader``, pandas and spreadsheets all
read an extra column as data and ignore it when unasked, while a ``#`` row is read as one more
entry by each of them (pandas unless told ``comment="#"``) and breaks "one row per entry".

``label`` is what the row reads in every table (``core.labels.row_labels``, uncut): the
recorded op and shape of a shared library kernel (``GEMM 32×4096→24576
(MergedColumnParallelLinear)``), else its demangled name, with what tells look-alike rows apart;
no two rows have the same label. ``short_name`` stays the key the rankings use.

A round imported from several ranks (or GPUs) fills ``rank_spread_max_over_median`` (the slowest
rank's time per launch over the median rank's) and ``slowest_rank`` for each entry the ranks
recorded; both are empty for a single trace.

Numbers are written as the artifact holds them (SI units, full precision, empty when unknown) so
a spreadsheet or a script reads them without parsing human units. Strings pass through the
sanitiser. OWASP's CSV-injection rule is followed as written: every cell that starts with ``=``,
``+``, ``-``, ``@``, a tab or a carriage return is written as a text cell with a leading
apostrophe — a negative number too (``'-12.5``: a spreadsheet shows it as text, a script strips
the apostrophe), since the rule cannot tell ``-12.5`` from ``-2+3+cmd|...``. Written atomically beside the JSON (see ``core.rounds.analysis.write_csv``).
"""

from __future__ import annotations

import csv
import io
from typing import Any

from roofline_tui.core import reading
from roofline_tui.core.artifact import Artifact, Entry
from roofline_tui.core.labels import row_labels
from roofline_tui.core.layout import CSV_NAME
from roofline_tui.core.textsafe import printable

__all__ = ["COLUMNS", "CSV_NAME", "artifact_to_csv"]

COLUMNS = (
    "rank_by_pct", "rank_by_expected_gain", "short_name", "label", "name", "pct_gpu_time",
    "serving_weighted_pct", "regime", "op_class", "bound_type", "roofline_pct", "target_eff",
    "attainable_speedup", "expected_e2e_gain_pct", "headroom_class", "route", "confidence",
    "flags", "model_caution", "delta_t_pct_vs_prev", "t_ms", "bytes_est", "flops_est",
    "arithmetic_intensity", "rank_spread_max_over_median", "slowest_rank", "next_target",
)


def _flags(e: Entry) -> str:
    """The entry's flags (``core.reading.flags``), space-separated."""
    return " ".join(reading.flags(e))


# A cell a spreadsheet may run as a formula starts with one of these (OWASP, "CSV Injection"):
# such a cell is written as text, behind a leading apostrophe.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _as_text_cell(text: str) -> str:
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def _cell(value: Any) -> str | float | int:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        # a negative number starts with "-" too: OWASP's rule does not tell it from a formula
        # ("-2+3+cmd|..."), so it is quoted like any other such cell (a script reads it with
        # float(cell.lstrip("'")))
        return _as_text_cell(repr(value)) if value < 0 else value
    # tab and CR are checked before the sanitiser turns a tab into a space
    raw = value if isinstance(value, str) else str(value)
    text = printable(value)
    if raw.startswith(("\t", "\r")):
        return "'" + text
    return _as_text_cell(text)


def _ranks(names: list[str]) -> dict[str, int]:
    ranks: dict[str, int] = {}
    for i, n in enumerate(names, 1):
        ranks.setdefault(n, i)
    return ranks


def artifact_to_csv(artifact: Artifact, ranks: reading.RankView | None = None) -> str:
    """The artifact's entries as CSV text (header first, rows in the GPU-time ranking's order).

    ``ranks``: the round's ranks (``core.reading.rank_view`` of its Top-N); with two or more,
    ``rank_spread_max_over_median`` and ``slowest_rank`` say each entry's spread across them
    (empty otherwise)."""
    several = reading.several_ranks(ranks)
    by_pct = _ranks(artifact.ranking_by_pct)
    by_gain = _ranks(artifact.ranking_by_expected_gain)
    order = sorted(artifact.entries,
                   key=lambda e: (by_pct.get(e.short_name, len(by_pct) + 1), e.short_name))
    nxt = reading.next_target_of(artifact)
    shown = row_labels(order)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for e, label in zip(order, shown, strict=True):
        spread = several.spread_of(e) if several is not None else None
        ratio = reading.spread_ratio(spread) if spread is not None else None
        row = {
            "rank_spread_max_over_median": round(ratio, 4) if ratio is not None else None,
            "slowest_rank": spread.slowest_rank if spread is not None else None,
            "label": label,
            "rank_by_pct": by_pct.get(e.short_name),
            "rank_by_expected_gain": by_gain.get(e.short_name),
            "flags": _flags(e),
            "next_target": reading.next_role(nxt, e),
        }
        w.writerow([_cell(row[c] if c in row else getattr(e, c, None)) for c in COLUMNS])
    return buf.getvalue()
