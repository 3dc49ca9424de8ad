"""Every analysis as a ``Report``: built once here, printed by the command line and drawn by the app.

Each function turns computed results (an evaluation, a comparison, an attribution, agreement,
chunking diagnostics, check's problems, a run diff) into titled sections of formatted cells and
notes, so ``ragtui eval --compare`` and the app's compare view say the same words and digits.

The modules: ``retrievers`` (how the retrievers did: the eval table, per slice, the recall curve, a
comparison, hybrid attribution, a reranked list), ``golden_set`` (the golden set's own reports:
agreement, chunking diagnostics, check, a question just added), ``run_diff`` (two saved runs
compared) and ``cells`` (the small formatting helpers they share).
"""

from ragtui.core.analysis.reports.golden_set import (
    added_question_report,
    agreement_report,
    annotator_pairs,
    check_report,
    diagnostics_report,
)
from ragtui.core.analysis.reports.retrievers import (
    SIGNIFICANCE,
    comparison_report,
    curve_report,
    eval_table_report,
    explain_report,
    rerank_explanation_report,
    slices_report,
)
from ragtui.core.analysis.reports.run_diff import diff_report

__all__ = [
    "SIGNIFICANCE",
    "added_question_report",
    "agreement_report",
    "annotator_pairs",
    "check_report",
    "comparison_report",
    "curve_report",
    "diagnostics_report",
    "diff_report",
    "eval_table_report",
    "explain_report",
    "rerank_explanation_report",
    "slices_report",
]
