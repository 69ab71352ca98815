"""The key footer, rebuilt only when the keys it shows change."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer


class KeysFooter(Footer):
    """Textual's Footer, rebuilt at most once per frame and only when the keys it shows change.

    The stock Footer rebuilds all its keys after every bindings change, even when several are
    queued for the same frame (at start-up: the screen resuming, the first focus, the focus
    settling) and even when nothing it shows changed (moving between the two rankings). With
    eleven keys each rebuild removes and mounts eleven widgets and lays the footer out again."""

    def __init__(self) -> None:
        super().__init__()
        self._rebuild_queued = False
        self._shown_keys: tuple[object, ...] | None = None

    def compose(self) -> ComposeResult:
        # The stock Footer starts empty and fills itself a frame later; the keys are known when
        # it is mounted (the app's, right after the App's first frame), so it shows them at once
        # and the rebuild that follows finds nothing changed.
        self._bindings_ready = True
        self._shown_keys = self._keys()
        yield from super().compose()

    def bindings_changed(self, screen: Screen[Any]) -> None:
        # the stock handler's checks, then one queued rebuild instead of one per call
        self._bindings_ready = True
        if not screen.app.app_focus or not self.is_attached or screen is not self.screen:
            return
        if not self._rebuild_queued:
            self._rebuild_queued = True
            self.call_after_refresh(self._rebuild)

    def _keys(self) -> tuple[object, ...]:
        return tuple((b.key, b.action, b.description, b.key_display, enabled, tooltip)
                     for _, b, enabled, tooltip in self.screen.active_bindings.values()
                     if b.show)

    async def _rebuild(self) -> None:
        self._rebuild_queued = False
        keys = self._keys()
        if keys != self._shown_keys:
            self._shown_keys = keys
            await self.recompose()
