"""``roofline diff A B``: two runs compared op by op (``core.diff``), across builds or vendors.

A side is a round directory, a profile directory (its last round) or a
``profile_roofline.json`` (its round). Each is analysed with what its own directory holds (its
env_report, model config), so two devices can be compared.
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from roofline_tui.cli.args import add_analysis_arguments, add_path, failure, shown

if TYPE_CHECKING:
    from roofline_tui.core.diff import Diff, DiffRow, DiffSide

def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "diff", help="compare two runs op by op (across builds and vendors)",
        description="Match the logical ops of two rounds by what the traces recorded (the "
                    "launching op, its module, the dims that do not change with the batch, "
                    "the weight dtype), not by kernel name, and say for each which side is "
                    "slower and why: the hardware, the kernel or the work.")
    add_path(p, "a", need="file-or-dir", metavar="A", help="round, profile directory or artifact")
    add_path(p, "b", need="file-or-dir", metavar="B", help="round, profile directory or artifact")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="the comparison as JSON")
    out.add_argument("--csv", action="store_true", help="one CSV row per op")
    out.add_argument("--md", action="store_true", help="a Markdown table")
    add_analysis_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from roofline_tui.cli.args import options_from_args
    from roofline_tui.core.api import diff_rounds

    options, code = options_from_args("diff", args)
    if options is None:
        return code
    from roofline_tui.core.layout import side_round

    a, b = side_round(Path(args.a)), side_round(Path(args.b))
    try:
        d = diff_rounds(a, b, options)
    except ValueError as exc:
        return failure("diff", shown(exc, limit=300))
    if args.json:
        sys.stdout.write(d.model_dump_json(indent=2) + "\n")
    elif args.csv:
        sys.stdout.write(to_csv(d))
    elif args.md:
        sys.stdout.write(to_md(d))
    else:
        print_diff(d)
    return 0


def _us(side: DiffSide | None) -> str:
    return f"{side.time_us:,.1f}" if side is not None else "–"


def _pct(side: DiffSide | None) -> str:
    return (f"{side.roofline_pct:.0%}" if side is not None and side.roofline_pct is not None
            else "–")


def _kernel(side: DiffSide | None) -> str:
    return shown(side.kernels[0], limit=36) if side is not None and side.kernels else "–"


def _cells(r: DiffRow) -> list[str]:
    ratio = f"{r.ratio:.2f}×" if r.ratio is not None else "–"
    return [shown(r.key, limit=60), _us(r.a), _us(r.b), ratio, _pct(r.a), _pct(r.b),
            _kernel(r.a), _kernel(r.b), r.cause]


HEADERS = ["op", "A µs", "B µs", "B/A", "A roof%", "B roof%", "A kernel", "B kernel", "cause"]


def print_diff(d: Diff) -> None:
    from roofline_tui.cli.table import Column, print_table

    from roofline_tui.core.diff import FEW_MATCHED, SAME_TIME

    cols = [Column(h, "right" if h.endswith(("µs", "B/A", "%")) else "left") for h in HEADERS]
    t = d.totals
    moved = [r for r in d.rows if r.cause != "unchanged"]
    title = f"{shown(d.a)} (A) vs {shown(d.b)} (B), {t.basis}"
    if moved:
        print_table(cols, [_cells(r) for r in moved], title)
    else:
        print(f"{title}: no matched op moved")
    same = len(d.rows) - len(moved)
    if same:
        print(f"{same} matched op(s) unchanged (the same work, times within {SAME_TIME:.0%}; "
              "--csv/--json list them)")
    few = min(t.a_matched_share, t.b_matched_share) < FEW_MATCHED
    print(f"matched ops cover {t.a_matched_share:.1%} of A's GPU time "
          f"({t.a_time_us:,.1f} µs) and {t.b_matched_share:.1%} of B's ({t.b_time_us:,.1f} µs)"
          + (": few ops match" if few else ""))
    for label, rows in (("only in A", d.unmatched_a), ("only in B", d.unmatched_b)):
        if rows:
            listed = "; ".join(f"{shown(r.key, limit=50)} {abs(r.delta_us):,.1f} µs"
                               for r in rows[:5])
            print(f"{label}: {listed}")
    for note in d.notes:
        print(f"note: {shown(note, limit=300)}")
    for r in moved[:3]:
        print(f"{shown(r.key, limit=60)}: {r.cause}: {shown(r.why, limit=200)}")


def _all_rows(d: Diff) -> list[DiffRow]:
    return [*d.rows, *d.unmatched_a, *d.unmatched_b]


def to_csv(d: Diff) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["key", "a_us", "b_us", "ratio", "a_roofline_pct", "b_roofline_pct",
                "a_kernels", "b_kernels", "cause", "why"])
    for r in _all_rows(d):
        w.writerow([r.key, r.a.time_us if r.a else "", r.b.time_us if r.b else "",
                    r.ratio if r.ratio is not None else "",
                    r.a.roofline_pct if r.a and r.a.roofline_pct is not None else "",
                    r.b.roofline_pct if r.b and r.b.roofline_pct is not None else "",
                    " ".join(r.a.kernels) if r.a else "", " ".join(r.b.kernels) if r.b else "",
                    r.cause, r.why])
    return buf.getvalue()


def to_md(d: Diff) -> str:
    from roofline_tui.core.textsafe import md_cell

    t = d.totals
    out = [f"# {md_cell(d.a)} (A) vs {md_cell(d.b)} (B), {t.basis}", "",
           "| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    out += ["| " + " | ".join(md_cell(c) for c in _cells(r)) + " |" for r in _all_rows(d)]
    out += ["", f"Matched ops cover {t.a_matched_share:.1%} of A's GPU time and "
                f"{t.b_matched_share:.1%} of B's."]
    out += [f"- {md_cell(n)}" for n in d.notes]
    return "\n".join(out) + "\n"
