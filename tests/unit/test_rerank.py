"""The reranking stage with a tiny cross-encoder built in a temporary folder (see ``tiny_cross_encoder``
in conftest.py): its lists, its score cache, its latency, and ``<retriever>+rerank`` everywhere."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from ragtui.cli import main
from ragtui.core.analysis.runs import load_run, save_run
from ragtui.core.errors import InputError
from ragtui.core.retrieval.rerank import CrossEncoderModel, RerankCache, pair_key
from ragtui.core.workspace import Workspace
from tests.conftest import mini_args, settings_of


@pytest.fixture
def rerank_settings(mini_settings, tiny_cross_encoder, own_cache):
    """The small corpus with the tiny cross-encoder over hybrid, and a cache of its own (cold but for
    the embeddings)."""
    return replace(mini_settings, rerank=str(tiny_cross_encoder), cache_dir=own_cache)


def _reference_order(
    model: Path, question: str, first_stage: list[str], ws: Workspace
) -> list[str]:
    """The first stage's chunks sorted by the cross-encoder's own scores, computed here, ties by chunk order."""
    from sentence_transformers import CrossEncoder

    scores = CrossEncoder(str(model), device="cpu").predict(
        [(question, ws.passages.by_id[c].text) for c in first_stage]
    )
    return [
        c
        for _, c in sorted(
            zip(scores, first_stage, strict=True), key=lambda p: (-p[0], ws.passages.order[p[1]])
        )
    ]


def test_reranked_list_is_the_first_stage_ordered_by_the_cross_encoder(
    rerank_settings, tiny_cross_encoder, mini_settings
):
    ws = Workspace.open(replace(rerank_settings, depth=5))
    assert ws.retrievers == ["bm25", "vector", "hybrid", "hybrid+rerank"]
    reordered = 0
    for q in ws.questions:
        hybrid = [cid for cid, _ in ws.ranking("hybrid", q.id)]
        reranked = [cid for cid, _ in ws.ranking("hybrid+rerank", q.id)]
        assert sorted(reranked) == sorted(hybrid) and len(hybrid) == 5
        assert reranked == _reference_order(tiny_cross_encoder, q.text, hybrid, ws)
        scores = [s for _, s in ws.ranking("hybrid+rerank", q.id)]
        assert scores == sorted(scores, reverse=True)
        reordered += reranked != hybrid
    assert reordered, "random weights reorder at least one list"
    # Evaluated like any retriever.
    assert ws.evaluation is not None and "hybrid+rerank" in ws.evaluation.per_question
    # Latency: every question timed, all scored now (the cache was cold).
    assert ws.ranked.rerank is not None
    latency = ws.ranked.rerank.latency
    assert latency.questions == len(ws.questions) and latency.scored_now == len(ws.questions)
    assert 0 < latency.median <= latency.p95 and latency.mean > 0


def test_scores_are_cached_and_the_model_not_loaded_again(rerank_settings, monkeypatch):
    first = Workspace.open(rerank_settings)
    cache = RerankCache(
        str(rerank_settings.rerank),
        first.ranked.reranker.model.fingerprint,
        rerank_settings.cache_dir,
    )  # type: ignore[union-attr]
    q = first.questions[0]
    top = first.ranking("hybrid", q.id)
    assert all(cache.get(q.text, first.passages.by_id[cid].text) is not None for cid, _ in top)
    assert len(cache.entries) >= len(top)

    def refuse(self):
        raise AssertionError("the cross-encoder was loaded although every pair is cached")

    monkeypatch.setattr(CrossEncoderModel, "_load", refuse)
    again = Workspace.open(rerank_settings)
    assert again.ranked.rankings["hybrid+rerank"] == first.ranked.rankings["hybrid+rerank"]
    assert again.ranked.rerank is not None and first.ranked.rerank is not None
    assert again.ranked.rerank.scored_now == set()
    # The time measured when the pairs were scored is kept with them.
    assert again.ranked.rerank.seconds == pytest.approx(first.ranked.rerank.seconds)


def test_a_changed_model_rebuilds_the_cache(rerank_settings, tiny_cross_encoder, tmp_path):
    import shutil

    model = tmp_path / "model"
    shutil.copytree(tiny_cross_encoder, model)
    settings = replace(rerank_settings, rerank=str(model))
    Workspace.open(settings)
    config = model / "config.json"
    stamp = config.stat()
    os.utime(config, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 10**9))
    ws = Workspace.load(settings)
    assert any(
        "rerank cache ignored and rebuilt (the model's files changed" in w for w in ws.warnings
    )


def test_a_damaged_cache_is_rebuilt_not_trusted(tmp_path):
    cache = RerankCache("m", "f", tmp_path)
    cache.put("q", "t", 0.5, 0.01)
    cache.save()
    body = json.loads(cache.path.read_text())
    body["scores"][pair_key("q", "t")] = ["high", 0.01]
    cache.path.write_text(json.dumps(body))
    again = RerankCache("m", "f", tmp_path)
    assert again.entries == {} and "is not [score, seconds]" in again.warnings[0]
    assert RerankCache("other", "f", tmp_path).entries == {}


def test_missing_models_are_one_line_errors(mini, capsys, tmp_path):
    base = ["eval", *mini_args(mini)]
    assert main([*base, "--rerank", "ragtui-test/no-such-cross-encoder"]) == 2
    message = capsys.readouterr().err
    assert message.count("\n") == 1
    assert "not a folder and not in the local Hugging Face cache" in message
    assert main([*base, "--rerank", str(tmp_path / "absent")]) == 2
    assert "cross-encoder folder not found" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main([*base, "--rerank", str(tmp_path / "empty")]) == 2
    assert "not a model folder: it has no config.json" in capsys.readouterr().err
    assert main([*base, "--retrievers", "bm25,hybrid+rerank"]) == 2
    assert "hybrid+rerank comes from --rerank MODEL" in capsys.readouterr().err
    with pytest.raises(InputError, match="'mine' cannot be reranked"):
        Workspace.load(settings_of(mini, rerank=str(tmp_path / "empty"), rerank_over="mine"))


def test_rerank_over_bm25_needs_no_embeddings(rerank_settings):
    ws = Workspace.open(replace(rerank_settings, retrievers=("bm25",), rerank_over="bm25"))
    assert ws.retrievers == ["bm25", "bm25+rerank"] and ws.ranked.vector is None
    for q in ws.questions:
        assert {c for c, _ in ws.ranking("bm25+rerank", q.id)} == {
            c for c, _ in ws.ranking("bm25", q.id)
        }


def test_the_reranked_retriever_everywhere(rerank_settings, mini, capsys, monkeypatch):
    monkeypatch.setenv("RAGTUI_CACHE_DIR", str(rerank_settings.cache_dir))
    args = mini_args(mini, "--rerank", str(rerank_settings.rerank))
    # eval: a row, and the latency line.
    assert main(["eval", *args]) == 0
    text = capsys.readouterr().out
    assert "\nhybrid+rerank  " in text
    assert (
        f"hybrid+rerank: {rerank_settings.rerank} re-scored the top 10 of hybrid; latency median"
        in text
    )
    # eval --json: the retriever, and what the stage did.
    assert main(["eval", "--json", *args]) == 0
    body = json.loads(capsys.readouterr().out)
    stage = body["retrievers"]["hybrid+rerank"]["rerank"]
    assert stage["over"] == "hybrid" and stage["depth"] == 10
    assert stage["latency"]["questions"] == 7 and stage["latency"]["scored_now"] == 0
    # export: a TREC run of its own.
    assert main(["export", str(mini / "trec"), *args]) == 0
    capsys.readouterr()
    run = (mini / "trec" / "hybrid+rerank.trec").read_text().splitlines()
    assert run and run[0].split()[5] == "ragtui-hybrid+rerank"
    # compare: against its first stage.
    assert main(["eval", *args, "--compare", "hybrid", "hybrid+rerank"]) == 0
    assert "compare hybrid+rerank against hybrid" in capsys.readouterr().out
    # explain: the reranked list beside the hybrid ranks.
    assert main(["explain", "m02", *args]) == 0
    text = capsys.readouterr().out
    assert "hybrid+rerank: " in text and "rank  chunk" in text
    assert main(["explain", "m02", "--json", *args]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["rerank"]["over"] == "hybrid" and len(body["rerank"]["results"]) == 9
    # saved runs: the retriever and the settings in the manifest.
    ws = Workspace.open(rerank_settings)
    path = save_run(ws, "reranked", mini / "runs")
    saved = load_run(path)
    assert "hybrid+rerank" in saved.retrievers
    assert saved.manifest["rerank"] == rerank_settings.rerank
    assert saved.manifest["rerank_over"] == "hybrid"


def test_a_new_question_is_reranked_too(rerank_settings):
    # Over bm25: a new question's first stage needs no embedding model.
    ws = Workspace.open(replace(rerank_settings, retrievers=("bm25",), rerank_over="bm25"))
    added = ws.add_question(
        "Can the skipper cancel a crossing in a storm?",
        "When the wind exceeds force 8 the skipper may cancel a crossing.",
        qid="new1",
    )
    assert "bm25+rerank" in added.rankings
    first_stage = {c for c, _ in ws.ranking("bm25", "new1")}
    assert first_stage and {c for c, _ in ws.ranking("bm25+rerank", "new1")} == first_stage
    assert np.isfinite([s for _, s in ws.ranking("bm25+rerank", "new1")]).all()
