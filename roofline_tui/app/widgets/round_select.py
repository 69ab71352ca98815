"""The round selector at the top left: one entry per round, no blank entry once rounds exist."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.text import Text
from textual.widgets import Select

from roofline_tui.core.layout import round_name
from roofline_tui.core.textsafe import printable


class RoundSelect(Select[str]):
    """The round selector: no blank entry once rounds exist (the prompt shows while none do)."""

    def set_rounds(self, options: list[tuple[Text, str]], value: str | None) -> None:
        self._allow_blank = not options
        self.set_options(options)
        self.disabled = not options
        if value is not None and any(v == value for _, v in options):
            self.value = value

    def show_rounds(self, rounds: Sequence[Path], shown: Path | None) -> None:
        """One entry per round (its directory name, escaped), ``shown`` selected."""
        self.set_rounds([(Text(printable(round_name(r), limit=40)), str(r)) for r in rounds],
                        str(shown) if shown is not None else None)

    def follow(self, shown: Path | None, rounds: Sequence[Path]) -> None:
        """Select ``shown`` if it is not selected yet."""
        if shown is not None and self.value != str(shown) and shown in rounds:
            self.value = str(shown)
