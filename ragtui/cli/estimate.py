"""``--estimate`` on the command line: the option that names the judge, and what eval (text and
``--json``) and report add; the numbers come from ``ragtui.core.judges.estimates``."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ragtui.core.errors import InputError

if TYPE_CHECKING:  # the parser imports this module: the analysis only when it runs
    from ragtui.core.judges.estimates import Estimates
    from ragtui.core.report_model import Report
    from ragtui.core.settings import Settings
    from ragtui.core.workspace import Workspace

__all__ = [
    "add_estimate",
    "add_judge_option",
    "add_sample_parser",
    "estimate_reports",
    "estimates_for",
    "run_sample",
]


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


# ---- ragtui sample ---------------------------------------------------------------------------------


def add_sample_parser(
    sub: Any, positive: Callable[[str], int], seed: Callable[[str], int]
) -> argparse.ArgumentParser:
    """``ragtui sample``: draw (or show) the random sample the estimates rest on."""
    from ragtui.core.judges.verify import SAMPLE_SEED, SAMPLE_SIZE

    p_sample: argparse.ArgumentParser = sub.add_parser(
        "sample",
        help="draw the random sample of questions people judge fully for --estimate, or show the "
        "one recorded (sample.json; never replaced), with which of its questions are judged",
    )
    p_sample.add_argument(
        "--size",
        type=positive,
        default=SAMPLE_SIZE,
        metavar="N",
        help=f"questions to draw when none is recorded (default {SAMPLE_SIZE})",
    )
    p_sample.add_argument(
        "--seed",
        type=seed,
        default=SAMPLE_SEED,
        metavar="S",
        help=f"the seed to draw with (default {SAMPLE_SEED}: the same seed draws the same sample)",
    )
    p_sample.add_argument(
        "--design",
        choices=("uniform", "strata"),
        default="uniform",
        help="uniform: a simple random sample of the questions (the default); strata: more "
        "questions where the judge is least sure, fewer where a pool costs more pairs, each "
        "stratum drawn at random apart (run ragtui judge first; docs/judges.md)",
    )
    p_sample.add_argument(
        "--by",
        choices=("confidence", "slice"),
        default="confidence",
        help="what the strata are (with --design strata): confidence, three groups by the judge's "
        "doubt over the question's pool (its grade probabilities, from logprobs); slice, the "
        "golden set's slices (default confidence)",
    )
    p_sample.add_argument(
        "--json",
        action="store_true",
        help="print the sample as JSON (docs/json.md) and nothing else on stdout",
    )
    return p_sample


def run_sample(
    settings: Settings,
    size: int,
    seed: int,
    *,
    design: str = "uniform",
    by: str = "confidence",
    as_json: bool = False,
) -> int:
    """``ragtui sample``: the recorded sample, else ``size`` questions drawn with ``seed`` and
    recorded in ``sample.json``; printed with the questions people judged fully. 0, or 2 for bad
    input (a malformed sample.json, a golden set that cannot be written)."""
    from ragtui.cli.output import open_workspace, out, print_json, print_notices
    from ragtui.core.judges.estimates import draw_design, sample_use
    from ragtui.core.judges.verify import recorded_or_drawn, sample_population
    from ragtui.core.text import visible_line

    ws = open_workspace(settings)
    population = sample_population(ws.questions)
    try:
        recorded = recorded_or_drawn(
            ws.writable_golden(),
            population,
            size,
            seed,
            lambda: draw_design(ws, size, seed, design, by),
        )
    except ValueError as exc:
        raise InputError(None, f"no sample: {exc}") from None
    except OSError as exc:
        raise InputError(None, f"cannot record the sample: {exc.strerror or exc}") from None
    print_notices(ws)
    use = sample_use(ws)
    sample = recorded.sample
    judged = set(use.used)
    if as_json:
        print_json(
            {
                "file": str(recorded.path),
                "drawn_now": recorded.drawn,
                "current": recorded.current,
                "seed": sample.seed,
                "population": sample.population,
                "at": sample.at,
                "design": sample.design,
                "by": sample.by or None,
                "strata": [
                    {
                        "label": t.label,
                        "size": len(t.questions),
                        "drawn": t.drawn,
                        "doubt": t.doubt,
                        "pairs": t.pairs,
                    }
                    for t in sample.strata
                ],
                "questions": list(sample.questions),
                "judged_fully": [q for q in sample.questions if q in judged],
                "reason": use.reason or None,
            }
        )
        return 0
    how = "drawn now" if recorded.drawn else f"recorded {sample.at or 'earlier'}, kept"
    lines = [
        f"sample: {visible_line(str(recorded.path))} ({how})",
        (
            f"seed {sample.seed}: {len(sample.questions)} of {sample.population} questions "
            f"({visible_line(sample.describe_design())}), in the order to judge them; judged "
            f"fully by people: {len(judged)}"
        ),
    ]
    lines += [
        f"  stratum {visible_line(t.label)}: {t.drawn} of {len(t.questions)} questions drawn "
        f"(doubt {t.doubt:.2f}, {t.pairs:.1f} pairs a question)"
        for t in sample.strata
    ]
    if recorded.drawn is False and (design, by) != ("uniform", "confidence"):
        wanted = "uniform" if design == "uniform" else f"strata by {by}"
        if sample.describe_design().split(" (")[0] != wanted:
            lines.append(
                f"the recorded sample is kept: {wanted} was not drawn (delete sample.json to "
                "draw another, before people judge it)"
            )
    if not recorded.current:
        lines.append(
            "the questions changed since it was drawn: the estimates do not use it (delete "
            "sample.json to draw another)"
        )
    elif use.reason:
        lines.append(f"the estimates: {visible_line(use.reason)}")
    lines += [f"{visible_line(q)}{'  judged' if q in judged else ''}" for q in sample.questions]
    out("\n".join(lines))
    return 0
