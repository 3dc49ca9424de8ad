"""The tabs of the compact layout: one per retriever, on one line, the active one always in view."""

from __future__ import annotations

from dataclasses import dataclass

from rich.cells import cell_len
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.events import Click
from textual.message import Message
from textual.widgets import Static

from ragtui.tui.ids import widget_id

#: Marks the tab of the list shown in the compact layout.
ACTIVE_TAB_MARK = "▸"
#: The cells a tab gives its rank (``#1`` to ``#99``, ``–``): the tab keeps its width from one
#: question to the next, so moving through the questions lays the strip out again only for a rank
#: of 100 or more.
RANK_CELLS = 3


class TabLabel(Static):
    """One retriever's tab in the compact layout; clicking it asks for that list (``Selected``)."""

    @dataclass
    class Selected(Message):
        """A tab was clicked: its retriever's list is to be shown and focused."""

        tab: TabLabel
        retriever: str

        @property
        def control(self) -> TabLabel:
            """The tab clicked."""
            return self.tab

    def __init__(self, retriever: str) -> None:
        """The tab of ``retriever``."""
        super().__init__(
            retriever, id=widget_id("tab", retriever), classes="tab-label", markup=False
        )
        #: The retriever this tab stands for.
        self.retriever = retriever
        #: The first relevant rank it shows, and whether it is the active tab.
        self.rank = ""
        self.active = False

    def show(self, rank: str | None = None, active: bool | None = None, shown: bool = True) -> bool:
        """`` bm25 #1  ``, or ``▸bm25 #1  `` for the active tab (the mark says which list is shown
        where colours do not; the rank padded to ``RANK_CELLS``); True when the text changed.

        ``shown``: whether the tabs are on screen (the compact layout). Elsewhere the rank and the
        mark are kept and neither the text nor the class is set: a hidden widget given new text
        made the compositor place every widget on the screen again at the next paint (29 Downs
        in 40 in the wide layout); both follow when the tabs show (``ResultsPane.set_compact``)."""
        self.rank = self.rank if rank is None else rank
        self.active = self.active if active is None else active
        if not shown:
            return False
        self.set_class(self.active, "-active")
        rank = self.rank + " " * max(0, RANK_CELLS - cell_len(self.rank))
        label = f"{ACTIVE_TAB_MARK if self.active else ' '}{self.retriever} {rank} "
        old = str(self.content)
        if old == label:
            return False
        # A new layout of the strip only when the tab's width changed (a rank of another width).
        self.update(label, layout=cell_len(old) != cell_len(label))
        return True

    def on_click(self, event: Click) -> None:
        """Ask for this retriever's list."""
        event.stop()
        self.post_message(self.Selected(self, self.retriever))


class TabStrip(Horizontal):
    """The tabs of the compact layout on one line. When they do not all fit, the tabs before the
    active one that do not fit are left out and ``‹N`` says how many, the tabs after it that do not
    fit whole are left out and ``N›`` says how many: the active tab is always whole in view, and
    no tab is drawn cut (with eight lists the strip ended at ``milvus #`` without a sign of more)."""

    def __init__(self, *, id: str | None = None) -> None:
        """An empty strip; the tabs are composed into it."""
        super().__init__(id=id)
        #: The retriever whose tab has to be in view.
        self.active = ""

    def compose(self) -> ComposeResult:
        """The counts of tabs left out, before and after the tabs."""
        yield Static("", id="tab-more", classes="tab-label", markup=False)
        yield Static("", id="tab-after", classes="tab-label", markup=False)

    def on_mount(self) -> None:
        """The counts go first and last; nothing is left out yet."""
        more = self.query_one("#tab-more")
        after = self.query_one("#tab-after")
        more.display = after.display = False
        self.move_child(more, before=0)
        self.move_child(after, after=len(self.children) - 1)

    def on_resize(self) -> None:
        """Another width: another number of tabs fits."""
        self.show_tab(self.active)

    def show_tab(self, retriever: str) -> None:
        """Show as many tabs before ``retriever``'s as fit with it, and it."""
        self.active = retriever
        width = self.size.width
        tabs = list(self.query(TabLabel))
        names = [t.retriever for t in tabs]
        if not width or retriever not in names:
            return
        active = names.index(retriever)
        sizes = [cell_len(str(t.content)) + t.styles.margin.right for t in tabs]

        def count(text: str) -> int:
            return cell_len(text) + 1

        def room(first: int, stop: int) -> int:
            """The cells the tabs ``first`` to ``stop`` (excluded) take with the counts."""
            before = count(f"‹{first}") if first else 0
            after = count(f"{len(tabs) - stop}›") if stop < len(tabs) else 0
            return before + sum(sizes[first:stop]) + after

        start, stop = active, active + 1
        while start > 0 and room(start - 1, stop) <= width:
            start -= 1
        while stop < len(tabs) and room(start, stop + 1) <= width:
            stop += 1
        for index, tab in enumerate(tabs):
            visible = start <= index < stop
            if tab.display != visible:
                tab.display = visible
        # The counts change (a new layout) only when what they say does.
        _show_count(self.query_one("#tab-more", Static), f"‹{start}", start > 0)
        _show_count(self.query_one("#tab-after", Static), f"{len(tabs) - stop}›", stop < len(tabs))


def _show_count(count: Static, text: str, shown: bool) -> None:
    """Show ``text`` in a count of tabs left out (hidden unless ``shown``), touching it only where
    it changes."""
    if shown and str(count.content) != text:
        count.update(text)
    if count.display != shown:
        count.display = shown
