"""The evidence rule (or the BEIR qrels) against the hand grades of a workspace.

The kappas and the annotator comparison are in ``ragtui.core.labelling.agreement``; this is the
part that reads a whole workspace: which hand grades apply, and what the rule says of each pair.
"""

from __future__ import annotations

from collections import Counter

from ragtui.core.labelling.agreement import (
    Disagreement,
    RuleAgreement,
    cohen_kappa,
    last_grades,
)
from ragtui.core.labelling.labels import Label
from ragtui.core.workspace import Workspace

__all__ = ["rule_agreement"]


def rule_agreement(ws: Workspace, annotator: str | None = None) -> RuleAgreement:
    """Confusion table, binary kappa and disagreements between the evidence rule (or qrels) and the hand grades.

    Only hand grades that apply (not stale) count; ``annotator`` limits them to one person's
    (their last grade per pair, adjudications aside). Without it each pair's grade that counts is
    compared, an adjudicated one among them: its disagreement is marked adjudicated, not credited
    to whoever wrote the adjudication; a model judge's verdict is never one, even where
    ``--grades human+model`` counts it. The disagreements come in golden-set order, then chunk order.
    """
    threshold = ws.settings.threshold
    if annotator is None:
        # The people's grade that counts for each pair (adjudicated, else the latest person's):
        # a model judge's verdict is never a hand grade, even where --grades human+model counts it.
        def applies(label: Label) -> bool:
            return ws.grades.label_status(label) is None

        hand = {}
        for q in ws.questions:
            for cid, pair in ws.grades.labels.pairs.get(q.id, {}).items():
                label = pair.human(applies)
                if label is not None:
                    hand[(q.id, cid)] = label
    else:
        hand = dict(last_grades(ws.grades.labels.history, annotator).items())
    order = {q.id: i for i, q in enumerate(ws.questions)}
    applying = sorted(
        (
            label
            for label in hand.values()
            if label.grade is not None and ws.grades.label_status(label) is None
        ),
        key=lambda lab: (order[lab.question], ws.passages.order[lab.chunk]),
    )
    table: Counter[tuple[bool, int]] = Counter()
    rule: list[bool] = []
    person: list[bool] = []
    disagreements: list[Disagreement] = []
    for label in applying:
        assert label.grade is not None
        base = ws.grades.base.get(label.question, {}).get(label.chunk)
        match = base is not None and base >= threshold
        table[(match, label.grade)] += 1
        relevant = label.grade >= threshold
        rule.append(match)
        person.append(relevant)
        if match != relevant:
            disagreements.append(
                Disagreement(
                    label.question,
                    label.chunk,
                    label.grade,
                    match,
                    label.annotator,
                    label.adjudicated,
                )
            )
    grades = sorted({g for _, g in table} | {0, 1, 2})
    n = len(rule)
    return RuleAgreement(
        threshold=threshold,
        pairs=n,
        table=dict(table),
        grades=grades,
        kappa=cohen_kappa(rule, person),
        observed=sum(1 for x, y in zip(rule, person, strict=True) if x == y) / n if n else 0.0,
        disagreements=disagreements,
    )
