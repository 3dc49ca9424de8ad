"""App-level parts of the labelling and comparison workflows (issues 7 and 8): adding a question,
a saved run as baseline, re-chunking, and the command-palette entries for them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING

from ragtui.core.analysis.runs import SavedRun, list_runs, load_run, pick_retriever, runs_folder
from ragtui.core.errors import InputError
from ragtui.core.labelling.authoring import AddedQuestion
from ragtui.core.metrics.measures import Measure
from ragtui.core.workspace import Workspace
from ragtui.tui.palette import CommandListProvider

if TYPE_CHECKING:
    from ragtui.tui.app import RagtuiApp


@dataclass
class Baseline:
    """A saved run chosen as baseline: each question's nDCG@k then, for one retriever."""

    name: str
    run: SavedRun
    retriever: str
    _values: dict[int, dict[str, float]] = field(default_factory=dict)

    def values(self, k: int) -> dict[str, float]:
        """nDCG@k of every question the run evaluated, judged by the run's own grades."""
        if k not in self._values:
            system = self.run.system(self.retriever)
            evaluated = system.evaluated()
            array = system.values(Measure("nDCG", k), evaluated)
            self._values[k] = {q: float(v) for q, v in zip(evaluated, array, strict=True)}
        return self._values[k]

    def deltas(self, ws: Workspace) -> dict[str, float]:
        """nDCG@k now minus in the baseline, for the questions both evaluate (the same retriever)."""
        ev = ws.evaluation
        if ev is None or self.retriever not in ev.per_question:
            return {}
        then = self.values(ev.k)
        now = ev.per_question[self.retriever]
        return {q: now[q].ndcg - then[q] for q in ev.evaluated if q in then}


class WorkflowMixin:
    """Mixed into ``RagtuiApp``: the state changes the new views ask for, made on the UI thread."""

    #: The saved run the question list's Δ column compares against, or None.
    baseline: Baseline | None = None

    def add_question(self: RagtuiApp, text: str, evidence: str, slices: list[str]) -> AddedQuestion:  # type: ignore[misc]
        """Append a question to questions.jsonl (validated, atomic), evaluate it and show it in the list."""
        ws = self.workspace
        if ws is None:
            raise InputError(None, "the data is still loading")
        added = ws.add_question(text, evidence, slices)
        self.main_screen.question_added(added.question.id)
        return added

    def runs_folder(self: RagtuiApp):  # type: ignore[misc, no-untyped-def]
        """Where saved runs live (``<golden>/runs``), or None."""
        ws = self.workspace
        if ws is None:
            return None
        try:
            return runs_folder(ws)
        except InputError:
            return None

    def set_baseline(self: RagtuiApp, name: str, retriever: str | None = None) -> None:  # type: ignore[misc]
        """Compare every question against saved run ``name`` (the Δ nDCG@k column of the question list)."""
        folder = self.runs_folder()
        if folder is None:
            return
        try:
            run = load_run(folder / f"{name}.json")
        except InputError as exc:
            self.notify(
                f"Cannot use {name} as baseline: {exc.message}",
                severity="error",
                timeout=8,
                markup=False,
            )
            return
        chosen = pick_retriever(run, retriever)
        ws = self.workspace
        if chosen not in run.rankings and run.rankings:
            chosen = next(iter(run.rankings))
        if ws is not None and chosen not in ws.retrievers:
            self.notify(
                f"{chosen} is not shown: no baseline.", severity="error", timeout=6, markup=False
            )
            return
        self.baseline = Baseline(name, run, chosen)
        self.main_screen.apply_baseline()
        self.notify(
            f"Baseline: {name} ({chosen}); Δ = nDCG@k now minus then.", timeout=5, markup=False
        )

    def clear_baseline(self: RagtuiApp) -> None:  # type: ignore[misc]
        """Remove the Δ column."""
        self.baseline = None
        self.main_screen.apply_baseline()

    def set_chunking(self: RagtuiApp, chunk_size: int | None, overlap: int) -> None:  # type: ignore[misc]
        """Re-chunk with another size and overlap (a reload in the worker; hand labels of vanished chunks stay, stale)."""
        ws = self.workspace
        if ws is None:
            return
        if (
            (chunk_size is not None and chunk_size < 1)
            or overlap < 0
            or (chunk_size is not None and overlap >= chunk_size)
        ):
            self.notify(
                "Chunk size must be at least 1 and the overlap smaller than it.",
                severity="error",
                timeout=6,
            )
            return
        self.settings = replace(ws.settings, chunk_size=chunk_size, overlap=overlap)
        self.notify(f"Re-chunking at size {chunk_size}, overlap {overlap}…", timeout=4)
        self.start_load(self.settings)

    def action_chunking_prompt(self: RagtuiApp) -> None:  # type: ignore[misc]
        """Ask for ``SIZE OVERLAP`` and re-chunk."""
        from ragtui.tui.screens.dialogs import PromptScreen

        ws = self.workspace
        if ws is None:
            return

        def apply(value: str | None) -> None:
            """Parse ``SIZE [OVERLAP]`` and reload."""
            if value is None:
                return
            parts = value.replace(",", " ").split()
            try:
                size = int(parts[0])
                overlap = int(parts[1]) if len(parts) > 1 else 0
            except (ValueError, IndexError):
                self.notify(
                    "Give the chunk size and overlap as two numbers, e.g. 256 32.",
                    severity="error",
                    timeout=6,
                )
                return
            self.set_chunking(size, overlap)

        current = f"{ws.settings.chunk_size or 512} {ws.settings.overlap}"
        self.push_screen(
            PromptScreen("chunking: size and overlap in tokens (e.g. 256 32)", current), apply
        )


class WorkflowCommands(CommandListProvider):
    """Palette entries of the labelling and comparison views, titled "area: verb"."""

    def commands(self) -> list[tuple[str, Callable[[], object], str]]:
        """(title, callback, help) of every command that applies now."""
        app = self.ragtui
        ws = app.workspace
        if ws is None:
            return []
        screen = app.main_screen
        out: list[tuple[str, Callable[[], object], str]] = [
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
                "labels: agreement",
                screen.action_agreement,
                "key g: evidence rule vs hand grades, kappa, annotators",
            ),
            (
                "questions: ad-hoc query and add",
                screen.action_adhoc,
                "key a: type any question, add it to the golden set",
            ),
            (
                "results: explain hybrid",
                screen.action_explain,
                "key e: bm25 and vector ranks, RRF terms, pool ceiling",
            ),
            (
                "metrics: recall@k curve",
                screen.action_curve,
                "key r: recall at k = 1..depth per retriever",
            ),
            (
                "metrics: per-slice report",
                screen.action_slices,
                "every metric per slice, with question counts",
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
        ]
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
        folder = app.runs_folder()
        for name in list_runs(folder) if folder is not None else []:
            out.append(
                (
                    f"baseline: {name}",
                    partial(app.set_baseline, name),
                    f"Δ nDCG@k against {folder}/{name}.json",
                )
            )
        if app.baseline is not None:
            out.append(
                (
                    "baseline: clear",
                    app.clear_baseline,
                    f"stop comparing against {app.baseline.name}",
                )
            )
        return out
