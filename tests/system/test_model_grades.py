"""Model judges' verdicts in the label journal (issue 25 item 2): lines of annotator ``model:NAME``
that never override a person's grade, count only with ``--grades human+model``, never dispute a
pair, survive compaction, and that no person can forge with ``--annotator``."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import orjson
import pytest

from ragtui.core.errors import InputError
from ragtui.core.judges.sample import draw_sample, load_sample, save_sample
from ragtui.core.labelling.journal import LabelJournal
from ragtui.core.labelling.labels import (
    GRADES_HUMAN_MODEL,
    Label,
    PairLabels,
    judge_annotator,
    now_iso,
)
from ragtui.core.settings import Settings
from ragtui.core.workspace import SOURCE_EVIDENCE, SOURCE_HAND, SOURCE_MODEL, Workspace
from tests.conftest import ROOT, grade_of, mini_args


def _verdict(qid: str, cid: str, grade: int, sha1: str, judge: str = "llm") -> Label:
    return Label(
        qid,
        cid,
        grade,
        sha1,
        now_iso(),
        judge_annotator(judge),
        model="qwen2.5:7b-instruct",
        prompt_sha1="p" * 40,
        reason="The passage names the price.",
    )


def test_a_person_wins_over_a_model_and_models_count_only_when_asked(tmp_path):
    path = tmp_path / "labels.jsonl"
    people = LabelJournal(path, "ann")
    people.append_verdicts([_verdict("q1", "a#0", 2, "s"), _verdict("q1", "b#0", 1, "s")])
    # By default only people's grades count: the verdicts are kept but count for nothing.
    assert grade_of(people, "q1", "a#0") is None and grade_of(people, "q1", "b#0") is None
    pair = people.pair("q1", "a#0")
    assert pair is not None and pair.grades() == {} and set(pair.verdicts()) == {"llm"}
    both = LabelJournal(path, "ann", models=True)
    assert grade_of(both, "q1", "a#0") == 2 and grade_of(both, "q1", "b#0") == 1
    # A person's grade wins over the model's, whichever was written later.
    people.set_grade("q1", "a#0", 0, "s")
    both.append_verdicts([_verdict("q1", "a#0", 2, "s")])
    both.refresh()
    assert grade_of(both, "q1", "a#0") == 0
    # Neither the verdict nor a second judge's different verdict makes a dispute.
    both.append_verdicts([_verdict("q1", "b#0", 2, "s", judge="other")])
    assert not both.disputed("q1", "a#0") and not both.disputed("q1", "b#0")
    assert grade_of(both, "q1", "b#0") == 2  # the latest model verdict
    # Undo is the person's: it takes back ann's 0, not a verdict.
    people.refresh()
    people.undo()
    both.refresh()
    assert grade_of(both, "q1", "a#0") == 2 and grade_of(people, "q1", "a#0") is None


def test_verdict_lines_keep_model_prompt_and_reason_and_survive_compaction(tmp_path):
    path = tmp_path / "labels.jsonl"
    journal = LabelJournal(path, "ann")
    journal.append_verdicts([_verdict("q1", "a#0", 2, "s"), _verdict("q1", "a#0", 1, "s")])
    journal.set_grade("q2", "a#0", 1, "s")
    lines = [orjson.loads(x) for x in path.read_bytes().splitlines()]
    assert lines[0]["annotator"] == "model:llm"
    assert lines[0]["model"] == "qwen2.5:7b-instruct" and lines[0]["reason"].startswith("The")
    assert len(lines[0]["prompt_sha1"]) == 40
    assert "model" not in lines[2] and "reason" not in lines[2]  # a person's line as before
    assert journal.compact() is not None
    again = LabelJournal(path, "ann", models=True)
    pair = again.pair("q1", "a#0")
    assert pair is not None
    verdict = pair.verdicts()["llm"]
    assert (verdict.grade, verdict.model, verdict.reason) == (
        1,
        "qwen2.5:7b-instruct",
        "The passage names the price.",
    )
    assert len(path.read_bytes().splitlines()) == 2  # the overridden verdict went


def test_a_person_cannot_write_as_a_model_and_verdicts_are_not_adjudicated(tmp_path):
    with pytest.raises(InputError, match="model judge's name"):
        LabelJournal(tmp_path / "labels.jsonl", "model:llm")
    journal = LabelJournal(tmp_path / "labels.jsonl", "ann")
    with pytest.raises(ValueError, match="not a model verdict"):
        journal.append_verdicts([replace(_verdict("q", "c", 1, "s"), annotator="ann")])
    # A hand-edited line claiming an adjudicated model verdict is refused (line skipped, named).
    (tmp_path / "labels.jsonl").write_text(
        json.dumps(
            {
                "question": "q",
                "chunk": "c",
                "grade": 2,
                "annotator": "model:x",
                "adjudicated": True,
            }
        )
        + "\n"
    )
    journal.load()
    assert grade_of(journal, "q", "c") is None
    assert "cannot be adjudicated" in journal.warnings[0] and ":1:" in journal.warnings[0]


def test_only_model_pairs_are_kept_though_nothing_counts():
    pair = PairLabels()
    pair.annotators["model:llm"] = _verdict("q", "c", 2, "s")
    assert pair.effective() is None and pair.effective(models=True) is not None
    assert pair.human() is None


def _ws(settings: Settings, **changes: object) -> Workspace:
    return Workspace.load(replace(settings, retrievers=("bm25",), **changes))


def test_model_grades_move_the_numbers_only_with_human_model(mini_settings):
    ws = _ws(mini_settings)
    qid = "m03"
    ranking = ws.ranked.rankings["bm25"][qid]
    top = ranking[0][0]
    _grade, source = ws.grades.grade_source(qid, top)
    assert source in (SOURCE_EVIDENCE, SOURCE_HAND)
    # A model calls the top chunk of m03 not relevant (on a chunk nobody graded by hand).
    unlabelled = next(
        cid
        for cid, _ in ranking
        if ws.grades.labels.pair(qid, cid) is None and ws.grades.grade_source(qid, cid)[0]
    )
    before = ws.evaluation.summary("bm25", [qid])
    sha1 = ws.passages.by_id[unlabelled].sha1
    ws.grades.labels.append_verdicts([_verdict(qid, unlabelled, 0, sha1)])
    ws.refresh_labels()
    assert ws.evaluation.summary("bm25", [qid]) == before  # human: the verdict counts for nothing
    assert ws.grades.judge_verdicts(qid, unlabelled)["llm"].grade == 0
    counted = _ws(mini_settings, counted_grades=GRADES_HUMAN_MODEL)
    assert counted.grades.grade_source(qid, unlabelled) == (0, SOURCE_MODEL)
    assert counted.evaluation.summary("bm25", [qid]) != before
    # A stale verdict (the chunk's text changed since) is never applied.
    counted.grades.labels.append_verdicts([_verdict(qid, unlabelled, 0, "0" * 40, judge="stale")])
    assert "stale" not in counted.grades.judge_verdicts(qid, unlabelled)


def test_eval_says_which_grades_count(mini, cli_cache_env):
    def run(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "ragtui",
                "eval",
                *mini_args(mini, "--retrievers", "bm25", *extra),
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
        )

    done = run()
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].endswith("; grades: human")
    done = run("--grades", "human+model", "--json")
    assert json.loads(done.stdout)["grades"] == "human+model"
    done = run("--grades", "model")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "--grades" in done.stderr
    done = run("--annotator", "model:me")
    assert done.returncode == 2 and "model judge's name" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_random_sample_is_recorded_and_reproducible(tmp_path):
    ids = [f"q{i}" for i in range(100)]
    first, again = draw_sample(ids, 40, seed=7), draw_sample(ids, 40, seed=7)
    assert first.questions == again.questions and len(set(first.questions)) == 40
    assert draw_sample(ids, 40, seed=8).questions != first.questions
    save_sample(tmp_path, first)
    loaded = load_sample(tmp_path)
    assert loaded is not None and loaded.questions == first.questions
    assert loaded.drawn_from(ids) and not loaded.drawn_from(ids[:-1])
    (tmp_path / "sample.json").write_text('{"seed": 1, "population": 3}')
    with pytest.raises(InputError, match=r"sample\.json"):
        load_sample(tmp_path)
    assert load_sample(Path(tmp_path / "none")) is None
