"""Each model judge against each person and against the evidence rule (or the qrels).

A judge's verdicts are journal lines of the annotator ``model:NAME``. Against a person they are
compared on the pairs both graded, grade against grade: Cohen's kappa on the grades (unweighted:
any two different grades disagree) and the quadratic-weighted kappa (0 against 2 is a bigger
disagreement than 1 against 2). Against the rule they are compared on every pair the judge graded,
relevant against relevant (grade >= ``--threshold`` for the judge; an evidence match, or a qrels
grade >= threshold, for the rule): the binary kappa, and the weighted kappa of the judge's grade
against the rule's (the evidence rule's grade is 2 on a match; a pair it says nothing of is 0).

Only labels that apply count: a verdict (or a person's grade) on a chunk whose text changed since,
or on a chunk or question that is gone, is left out; the judge's such verdicts are counted
(``stale``). Every comparison is given over all its pairs and per slice of the golden set, with
its confusion matrix and the pairs the two disagree on most (the largest grade difference first,
with the judge's reason).

A judge whose verdicts came from a model a retriever also uses (the embedding model behind
``vector`` and ``hybrid``, the reranker's) favours that retriever: ``JudgeAgreement.shares`` names
them, and every front end marks it (``shares_text``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragtui.core.analysis.slices import slice_names
from ragtui.core.judges.build import judge_shares
from ragtui.core.labelling.agreement import cohen_kappa, weighted_kappa
from ragtui.core.labelling.labels import Label, PairLabels, judge_annotator
from ragtui.core.workspace import Workspace

__all__ = [
    "ComparedPair",
    "Comparison",
    "JudgeAgreement",
    "Tally",
    "agreement_json",
    "disagreeing_questions",
    "judge_agreements",
    "judge_names",
    "relevant_word",
]


@dataclass(frozen=True, slots=True)
class ComparedPair:
    """One pair both sides graded: the judge's grade, the other side's and the judge's reason.

    ``other`` is the person's grade, or the rule's (its evidence or qrels grade, 0 where it says
    nothing); ``other_relevant`` is what the rule says at the threshold (for a person: their grade
    at the threshold).
    """

    question: str
    chunk: str
    judge: int
    other: int
    other_relevant: bool
    reason: str

    @property
    def gap(self) -> int:
        """How far apart the two grades are."""
        return abs(self.judge - self.other)


@dataclass(frozen=True, slots=True)
class Tally:
    """A judge against one side over some pairs: counts, kappas and the confusion matrix.

    ``table[(judge grade, other)]`` counts the pairs, ``other`` being the person's grade, or for
    the rule 1 (relevant) and 0 (not relevant). ``kappa`` is unweighted: on the grades against a
    person, binary (relevant or not) against the rule; ``weighted_kappa`` is quadratic on grades.
    ``observed`` is the share of pairs they agree on (the same grade; against the rule, the same
    relevant or not).
    """

    pairs: int
    kappa: float | None
    weighted_kappa: float | None
    observed: float
    table: dict[tuple[int, int], int]


def _tally(pairs: Sequence[ComparedPair], threshold: int, rule: bool) -> Tally:
    judge = [p.judge for p in pairs]
    other = [p.other for p in pairs]
    if rule:
        mine = [g >= threshold for g in judge]
        theirs = [p.other_relevant for p in pairs]
        kappa = cohen_kappa(mine, theirs)
        same = sum(1 for a, b in zip(mine, theirs, strict=True) if a == b)
        table = Counter((p.judge, int(p.other_relevant)) for p in pairs)
    else:
        kappa = cohen_kappa(judge, other)
        same = sum(1 for a, b in zip(judge, other, strict=True) if a == b)
        table = Counter((p.judge, p.other) for p in pairs)
    n = len(pairs)
    return Tally(
        pairs=n,
        kappa=kappa,
        weighted_kappa=weighted_kappa(judge, other),
        observed=same / n if n else 0.0,
        table=dict(table),
    )


@dataclass(frozen=True)
class Comparison:
    """A judge against one person, or against the rule: over all pairs, per slice, and where they differ.

    ``against`` is the person's name (``""`` for lines without one) or, for the rule, the rule's
    source (``evidence`` or ``qrels``). ``pairs`` are in golden-set order, then chunk order;
    ``disagreements`` most first (the largest grade difference, then golden-set order): against a
    person every pair with another grade, against the rule every pair they put on different sides
    of the threshold.
    """

    judge: str
    against: str
    rule: bool
    threshold: int
    pairs: tuple[ComparedPair, ...]
    overall: Tally
    slices: dict[str, Tally]
    disagreements: tuple[ComparedPair, ...]

    @property
    def name(self) -> str:
        """How the reports name the other side: the person (``(unnamed)``), or ``evidence rule`` / ``qrels``."""
        if self.rule:
            return "evidence rule" if self.against == "evidence" else self.against
        return self.against or "(unnamed)"

    @property
    def grades(self) -> list[int]:
        """The judge's grades the confusion matrix has a row for (0, 1, 2 and any other used)."""
        used = {g for g, _ in self.overall.table} | {0, 1, 2}
        if not self.rule:
            used |= {g for _, g in self.overall.table}
        return sorted(used)

    @property
    def columns(self) -> list[int]:
        """The other side's categories: the person's grades, or 1 and 0 (relevant, not) for the rule."""
        return [1, 0] if self.rule else self.grades


@dataclass(frozen=True)
class JudgeAgreement:
    """One judge: its verdicts that apply, those left out, the models behind them, and its comparisons."""

    judge: str
    verdicts: int
    stale: int
    models: tuple[str, ...]
    #: The retrievers that use the judge's model (a judge favours its own retriever), and the
    #: model's name as the settings give it.
    shares: tuple[str, ...]
    shared_model: str
    rule: Comparison
    people: tuple[Comparison, ...]

    @property
    def shares_text(self) -> str | None:
        """``shares all-MiniLM-L6-v2 with vector, hybrid: it favours them``, or None."""
        if not self.shares:
            return None
        them = "it" if len(self.shares) == 1 else "them"
        return f"shares {self.shared_model} with {', '.join(self.shares)}: it favours {them}"

    @property
    def comparisons(self) -> tuple[Comparison, ...]:
        """Against the rule first, then each person."""
        return (self.rule, *self.people)


def relevant_word(comparison: Comparison, relevant: int) -> str:
    """A rule column's heading: ``evidence match`` / ``no evidence match``, or the qrels threshold."""
    if comparison.against == "evidence":
        return "evidence match" if relevant else "no evidence match"
    t = comparison.threshold
    return f"qrels >= {t}" if relevant else f"qrels < {t} or none"


# ---- reading the journal -------------------------------------------------------------------------


def judge_names(ws: Workspace) -> list[str]:
    """Every judge with a current verdict in the journal (stale or not), in the order they first appear."""
    first: dict[str, int] = {}
    for _, _, pair in ws.grades.labels.iter_pairs():
        for label in pair.annotators.values():
            if label.is_model and label.grade is not None:
                line = first.get(label.judge)
                if line is None or label.line < line:
                    first[label.judge] = label.line
    return sorted(first, key=lambda name: first[name])


def _ordered_pairs(ws: Workspace) -> list[tuple[str, str, PairLabels]]:
    """Every labelled pair of a known question and chunk, in golden-set then chunk order (the rest last)."""
    order = {q.id: i for i, q in enumerate(ws.questions)}
    rows = list(ws.grades.labels.iter_pairs())
    far = len(order) + len(ws.passages.order)
    rows.sort(key=lambda r: (order.get(r[0], far), ws.passages.order.get(r[1], far), r[0], r[1]))
    return rows


def _shared(ws: Workspace, models: Iterable[str]) -> tuple[tuple[str, ...], str]:
    """The retrievers that use one of the judge's models (``judge_shares``, as the estimates mark
    it), and that model's name as the settings give it.

    A verdict naming the folder the bundled model resolves to is the embedding model too
    (``judge_shares``).
    """
    settings = ws.settings
    found = {r for model in models for r in judge_shares(model, settings)}
    if not found:
        return (), ""
    retrievers = [*settings.retrievers, *(r for r in sorted(found) if r not in settings.retrievers)]
    on_embedding = any(not r.endswith("+rerank") for r in found)
    name = settings.model if on_embedding or not settings.rerank else settings.rerank
    return tuple(r for r in retrievers if r in found), name.rstrip("/").rsplit("/", 1)[-1]


def judge_agreements(ws: Workspace, judge: str | None = None) -> list[JudgeAgreement]:
    """Every judge (or only ``judge``) against the rule and each person who graded its pairs."""
    names = judge_names(ws) if judge is None else [judge]
    threshold = ws.settings.threshold
    question_slices = {q.id: q.slices for q in ws.questions}
    slices = slice_names(ws)
    out = []
    for name in names:
        annotator = judge_annotator(name)
        rule: list[ComparedPair] = []
        people: dict[str, list[ComparedPair]] = {}
        stale = 0
        models: dict[str, None] = {}
        for qid, cid, pair in _ordered_pairs(ws):
            verdict = pair.annotators.get(annotator)
            if verdict is None or verdict.grade is None:
                continue
            if ws.grades.label_status(verdict) is not None:
                stale += 1
                continue
            if verdict.model:
                models.setdefault(verdict.model)
            base = ws.grades.base.get(qid, {}).get(cid)
            rule_grade = base if base is not None else 0
            rule.append(
                ComparedPair(
                    qid,
                    cid,
                    verdict.grade,
                    rule_grade,
                    base is not None and base >= threshold,
                    verdict.reason,
                )
            )
            for person, grade in _people_grades(ws, pair).items():
                people.setdefault(person, []).append(
                    ComparedPair(qid, cid, verdict.grade, grade, grade >= threshold, verdict.reason)
                )
        shares, shared_model = _shared(ws, models)
        source = ws.data.base_source
        out.append(
            JudgeAgreement(
                judge=name,
                verdicts=len(rule),
                stale=stale,
                models=tuple(models),
                shares=shares,
                shared_model=shared_model,
                rule=_compare(name, source, True, threshold, rule, question_slices, slices),
                people=tuple(
                    _compare(name, person, False, threshold, pairs, question_slices, slices)
                    for person, pairs in sorted(people.items(), key=lambda kv: kv[0])
                ),
            )
        )
    return out


def _people_grades(ws: Workspace, pair: PairLabels) -> dict[str, int]:
    """Each person's current grade of a pair that applies (adjudications and model judges aside)."""

    def applies(label: Label) -> bool:
        return ws.grades.label_status(label) is None

    return pair.grades(applies)


def _differ(p: ComparedPair, rule: bool, threshold: int) -> bool:
    if rule:
        return (p.judge >= threshold) != p.other_relevant
    return p.judge != p.other


def _compare(
    judge: str,
    against: str,
    rule: bool,
    threshold: int,
    pairs: Sequence[ComparedPair],
    question_slices: Mapping[str, Sequence[str]],
    slices: Sequence[str],
) -> Comparison:
    per_slice = {}
    for name in slices:
        chosen = [p for p in pairs if name in question_slices.get(p.question, ())]
        if chosen:
            per_slice[name] = _tally(chosen, threshold, rule)
    ranked = sorted(
        (i for i, p in enumerate(pairs) if _differ(p, rule, threshold)),
        key=lambda i: (-pairs[i].gap, i),
    )
    return Comparison(
        judge=judge,
        against=against,
        rule=rule,
        threshold=threshold,
        pairs=tuple(pairs),
        overall=_tally(pairs, threshold, rule),
        slices=per_slice,
        disagreements=tuple(pairs[i] for i in ranked),
    )


def disagreeing_questions(
    ws: Workspace,
    judge: str | None = None,
    pooled: Callable[[str], Container[str]] | None = None,
) -> set[str]:
    """The questions with a pair where a judge (any, or ``judge``) and a person or the rule disagree
    (the pairs each comparison lists as disagreements); with ``pooled`` (a question's chunks that
    count), only those pairs."""
    threshold = ws.settings.threshold
    names = judge_names(ws) if judge is None else [judge]
    wanted = {judge_annotator(n) for n in names}
    out: set[str] = set()
    for qid, by_chunk in ws.grades.labels.pairs.items():
        if qid not in ws.questions.by_id:
            continue
        chunks = pooled(qid) if pooled is not None else None
        for cid, pair in by_chunk.items():
            if chunks is not None and cid not in chunks:
                continue
            people: dict[str, int] | None = None
            for annotator, verdict in pair.annotators.items():
                if annotator not in wanted or verdict.grade is None:
                    continue
                if ws.grades.label_status(verdict) is not None:
                    continue
                base = ws.grades.base.get(qid, {}).get(cid)
                if (verdict.grade >= threshold) != (base is not None and base >= threshold):
                    out.add(qid)
                    break
                if people is None:
                    people = _people_grades(ws, pair)
                if any(grade != verdict.grade for grade in people.values()):
                    out.add(qid)
                    break
            if qid in out:
                break
    return out


# ---- JSON ---------------------------------------------------------------------------------------


def _tally_json(comparison: Comparison, tally: Tally) -> dict[str, Any]:
    columns = comparison.columns
    keys = {
        c: ("relevant" if c else "not relevant") if comparison.rule else str(c) for c in columns
    }
    return {
        "pairs": tally.pairs,
        "kappa": tally.kappa,
        "weighted_kappa": tally.weighted_kappa,
        "agreement": tally.observed,
        "confusion": {
            str(g): {keys[c]: tally.table.get((g, c), 0) for c in columns}
            for g in comparison.grades
        },
    }


def _comparison_json(comparison: Comparison) -> dict[str, Any]:
    return {
        **_tally_json(comparison, comparison.overall),
        "slices": {name: _tally_json(comparison, t) for name, t in comparison.slices.items()},
        "disagreements": [
            {
                "question": p.question,
                "chunk": p.chunk,
                "judge": p.judge,
                "other": p.other,
                "other_relevant": p.other_relevant,
                "reason": p.reason,
            }
            for p in comparison.disagreements
        ],
    }


def agreement_json(ws: Workspace, agreements: Sequence[JudgeAgreement]) -> dict[str, Any]:
    """``ragtui agreement --json``: each judge against the rule and each person (docs/json.md)."""
    return {
        "threshold": ws.settings.threshold,
        "rule": ws.data.base_source,
        "judges": {
            a.judge: {
                "verdicts": a.verdicts,
                "stale": a.stale,
                "models": list(a.models),
                "shares_model_with": list(a.shares),
                "rule": _comparison_json(a.rule),
                "people": {c.against: _comparison_json(c) for c in a.people},
            }
            for a in agreements
        },
    }
