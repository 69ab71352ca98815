"""The kernel filter at the bottom: hidden until ``/``; ``enter`` keeps the filter, ``escape``
clears it. Its text is the Rankings' filter (:class:`Input.Changed` reaches the App)."""

from __future__ import annotations

from textual.widgets import Input


class FilterBox(Input):
    def __init__(self) -> None:
        super().__init__(placeholder="filter kernels by name (enter: keep, escape: clear)",
                         id="filter")

    @property
    def shown(self) -> bool:
        return self.has_class("-shown")

    def open(self) -> None:
        self.add_class("-shown")
        self.focus()

    def close(self, *, clear: bool) -> None:
        """Hide the box (``clear``: and empty it, which posts the change)."""
        if clear:
            self.value = ""
        self.remove_class("-shown")
