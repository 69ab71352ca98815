"""The dashboard's file watchers: the profile tree, and the inputs an analysis read outside it.

Each watcher is an async worker of the App (``watchfiles.awatch``, imported when it starts) that
posts :class:`~roofline_tui.app.messages.FilesChanged`; what a change means is the session's
business. :class:`WatcherBase` gives both the same shape: :meth:`~WatcherBase.start`,
:meth:`~WatcherBase.stop`, and :meth:`~WatcherBase.sync` for a watcher whose paths follow the
session.
"""

from __future__ import annotations

import asyncio
import os
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from textual.app import App

from roofline_tui.app.messages import AgainstChanged, FilesChanged

if TYPE_CHECKING:
    from roofline_tui.app.compare import Against
from roofline_tui.app.round_index import is_directory_event, is_within
from roofline_tui.core.api import RoundSources
from roofline_tui.core.layout import is_relevant_change
from roofline_tui.core.textsafe import printable


class WatcherBase(ABC):
    """One watcher: an async worker of ``app`` in its own group, stopped by its own event
    (watchfiles sets the event it is given when its task is cancelled, so two watchers never
    share one)."""

    group = "watcher"

    def __init__(self, app: App[None], *, debounce_ms: int, step_ms: int) -> None:
        self.app = app
        self.debounce_ms = debounce_ms
        self.step_ms = step_ms
        self._stop = asyncio.Event()

    def start(self) -> None:
        self._stop.set()
        self._stop = asyncio.Event()
        self.app.run_worker(self.run(self._stop), group=self.group, exclusive=True,
                            exit_on_error=False, name=self.group)

    def stop(self) -> None:
        self._stop.set()

    def post(self, paths: Sequence[str | Path]) -> None:
        self.app.post_message(FilesChanged(tuple(Path(p) for p in paths)))

    @abstractmethod
    async def run(self, stop: asyncio.Event) -> None:
        """Watch until ``stop`` is set."""


MAX_WATCHES = 1024  # directories watched at most (older kernels allow 8,192 per user)
IDENTITY_CHECK_MS = 1000  # how often the watcher looks whether the profile was replaced
REPLACED = "profile directory replaced; following the new one"


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)  # through a symlink: a repointed `latest` is another directory
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _real_subdirs(top: Path) -> Iterator[str]:
    """``top`` and the directories below it, links not followed, hidden ones left out."""
    for here, dirs, _files in os.walk(top, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")
                         and not os.path.islink(os.path.join(here, d)))
        yield here


class ProfileWatcher(WatcherBase):
    """The directories inputs live in: the watch root and the way down to the profile, each
    round and the real directories inside it, and the extra trees (kernels/, shapes, counters);
    each watched on its own, not recursively, so a link inside a round to a busy directory
    elsewhere is never followed, and a directory that is not a profile (``dash ~``) costs one
    watch, not one per subdirectory. At most :data:`MAX_WATCHES`.

    The path is watched, not the inode: when the profile directory (or the link to it) comes to
    name another directory (``mv P P.old && cp -r P.old P``, a repointed ``latest``), the
    watcher says so and follows the new one; a directory appearing or going re-attaches it.
    Polls while the root does not exist. ``on_attached`` is called once, after the first attach;
    ``on_replaced`` each time the profile was replaced."""

    group = "profile-watcher"

    def __init__(self, app: App[None], root: Path, extra: Sequence[Path], *, debounce_ms: int,
                 step_ms: int, poll_s: float, on_attached: Callable[[], object],
                 profile: Path | None = None,
                 on_replaced: Callable[[str], object] | None = None) -> None:
        super().__init__(app, debounce_ms=debounce_ms, step_ms=step_ms)
        self.root = root
        self.profile = profile if profile is not None else root
        self.extra = list(extra)
        self.poll_s = poll_s
        self.on_attached = on_attached
        self.on_replaced = on_replaced
        self.watching = False  # True while attached
        self.watched: list[str] = []  # the directories of the current attach
        self.capped = False  # more directories than MAX_WATCHES
        self._said_capped = False

    def _filter(self, _change: object, path: str) -> bool:
        return is_relevant_change(path, self.root)

    def directories(self) -> list[str]:
        """What to watch now (each directory once, at most MAX_WATCHES)."""
        from roofline_tui.core.layout import rounds_at

        found: dict[str, None] = {str(self.root): None}
        if is_within(self.profile, self.root):
            here = Path(os.path.abspath(self.profile))
            for d in [*reversed(here.parents), here]:
                if is_within(d, self.root) and d.is_dir():
                    found[str(d)] = None
        trees = [*rounds_at(self.profile), *[p for p in self.extra if p.is_dir()]]
        for tree in trees:
            for sub in _real_subdirs(tree):
                found[sub] = None
                if len(found) > MAX_WATCHES:
                    self.capped = True
                    return list(found)[:MAX_WATCHES]
        self.capped = False
        return list(found)

    def _identities(self) -> tuple[tuple[int, int] | None, ...]:
        return _identity(self.root), _identity(self.profile)

    async def run(self, stop: asyncio.Event) -> None:
        from watchfiles import awatch

        root = self.root
        attached = False
        while not stop.is_set():
            if not root.is_dir():
                await asyncio.sleep(self.poll_s)
                if root.is_dir():
                    self.post([root])
                continue
            before = set(self.watched)
            self.watched = self.directories()
            if self.capped and not self._said_capped:
                self._said_capped = True
                self.app.notify(f"more than {MAX_WATCHES} directories under "
                                f"{printable(str(root), limit=80)}: watching the first "
                                f"{MAX_WATCHES} (r recomputes)", severity="warning",
                                markup=False)
            identity = self._identities()
            self.watching = True
            if not attached:
                # watchfiles attaches its watcher in the first step of the loop below, before
                # its first await; a callback queued now runs right after that step
                attached = True
                asyncio.get_running_loop().call_soon(self.on_attached)
            elif before:  # re-attached: what appeared meanwhile may hold files already
                added = [d for d in self.watched if d not in before]
                if added:
                    self.post(added)
            try:
                async for changes in awatch(*self.watched, debounce=self.debounce_ms,
                                            step=self.step_ms, stop_event=stop, recursive=False,
                                            watch_filter=self._filter,
                                            rust_timeout=IDENTITY_CHECK_MS,
                                            yield_on_timeout=True):
                    if self._identities() != identity:
                        if root.is_dir() and self.on_replaced is not None:
                            self.on_replaced(REPLACED)
                        self.post([root])
                        break
                    if not changes:
                        continue
                    paths = [p for _, p in changes]
                    self.post(paths)
                    if not root.is_dir() or any(is_directory_event(Path(p)) for p in paths):
                        break  # a directory came or went: attach again
            except (OSError, RuntimeError):
                await asyncio.sleep(self.poll_s)
            self.watching = False
            if not root.is_dir():
                self.post([root])


class InputsWatcher(WatcherBase):
    """Files an analysis read outside the profile tree (env_report, config.json, peaks, priors):
    their directories, non-recursively, for exactly those files."""

    group = "inputs-watcher"

    def __init__(self, app: App[None], *, debounce_ms: int, step_ms: int) -> None:
        super().__init__(app, debounce_ms=debounce_ms, step_ms=step_ms)
        self.files: tuple[Path, ...] = ()

    def sync(self, files: Sequence[Path]) -> None:
        """Watch exactly ``files`` from now on (restarted only when they change)."""
        wanted = tuple(files)
        if wanted == self.files:
            return
        self.files = wanted
        if wanted:
            self.start()
        else:
            self.stop()

    async def run(self, stop: asyncio.Event) -> None:
        from watchfiles import awatch

        files = self.files
        names = {os.path.realpath(f) for f in files} | {os.path.abspath(f) for f in files}
        dirs = sorted({str(Path(os.path.abspath(f)).parent) for f in files})
        dirs = [d for d in dirs if os.path.isdir(d)]
        if not dirs:
            return

        def wanted(_change: object, path: str) -> bool:
            return path in names or os.path.realpath(path) in names

        try:
            async for changes in awatch(*dirs, debounce=self.debounce_ms, step=self.step_ms,
                                        stop_event=stop, recursive=False, watch_filter=wanted):
                self.post([p for _, p in changes])
        except (OSError, RuntimeError):
            return


class AgainstWatcher(WatcherBase):
    """The ``--against`` side's tree (a round, a profile or an artifact's directory),
    recursively: any relevant change posts :class:`AgainstChanged` where the comparison's
    outcomes go (``against.post``: the rankings). Polls while it does not exist."""

    group = "against-watcher"

    def __init__(self, app: App[None], against: Against, *, debounce_ms: int, step_ms: int,
                 poll_s: float) -> None:
        super().__init__(app, debounce_ms=debounce_ms, step_ms=step_ms)
        self.against = against
        path = against.path
        self.root = path if not path.is_file() else path.parent
        self.poll_s = poll_s

    def _filter(self, _change: object, path: str) -> bool:
        return is_relevant_change(path, self.root)

    async def run(self, stop: asyncio.Event) -> None:
        from watchfiles import awatch

        while not stop.is_set():
            if not self.root.is_dir():
                await asyncio.sleep(self.poll_s)
                continue
            try:
                async for changes in awatch(self.root, debounce=self.debounce_ms,
                                            step=self.step_ms, stop_event=stop, recursive=True,
                                            watch_filter=self._filter):
                    if changes:
                        self.against.post(AgainstChanged())
            except (OSError, RuntimeError):
                await asyncio.sleep(self.poll_s)


def extra_roots(profile_dir: Path, watch_root: Path, sources: RoundSources) -> list[Path]:
    """Trees watched recursively besides the profile tree: explicit shape and counter sources,
    and EVAL_DIR/kernels/ beside profile/ (new stage-B captures refine live)."""
    extra = [p for p in (sources.shapes, *sources.counters) if p is not None]
    if profile_dir.name == "profile":
        extra.append(profile_dir.parent / "kernels")
    return extra


class Watchers:
    """Both watchers of the dashboard, started together after the first frame (``enabled``
    False: never; tests drive changes by hand)."""

    def __init__(self, app: App[None], root: Path, extra: Sequence[Path], *, enabled: bool,
                 debounce_ms: int, step_ms: int, poll_s: float,
                 on_attached: Callable[[], object], profile: Path | None = None,
                 on_replaced: Callable[[str], object] | None = None,
                 against: Against | None = None) -> None:
        self.root = root
        self.enabled = enabled
        self.started = False
        self.profile = ProfileWatcher(app, root, extra, debounce_ms=debounce_ms,
                                      step_ms=step_ms, poll_s=poll_s, on_attached=on_attached,
                                      profile=profile, on_replaced=on_replaced)
        self.inputs = InputsWatcher(app, debounce_ms=debounce_ms, step_ms=step_ms)
        self.against = (AgainstWatcher(app, against, debounce_ms=debounce_ms, step_ms=step_ms,
                                       poll_s=poll_s) if against is not None else None)

    @property
    def watching(self) -> bool:
        return self.profile.watching

    def start(self, inputs: Sequence[Path]) -> None:
        self.started = True
        self.profile.start()
        if self.against is not None:
            self.against.start()
        self.sync(inputs)

    async def start_after(self, before: Callable[[], Awaitable[object]] | None,
                          inputs: Callable[[], Sequence[Path]]) -> None:
        """Await ``before`` (tests change a file there), then start with ``inputs()`` as they
        are then."""
        if before is not None:
            await before()
        self.start(inputs())

    def sync(self, inputs: Sequence[Path]) -> None:
        """Watch exactly the ``inputs`` outside the profile tree (once started)."""
        if self.enabled and self.started:
            self.inputs.sync([p for p in inputs if not is_within(p, self.root)])

    def stop(self) -> None:
        self.profile.stop()
        self.inputs.stop()
        if self.against is not None:
            self.against.stop()
