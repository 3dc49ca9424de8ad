"""The command palette provider: the less common actions, titled "area: verb"."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

if TYPE_CHECKING:
    from ragtui.tui.app import RagtuiApp

#: The k values offered directly (k can also be stepped with + and -).
K_CHOICES = (1, 3, 5, 10, 20)
#: The depths offered (a new depth re-runs every search).
DEPTH_CHOICES = (5, 10, 20, 50, 100)


class CommandListProvider(Provider):
    """A palette provider built from a list of (title, callback, help) that ``commands`` returns."""

    @property
    def ragtui(self) -> RagtuiApp:
        """The app, typed."""
        return cast("RagtuiApp", self.app)

    def commands(self) -> list[tuple[str, Callable[[], object], str]]:
        """(title, callback, help) of every command that applies now."""
        raise NotImplementedError

    async def discover(self) -> Hits:
        """Every command, for the palette opened with nothing typed."""
        for title, callback, help_text in self.commands():
            yield DiscoveryHit(title, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        """Commands whose title matches what was typed."""
        matcher = self.matcher(query)
        for title, callback, help_text in self.commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, help=help_text)


class RagtuiCommands(CommandListProvider):
    """Change k or depth, export TREC files, run check, sort or filter the questions, reload labels."""

    def commands(self) -> list[tuple[str, Callable[[], object], str]]:
        """(title, callback, help) of every command that applies now."""
        app = self.ragtui
        ws = app.workspace
        if ws is None:
            return [
                ("help: keys and metrics", app.action_help, "Every key and what each metric means")
            ]
        k = ws.settings.k
        depth = ws.settings.depth
        out: list[tuple[str, Callable[[], object], str]] = [
            (
                "metrics: increase k",
                partial(app.set_k, k + 1),
                f"k is {k}; recall, precision and nDCG are cut at k",
            ),
            ("metrics: decrease k", partial(app.set_k, k - 1), f"k is {k}"),
        ]
        for choice in K_CHOICES:
            if choice != k:
                out.append((f"metrics: set k to {choice}", partial(app.set_k, choice), f"k is {k}"))
        for choice in DEPTH_CHOICES:
            if choice != depth:
                out.append(
                    (
                        f"results: set depth to {choice}",
                        partial(app.set_depth, choice),
                        f"depth is {depth}; re-runs every search (MRR looks at the whole run)",
                    )
                )
        out += [
            (
                "export: write TREC qrels and runs",
                app.action_export,
                "qrels.trec and one <retriever>.trec per retriever",
            ),
            (
                "check: validate the golden set",
                app.action_check,
                "evidence found in no chunk, stale labels",
            ),
            (
                "questions: sort worst-first",
                partial(app.set_sort, True),
                "lowest hybrid nDCG@k first",
            ),
            (
                "questions: golden-set order",
                partial(app.set_sort, False),
                "the order of questions.jsonl",
            ),
            ("questions: filter", app.action_filter, "words in the id or text, or slice:NAME"),
            ("questions: clear filter", app.action_clear_filter, "show every question"),
            ("labels: undo last change", app.action_undo, "written as a new journal line"),
            (
                "labels: reload labels.jsonl",
                app.action_reload_labels,
                "pick up labels another process wrote",
            ),
            ("help: keys and metrics", app.action_help, "every key and what each metric means"),
        ]
        return out
