"""``ragtui why [QID]``: the cause of every miss (one question, or the table by retriever and slice
with each cause's remedy ceiling); the core computes the reports, ``output`` prints them."""

from __future__ import annotations

from ragtui.cli.output import open_workspace, print_json, print_report
from ragtui.core.analysis.why import (
    WhyIndex,
    explain_misses,
    question_why_json,
    why_json,
    why_question_report,
    why_report,
)
from ragtui.core.settings import Settings


def run_why(
    settings: Settings, qid: str | None, *, by_slice: bool = False, as_json: bool = False
) -> int:
    """``ragtui why [QID] [--by-slice] [--json]``."""
    ws = open_workspace(settings)
    k, depth = ws.settings.k, ws.settings.depth
    if qid is not None:
        why = explain_misses(ws, qid)
        if as_json:
            print_json(question_why_json(why, k, depth))
        else:
            print_report(why_question_report(why, k, depth))
        return 0
    index = WhyIndex(ws)
    if as_json:
        print_json(why_json(index))
    else:
        print_report(why_report(index, by_slice=by_slice))
    return 0
