"""Two runs compared question by question (``ragtui diff``): first relevant rank and nDCG@k in
each, the means, the settings that changed, what became of each cause of a miss; and a saved run
as the app's baseline (each question's nDCG@k now minus then)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragtui.core.analysis.runs.folder import pick_retriever
from ragtui.core.analysis.runs.saved import SavedRun, load_run
from ragtui.core.analysis.why import CAUSES
from ragtui.core.data.paths import safe_filename
from ragtui.core.metrics.formulas import first_relevant_rank
from ragtui.core.metrics.measures import Measure, System, relevant_set, same_unit
from ragtui.core.workspace import Workspace

__all__ = [
    "Baseline",
    "CauseChange",
    "QuestionChange",
    "RunDiff",
    "cause_changes",
    "diff_runs",
    "grades_comparable",
    "load_baseline",
    "settings_changes",
]

#: nDCG and RR changes smaller than this are no change.
TOLERANCE = 1e-12


@dataclass(frozen=True, slots=True)
class QuestionChange:
    """One question in both runs: first relevant rank and nDCG@k in A and in B."""

    question: str
    text: str
    rank_a: int | None
    rank_b: int | None
    ndcg_a: float
    ndcg_b: float
    #: The two runs judge this question with other grades (the same chunks, other hand grades).
    regraded: bool = False
    #: Both runs ranked the same ids in the same order.
    same_ranking: bool = False

    @property
    def ndcg_change(self) -> float:
        """nDCG@k in B minus nDCG@k in A."""
        return self.ndcg_b - self.ndcg_a

    @property
    def rr_change(self) -> float:
        """Reciprocal rank in B minus in A (a rank of None counts as RR 0)."""
        return (1.0 / self.rank_b if self.rank_b else 0.0) - (
            1.0 / self.rank_a if self.rank_a else 0.0
        )

    @property
    def direction(self) -> str:
        """``better``, ``worse`` or ``same``: by nDCG@k, then by the first relevant rank;
        ``regraded`` when the ranking is the same and only the grades that judge it changed the
        numbers (retrieval did not get better or worse)."""
        for change in (self.ndcg_change, self.rr_change):
            if abs(change) > TOLERANCE:
                if self.regraded and self.same_ranking:
                    return "regraded"
                return "better" if change > 0 else "worse"
        return "same"


@dataclass(frozen=True, slots=True)
class CauseChange:
    """One cause of a miss between two runs: of the questions it marked in A, those B no longer
    misses, those B misses for other causes only and those it still marks; and those only B marks."""

    cause: str
    became_hits: tuple[str, ...]
    other_causes: tuple[str, ...]
    still: tuple[str, ...]
    new: tuple[str, ...]


def cause_changes(
    a: Mapping[str, Sequence[str]], b: Mapping[str, Sequence[str]], questions: Sequence[str]
) -> list[CauseChange]:
    """For every cause, in the order of precedence, what became of its misses (questions in the
    order given)."""
    out = []
    for cause in CAUSES:
        had = [q for q in questions if cause in a.get(q, ())]
        has = [q for q in questions if cause in b.get(q, ())]
        out.append(
            CauseChange(
                cause,
                tuple(q for q in had if not b.get(q)),
                tuple(q for q in had if b.get(q) and cause not in b.get(q, ())),
                tuple(q for q in had if cause in b.get(q, ())),
                tuple(q for q in has if cause not in a.get(q, ())),
            )
        )
    return out


@dataclass(frozen=True)
class RunDiff:
    """Run B against run A for one retriever: every common question's change, worst first, and the means."""

    a: str
    b: str
    k: int
    changes: list[QuestionChange]
    only_a: list[str]
    only_b: list[str]
    means_a: dict[str, float]
    means_b: dict[str, float]
    settings_changed: list[tuple[str, Any, Any]]
    #: What became of each cause of a miss; None when a run was saved without causes or at another k.
    causes: list[CauseChange] | None = None
    #: Questions in both that the two runs judge with other grades (same chunks or documents,
    #: other hand grades), in golden order; empty when the grades cannot be compared (other chunks).
    regraded: list[str] = field(default_factory=list)
    #: The label journal differs between the runs (its hash in the manifests), whatever the chunks.
    labels_differ: bool = False
    #: Whether grades were compared question by question (same chunks, or both at document level).
    grades_compared: bool = True

    @property
    def better(self) -> list[QuestionChange]:
        """Questions that got better, best first."""
        return [c for c in reversed(self.changes) if c.direction == "better"]

    @property
    def worse(self) -> list[QuestionChange]:
        """Questions that got worse, worst first."""
        return [c for c in self.changes if c.direction == "worse"]

    @property
    def changed(self) -> list[QuestionChange]:
        """Questions that got better or worse, or whose numbers moved with their grades alone, worst first."""
        return [c for c in self.changes if c.direction != "same"]

    @property
    def regraded_only(self) -> list[QuestionChange]:
        """Questions ranked the same whose numbers changed with their grades alone, worst first."""
        return [c for c in self.changes if c.direction == "regraded"]

    @property
    def mean_change(self) -> dict[str, float]:
        """Mean of B minus mean of A, per measure."""
        return {m: self.means_b[m] - self.means_a[m] for m in self.means_a}


#: Manifest fields that do not describe a setting (a diff does not list them as changes).
_NOT_SETTINGS = {"created", "external_runs"}


def grades_comparable(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two runs' grades can be compared question by question: both at document level, or
    the same chunks (the manifests' chunk hash; runs saved without it are taken as comparable)."""
    if a.get("level") == b.get("level") == "document":
        return True
    return a.get("level") == b.get("level") and a.get("chunks_sha256") == b.get("chunks_sha256")


def settings_changes(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """(field, value in A, value in B) for every manifest field that differs, dates left out."""
    keys = [k for k in a if k not in _NOT_SETTINGS] + [
        k for k in b if k not in a and k not in _NOT_SETTINGS
    ]
    return [(k, a.get(k), b.get(k)) for k in keys if a.get(k) != b.get(k)]


def diff_runs(
    a: System,
    b: System,
    k: int,
    *,
    texts: Mapping[str, str] | None = None,
    manifests: tuple[Mapping[str, Any], Mapping[str, Any]] | None = None,
    causes: tuple[Mapping[str, Sequence[str]], Mapping[str, Sequence[str]]] | None = None,
) -> RunDiff:
    """Every question both systems evaluate, sorted worst first (nDCG@k change, then RR change, then
    golden order); with ``causes`` (each run's causes per question), what became of each cause.
    Two runs of different units are refused (``same_unit``)."""
    same_unit(a, b)
    evaluated_b = set(b.evaluated())
    common = [q for q in a.evaluated() if q in evaluated_b]
    only_a = [q for q in a.evaluated() if q not in evaluated_b]
    only_b = [q for q in b.evaluated() if q not in set(common)]
    ndcg = Measure("nDCG", k)
    ndcg_a, ndcg_b = a.values(ndcg, common), b.values(ndcg, common)
    compared = manifests is None or grades_comparable(*manifests)
    changes = []
    for i, q in enumerate(common):
        changes.append(
            QuestionChange(
                question=q,
                text=(texts or {}).get(q, ""),
                rank_a=first_relevant_rank(a.ranked(q), relevant_set(a.gains(q), a.threshold)),
                rank_b=first_relevant_rank(b.ranked(q), relevant_set(b.gains(q), b.threshold)),
                ndcg_a=float(ndcg_a[i]),
                ndcg_b=float(ndcg_b[i]),
                regraded=compared and dict(a.gains(q)) != dict(b.gains(q)),
                same_ranking=list(a.ranked(q)) == list(b.ranked(q)),
            )
        )
    position = {q: i for i, q in enumerate(common)}
    changes.sort(key=lambda c: (c.ndcg_change, c.rr_change, position[c.question]))
    measures: Sequence[Measure] = (Measure("R", k), Measure("RR"), ndcg)
    means_a = {m.name: float(a.values(m, common).mean()) if common else 0.0 for m in measures}
    means_b = {m.name: float(b.values(m, common).mean()) if common else 0.0 for m in measures}
    changed = settings_changes(*manifests) if manifests is not None else []
    moved = cause_changes(causes[0], causes[1], common) if causes is not None else None
    labels = manifests is not None and manifests[0].get("labels_sha256") != manifests[1].get(
        "labels_sha256"
    )
    regraded = [
        c.question for c in sorted(changes, key=lambda c: position[c.question]) if c.regraded
    ]
    return RunDiff(
        a.label,
        b.label,
        k,
        changes,
        only_a,
        only_b,
        means_a,
        means_b,
        changed,
        moved,
        regraded=regraded,
        labels_differ=labels,
        grades_compared=compared,
    )


@dataclass(frozen=True)
class Baseline:
    """A saved run chosen as baseline: each question's nDCG@k then, for one retriever, at every k asked."""

    name: str
    run: SavedRun
    retriever: str
    values_at: dict[int, dict[str, float]] = field(default_factory=dict)
    """nDCG@k of every question the run evaluated, by k (filled by ``with_k``)."""

    def with_k(self, k: int) -> Baseline:
        """The baseline with its values at ``k`` computed (itself when they are there already)."""
        if k in self.values_at:
            return self
        system = self.run.system(self.retriever)
        evaluated = system.evaluated()
        array = system.values(Measure("nDCG", k), evaluated)
        values = {q: float(v) for q, v in zip(evaluated, array, strict=True)}
        return Baseline(self.name, self.run, self.retriever, {**self.values_at, k: values})

    def deltas(self, ws: Workspace) -> dict[str, float]:
        """nDCG@k now minus in the baseline, for the questions both evaluate (k as in ``ws``)."""
        ev = ws.evaluation
        if ev is None or self.retriever not in ev.per_question or ev.k not in self.values_at:
            return {}
        then = self.values_at[ev.k]
        now = ev.per_question[self.retriever]
        return {q: now[q].ndcg - then[q] for q in ev.evaluated if q in then}


def load_baseline(folder: Path, name: str, retriever: str | None, k: int) -> Baseline:
    """Read saved run ``name`` from ``folder`` as a baseline for ``retriever`` (default: the run's
    hybrid, else its first retriever), with its nDCG@k values; InputError when it cannot be read."""
    run = load_run(folder / f"{safe_filename(name)}.json")
    chosen = pick_retriever(run, retriever)
    if chosen not in run.rankings and run.rankings:
        chosen = next(iter(run.rankings))
    return Baseline(name, run, chosen).with_k(k)
