"""``roofline devices``: the products and archs the peak table knows, with their roofs.

What ``--device NAME`` accepts, and which compute roof a verdict would use on each: the
measured matmul ceiling where the table has one, else the data sheet."""

from __future__ import annotations

import argparse
import sys

from roofline_tui.cli.args import add_path, failure, shown


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "devices", help="list the devices the peak table knows (what --device accepts)",
        description="List the products and archs of the peak table: HBM bandwidth, the bf16 and "
                    "fp8 compute roofs (measured ceiling or data sheet), and the names --device "
                    "matches.")
    add_path(p, "--peaks", need="file", metavar="FILE",
             help="peak table in peaks.md format (default: the bundled one)")
    p.set_defaults(func=run)


def _tf(value: float | None) -> str:
    return "–" if not value else f"{value / 1e12:,.1f}"


def run(args: argparse.Namespace) -> int:
    from roofline_tui.core.peaks import load_peak_table  # the engine: only to run

    sections, problems = load_peak_table(args.peaks)
    if not sections:
        return failure("devices", shown(problems[0] if problems else "no peak table sections"))
    rows = [("product", "arch", "HBM TB/s", "bf16 TFLOP/s", "fp8 TFLOP/s")]
    for sec in sorted(sections, key=lambda s: (s.gfx, s.product or "")):
        roofs = []
        for dtype in ("bf16", "fp8"):
            m = sec.measured_flops.get(dtype)
            roofs.append(f"{_tf(m.flops)} *" if m else _tf(sec.flops.get(dtype)))
        name = sec.product or f"({sec.gfx} default)"
        rows.append((shown(name, limit=28), shown(sec.gfx, limit=10),
                     f"{sec.hbm_bw_bytes_s / 1e12:.2f}", roofs[0], roofs[1]))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        sys.stdout.write("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                         + "\n")
    sys.stdout.write("* a measured matmul ceiling (the compute roof a verdict uses); the others are "
                     "data-sheet figures\n")
    for p in problems:
        print(f"roofline devices: warning: {shown(p, limit=200)}", file=sys.stderr)
    return 0
