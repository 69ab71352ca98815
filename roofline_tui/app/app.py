"""``roofline dash``: a live view of a profile directory's rounds, rendered from engine artifacts.

The App renders; the :class:`~roofline_tui.app.session.Session` decides: every event goes to it,
and :meth:`RooflineApp.apply` carries out the :class:`~roofline_tui.app.session.Decision` it
returns (start analyses in :mod:`.runner`, redraw, notify). The rankings, watchers and header are
their own rooms (:mod:`.widgets.rankings`, :mod:`.watch`, :mod:`.widgets.header`); here: the
layout, the keys, the drill-down's routing, the exports, the help and the palette.
"""

from __future__ import annotations

from roofline_tui.core.bulk import collector_paused

# what these imports build lives as long as the program: no collector pass, then frozen
with collector_paused(freeze=True):
    import asyncio
    from collections.abc import Awaitable, Callable, Iterator
    from datetime import datetime
    from pathlib import Path
    from typing import TYPE_CHECKING

    from textual import events, on
    from textual.app import App, ComposeResult, SystemCommand
    from textual.containers import Horizontal
    from textual.screen import Screen
    from textual.widgets import DataTable, Static

    from roofline_tui.app import compare, exports, first_frame, view, watchdog
    from roofline_tui.app.decisions import Decision
    from roofline_tui.app.keys import APP_BINDINGS, palette_commands
    from roofline_tui.app.lifecycle import QuitGate, catch_terminating_signals, guarded
    from roofline_tui.app.messages import FilesChanged, RoundAnalyzed, RoundFailed
    from roofline_tui.app.runner import AnalysisRunner, InputsChecked
    from roofline_tui.app.session import INVALID_AFTER_S, Session
    from roofline_tui.app.watch import Watchers, extra_roots
    from roofline_tui.app.widgets.detail_panel import KERNEL_PANES, DetailPanel
    from roofline_tui.app.widgets.header import render_header, render_next
    from roofline_tui.app.widgets.ingest_row import IngestRow
    from roofline_tui.app.widgets.rank_table import RankTable
    from roofline_tui.app.widgets.rankings import Rankings
    from roofline_tui.app.widgets.round_stub import follow, new_round_select, show_rounds, stub_for
    from roofline_tui.core.analyze import AnalyzeOptions
    from roofline_tui.core.api import RoundResult, RoundSources
    from roofline_tui.core.layout import round_label

if TYPE_CHECKING:
    from textual.widgets import Input, Select, TabbedContent

    from roofline_tui.app.widgets.roofline_chart import RooflineChart


class RooflineApp(App[None]):
    """Two rankings side by side, a drill-down, live recompute and export."""

    TITLE = "roofline dash"
    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute: subclasses live elsewhere
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]  # side by side from 120 columns
    TINY_BELOW = 12  # columns: a "-tiny" screen (see app.tcss)
    ESCAPE_TO_MINIMIZE = False  # our escape minimizes and puts focus back on the rankings
    # focused from the start (named here: a focus change in on_mount rebuilds the Footer's keys)
    AUTO_FOCUS = "#by-pct"
    # the start waits this long for the shown round's analysis (demo: ~0.1 s) before drawing
    FIRST_RESULT_WAIT_S = 0.4

    BINDINGS = APP_BINDINGS  # app/keys.py: every key with its help text

    def __init__(self, profile_dir: Path, sources: RoundSources | None = None, *,
                 watch: bool = True, clock: Callable[[], datetime] | None = None,
                 display_name: str | None = None, watch_root: Path | None = None,
                 debounce_ms: int = 300, step_ms: int = 40, poll_s: float = 0.3,
                 demo: bool = False, options: AnalyzeOptions | None = None,
                 invalid_after_s: float | None = None, ingest: bool = False,
                 against: Path | None = None,
                 before_watchers: Callable[[], Awaitable[object]] | None = None) -> None:
        super().__init__()
        self.ingest = ingest  # `dash --traces`: a `roofline ingest` runs beside, its row shown
        self.driver_class = guarded(self.driver_class)  # (app/terminal.py: never blocks)
        self.profile_dir = Path(profile_dir)
        self.sources = sources or RoundSources()
        self.options = options
        self.watch_enabled = watch
        self.display_name = display_name if display_name is not None else str(profile_dir)
        self.watch_root = Path(watch_root) if watch_root is not None else self.profile_dir
        self.demo = demo
        extra = extra_roots(self.profile_dir, self.watch_root, self.sources)
        self.session = Session(self.profile_dir, display_name=self.display_name,
                               watch_root=self.watch_root, clock=clock or datetime.now,
                               extra_roots=extra,
                               invalid_after_s=invalid_after_s or INVALID_AFTER_S)
        self.runner = AnalysisRunner(self.post_message, self.sources, options)
        self.against = compare.Against(against, self.sources, options) if against else None
        self.watchers = Watchers(self, self.watch_root, extra, enabled=watch,
                                 debounce_ms=debounce_ms, step_ms=step_ms, poll_s=poll_s,
                                 on_attached=self._watchers_attached, profile=self.profile_dir,
                                 on_replaced=lambda text: self.notify(text, severity="warning"),
                                 against=self.against)
        # awaited after the first frame, before the watchers start (tests change a file there)
        self.before_watchers = before_watchers
        # set once the watchers are attached and every analysed round's inputs were compared
        self.inputs_checked = asyncio.Event()
        self._release_signals: Callable[[], None] = lambda: None
        self.quit_gate = QuitGate(self._quit_now)
        self._first = Decision()  # the first rescan's (made by compose)
        self.rest_built = asyncio.Event()  # set once what follows the first frame is mounted

    # -- layout ---------------------------------------------------------------------------------

    def get_default_screen(self) -> Screen[None]:
        """The screen, born with its width's breakpoint class: set by the first Resize instead,
        every widget was styled and laid out again right after the first frame."""
        width = self.size.width
        wide = [c for w, c in sorted(self.HORIZONTAL_BREAKPOINTS, reverse=True) if width >= w]
        tiny = " -tiny" if width < self.TINY_BELOW else ""
        return Screen(id="_default", classes=(wide[0] if wide else "") + tiny)

    def compose(self) -> ComposeResult:
        """What the first frame shows; the rest comes right after it (:mod:`.first_frame`)."""
        first_frame.pause_collector(self)
        self._first = self.session.rescan(initial=True)
        s = self.session
        with Horizontal(id="topbar"):
            yield stub_for(s.rounds, s.shown) or new_round_select(s.rounds, s.shown)
            yield Static(id="header-title")
        yield Static(id="header-info")
        yield Static(id="status")
        yield from [IngestRow(self.profile_dir, self.session.clock)] if self.ingest else []
        yield Static(id="next-target")
        yield Static(id="coverage")
        yield Rankings(id="tables", against=self.against)
        yield DetailPanel(id="detail", compare=self.against is not None)

    @property
    def rankings(self) -> Rankings:
        return self.query_one(Rankings)

    @property
    def pct_table(self) -> RankTable:
        return self.rankings.pct_table

    @property
    def gain_table(self) -> RankTable:
        return self.rankings.gain_table

    @property
    def detail(self) -> DetailPanel:
        return self.query_one(DetailPanel)

    @property
    def shown_result(self) -> RoundResult | None:
        return self.session.shown_result

    @property
    def selected_row(self) -> view.Row | None:
        return self.rankings.selected_row

    @property
    def busy(self) -> bool:  # an analysis is running or queued
        return self.session.busy

    @property
    def watching(self) -> bool:  # the profile watcher is attached
        return self.watchers.watching

    def on_mount(self) -> None:
        self._release_signals = catch_terminating_signals(self, self.action_quit, self.quit_gate)
        first = self._first
        if first.render and first.analyze:
            # wait a moment for the first analyses: a quick round then shows in the first frame
            # (not "analysing…" painted and at once replaced); a slower one comes later
            arrived = self.runner.wait_first(first.analyze, self.FIRST_RESULT_WAIT_S)
            first.analyze = []
            for message in arrived:
                first.merge(self._outcome(message))
        self.apply(first)
        if not first.render:  # no round to show yet: still lay out the empty rankings
            self.render_round()
        self.call_after_refresh(self.call_later, first_frame.build_rest, self, self)  # posted

    def on_unmount(self) -> None:
        first_frame.resume_collector(self)
        self.watchers.stop()
        self._release_signals()
        watchdog.clean_up()

    # -- decisions ------------------------------------------------------------------------------

    def apply(self, d: Decision) -> None:
        """Carry out what the session decided (nothing once the App is closing: an analysis may
        still come back while its widgets are being removed)."""
        if not self.is_running or not self.screen.query(Rankings):
            return
        for r, seq in d.analyze:
            self.runner.start(r, seq)
        if d.options:
            show_rounds(self, self.session.rounds, self.session.shown)
        for t in d.toasts:
            self.notify(t.text, severity=t.severity, markup=False, timeout=t.timeout)
        if d.render:
            self.render_round()
        elif d.header or d.analyze:
            self.render_header()
        if d.recheck_in is not None:
            self.set_timer(d.recheck_in, lambda: self.apply(self.session.tick()))
        self.watchers.sync(self.session.watched_inputs())

    def _outcome(self, message: RoundAnalyzed | RoundFailed) -> Decision:
        r = message.round_dir
        fingerprint = self.runner.finished(message)
        if isinstance(message, RoundAnalyzed):
            return self.session.analyzed(r, message.seq, message.result, fingerprint=fingerprint)
        return self.session.failed(r, message.seq, message.error)

    @on(RoundAnalyzed)
    @on(RoundFailed)
    def _round_done(self, message: RoundAnalyzed | RoundFailed) -> None:
        self.apply(self._outcome(message))

    def _watchers_attached(self) -> None:
        self.runner.watchers_attached(self.session.results, self.session.rounds)

    def on_inputs_checked(self, message: InputsChecked) -> None:
        self.apply(self.session.inputs_checked(message.current))
        if self.runner.all_checked:
            self.inputs_checked.set()

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id != "round-select" or not isinstance(event.value, str):
            return  # (the blank entry)
        self.apply(self.session.show(Path(str(event.value))))

    @property
    def watched_inputs(self) -> tuple[Path, ...]:  # files outside the tree the watcher covers
        return self.watchers.inputs.files

    def on_files_changed(self, message: FilesChanged) -> None:
        self.apply(self.session.changed(message.paths))

    # -- rendering ------------------------------------------------------------------------------

    def render_round(self) -> None:
        follow(self, self.session.shown, self.session.rounds)
        self.render_header()
        self.render_tables()

    def render_header(self) -> None:
        render_header(self, self.session, self.display_name, demo=self.demo)

    def render_tables(self) -> None:
        """The rankings, the Next and coverage lines, the drill-down."""
        self.rankings.show(self.shown_result)
        render_next(self, self.shown_result)
        self.render_detail()

    def on_resize(self, event: events.Resize) -> None:
        self.screen.set_class(event.size.width < self.TINY_BELOW, "-tiny")
        # The app's first Resize comes with the width the columns were already fitted to: only
        # a real change of width refits them (and redraws the rankings).
        if self.rankings.needs_refit(event.size.width):
            self.call_after_refresh(self.render_tables)

    # -- the drill-down -------------------------------------------------------------------------

    def render_detail(self) -> None:
        """Refresh the tab labels and the open drill-down pane (the others render when opened:
        each remembers what it shows, so none is ever left blank or stale)."""
        self.detail.label_degraded(self.shown_result)
        self._render_pane(self.detail.active)

    def _render_pane(self, pane: str) -> None:
        s = self.session
        state: object = (s.shown, s.generation, id(s.shown_result))
        if pane in KERNEL_PANES:
            state = (state, self.rankings.selected_key)
        self.detail.render_pane(pane, state, self.shown_result, self.selected_row,
                                below=self.rankings.below_selected,
                                round_label=round_label(s.shown) if s.shown is not None else None,
                                against=self.against)

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        # (the panel itself makes room for the chart)
        if event.tabbed_content.id == "detail-tabs" and event.pane.id:
            self._render_pane(event.pane.id)

    def on_rankings_selected(self, _message: Rankings.Selected) -> None:
        self._render_pane(self.detail.active)

    def on_roofline_chart_kernel_selected(self, message: RooflineChart.KernelSelected) -> None:
        """Stepping through kernels in the chart moves the tables' selection too."""
        if self.rankings.select_short_name(message.short_name):
            self._render_pane(self.detail.active)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """enter (or a click on the selected row): into the drill-down, like a double-click.
        On a narrow screen the drill-down is maximized (escape brings the rankings back)."""
        if self.screen.has_class("-narrow") and self.screen.maximized is None:
            self.screen.maximize(self.detail, container=False)
        self.detail.focus_active()

    def action_show_chart(self) -> None:
        """c: open the chart; with the chart open, back to the rankings."""
        if not self.detail.ready:
            return
        if self.detail.chart_open:
            self._render_pane(self.detail.close_chart())
            self.rankings.back_table.focus()
            return
        self.detail.tabs.active = "chart"
        self._render_pane("chart")
        self.detail.chart.focus()

    def action_clear_filter(self) -> None:
        """escape: back to the rankings from the chart or the drill-down; in the rankings, clear
        the filter."""
        back = False
        if self.screen.maximized is not None:  # back from a maximized drill-down
            self.screen.minimize()
            back = True
        if self.detail.chart_open:
            self._render_pane(self.detail.close_chart())
            back = True
        focused = self.focused
        if back or (focused is not None and self.detail in focused.ancestors_with_self):
            self.rankings.back_table.focus()
            return
        box = first_frame.filter_box(self)
        if (box is not None and box.shown) or self.rankings.filter_text:
            if box is not None:
                box.close(clear=True)
            self._set_filter("")
            self.pct_table.focus()

    # -- the filter and the other keys ----------------------------------------------------------

    def _set_filter(self, text: str) -> None:
        self.rankings.filter_text = text
        self.render_tables()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "filter":
            self._set_filter(event.value.strip())

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "filter":
            return
        box = first_frame.filter_box(self)
        if box is not None and not self.rankings.filter_text:
            box.close(clear=False)
        self.pct_table.focus()

    def action_filter(self) -> None:
        first_frame.open_filter(self)

    def action_recompute(self) -> None:
        self.apply(self.session.recompute())

    def action_step_round(self, delta: int) -> None:  # [ and ]: the previous / next round
        self.apply(self.session.step(delta))

    def action_sort(self) -> None:
        """Sort the focused ranking by its next column (rank → … → back to rank)."""
        self.rankings.sort_next(self.rankings.table_of(self.focused))

    def action_toggle_below(self) -> None:
        n = self.rankings.toggle_below()
        self.render_detail()
        self.notify(f"listing {n} kernel(s) below the head threshold, greyed"
                    if self.rankings.show_below else "heads only", timeout=2)

    def action_help(self) -> None:
        from roofline_tui.app.widgets.help_screen import HelpScreen, key_sections

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(key_sections(self)))

    def action_quit(self) -> None:  # type: ignore[override]
        """Quit at once (analyses run on daemon threads); while the widgets after the first
        frame are being mounted, once they are."""
        self.quit_gate.request()

    def _quit_now(self) -> None:
        self.watchers.stop()
        self.exit()

    # -- exports (what they write and say: app/exports.py); help and palette from the bindings --

    def action_export(self) -> None:
        exports.export_artifact(self)

    def action_export_csv(self) -> None:
        exports.export_csv(self)

    def action_copy(self, what: str) -> None:
        exports.copy_selected(self, as_json=what == "json")

    def action_save_svg(self) -> None:
        exports.save_svg(self)

    def get_system_commands(self, screen: Screen[object]) -> Iterator[SystemCommand]:
        return palette_commands(self, super().get_system_commands(screen))
