"""One number everywhere: whatever retrievers are mixed (built-in, a service returning ragtui's texts,
a service over its own chunking, a plugin with passages of its own, a ``--run`` file, ``--chunks``),
every view gives each retriever the same value of each measure, through the real command line:
``eval`` and ``--json`` (means and per question), ``--compare``, ``why``, a saved run read back,
``report``, and trec_eval (pytrec_eval) on the export for what the export says it gives back.

The mixes are drawn at random (seeded), on the bundled data and on Cranfield (BEIR, at chunk level,
where a question's evidence units are its relevant documents).
"""

from __future__ import annotations

import importlib
import json
import random
import re
import shutil
import sys
from pathlib import Path

import pytest
import pytrec_eval

from ragtui.cli import main
from ragtui.core.analysis.runs.saved import load_run
from ragtui.core.data.chunking import Chunk
from ragtui.core.metrics.measures import default_measures
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace
from tests.conftest import CRANFIELD, ROOT
from tests.live_servers import serve

TOLERANCE = 1e-12

#: A plugin with a passage of its own (part of a longer chunk of the bundled corpus).
PLUGIN = """
def make():
    return lambda q, d: [("extra-1", 1.0, "| PS-07 | Kromme Vaart | PV-12 Kerkpolder | 42 |")]
"""


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "one_number_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(folder))
    importlib.invalidate_caches()
    yield "one_number_plugin:make"
    sys.modules.pop("one_number_plugin", None)


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    assert main(argv) == 0, capsys.readouterr()
    captured = capsys.readouterr()
    return captured.out, captured.err


def _trec(path: Path) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 4:  # qrels: qid 0 docid grade
            out.setdefault(parts[0], {})[parts[2]] = int(parts[3])
        else:  # run: qid Q0 docid rank score tag
            out.setdefault(parts[0], {})[parts[2]] = float(parts[4])
    return out


def _check_views(args: list[str], folder: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    """Every view of every retriever against ``eval --json``; returns eval's JSON."""
    report = json.loads(_run(["eval", "--json", *args], capsys)[0])
    k = report["k"]
    names = list(report["retrievers"])
    evaluated = [q for q, m in report["retrievers"][names[0]]["per_question"].items()]
    means = {n: report["retrievers"][n] for n in names}
    fields = {"recall": f"R@{k}", "precision": f"P@{k}", "mrr": "RR", "ndcg": f"nDCG@{k}"}
    per_q = {"recall": "recall", "precision": "precision", "mrr": "rr", "ndcg": "ndcg"}
    for n in names:
        values = means[n]["per_question"]
        assert set(values) == set(evaluated)
        assert means[n]["recall_definition"] == report["unit"]
        for field, key in per_q.items():
            mean = sum(values[q][key] for q in evaluated) / len(evaluated)
            assert abs(mean - means[n][field]) < TOLERANCE, (n, field)

    # --compare: each retriever against the first, the means over the same questions.
    for n in names[1:]:
        compared = json.loads(_run(["eval", "--json", "--compare", names[0], n, *args], capsys)[0])
        metrics = compared["comparison"]["metrics"]
        assert compared["comparison"]["questions"] == len(evaluated)
        for field, measure in fields.items():
            assert abs(metrics[measure]["mean_a"] - means[names[0]][field]) < TOLERANCE
            assert abs(metrics[measure]["mean_b"] - means[n][field]) < TOLERANCE, (n, measure)

    # why: recall now, as eval.
    why = json.loads(_run(["why", "--json", *args], capsys)[0])
    for n in names:
        assert abs(why["retrievers"][n]["recall"] - means[n]["recall"]) < TOLERANCE, n

    # A saved run read back: its systems give the same values, question by question.
    runs = folder / "runs"
    _run(["eval", "--save", "one", "--runs-dir", str(runs), *args], capsys)
    saved = load_run(runs / "one.json")
    assert saved.manifest.get("unit", "chunks") == report["unit"]
    for n in names:
        system = saved.system(n)
        chosen = system.evaluated()
        assert sorted(chosen) == sorted(evaluated)
        for measure, field in zip(
            default_measures(k), ("recall", "precision", "mrr", "ndcg"), strict=True
        ):
            values = system.values(measure, chosen)
            assert abs(float(values.mean()) - means[n][field]) < TOLERANCE, (n, measure.name)

    # The report's table: the same means, as printed (three decimals).
    markdown = _run(["report", *args], capsys)[0]
    for n in names:
        row = next(line for line in markdown.splitlines() if line.startswith(f"| {n} |"))
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[1] == f"{means[n]['recall']:.3f}", (n, cells)
        assert cells[5] == f"{means[n]['ndcg']:.3f}", (n, cells)

    # The export: trec_eval gives back what the export says it does.
    _, said = _run(["export", str(folder / "export"), *args], capsys)
    measures = {f"P_{k}": "precision", "recip_rank": "mrr", f"ndcg_cut_{k}": "ndcg"}
    if report["unit"] == "chunks":
        assert f"recall_{k}" in said
        measures[f"recall_{k}"] = "recall"
    else:
        assert f"not recall@{k}" in said
    for n in names:
        qrels_file = folder / "export" / f"qrels-{n}.trec"
        qrels = _trec(qrels_file if qrels_file.exists() else folder / "export" / "qrels.trec")
        run = _trec(folder / "export" / f"{n}.trec")
        scored = pytrec_eval.RelevanceEvaluator(qrels, set(measures)).evaluate(run)
        # trec_eval averages over the questions of the qrels: the ones eval averages over.
        assert len(qrels) == len(evaluated), n
        for measure, field in measures.items():
            total = sum(scored[q][measure] for q in scored) / len(qrels)
            assert abs(total - means[n][field]) < 1e-9, (n, measure)
    return report


def _halves(chunks: list[Chunk]) -> list[dict]:
    """The bundled chunks cut in two halves at a word (a chunks file of another chunking)."""
    rows = []
    for c in chunks:
        words = c.text.split(" ")
        half = max(1, len(words) // 2)
        for i, part in enumerate((words[:half], words[half:])):
            if part:
                rows.append({"id": f"{c.id}~{i}", "text": " ".join(part), "doc": c.doc})
    return rows


@pytest.mark.parametrize("seed", range(8))
def test_every_view_gives_one_number_for_a_random_mix(
    seed: int, tmp_path: Path, plugin: str, capsys, cli_cache_env
) -> None:
    rng = random.Random(seed)
    golden = tmp_path / "golden"
    shutil.copytree(ROOT / "golden", golden)
    base = ["--corpus", str(ROOT / "corpus"), "--golden", str(golden), "--no-project"]
    builtin = rng.sample(["bm25", "vector", "hybrid"], rng.randint(1, 3))
    ws = Workspace.load(
        Settings(corpus=ROOT / "corpus", golden=golden, retrievers=("bm25",), cache_dir=None)
    )
    if rng.random() < 0.3:
        chunks_file = tmp_path / "chunks.jsonl"
        chunks_file.write_text("".join(json.dumps(r) + "\n" for r in _halves(ws.data.chunks)))
        base = ["--chunks", str(chunks_file), *base[2:]]
    extra: list[str] = []
    run_file = tmp_path / "run.trec"
    if rng.random() < 0.5:
        # A --run file: bm25's ranking reversed in its top 5 (any run ragtui can read).
        lines = []
        for q in ws.questions:
            ranked = [cid for cid, _ in ws.ranking("bm25", q.id)][:5][::-1]
            lines += [f"{q.id} Q0 {cid} {r} {10 - r} x" for r, cid in enumerate(ranked, 1)]
        run_file.write_text("\n".join(lines) + "\n")
        if "--chunks" not in base:
            extra += ["--run", f"rev={run_file}"]
    if rng.random() < 0.5:
        extra += ["--retriever", f"plug={plugin}"]
    paths = rng.sample(["foreign", "passages"], rng.randint(0, 2))
    with serve(ws.data.chunks) as server:
        for path in paths:
            extra += ["--retriever", f"{path}={server.url}/{path}?q={{query}}&k={{depth}}"]
        args = [*base, "--retrievers", ",".join(builtin), *extra]
        report = _check_views(args, tmp_path, capsys)
    own = "plug" in report["retrievers"] or "passages" in report["retrievers"]
    assert report["unit"] == ("evidence" if own else "chunks")
    header = _run(["eval", *args], capsys)[0].splitlines()[1]
    assert header.split()[1:3] == (["evidence", "recall@3"] if own else ["recall@3", "precision@3"])


def test_cranfield_at_chunk_level_with_a_service_of_its_own(tmp_path: Path, capsys, cli_cache_env):
    """Cranfield (qrels, no evidence strings) at chunk level beside a service over its own passages:
    evidence units are the relevant documents, and every view agrees."""
    settings = Settings(beir=CRANFIELD, retrievers=("bm25",), level="chunk", cache_dir=None)
    ws = Workspace.load(settings)
    with serve(ws.data.chunks) as server:
        args = [
            "--beir",
            str(CRANFIELD),
            "--level",
            "chunk",
            "--retrievers",
            "bm25",
            "--no-project",
            "--retriever",
            f"svc={server.url}/passages?q={{query}}&k={{depth}}",
        ]
        report = _check_views(args, tmp_path, capsys)
    assert report["unit"] == "evidence"
    assert re.search(r"relevant chunks", report["definitions"]["recall"])


def test_compare_refuses_runs_of_two_units(tmp_path: Path, capsys, cli_cache_env) -> None:
    golden = tmp_path / "golden"
    shutil.copytree(ROOT / "golden", golden)
    args = ["--corpus", str(ROOT / "corpus"), "--golden", str(golden), "--retrievers", "bm25"]
    runs = ["--runs-dir", str(tmp_path / "runs")]
    _run(["eval", "--save", "chunky", *runs, *args], capsys)
    _run(["eval", "--save", "evident", "--unit", "evidence", *runs, *args], capsys)
    assert main(["eval", "--compare", "chunky", "evident", *runs, *args]) == 2
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 1 and "--unit evidence" in said[0] and "Traceback" not in said[0]


def test_hand_grades_that_do_not_apply_are_counted(tmp_path: Path, capsys, cli_cache_env) -> None:
    """Hand grades made on ragtui's chunks do not apply under --chunks (other ids): eval and report
    say how many, with the pointer to ragtui check, and --json counts them."""
    golden = tmp_path / "golden"
    shutil.copytree(ROOT / "golden", golden)
    labels = [
        {"question": "q01", "chunk": "pumping-stations.md#0", "grade": 2, "annotator": "ann"},
        {"question": "q02", "chunk": "pumping-stations.md#1", "grade": 0, "annotator": "ann"},
    ]
    (golden / "labels.jsonl").write_text("".join(json.dumps(x) + "\n" for x in labels))
    base = ["--golden", str(golden), "--retrievers", "bm25", "--no-project"]
    plain = json.loads(_run(["eval", "--json", "--corpus", str(ROOT / "corpus"), *base], capsys)[0])
    assert plain["grades_not_applying"] == 0
    ws = Workspace.load(Settings(corpus=ROOT / "corpus", golden=golden, retrievers=("bm25",)))
    chunks_file = tmp_path / "chunks.jsonl"
    chunks_file.write_text("".join(json.dumps(r) + "\n" for r in _halves(ws.data.chunks)))
    args = ["--chunks", str(chunks_file), *base]
    _, said = _run(["eval", *args], capsys)
    assert "2 hand grades do not apply to the chunking in use" in said
    assert "ragtui check lists them" in said
    assert json.loads(_run(["eval", "--json", *args], capsys)[0])["grades_not_applying"] == 2
    assert "2 hand grades do not apply" in _run(["report", *args], capsys)[0]


def test_the_apps_panel_shows_evals_numbers_beside_a_plugin(
    tmp_path: Path, plugin: str, capsys, cli_cache_env, cache_dir: Path
) -> None:
    """The app's metric panel reads the same evaluation: evidence-level (``eR@3``) beside a plugin
    with a passage of its own, each retriever's whole-set row equal to eval's means."""
    import asyncio
    from dataclasses import replace

    from ragtui.core.retrieval.live import parse_retriever_spec
    from tests.app.test_tui import make_app, metric_rows, wait_ready

    golden = tmp_path / "golden"
    shutil.copytree(ROOT / "golden", golden)
    args = ["--corpus", str(ROOT / "corpus"), "--golden", str(golden), "--retrievers", "bm25"]
    report = json.loads(
        _run(["eval", "--json", *args, "--no-project", "--retriever", f"plug={plugin}"], capsys)[0]
    )
    assert report["unit"] == "evidence"
    settings = Settings(
        corpus=ROOT / "corpus",
        golden=golden,
        retrievers=("bm25",),
        cache_dir=cache_dir,
        live_retrievers=(parse_retriever_spec(f"plug={plugin}"),),
    )

    async def run() -> None:
        app = make_app(replace(settings))
        async with app.run_test(size=(160, 50)) as pilot:
            await wait_ready(pilot)
            header = app.main_screen.metrics.plain.splitlines()[0]
            assert "eR@3" in header.split()
            rows = metric_rows(app)
            for name in ("bm25", "plug"):
                means = report["retrievers"][name]
                shown = rows[(name, "all")]
                expected = [
                    means[f] for f in ("recall", "precision", "precision_ceiling", "mrr", "ndcg")
                ]
                assert shown == [f"{v:.3f}" for v in expected], name

    asyncio.run(run())


def test_diff_refuses_runs_of_two_units(tmp_path: Path, capsys, cli_cache_env) -> None:
    golden = tmp_path / "golden"
    shutil.copytree(ROOT / "golden", golden)
    args = ["--corpus", str(ROOT / "corpus"), "--golden", str(golden), "--retrievers", "bm25"]
    runs = ["--runs-dir", str(tmp_path / "runs")]
    _run(["eval", "--save", "chunky", *runs, *args], capsys)
    _run(["eval", "--save", "evident", "--unit", "evidence", *runs, *args], capsys)
    assert main(["diff", "chunky", "evident", *runs, *args]) == 2
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 1 and "--unit evidence" in said[0]
    # Two runs of one unit diff as before.
    _run(["eval", "--save", "evident2", "--unit", "evidence", *runs, *args], capsys)
    assert main(["diff", "evident", "evident2", *runs, *args]) == 0
