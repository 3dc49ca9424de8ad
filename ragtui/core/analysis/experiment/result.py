"""What an experiment returns: each variant evaluated (how it was judged, its saved run), one row per
variant x retriever x measure with its comparison against the baseline, and the two ways it is
shown, the JSON of ``ragtui experiment --json`` and the report both front ends draw."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragtui.core.metrics.measures import Measure
from ragtui.core.metrics.significance import (
    CORRECTIONS,
    DEFAULT_SEED,
    N_PERMUTATIONS,
    N_RESAMPLES,
)
from ragtui.core.report_model import Column, Note, Report, Row, Section, Tone, fmt, signed, table
from ragtui.core.settings import Settings, Variant
from ragtui.core.workspace import SOURCE_QRELS, Workspace
from ragtui.core.workspace.judging import THIN_JUDGED

__all__ = [
    "ALPHA",
    "ExperimentResult",
    "ExperimentRow",
    "Judgements",
    "VariantResult",
    "experiment_report",
]

#: Adjusted p-values at or below this are significant.
ALPHA = 0.05


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
                    "chunks": len(v.workspace.data.chunks),
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
                    "rerank_latency": v.workspace.ranked.rerank.latency.as_dict()
                    if v.workspace.ranked.rerank is not None
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
    plan = ws.ranked.window_plan
    if plan is None:
        return "off"
    return f"{plan.mode}, {plan.length} tokens, stride {plan.stride}"


# ---- the report -------------------------------------------------------------------------------------


def _p(value: float | None) -> str:
    if value is None:
        return ""
    return "<0.0001" if value < 0.0001 else f"{value:.4f}"


def _judged_by(result: ExperimentResult) -> str:
    """What the variants' relevance starts from: the evidence rule on each variant's chunks, or
    the BEIR qrels (which judge documents, so they do not depend on the chunking)."""
    ws = result.variant(result.baseline).workspace
    if ws.data.base_source != SOURCE_QRELS:
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
                    str(len(v.workspace.data.chunks)),
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
        f"{v.name} {v.workspace.ranked.rerank.name}: {v.workspace.ranked.rerank.latency.describe()}"
        for v in result.variants
        if v.workspace.ranked.rerank is not None
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
