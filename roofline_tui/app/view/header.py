"""The lines above the rankings: device and peaks, workload, the Next line and the coverage.

Presentation only: the Next line is ``core.reading``'s decision, styled.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text

from roofline_tui.app.view.styles import DIM, HEADROOM_STYLE, LABEL_STYLE
from roofline_tui.core import reading, units
from roofline_tui.core.artifact import Artifact
from roofline_tui.core.layout import round_name
from roofline_tui.core.textsafe import printable

if TYPE_CHECKING:
    from roofline_tui.app.decisions import Note
    from roofline_tui.app.session import Session
    from roofline_tui.core.api import RoundResult


# how each piece of the next-target line looks (core.reading.next_parts says what each is)
NEXT_STYLE: dict[str, str] = {
    "lead": "bold",
    "advisory": "bold yellow",
    "saturated": HEADROOM_STYLE["saturated"],
    "plain": "",
    "numbers": DIM,
    "host": DIM,
    "skipped": "yellow",
    "dim": DIM,
}


def next_target(artifact: Artifact) -> Text:
    """The Next line (``core.reading.next_target``, the same line the CLI, the Markdown and the
    JSON carry), styled: the pick in its headroom colour, what was skipped in yellow."""
    nt = reading.next_target_of(artifact)
    out = Text()
    for text, part in reading.next_parts(nt):
        style = (HEADROOM_STYLE.get(nt.headroom_class, "") or "bold") if part == "name" \
            else NEXT_STYLE.get(part, "")
        out.append(text, style=style)
    return out


def coverage_line(artifact: Artifact, topn: Any = None, serving: bool = False) -> Text:
    """What the heads cover: ``5 heads = 49.4 % of GPU time`` and the Top-N around them."""
    heads = [e for e in artifact.entries]
    total = sum(e.pct_gpu_time or 0.0 for e in heads)
    out = Text()
    out.append(f"{len(heads)} head{'s' if len(heads) != 1 else ''} = "
               f"{units.pct_points(total, 1)} of GPU time", style="bold")
    kernels = getattr(topn, "entries", None)
    if kernels:
        tail = getattr(topn, "tail", None)  # a big Top-N's rows summarised, not kept
        rows = len(kernels) + (tail.rows if tail is not None else 0)
        all_pct = sum(k.pct_gpu_time for k in kernels) + (
            tail.pct_gpu_time if tail is not None else 0.0)
        below = rows - len(heads)
        out.append(f" · Top-N: {rows} kernels = {units.pct_points(all_pct, 1)}")
        if below > 0:
            out.append(f" · {below} below the head threshold (a: list them)", style=DIM)
    if serving:
        out.append(" · serv% = the share once the profile window is re-weighted to the "
                   "deployed prefill/decode mix", style=DIM)
    return out


is_advisory = reading.round_is_advisory  # the round is advisory

def _peak_dtypes(artifact: Artifact) -> list[str]:
    used = [e.peak_flops_dtype for e in artifact.entries]
    wanted = sorted({d for d in used if isinstance(d, str) and d in artifact.peaks.flops})
    if not wanted:
        wanted = [d for d in ("fp8", "bf16") if d in artifact.peaks.flops]
    return wanted


def device_line(artifact: Artifact) -> Text:
    p = artifact.peaks
    product = p.product
    out = Text()
    out.append(printable(artifact.gfx or "unknown arch"), style=LABEL_STYLE)
    if product:
        out.append(" " + printable(product, limit=24))
    out.append(f" · HBM {units.rate(p.hbm_bw_bytes_s, 'B/s')}")
    for d in _peak_dtypes(artifact):
        out.append(f" · {printable(d)} {units.rate(p.flops.get(d), 'FLOP/s')}")
    out.append(" · peaks ")
    conf_style = "green" if p.confidence == "high" else "bold yellow"
    out.append(f"{printable(p.source)}/{printable(p.confidence)}", style=conf_style)
    if p.compute_validated is False and p.flops:
        out.append(" compute peaks unvalidated", style="bold yellow")
    return out


def workload_line(artifact: Artifact) -> Text:
    out = Text()
    if is_advisory(artifact):
        out.append(f"ADVISORY stage {printable(artifact.stage)}, low confidence",
                   style="bold black on yellow")
        out.append(" · ")
    heads = len(artifact.entries)
    out.append(f"{heads} head{'s' if heads != 1 else ''}")
    if artifact.degraded:
        out.append(f" · {len(artifact.degraded)} degraded", style="yellow")
    if artifact.skill_errors:
        out.append(f" · {len(artifact.skill_errors)} input problem(s)", style="yellow")
    wl = artifact.workload.model_dump()
    if wl:
        parts = [f"{k} {printable(wl[k])}" for k in ("isl", "osl", "conc", "tp") if wl.get(k) is not None]
        if parts:
            out.append(" · workload " + " ".join(parts))
    return out


def title_line(session: Session, display_name: str, *, demo: bool = False) -> Text:
    """The top line: the shown round, its position, stage, when it was computed, the profile."""
    s = session
    result = s.shown_result
    title = Text()
    if s.shown is not None:
        title.append(printable(round_name(s.shown), limit=40), style="bold")
        pos = s.position()
        if pos is not None:
            title.append(f" ({pos[0]}/{pos[1]})")
    else:
        title.append("no round", style="bold")
    if result is not None:
        title.append(f" · stage {printable(result.artifact.stage)}")
    if s.is_pending(s.shown):
        display = result is not None and result.display_only
        title.append(" · re-reading…" if display else " · recomputing…", style="italic")
    elif s.shown in s.computed_at:
        verb = "read" if result is not None and result.display_only else "recomputed"
        title.append(f" · {verb} {s.computed_at[s.shown]:%H:%M:%S}")
    title.append(" · demo: " if demo else " · ")
    title.append(printable(display_name))
    return title


def info_lines(result: RoundResult | None) -> Text:
    """The device/peaks line and the workload line under the title."""
    if result is None:
        return Text("device and peaks appear once a round is analysed", style=DIM)
    return Text("\n").join([device_line(result.artifact), workload_line(result.artifact)])


def status_lines(notes: list[Note]) -> Text:
    return Text("\n".join(printable(n.text) for n in notes))
