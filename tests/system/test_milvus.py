"""Milvus through a real Milvus Lite (pymilvus + milvus-lite), started once per test session.

The collection is built by ``index_collection`` from the small corpus with the real embedding
model; the Milvus retrievers are then held against ragtui's own: BM25 with the same k1 and b and
Lucene's IDF (bm25s) ranks alike, the FLAT index searches exactly as the built-in vector search, and
Milvus's RRF ranker fuses as ragtui's hybrid.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from ragtui.cli import main
from ragtui.core.data.tokenizer import token_counter
from ragtui.core.errors import InputError
from ragtui.core.retrieval.hybrid import rrf_fuse
from ragtui.core.retrieval.milvus import (
    LOG_FILE,
    PROP_CHUNKS,
    CollectionRecord,
    MilvusRetriever,
    MilvusTarget,
    chunks_fingerprint,
    connect,
    index_collection,
)
from ragtui.core.retrieval.windows import chunk_windows
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace
from tests.conftest import CRANFIELD, MINI, MINI_CHUNK_SIZE, ROOT

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
    # Windows on (the default), as ragtui index cuts them: these short chunks are one window each.
    windows = chunk_windows(
        ws.data.chunks, token_counter(base_settings.model), ws.ranked.window_plan
    )
    result = index_collection(
        MilvusTarget(uri, COLLECTION),
        ws.data.chunks,
        base_settings.model,
        windows=windows,
        cache_root=base_settings.cache_dir,
    )
    assert result.created and result.written == len(ws.data.chunks) == 9 == result.windows
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
    assert all(s.state == "ready" for s in milvus_ws.live.status.values())


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


def test_milvus_hybrid_fuses_its_two_lists_as_ragtuis_hybrid(milvus_ws):
    """RRF (k = 60) of the two Milvus lists, computed as ``hybrid`` computes it: equal fused
    scores (common in RRF) in chunk order, so the lists are the very same."""
    for q in milvus_ws.questions:
        expected = rrf_fuse(
            [milvus_ws.ranking("milvus-bm25", q.id), milvus_ws.ranking("milvus-vector", q.id)],
            milvus_ws.passages.order,
            milvus_ws.settings.depth,
        )
        assert milvus_ws.ranking("milvus-hybrid", q.id) == expected
        assert milvus_ws.ranking("milvus-hybrid", q.id) == milvus_ws.ranking("hybrid", q.id)


def test_the_metrics_agree(milvus_ws):
    ev = milvus_ws.evaluation
    assert ev is not None
    assert ev.summary("milvus-bm25") == ev.summary("bm25")
    assert ev.summary("milvus-vector") == ev.summary("vector")


def _windows(ws: Workspace):
    return chunk_windows(ws.data.chunks, token_counter(ws.settings.model), ws.ranked.window_plan)


def test_indexing_again_writes_nothing(lite, base_settings):
    ws = Workspace.load(replace(base_settings, retrievers=("vector",)))
    result = index_collection(
        MilvusTarget(lite, COLLECTION), ws.data.chunks, base_settings.model, windows=_windows(ws)
    )
    assert (result.written, result.already, result.created, result.encoded) == (0, 9, False, 0)


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
            ws.data.chunks,
            base_settings.model,
            cache_root=base_settings.cache_dir,
            batch=4,
            write_progress=stop_after_first_batch,
        )
    result = index_collection(
        target, ws.data.chunks, base_settings.model, cache_root=base_settings.cache_dir, batch=4
    )
    assert (result.created, result.written, result.already) == (False, 5, 4)
    client = connect(uri)
    rows = client.query("resume", filter='id != ""', output_fields=["id"])
    assert sorted(r["id"] for r in rows) == sorted(c.id for c in ws.data.chunks)


def test_a_collection_from_other_chunks_or_another_model_is_refused(lite, base_settings):
    other = Workspace.load(replace(base_settings, retrievers=("vector",), chunk_size=32))
    with pytest.raises(InputError) as caught:
        index_collection(MilvusTarget(lite, COLLECTION), other.data.chunks, base_settings.model)
    assert (
        "collection 'mini' was built from other data (chunks: 9 chunks with fingerprint"
        in caught.value.message
    )
    assert "choose another --collection, or --replace" in caught.value.message
    same = Workspace.load(replace(base_settings, retrievers=("vector",)))
    with pytest.raises(InputError) as caught:
        index_collection(
            MilvusTarget(lite, COLLECTION),
            same.data.chunks,
            "some-other-model",
            windows=_windows(same),
        )
    assert "(model: all-MiniLM-L6-v2, not some-other-model)" in caught.value.message
    client = connect(lite)
    props = client.describe_collection(COLLECTION)["properties"]
    assert props[PROP_CHUNKS] == chunks_fingerprint(same.data.chunks)


def test_a_teams_own_collection_is_read_through_its_fields(tmp_path, base_settings):
    """A collection ragtui did not build: other field names, ids the corpus lacks (their text comes along)."""
    from pymilvus import DataType, Function, FunctionType

    uri = str(tmp_path / "team.db")
    ws = Workspace.open(replace(base_settings, retrievers=("vector",)))
    client = connect(uri, create=True)
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
    vectors = ws.embedding_cache().get([c.text for c in ws.data.chunks])
    client.insert(
        "team",
        [
            {"chunk_id": f"T-{i}", "content": c.text, "embedding": vectors[i].tolist()}
            for i, c in enumerate(ws.data.chunks)
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
    assert team.live.status["milvus-bm25"].state == "ready"
    top = team.ranking("milvus-bm25", "m03")[0][0]
    assert team.passages.by_id[top].text == ws.passages.by_id["library.md#1"].text
    # The evidence rule grades the team's chunks, so the numbers match ragtui's bm25.
    ev = team.evaluation
    assert ev is not None
    assert ev.summary("milvus-bm25").as_dict() == pytest.approx(ev.summary("bm25").as_dict())
    # Field names given explicitly are checked against the schema.
    wrong = replace(settings, retrievers=("milvus-vector",), milvus_fields=(("vector", "vec"),))
    bad = Workspace.open(wrong)
    assert bad.live.status["milvus-vector"].message == (
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
    printed = capsys.readouterr().out
    assert "cli: wrote 9 of 9 chunks and 9 of 9 windows into cli_windows (384-dim" in printed
    assert "cli: encoded 0 of 9 windows; 9 from the embedding cache" in printed
    assert main(["index", *args]) == 0
    assert capsys.readouterr().out.startswith("cli: already holds these 9 chunks")
    assert (
        main(
            ["eval", "--json", "--retrievers", "bm25,milvus-bm25", "--bm25-backend", "bm25s", *args]
        )
        == 0
    )
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert (
        report["retrievers"]["milvus-bm25"]["per_question"]
        == report["retrievers"]["bm25"]["per_question"]
    )
    assert "Milvus's BM25" not in captured.err  # the same formula: nothing to say
    # With rank-bm25 (the default) beside it, the output says the two BM25s differ.
    assert main(["eval", "--retrievers", "bm25,milvus-bm25", *args]) == 0
    said = capsys.readouterr().err
    assert "milvus-bm25 ranks with Milvus's BM25" in said and "--bm25-backend bm25s" in said
    # Another chunking is refused; --replace drops the collection and indexes afresh.
    assert main(["index", *args, "--chunk-size", "32"]) == 2
    assert (
        "collection 'cli' was built from other data (chunking: chunk size 48, overlap 0, "
        "not chunk size 32, overlap 0)" in capsys.readouterr().err
    )
    assert main(["index", *args, "--replace"]) == 0
    assert "\ncli: wrote 9 of 9 chunks and 9 of 9 windows" in capsys.readouterr().out
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
    vectors = rng.normal(size=(len(ws.data.chunks), 8)).astype(np.float32)
    target = MilvusTarget(str(tmp_path / "cranfield.db"), "cranfield")
    index_collection(target, ws.data.chunks, "random-8", vectors=vectors)
    milvus = MilvusRetriever("milvus-bm25", "bm25", target, "random-8")
    ours = BM25Retriever(ws.data.chunks, backend="bm25s")
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


# ---- issue 22: a collection of other data is refused; Milvus Lite's own output never shows -------


def _data_args(corpus: Path, uri: str, collection: str, *extra: str) -> list[str]:
    return [
        "--corpus",
        str(corpus),
        "--golden",
        str(MINI / "golden"),
        "--chunk-size",
        str(MINI_CHUNK_SIZE),
        "--milvus",
        uri,
        "--collection",
        collection,
        *extra,
    ]


def _the_one_error(capsys) -> str:
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ragtui: error: "), captured.err
    assert "Traceback" not in captured.err + captured.out
    return lines[0]


TAIL = "use the settings it was indexed with, or index it again (ragtui index --replace)"


def test_a_collection_of_another_chunking_is_refused_by_every_command(
    lite, tmp_path, capsys, cli_cache_env
):
    """Indexed at --chunk-size 256, searched with 48: the ids collide, the texts differ; refused."""
    args = _data_args(MINI / "corpus", lite, "chunked256")
    assert main(["index", *args, "--chunk-size", "256"]) == 0
    capsys.readouterr()
    expected = (
        f"ragtui: error: {lite}: collection 'chunked256' was indexed from other data than this "
        "workspace's (chunking: chunk size 256, overlap 0, not chunk size 48, overlap 0): its ids "
        f"would name other texts; {TAIL}"
    )
    for command in (
        ["eval"],
        ["eval", "--json", "--retrievers", "bm25,milvus-bm25"],
        ["why"],
        ["explain", "m01"],
        ["export", str(tmp_path / "export")],
    ):
        assert main([*command, *args]) == 2, command
        assert _the_one_error(capsys) == expected, command
    assert not (tmp_path / "export").exists()
    # The app and ragtui experiment load through Workspace.load: the same refusal.
    settings = Settings(
        corpus=MINI / "corpus",
        golden=MINI / "golden",
        chunk_size=MINI_CHUNK_SIZE,
        milvus=lite,
        collection="chunked256",
    )
    with pytest.raises(InputError) as caught:
        Workspace.load(settings)
    assert "ragtui: error: " + caught.value.message == expected
    # With the chunking it was indexed with, it is searched.
    assert main(["eval", "--retrievers", "bm25,milvus-bm25", *args, "--chunk-size", "256"]) == 0


def test_a_collection_of_a_changed_corpus_is_refused(lite, tmp_path, capsys, cli_cache_env):
    corpus = tmp_path / "corpus"
    shutil.copytree(MINI / "corpus", corpus)
    args = _data_args(corpus, lite, "changed_corpus")
    assert main(["index", *args]) == 0
    with (corpus / "ferry.md").open("a", encoding="utf-8") as handle:
        handle.write("\nThe ferry also carries bicycles free of charge on Sundays.\n")
    capsys.readouterr()
    assert main(["eval", *args]) == 2
    line = _the_one_error(capsys)
    assert line.startswith(
        f"ragtui: error: {lite}: collection 'changed_corpus' was indexed from other data than this "
        "workspace's (corpus: content digest "
    ), line
    assert "(documents were added, removed or changed)): its ids would name other texts" in line
    assert "chunking" not in line and "model" not in line


@pytest.fixture(scope="module")
def other_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """all-MiniLM-L6-v2's files under another name, one of them changed: another model to ragtui
    (its files' fingerprint differs) that chunks exactly alike (the same tokenizer)."""
    from ragtui.core.data.tokenizer import resolve_model

    source = Path(resolve_model("all-MiniLM-L6-v2"))
    if not source.is_dir():
        pytest.skip("the embedding model is not installed as a folder")
    folder = tmp_path_factory.mktemp("other-model") / "tuned-minilm"
    folder.mkdir()
    for item in source.iterdir():
        if item.name == "README.md":
            (folder / item.name).write_text(item.read_text(encoding="utf-8") + "\nFine-tuned.\n")
        else:
            (folder / item.name).symlink_to(item)
    return folder


def test_a_collection_of_another_model_is_refused_for_vector_search(
    lite, other_model, capsys, cli_cache_env
):
    args = _data_args(MINI / "corpus", lite, COLLECTION, "--model", str(other_model))
    assert main(["eval", *args]) == 2
    line = _the_one_error(capsys)
    assert line == (
        f"ragtui: error: {lite}: collection 'mini' was indexed from other data than this "
        f"workspace's (model: all-MiniLM-L6-v2, not {other_model}): its vectors are another "
        f"model's; {TAIL}"
    )
    # BM25 alone does not read the vectors: the same chunks are searched without a word.
    assert main(["eval", "--retrievers", "bm25,milvus-bm25", *args]) == 0


def test_the_model_is_known_by_its_files_not_its_name():
    record = CollectionRecord("c" * 64, 9, "all-MiniLM-L6-v2", model_files="f" * 40)
    assert record.model_differences("/models/minilm", "f" * 40) == []
    assert record.model_differences("all-MiniLM-L6-v2", "e" * 40) == [
        "model: all-MiniLM-L6-v2 with other files (fingerprint ffffffffffff, not eeeeeeeeeeee)"
    ]
    assert record.model_differences("other", "") == ["model: all-MiniLM-L6-v2, not other"]


def test_an_interrupted_index_is_refused_until_it_is_finished(tmp_path, capsys, cli_cache_env):
    from ragtui.core.retrieval.live import run_live

    uri = str(tmp_path / "part.db")
    ws = Workspace.load(
        Settings(corpus=MINI / "corpus", golden=MINI / "golden", chunk_size=MINI_CHUNK_SIZE)
    )

    def stop_after_first_batch(done: int, total: int) -> None:
        if done >= 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        index_collection(
            MilvusTarget(uri, "part"),
            ws.data.chunks,
            ws.settings.model,
            batch=4,
            write_progress=stop_after_first_batch,
        )
    retriever = MilvusRetriever("milvus-bm25", "bm25", MilvusTarget(uri, "part"), "x")
    run = run_live(retriever, [(q.id, q.text) for q in ws.questions], 5)
    assert run.status.message == (
        f"{uri}: collection 'part' is incomplete (ragtui index was stopped before it finished); "
        "run ragtui index again to finish it"
    )


def test_a_team_collection_is_searched_with_a_warning_that_it_cannot_be_checked(
    tmp_path, base_settings
):
    """No record (another tool made it): a warning, and the search goes on."""
    from pymilvus import DataType, Function, FunctionType

    uri = str(tmp_path / "plain.db")
    client = connect(uri, create=True)
    schema = client.create_schema(auto_id=False)
    schema.add_field("pk", DataType.VARCHAR, is_primary=True, max_length=200)
    schema.add_field("body", DataType.VARCHAR, max_length=4000, enable_analyzer=True)
    schema.add_field("bm", DataType.SPARSE_FLOAT_VECTOR)
    schema.add_function(
        Function(
            name="bm25",
            function_type=FunctionType.BM25,
            input_field_names=["body"],
            output_field_names=["bm"],
        )
    )
    index = client.prepare_index_params()
    index.add_index("bm", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
    client.create_collection("plain", schema=schema, index_params=index)
    client.insert("plain", [{"pk": "p1", "body": "The library lends books for three weeks."}])
    client.close()
    ws = Workspace.open(
        replace(base_settings, retrievers=("bm25", "milvus-bm25"), milvus=uri, collection="plain")
    )
    assert (
        f"{uri}: collection 'plain' was not built by ragtui index, so whether it holds this "
        "workspace's chunks cannot be checked (docs/retriever-milvus.md)"
    ) in ws.warnings
    assert ws.live.status["milvus-bm25"].state == "ready"


def _ragtui(*argv: str, cache: Path, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    """``python -m ragtui ARGV`` in a child process: its real stderr, and a hang fails, not blocks."""
    return subprocess.run(
        [sys.executable, "-m", "ragtui", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "RAGTUI_CACHE_DIR": str(cache)},
    )


def _one_line(done: subprocess.CompletedProcess[str]) -> str:
    """Exit 2, one line on stderr, no traceback or Milvus log anywhere."""
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    lines = done.stderr.splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert lines[0].startswith("ragtui: error: "), done.stderr
    return lines[0].removeprefix("ragtui: error: ")


def _eval_args(uri: str, collection: str = "c", *extra: str) -> list[str]:
    return ["eval", *_data_args(MINI / "corpus", uri, collection, *extra)]


def test_a_file_or_fifo_where_the_lite_database_should_be_is_one_line(tmp_path, cache_dir):
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"\x00\x01 not a database \xff" * 40)
    assert _one_line(_ragtui(*_eval_args(str(garbage)), cache=cache_dir)) == (
        f"{garbage}: is a file, not a Milvus Lite database (Milvus Lite 3 keeps a database in a "
        "folder of that name)"
    )
    fifo = tmp_path / "fifo.db"
    os.mkfifo(fifo)
    for command in (_eval_args(str(fifo)), ["index", *_eval_args(str(fifo))[1:]]):
        done = _ragtui(*command, cache=cache_dir, timeout=60)  # a hang fails the test
        assert _one_line(done) == f"{fifo}: is a FIFO, not a Milvus Lite database (a folder)"
    assert fifo.exists() and garbage.read_bytes().startswith(b"\x00\x01")


def test_a_read_only_folder_is_one_line(tmp_path, lite, cache_dir):
    """Mode bits, so root (who may write anyway) is told the same as anyone."""
    folder = tmp_path / "shared"
    folder.mkdir()
    copy = folder / "copy.db"
    shutil.copytree(lite, copy)  # a real database (the copy is not locked)
    os.chmod(copy, 0o555)
    os.chmod(folder, 0o555)
    try:
        assert _one_line(_ragtui(*_eval_args(str(copy), COLLECTION), cache=cache_dir)) == (
            f"{copy}: the Milvus Lite database folder is read-only (Milvus Lite locks and writes "
            "it, even to search); copy it to a folder you can write"
        )
        new = folder / "new.db"
        done = _ragtui("index", *_eval_args(str(new))[1:], cache=cache_dir)
        assert _one_line(done) == (
            f"{new}: folder {folder} is read-only: Milvus Lite cannot make its database there"
        )
        assert not new.exists()
    finally:
        os.chmod(folder, 0o755)
        os.chmod(copy, 0o755)


def test_a_bad_collection_name_is_one_line(tmp_path, cache_dir):
    uri = str(tmp_path / "names.db")
    for name in ("bad-name!", "../outside"):
        done = _ragtui("index", *_eval_args(uri, name)[1:], cache=cache_dir)
        assert _one_line(done) == (
            f"--collection: {name!r} is not a Milvus collection name (letters, digits and '_', "
            "starting with a letter or '_', at most 255)"
        )
    assert not Path(uri).exists() and not (tmp_path / "outside").exists()


def test_a_wrong_vector_dimension_is_one_line(tmp_path, cache_dir):
    """A team's collection of 8-dim vectors searched with a 384-dim model."""
    uri = str(tmp_path / "team8.db")
    make = (
        "import sys\n"
        "from pymilvus import DataType, MilvusClient\n"
        "client = MilvusClient(sys.argv[1])\n"
        "schema = client.create_schema(auto_id=False)\n"
        "schema.add_field('id', DataType.VARCHAR, is_primary=True, max_length=100)\n"
        "schema.add_field('text', DataType.VARCHAR, max_length=1000)\n"
        "schema.add_field('vec', DataType.FLOAT_VECTOR, dim=8)\n"
        "index = client.prepare_index_params()\n"
        "index.add_index('vec', index_type='FLAT', metric_type='IP')\n"
        "client.create_collection('team', schema=schema, index_params=index)\n"
        "client.insert('team', [{'id': 'a', 'text': 'hello', 'vec': [0.1] * 8}])\n"
    )
    made = subprocess.run(
        [sys.executable, "-c", make, uri], capture_output=True, text=True, timeout=60
    )
    assert made.returncode == 0, made.stderr
    done = _ragtui(*_eval_args(uri, "team", "--retrievers", "bm25,milvus-vector"), cache=cache_dir)
    assert _one_line(done) == (
        f"{uri}: collection 'team' holds 8-dim vectors, but all-MiniLM-L6-v2 "
        "makes 384-dim ones; give --model the model its vectors were made with"
    )


def test_a_database_open_in_another_process_is_one_line_and_lites_log_goes_to_the_cache(
    lite, tmp_path
):
    """This test session holds the session database open (Milvus Lite locks it): a second process
    is told so in one line; Lite's traceback is in milvus.log in the cache folder."""
    cache = tmp_path / "cache"
    done = _ragtui(*_eval_args(lite, COLLECTION), cache=cache)
    assert _one_line(done) == (
        f"{lite}: is open in another process (Milvus Lite lets one process at a time "
        "use a database); close it there, or work on a copy"
    )
    log = (cache / LOG_FILE).read_text(encoding="utf-8")
    assert "DataDirLockedError" in log and "Traceback" in log
