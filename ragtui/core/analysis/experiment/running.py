"""Running an experiment: every variant loaded (sharing what it can), judged, evaluated and compared
with the baseline variant, the p-values adjusted together, and each variant saved as a run."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ragtui.core.analysis.diagnostics import diagnose
from ragtui.core.analysis.experiment.result import (
    ExperimentResult,
    ExperimentRow,
    Judgements,
    VariantResult,
)
from ragtui.core.analysis.runs import refuse_taken, save_folder, write_run
from ragtui.core.data.golden import evidence_spans
from ragtui.core.metrics.measures import Measure, System, parse_measures, system_from_workspace
from ragtui.core.metrics.significance import (
    CORRECTIONS,
    DEFAULT_SEED,
    N_PERMUTATIONS,
    N_RESAMPLES,
    Comparison,
    adjust_p_values,
    compare_systems,
)
from ragtui.core.retrieval.embeddings import Progress
from ragtui.core.retrieval.rerank import RERANK_SUFFIX
from ragtui.core.settings import Settings
from ragtui.core.variants import baseline_of, variant_settings
from ragtui.core.workspace import SOURCE_EVIDENCE, Shared, Workspace
from ragtui.core.workspace.judging import judged_summaries

__all__ = [
    "DEFAULT_CORRECTION",
    "ProgressFor",
    "Status",
    "default_experiment_measures",
    "run_experiment",
    "tail_questions",
]

#: The correction applied unless another is asked for (see the module docstring for why).
DEFAULT_CORRECTION = "holm"

#: Called with a line saying what the experiment does now (which variant, which stage).
Status = Callable[[str], None]
#: Makes the progress callback of one stage (``embedding c256``).
ProgressFor = Callable[[str], Progress]


def default_experiment_measures(k: int) -> list[Measure]:
    """recall@k, MRR (over the whole run) and nDCG@k: precision@k adds little when most questions
    have one relevant chunk (it is recall@k / k there)."""
    return [Measure("R", k), Measure("RR"), Measure("nDCG", k)]


def _judgements(ws: Workspace) -> Judgements:
    """What the variant's relevance rests on."""
    applied: set[tuple[str, str, str]] = set()
    reasons: dict[str, int] = {}
    for label in ws.grades.labels.current.values():
        if label.grade is None:
            continue
        reason = ws.grades.label_status(label)
        if reason is None:
            applied.add((label.question, label.chunk, label.chunk_sha1 or ""))
        else:
            reasons[reason] = reasons.get(reason, 0) + 1
    ev = ws.evaluation
    assert ev is not None
    evaluated = [q for q in ev.question_ids if q in ev.evaluated]
    tail = set(tail_questions(ws))
    return Judgements(
        hand_applied=len(applied),
        hand_stale=sum(reasons.values()),
        stale_reasons=reasons,
        evaluated=evaluated,
        skipped=ev.skipped,
        applied_pairs=frozenset(applied),
        tail_questions=[q for q in evaluated if q in tail],
    )


def tail_questions(ws: Workspace) -> list[str]:
    """The questions whose evidence the model cannot read without windows: in every chunk the evidence
    rule makes relevant, each evidence string found there lies wholly in the cut-off tail."""
    wholly: dict[tuple[str, str], set[str]] = {}
    for hidden in diagnose(ws).hidden_evidence:
        if hidden.wholly_hidden:
            wholly.setdefault((hidden.question, hidden.chunk), set()).add(hidden.evidence)
    if not wholly:
        return []
    out = []
    for q in ws.questions:
        chunks = ws.grades.base.get(q.id, {}) if ws.data.base_source == SOURCE_EVIDENCE else {}
        if not chunks:
            continue
        if all(
            (q.id, cid) in wholly
            and all(
                e in wholly[(q.id, cid)]
                for e in q.evidence
                if evidence_spans(ws.passages.by_id[cid].text, [e])
            )
            for cid in chunks
        ):
            out.append(q.id)
    return out


@dataclass(frozen=True)
class _Comparing:
    """The baseline variant, and how a variant's retriever is compared with it: the measures and
    the paired tests' seed, sign flips and bootstrap resamples."""

    base: VariantResult
    measures: Sequence[Measure]
    seed: int
    n_permutations: int
    n_resamples: int

    def retriever(self, result: VariantResult, name: str) -> str | None:
        """The baseline's retriever that ``name`` of ``result`` is compared with: the same one, or
        for a reranked list the baseline lacks its first stage; None when there is none, or
        ``result`` is the baseline."""
        baseline = self.base.retrievers
        if result is self.base:
            return None
        if name in baseline:
            return name
        first_stage = name.removesuffix(RERANK_SUFFIX)
        if first_stage != name and first_stage in baseline:
            return first_stage
        return None

    def compare(self, before: System, after: System) -> Comparison:
        """The paired comparison of the baseline's ``before`` with a variant's ``after``."""
        return compare_systems(
            before,
            after,
            self.measures,
            n_permutations=self.n_permutations,
            n_resamples=self.n_resamples,
            seed=self.seed,
        )


def run_experiment(
    settings: Settings,
    *,
    measures: Sequence[Measure] | str | None = None,
    correction: str = DEFAULT_CORRECTION,
    seed: int = DEFAULT_SEED,
    n_permutations: int = N_PERMUTATIONS,
    n_resamples: int = N_RESAMPLES,
    save: bool = True,
    runs_dir: Path | None = None,
    status: Status | None = None,
    progress_for: ProgressFor | None = None,
    replace_runs: bool = False,
) -> ExperimentResult:
    """Evaluate every variant of ``settings.variants`` and compare each with the baseline variant.

    With ``save``, a variant named like a saved run is refused (``RunExistsError``) before any
    variant is loaded, unless ``replace_runs``: then the run replaced is kept as a backup."""
    if correction not in CORRECTIONS:
        raise ValueError(f"unknown correction {correction!r}")
    baseline = baseline_of(settings)
    if save:
        refuse_taken(
            save_folder(settings, runs_dir),
            [v.name for v in settings.variants],
            replace_runs,
            variant=True,
        )
    chosen = (
        parse_measures(measures)
        if isinstance(measures, str)
        else list(measures)
        if measures
        else default_experiment_measures(settings.k)
    )
    shared = Shared()
    results: list[VariantResult] = []
    for i, variant in enumerate(settings.variants, start=1):
        if status:
            status(f"variant {variant} ({i} of {len(settings.variants)})")
        own = variant_settings(settings, variant)
        ws = Workspace.load(own, shared)
        ws.prepare_vectors(progress_for(f"embedding {variant.name}") if progress_for else None)
        ws.prepare_rerank(progress_for(f"reranking {variant.name}") if progress_for else None)
        judged = {
            name: (summary.mean, summary.thin) for name, summary in judged_summaries(ws).items()
        }
        results.append(VariantResult(variant, ws.settings, ws, _judgements(ws), judged))
    base = next(r for r in results if r.name == baseline.name)
    for result in results:
        result.judged_like_baseline = (
            result.judgements.applied_pairs == base.judgements.applied_pairs
            and result.judgements.evaluated == base.judgements.evaluated
        )
    comparing = _Comparing(base, chosen, seed, n_permutations, n_resamples)
    rows = _rows(results, comparing)
    adjusted = adjust_p_values([r.p_value for r in rows if r.p_value is not None], correction)
    it = iter(adjusted)
    rows = [r if r.p_value is None else replace(r, p_adjusted=next(it)) for r in rows]
    tail = _tail_means(results, comparing)
    if save:
        # After every variant is evaluated: the first write may move the golden set to the user's copy.
        for result in results:
            written = write_run(result.workspace, result.name, runs_dir, replace=replace_runs)
            result.run_path, result.run_backup = written.path, written.backup
    return ExperimentResult(
        baseline.name,
        correction,
        list(chosen),
        results,
        rows,
        settings.k,
        seed,
        n_permutations,
        n_resamples,
        tail,
    )


def _rows(results: Sequence[VariantResult], comparing: _Comparing) -> list[ExperimentRow]:
    rows: list[ExperimentRow] = []
    for result in results:
        ws = result.workspace
        ev = ws.evaluation
        assert ev is not None
        evaluated = result.judgements.evaluated
        for name in result.retrievers:
            system = system_from_workspace(ws, name)
            judged, thin = result.judged.get(name, (0.0, False))
            means = {
                m.name: float(system.values(m, evaluated).mean()) if evaluated else 0.0
                for m in comparing.measures
            }
            against = comparing.retriever(result, name)
            if against is None:
                rows += [
                    ExperimentRow(
                        result.name,
                        name,
                        m.name,
                        means[m.name],
                        len(evaluated),
                        judged=judged,
                        thin=thin,
                    )
                    for m in comparing.measures
                ]
                continue
            before = system_from_workspace(comparing.base.workspace, against)
            # The same lists judged the same way (bm25 when only windows change) are no test: left
            # out of the correction, which would otherwise grow with comparisons that cannot differ.
            same = all(
                list(before.ranked(q)) == list(system.ranked(q))
                and dict(before.gains(q)) == dict(system.gains(q))
                for q in {*before.question_ids, *system.question_ids}
            )
            comparison = comparing.compare(before, system)
            for m, compared in zip(comparing.measures, comparison.metrics, strict=True):
                rows.append(
                    ExperimentRow(
                        result.name,
                        name,
                        m.name,
                        means[m.name],
                        len(evaluated),
                        baseline_retriever=against,
                        compared=len(comparison.questions),
                        baseline_mean=compared.mean_a,
                        change=compared.mean_difference,
                        ci_low=compared.ci_low,
                        ci_high=compared.ci_high,
                        p_value=None if same else compared.p_value,
                        same_lists=same,
                        judged=judged,
                        thin=thin,
                    )
                )
    return rows


def _subset(system: System, questions: set[str]) -> System:
    """A system restricted to some questions."""
    kept = [q for q in system.question_ids if q in questions]
    averaged = None if system.averaged is None else system.averaged & questions
    return replace(system, question_ids=kept, averaged=averaged)


def _tail_means(
    results: Sequence[VariantResult], comparing: _Comparing
) -> dict[str, dict[str, dict[str, dict[str, Any]]]]:
    """Per variant and retriever, each measure over the questions whose evidence lies wholly in a
    cut-off tail: the mean, and the paired change against the baseline on those questions."""
    out: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
    for result in results:
        questions = result.judgements.tail_questions
        if not questions:
            continue
        chosen = set(questions)
        out[result.name] = {}
        for name in result.retrievers:
            system = system_from_workspace(result.workspace, name)
            against = comparing.retriever(result, name)
            cells: dict[str, dict[str, Any]] = {
                m.name: {
                    "mean": float(system.values(m, questions).mean()),
                    "change": None,
                    "ci95": None,
                    "p_value": None,
                }
                for m in comparing.measures
            }
            if against is not None:
                comparison = comparing.compare(
                    _subset(system_from_workspace(comparing.base.workspace, against), chosen),
                    _subset(system, chosen),
                )
                for compared in comparison.metrics:
                    cells[compared.measure].update(
                        change=compared.mean_difference,
                        ci95=[compared.ci_low, compared.ci_high],
                        p_value=compared.p_value,
                    )
            out[result.name][name] = cells
    return out
