"""``roofline dash``: a live view of a profile directory's rounds, rendered from engine artifacts.

The App renders; the :class:`~roofline_tui.app.session.Session` decides. Every event (a key, a
finished analysis, a changed file, a timer) goes to the session, which returns a
:class:`~roofline_tui.app.session.Decision`; :meth:`RooflineApp.apply` carries it out: start
analyses, redraw, notify. Analyses run on daemon threads (so ``q`` quits at once even while one
runs) and come back as :mod:`~roofline_tui.app.messages`. Watchers notice changed inputs inside
the profile tree and every file an analysis read outside it.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text
from textual import events, on
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Select, Static, TabbedContent

from roofline_tui.app import view
from roofline_tui.app.messages import FilesChanged, RoundAnalyzed, RoundFailed
from roofline_tui.app.session import INVALID_AFTER_S, Decision, Session
from roofline_tui.app.widgets.detail_panel import FIRST_PANE, KERNEL_PANES, DetailPanel
from roofline_tui.app.widgets.help_screen import HelpScreen, KeySection
from roofline_tui.app.widgets.rank_table import RankTable
from roofline_tui.core import demangle as names
from roofline_tui.core import units
from roofline_tui.core.analyze import AnalyzeOptions
from roofline_tui.core.artifact import AnalysisSettings, Artifact
from roofline_tui.core.demangle import fit
from roofline_tui.core.rounds.analysis import (
    RoundResult,
    RoundSources,
    load_stored_artifact,
    write_artifact,
    write_csv,
)
from roofline_tui.core.rounds.annotate import analyze_round_with_history
from roofline_tui.core.rounds.fingerprint import Fingerprint, RoundCache, file_fingerprint
from roofline_tui.core.rounds.layout import TOPN_NAME, is_relevant_change, round_label, round_name
from roofline_tui.core.rounds.snapshot import RoundSnapshot, snapshot_fingerprint
from roofline_tui.core.table_csv import CSV_NAME
from roofline_tui.core.textsafe import printable

if TYPE_CHECKING:
    from roofline_tui.app.widgets.roofline_chart import RooflineChart

BELOW_PREFIX = "below:"  # row keys of the greyed kernels under the heads

Clock = Callable[[], datetime]


@dataclass
class InputsChecked(Message):
    """The inputs of the analysed rounds, fingerprinted once the watchers were attached."""

    current: dict[Path, Fingerprint]


def settings_of(artifact: Artifact) -> AnalysisSettings | None:
    """The settings an artifact records (older ones: the threshold and cap alone)."""
    if artifact.analysis_settings is not None:
        return artifact.analysis_settings
    if artifact.head_threshold_pct is None or artifact.max_heads is None:
        return None
    return AnalysisSettings(head_threshold_pct=artifact.head_threshold_pct,
                            max_heads=artifact.max_heads)


def same_settings(a: AnalysisSettings, b: AnalysisSettings) -> bool:
    return (a.head_threshold_pct, a.max_heads, a.priors_fingerprint) == (
        b.head_threshold_pct, b.max_heads, b.priors_fingerprint)


def _is_within(path: Path, root: Path) -> bool:
    try:
        Path(os.path.abspath(path)).relative_to(os.path.abspath(root))
    except ValueError:
        return False
    return True


class RoundSelect(Select[str]):
    """The round selector: no blank entry once rounds exist (the prompt shows while none do)."""

    def set_rounds(self, options: list[tuple[Text, str]], value: str | None) -> None:
        self._allow_blank = not options
        self.set_options(options)
        self.disabled = not options
        if value is not None and any(v == value for _, v in options):
            self.value = value


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
        # The stock Footer starts empty and fills itself after the first frame; the keys are
        # known from the start (the app's), so the first frame shows them and the rebuild that
        # follows finds nothing changed.
        self._bindings_ready = True
        self._shown_keys = self._keys()
        yield from super().compose()

    def bindings_changed(self, screen: Screen) -> None:
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


class RooflineApp(App[None]):
    """Two rankings side by side, a drill-down, live recompute and export."""

    TITLE = "roofline dash"
    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute: subclasses live elsewhere
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]  # side by side from 120 columns
    WIDE_FROM = 120
    ESCAPE_TO_MINIMIZE = False  # our escape minimizes and puts focus back on the rankings
    # The rankings have focus from the start. Named here rather than focused in on_mount: each
    # focus change makes the Footer rebuild its keys once the screen settles, so a second one
    # would rebuild them again right after the first paint.
    AUTO_FOCUS = "#by-pct"
    # How long the start waits for the shown round's first analysis before drawing anything
    # (the demo's takes about 0.1 s; a larger one is shown as "analysing…" meanwhile).
    FIRST_RESULT_WAIT_S = 0.4

    BINDINGS = [
        # help and quit first: the footer keeps them when the terminal is narrow
        Binding("question_mark", "help", "Help", key_display="?", id="help",
                tooltip="keys and legend"),
        Binding("q", "quit", "Quit", id="quit", tooltip="quit at once (a running analysis is "
                "abandoned)"),
        Binding("e", "export", "Export", id="export",
                tooltip="write profile_roofline.json + .md into the shown round's directory"),
        Binding("E", "export_csv", "CSV", id="export-csv",
                tooltip="write profile_roofline.csv (one row per entry) into the shown round's "
                        "directory"),
        Binding("r", "recompute", "Recompute", id="recompute",
                tooltip="analyse the shown round again now"),
        Binding("c", "show_chart", "Chart", id="chart",
                tooltip="open the roofline chart of the shown round; again: back to the rankings"),
        Binding("left_square_bracket", "prev_round", "Prev", key_display="[",
                id="prev-round", tooltip="show the previous round"),
        Binding("right_square_bracket", "next_round", "Next", key_display="]",
                id="next-round", tooltip="show the next round"),
        Binding("slash", "filter", "Filter", key_display="/", id="filter",
                tooltip="filter both rankings by kernel name (enter keeps it, escape clears it)"),
        Binding("s", "sort", "Sort", id="sort",
                tooltip="sort the focused ranking by its next column (or click a column header; "
                        "again to reverse)"),
        Binding("y", "copy_name", "Copy name", show=False, id="copy-name",
                tooltip="copy the selected kernel's full name to the clipboard"),
        Binding("Y", "copy_json", "Copy JSON", show=False, id="copy-json",
                tooltip="copy the selected entry's JSON to the clipboard"),
        Binding("a", "toggle_below", "All kernels", show=False, id="below-threshold",
                tooltip="list the Top-N kernels below the head threshold (greyed) under the heads"),
        Binding("escape", "clear_filter", "Back", show=False, id="clear-filter",
                tooltip="back to the rankings (from the chart or the drill-down); there: clear "
                        "the kernel filter"),
    ]

    def __init__(
        self,
        profile_dir: Path,
        sources: RoundSources | None = None,
        *,
        watch: bool = True,
        clock: Clock | None = None,
        display_name: str | None = None,
        watch_root: Path | None = None,
        debounce_ms: int = 300,
        step_ms: int = 40,
        poll_s: float = 0.3,
        demo: bool = False,
        options: AnalyzeOptions | None = None,
        invalid_after_s: float | None = None,
        before_watchers: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        super().__init__()
        self.profile_dir = Path(profile_dir)
        self.sources = sources or RoundSources()
        self.options = options
        self.watch_enabled = watch
        self.display_name = display_name if display_name is not None else str(profile_dir)
        self.watch_root = Path(watch_root) if watch_root is not None else self.profile_dir
        self.debounce_ms = debounce_ms
        self.step_ms = step_ms
        self.poll_s = poll_s
        self.demo = demo
        self.session = Session(self.profile_dir, display_name=self.display_name,
                               watch_root=self.watch_root, clock=clock or datetime.now,
                               extra_roots=self.extra_roots(),
                               invalid_after_s=invalid_after_s or INVALID_AFTER_S)
        # sibling rounds kept by their inputs' fingerprint: a recompute re-reads only what changed
        self.round_cache: RoundCache[RoundSnapshot] = RoundCache()
        self.selected_key: str | None = None
        self.filter_text = ""
        self.sort: dict[str, tuple[str, bool]] = {}   # table id -> (column key, descending)
        self.show_below = False                        # list kernels below the head threshold
        self.columns: dict[str, list[tuple[str, str, int]]] = {}  # per table: (label, key, width)
        self.watching = False          # True while the profile watcher is attached
        self._watchers_started = False  # the watchers start after the first frame
        self.watched_inputs: tuple[Path, ...] = ()  # outside files the inputs watcher covers
        self._stop_watch = asyncio.Event()
        self._inputs_stop = asyncio.Event()
        self._analysing: dict[Path, int] = {}   # round -> sequence number of its running analysis
        self._queued: dict[Path, int] = {}    # round -> newest sequence number waiting for it
        self._rows: dict[str, view.Row] = {}
        self._pane_key: dict[str, object] = {}  # what each drill-down pane shows (render cache)
        self._recheck_timer: object | None = None
        self._fitted_width = 0  # the terminal width the rankings' columns were fitted to
        self._back_tab = FIRST_PANE      # the tab the chart replaced (c / escape go back to it)
        self._back_table = "by-pct"      # the ranking the drill-down was entered from
        # the first analyses' way back while on_mount waits for them (see _first_results)
        self._handoff = threading.Lock()
        self._first_wait: threading.Event | None = None
        self._first_arrived: list[RoundAnalyzed | RoundFailed] = []
        # start-up: awaited after the first frame, before the watchers start (tests hold the
        # start there to change a file in the window the watchers cannot see)
        self.before_watchers = before_watchers
        self._fingerprints: dict[tuple[Path, int], Fingerprint] = {}  # (round, seq) -> inputs
        self._check_when_done: set[Path] = set()  # pending when the watchers attached
        # set once the watchers are attached and every analysed round's inputs were compared
        # with the ones its shown result was computed from
        self.inputs_checked = asyncio.Event()

    # -- layout ---------------------------------------------------------------------------------

    def get_default_screen(self) -> Screen:
        """The screen, born with the breakpoint class of the terminal's width: the first Resize
        then finds its class already set. Added by that Resize instead, it made every widget
        be styled again and the whole screen laid out again right after the first frame."""
        width = self.size.width
        wide = [c for w, c in sorted(self.HORIZONTAL_BREAKPOINTS, reverse=True) if width >= w]
        return Screen(id="_default", classes=wide[0] if wide else None)

    def compose(self) -> ComposeResult:
        with Horizontal(id="topbar"):
            yield RoundSelect([], prompt="no rounds", allow_blank=True, compact=True,
                              id="round-select", type_to_search=False, disabled=True)
            yield Static(id="header-title")
        yield Static(id="header-info")
        yield Static(id="status")
        yield Static(id="next-target")
        yield Static(id="coverage")
        with Horizontal(id="tables"):
            with Vertical(classes="table-box"):
                yield Static("By GPU time", id="pct-title", classes="table-title")
                yield RankTable([], id="by-pct")
            with Vertical(classes="table-box"):
                yield Static("By expected gain", id="gain-title", classes="table-title")
                yield RankTable([], id="by-gain")
        yield DetailPanel(id="detail")
        yield Input(placeholder="filter kernels by name (enter: keep, escape: clear)", id="filter")
        yield KeysFooter()

    @property
    def pct_table(self) -> RankTable:
        return self.query_one("#by-pct", RankTable)

    @property
    def gain_table(self) -> RankTable:
        return self.query_one("#by-gain", RankTable)

    @property
    def detail(self) -> DetailPanel:
        return self.query_one(DetailPanel)

    @property
    def shown_result(self) -> RoundResult | None:
        return self.session.shown_result

    @property
    def selected_row(self) -> view.Row | None:
        return self._rows.get(self.selected_key) if self.selected_key else None

    def on_mount(self) -> None:
        first = self.session.rescan(initial=True)
        if first.render and first.analyze:
            first.merge(self._first_results(first))
        self.apply(first)
        if not first.render:  # no round to show yet: still lay out the empty rankings
            self.render_round()
        if self.watch_enabled:
            # after the first frame: starting the watchers imports watchfiles' async machinery
            # (anyio) and attaches them, 80-100 ms of CPU that the first frame need not wait for
            self.call_after_refresh(self._begin_watching)

    def _begin_watching(self) -> None:
        self.run_worker(self._start_watchers_when_ready(), group="watch-start",
                        exit_on_error=False, name="watch start")

    async def _start_watchers_when_ready(self) -> None:
        if self.before_watchers is not None:
            await self.before_watchers()
        self._start_watchers()

    def _start_watchers(self) -> None:
        self._watchers_started = True
        self.run_worker(self.run_profile_watcher(), group="profile-watcher", exclusive=True,
                        exit_on_error=False, name="profile watcher")
        self._sync_input_watcher()

    def _first_results(self, first: Decision) -> Decision:
        """Start the first analyses and wait up to FIRST_RESULT_WAIT_S for them, before anything
        is drawn: a round that is quick to analyse then appears in the very first frame, instead
        of a frame that says "analysing…" being laid out and painted and at once replaced (about
        a third of the start-up's screen work, done while the analysis competes for the
        interpreter). A slower analysis goes on in the background and is shown when it
        arrives, as it always was."""
        wait = self._first_wait = threading.Event()
        for r, seq in first.analyze:
            self._start_analysis(r, seq)
        first.analyze = []
        wait.wait(self.FIRST_RESULT_WAIT_S)
        with self._handoff:
            self._first_wait = None  # from now on results come back as messages
            arrived, self._first_arrived = self._first_arrived, []
        outcome = Decision()
        for message in arrived:
            outcome.merge(self._outcome(message))
        return outcome

    def on_unmount(self) -> None:
        self._stop_watch.set()
        self._inputs_stop.set()

    # -- decisions ------------------------------------------------------------------------------

    def apply(self, d: Decision) -> None:
        """Carry out what the session decided."""
        for r, seq in d.analyze:
            self._start_analysis(r, seq)
        if d.options:
            self._update_select()
        for t in d.toasts:
            self.notify(t.text, severity=t.severity, markup=False, timeout=t.timeout)
        if d.render:
            self.render_round()
        elif d.header or d.analyze:
            self.render_header()
            self.render_status()
        if d.recheck_in is not None:
            self.set_timer(d.recheck_in, lambda: self.apply(self.session.tick()))
        self._sync_input_watcher()

    # -- analysis (daemon threads: nothing waits for them on quit) ------------------------------

    def _start_analysis(self, r: Path, seq: int) -> None:
        """One analysis per round at a time; a request made meanwhile waits and only its newest
        sequence number runs (a burst of writes costs at most two analyses)."""
        if r in self._analysing:
            self._queued[r] = max(seq, self._queued.get(r, 0))
            return
        self._analysing[r] = seq
        threading.Thread(target=self._analyze_in_thread, args=(r, seq), daemon=True,
                         name=f"analyze {round_name(r)}").start()

    def _analyze_in_thread(self, round_dir: Path, seq: int) -> None:
        message: RoundAnalyzed | RoundFailed
        try:
            # before anything is read: a change made while it reads shows as a difference
            self._fingerprints[(round_dir, seq)] = self.inputs_fingerprint(round_dir)
            result = analyze_round_with_history(round_dir, self.sources, self.options,
                                                cache=self.round_cache)
        except Exception as exc:  # the engine should not raise; if it does, say so in place
            message = RoundFailed(round_dir, seq, f"{type(exc).__name__}: {exc}")
        else:
            message = RoundAnalyzed(round_dir, seq, result)
        with self._handoff:
            if self._first_wait is not None:  # on_mount is waiting for the first results
                self._first_arrived.append(message)
                if len(self._first_arrived) >= len(self._analysing):
                    self._first_wait.set()
                return
        self.post_message(message)

    def _finished(self, r: Path) -> None:
        self._analysing.pop(r, None)
        queued = self._queued.pop(r, None)
        if queued is not None:
            self._start_analysis(r, queued)

    def _outcome(self, message: RoundAnalyzed | RoundFailed) -> Decision:
        r = message.round_dir
        self._finished(r)
        fingerprint = self._fingerprints.pop((r, message.seq), None)
        if r in self._check_when_done and r not in self._analysing:
            # it was being analysed when the watchers attached: compare its inputs once more
            self._check_when_done.discard(r)
            self.call_after_refresh(self._check_inputs, [r])
        if isinstance(message, RoundAnalyzed):
            return self.session.analyzed(r, message.seq, message.result, fingerprint=fingerprint)
        return self.session.failed(r, message.seq, message.error)

    def inputs_fingerprint(self, round_dir: Path) -> Fingerprint:
        """What an analysis of ``round_dir`` reads, fingerprinted (the priors file too)."""
        priors = self.options.priors_path if self.options is not None else None
        return (snapshot_fingerprint(round_dir, self.sources, self.options),
                file_fingerprint(priors) if priors is not None else None)

    def _watchers_attached(self) -> None:
        """The watchers see changes from now on; a change made before (after the first
        analysis read its files, while the first frame was drawn) they never report. Compare
        each analysed round's inputs with those its result was computed from."""
        analysed = [r for r in self.session.results if r not in self._analysing]
        self._check_when_done = {r for r in self._analysing if r in self.session.rounds}
        self._check_inputs(analysed)

    def _check_inputs(self, rounds: list[Path]) -> None:
        def fingerprint_all() -> None:
            current = {r: self.inputs_fingerprint(r) for r in rounds}
            self.post_message(InputsChecked(current))

        threading.Thread(target=fingerprint_all, daemon=True, name="inputs check").start()

    def on_inputs_checked(self, message: InputsChecked) -> None:
        self.apply(self.session.inputs_checked(message.current))
        if not self._check_when_done:
            self.inputs_checked.set()

    def on_round_analyzed(self, message: RoundAnalyzed) -> None:
        self.apply(self._outcome(message))

    def on_round_failed(self, message: RoundFailed) -> None:
        self.apply(self._outcome(message))

    @property
    def busy(self) -> bool:
        """True while an analysis is running or queued."""
        return self.session.busy

    # -- rounds ---------------------------------------------------------------------------------

    def _update_select(self) -> None:
        select = self.query_one("#round-select", RoundSelect)
        shown = self.session.shown
        with self.prevent(Select.Changed):
            select.set_rounds([(Text(printable(round_name(r), limit=40)), str(r))
                               for r in self.session.rounds],
                              str(shown) if shown is not None else None)

    def _sync_select_value(self) -> None:
        shown = self.session.shown
        select = self.query_one("#round-select", RoundSelect)
        if shown is not None and select.value != str(shown) and shown in self.session.rounds:
            with self.prevent(Select.Changed):
                select.value = str(shown)

    @on(Select.Changed, "#round-select")
    def _round_picked(self, event: Select.Changed) -> None:
        if event.value is Select.BLANK or event.value is None:
            return
        self.apply(self.session.show(Path(str(event.value))))

    # -- watching -------------------------------------------------------------------------------

    def extra_roots(self) -> list[Path]:
        """Trees watched recursively besides the profile tree: explicit shape and counter
        sources, and EVAL_DIR/kernels/ beside profile/ (new stage-B captures refine live)."""
        extra = [p for p in (self.sources.shapes, *self.sources.counters) if p is not None]
        if self.profile_dir.name == "profile":
            extra.append(self.profile_dir.parent / "kernels")
        return [p for p in extra if not _is_within(p, self.watch_root)]

    async def run_profile_watcher(self) -> None:
        """Watch the profile tree; poll while it does not exist (or after it is deleted)."""
        from watchfiles import awatch

        root = self.watch_root
        extra = self.extra_roots()
        attached = False
        while not self._stop_watch.is_set():
            if not root.is_dir():
                await asyncio.sleep(self.poll_s)
                if root.is_dir():
                    self.post_message(FilesChanged((root,)))
                continue
            paths = [root, *[p for p in extra if p.exists()]]
            self.watching = True
            if not attached:
                # watchfiles attaches its watcher in the first step of the loop below, before
                # its first await; a callback queued now runs right after that step
                attached = True
                asyncio.get_running_loop().call_soon(self._watchers_attached)
            try:
                async for changes in awatch(*paths, debounce=self.debounce_ms, step=self.step_ms,
                                            stop_event=self._stop_watch, recursive=True,
                                            watch_filter=self._watch_filter):
                    self.post_message(FilesChanged(tuple(Path(p) for _, p in changes)))
                    if not root.is_dir():
                        break
            except (OSError, RuntimeError):
                await asyncio.sleep(self.poll_s)
            self.watching = False
            if not root.is_dir():
                self.post_message(FilesChanged((root,)))

    def _watch_filter(self, _change: object, path: str) -> bool:
        return is_relevant_change(path, self.watch_root)

    def _sync_input_watcher(self) -> None:
        """Watch every file an analysis read outside the profile tree (env_report, config.json,
        peaks, priors): their directories, non-recursively, for exactly those files."""
        if not self.watch_enabled or not self._watchers_started:
            return
        wanted = tuple(p for p in self.session.watched_inputs()
                       if not _is_within(p, self.watch_root))
        if wanted == self.watched_inputs:
            return
        self.watched_inputs = wanted
        # Each inputs watcher has its own stop event: watchfiles sets the event it is given when
        # its task is cancelled, and the profile watcher's must not be touched by that.
        self._inputs_stop.set()
        self._inputs_stop = asyncio.Event()
        if wanted:
            self.run_worker(self.run_inputs_watcher(wanted, self._inputs_stop),
                            group="inputs-watcher", exclusive=True, exit_on_error=False,
                            name="inputs watcher")

    async def run_inputs_watcher(self, files: tuple[Path, ...], stop: asyncio.Event) -> None:
        from watchfiles import awatch

        names = {os.path.realpath(f) for f in files} | {os.path.abspath(f) for f in files}
        dirs = sorted({str(Path(os.path.abspath(f)).parent) for f in files})
        dirs = [d for d in dirs if os.path.isdir(d)]
        if not dirs:
            return

        def wanted(_change: object, path: str) -> bool:
            return path in names or os.path.realpath(path) in names

        try:
            async for changes in awatch(*dirs, debounce=self.debounce_ms, step=self.step_ms,
                                        stop_event=stop, recursive=False,
                                        watch_filter=wanted):
                self.post_message(FilesChanged(tuple(Path(p) for _, p in changes)))
        except (OSError, RuntimeError):
            return

    def on_files_changed(self, message: FilesChanged) -> None:
        self.apply(self.session.changed(message.paths))

    def handle_changes(self, paths: list[Path]) -> None:
        """Files changed on disk (what the watchers report; tests call it directly too)."""
        self.apply(self.session.changed(paths))

    # -- rendering ------------------------------------------------------------------------------

    def render_round(self) -> None:
        self._sync_select_value()
        self.render_header()
        self.render_status()
        self.render_tables()

    def render_header(self) -> None:
        s = self.session
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
        title.append(" · demo: " if self.demo else " · ")
        title.append(printable(self.display_name))
        self.query_one("#header-title", Static).update(title)
        info = self.query_one("#header-info", Static)
        if result is None:
            info.update(Text("device and peaks appear once a round is analysed", style="dim"))
        else:
            info.update(Text("\n").join([view.device_line(result.artifact),
                                         view.workload_line(result.artifact)]))

    def render_status(self) -> None:
        notes = self.session.status_notes()
        status = self.query_one("#status", Static)
        status.set_class(bool(notes), "-shown")
        status.set_class(any(n.severity == "error" for n in notes), "-error")
        status.update(Text("\n".join(printable(n.text) for n in notes)))

    def render_tables(self) -> None:
        result = self.shown_result
        if result is None:
            pct_rows: list[view.Row] = []
            gain_rows: list[view.Row] = []
        else:
            pct_rows, gain_rows = view.rankings(result.artifact)
        moves = view.rank_moves(pct_rows, gain_rows)
        self._rows = {r.key: r for r in pct_rows}
        display = view.display_names(pct_rows)
        pct_shown = [r for r in pct_rows if view.matches(r, self.filter_text)]
        gain_shown = [r for r in gain_rows if view.matches(r, self.filter_text)]
        visible = {r.key for r in pct_shown}
        below = self.show_below and (self.selected_key or "").startswith(BELOW_PREFIX)
        if self.selected_key not in visible and not below:
            self.selected_key = pct_shown[0].key if pct_shown else None
        self._fit_columns(result, display)
        pct_cols, gain_cols = self.columns["by-pct"], self.columns["by-gain"]
        pct_shown = view.sort_rows(pct_shown, *self.sort.get("by-pct", ("rank", False)), moves)
        gain_shown = view.sort_rows(gain_shown, *self.sort.get("by-gain", ("rank", False)), moves)
        marks = self.no_color  # no colour: the headroom class also shows as a marker glyph
        pct_table_rows, gain_table_rows = view.table_rows(
            pct_shown, gain_shown, display, self._kernel_room(pct_cols, marks),
            self._kernel_room(gain_cols, marks))
        if marks:
            pct_table_rows = self._marked(pct_table_rows, pct_cols)
            gain_table_rows = self._marked(gain_table_rows, gain_cols)
        if self.show_below and result is not None:
            width = dict((k, w) for _, k, w in pct_cols).get("kernel", 30)
            pct_table_rows += self._below_rows(result, [k for _, k, _ in pct_cols], width)
        self.pct_table.set_rows(pct_table_rows, self.selected_key)
        self.gain_table.set_rows(gain_table_rows, self.selected_key)
        self._render_titles(result, len(pct_rows), len(pct_shown))
        self.render_next()
        self.render_detail()

    @staticmethod
    def _kernel_room(cols: list[tuple[str, str, int]], marks: bool) -> list[tuple[str, str, int]]:
        """The columns as the kernel names are cut for: two cells fewer when a marker leads."""
        if not marks:
            return cols
        return [(lab, k, w - len(view.MARKER_GAP) - 1 if k == "kernel" else w)
                for lab, k, w in cols]

    def _marked(self, rows: list[view.TableRow],
                cols: list[tuple[str, str, int]]) -> list[view.TableRow]:
        """Each kernel cell led by its headroom marker (NO_COLOR: the class without colour)."""
        keys = [k for _, k, _ in cols]
        if "kernel" not in keys:
            return rows
        i = keys.index("kernel")
        out: list[view.TableRow] = []
        for key, cells, tip in rows:
            row = self._rows.get(key)
            if row is not None:
                cell = view.headroom_marker(row.entry) + view.MARKER_GAP
                cells = [*cells[:i], Text.assemble(cell, cells[i]), *cells[i + 1:]]
            out.append((key, cells, tip))
        return out

    def _below_rows(self, result: RoundResult, keys: list[str], width: int) -> list[view.TableRow]:
        """Top-N kernels below the head threshold: greyed rows under the heads (not analysed)."""
        rows: list[view.TableRow] = []
        heads = len(result.artifact.entries)
        for i, k in enumerate(view.below_threshold(result.artifact, result.topn), heads + 1):
            if not view.matches_name(k.name, k.short_name, self.filter_text):
                continue
            cells = {
                "rank": Text(str(i), justify="right", style="dim"),
                "kernel": Text(fit(printable(names.display_name(k.name)), width), style="dim"),
                "pct": Text(units.fixed(k.pct_gpu_time, 2), justify="right", style="dim"),
                "serving": Text(units.fixed(k.serving_weighted_pct, 2), justify="right",
                                style="dim"),
            }
            rows.append((f"{BELOW_PREFIX}{i}", [cells.get(c, Text("")) for c in keys],
                         printable(names.full_name(k.name))))
        return rows

    def _fit_columns(self, result: RoundResult | None, display: dict[str, str]) -> None:
        """Columns for the current width: side by side from WIDE_FROM columns, stacked below;
        the kernel column takes what the others leave, lower-value columns go first."""
        width = self.size.width or 120
        self._fitted_width = width
        each = width // 2 if width >= self.WIDE_FROM else width
        longest = max((len(t) for t in display.values()), default=view.MIN_KERNEL)
        has_serving = result is not None and any(
            getattr(e, "serving_weighted_pct", None) is not None for e in result.artifact.entries)
        has_history = result is not None and result.history is not None
        has_route = result is None or any(getattr(e, "route", None)
                                          for e in result.artifact.entries)
        hide = frozenset(k for k, keep in (("serving", has_serving), ("change", has_history),
                                           ("route", has_route)) if not keep)
        specs = {
            "by-pct": view.fit_columns(view.PCT_COLUMNS_ALL, each, longest=longest, hide=hide),
            "by-gain": view.fit_columns(view.GAIN_COLUMNS_ALL, each, longest=longest, hide=hide),
        }
        for table_id, spec in specs.items():
            if self.columns.get(table_id) != spec:
                self.columns[table_id] = spec
                self.query_one(f"#{table_id}", RankTable).set_columns(spec)

    def on_resize(self, event: events.Resize) -> None:
        # The app's first Resize comes with the width the columns were already fitted to: only
        # a real change of width refits them (and redraws the rankings).
        if self.columns and (event.size.width or 120) != self._fitted_width:
            self.call_after_refresh(self.render_tables)

    def render_next(self) -> None:
        """The next-target and coverage lines above the tables."""
        result = self.shown_result
        nxt = self.query_one("#next-target", Static)
        cov = self.query_one("#coverage", Static)
        if result is None or not result.artifact.entries:
            nxt.update(Text("Next: nothing analysed yet", style="dim"))
            cov.update(Text(""))
            return
        nxt.update(view.next_target(result.artifact))
        serving = any(getattr(e, "serving_weighted_pct", None) is not None
                      for e in result.artifact.entries)
        cov.update(view.coverage_line(result.artifact, result.topn, serving=serving))

    def _render_titles(self, result: RoundResult | None, total: int, shown: int) -> None:
        suffix = f"  [filter '{self.filter_text}': {shown} of {total}]" if self.filter_text else ""
        pct = Text("By GPU time")
        pct.append(self._sort_note("by-pct"), style="cyan")
        pct.append(printable(suffix), style="italic")
        gain = Text("By expected gain")
        gain.append(self._sort_note("by-gain"), style="cyan")
        if result is not None and view.is_advisory(result.artifact):
            gain.append("  advisory: %gpu order rules", style="yellow")
        gain.append(printable(suffix), style="italic")
        self.query_one("#pct-title", Static).update(pct)
        self.query_one("#gain-title", Static).update(gain)

    def _sort_note(self, table_id: str) -> str:
        key, descending = self.sort.get(table_id, ("rank", False))
        if key == "rank" and not descending:
            return ""
        label = dict((k, lab) for lab, k, _ in self.columns.get(table_id, [])).get(key, key)
        return f"  sorted by {label} {'↓' if descending else '↑'}"

    def render_detail(self) -> None:
        """Refresh the tab labels and the open drill-down pane (the others render when opened:
        each remembers what it shows, so none is ever left blank or stale)."""
        result = self.shown_result
        n = (len(result.artifact.degraded) + len(result.artifact.skill_errors)) if result else 0
        self.detail.set_label("degraded", f"Degraded ({n})" if n else "Degraded")
        self._render_pane(self.detail.tabs.active or "summary")

    def _pane_state(self, pane: str) -> object:
        s = self.session
        base = (s.shown, s.generation, id(s.shown_result))
        return (*base, self.selected_key) if pane in KERNEL_PANES else base

    def _render_pane(self, pane: str) -> None:
        state = self._pane_state(pane)
        if self._pane_key.get(pane) == state:
            return
        self._pane_key[pane] = state
        result = self.shown_result
        if pane == "chart":
            chart = self.detail.chart
            chart.update_artifact(result.artifact if result is not None else None)
            row = self.selected_row
            chart.select(row.entry.short_name if row is not None else None)
            return
        body = self.detail.body(pane)
        if pane == "degraded":
            body.update(view.degraded_view(result.artifact) if result is not None
                        else Text("nothing analysed yet", style="dim"))
            return
        if pane == "rounds":
            history = result.history if result is not None else None
            label = round_label(self.session.shown) if self.session.shown is not None else None
            body.update(view.rounds_view(history, label))
            return
        row = self.selected_row
        if result is not None and (self.selected_key or "").startswith(BELOW_PREFIX):
            body.update(Text("below the head threshold: listed for coverage, not analysed "
                             "(analyze --head-threshold lowers it)", style="dim"))
            return
        if result is None or row is None:
            body.update(Text("no kernel selected" if result is not None and result.artifact.entries
                             else "no analysed kernels in this round", style="dim"))
            return
        e, a = row.entry, result.artifact
        renderers = {
            "summary": lambda: view.summary(e, a),
            "assumptions": lambda: view.assumptions(e),
            "flags": lambda: view.flags(e, a),
            "levers": lambda: view.levers(e),
            "raw": lambda: view.raw_json(e),
            "history": lambda: view.history_view(e, result.history),
        }
        body.update(renderers[pane]())

    @on(TabbedContent.TabActivated, "#detail-tabs")
    def _tab_opened(self, event: TabbedContent.TabActivated) -> None:
        # the chart gets the whole height below the header: the rankings step aside
        self.screen.set_class(event.pane.id == "chart", "-chart-open")
        if event.pane.id and event.pane.id != "chart":
            self._back_tab = event.pane.id  # what c / escape bring back when the chart closes
        if event.pane.id:
            self._render_pane(event.pane.id)

    # -- table events ---------------------------------------------------------------------------

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        table = event.data_table
        if not isinstance(table, RankTable) or event.cursor_row != table.cursor_row:
            return  # a stale event from before the rows were replaced
        if table is not self.focused:
            return  # rows replaced or synced from the other ranking: not the user's move
        key = event.row_key.value
        if key is None or key == self.selected_key and self._in_sync():
            return
        self._select(key, source=table)

    def _select(self, key: str, *, source: object = None) -> None:
        self.selected_key = key
        for t in (self.pct_table, self.gain_table):
            if t is not source:
                t.select_key(key)
        self._render_pane(self.detail.tabs.active or "summary")

    def _in_sync(self) -> bool:
        return self.pct_table.current_key == self.gain_table.current_key == self.selected_key

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """enter (or a click on the selected row): into the drill-down, like a double-click.
        On a narrow screen the drill-down is maximized (escape brings the rankings back)."""
        if isinstance(event.data_table, RankTable) and event.data_table.id:
            self._back_table = event.data_table.id
        if self.screen.has_class("-narrow") and self.screen.maximized is None:
            self.screen.maximize(self.detail, container=False)
        active = self.detail.tabs.active or "summary"
        if active == "chart":
            self.detail.chart.focus()
        else:
            self.detail.query_one(f"#{active} .pane-scroll").focus()

    # -- filter ---------------------------------------------------------------------------------

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value.strip()
        self.render_tables()

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        if not self.filter_text:
            self.query_one("#filter").remove_class("-shown")
        self.pct_table.focus()

    # -- actions --------------------------------------------------------------------------------

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.add_class("-shown")
        box.focus()

    @property
    def back_table(self) -> RankTable:
        """The ranking escape and c go back to: the one the drill-down was entered from."""
        return self.gain_table if self._back_table == "by-gain" else self.pct_table

    @property
    def chart_open(self) -> bool:
        return self.detail.tabs.active == "chart"

    def _in_detail(self) -> bool:
        focused = self.focused
        return focused is not None and self.detail in focused.ancestors_with_self

    def action_clear_filter(self) -> None:
        """escape: back to the rankings from the chart or the drill-down; in the rankings, clear
        the filter."""
        back = False
        if self.screen.maximized is not None:  # back from a maximized drill-down
            self.screen.minimize()
            back = True
        if self.chart_open:
            self._close_chart()
            back = True
        if back or self._in_detail():
            self.back_table.focus()
            return
        box = self.query_one("#filter", Input)
        if not box.has_class("-shown") and not self.filter_text:
            return
        box.value = ""
        box.remove_class("-shown")
        self.filter_text = ""
        self.render_tables()
        self.pct_table.focus()

    def action_recompute(self) -> None:
        self.apply(self.session.recompute())

    def action_show_chart(self) -> None:
        """c: open the chart; with the chart open, back to the rankings."""
        if self.chart_open:
            self._close_chart()
            self.back_table.focus()
            return
        self.detail.tabs.active = "chart"
        self._render_pane("chart")
        self.detail.chart.focus()

    def _close_chart(self) -> None:
        """The chart makes way for the tab it replaced (the rankings come back with it)."""
        back = self._back_tab if self._back_tab != "chart" else FIRST_PANE
        self.detail.tabs.active = back
        self.screen.set_class(False, "-chart-open")
        self._render_pane(back)

    def on_roofline_chart_kernel_selected(self, message: RooflineChart.KernelSelected) -> None:
        """Stepping through kernels in the chart moves the tables' selection too."""
        key = next((k for k, r in self._rows.items()
                    if r.entry.short_name == message.short_name), None)
        if key is not None and key != self.selected_key:
            self._select(key)

    def action_prev_round(self) -> None:
        self.apply(self.session.step(-1))

    def action_next_round(self) -> None:
        self.apply(self.session.step(+1))

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.help_sections()))

    def action_quit(self) -> None:  # type: ignore[override]
        """Quit at once: analyses run on daemon threads, so nothing waits for them."""
        self._stop_watch.set()
        self._inputs_stop.set()
        self.exit()

    def action_export(self) -> None:
        r, result = self.session.shown, self.shown_result
        if r is None or result is None or not result.topn_found:
            self.notify(f"nothing to export: the shown round has no {TOPN_NAME} yet",
                        severity="warning", markup=False)
            return
        # what is on screen, computed with the settings it records; said in the notice, and
        # louder when it replaces an artifact computed with other settings
        settings = settings_of(result.artifact)
        stored, _ = load_stored_artifact(r)
        before = settings_of(stored) if stored is not None else None
        try:
            json_path, md_path = write_artifact(result.artifact, r)
        except OSError as exc:
            self.notify(f"cannot write profile_roofline.json into {self._shown_path(r)}: "
                        f"{printable(exc.strerror or exc)}", title="Export failed",
                        severity="error", markup=False, timeout=8)
            return
        text = f"wrote {self._shown_path(json_path)} and {printable(md_path.name)}"
        if settings is not None:
            text += f" ({printable(settings.describe())})"
        replaced = before is not None and settings is not None and not same_settings(before,
                                                                                      settings)
        if replaced and before is not None:
            text += f"; replaced one computed with {printable(before.describe())}"
        self.notify(text, title="Exported", markup=False,
                    severity="warning" if replaced else "information")

    def _shown_path(self, path: Path) -> str:
        """A path as the user knows it: under the profile directory's display name."""
        try:
            rel = Path(os.path.relpath(path, self.profile_dir))
        except ValueError:
            return printable(str(path))
        if rel.parts and rel.parts[0] == "..":
            return printable(str(path))
        return printable(str(Path(self.display_name) / rel))

    def action_export_csv(self) -> None:
        r, result = self.session.shown, self.shown_result
        if r is None or result is None or not result.artifact.entries:
            self.notify("nothing to write: the shown round has no analysed entries",
                        severity="warning", markup=False)
            return
        try:
            path = write_csv(result.artifact, r)
        except OSError as exc:
            self.notify(f"cannot write {CSV_NAME} into {self._shown_path(r)}: "
                        f"{printable(exc.strerror or exc)}", title="CSV failed",
                        severity="error", markup=False, timeout=8)
            return
        self.notify(f"wrote {self._shown_path(path)}", title="CSV", markup=False)

    def action_sort(self) -> None:
        """Sort the focused ranking by its next column (rank → … → back to rank)."""
        table = self.focused if isinstance(self.focused, RankTable) else self.pct_table
        table_id = table.id or "by-pct"
        keys = [k for _, k, _ in self.columns.get(table_id, [])]
        current, _ = self.sort.get(table_id, ("rank", False))
        nxt = keys[(keys.index(current) + 1) % len(keys)] if current in keys else "rank"
        self._sort_by(table_id, nxt, toggle=False)

    def _sort_by(self, table_id: str, key: str, *, toggle: bool) -> None:
        current, descending = self.sort.get(table_id, ("rank", False))
        numeric = {c.key for c in (*view.PCT_COLUMNS_ALL, *view.GAIN_COLUMNS_ALL) if c.numeric}
        if toggle and key == current:
            descending = not descending
        else:
            descending = key in numeric and key not in ("change",)
        self.sort[table_id] = (key, descending)
        self.render_tables()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        """A click on a column header sorts that ranking by it (again: the other way)."""
        table = event.data_table
        if isinstance(table, RankTable) and table.id and event.column_key.value:
            self._sort_by(table.id, event.column_key.value, toggle=True)

    def action_copy_name(self) -> None:
        row = self.selected_row
        if row is None:
            self.notify("no kernel selected", severity="warning")
            return
        self.copy_to_clipboard(row.entry.name)
        self.notify(f"copied the full name of {printable(row.entry.short_name, limit=60)}",
                    markup=False, timeout=3)

    def action_copy_json(self) -> None:
        row = self.selected_row
        if row is None:
            self.notify("no kernel selected", severity="warning")
            return
        self.copy_to_clipboard(row.entry.model_dump_json(indent=2))
        self.notify(f"copied the JSON of {printable(row.entry.short_name, limit=60)}",
                    markup=False, timeout=3)

    def action_toggle_below(self) -> None:
        self.show_below = not self.show_below
        self.render_tables()
        result = self.shown_result
        n = len(view.below_threshold(result.artifact, result.topn)) if result else 0
        self.notify(f"listing {n} kernel(s) below the head threshold, greyed" if self.show_below
                    else "heads only", timeout=2)

    def action_save_svg(self) -> None:
        """Save an SVG screenshot in the current directory and say where."""
        try:
            path = self.save_screenshot(path=os.getcwd())
        except OSError as exc:
            self.notify(f"cannot save a screenshot in {printable(os.getcwd())}: "
                        f"{printable(exc.strerror or exc)}", title="Screenshot failed",
                        severity="error", markup=False, timeout=8)
            return
        self.notify(f"saved {printable(path)}", title="Screenshot", markup=False, timeout=6)

    # -- help and palette, both from the live bindings ------------------------------------------

    def _binding_rows(self, bindings: Iterable[object]) -> list[tuple[str, str]]:
        rows: list[tuple[str, str]] = []
        for b in bindings:
            if not isinstance(b, Binding) or b.system:
                continue
            key = b.key_display or ", ".join(
                self.get_key_display(Binding(k.strip(), b.action)) for k in b.key.split(","))
            rows.append((key, b.tooltip or b.description))
        return rows

    def help_sections(self) -> list[KeySection]:
        from textual.app import App as _App

        # the chart's module is imported when its tab is first built (see DetailPanel)
        from roofline_tui.app.widgets.roofline_chart import RooflineChart

        palette = Binding(_App.COMMAND_PALETTE_BINDING, "command_palette", "Palette",
                          tooltip="command palette: every command below, by name")
        focus = [b for b in Screen.BINDINGS if isinstance(b, Binding) and "focus" in b.action]
        focus_rows = [(self.get_key_display(b), "move focus: round selector, rankings, "
                       "drill-down tabs" if b.key == "tab" else "move focus back") for b in focus]
        return [
            ("Everywhere", self._binding_rows(self.BINDINGS) + self._binding_rows([palette])
             + focus_rows),
            ("In a ranking", self._binding_rows(RankTable.BINDINGS)),
            ("In the chart", self._binding_rows(RooflineChart.BINDINGS)),
        ]

    def get_system_commands(self, screen: Screen) -> Iterator[SystemCommand]:
        for cmd in super().get_system_commands(screen):
            if cmd.title == "Screenshot":  # Textual's saves to ~/Downloads and fails without one
                continue
            yield cmd
        yield SystemCommand("Screenshot", "Save an SVG screenshot in the current directory",
                            lambda: self.set_timer(0.1, self.action_save_svg))
        for b in self.BINDINGS:
            if not isinstance(b, Binding) or b.action in ("quit", "clear_filter"):
                continue
            key = b.key_display or self.get_key_display(b)
            yield SystemCommand(b.description, f"{b.tooltip} ({key})",
                                lambda action=b.action: self.run_action(action))
