"""``ragtui judge``: grade the pool with model judges (``ragtui.core.judges.run``), with
progress on stderr (a bar on a terminal, lines in a log) and the summary on stdout (or ``--json``)."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragtui.core.judges.base import Judge
    from ragtui.core.judges.run import JudgeAsk, JudgeRun, JudgeSummary
    from ragtui.core.settings import Settings

__all__ = ["add_judge_parser", "judge_ask", "run_judge"]


def _question_ids(raw: str) -> tuple[str, ...]:
    ids = tuple(part.strip() for part in raw.split(","))
    if not ids or any(not part for part in ids):
        raise argparse.ArgumentTypeError(f"expected question ids separated by commas, got {raw!r}")
    return tuple(dict.fromkeys(ids))


def add_judge_parser(
    sub: Any, positive: Callable[[str], int], seed: Callable[[str], int]
) -> argparse.ArgumentParser:
    """The ``judge`` command's own options (the caller adds the shared ones): ``positive`` and
    ``seed`` read a count and a seed."""
    p_judge: argparse.ArgumentParser = sub.add_parser(
        "judge",
        help="grade the pool (every retriever's top k, ranked at --depth: the pool the estimates "
        "read) with model judges: verdicts into the label journal as model:NAME, resuming where a "
        "run stopped",
    )
    p_judge.add_argument(
        "--pool-depth",
        type=positive,
        default=None,
        metavar="N",
        help="grade every retriever's top N instead of its top k (at most --depth)",
    )
    p_judge.add_argument(
        "--unjudged",
        action="store_true",
        help="only pairs no person graded and the judge has no verdict for",
    )
    p_judge.add_argument(
        "--questions",
        type=_question_ids,
        default=(),
        metavar="ID,ID",
        help="only these questions' pools",
    )
    p_judge.add_argument(
        "--limit",
        type=positive,
        default=None,
        metavar="N",
        help="grade at most N pairs per judge (the next run goes on from there)",
    )
    p_judge.add_argument(
        "--sample",
        type=positive,
        default=None,
        metavar="N",
        help="only a random sample of N questions (with --seed)",
    )
    p_judge.add_argument(
        "--seed",
        type=seed,
        default=None,
        metavar="S",
        help="the seed of --sample (default 0): the same seed draws the same questions",
    )
    p_judge.add_argument(
        "--again",
        action="store_true",
        help="ask the judge again about pairs it has a current verdict for (the cache is not read)",
    )
    p_judge.add_argument(
        "--json",
        action="store_true",
        help="print the summary as JSON (every key: docs/json.md) and nothing else on stdout",
    )
    return p_judge


def judge_ask(args: argparse.Namespace) -> JudgeAsk:
    """What to grade, from the parsed options; InputError for options that do not go together."""
    from ragtui.core.errors import InputError
    from ragtui.core.judges.run import JudgeAsk

    if args.seed is not None and args.sample is None:
        raise InputError(None, "--seed: it seeds --sample; give --sample N too")
    return JudgeAsk(
        unjudged=args.unjudged,
        questions=tuple(args.questions),
        limit=args.limit,
        sample=args.sample,
        seed=args.seed if args.seed is not None else 0,
        again=args.again,
        depth=args.pool_depth,
    )


# ---- progress ------------------------------------------------------------------------------------


class _Progress:
    """Pairs judged, pairs/s and tokens/s on stderr: a Rich bar on a terminal, else a line when
    judging starts, one every ``RAGTUI_PROGRESS_SECONDS`` (10) and one at the end."""

    def __init__(self) -> None:
        from rich.console import Console

        self.console = Console(stderr=True)
        self.bar: Any = None
        self.task: Any = None
        self.started = 0.0
        self.last = 0.0
        self.total = 0
        self.done = 0
        self.cached = 0
        self.tokens = 0
        from ragtui.cli.output import progress_period

        self.period = progress_period()

    def _rates(self) -> tuple[float, float, float]:
        """Seconds since judging started, and the judges' pairs and tokens per second (the
        cache's pairs, which cost no request, are not counted in the rate)."""
        elapsed = max(time.monotonic() - self.started, 1e-6)
        return elapsed, (self.done - self.cached) / elapsed, self.tokens / elapsed

    def __call__(self, done: int, total: int, cached: int, tokens: int) -> None:
        from ragtui.cli.output import err

        now = time.monotonic()
        self.done, self.total, self.cached, self.tokens = done, total, cached, tokens
        if not self.started:
            self.started = self.last = now
            if self.console.is_terminal:
                self._start_bar()
            else:
                err(f"ragtui: judging {total} pairs...")
        _, pairs_s, tokens_s = self._rates()
        if self.bar is not None:
            rate = f"{pairs_s:.1f} pairs/s  {tokens_s:,.0f} tokens/s"
            self.bar.update(self.task, completed=done, rate=rate)
        elif done < total and now - self.last >= self.period and done:
            self.last = now
            left = (total - done) / pairs_s if pairs_s > 0 else 0.0  # the cache's are done first
            err(
                f"ragtui: judging: {done} of {total} pairs, {pairs_s:.1f} pairs/s, "
                f"{tokens_s:,.0f} tokens/s, about {left:.0f} s left"
            )

    def _start_bar(self) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
        from rich.progress import Progress as RichProgress

        self.bar = RichProgress(
            TextColumn("judging"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeRemainingColumn(),
            console=self.console,
            transient=True,
        )
        self.bar.start()
        self.task = self.bar.add_task("judging", total=self.total, rate="")

    def close(self) -> None:
        """Take the bar away; in a log, the end line with the rates over the whole run."""
        from ragtui.cli.output import err

        if self.bar is not None:
            self.bar.stop()
            self.bar = None
        elif self.started:
            elapsed, pairs_s, tokens_s = self._rates()
            cached = f" ({self.cached} from the cache)" if self.cached else ""
            err(
                f"ragtui: judging: {self.done} of {self.total} pairs{cached} in {elapsed:.1f} s "
                f"({pairs_s:.1f} pairs/s, {tokens_s:,.0f} tokens/s)"
            )


# ---- the summary -----------------------------------------------------------------------------------


def _count(n: int, what: str) -> str:
    return f"{n:,} {what}{'' if n == 1 else 's'}"


def _judge_lines(s: JudgeSummary) -> list[str]:
    skipped = []
    if s.skipped_judged:
        skipped.append(f"{s.skipped_judged:,} with a verdict already")
    if s.skipped_person:
        skipped.append(f"{s.skipped_person:,} graded by people")
    if s.left:
        skipped.append(f"{s.left:,} past --limit, left for the next run")
    lines = [
        f"judge {s.judge} (model {s.model}"
        + (f", prompt {s.prompt_sha1[:12]}" if s.prompt_sha1 else "")
        + ")",
        f"  pairs    {s.pairs:,} to grade" + (f"; skipped {', '.join(skipped)}" if skipped else ""),
    ]
    if s.pairs:
        lines.append(
            f"  graded   {s.graded:,} ({s.from_cache:,} from the cache, "
            f"{s.graded - s.from_cache:,} by the judge)"
        )
        failed = f"  failed   {s.failed:,}"
        if s.failed:
            kinds = ", ".join(f"{kind} {n:,}" for kind, n in s.failures.most_common())
            failed += f" ({kinds}): asked again on the next run"
        lines.append(failed)
        lines.append(
            f"  speed    {_count(s.answered, 'pair')} and {_count(s.tokens, 'token')} in "
            f"{s.seconds:.1f} s: {s.pairs_per_s:.1f} pairs/s, {s.tokens_per_s:,.0f} tokens/s"
        )
    return lines


def summary_text(run: JudgeRun) -> str:
    """The end summary ``ragtui judge`` prints."""
    pool = run.pool
    head = (
        f"pool: {_count(len(pool.questions), 'question')}, {_count(len(pool.pairs), 'pair')} "
        f"(the top {pool.depth} of {', '.join(pool.retrievers) or 'no retriever'})"
    )
    if pool.without_text:
        head += f"; {_count(pool.without_text, 'pooled id')} without a text left out"
    lines = [head]
    for summary in run.judges:
        lines.extend(_judge_lines(summary))
    written = sum(s.graded for s in run.judges)
    names = ", ".join(f"model:{s.judge}" for s in run.judges if s.graded)
    if written:
        lines.append(f"verdicts: {run.journal} ({_count(written, 'line')} as {names})")
    return "\n".join(lines)


# ---- the command -------------------------------------------------------------------------------


def _build(settings: Settings) -> list[Judge]:
    """The judges ``--judge`` names (``Settings.judges``), built; InputError when there is none."""
    from ragtui.core.errors import InputError
    from ragtui.core.judges.base import JudgeError
    from ragtui.core.judges.build import build_judge
    from ragtui.core.judges.openai import OpenAIJudge
    from ragtui.core.text import visible_line

    specs = settings.judges
    if not specs:
        raise InputError(
            None,
            "ragtui judge needs a judge: --judge NAME=SPEC (openai:MODEL@URL, "
            "cross-encoder:PATH, similarity, package.module:factory) or --judge NAME of the "
            "project file's [judges.NAME]",
        )
    built: list[Judge] = []
    try:
        for spec in specs:
            built.append(build_judge(spec, settings))
        for judge in built:
            if isinstance(judge, OpenAIJudge):
                try:
                    judge.check()  # one request: a dead endpoint is one line now, not minutes later
                except JudgeError as exc:
                    raise JudgeError(f"{visible_line(judge.name)}: {exc}") from None
    except BaseException:
        for judge in built:
            judge.close()
        raise
    return built


def run_judge(settings: Settings, ask: JudgeAsk, *, as_json: bool = False) -> int:
    """``ragtui judge``: 0 when every pair asked was graded, 1 when some failed (counted and
    reported; asked again on the next run), 2 when a judge could not work at all (its line on
    stderr: an endpoint down before or during the run included), 130 on Ctrl-C (what came is
    written)."""
    from ragtui.cli.output import err, open_workspace, out, print_json, print_notices
    from ragtui.core.judges.base import JudgeError
    from ragtui.core.judges.run import judge_pool

    try:
        # Built before the (slow) loading, so a judge that cannot exist is refused at once.
        judges = _build(settings.checked())
    except JudgeError as exc:
        err(f"ragtui: error: {exc}")
        return 2
    progress = _Progress()
    try:
        ws = open_workspace(settings)
        try:
            run = judge_pool(
                ws, judges, ask, progress=progress, notify=lambda line: err(f"ragtui: {line}")
            )
        finally:
            progress.close()
            print_notices(ws)
    finally:
        for judge in judges:
            judge.close()
    if as_json:
        print_json(run.to_json())
    else:
        out(summary_text(run))
    if run.stopped:
        err(f"ragtui: error: {run.stopped} (the verdicts that came are written)")
        return 2
    if run.interrupted:
        err("ragtui: interrupted (the verdicts that came are written)")
        return 130
    return 1 if any(s.failed for s in run.judges) else 0
