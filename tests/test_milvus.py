"""Milvus through a real Milvus Lite (pymilvus + milvus-lite), started once per test session.

The collection is built by ``index_collection`` from the small corpus with the real embedding
model; the Milvus retrievers are then held against ragtui's own: BM25 with the same k1 and b and
Lucene's IDF (bm25s) ranks alike, the FLAT index searches exactly as the built-in vector search, and
Milvus's RRF ranker fuses as ragtui's hybrid.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from ragtui.cli import main
from ragtui.core.errors import InputError
from ragtui.core.retrieval.hybrid import rrf_fuse
from ragtui.core.retrieval.milvus import (
    PROP_CHUNKS,
    MilvusRetriever,
    MilvusTarget,
    chunks_fingerprint,
    connect,
    index_collection,
)
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace
from tests.conftest import CRANFIELD, MINI, MINI_CHUNK_SIZE

pytest.importorskip("pymilvus")
pytest.importorskip("milvus_lite")

COLLECTION = "mini"


@pytest.fixture(scope="session")
def base_settings(cache_dir: Path) -> Settings:
    return Settings(
        corpus=MINI / "corpus",
        golden=MINI / "golden",
        chunk_size=MINI_CHUNK_SIZE,
        cache_dir=cache_dir,
        bm25_backend="bm25s",
    )


@pytest.fixture(scope="session")
def lite(tmp_path_factory: pytest.TempPathFactory, base_settings: Settings) -> str:
    """A Milvus Lite file holding the small corpus, indexed once for the session."""
    uri = str(tmp_path_factory.mktemp("milvus") / "ragtui.db")
    ws = Workspace.load(replace(base_settings, retrievers=("vector",)))
    result = index_collection(
        MilvusTarget(uri, COLLECTION),
        ws.chunks,
        base_settings.model,
        cache_root=base_settings.cache_dir,
    )
    assert result.created and result.written == len(ws.chunks) == 9
    return uri


@pytest.fixture(scope="session")
def milvus_ws(
    lite: str, base_settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> Workspace:
    settings = replace(
        base_settings,
        milvus=lite,
        collection=COLLECTION,
        cache_dir=tmp_path_factory.mktemp("answers"),
    )
    # The answer cache is separate, but the embeddings come from the session's cache.
    settings = replace(settings, cache_dir=base_settings.cache_dir)
    return Workspace.open(replace(settings, refresh=True))


def test_the_default_retrievers_gain_the_three_milvus_ones(milvus_ws):
    assert milvus_ws.retrievers == [
        "bm25",
        "vector",
        "hybrid",
        "milvus-bm25",
        "milvus-vector",
        "milvus-hybrid",
    ]
    assert all(s.state == "ready" for s in milvus_ws.live_status.values())


def test_milvus_bm25_ranks_as_bm25s_with_scores_times_k1_plus_1(milvus_ws):
    # Same tokens (\w+, lower case), Lucene's IDF, k1=1.5, b=0.75; Milvus keeps the (k1 + 1)
    # factor that bm25s drops, a constant that cannot change an order.
    for q in milvus_ws.questions:
        ours, theirs = milvus_ws.ranking("bm25", q.id), milvus_ws.ranking("milvus-bm25", q.id)
        assert [c for c, _ in theirs] == [c for c, _ in ours]
        assert np.allclose([s for _, s in theirs], [2.5 * s for _, s in ours], rtol=1e-5)


def test_milvus_flat_search_is_the_exact_vector_search(milvus_ws):
    for q in milvus_ws.questions:
        ours, theirs = milvus_ws.ranking("vector", q.id), milvus_ws.ranking("milvus-vector", q.id)
        assert [c for c, _ in theirs] == [c for c, _ in ours]
        assert np.allclose([s for _, s in theirs], [s for _, s in ours], atol=1e-5)


def test_milvus_rrf_fuses_its_two_lists_as_ragtuis_hybrid(milvus_ws):
    for q in milvus_ws.questions:
        expected = rrf_fuse(
            [milvus_ws.ranking("milvus-bm25", q.id), milvus_ws.ranking("milvus-vector", q.id)],
            milvus_ws.chunk_order,
            milvus_ws.settings.depth,
        )
        found = milvus_ws.ranking("milvus-hybrid", q.id)
        assert np.allclose([s for _, s in found], [s for _, s in expected], atol=1e-6)
        # Equal fused scores may come in another order (Milvus does not break ties by chunk order).
        assert {c for c, _ in found} == {c for c, _ in expected}


def test_the_metrics_agree(milvus_ws):
    ev = milvus_ws.evaluation
    assert ev is not None
    assert ev.summary("milvus-bm25") == ev.summary("bm25")
    assert ev.summary("milvus-vector") == ev.summary("vector")


def test_indexing_again_writes_nothing(lite, base_settings):
    ws = Workspace.load(replace(base_settings, retrievers=("vector",)))
    result = index_collection(MilvusTarget(lite, COLLECTION), ws.chunks, base_settings.model)
    assert (result.written, result.already, result.created) == (0, 9, False)


def test_an_interrupted_index_resumes_where_it_stopped(tmp_path, base_settings):
    uri = str(tmp_path / "resume.db")
    ws = Workspace.load(replace(base_settings, retrievers=("vector",)))
    target = MilvusTarget(uri, "resume")

    def stop_after_first_batch(done: int, total: int) -> None:
        if done >= 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        index_collection(
            target,
            ws.chunks,
            base_settings.model,
            cache_root=base_settings.cache_dir,
            batch=4,
            write_progress=stop_after_first_batch,
        )
    result = index_collection(
        target, ws.chunks, base_settings.model, cache_root=base_settings.cache_dir, batch=4
    )
    assert (result.created, result.written, result.already) == (False, 5, 4)
    client = connect(uri)
    rows = client.query("resume", filter='id != ""', output_fields=["id"])
    assert sorted(r["id"] for r in rows) == sorted(c.id for c in ws.chunks)


def test_a_collection_from_other_chunks_or_another_model_is_refused(lite, base_settings):
    other = Workspace.load(replace(base_settings, retrievers=("vector",), chunk_size=32))
    with pytest.raises(InputError) as caught:
        index_collection(MilvusTarget(lite, COLLECTION), other.chunks, base_settings.model)
    assert (
        "collection 'mini' was built from other chunks (9 chunks, fingerprint"
        in caught.value.message
    )
    assert "choose another --collection, or --replace" in caught.value.message
    same = Workspace.load(replace(base_settings, retrievers=("vector",)))
    with pytest.raises(InputError) as caught:
        index_collection(MilvusTarget(lite, COLLECTION), same.chunks, "some-other-model")
    assert "was built with model 'all-MiniLM-L6-v2', not 'some-other-model'" in caught.value.message
    client = connect(lite)
    props = client.describe_collection(COLLECTION)["properties"]
    assert props[PROP_CHUNKS] == chunks_fingerprint(same.chunks)


def test_a_teams_own_collection_is_read_through_its_fields(tmp_path, base_settings):
    """A collection ragtui did not build: other field names, ids the corpus lacks (their text comes along)."""
    from pymilvus import DataType, Function, FunctionType

    uri = str(tmp_path / "team.db")
    ws = Workspace.open(replace(base_settings, retrievers=("vector",)))
    client = connect(uri)
    schema = client.create_schema(auto_id=False)
    schema.add_field("chunk_id", DataType.VARCHAR, is_primary=True, max_length=200)
    schema.add_field("content", DataType.VARCHAR, max_length=4000, enable_analyzer=True)
    schema.add_field("bm25_sparse", DataType.SPARSE_FLOAT_VECTOR)
    schema.add_field("embedding", DataType.FLOAT_VECTOR, dim=384)
    schema.add_function(
        Function(
            name="bm25",
            function_type=FunctionType.BM25,
            input_field_names=["content"],
            output_field_names=["bm25_sparse"],
        )
    )
    index = client.prepare_index_params()
    index.add_index("embedding", index_type="FLAT", metric_type="COSINE")
    index.add_index("bm25_sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
    client.create_collection("team", schema=schema, index_params=index)
    vectors = ws.embedding_cache().get([c.text for c in ws.chunks])
    client.insert(
        "team",
        [
            {"chunk_id": f"T-{i}", "content": c.text, "embedding": vectors[i].tolist()}
            for i, c in enumerate(ws.chunks)
        ],
    )
    client.close()
    settings = replace(
        base_settings,
        retrievers=("bm25",),
        milvus=uri,
        collection="team",
        live_retrievers=(),
    )
    team = Workspace.open(replace(settings, retrievers=("bm25", "milvus-bm25", "milvus-vector")))
    assert team.live_status["milvus-bm25"].state == "ready"
    top = team.ranking("milvus-bm25", "m03")[0][0]
    assert (
        top.startswith("T-") and team.chunk_by_id[top].text == ws.chunk_by_id["library.md#1"].text
    )
    # The evidence rule grades the team's chunks, so the numbers match ragtui's bm25.
    ev = team.evaluation
    assert ev is not None
    assert ev.summary("milvus-bm25").as_dict() == pytest.approx(ev.summary("bm25").as_dict())
    # Field names given explicitly are checked against the schema.
    wrong = replace(settings, retrievers=("milvus-vector",), milvus_fields=(("vector", "vec"),))
    bad = Workspace.open(wrong)
    assert bad.live_status["milvus-vector"].message == (
        "collection 'team' has no field 'vec' (for vector); it has bm25_sparse, chunk_id, content, embedding"
    )


def test_a_missing_collection_is_one_message(lite, base_settings):
    retriever = MilvusRetriever(
        "milvus-bm25", "bm25", MilvusTarget(lite, "nope"), base_settings.model
    )
    ws = Workspace.load(replace(base_settings, retrievers=("bm25",)))
    from ragtui.core.retrieval.live import run_live

    run = run_live(retriever, [(q.id, q.text) for q in ws.questions], 5)
    assert run.status.state == "failed"
    assert run.status.message == (
        f"{lite}: no collection 'nope' (build it with ragtui index --milvus {lite} --collection nope)"
    )


def test_index_and_eval_from_the_command_line(tmp_path, capsys, cache_dir, monkeypatch):
    monkeypatch.setenv("RAGTUI_CACHE_DIR", str(cache_dir))
    uri = str(tmp_path / "cli.db")
    args = [
        "--corpus",
        str(MINI / "corpus"),
        "--golden",
        str(MINI / "golden"),
        "--chunk-size",
        str(MINI_CHUNK_SIZE),
        "--milvus",
        uri,
        "--collection",
        "cli",
    ]
    assert main(["index", *args]) == 0
    assert (
        "cli: wrote 9 of 9 chunks (384-dim all-MiniLM-L6-v2 embeddings" in capsys.readouterr().out
    )
    assert main(["index", *args]) == 0
    assert capsys.readouterr().out.startswith("cli: already holds these 9 chunks")
    assert (
        main(
            ["eval", "--json", "--retrievers", "bm25,milvus-bm25", "--bm25-backend", "bm25s", *args]
        )
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert (
        report["retrievers"]["milvus-bm25"]["per_question"]
        == report["retrievers"]["bm25"]["per_question"]
    )
    # Another chunking is refused; --replace drops the collection and indexes afresh.
    assert main(["index", *args, "--chunk-size", "32"]) == 2
    assert "collection 'cli' was built from other chunks" in capsys.readouterr().err
    assert main(["index", *args, "--replace"]) == 0
    assert capsys.readouterr().out.startswith("cli: wrote 9 of 9 chunks")
    assert (
        main(["index", *args[:-4], "--milvus", str(tmp_path / "x.lite"), "--collection", "c"]) == 2
    )
    assert capsys.readouterr().err.strip() == (
        f"ragtui: error: {tmp_path / 'x.lite'}: a Milvus Lite file name ends in .db (a server is http(s)://host:19530)"
    )
    assert main(["eval", "--retrievers", "milvus-bm25", "--corpus", str(MINI / "corpus")]) == 2
    assert "milvus-bm25 needs --milvus URI and --collection NAME" in capsys.readouterr().err


def test_pymilvus_is_imported_only_when_milvus_is_used():
    import subprocess
    import sys

    from tests.conftest import ROOT

    code = (
        "import sys\n"
        "from ragtui.core.settings import Settings\n"
        "from ragtui.core.workspace import Workspace\n"
        f"Workspace.load(Settings(corpus={str(MINI / 'corpus')!r}, golden={str(MINI / 'golden')!r}, retrievers=('bm25',)))\n"
        "print(sorted(m for m in ('pymilvus', 'milvus_lite', 'grpc') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.skipif(not CRANFIELD.is_dir(), reason="the Cranfield collection is not there")
def test_milvus_bm25_is_bm25s_on_cranfield(tmp_path):
    """All 225 Cranfield queries at depth 100: the same lists, or the same scores rank by rank (ties)."""
    from ragtui.core.retrieval.bm25 import BM25Retriever

    ws = Workspace.load(Settings(beir=CRANFIELD, chunk_size=None, retrievers=("vector",)))
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(len(ws.chunks), 8)).astype(np.float32)
    target = MilvusTarget(str(tmp_path / "cranfield.db"), "cranfield")
    index_collection(target, ws.chunks, "random-8", vectors=vectors)
    milvus = MilvusRetriever("milvus-bm25", "bm25", target, "random-8")
    ours = BM25Retriever(ws.chunks, backend="bm25s")
    texts = [q.text for q in ws.questions]
    found = [
        hits
        for i in range(0, len(texts), 32)
        for hits in milvus.search_batch(texts[i : i + 32], 100)
    ]
    milvus.close()
    identical = 0
    for text, hits in zip(texts, found, strict=True):
        expected = ours.search(text, 100)
        if [h.id for h in hits] == [c for c, _ in expected]:
            identical += 1
        assert np.allclose([h.score for h in hits], [2.5 * s for _, s in expected], rtol=1e-5)
    assert identical >= 0.95 * len(texts)
