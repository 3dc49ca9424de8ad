"""``ragtui experiment``: every variant of the project file evaluated, one table of variant x retriever x
measure against the baseline variant, with significance corrected for the number of comparisons.

How it is computed:

* Each variant is the settings every command would run with, with its ``[variants.NAME]`` keys set
  (``ragtui.core.variants``). Variants that share the data and the chunking read and chunk once,
  loaded models are reused, and embeddings and reranker scores come from their caches.
* Relevance is recomputed per variant: the evidence rule on the variant's own chunks (or the BEIR
  qrels), overridden by the hand grades that still apply (the labelled chunk id exists and its
  text is unchanged). Each variant says how many hand grades apply and how many are stale, and a
  variant judged on other hand grades than the baseline, or evaluating other questions, is flagged.
* A retriever of a variant is compared with the same retriever of the baseline (a reranked list the
  baseline lacks, ``hybrid+rerank``, with the baseline's first stage, ``hybrid``), question by
  question, on the questions both evaluate (paired by question id): the mean difference (variant -
  baseline), the two-sided paired randomisation test and the bootstrap 95 % interval
  (``ragtui.core.metrics.significance``).
* The p-values of the whole table are adjusted together, by Holm's method by default: the table is
  read as many yes/no answers at once ("is 256 better than 512 on MRR?"), and Holm keeps the chance
  that any of them is a false "significant" at most alpha (0.05) whatever the dependence between
  the tests, which matters here because every test reuses the same questions and the measures are
  strongly correlated. Benjamini-Hochberg (``--correction bh``) controls the expected share of
  false ones among the significant instead: more power, for screening many variants.
* Judged@k (the share of the top k that carries any grade) flags means that rest on thin
  judgements (below 0.5), per variant and retriever.
* Each variant is saved as a run (``ragtui diff A B`` compares two of them question by question).
  A variant named like a saved run is refused before anything is loaded unless ``replace_runs`` is given
  (``--replace``); a run replaced is kept as a timestamped backup beside the new one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ragtui.core.analysis.diagnostics import diagnose
from ragtui.core.analysis.runs import refuse_taken, save_folder, write_run
from ragtui.core.data.golden import evidence_spans
from ragtui.core.labelling.judging import THIN_JUDGED, judged_summaries
from ragtui.core.metrics.measures import Measure, System, parse_measures, system_from_workspace
from ragtui.core.metrics.significance import (
    CORRECTIONS,
    DEFAULT_SEED,
    N_PERMUTATIONS,
    N_RESAMPLES,
    adjust_p_values,
    compare_systems,
)
from ragtui.core.report import Column, Note, Report, Row, Section, Tone, fmt, signed, table
from ragtui.core.retrieval.embeddings import Progress
from ragtui.core.retrieval.rerank import RERANK_SUFFIX
from ragtui.core.settings import Settings, Variant
from ragtui.core.variants import baseline_of, variant_settings
from ragtui.core.workspace import SOURCE_EVIDENCE, SOURCE_QRELS, Shared, Workspace

__all__ = [
    "DEFAULT_CORRECTION",
    "ExperimentResult",
    "ExperimentRow",
    "Judgements",
    "VariantResult",
    "default_experiment_measures",
    "experiment_report",
    "run_experiment",
]

#: The correction applied unless another is asked for (see the module docstring for why).
DEFAULT_CORRECTION = "holm"
#: Adjusted p-values at or below this are significant.
ALPHA = 0.05

#: Called with a line saying what the experiment does now (which variant, which stage).
Status = Callable[[str], None]
#: Makes the progress callback of one stage (``embedding c256``).
ProgressFor = Callable[[str], Progress]


def default_experiment_measures(k: int) -> list[Measure]:
    """recall@k, MRR (over the whole run) and nDCG@k: precision@k adds little when most questions
    have one relevant chunk (it is recall@k / k there)."""
    return [Measure("R", k), Measure("RR"), Measure("nDCG", k)]


@dataclass(frozen=True)
class Judgements:
    """How one variant's relevance was decided: hand grades that apply and stale ones, questions evaluated."""

    hand_applied: int
    hand_stale: int
    stale_reasons: dict[str, int]
    """Reason -> stale hand grades (a chunk id that is not in this chunking, a changed text)."""
    evaluated: list[str]
    skipped: list[str]
    applied_pairs: frozenset[tuple[str, str, str]]
    """(question, chunk id, chunk text hash) of every hand grade that applies."""
    tail_questions: list[str]
    """Evaluated questions whose evidence lies wholly in a cut-off tail in every relevant chunk
    (``tail_questions``): without windows the vector retriever reads none of it."""


@dataclass
class VariantResult:
    """One variant evaluated: its settings, its loaded workspace, how it was judged, and its saved run."""

    variant: Variant
    settings: Settings
    workspace: Workspace
    judgements: Judgements
    judged: dict[str, tuple[float, bool]]
    """Retriever -> (mean Judged@k, thin)."""
    run_path: Path | None = None
    run_backup: Path | None = None
    """Where the saved run this variant's run replaced is kept (``--replace``), or None."""
    judged_like_baseline: bool = True
    """Same questions evaluated and the same hand grades applied as the baseline."""

    @property
    def name(self) -> str:
        """The variant's name."""
        return self.variant.name

    @property
    def retrievers(self) -> list[str]:
        """The variant's retrievers, in display order."""
        return list(self.workspace.retrievers)


@dataclass(frozen=True)
class ExperimentRow:
    """One variant x retriever x measure: its mean, and the paired comparison with the baseline."""

    variant: str
    retriever: str
    measure: str
    mean: float
    questions: int
    """Questions the mean is over (the variant's evaluated ones)."""
    baseline_retriever: str | None = None
    compared: int = 0
    """Questions both sides evaluate: the ones the change, the interval and the p-value are over."""
    baseline_mean: float | None = None
    """The baseline's mean over the compared questions."""
    change: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    p_value: float | None = None
    p_adjusted: float | None = None
    same_lists: bool = False
    """Every question has the same ranked list and grades as in the baseline: nothing to test."""
    judged: float = 0.0
    thin: bool = False

    @property
    def significant(self) -> bool:
        """The adjusted p-value is at most alpha (0.05)."""
        return self.p_adjusted is not None and self.p_adjusted <= ALPHA

    def as_dict(self) -> dict[str, Any]:
        """The row for JSON."""
        return {
            "variant": self.variant,
            "retriever": self.retriever,
            "measure": self.measure,
            "mean": self.mean,
            "questions": self.questions,
            "baseline_retriever": self.baseline_retriever,
            "compared": self.compared,
            "baseline_mean": self.baseline_mean,
            "change": self.change,
            "ci95": [self.ci_low, self.ci_high] if self.ci_low is not None else None,
            "p_value": self.p_value,
            "p_adjusted": self.p_adjusted,
            "significant": self.significant,
            "same_lists": self.same_lists,
            "judged": self.judged,
            "thinly_judged": self.thin,
        }


@dataclass
class ExperimentResult:
    """Every variant evaluated and the table against the baseline."""

    baseline: str
    correction: str
    measures: list[Measure]
    variants: list[VariantResult]
    rows: list[ExperimentRow]
    k: int
    seed: int = DEFAULT_SEED
    n_permutations: int = N_PERMUTATIONS
    n_resamples: int = N_RESAMPLES
    tail: dict[str, dict[str, dict[str, dict[str, Any]]]] = field(default_factory=dict)
    """Variant -> retriever -> measure -> ``mean``, ``change``, ``ci95``, ``p_value`` over the
    variant's cut-off-tail questions (the change against the baseline, on those questions)."""

    def variant(self, name: str) -> VariantResult:
        """The result of one variant (for the app: its ``settings`` and loaded ``workspace``)."""
        for result in self.variants:
            if result.name == name:
                return result
        raise KeyError(name)

    def report(self) -> Report:
        """The experiment as a report (the CLI prints it, the app draws it)."""
        return experiment_report(self)

    def as_json(self) -> dict[str, Any]:
        """The same table as JSON (every key in docs/json.md)."""
        return {
            "baseline": self.baseline,
            "correction": self.correction,
            "alpha": ALPHA,
            "k": self.k,
            "measures": [m.name for m in self.measures],
            "permutations": self.n_permutations,
            "resamples": self.n_resamples,
            "seed": self.seed,
            "variants": {
                v.name: {
                    "settings": {
                        f.replace("_", "-"): _json_value(x) for f, x in v.variant.overrides
                    },
                    "chunks": len(v.workspace.chunks),
                    "questions": len(v.judgements.evaluated),
                    "skipped": v.judgements.skipped,
                    "hand_grades": {
                        "apply": v.judgements.hand_applied,
                        "stale": v.judgements.hand_stale,
                        "stale_reasons": v.judgements.stale_reasons,
                    },
                    "judged_like_baseline": v.judged_like_baseline,
                    "tail_questions": v.judgements.tail_questions,
                    "windows": _windows_text(v.workspace),
                    "retrievers": v.retrievers,
                    "rerank_latency": v.workspace.rerank.latency.as_dict()
                    if v.workspace.rerank is not None
                    else None,
                    "run": str(v.run_path) if v.run_path is not None else None,
                    "run_backup": str(v.run_backup) if v.run_backup is not None else None,
                }
                for v in self.variants
            },
            "rows": [r.as_dict() for r in self.rows],
            "tail": self.tail,
        }


def _json_value(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return [_json_value(v) for v in value]
    return value


def _windows_text(ws: Workspace) -> str:
    """``max, 254 tokens, stride 127`` or ``off``."""
    plan = ws.window_plan
    if plan is None:
        return "off"
    return f"{plan.mode}, {plan.length} tokens, stride {plan.stride}"


# ---- running ----------------------------------------------------------------------------------------


def _judgements(ws: Workspace) -> Judgements:
    """What the variant's relevance rests on."""
    applied: set[tuple[str, str, str]] = set()
    reasons: dict[str, int] = {}
    for label in ws.labels.current.values():
        if label.grade is None:
            continue
        reason = ws.label_status(label)
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
        chunks = ws.base_grades.get(q.id, {}) if ws.base_source == SOURCE_EVIDENCE else {}
        if not chunks:
            continue
        if all(
            (q.id, cid) in wholly
            and all(
                e in wholly[(q.id, cid)]
                for e in q.evidence
                if evidence_spans(ws.chunk_by_id[cid].text, [e])
            )
            for cid in chunks
        ):
            out.append(q.id)
    return out


def _baseline_retriever(name: str, baseline: Sequence[str]) -> str | None:
    """The baseline retriever a variant's retriever is compared with, or None."""
    if name in baseline:
        return name
    first_stage = name.removesuffix(RERANK_SUFFIX)
    if first_stage != name and first_stage in baseline:
        return first_stage
    return None


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
    rows = _rows(results, base, chosen, seed, n_permutations, n_resamples)
    adjusted = adjust_p_values([r.p_value for r in rows if r.p_value is not None], correction)
    it = iter(adjusted)
    rows = [r if r.p_value is None else replace(r, p_adjusted=next(it)) for r in rows]
    tail = _tail_means(results, base, chosen, seed, n_permutations, n_resamples)
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


def _rows(
    results: Sequence[VariantResult],
    base: VariantResult,
    measures: Sequence[Measure],
    seed: int,
    n_permutations: int,
    n_resamples: int,
) -> list[ExperimentRow]:
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
                for m in measures
            }
            against = _baseline_retriever(name, base.retrievers) if result is not base else None
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
                    for m in measures
                ]
                continue
            before = system_from_workspace(base.workspace, against)
            # The same lists judged the same way (bm25 when only windows change) are no test: left
            # out of the correction, which would otherwise grow with comparisons that cannot differ.
            same = all(
                list(before.ranked(q)) == list(system.ranked(q))
                and dict(before.gains(q)) == dict(system.gains(q))
                for q in {*before.question_ids, *system.question_ids}
            )
            comparison = compare_systems(
                before,
                system,
                measures,
                n_permutations=n_permutations,
                n_resamples=n_resamples,
                seed=seed,
            )
            for m, compared in zip(measures, comparison.metrics, strict=True):
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
    return System(system.label, system.rankings, system.grades, kept, system.threshold)


def _tail_means(
    results: Sequence[VariantResult],
    base: VariantResult,
    measures: Sequence[Measure],
    seed: int,
    n_permutations: int,
    n_resamples: int,
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
            against = _baseline_retriever(name, base.retrievers) if result is not base else None
            cells: dict[str, dict[str, Any]] = {
                m.name: {
                    "mean": float(system.values(m, questions).mean()),
                    "change": None,
                    "ci95": None,
                    "p_value": None,
                }
                for m in measures
            }
            if against is not None:
                comparison = compare_systems(
                    _subset(system_from_workspace(base.workspace, against), chosen),
                    _subset(system, chosen),
                    measures,
                    n_permutations=n_permutations,
                    n_resamples=n_resamples,
                    seed=seed,
                )
                for compared in comparison.metrics:
                    cells[compared.measure].update(
                        change=compared.mean_difference,
                        ci95=[compared.ci_low, compared.ci_high],
                        p_value=compared.p_value,
                    )
            out[result.name][name] = cells
    return out


# ---- the report -------------------------------------------------------------------------------------


def _p(value: float | None) -> str:
    if value is None:
        return ""
    return "<0.0001" if value < 0.0001 else f"{value:.4f}"


def _judged_by(result: ExperimentResult) -> str:
    """What the variants' relevance starts from: the evidence rule on each variant's chunks, or
    the BEIR qrels (which judge documents, so they do not depend on the chunking)."""
    ws = result.variant(result.baseline).workspace
    if ws.base_source != SOURCE_QRELS:
        return "the evidence rule on its own chunks"
    beir = ws.settings.beir
    where = f" ({Path(beir) / 'qrels' / 'test.tsv'})" if beir is not None else ""
    return f"the BEIR qrels{where}"


def experiment_report(result: ExperimentResult) -> Report:
    """Three sections: the variants and how each was judged, the table, and the cut-off-tail questions."""
    method, controls = CORRECTIONS[result.correction][1].split(": ")
    short = {"holm": "Holm", "bh": "BH"}.get(result.correction, method)
    variants_rows = []
    for v in result.variants:
        j = v.judgements
        changed = ", ".join(f"{f.replace('_', '-')} {_shown(x)}" for f, x in v.variant.overrides)
        hand = f"{j.hand_applied} apply, {j.hand_stale} stale"
        variants_rows.append(
            Row(
                (
                    v.name + (" (baseline)" if v.name == result.baseline else ""),
                    changed or "-",
                    str(len(v.workspace.chunks)),
                    _windows_text(v.workspace),
                    str(len(j.evaluated)),
                    hand,
                    "yes" if v.judged_like_baseline else "no",
                ),
                "" if v.judged_like_baseline else "warning",
            )
        )
    notes: list[Note] = []
    if all(
        v.judgements.hand_applied == 0 and v.judgements.hand_stale == 0 for v in result.variants
    ):
        notes.append(
            Note(f"every variant is judged by {_judged_by(result)} alone (no hand grades)")
        )
    else:
        notes.append(
            Note(
                f"relevance per variant: {_judged_by(result)}, overridden by the hand grades that "
                "still apply (same chunk id, unchanged text); stale ones are kept, not applied"
            )
        )
    for v in result.variants:
        if v.judged_like_baseline:
            continue
        base = result.variant(result.baseline).judgements
        j = v.judgements
        parts = []
        if j.applied_pairs != base.applied_pairs:
            parts.append(f"{j.hand_applied} hand grades apply (baseline {base.hand_applied})")
        if j.evaluated != base.evaluated:
            only_base = sorted(set(base.evaluated) - set(j.evaluated))
            only_here = sorted(set(j.evaluated) - set(base.evaluated))
            if only_base:
                parts.append(f"not evaluated here: {', '.join(only_base)}")
            if only_here:
                parts.append(f"not evaluated in the baseline: {', '.join(only_here)}")
        notes.append(
            Note(f"{v.name} is judged differently from the baseline: {'; '.join(parts)}", "warning")
        )
        for reason, count in sorted(j.stale_reasons.items()):
            notes.append(
                Note(f"  {v.name}: {count} stale hand grade{'s' if count != 1 else ''}: {reason}")
            )
    latency = [
        f"{v.name} {v.workspace.rerank.name}: {v.workspace.rerank.latency.describe()}"
        for v in result.variants
        if v.workspace.rerank is not None
    ]
    notes += [Note(f"reranker latency, {line}") for line in latency]
    variants_section = table(
        (
            "variant",
            "settings",
            "chunks",
            "windows",
            "questions",
            "hand grades",
            "judged like baseline",
        ),
        variants_rows,
        heading="variants",
        notes=notes,
        right=(2, 4),
    )

    k = result.k
    columns = (
        Column("variant"),
        Column("retriever"),
        Column("measure"),
        Column("mean", "right"),
        Column("change", "right"),
        Column("95% CI", "right"),
        Column("p", "right"),
        Column(f"p {short}", "right"),
        Column("n", "right"),
        Column(f"judged@{k}", "right"),
    )
    rows = []
    previous: tuple[str, str] | None = None
    for r in result.rows:
        head = (r.variant, r.retriever)
        shown_head = ("", "") if head == previous else head
        previous = head
        against = ""
        if r.baseline_retriever is not None and r.baseline_retriever != r.retriever:
            against = f" (vs {r.baseline_retriever})"
        change = signed(r.change) + ("*" if r.significant else "") if r.change is not None else ""
        tone: Tone = ""
        if r.significant and r.change is not None:
            tone = "good" if r.change > 0 else "bad"
        rows.append(
            Row(
                (
                    shown_head[0],
                    shown_head[1] + (against if shown_head[1] else ""),
                    r.measure,
                    fmt(r.mean),
                    change,
                    f"[{signed(r.ci_low)}, {signed(r.ci_high)}]"
                    if r.ci_low is not None and r.ci_high is not None
                    else "",
                    "same lists" if r.same_lists else _p(r.p_value),
                    _p(r.p_adjusted),
                    str(r.compared if r.change is not None else r.questions),
                    fmt(r.judged) + (" thin" if r.thin else ""),
                ),
                tone,
            )
        )
    table_notes = [
        Note(
            f"change = variant - baseline variant {result.baseline!r} (same retriever; a reranked list "
            "the baseline lacks against its first stage), question by question on the n questions both "
            "evaluate; mean is over the variant's own evaluated questions"
        ),
        Note(
            f"p: paired randomisation test ({result.n_permutations:,} sign flips, exact when fewer patterns); "
            f"95% CI: bootstrap ({result.n_resamples:,} resamples); seed {result.seed}"
        ),
        Note(
            f"p {short}: adjusted for the {sum(1 for r in result.rows if r.p_value is not None)} "
            f"comparisons of this table ({method}, {controls}); * marks adjusted p <= {ALPHA}; "
            "same lists: every question ranked and judged as in the baseline, not tested"
        ),
        Note(
            f"judged@{k}: share of the top {k} with any grade; thin = below {THIN_JUDGED}: "
            "the mean rests mostly on chunks nobody judged"
        ),
    ]
    results_section = table(
        columns, rows, heading=f"variant x retriever x measure (k={k})", notes=table_notes
    )
    sections = [variants_section, results_section]
    if result.tail:
        tail_rows = []
        for name, by_retriever in result.tail.items():
            count = len(result.variant(name).judgements.tail_questions)
            first = True
            for retriever, cells in by_retriever.items():
                tail_rows.append(
                    (
                        name if first else "",
                        str(count) if first else "",
                        retriever,
                        *(_tail_cell(cells[m.name]) for m in result.measures),
                    )
                )
                first = False
        sections.append(
            table(
                ("variant", "questions", "retriever", *(m.name for m in result.measures)),
                tail_rows,
                heading="questions whose evidence lies wholly in a cut-off tail (in every relevant chunk: without windows the model reads none of it)",
                right=(1, *range(3, 3 + len(result.measures))),
                notes=(
                    (
                        "each cell: the mean on these questions, then the change against the baseline "
                        "on the same questions and its randomisation p, not corrected: the subset "
                        "windows are meant for, chosen before the run, read on its own"
                    ),
                ),
            )
        )
    saved = [v for v in result.variants if v.run_path is not None]
    if saved:
        sections.append(
            Section(
                notes=(
                    Note(
                        f"saved runs: {', '.join(v.name for v in saved)} in {saved[0].run_path.parent if saved[0].run_path else ''} "
                        f"(ragtui diff {result.baseline} {next((v.name for v in saved if v.name != result.baseline), result.baseline)})"
                    ),
                    *(
                        Note(f"{v.name} replaced a saved run, kept as {v.run_backup}", "warning")
                        for v in saved
                        if v.run_backup is not None
                    ),
                )
            )
        )
    return Report(
        f"ragtui experiment: {len(result.variants)} variants against {result.baseline!r}",
        tuple(sections),
    )


def _tail_cell(cell: dict[str, Any]) -> str:
    """``0.960 +0.300 p 0.0089`` (the mean alone for the baseline)."""
    text = fmt(cell["mean"])
    if cell["change"] is None:
        return text
    return f"{text} {signed(cell['change'])} p {_p(cell['p_value'])}"


def _shown(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ",".join(_shown(v) for v in value)
    return str(value)
