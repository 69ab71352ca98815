"""Make untrusted strings (kernel names from profiles) safe to show on a terminal or in markdown."""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: object, *, limit: int | None = None) -> str:
    """Replace control characters (ESC, BEL, CR, ...) by visible ``\\xNN`` escapes.

    Terminal escape sequences inside a kernel name are shown, never executed. ``limit`` cuts long
    strings with an ellipsis.
    """
    s = text if isinstance(text, str) else str(text)
    s = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", s.replace("\n", " ").replace("\t", " "))
    if limit is not None and len(s) > limit:
        s = s[: max(limit - 1, 1)] + "…"
    return s


def md_cell(text: object, *, limit: int | None = None) -> str:
    """A string safe inside a markdown table cell: printable, pipes and backticks escaped."""
    return printable(text, limit=limit).replace("\\", "\\\\").replace("|", "\\|").replace("`", "'")
