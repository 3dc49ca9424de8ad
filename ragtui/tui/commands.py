"""The command palette: the less common actions, titled "area: verb".

Each entry calls the app (which owns every change) or the main screen (which owns only what it
shows); the palette itself changes nothing. It reads the app through ``PaletteHost`` (the app
imports this module for its ``COMMANDS``, so this one does not import the app).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Protocol, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

from ragtui.core.analysis.question_filter import FILTER_SYNTAX
from ragtui.core.judges.verify import judges
from ragtui.core.text import visible_line
from ragtui.core.workspace import Workspace
from ragtui.tui.controller import Controller
from ragtui.tui.screens.main import MainScreen

#: The k values offered directly (k can also be stepped with + and -).
K_CHOICES = (1, 3, 5, 10, 20)
#: The depths offered (a new depth re-runs every search).
DEPTH_CHOICES = (5, 10, 20, 50, 100)

#: One palette entry: title, what it calls, help.
Entry = tuple[str, Callable[[], object], str]


class PaletteHost(Protocol):
    """What the palette calls of the app (``ragtui.tui.app.RagtuiApp``)."""

    @property
    def workspace(self) -> Workspace | None:
        """The loaded workspace (None while loading)."""
        ...

    @property
    def controller(self) -> Controller:
        """The state: the settings (their variants) and the baseline."""
        ...

    @property
    def main_screen(self) -> MainScreen:
        """The main screen, wherever the screen stack is."""
        ...

    def set_k(self, k: int) -> None: ...
    def set_depth(self, depth: int) -> None: ...
    def action_export(self) -> None: ...
    def show_messages(self) -> None: ...
    def action_check(self) -> None: ...
    def action_undo(self) -> None: ...
    def action_reload_labels(self) -> None: ...
    def action_chunking_prompt(self) -> None: ...
    def action_help(self) -> None: ...
    def run_experiment(self) -> None: ...
    def show_variant(self, name: str) -> None: ...
    def refresh_live(self) -> None: ...
    def runs_folder(self) -> Path | None: ...
    def set_baseline(self, name: str, retriever: str | None = None) -> None: ...
    def clear_baseline(self) -> None: ...


class RagtuiCommands(Provider):
    """Metrics, results, questions, labels, comparisons, export and check."""

    @property
    def ragtui(self) -> PaletteHost:
        """The app, as the palette calls it."""
        return cast(PaletteHost, self.app)

    def verify(self, judge: str | None) -> None:
        """Verify a judge's grades (None: every judge's): the judging view on top switches to it,
        else one opens over the questions shown."""
        from ragtui.tui.screens.judging import JudgingScreen

        top = self.app.screen
        if isinstance(top, JudgingScreen) and not top.adjudicate:
            top.verify(judge)
        else:
            self.ragtui.main_screen.action_verify(judge)

    def commands(self) -> list[Entry]:
        """(title, callback, help) of every command that applies now."""
        app = self.ragtui
        ws = app.workspace
        if ws is None:
            return [
                ("help: keys and metrics", app.action_help, "every key and what each metric means")
            ]
        screen = app.main_screen
        k = ws.settings.k
        depth = ws.settings.depth
        out: list[Entry] = [
            (
                "metrics: increase k",
                partial(app.set_k, k + 1),
                f"k is {k}; recall, precision and nDCG are cut at k",
            ),
            ("metrics: decrease k", partial(app.set_k, k - 1), f"k is {k}"),
        ]
        out += [
            (f"metrics: set k to {c}", partial(app.set_k, c), f"k is {k}")
            for c in K_CHOICES
            if c != k
        ]
        out += [
            (
                f"results: set depth to {c}",
                partial(app.set_depth, c),
                f"depth is {depth}; re-runs every search (MRR looks at the whole run)",
            )
            for c in DEPTH_CHOICES
            if c != depth
        ]
        out += [
            (
                "metrics: per-slice report",
                screen.action_slices,
                "every metric per slice, with question counts",
            ),
            (
                "metrics: recall@k curve",
                screen.action_curve,
                "key r: recall at k = 1..depth per retriever",
            ),
            (
                "results: explain hybrid",
                screen.action_explain,
                "key e: bm25 and vector ranks, RRF terms, pool ceiling",
            ),
            (
                "export: write TREC qrels and runs",
                app.action_export,
                "qrels.trec and one <retriever>.trec per retriever",
            ),
            (
                "messages: recent",
                app.show_messages,
                "what the status line said lately, errors included, newest first",
            ),
            (
                "check: validate the golden set",
                app.action_check,
                "evidence found in no chunk, stale labels",
            ),
            (
                "questions: sort worst-first",
                partial(screen.set_sort, True),
                "lowest hybrid nDCG@k first",
            ),
            (
                "questions: golden-set order",
                partial(screen.set_sort, False),
                "the order of questions.jsonl",
            ),
            (
                "questions: filter",
                screen.action_filter,
                FILTER_SYNTAX,
            ),
            ("questions: clear filter", screen.action_clear_filter, "show every question"),
            (
                "questions: ad-hoc query and add",
                screen.action_adhoc,
                "key a: type any question, add it to the golden set",
            ),
            (
                "labels: next unjudged chunk",
                screen.action_next_unjudged,
                "key n: the judging queue (pooled top k)",
            ),
            (
                "labels: judging queue in random order",
                partial(screen.set_queue_order, "random"),
                "seeded shuffle of each pool, so position does not bias the judge",
            ),
            (
                "labels: judging queue in rank order",
                partial(screen.set_queue_order, "rank"),
                "highest-ranked first",
            ),
            (
                "labels: judging view",
                screen.action_judge,
                "key j: one key a pair over the questions shown",
            ),
            (
                "labels: verify the judges' grades",
                partial(self.verify, None),
                "the judging view over the pairs a model judge graded; enter accepts, a digit overrides",
            ),
            *(
                (
                    f"labels: verify judge {visible_line(name)}",
                    partial(self.verify, name),
                    f"the pairs model:{visible_line(name)} graded that no person has",
                )
                for name in judges(ws.grades.labels)
            ),
            (
                "labels: adjudicate disputed pairs",
                screen.action_adjudicate,
                "the judging view over the pairs annotators disagree on; the adjudicated grade wins",
            ),
            ("labels: undo last change", app.action_undo, "written as a new journal line"),
            (
                "labels: reload labels.jsonl",
                app.action_reload_labels,
                "pick up labels another process wrote",
            ),
            (
                "labels: agreement",
                screen.action_agreement,
                "key g: evidence rule vs hand grades, kappa, annotators",
            ),
            (
                "corpus: chunking diagnostics",
                screen.action_diagnostics,
                "key d: straddling evidence, truncation, histogram",
            ),
            (
                "chunking: set size and overlap",
                app.action_chunking_prompt,
                "re-chunk and re-evaluate; stale labels are kept",
            ),
            ("help: keys and metrics", app.action_help, "every key and what each metric means"),
        ]
        variants = app.controller.settings.variants
        if variants:
            out.append(
                (
                    "experiment: run the variants",
                    app.run_experiment,
                    f"{len(variants)} variants of the project file, side by side with significance",
                )
            )
            out += [
                (
                    f"experiment: show variant {v.name}",
                    partial(app.show_variant, v.name),
                    f"switch the whole screen to {v}",
                )
                for v in variants
            ]
        if ws.live.retrievers:
            out.append(
                (
                    "retrievers: ask the live retrievers again",
                    app.refresh_live,
                    f"{', '.join(ws.live.retrievers)}: ignore the cached answers (as --refresh)",
                )
            )
        names = ws.retrievers
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                out.append(
                    (
                        f"compare: {b} against {a}",
                        partial(screen.action_compare, a, b),
                        "win/tie/loss, p-value, 95% CI",
                    )
                )
        from ragtui.core.analysis.runs import list_runs

        folder = app.runs_folder()
        for name in list_runs(folder) if folder is not None else []:
            out.append(
                (
                    f"baseline: {name}",
                    partial(app.set_baseline, name),
                    f"Δ nDCG@k against {folder}/{name}.json",
                )
            )
        if app.controller.baseline is not None:
            out.append(
                (
                    "baseline: clear",
                    app.clear_baseline,
                    f"stop comparing against {app.controller.baseline.name}",
                )
            )
        return out

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
