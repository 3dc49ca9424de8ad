"""Judge plugins: a real package (tests/data/judge_plugin) installed with pip into a folder on
sys.path, registering factories under the ``ragtui.judges`` entry-point group, so both ways in are
exercised: ``package.module:factory`` and an entry-point name. Its good judge grades by word
overlap (so every grade is known); its other factories misbehave in every way a plugin can, and
each is that judge's failure, never ragtui's crash."""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ragtui.cli import main
from ragtui.core.errors import InputError
from ragtui.core.judge_spec import JudgeSpec, parse_judge_section
from ragtui.core.judges.base import JudgeError, JudgePair, Verdict
from ragtui.core.judges.build import build_judge
from ragtui.core.judges.plugins import PluginJudge, judge_entry_point_names
from ragtui.core.settings import Settings
from tests.conftest import DATA, mini_args

SCALE = ((0, "not relevant"), (1, "partly"), (2, "answers fully"))
PAIRS = [
    JudgePair(
        "q1", "How much is a return ferry ticket?", "f#0", "A return ferry ticket costs 5.80", "a"
    ),
    JudgePair("q1", "How much is a return ferry ticket?", "m#0", "The market opens at nine.", "b"),
    JudgePair(
        "q2", "What is the fine for a late book?", "l#0", "A late book costs 0.25 per day", "c"
    ),
    JudgePair("q2", "What is the fine for a late book?", "l#1", "Books for a fine afternoon.", "d"),
    JudgePair("q3", "Where does the ferry leave?", "f#1", "The ferry leaves from the pier.", "e"),
    JudgePair("q3", "Where does the ferry leave?", "f#2", "Pier tickets are sold inside.", "f"),
]


@pytest.fixture(scope="session")
def judge_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test judge package installed by pip into its own folder (from a copy: nothing lands in tests/)."""
    work = tmp_path_factory.mktemp("judge-plugin")
    source = work / "src"
    shutil.copytree(DATA / "judge_plugin", source)
    site = work / "site"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(site),
            str(source),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return site


@pytest.fixture
def plugin(judge_site, monkeypatch):
    monkeypatch.syspath_prepend(str(judge_site))
    importlib.invalidate_caches()
    yield importlib.import_module("ragtui_test_judge")
    sys.modules.pop("ragtui_test_judge", None)


def _judge(target: str, kind="plugin", timeout: float | None = None, **options) -> PluginJudge:
    extra: dict = {"options": options}
    if timeout is not None:
        extra["timeout"] = timeout
    judge = build_judge(JudgeSpec("p", kind, target, extra, "ragtui.toml [judges.p]"), Settings())
    assert isinstance(judge, PluginJudge)
    return judge


def test_a_factory_plugin_grades_and_says_why(plugin):
    judge = _judge("ragtui_test_judge:make", scale_note=" (ok)")
    assert not judge.loaded  # building ran none of its code
    graded = [(PAIRS[0], 2)]
    assert judge.prepare(SCALE, graded) == "word overlap on 3 grades, 1 graded pairs seen (ok)"
    assert (judge.model_id, judge.batch_size, judge.concurrency) == ("word-overlap", 4, 1)
    verdicts = judge.grade(PAIRS)
    assert [v.grade for v in verdicts] == [plugin.overlap_grade(p.question, p.chunk) for p in PAIRS]
    assert verdicts[0].reason.startswith("shares ") and verdicts[0].ok
    assert judge.version == "2.1.0"  # the distribution's, from its metadata
    key = judge.settings_key
    assert key == _judge("ragtui_test_judge:make", scale_note=" (ok)").settings_key
    assert key != _judge("ragtui_test_judge:make", scale_note="").settings_key  # options count
    judge.close()
    assert judge._loaded is not None and judge._loaded.close is not None


def test_an_entry_point_and_a_plain_function_are_judges(plugin):
    assert {"testjudge", "testjudge-broken"} <= set(judge_entry_point_names())
    judge = _judge("testjudge", kind="entry-point", answer_as="ints")
    judge.prepare(SCALE, [])
    assert [v.grade for v in judge.grade(PAIRS)] == [
        plugin.overlap_grade(p.question, p.chunk) for p in PAIRS
    ]
    function = _judge("ragtui_test_judge:make_function")
    assert function.prepare(SCALE, []) == ""
    assert function.model_id == "ragtui_test_judge:make_function"
    assert [(v.grade, v.reason) for v in function.grade(PAIRS[:2])] == [(1, "always partly")] * 2


@pytest.mark.parametrize(
    ("target", "problem"),
    [
        ("ragtui_test_judge:make_raising_factory", "RuntimeError: no GPU found"),
        ("ragtui_test_judge:make_exiting_factory", "SystemExit: the plugin called sys.exit(3)"),
        ("ragtui_test_judge:make_without_grade", "returned object, which has no grade(pairs)"),
        ("ragtui_test_judge:no_such_factory", "ragtui_test_judge has no no_such_factory"),
        ("ragtui_test_judge:make_exiting_prepare", "prepare: SystemExit"),
    ],
)
def test_a_factory_or_prepare_that_fails_is_the_judges_error(plugin, target, problem):
    judge = _judge(target)
    with pytest.raises(JudgeError) as info:
        judge.prepare(SCALE, [])
    message = str(info.value)
    assert problem in message and message.startswith("ragtui.toml [judges.p]: ")
    assert "\n" not in message
    # Asked again, the same one line (the factory is not called twice).
    if "prepare" not in problem:
        with pytest.raises(JudgeError) as again:
            judge.grade(PAIRS)
        assert str(again.value) == message
        assert judge.model_id == target  # what it falls back on for the journal


@pytest.mark.parametrize(
    ("how", "failure"),
    [
        ("raise", "ValueError: the model server is down"),
        ("exit", "SystemExit: the plugin called sys.exit(7)"),
        ("interrupt", "KeyboardInterrupt: raised by the plugin (no Ctrl-C was pressed)"),
        ("none", "grade returned NoneType, not one answer per pair"),
        ("text", "grade returned str, not one answer per pair"),
        ("dict", "grade returned dict, not one answer per pair"),
        ("fewer", "grade returned 5 answers for 6 pairs"),
        ("more", "grade returned more than 6 answers for 6 pairs"),
        ("endless", "grade returned more than 6 answers for 6 pairs"),
    ],
)
def test_a_batch_the_plugin_cannot_grade_is_one_failure_per_pair(plugin, how, failure):
    judge = _judge("ragtui_test_judge:make_misbehaving", how=how)
    judge.prepare(SCALE, [])
    verdicts = judge.grade(PAIRS)
    assert verdicts == [Verdict(None, failure=failure)] * len(PAIRS)
    # ragtui goes on: the next batch is asked again.
    assert len(judge.grade(PAIRS[:1])) == 1


def test_each_unusable_answer_is_that_pairs_failure(plugin):
    judge = _judge("ragtui_test_judge:make_misbehaving", how="mixed")
    judge.prepare(SCALE, [])
    verdicts = judge.grade(PAIRS)
    assert [(v.grade, v.failure) for v in verdicts] == [
        (None, "grade 7 is not on the scale (0-2)"),
        (None, "unusable answer: a bool, not a grade"),
        (None, "unusable answer: float, not a whole-number grade"),
        (None, "unusable answer: 3 values, not (grade, reason)"),
        (None, "refused to judge"),
        (2, ""),
    ]
    hostile = _judge("ragtui_test_judge:make_misbehaving", how="hostile-text")
    hostile.prepare(SCALE, [])
    # A str subclass whose __str__ raises: read as the plain text it holds, never calling it.
    assert [(v.grade, v.reason) for v in hostile.grade(PAIRS[:2])] == [(1, "evil")] * 2


def test_a_plugin_that_hangs_is_stopped_at_its_deadline(plugin):
    judge = _judge("ragtui_test_judge:make_misbehaving", timeout=0.5, how="hang", seconds=3)
    judge.prepare(SCALE, [])
    started = time.monotonic()
    with pytest.raises(JudgeError) as info:
        judge.grade(PAIRS)
    assert time.monotonic() - started < 2.5
    assert str(info.value) == (
        "ragtui.toml [judges.p]: grade did not return within 0.5 s (its thread is left running)"
    )
    slow = _judge("ragtui_test_judge:make_hanging_prepare", timeout=0.3)
    with pytest.raises(JudgeError, match=r"prepare did not return within 0.3 s"):
        slow.prepare(SCALE, [])


def test_a_section_plugin_gets_its_options_and_timeout(plugin):
    spec = parse_judge_section(
        "mine",
        {"factory": "ragtui_test_judge:make", "options": {"answer_as": "ints"}, "timeout": 2},
    )
    judge = build_judge(spec, Settings())
    assert isinstance(judge, PluginJudge)
    assert (judge.timeout, dict(spec.options["options"])) == (2.0, {"answer_as": "ints"})


def test_build_refuses_a_missing_entry_point_naming_the_installed_ones(plugin):
    with pytest.raises(InputError) as info:
        build_judge(JudgeSpec("e", "entry-point", "nope"), Settings())
    assert "(testjudge, testjudge-broken)" in info.value.message


def test_ragtui_judge_with_a_plugin_and_with_a_broken_one(plugin, mini, capsys, cli_cache_env):
    assert main(["judge", *mini_args(mini, "--retrievers", "bm25", "--judge", "w=testjudge")]) == 0
    lines = [json.loads(x) for x in (mini / "golden" / "labels.jsonl").read_text().splitlines()]
    verdicts = [x for x in lines if x.get("annotator") == "model:w"]
    assert verdicts and {v["model"] for v in verdicts} == {"word-overlap"}
    capsys.readouterr()
    code = main(
        ["judge", *mini_args(mini, "--retrievers", "bm25", "--judge", "b=testjudge-broken")]
    )
    captured = capsys.readouterr()
    assert "RuntimeError: no GPU found" in captured.err + captured.out
    assert "Traceback" not in captured.err
    assert code == 2
