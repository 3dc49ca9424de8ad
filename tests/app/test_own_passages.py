"""Each retriever is scored against the relevant set of what it searches (issue 22).

ragtui's retrievers search ragtui's chunks, so their judgements are fixed whatever a live retriever
returns: a passage ragtui does not hold counts for the retriever that returned it and never for the
others, and a passage whose text is one of ragtui's chunks is that chunk. These tests run the real
retrievers (the bundled data with the real embedding model, and the small corpus with bm25) beside a
plugin and an HTTP service that return such passages.
"""

from __future__ import annotations

import importlib
import json
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragtui.cli import main
from ragtui.core.data.golden import normalize_ws
from ragtui.core.retrieval.base import Hit
from ragtui.core.retrieval.live import LiveRun, parse_retriever_spec
from ragtui.core.workspace import LiveResult, Workspace
from tests.conftest import ROOT
from tests.live_servers import serve

#: The issue's three-line plugin: one passage ragtui does not hold, holding q01's evidence.
PLUGIN = """
def make():
    return lambda q, d: [("extra-1", 1.0, "| PS-07 | Kromme Vaart | PV-12 Kerkpolder | 42 |")]
"""

#: A plugin returning what bm25 returned, under its own ids and with its white space changed: the
#: same passages as ragtui's chunks, which must score exactly as bm25 does.
SAME_TEXT = """
import json, os

_answers = json.loads(open(os.environ["RAGTUI_TEST_ANSWERS"], encoding="utf-8").read())


def make():
    def search(question, depth):
        return [
            {"id": f"svc-{i}-{n}", "score": 10.0 - n, "text": "  " + "\\n ".join(text.split(" ")) + "\\n"}
            for n, (i, text) in enumerate(_answers.get(question, [])[:depth])
        ]
    return search
"""


@pytest.fixture
def plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The two plugins as modules on ``sys.path``."""
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "extra_plugin.py").write_text(PLUGIN)
    (folder / "same_text_plugin.py").write_text(SAME_TEXT)
    monkeypatch.syspath_prepend(str(folder))
    importlib.invalidate_caches()
    yield folder
    for name in ("extra_plugin", "same_text_plugin"):
        sys.modules.pop(name, None)


@pytest.fixture
def bundled(tmp_path: Path) -> list[str]:
    """The bundled corpus with a writable copy of the bundled golden set."""
    golden = tmp_path / "golden"
    shutil.copytree(ROOT / "golden", golden)
    return ["--corpus", str(ROOT / "corpus"), "--golden", str(golden)]


def _eval_json(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    assert main(["eval", "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def _without_live_keys(report: dict, name: str) -> dict:
    """A built-in retriever's entry, as comparable across runs."""
    return report["retrievers"][name]


def test_a_plugin_passage_moves_no_builtin_number_on_the_bundled_set(
    bundled, plugins, capsys, cli_cache_env
):
    # A retriever with passages of its own makes every row evidence-level (docs/metrics.md#units):
    # the built-in rows are then those of --unit evidence without it, to the last digit.
    before = _eval_json([*bundled, "--unit", "evidence"], capsys)
    after = _eval_json([*bundled, "--retriever", "extra=extra_plugin:make"], capsys)
    assert after["unit"] == before["unit"] == "evidence"
    for name in ("bm25", "vector", "hybrid"):
        # Every mean and every question's values and rankings, to the last digit.
        assert _without_live_keys(after, name) == _without_live_keys(before, name), name
        assert after["retrievers"][name]["recall_definition"] == "evidence"
        assert "passages" not in after["retrievers"][name]
    extra = after["retrievers"]["extra"]
    assert extra["passages"] == {"returned": 1, "chunk_ids": 0, "mapped": 0, "own": 1, "unknown": 0}
    assert extra["recall_definition"] == "evidence"
    # The passage holds q01's evidence: found at rank 1 for q01, nothing for any other question.
    assert extra["per_question"]["q01"]["first_relevant_rank"] == 1
    assert extra["per_question"]["q01"]["recall"] == 1.0
    assert {q for q, m in extra["per_question"].items() if m["recall"] > 0} == {"q01"}
    # The causes of misses judge it the same way: q01 is no miss; q02 is one.
    assert extra["per_question"]["q01"]["causes"] == []
    assert extra["per_question"]["q02"]["causes"] != []
    assert after["questions"] == before["questions"] and after["skipped"] == before["skipped"]
    # The plain table says it, with the pointer to --chunks.
    assert main(["eval", *bundled, "--retriever", "extra=extra_plugin:make"]) == 0
    printed = capsys.readouterr().out
    assert "extra: 1 passage returned: 0 by ragtui's chunk id, 0 mapped" in printed
    assert "1 its own" in printed and "--chunks FILE.jsonl" in printed
    assert "evidence recall@3" in printed.splitlines()[1]
    assert "evidence level, every row (extra returns passages of its own)" in printed
    # docs/retrievers.md shows this run's output as printed.
    page = (ROOT / "docs" / "retrievers.md").read_text(encoding="utf-8")
    shown = page.split("$ ragtui eval --retriever extra=extra_plugin:make\n", 1)[1].split("```")[0]
    assert shown.strip().splitlines() == printed.strip().splitlines()


COMMANDS = [
    ["eval"],
    ["eval", "--json"],
    ["eval", "--judged", "--by-slice", "--curve"],
    ["eval", "--metrics", "R@3,P@3,RR,nDCG@10,Judged@10,AP"],
    ["eval", "--compare", "bm25", "extra"],
    ["eval", "--explain", "q01"],
    ["eval", "--save", "with-extra"],
    ["why"],
    ["why", "q01"],
    ["why", "--json"],
    ["why", "--by-slice"],
    ["explain", "q01"],
    ["explain", "q01", "--json"],
    ["agreement"],
    ["report", "--format", "markdown"],
    ["report", "--format", "html"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c))
def test_every_command_runs_beside_a_plugin_with_its_own_passages(
    command, bundled, plugins, capsys, cli_cache_env
):
    code = main([*command, *bundled, "--retriever", "extra=extra_plugin:make"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "Traceback" not in captured.err + captured.out


def test_export_and_diff_beside_a_plugin(bundled, plugins, tmp_path, capsys, cli_cache_env):
    args = [*bundled, "--retriever", "extra=extra_plugin:make"]
    out = tmp_path / "out"
    assert main(["export", str(out), *args]) == 0
    qrels = (out / "qrels.trec").read_text()
    # The fixed judgements: ragtui's chunks only; the plugin's passage is in its own run alone.
    assert "extra-1" not in qrels
    assert "extra-1" in (out / "extra.trec").read_text()
    assert main(["eval", "--save", "a", *args]) == 0
    assert main(["eval", "--save", "b", *args]) == 0
    capsys.readouterr()
    assert main(["diff", "a", "b", *args]) == 0
    assert "Traceback" not in capsys.readouterr().err


def test_a_same_text_service_scores_as_the_ranking_it_serves(
    mini_settings, plugins, tmp_path, monkeypatch
):
    base = replace(mini_settings, retrievers=("bm25",), cache_dir=tmp_path / "cache")
    ws = Workspace.load(base)
    text = {c.id: c.text for c in ws.data.chunks}
    answers = {
        q.text: [[i, text[cid]] for i, (cid, _) in enumerate(ws.ranking("bm25", q.id))]
        for q in ws.questions
    }
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(answers))
    monkeypatch.setenv("RAGTUI_TEST_ANSWERS", str(path))
    spec = parse_retriever_spec("svc=same_text_plugin:make")
    ws = Workspace.open(replace(base, live_retrievers=(spec,)))
    ev = ws.evaluation
    assert ev is not None
    assert ws.passages.foreign == {}, "every passage is one of ragtui's chunks"
    assert ws.live.counts["svc"].mapped == ws.live.counts["svc"].returned > 0
    assert ev.unit == "chunks"
    assert ev.summary("svc") == ev.summary("bm25")
    for q in ws.questions:
        assert ws.ranking("svc", q.id) != []
        assert [c for c, _ in ws.ranking("svc", q.id)] == [c for c, _ in ws.ranking("bm25", q.id)]
        assert ev.per_question["svc"][q.id] == ev.per_question["bm25"][q.id]


@pytest.fixture
def http_settings(mini_settings, tmp_path):
    return replace(
        mini_settings, retrievers=("bm25",), bm25_backend="bm25s", cache_dir=tmp_path / "cache"
    )


def test_an_http_service_of_ragtuis_passages_under_other_ids_scores_as_bm25(http_settings):
    with serve(Workspace.load(http_settings).data.chunks) as server:
        spec = parse_retriever_spec(f"ext={server.url}/foreign?q={{query}}&k={{depth}}")
        ws = Workspace.open(replace(http_settings, live_retrievers=(spec,)))
    ev = ws.evaluation
    assert ev is not None
    assert ws.passages.foreign == {}
    counts = ws.live.counts["ext"]
    assert counts.mapped == counts.returned > 0 and counts.own == 0
    assert ev.summary("ext") == ev.summary("bm25")
    for q in ws.questions:
        assert ev.per_question["ext"][q.id] == ev.per_question["bm25"][q.id]


def test_a_service_over_its_own_passages_is_judged_for_itself_alone(http_settings):
    """The FastAPI-like case: another chunking of the same documents behind an HTTP API."""
    alone = Workspace.open(http_settings)
    assert alone.evaluation is not None
    with serve(alone.data.chunks) as server:
        spec = parse_retriever_spec(f"svc={server.url}/passages?q={{query}}&k={{depth}}")
        ws = Workspace.open(replace(http_settings, live_retrievers=(spec,)))
    ev = ws.evaluation
    assert ev is not None
    counts = ws.live.counts["svc"]
    assert counts.own > 0
    # bm25 keeps its numbers, per question, and its relevant sets hold none of the service's passages.
    assert ev.summary("bm25") == alone.evaluation.summary("bm25")
    for q in ws.questions:
        assert ev.per_question["bm25"][q.id] == alone.evaluation.per_question["bm25"][q.id]
        assert not set(ev.gains(q.id)) & set(ws.passages.foreign)
    assert ev.unit == "evidence"
    # Its recall is the share of evidence strings found in a relevant passage of its top k.
    k = ws.settings.k
    for q in ws.questions:
        if q.id not in ev.evaluated:
            continue
        top = [cid for cid, _ in ws.ranking("svc", q.id)[:k]]
        gains = ev.gains_for("svc", q.id)
        texts = [normalize_ws(ws.passages.by_id[c].text) for c in top if gains.get(c, 0) >= 1]
        needles = [normalize_ws(e) for e in q.evidence]
        expected = sum(any(n in t for t in texts) for n in needles) / len(needles)
        assert ev.per_question["svc"][q.id].recall == expected
    # Some passage of its own held evidence and counted for it.
    assert any(
        g >= 1 and c in ws.passages.foreign
        for q in ws.questions
        for c, g in ev.gains_for("svc", q.id).items()
    )


def test_a_hand_grade_of_an_own_passage_counts_for_its_retriever_only(
    mini_settings, plugins, tmp_path
):
    base = replace(mini_settings, retrievers=("bm25",), cache_dir=tmp_path / "cache")
    spec = parse_retriever_spec("extra=extra_plugin:make")
    ws = Workspace.open(replace(base, live_retrievers=(spec,)))
    ev = ws.evaluation
    assert ev is not None
    bm25_before = ev.summary("bm25")
    qid = ws.questions[0].id
    assert ev.per_question["extra"][qid].rr == 0.0
    ws.set_grade(qid, "extra-1", 2)
    assert ev.per_question["extra"][qid].rr == 1.0
    assert ev.summary("bm25") == bm25_before
    assert "extra-1" not in ev.gains(qid)
    assert ws.grades.grade_source(qid, "extra-1") == (2, "hand")


# ---- the property: whatever the live answers, the built-in retrievers' numbers never move --------

_WORDS = st.sampled_from(["ferry", "ticket", "EUR", "book", "late", "storm", "|", "5.80", "the"])


@st.composite
def _answers(draw, texts: list[str], evidence: list[str]) -> list[Hit]:
    hits = []
    for n in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["renamed", "new", "evidence", "empty", "duplicate", "bare"]))
        hid = draw(st.sampled_from([f"x{n}", "x0", "dup", f"y{n}"]))
        if kind == "renamed":
            text = draw(st.sampled_from(texts))
            text = "  " + text.replace(" ", "\n ") if draw(st.booleans()) else text
        elif kind == "new":
            text = " ".join(draw(st.lists(_WORDS, min_size=1, max_size=6)))
        elif kind == "evidence":
            text = "before " + draw(st.sampled_from(evidence)) + " after"
        elif kind == "empty":
            text = ""
        elif kind == "duplicate" and hits:
            hits.append(hits[-1])
            continue
        else:
            text = None
        hits.append(Hit(hid, float(10 - n), text))
    return hits


@pytest.fixture(scope="module")
def base_workspace_settings(tmp_path_factory):
    from ragtui.core.settings import Settings
    from tests.conftest import MINI, MINI_CHUNK_SIZE

    work = tmp_path_factory.mktemp("own-passages")
    shutil.copytree(MINI / "corpus", work / "corpus")
    shutil.copytree(MINI / "golden", work / "golden")
    (work / "plugins").mkdir()
    (work / "plugins" / "extra_plugin.py").write_text(PLUGIN)
    sys.path.insert(0, str(work / "plugins"))
    yield Settings(
        corpus=work / "corpus",
        golden=work / "golden",
        chunk_size=MINI_CHUNK_SIZE,
        cache_dir=work / "cache",
        retrievers=("bm25",),
        live_retrievers=(
            parse_retriever_spec("one=extra_plugin:make"),
            parse_retriever_spec("two=extra_plugin:make"),
        ),
    )
    sys.path.remove(str(work / "plugins"))
    sys.modules.pop("extra_plugin", None)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_random_live_answers_never_move_the_builtin_numbers(base_workspace_settings, data):
    ws = Workspace.load(base_workspace_settings)
    ev = ws.evaluation
    assert ev is not None
    before = {q.id: ev.per_question["bm25"][q.id] for q in ws.questions}
    summary = ev.summary("bm25")
    grades = {q.id: dict(ev.gains(q.id)) for q in ws.questions}
    texts = [c.text for c in ws.data.chunks]
    evidence = [e for q in ws.questions for e in q.evidence]
    runs = {}
    for name in ("one", "two"):
        answers = {q.id: data.draw(_answers(texts, evidence)) for q in ws.questions}
        runs[name] = LiveRun(name, hits=answers)
    ws.apply_live(LiveResult(runs))
    assert ev.summary("bm25") == summary
    for q in ws.questions:
        assert ev.per_question["bm25"][q.id] == before[q.id]
        assert dict(ev.gains(q.id)) == grades[q.id]
        for name in ("one", "two"):
            ranked = [c for c, _ in ws.ranking(name, q.id)]
            assert len(ranked) == len(set(ranked)), "a passage keeps its first place only"
            # A renamed chunk is the chunk: no own passage has the text of one of ragtui's chunks.
            for cid in ranked:
                if cid in ws.passages.foreign:
                    assert (
                        ws.passages.texts.chunk_of(ws.passages.foreign[cid].text, ws.data.chunks)
                        is None
                    )
    # A fresh evaluation from scratch agrees with the one updated in place.
    fresh = ws.evaluate_all()
    assert fresh.summary("bm25") == summary
    for name in ("one", "two"):
        assert fresh.summary(name) == ev.summary(name)


def test_trec_eval_scores_the_export_as_ragtui_does(
    bundled, plugins, tmp_path, capsys, cli_cache_env
):
    """qrels.trec holds the fixed judgements; qrels-extra.trec adds extra's own passages, and
    trec_eval (pytrec_eval) scores each run against its qrels as ragtui does."""
    import pytrec_eval

    args = [*bundled, "--retriever", "extra=extra_plugin:make"]
    report = _eval_json(args, capsys)
    out = tmp_path / "out"
    assert main(["export", str(out), *args]) == 0
    assert not (out / "qrels-bm25.trec").exists()

    def read(path: Path, run: bool) -> dict[str, dict[str, float]]:
        table: dict[str, dict[str, float]] = {}
        for line in path.read_text().splitlines():
            parts = line.split()
            if run:
                table.setdefault(parts[0], {})[parts[2]] = float(parts[4])
            else:
                table.setdefault(parts[0], {})[parts[2]] = int(parts[3])
        return table

    for name, qrels_file in (("bm25", "qrels.trec"), ("extra", "qrels-extra.trec")):
        qrels = read(out / qrels_file, run=False)
        run = read(out / f"{name}.trec", run=True)
        scores = pytrec_eval.RelevanceEvaluator(
            qrels, {"P_3", "recip_rank", "ndcg_cut_3"}
        ).evaluate(run)
        per_question = report["retrievers"][name]["per_question"]
        for qid, values in per_question.items():
            got = scores.get(qid, {"P_3": 0.0, "recip_rank": 0.0, "ndcg_cut_3": 0.0})
            assert got["P_3"] == pytest.approx(values["precision"], abs=1e-4), (name, qid)
            assert got["recip_rank"] == pytest.approx(values["rr"], abs=1e-4), (name, qid)
            assert got["ndcg_cut_3"] == pytest.approx(values["ndcg"], abs=1e-4), (name, qid)


def test_the_app_shows_a_plugin_with_its_own_passages_without_a_traceback(
    mini_settings, plugins, tmp_path
):
    """The issue's crash: ``e`` or the first ``Down`` after the live answers arrive; then every view."""
    from ragtui.tui.app import RagtuiApp
    from tests.app.test_tui import WIDE, FakeEmbedder, result_chunks, run_async, wait_ready

    (plugins / "mini_extra.py").write_text(
        "def make():\n"
        "    return lambda q, d: [('extra-1', 1.0, 'Note: A late book costs 0.25 EUR per day.'),"
        " ('extra-2', 0.5, 'nothing to see')]\n"
    )
    settings = replace(
        mini_settings,
        cache_dir=tmp_path / "cache",
        live_retrievers=(parse_retriever_spec("extra=mini_extra:make"),),
    )

    @run_async
    async def drive() -> None:
        app = RagtuiApp(settings, embedder=FakeEmbedder())
        async with app.run_test(size=WIDE) as pilot:
            await wait_ready(pilot)
            assert result_chunks(app, "extra") == ["extra-1", "extra-2"]
            assert "extra 0 mapped, 2 own" in app.main_screen.sub_title
            for key in ("down", "e", "escape", "down", "down", "j", "2", "escape", "x", "escape"):
                await pilot.press(key)
                await pilot.pause()
            # Grade extra's own passage by hand in its list: its numbers move, bm25's do not.
            ws = app.workspace
            bm25 = ws.evaluation.summary("bm25")
            app.main_screen.focus_retriever("extra")
            await pilot.press("1")
            await pilot.pause()
            await app.workers.wait_for_complete()
            assert ws.evaluation.summary("bm25") == bm25
        sys.modules.pop("mini_extra", None)

    drive()


def test_export_refuses_a_retriever_whose_file_would_overwrite_another(
    bundled, plugins, tmp_path, capsys, cli_cache_env
):
    """A retriever named ``qrels`` (or ``qrels-extra`` beside ``extra``) would overwrite a qrels file."""
    out = tmp_path / "out"
    for names in (
        ["qrels=extra_plugin:make"],
        ["extra=extra_plugin:make", "qrels-extra=extra_plugin:make"],
    ):
        args = [a for n in names for a in ("--retriever", n)]
        assert main(["export", str(out), *bundled, "--retrievers", "bm25", *args]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        errors = [line for line in err if line.startswith("ragtui: error:")]
        assert len(errors) == 1 and "two exports would be written to" in errors[0], err
        assert "Traceback" not in "\n".join(err)
        assert not out.exists()
