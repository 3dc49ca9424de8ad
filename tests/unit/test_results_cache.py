"""Start-up that does not grow with the golden set (issue 14): the results cache, the chunk and BM25
index caches, and the arrays behind rankings and evaluation.

Every cache gives exactly what a fresh computation gives; a warm start computes nothing; one
question added or edited is the only one computed again; a cache that is torn, edited or forged is
reported and rebuilt, never used.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import numpy as np
import orjson
import pytest
from rank_bm25 import BM25Okapi

from ragtui.core.data.binary_cache import ArrayStore, CacheMismatch, list_digest
from ragtui.core.data.chunk_cache import cached_chunks, chunking_key
from ragtui.core.data.chunking import Chunk, chunk_documents
from ragtui.core.data.corpus import load_folder
from ragtui.core.data.golden import EvidenceIndex
from ragtui.core.data.tokenizer import token_counter
from ragtui.core.metrics.tables import RankingTable
from ragtui.core.retrieval.bm25 import BM25Retriever, bm25_tokens
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace
from tests.conftest import MINI_CHUNK_SIZE


def _settings(mini: Path, cache: Path, **extra: object) -> Settings:
    return Settings(
        corpus=mini / "corpus",
        golden=mini / "golden",
        chunk_size=MINI_CHUNK_SIZE,
        cache_dir=cache,
        annotator="tester",
        **extra,  # type: ignore[arg-type]
    )


def _fresh(mini: Path, cache: Path) -> Workspace:
    """The workspace computed with no results, chunk or index cache (the same embeddings: the
    model's float32 output depends on which texts share a batch, which is the embedding cache's
    business, not this one's)."""
    root = cache.parent / f"fresh-{len(list(cache.parent.iterdir()))}"
    shutil.copytree(cache / "embeddings", root / "embeddings")
    return Workspace.open(_settings(mini, root))


def _everything(ws: Workspace) -> dict[str, object]:
    """Every ranking (ids and scores), base grade and metric of a workspace, as plain data."""
    ev = ws.evaluation
    assert ev is not None
    return {
        "rankings": {n: {q.id: ws.ranking(n, q.id) for q in ws.questions} for n in ws.retrievers},
        "grades": {q.id: ws.grades.evaluation_grades(q.id) for q in ws.questions},
        "metrics": {n: {q: ev.per_question[n][q] for q in ev.question_ids} for n in ws.retrievers},
        "judged": {n: dict(ev.judged[n]) for n in ws.retrievers},
        "means": {n: ev.summary(n).as_dict() for n in ws.retrievers},
        "skipped": ev.skipped,
    }


class _Counting:
    """Counts the calls of a real method (the method still runs)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, owner: type, name: str) -> None:
        self.calls: list[tuple[object, ...]] = []
        original = getattr(owner, name)

        def counted(obj: object, *args: object, **kwargs: object) -> object:
            self.calls.append(args)
            return original(obj, *args, **kwargs)

        monkeypatch.setattr(owner, name, counted)


def test_a_warm_start_reads_everything_and_equals_a_cold_one(
    mini: Path, own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cold = Workspace.open(_settings(mini, own_cache))
    searches = _Counting(monkeypatch, BM25Retriever, "search")
    matches = _Counting(monkeypatch, EvidenceIndex, "matching_indices")
    warm = Workspace.open(_settings(mini, own_cache))
    assert searches.calls == [] and matches.calls == [], "a warm start computes nothing"
    assert isinstance(warm.ranked.rankings["bm25"], RankingTable)
    assert isinstance(warm.ranked.rankings["hybrid"], RankingTable)
    assert _everything(warm) == _everything(cold)
    assert not [w for w in warm.warnings if "cache" in w]
    # Without the caches, the numbers are the same too (the cache changes nothing).
    assert _everything(_fresh(mini, own_cache)) == _everything(cold)


def test_cached_vectors_give_the_lists_before_any_embedding(mini: Path, own_cache: Path) -> None:
    Workspace.open(_settings(mini, own_cache))
    ws = Workspace.load(_settings(mini, own_cache))
    early = ws.cached_vectors()
    assert early is not None and early.vector is None
    ws.apply_vectors(early)
    assert ws.ranked.vector is None and "hybrid" in ws.retrievers
    shown = _everything(ws)
    result = ws.compute_vectors(known=early)
    assert result is not None and result.vector is not None
    ws.apply_vectors(result)
    assert ws.ranked.vector is not None and ws.ranked.hybrid is not None
    assert _everything(ws) == shown
    # The retriever built afterwards ranks as the cached lists (one query at a time, as float32
    # arithmetic in another order: the scores agree to float32 precision).
    adhoc = ws.search_adhoc(ws.questions[0].text)["vector"]
    listed = ws.ranking("vector", ws.questions[0].id)
    assert [c for c, _ in adhoc] == [c for c, _ in listed]
    assert [s for _, s in adhoc] == pytest.approx([s for _, s in listed], abs=1e-6)
    # The question vectors are embedded when first asked for (why's cosine reads them).
    qid = ws.questions[0].id
    assert qid in ws.ranked.question_vectors and ws.ranked.question_vectors[qid].shape == (384,)


def test_one_question_added_or_edited_is_the_only_one_ranked_again(
    mini: Path, own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Workspace.open(_settings(mini, own_cache))
    path = mini / "golden" / "questions.jsonl"
    lines = path.read_text().splitlines()
    first = orjson.loads(lines[0])
    first["question"] = "How much does a return ticket for the ferry cost an adult?"
    first["evidence"] = ["| return adult | 5.80 EUR |", "Tickets are sold on board"]
    extra = {"id": "m99", "question": "Who may borrow books?", "evidence": "library card"}
    path.write_text(
        "\n".join([orjson.dumps(first).decode(), *lines[1:], orjson.dumps(extra).decode()]) + "\n"
    )
    searches = _Counting(monkeypatch, BM25Retriever, "search")
    matches = _Counting(monkeypatch, EvidenceIndex, "matching_indices")
    ws = Workspace.open(_settings(mini, own_cache))
    assert sorted(args[0] for args in searches.calls) == sorted(
        [first["question"], extra["question"]]
    )
    # Only the two evidence strings never seen before are matched against the chunks.
    assert sorted(args[0] for args in matches.calls) == [
        "Tickets are sold on board",
        "library card",
    ]
    assert _everything(ws) == _everything(_fresh(mini, own_cache))


def test_golden_sets_taking_turns_each_start_without_hashing_a_text(
    mini: Path, own_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A few question lists are remembered: a start with any of them reads its rows at once."""
    from ragtui.core.retrieval import results_cache

    other = tmp_path / "other"
    shutil.copytree(mini / "corpus", other / "corpus")
    shutil.copytree(mini / "golden", other / "golden")
    path = other / "golden" / "questions.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(reversed(lines[1:])) + "\n")
    # Every question backwards: as many rows as the cache holds, none in its place.
    backwards = tmp_path / "backwards"
    shutil.copytree(mini / "corpus", backwards / "corpus")
    shutil.copytree(mini / "golden", backwards / "golden")
    (backwards / "golden" / "questions.jsonl").write_text("\n".join(reversed(lines)) + "\n")
    first = _everything(Workspace.open(_settings(mini, own_cache)))
    second = _everything(Workspace.open(_settings(other, own_cache)))
    third = _everything(Workspace.open(_settings(backwards, own_cache)))
    for part in ("rankings", "metrics"):
        assert third[part] == first[part]
    keys: list[str] = []
    monkeypatch.setattr(results_cache, "_key_of", lambda text: keys.append(text) or b"x" * 20)
    assert _everything(Workspace.open(_settings(mini, own_cache))) == first
    assert _everything(Workspace.open(_settings(other, own_cache))) == second
    assert _everything(Workspace.open(_settings(backwards, own_cache))) == third
    assert keys == [], "no text was hashed one by one"


def _corrupt(folder: Path, how: str) -> None:
    """Damage a results cache folder in one of several ways."""
    manifest = orjson.loads((folder / "manifest.json").read_bytes())
    if how == "torn":
        raw = (folder / "index.npy").read_bytes()
        (folder / "index.npy").write_bytes(raw[: len(raw) // 2])
    elif how == "edited":
        raw = bytearray((folder / "scores.npy").read_bytes())
        raw[-3] ^= 0xFF
        (folder / "scores.npy").write_bytes(bytes(raw))
    elif how in ("out-of-range", "twice", "pickle"):
        # A forger who also rewrites the hash: the contents are still checked.
        import hashlib
        import io

        index = np.load(folder / "index.npy")
        if how == "out-of-range":
            index[0, 0] = 10_000
        elif how == "twice":
            index[0, 1] = index[0, 0]
        buffer = io.BytesIO()
        if how == "pickle":
            np.save(buffer, index.astype(object), allow_pickle=True)
            manifest["arrays"]["index"]["dtype"] = "|O"
        else:
            np.save(buffer, index)
        raw = buffer.getvalue()
        (folder / "index.npy").write_bytes(raw)
        manifest["arrays"]["index"]["sha256"] = hashlib.sha256(raw).hexdigest()
        (folder / "manifest.json").write_bytes(orjson.dumps(manifest))
    elif how == "manifest":
        (folder / "manifest.json").write_bytes(b"{not json")


@pytest.mark.parametrize("how", ["torn", "edited", "out-of-range", "twice", "pickle", "manifest"])
def test_a_damaged_results_cache_is_rebuilt_never_used(
    mini: Path, own_cache: Path, how: str
) -> None:
    cold = Workspace.open(_settings(mini, own_cache))
    for folder in (own_cache / "results").glob("bm25-*"):
        _corrupt(folder, how)
    ws = Workspace.open(_settings(mini, own_cache))
    assert any("results cache ignored and rebuilt" in w for w in ws.warnings), ws.warnings
    assert _everything(ws) == _everything(cold)
    again = Workspace.open(_settings(mini, own_cache))
    assert not [w for w in again.warnings if "cache" in w], "the rebuilt cache is used"


def test_a_damaged_evidence_cache_is_rebuilt(mini: Path, own_cache: Path) -> None:
    cold = Workspace.load(_settings(mini, own_cache))
    for folder in (own_cache / "results").glob("evidence-*"):
        raw = bytearray((folder / "l_codes.npy").read_bytes())
        raw[-1] ^= 0x01
        (folder / "l_codes.npy").write_bytes(bytes(raw))
    ws = Workspace.load(_settings(mini, own_cache))
    assert any("evidence cache ignored and rebuilt" in w for w in ws.warnings)
    assert dict(ws.grades.base) == dict(cold.grades.base)


@pytest.mark.parametrize("damage", [None, 7, "beef", "z" * 64])
def test_a_questions_cache_without_its_digests_is_rebuilt(
    mini: Path, own_cache: Path, damage: object
) -> None:
    """The questions cache keeps the digests of the texts and of the evidence lists, which find
    their rows in the results and evidence caches; a manifest without a digest is not trusted."""
    cold = Workspace.load(_settings(mini, own_cache))
    (manifest,) = (own_cache / "questions").glob("*/manifest.json")
    meta = orjson.loads(manifest.read_bytes())
    meta["meta"]["evidence_digest"] = damage
    manifest.write_bytes(orjson.dumps(meta))
    ws = Workspace.load(_settings(mini, own_cache))
    assert any("questions cache ignored and rebuilt" in w for w in ws.warnings), ws.warnings
    assert list(ws.questions) == list(cold.questions)
    assert dict(ws.grades.base) == dict(cold.grades.base)
    again = Workspace.load(_settings(mini, own_cache))
    assert not [w for w in again.warnings if "cache" in w], "the rebuilt cache is used"
    assert again.questions.evidence()[1] == list_digest([q.evidence for q in cold.questions])


def test_chunks_from_the_cache_equal_chunking_and_a_damaged_cache_is_rebuilt(
    mini: Path, tmp_path: Path
) -> None:
    corpus = load_folder(mini / "corpus", 10**7)
    counter = token_counter(None)
    expected = chunk_documents(corpus.documents, counter, MINI_CHUNK_SIZE, 8)
    root = tmp_path / "cache"
    first, warnings = cached_chunks(corpus.documents, counter, MINI_CHUNK_SIZE, 8, root)
    assert first == expected and warnings == []
    again, warnings = cached_chunks(corpus.documents, counter, MINI_CHUNK_SIZE, 8, root)
    assert again == expected and warnings == []
    assert [c.heading_path for c in again] == [c.heading_path for c in expected]
    # Another overlap is another cache.
    other, _ = cached_chunks(corpus.documents, counter, MINI_CHUNK_SIZE, 0, root)
    assert other == chunk_documents(corpus.documents, counter, MINI_CHUNK_SIZE, 0)
    folder = root / "chunks" / chunking_key(corpus.documents, counter, MINI_CHUNK_SIZE, 8)[:40]
    raw = bytearray((folder / "end.npy").read_bytes())
    raw[-2] ^= 0x40
    (folder / "end.npy").write_bytes(bytes(raw))
    rebuilt, warnings = cached_chunks(corpus.documents, counter, MINI_CHUNK_SIZE, 8, root)
    assert rebuilt == expected and "chunk cache ignored and rebuilt" in warnings[0]


def test_bm25_scores_from_postings_equal_rank_bm25_on_random_corpora(tmp_path: Path) -> None:
    rng = random.Random(3)
    words = [f"w{i}" for i in range(30)] + ["the", "a", "of"]
    for trial in range(30):
        texts = [
            " ".join(rng.choice(words) for _ in range(rng.randint(0, 25)))
            for _ in range(rng.randint(1, 40))
        ]
        texts[0] = texts[0] or "w1"
        chunks = [Chunk(f"d#{i}", "d", i, 0, len(t), t, (), -1) for i, t in enumerate(texts)]
        okapi = BM25Okapi([bm25_tokens(t) for t in texts])
        built = BM25Retriever(chunks, cache_root=tmp_path, chunks_key=f"k{trial}")
        cached = BM25Retriever(chunks, cache_root=tmp_path, chunks_key=f"k{trial}")
        assert built.warnings == cached.warnings == []
        for _ in range(20):
            # Repeated terms, unknown terms, common terms with a floored IDF.
            query = [rng.choice([*words, "zebra"]) for _ in range(rng.randint(1, 6))]
            reference = okapi.get_scores(query)
            assert np.array_equal(built.scores(query), reference)
            assert np.array_equal(cached.scores(query), reference)
            assert cached.search(" ".join(query), 5) == built.search(" ".join(query), 5)


def test_a_damaged_bm25_index_cache_is_rebuilt(tmp_path: Path) -> None:
    texts = ["alpha beta", "beta gamma gamma", "delta"]
    chunks = [Chunk(f"d#{i}", "d", i, 0, len(t), t, (), -1) for i, t in enumerate(texts)]
    first = BM25Retriever(chunks, cache_root=tmp_path, chunks_key="k")
    (folder,) = (tmp_path / "bm25").iterdir()
    raw = bytearray((folder / "idf.npy").read_bytes())
    raw[-1] ^= 0x10
    (folder / "idf.npy").write_bytes(bytes(raw))
    again = BM25Retriever(chunks, cache_root=tmp_path, chunks_key="k")
    assert "BM25 index cache ignored and rebuilt" in again.warnings[0]
    assert again.search("gamma beta", 3) == first.search("gamma beta", 3)


def test_array_store_refuses_what_it_cannot_trust(tmp_path: Path) -> None:
    store = ArrayStore(tmp_path / "s")
    assert store.read() is None
    store.write({"key": "x"}, {"a": np.arange(5, dtype=np.int32)})
    meta, arrays = store.read({"key": "x"})  # type: ignore[misc]
    assert meta["key"] == "x" and arrays["a"].tolist() == [0, 1, 2, 3, 4]
    with pytest.raises(CacheMismatch, match="'key'"):
        store.read({"key": "y"})
    with pytest.raises(TypeError):
        store.write({}, {"o": np.array([object()], dtype=object)})
    # A header claiming a huge shape is refused before any memory is taken.
    import hashlib

    manifest = orjson.loads(store.manifest.read_bytes())
    forged = bytearray((tmp_path / "s" / "a.npy").read_bytes())
    forged = forged.replace(b"(5,)", b"(9999999999,)".ljust(4))
    (tmp_path / "s" / "a.npy").write_bytes(bytes(forged))
    manifest["arrays"]["a"]["sha256"] = hashlib.sha256(bytes(forged)).hexdigest()
    store.manifest.write_bytes(orjson.dumps(manifest))
    with pytest.raises(CacheMismatch):
        store.read({"key": "x"})


def test_worst_first_on_the_arrays_equals_the_per_question_sort(mini_settings: Settings) -> None:
    from ragtui.core.analysis.question_filter import worst_first

    ws = Workspace.open(mini_settings)
    rng = random.Random(5)
    for q in ws.questions[:4]:
        ranked = ws.ranking("bm25", q.id)
        if ranked:
            ws.set_grade(q.id, rng.choice(ranked)[0], rng.choice([0, 1, 2]))
    ev = ws.evaluation
    assert ev is not None
    values = ev.per_question["hybrid"]
    position = {q.id: i for i, q in enumerate(ws.questions)}

    def key(qid: str) -> tuple[int, float, int, int, int]:
        if qid not in ev.evaluated:
            return (1, 0.0, 0, 0, position[qid])
        m = values[qid]
        rank = m.first_relevant_rank
        return (0, m.ndcg, 0 if rank is None else 1, -(rank or 0), position[qid])

    qids = [q.id for q in ws.questions]
    rng.shuffle(qids)
    assert worst_first(ws, qids) == sorted(qids, key=key)
