"""What ``--estimate`` prints: the ``estimate`` objects of ``eval --json`` (docs/json.md) and the
table ``eval`` and ``report`` print (docs/judges.md); the figures are
``ragtui.core.judges.estimates``'s."""

from __future__ import annotations

from typing import Any

from ragtui.core.judges.estimate import CONFIDENCE, MIN_SAMPLE, Interval
from ragtui.core.judges.estimates import Estimates, RetrieverEstimate
from ragtui.core.report_model import Note, Report, fmt, table

__all__ = ["estimates_json", "estimates_report", "retriever_json"]


def _interval_json(
    interval: Interval | None, differing: int | None = None
) -> dict[str, Any] | None:
    if interval is None:
        return None
    out: dict[str, Any] = {
        "estimate": interval.estimate,
        "low": interval.low,
        "high": interval.high,
        "half_width": interval.half_width,
        "n": interval.n,
        "population": interval.population,
        "df": interval.df,
        "note": interval.note,
    }
    if differing is not None:
        out["differing"] = differing
    return out


def retriever_json(est: RetrieverEstimate) -> dict[str, Any]:
    """The ``estimate`` object of one retriever in ``eval --json`` (docs/json.md)."""
    out: dict[str, Any] = {"shares_model": est.shares_model}
    for metric, m in est.metrics.items():
        out[metric] = {
            "value": m.value,
            "unjudged_low": m.unjudged[0] if m.unjudged is not None else None,
            "unjudged_high": m.unjudged[1] if m.unjudged is not None else None,
            "human": m.human,
            "model_filled": m.model_filled,
            "ppi": _interval_json(m.ppi, m.differing),
            "human_only": _interval_json(m.human_only),
            "narrows": m.narrows,
            "reason": m.reason or None,
        }
    return out


def estimates_json(est: Estimates) -> dict[str, Any]:
    """The top-level ``estimate`` object of ``eval --json``: the judges, the sample (docs/json.md)."""
    use = est.sample
    sample = use.sample
    return {
        "judge": est.judge,
        "judges": list(est.judges),
        "models": list(est.models),
        "shares_model_with": list(est.shares),
        "target": est.target,
        "reversals": [{"metric": metric, "retrievers": [a, b]} for metric, a, b in est.reversals()],
        "confidence": CONFIDENCE,
        "min_sample": MIN_SAMPLE,
        "sample": {
            "file": use.path,
            "recorded": sample is not None,
            "seed": sample.seed if sample is not None else None,
            "drawn": len(sample.questions) if sample is not None else 0,
            "population": use.population,
            "design": sample.design if sample is not None else None,
            "by": (sample.by or None) if sample is not None else None,
            "strata": [
                {"label": label, "size": len(members), "judged_fully": len(used)}
                for label, members, used in use.strata()
                if members
            ],
            "judged_fully": list(use.used),
            "reason": use.reason or None,
        },
        "coverage": (
            {"sample": use.coverage[0], "others": use.coverage[1]}
            if use.coverage is not None
            else None
        ),
    }


_LABELS = {"recall": "recall@{k}", "precision": "precision@{k}", "mrr": "MRR", "ndcg": "nDCG@{k}"}


def _plus_minus(interval: Interval) -> str:
    """``0.330 ± 0.040``, or ``0.010 (0.000–0.047)`` when the range of the measure cut it."""
    if abs((interval.estimate - interval.low) - (interval.high - interval.estimate)) > 1e-12:
        return f"{fmt(interval.estimate)} ({fmt(interval.low)}–{fmt(interval.high)})"
    return f"{fmt(interval.estimate)} ± {fmt(interval.half_width)}"


def estimates_report(est: Estimates) -> Report:
    """``eval --estimate``'s table: a row per retriever and metric (docs/judges.md)."""
    rows = []
    reasons: dict[str, None] = {}
    for name, r in est.retrievers.items():
        for i, (metric, m) in enumerate(r.metrics.items()):
            shown = (name + (" ‡" if r.shares_model else "")) if i == 0 else ""
            value = fmt(m.value)
            if m.unjudged is not None:
                value += f" ({fmt(m.unjudged[0])}–{fmt(m.unjudged[1])} over unjudged)"
            ppi = "—"
            if m.ppi is not None:
                ppi = f"{_plus_minus(m.ppi)} (n={m.ppi.n} of {m.ppi.population})"
            elif m.reason:
                reasons.setdefault(m.reason)
            rows.append(
                (
                    shown,
                    _LABELS[metric].format(k=est.k),
                    value,
                    fmt(m.human),
                    fmt(m.model_filled) if m.model_filled is not None else "—",
                    ppi,
                    _plus_minus(m.human_only) if m.human_only is not None else "—",
                )
            )
    judge = est.judge or "every judge's latest verdict"
    if est.judges:
        judge += f" ({', '.join(est.judges)})" if est.judge is None else ""
    else:
        judge += " (none in the journal)"
    notes = [
        f"target: {est.target}",
        (
            "value: the mean eval shows; over unjudged: the lowest and highest mean the unjudged "
            f"pairs of the pool (the retrievers' top {est.k}; for MRR the run) allow"
        ),
        (
            "people: their grades only; model-filled: people's where they graded, else the "
            "judge's; PPI: the prediction-powered estimate, 95 % interval; people only: the "
            "sample alone, the interval people's grades give without the judge"
        ),
        f"judge: {judge}; sample: {est.sample.describe()}",
    ]
    if est.sample.coverage is not None:
        sample, others = est.sample.coverage
        notes.append(
            f"the judge graded {sample:.0%} of the sampled questions' pool pairs, {others:.0%} "
            "of the others'"
        )
    notes += [f"no prediction-powered estimate: {reason}" for reason in reasons]
    said: dict[str, None] = {}
    for name, r in est.retrievers.items():
        for metric, m in r.metrics.items():
            for kind, interval in (("PPI", m.ppi), ("people only", m.human_only)):
                if interval is not None and interval.note is not None:
                    said.setdefault(
                        f"{name} {_LABELS[metric].format(k=est.k)} {kind}: {interval.note}"
                    )
    notes += list(said)
    widened = [
        f"{name} {_LABELS[metric].format(k=est.k)}"
        for name, r in est.retrievers.items()
        for metric, m in r.metrics.items()
        if m.narrows is False
    ]
    if widened:
        notes.append(
            "the judge widens the interval against the people's sample alone on "
            f"{', '.join(widened)}: there, people only is the better estimate"
        )
    for metric, a, b in est.reversals():
        notes.append(
            f"the judge's model-filled {_LABELS[metric].format(k=est.k)} puts {a} and {b} in the "
            "other order than the estimates: do not compare them by the model-filled means"
        )
    agreeing = [
        m for r in est.retrievers.values() for m in r.metrics.values() if m.ppi and not m.differing
    ]
    if agreeing:
        notes.append(
            "± 0.000: the judge and the people agree on every sampled question; the interval then "
            "takes the judge to be as right on the others"
        )
    if est.shares:
        notes.append(
            f"‡ the judge shares its model ({', '.join(est.models)}) with this retriever: "
            "it favours it"
        )
    section = table(
        ("retriever", "metric", "value", "people", "model-filled", "PPI", "people only"),
        rows,
        notes=[Note(n, "dim") for n in notes],
        right=range(2, 7),
    )
    return Report("How sure the numbers are", (section,))
