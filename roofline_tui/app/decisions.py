"""What a :class:`~roofline_tui.app.session.Session` event returns: a :class:`Decision` (what the
App must do), with the :class:`Note` lines shown in place and the :class:`Toast` notifications.
No Textual here."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

Severity = Literal["information", "warning", "error"]



@dataclass(frozen=True)
class Note:
    """A one-line message shown in place above the tables."""

    text: str
    severity: Severity = "warning"


@dataclass(frozen=True)
class Toast:
    """A transient notification."""

    text: str
    severity: Severity = "information"
    timeout: float | None = None


@dataclass
class Decision:
    """What the App must do after a session event."""

    analyze: list[tuple[Path, int]] = field(default_factory=list)  # (round, sequence number)
    render: bool = False        # the shown round's content changed: header, status, tables, tabs
    header: bool = False        # only the header and status line changed
    options: bool = False       # the list of rounds changed: refill the selector
    toasts: list[Toast] = field(default_factory=list)
    recheck_in: float | None = None  # call Session.tick() after this many seconds

    def merge(self, other: Decision) -> Decision:
        self.analyze += [a for a in other.analyze if a not in self.analyze]
        self.render |= other.render
        self.header |= other.header
        self.options |= other.options
        self.toasts += other.toasts
        if other.recheck_in is not None:
            self.recheck_in = (other.recheck_in if self.recheck_in is None
                               else min(self.recheck_in, other.recheck_in))
        return self
