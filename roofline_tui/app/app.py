"""``roofline dash``: a live view of a profile directory's rounds, rendered from engine artifacts.

The app only renders :class:`~roofline_tui.core.artifact.Artifact` objects and sends intents
(show a round, recompute, export). Analysis runs in the engine (``analyze_round``) on a thread
worker; a watchfiles worker notices changed inputs and asks for the affected round only.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Select, Static, TabbedContent

from roofline_tui.app import view
from roofline_tui.app.panels import DetailPanel, HelpScreen, RankTable
from roofline_tui.app.widgets.roofline_chart import RooflineChart
from roofline_tui.core.rounds.analysis import RoundResult, RoundSources, write_artifact
from roofline_tui.core.rounds.annotate import analyze_round_with_history
from roofline_tui.core.rounds.fingerprint import RoundCache
from roofline_tui.core.rounds.layout import (
    TOPN_NAME,
    is_relevant_change,
    round_label,
    round_name,
    round_of,
    rounds_at,
)
from roofline_tui.core.rounds.snapshot import RoundSnapshot
from roofline_tui.core.textsafe import printable

Clock = Callable[[], datetime]


# ---------------------------------------------------------------------------------------------
# Messages (posted from the worker thread: post_message is thread-safe)


class RoundAnalyzed(Message):
    def __init__(self, round_dir: Path, seq: int, result: RoundResult) -> None:
        super().__init__()
        self.round_dir = round_dir
        self.seq = seq
        self.result = result


class RoundFailed(Message):
    def __init__(self, round_dir: Path, seq: int, error: str) -> None:
        super().__init__()
        self.round_dir = round_dir
        self.seq = seq
        self.error = error


@dataclass
class Note:
    """A one-line message shown in place above the tables."""

    text: str
    severity: str = "warning"  # warning | error


def _is_within(path: Path, root: Path) -> bool:
    try:
        Path(os.path.abspath(path)).relative_to(os.path.abspath(root))
    except ValueError:
        return False
    return True


def topn_read_errors(result: RoundResult) -> list[str]:
    """The Top-N could be found but not read (corrupt, unreadable): the engine's own reasons."""
    if not result.topn_found or result.incomplete or result.artifact.entries:
        return []
    prefix = TOPN_NAME + ":"
    return [e for e in result.artifact.skill_errors if isinstance(e, str) and e.startswith(prefix)]


def is_good(result: RoundResult) -> bool:
    return result.topn_found and not result.incomplete and not topn_read_errors(result)


# ---------------------------------------------------------------------------------------------


class RooflineApp(App[None]):
    """Two rankings side by side, a drill-down, live recompute and export."""

    TITLE = "roofline dash"
    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute: subclasses live elsewhere
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (190, "-wide")]  # side by side needs ~185 columns

    BINDINGS = [
        Binding("e", "export", "Export", id="export",
                tooltip="write profile_roofline.json + .md into the shown round's directory"),
        Binding("r", "recompute", "Recompute", id="recompute", tooltip="recompute the shown round"),
        Binding("c", "show_chart", "Chart", id="chart",
                tooltip="the roofline chart of the shown round"),
        Binding("slash", "filter", "Filter", key_display="/", id="filter",
                tooltip="filter kernels by name"),
        Binding("left_square_bracket", "prev_round", "Prev round", key_display="[",
                id="prev-round"),
        Binding("right_square_bracket", "next_round", "Next round", key_display="]",
                id="next-round"),
        Binding("question_mark", "help", "Help", key_display="?", id="help"),
        Binding("q", "quit", "Quit", id="quit"),
        Binding("escape", "clear_filter", "Clear filter", show=False, id="clear-filter"),
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
    ) -> None:
        super().__init__()
        self.profile_dir = Path(profile_dir)
        self.sources = sources or RoundSources()
        self.watch_enabled = watch
        self.clock: Clock = clock or datetime.now
        self.display_name = display_name if display_name is not None else str(profile_dir)
        self.watch_root = Path(watch_root) if watch_root is not None else self.profile_dir
        self.debounce_ms = debounce_ms
        self.step_ms = step_ms
        self.poll_s = poll_s
        self.demo = demo

        self.rounds: list[Path] = []
        self.shown: Path | None = None
        self.results: dict[Path, RoundResult] = {}      # last good (or last) result per round
        # sibling rounds kept by their inputs' fingerprint: a recompute re-reads only what changed
        self.round_cache: RoundCache[RoundSnapshot] = RoundCache()
        self.computed_at: dict[Path, datetime] = {}
        self.round_notes: dict[Path, Note] = {}
        self.global_note: Note | None = None     # profile directory missing / empty
        self.deleted_note: Note | None = None    # the shown round went away (until the user moves)
        self.selected_key: str | None = None
        self.filter_text = ""
        self.generation = 0            # bumps each time a recompute result is applied
        self.watching = False          # True while the file watcher is attached
        self._seq: dict[Path, int] = {}      # last analysis requested per round (monotonic)
        self._applied: dict[Path, int] = {}  # last analysis whose result is on screen
        self._pending: set[Path] = set()
        self._stop_watch = asyncio.Event()
        self._entries: dict[str, view.Row] = {}
        self._detail_dirty: set[str] = set()

    # -- layout ---------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with Horizontal(id="topbar"):
            yield Select[str]([], prompt="no rounds", allow_blank=True, compact=True,
                              id="round-select", type_to_search=False)
            yield Static(id="header-title")
        yield Static(id="header-info")
        yield Static(id="status")
        with Horizontal(id="tables"):
            with Vertical(classes="table-box"):
                yield Static("By GPU time", id="pct-title", classes="table-title")
                yield RankTable([c for c in view.PCT_COLUMNS], id="by-pct")
            with Vertical(classes="table-box"):
                yield Static("By expected gain", id="gain-title", classes="table-title")
                yield RankTable([c for c in view.GAIN_COLUMNS], id="by-gain")
        yield DetailPanel(id="detail")
        yield Input(placeholder="filter kernels by name (enter: keep, escape: clear)", id="filter")
        yield Footer()

    @property
    def pct_table(self) -> RankTable:
        return self.query_one("#by-pct", RankTable)

    @property
    def gain_table(self) -> RankTable:
        return self.query_one("#by-gain", RankTable)

    @property
    def detail(self) -> DetailPanel:
        return self.query_one(DetailPanel)

    def on_mount(self) -> None:
        self.pct_table.focus()
        self.rescan(initial=True)
        self.render_round()
        if self.watch_enabled:
            self.run_worker(self.run_profile_watcher(), group="profile-watcher", exclusive=True,
                            exit_on_error=False, name="profile watcher")

    def on_unmount(self) -> None:
        self._stop_watch.set()

    # -- rounds ---------------------------------------------------------------------------------

    def rescan(self, *, initial: bool = False) -> None:
        """Rediscover rounds: new ones join the selector, deleted ones leave it."""
        found = rounds_at(self.profile_dir)
        if not self.profile_dir.exists():
            self.global_note = Note(f"Profile directory {self.display_name} does not exist yet: "
                                    "waiting for it to appear")
        elif not self.profile_dir.is_dir():
            self.global_note = Note(f"{self.display_name} is not a directory", "error")
        elif not found:
            self.global_note = Note(f"No rounds in {self.display_name} yet: waiting for round_* "
                                    f"directories or a {TOPN_NAME}")
        else:
            self.global_note = None
        if found == self.rounds and not initial:
            return
        added = [r for r in found if r not in self.rounds]
        removed = [r for r in self.rounds if r not in found]
        self.rounds = found
        for r in removed:
            self.results.pop(r, None)
            self.round_notes.pop(r, None)
            self.computed_at.pop(r, None)
            self._pending.discard(r)  # _seq stays: a round that comes back must not accept
            # a result computed before it went away
        self._update_select()
        if self.shown is not None and self.shown in removed:
            gone = round_name(self.shown)
            self.deleted_note = Note(f"{gone} was deleted" + (
                f"; showing {round_name(found[-1])}" if found else ""))
            self.notify(f"{gone} was deleted", severity="warning", markup=False)
            self.show_round(found[-1] if found else None)
        elif self.shown is None and found:
            self.show_round(found[-1])
        elif added and not initial:
            names = ", ".join(round_name(r) for r in added)
            self.notify(f"new round: {names} (press ] or pick it top left)", markup=False)
            self.render_header()
        else:
            self.render_header()

    def _update_select(self) -> None:
        select = self.query_one("#round-select", Select)
        with self.prevent(Select.Changed):
            select.set_options((Text(printable(round_name(r), limit=40)), str(r))
                               for r in self.rounds)
            if self.shown is not None and self.shown in self.rounds:
                select.value = str(self.shown)

    def show_round(self, round_dir: Path | None) -> None:
        self.shown = round_dir
        if round_dir is not None:
            select = self.query_one("#round-select", Select)
            if select.value != str(round_dir):
                with self.prevent(Select.Changed):
                    select.value = str(round_dir)
            if round_dir not in self.results and round_dir not in self._pending:
                self.request_analysis(round_dir)
        self.render_round()

    @on(Select.Changed, "#round-select")
    def _round_picked(self, event: Select.Changed) -> None:
        if event.value is Select.BLANK or event.value is None:
            return
        picked = Path(str(event.value))
        if picked != self.shown and picked in self.rounds:
            self.deleted_note = None  # the user moved on
            self.show_round(picked)

    def _step_round(self, delta: int) -> None:
        if not self.rounds:
            self.notify("no rounds yet", severity="warning")
            return
        i = self.rounds.index(self.shown) if self.shown in self.rounds else len(self.rounds) - 1
        j = max(0, min(len(self.rounds) - 1, i + delta))
        if j == i and self.shown is not None:
            self.notify("already at the " + ("first" if delta < 0 else "last") + " round",
                        timeout=2)
            return
        self.deleted_note = None  # the user moved on
        self.show_round(self.rounds[j])

    # -- analysis -------------------------------------------------------------------------------

    def request_analysis(self, round_dir: Path) -> None:
        """Recompute one round on a thread worker; a newer request for it supersedes this one."""
        seq = self._seq.get(round_dir, 0) + 1
        self._seq[round_dir] = seq
        self._pending.add(round_dir)
        self.run_worker(partial(self._analyze_in_thread, round_dir, seq), thread=True,
                        exclusive=True, group=f"analyze:{round_dir}", exit_on_error=False,
                        name=f"analyze {round_name(round_dir)}")
        if round_dir == self.shown:
            self.render_header()

    def _analyze_in_thread(self, round_dir: Path, seq: int) -> None:
        # A superseded analysis still posts: under a stream of changes the screen then moves
        # forward with each finished result instead of waiting for the writes to pause. The
        # sequence numbers keep an older result from replacing a newer one.
        try:
            result = analyze_round_with_history(round_dir, self.sources, cache=self.round_cache)
        except Exception as exc:  # the engine should not raise; if it does, say so in place
            self.post_message(RoundFailed(round_dir, seq, f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(RoundAnalyzed(round_dir, seq, result))

    def _accept(self, r: Path, seq: int) -> bool:
        """Apply a result only if it is newer than the one shown; the round stays pending until
        its latest requested analysis has arrived."""
        if seq <= self._applied.get(r, 0) or r not in self.rounds:
            return False  # older than what is shown, or the round went away meanwhile
        self._applied[r] = seq
        if seq >= self._seq.get(r, 0):
            self._pending.discard(r)
        return True

    def on_round_analyzed(self, message: RoundAnalyzed) -> None:
        r = message.round_dir
        if not self._accept(r, message.seq):
            return
        result = message.result
        previous = self.results.get(r)
        keep_previous = previous is not None and is_good(previous)
        name = round_name(r)
        if result.incomplete:
            self.round_notes[r] = Note(
                f"{TOPN_NAME} in {name} is being written: waiting for a complete file"
                + (" (showing the last good result)" if keep_previous else ""))
            if not keep_previous:
                self.results.pop(r, None)
        elif topn_read_errors(result):
            reason = printable(topn_read_errors(result)[0], limit=160)
            if keep_previous:  # maybe still being written: keep the last good state, no storm
                self.round_notes[r] = Note(f"{reason}: showing the last good result, waiting for "
                                           "a complete file")
            else:
                self.round_notes[r] = Note(reason, "error")
                self._store(r, result)
        else:
            if result.topn_found:
                self.round_notes.pop(r, None)
            elif result.display_only:
                self.round_notes[r] = Note(
                    f"display mode: {name} holds a stored profile_roofline.json and no "
                    f"{TOPN_NAME}; shown as it is (nothing to recompute or export)")
            else:
                self.round_notes[r] = Note(f"No {TOPN_NAME} in {name} yet: waiting for it")
            self._store(r, result)
        self.generation += 1
        if r == self.shown:
            self.render_round()

    def _store(self, r: Path, result: RoundResult) -> None:
        self.results[r] = result
        self.computed_at[r] = self.clock()

    def on_round_failed(self, message: RoundFailed) -> None:
        r = message.round_dir
        if not self._accept(r, message.seq):
            return
        self.round_notes[r] = Note(f"analysis failed: {printable(message.error, limit=160)}",
                                   "error")
        self.generation += 1
        if r == self.shown:
            self.render_round()

    # -- watching -------------------------------------------------------------------------------

    async def run_profile_watcher(self) -> None:
        """Watch the profile tree; poll while it does not exist (or after it is deleted)."""
        from watchfiles import awatch

        root = self.watch_root
        extra = [p for p in (self.sources.env, self.sources.model_config, self.sources.peaks,
                             self.sources.shapes, *self.sources.counters) if p is not None]
        # stage-B task dirs live in EVAL_DIR/kernels/, beside profile/: new captures refine live
        if self.profile_dir.name == "profile":
            extra.append(self.profile_dir.parent / "kernels")
        extra = [p for p in extra if not _is_within(p, root)]
        while not self._stop_watch.is_set():
            if not root.is_dir():
                await asyncio.sleep(self.poll_s)
                if root.is_dir():
                    self.rescan()
                    if self.shown is not None:
                        self.request_analysis(self.shown)
                continue
            paths = [root, *[p for p in extra if p.exists()]]
            self.watching = True
            try:
                async for changes in awatch(*paths, debounce=self.debounce_ms, step=self.step_ms,
                                            stop_event=self._stop_watch, recursive=True,
                                            watch_filter=self._watch_filter):
                    self.handle_changes(Path(p) for _, p in changes)
                    if not root.is_dir():
                        break
            except (OSError, RuntimeError):
                await asyncio.sleep(self.poll_s)
            self.watching = False
            if not root.is_dir():
                self.rescan()
                self.render_round()

    def _watch_filter(self, _change: object, path: str) -> bool:
        return is_relevant_change(path, self.watch_root)

    def handle_changes(self, paths: Iterable[Path]) -> None:
        """Files changed on disk: rediscover rounds, recompute the rounds they belong to."""
        changed = [p for p in paths if is_relevant_change(p, self.watch_root)]
        if not changed:
            return
        self.rescan()
        affected: set[Path] = set()
        shared = False
        for p in changed:
            # Directories count too: inotify can miss a file written right after its directory
            # was created (a new counters/ or kernels/*_task/), and then the directory event is
            # all that arrives.
            r = round_of(p, self.rounds)
            if r is not None:
                affected.add(r)
            else:
                shared = True  # env_report.json, config.json, peaks, kernels/ beside the rounds
        if shared:
            affected |= set(self.results) | ({self.shown} if self.shown else set())
        for r in sorted(affected & set(self.rounds)):
            self.request_analysis(r)
        self.render_status()

    # -- rendering ------------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """True while a recompute is running or queued."""
        return bool(self._pending)

    @property
    def shown_result(self) -> RoundResult | None:
        return self.results.get(self.shown) if self.shown is not None else None

    def render_round(self) -> None:
        self.render_header()
        self.render_status()
        self.render_tables()

    def render_header(self) -> None:
        result = self.shown_result
        title = Text()
        if self.shown is not None:
            title.append(printable(round_name(self.shown), limit=40), style="bold")
            if self.shown in self.rounds:
                title.append(f" ({self.rounds.index(self.shown) + 1}/{len(self.rounds)})")
        else:
            title.append("no round", style="bold")
        if result is not None:
            title.append(f" · stage {printable(result.artifact.stage)}")
        if self.shown in self._pending:
            title.append(" · recomputing…", style="italic")
        elif self.shown in self.computed_at:
            title.append(f" · recomputed {self.computed_at[self.shown]:%H:%M:%S}")
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
        round_note = self.round_notes.get(self.shown) if self.shown is not None else None
        notes = [n for n in (self.global_note, self.deleted_note, round_note) if n is not None]
        if self.shown is not None and self.shown in self._pending and self.shown not in self.results \
                and not notes:
            notes.append(Note(f"analysing {round_name(self.shown)}…"))
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
        self._entries = {r.key: r for r in pct_rows}
        pct_shown = [r for r in pct_rows if view.matches(r, self.filter_text)]
        gain_shown = [r for r in gain_rows if view.matches(r, self.filter_text)]
        visible = {r.key for r in pct_shown}
        if self.selected_key not in visible:
            self.selected_key = pct_shown[0].key if pct_shown else None
        self.pct_table.set_rows(((r.key, view.pct_cells(r)) for r in pct_shown), self.selected_key)
        self.gain_table.set_rows(((r.key, view.gain_cells(r, moves.get(r.key))) for r in gain_shown),
                                 self.selected_key)
        self._render_titles(result, len(pct_rows), len(pct_shown))
        self.render_detail()

    def _render_titles(self, result: RoundResult | None, total: int, shown: int) -> None:
        suffix = f"  [filter '{self.filter_text}': {shown} of {total}]" if self.filter_text else ""
        pct = Text("By GPU time")
        pct.append(printable(suffix), style="italic")
        gain = Text("By expected gain")
        if result is not None and view.is_advisory(result.artifact):
            gain.append("  advisory: %gpu order rules", style="yellow")
        gain.append(printable(suffix), style="italic")
        self.query_one("#pct-title", Static).update(pct)
        self.query_one("#gain-title", Static).update(gain)

    def render_detail(self, *, round_changed: bool = True) -> None:
        """Fill the active drill-down tab (others are filled when opened: they are not cheap)."""
        self._detail_dirty = {"summary", "assumptions", "flags", "levers", "raw", "history",
                              "chart"}
        if round_changed:
            self._detail_dirty |= {"degraded", "rounds"}
        self._render_pane(self.query_one("#detail-tabs", TabbedContent).active or "summary")

    def _render_pane(self, pane: str) -> None:
        if pane not in self._detail_dirty:
            return
        self._detail_dirty.discard(pane)
        result = self.shown_result
        body = self.detail.body(pane) if pane != "chart" else None
        if pane == "degraded":
            if result is None:
                body.update(Text("nothing analysed yet", style="dim"))
                label = "Degraded"
            else:
                body.update(view.degraded_view(result.artifact))
                n = len(result.artifact.degraded) + len(result.artifact.skill_errors)
                label = f"Degraded ({n})" if n else "Degraded"
            self.detail.set_degraded_label(label)
            return
        if pane == "rounds":
            history = result.history if result is not None else None
            label = round_label(self.shown) if self.shown is not None else None
            body.update(view.rounds_view(history, label))
            return
        if pane == "chart":
            chart = self.detail.chart
            chart.update_artifact(result.artifact if result is not None else None)
            row = self._entries.get(self.selected_key) if self.selected_key else None
            chart.select(row.entry.short_name if row is not None else None)
            return
        row = self._entries.get(self.selected_key) if self.selected_key else None
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
        if event.pane.id:
            self._render_pane(event.pane.id)

    # -- table events ---------------------------------------------------------------------------

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        table = event.data_table
        if not isinstance(table, RankTable) or event.cursor_row != table.cursor_row:
            return  # a stale event from before the rows were replaced
        key = event.row_key.value
        if key is None or key == self.selected_key and self._in_sync():
            return
        self.selected_key = key
        other = self.gain_table if table is self.pct_table else self.pct_table
        other.select_key(key)
        self.render_detail(round_changed=False)

    def _in_sync(self) -> bool:
        return self.pct_table.current_key == self.gain_table.current_key == self.selected_key

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.query_one("#detail-tabs").focus()

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

    def action_clear_filter(self) -> None:
        box = self.query_one("#filter", Input)
        if not box.has_class("-shown") and not self.filter_text:
            return
        box.value = ""
        box.remove_class("-shown")
        self.filter_text = ""
        self.render_tables()
        self.pct_table.focus()

    def action_recompute(self) -> None:
        self.rescan()
        if self.shown is None:
            self.notify("nothing to recompute: no round found yet", severity="warning")
            return
        self.request_analysis(self.shown)
        self.notify(f"recomputing {round_name(self.shown)}", timeout=2, markup=False)

    def action_show_chart(self) -> None:
        self.query_one("#detail-tabs", TabbedContent).active = "chart"
        self._render_pane("chart")
        self.detail.chart.focus()

    def on_roofline_chart_kernel_selected(self, message: RooflineChart.KernelSelected) -> None:
        """Stepping through kernels in the chart moves the tables' selection too."""
        key = next((k for k, r in self._entries.items()
                    if r.entry.short_name == message.short_name), None)
        if key is not None and key != self.selected_key:
            self.selected_key = key
            self.pct_table.select_key(key)
            self.gain_table.select_key(key)
            self.render_detail(round_changed=False)

    def action_prev_round(self) -> None:
        self._step_round(-1)

    def action_next_round(self) -> None:
        self._step_round(+1)

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_export(self) -> None:
        r, result = self.shown, self.shown_result
        if r is None or result is None or not result.topn_found:
            self.notify(f"nothing to export: the shown round has no {TOPN_NAME} yet",
                        severity="warning", markup=False)
            return
        try:
            json_path, md_path = write_artifact(result.artifact, r)
        except OSError as exc:
            self.notify(f"cannot write profile_roofline.json into {self._shown_path(r)}: "
                        f"{exc.strerror or exc}", title="Export failed", severity="error",
                        markup=False, timeout=8)
            return
        self.notify(f"wrote {self._shown_path(json_path)} and {md_path.name}", title="Exported",
                    markup=False)

    def _shown_path(self, path: Path) -> str:
        """A path as the user knows it: under the profile directory's display name."""
        try:
            rel = Path(os.path.relpath(path, self.profile_dir))
        except ValueError:
            return printable(str(path))
        if rel.parts and rel.parts[0] == "..":
            return printable(str(path))
        return printable(str(Path(self.display_name) / rel))

    # -- command palette ------------------------------------------------------------------------

    def get_system_commands(self, screen: Screen) -> Iterator[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("Export artifact", "Write profile_roofline.json + .md into the "
                            "shown round's directory (e)", self.action_export)
        yield SystemCommand("Recompute round", "Recompute the shown round now (r)",
                            self.action_recompute)
        yield SystemCommand("Roofline chart", "Show the roofline chart of the shown round (c)",
                            self.action_show_chart)
        yield SystemCommand("Filter kernels", "Filter both tables by kernel name (/)",
                            self.action_filter)
        yield SystemCommand("Previous round", "Show the previous round ([)",
                            self.action_prev_round)
        yield SystemCommand("Next round", "Show the next round (])", self.action_next_round)
        yield SystemCommand("Roofline help", "Keys and legend (?)", self.action_help)
