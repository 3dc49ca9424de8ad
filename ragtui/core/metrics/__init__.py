"""Metrics with trec_eval's definitions: per-question formulas, ir_measures names, evaluation, significance.

The four functions of the metric contract are re-exported here, so ``ragtui.core.metrics.recall_at_k``
works as documented.
"""

from ragtui.core.metrics.formulas import (
    QuestionMetrics,
    ndcg_at_k,
    precision_at_k,
    question_metrics,
    recall_at_k,
    reciprocal_rank,
)

__all__ = [
    "QuestionMetrics",
    "ndcg_at_k",
    "precision_at_k",
    "question_metrics",
    "recall_at_k",
    "reciprocal_rank",
]
