"""Agreement: the evidence rule against the hand grades, and one annotator against another.

Cohen's kappa = (p_o - p_e) / (1 - p_e), with p_o the share of items both raters put in the same
category and p_e = sum over categories of (share rater A used it) x (share rater B used it)
(Cohen 1960; the same value as ``sklearn.metrics.cohen_kappa_score``). Kappa is undefined (None)
when p_e = 1, i.e. both raters used one and the same category for every item; ``kappa_text``
words it the same way everywhere.

The rule-versus-hand kappa is binary: the rule says "relevant" when the chunk matches the evidence
(or, for BEIR, when its qrels grade is >= threshold); a person says "relevant" when the hand grade
is >= threshold. Between two annotators both the binary kappa and a weighted kappa over the grades
themselves (quadratic weights by default, as sklearn's ``weights="quadratic"``) are given, since
grades are ordinal: 0 against 2 is a bigger disagreement than 1 against 2.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from ragtui.core.labelling.journal import Label

Weights = Literal["linear", "quadratic"]


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """Cohen's kappa of two raters' categories for the same items: (p_o - p_e) / (1 - p_e); None when p_e = 1 or no items."""
    if len(a) != len(b):
        raise ValueError("both raters must rate the same items")
    n = len(a)
    if n == 0:
        return None
    observed = sum(1 for x, y in zip(a, b, strict=True) if x == y) / n
    count_a, count_b = Counter(a), Counter(b)
    expected = sum(count_a[c] * count_b[c] for c in count_a) / (n * n)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1.0 - expected)


def kappa_text(value: float | None) -> str:
    """A kappa as every report prints it: three decimals, or why it is undefined."""
    return "undefined (a single category on every pair)" if value is None else f"{value:.3f}"


def weighted_kappa(
    a: Sequence[int], b: Sequence[int], weights: Weights = "quadratic"
) -> float | None:
    """Weighted kappa of ordinal grades: 1 - sum(w * observed) / sum(w * expected), w = |i - j| (linear) or (i - j)^2 (quadratic).

    The categories are the grades either rater used; None when there are no items or the
    expected disagreement is 0 (both raters used a single grade).
    """
    if len(a) != len(b):
        raise ValueError("both raters must rate the same items")
    n = len(a)
    if n == 0:
        return None
    if weights not in ("linear", "quadratic"):
        raise ValueError(f"weights must be 'linear' or 'quadratic', got {weights!r}")
    categories = sorted(set(a) | set(b))
    pos = {c: i for i, c in enumerate(categories)}

    def weight(x: int, y: int) -> float:
        d = abs(pos[x] - pos[y])
        return float(d if weights == "linear" else d * d)

    observed = sum(weight(x, y) for x, y in zip(a, b, strict=True)) / n
    count_a, count_b = Counter(a), Counter(b)
    expected = sum(count_a[x] * count_b[y] * weight(x, y) for x in count_a for y in count_b) / (
        n * n
    )
    if expected == 0.0:
        return None
    return 1.0 - observed / expected


# ---- the evidence rule against the hand grades -------------------------------------------------


@dataclass(frozen=True, slots=True)
class Disagreement:
    """A pair where the rule and the person differ: the hand grade, and whether the chunk matches the evidence.

    ``annotator`` wrote the grade; an ``adjudicated`` grade is nobody's own judgement, so ``by``
    names no annotator for it.
    """

    question: str
    chunk: str
    hand_grade: int
    evidence_match: bool
    annotator: str
    adjudicated: bool = False

    @property
    def by(self) -> str:
        """Whose grade it is, as the reports print it: ``adjudicated``, the annotator, or ``(unnamed)``."""
        if self.adjudicated:
            return "adjudicated"
        return self.annotator or "(unnamed)"

    @property
    def kind(self) -> str:
        """'graded not relevant but contains the evidence', or 'graded relevant without the evidence'."""
        if self.evidence_match:
            return "graded not relevant but contains the evidence"
        return "graded relevant without the evidence"


@dataclass(frozen=True, slots=True)
class RuleAgreement:
    """The evidence rule against the hand grades that apply.

    ``table[(match, grade)]`` counts the hand-graded pairs by evidence match (True/False) and hand
    grade; ``kappa`` is binary (relevant = grade >= threshold against match).
    """

    threshold: int
    pairs: int
    table: dict[tuple[bool, int], int]
    grades: list[int]
    kappa: float | None
    observed: float
    disagreements: list[Disagreement]

    def row(self, match: bool) -> list[int]:
        """The counts of one table row, one per grade in ``grades``."""
        return [self.table.get((match, g), 0) for g in self.grades]


# ---- one annotator against another -------------------------------------------------------------


def annotators(history: Iterable[Label]) -> dict[str, int]:
    """Every person in the journal and how many pairs they currently grade ("" for lines without a name).

    Adjudicated lines are not an annotator's own judgement and are left out; so are model judges'
    verdicts (annotator ``model:NAME``): a judge is compared in the judges' part of the report.
    """
    history = list(history)
    names: dict[str, int] = {}
    for label in history:
        if not label.adjudicated and not label.is_model:
            names.setdefault(label.annotator, 0)
    for name in names:
        names[name] = len(last_grades(history, name))
    return names


def last_grades(history: Iterable[Label], annotator: str) -> dict[tuple[str, str], Label]:
    """One annotator's last grade per (question, chunk), from the full journal; a null line removes theirs.

    Adjudicated lines are left out: they settle a dispute, they are no annotator's own grade.
    """
    out: dict[tuple[str, str], Label] = {}
    for label in history:
        if label.annotator != annotator or label.adjudicated:
            continue
        key = (label.question, label.chunk)
        if label.grade is None:
            out.pop(key, None)
        else:
            out[key] = label
    return out


@dataclass(frozen=True, slots=True)
class AnnotatorAgreement:
    """Two annotators on the pairs both graded (the same chunk text): table, kappas and disagreements.

    ``table[(grade_a, grade_b)]`` counts the shared pairs; ``kappa`` is binary (grade >= threshold),
    ``weighted_kappa`` quadratic-weighted over the grades, ``observed`` the share of shared pairs
    given the very same grade. ``changed_text`` counts pairs left out
    because the two labels carry different chunk hashes (they judged different texts).
    """

    a: str
    b: str
    threshold: int
    pairs: int
    only_a: int
    only_b: int
    changed_text: int
    table: dict[tuple[int, int], int]
    grades: list[int]
    kappa: float | None
    weighted_kappa: float | None
    observed: float
    disagreements: list[tuple[str, str, int, int]]
    #: Of the shared pairs: both grades given independently (neither person saw another's grade
    #: first), at least one given after seeing another's, and not recorded (``Label.independent``).
    independence: tuple[int, int, int] = (0, 0, 0)

    def independence_text(self) -> str:
        """``given independently: 110 of 112 pairs; 2 after seeing another's grade``."""
        alone, seen, unknown = self.independence
        parts = [f"given independently: {alone} of {self.pairs} pairs"]
        if seen:
            parts.append(f"{seen} after seeing another's grade (the kappa overstates agreement)")
        if unknown:
            parts.append(f"{unknown} not recorded")
        return "; ".join(parts)


def annotator_agreement(
    history: Iterable[Label], a: str, b: str, threshold: int = 1, weights: Weights = "quadratic"
) -> AnnotatorAgreement:
    """Agreement of annotators ``a`` and ``b``: each one's last grade per pair, compared on the pairs both graded."""
    history = list(history)
    grades_a, grades_b = last_grades(history, a), last_grades(history, b)
    shared: list[tuple[str, str]] = []
    changed = 0
    for key in grades_a.keys() & grades_b.keys():
        la, lb = grades_a[key], grades_b[key]
        if la.chunk_sha1 and lb.chunk_sha1 and la.chunk_sha1 != lb.chunk_sha1:
            changed += 1
            continue
        shared.append(key)
    shared.sort()
    xs: list[int] = []
    ys: list[int] = []
    for key in shared:
        x, y = grades_a[key].grade, grades_b[key].grade
        assert x is not None and y is not None  # last_grades keeps no cleared grade
        xs.append(x)
        ys.append(y)
    table = Counter(zip(xs, ys, strict=True))
    n = len(shared)
    states = [(grades_a[key].independent, grades_b[key].independent) for key in shared]
    seen = sum(False in pair for pair in states)
    alone = sum(pair == (True, True) for pair in states)
    return AnnotatorAgreement(
        a=a,
        b=b,
        threshold=threshold,
        pairs=n,
        only_a=len(grades_a.keys() - grades_b.keys()),
        only_b=len(grades_b.keys() - grades_a.keys()),
        changed_text=changed,
        table=dict(table),
        grades=sorted(set(xs) | set(ys) | {0, 1, 2}),
        kappa=cohen_kappa([x >= threshold for x in xs], [y >= threshold for y in ys]),
        weighted_kappa=weighted_kappa(xs, ys, weights),
        observed=sum(1 for x, y in zip(xs, ys, strict=True) if x == y) / n if n else 0.0,
        disagreements=[(q, c, x, y) for (q, c), x, y in zip(shared, xs, ys, strict=True) if x != y],
        independence=(alone, seen, n - alone - seen),
    )
