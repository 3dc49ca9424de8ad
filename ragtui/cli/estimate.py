"""``--estimate`` on the command line: the option that names the judge, and what eval (text and
``--json``) and report add; the numbers come from ``ragtui.core.judges.estimates``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ragtui.core.errors import InputError

if TYPE_CHECKING:  # the parser imports this module: the analysis only when it runs
    from ragtui.core.judges.estimates import Estimates
    from ragtui.core.report_model import Report
    from ragtui.core.workspace import Workspace

__all__ = ["add_estimate", "add_judge_option", "estimate_reports", "estimates_for"]


def add_judge_option(parser: argparse.ArgumentParser) -> None:
    """``--judge NAME``: whose verdicts ``--estimate`` reads (this command's own ``--judge``)."""
    parser.add_argument(
        "--judge",
        dest="estimate_judge",
        default=None,
        metavar="NAME",
        help="with --estimate: read this judge's verdicts (default: every judge's latest)",
    )


def estimates_for(ws: Workspace, judge: str | None) -> Estimates | None:
    """The estimates ``--estimate`` asks for (None without it); ``--judge NAME`` without
    ``--estimate``, or naming a judge with no verdict, is bad input."""
    from ragtui.core.judges.estimates import estimates
    from ragtui.core.judges.verify import judges as judges_with_verdicts

    if judge is not None:
        name = judge.split("=", 1)[0]  # NAME=SPEC names the judge NAME
        if not ws.settings.estimate:
            raise InputError(
                None, f"--judge {name}: chooses the judge of --estimate; add --estimate"
            )
        known = judges_with_verdicts(ws.grades.labels)
        if name not in known:
            listed = ", ".join(known) if known else "none"
            raise InputError(
                None,
                f"--judge {name}: no verdict of a judge named {name} in the journal "
                f"(judges with verdicts: {listed})",
            )
        judge = name
    if not ws.settings.estimate:
        return None
    return estimates(ws, judge)


def add_estimate(ws: Workspace, body: dict[str, Any], judge: str | None) -> None:
    """``eval --json --estimate``: the top-level ``estimate`` object and one per retriever."""
    from ragtui.core.judges.estimates_report import estimates_json, retriever_json

    found = estimates_for(ws, judge)
    if found is None:
        return
    body["estimate"] = estimates_json(found)
    for name, est in found.retrievers.items():
        body["retrievers"][name]["estimate"] = retriever_json(est)


def estimate_reports(ws: Workspace, judge: str | None) -> list[Report]:
    """``eval --estimate``'s table (none without ``--estimate``)."""
    from ragtui.core.judges.estimates_report import estimates_report

    found = estimates_for(ws, judge)
    return [] if found is None else [estimates_report(found)]
