"""The built-in retrievers' rankings: BM25 at load, the vector and hybrid retrievers, the reranking
stage, and the results cache they are read from and written to.

Each slow step has a ``compute_*`` half that only reads (for a worker thread) and an ``apply_*``
half that changes the workspace (on the UI thread).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ragtui.core.data.chunking import Chunk
from ragtui.core.data.golden import Question
from ragtui.core.data.tokenizer import model_fingerprint, token_counter
from ragtui.core.metrics.evaluation import Evaluation
from ragtui.core.metrics.tables import RankingTable
from ragtui.core.retrieval.base import Ranking
from ragtui.core.retrieval.bm25 import BM25Retriever
from ragtui.core.retrieval.embeddings import (
    Embedder,
    EmbeddingCache,
    Progress,
    TextEncoder,
    model_slug,
    resolve_backend,
)
from ragtui.core.retrieval.hybrid import RRF_K, HybridRetriever
from ragtui.core.retrieval.live import examples
from ragtui.core.retrieval.rerank import Reranker, RerankProgress, RerankResult
from ragtui.core.retrieval.results_cache import RankingCache, TextKeys
from ragtui.core.retrieval.vector import VectorRetriever
from ragtui.core.retrieval.window_cache import cached_chunk_windows
from ragtui.core.retrieval.windows import ChunkWindows, WindowPlan
from ragtui.core.settings import Settings
from ragtui.core.workspace.loading import Shared


@dataclass(frozen=True)
class VectorResult:
    """What ``compute_vectors`` found: the vector and hybrid retrievers and their rankings.

    ``cached_vectors`` gives one without retrievers (``vector`` None): every ranking came from the
    results cache, and the retrievers are built afterwards.
    """

    vector: VectorRetriever | None
    hybrid: HybridRetriever | None
    question_vectors: Mapping[str, np.ndarray]
    rankings: Mapping[str, Mapping[str, Ranking]]
    warnings: list[str]
    windows: ChunkWindows | None = None


class QuestionVectors(Mapping[str, np.ndarray]):
    """Question id -> its embedding, embedded (through the embedding cache) when first asked for."""

    def __init__(
        self, questions: Mapping[str, Question], embed: Callable[[str], np.ndarray]
    ) -> None:
        self._questions, self._embed = questions, embed
        self._done: dict[str, np.ndarray] = {}

    def __getitem__(self, qid: str) -> np.ndarray:
        found = self._done.get(qid)
        if found is None:
            found = self._done[qid] = self._embed(self._questions[qid].text)
        return found

    def __contains__(self, qid: object) -> bool:
        return qid in self._questions

    def __iter__(self) -> Iterator[str]:
        return iter(self._questions)

    def __len__(self) -> int:
        return len(self._questions)


class Ranked(Protocol):
    """What the ranking functions read and change of a workspace (``Workspace`` is one)."""

    settings: Settings
    chunks: list[Chunk]
    questions: list[Question]
    question_by_id: dict[str, Question]
    chunk_order: dict[str, int]
    chunk_ids: list[str]
    chunks_key: str
    #: The golden questions as loaded: the rows of every rankings table.
    loaded_ids: list[str]
    loaded_texts: TextKeys
    loaded_rows: dict[str, int]
    rankings: dict[str, MutableMapping[str, Ranking]]
    evaluation: Evaluation | None
    warnings: list[str]
    bm25: BM25Retriever | None
    vector: VectorRetriever | None
    hybrid: HybridRetriever | None
    question_vectors: Mapping[str, np.ndarray]
    window_plan: WindowPlan | None
    windows: ChunkWindows | None
    reranker: Reranker | None
    rerank: RerankResult | None
    shared: Shared | None

    def evaluated_rankings(
        self, by_question: MutableMapping[str, Ranking]
    ) -> MutableMapping[str, Ranking]:
        """Rankings as the metrics read them (documents at document level)."""
        ...


# ---- the results cache -----------------------------------------------------------------------


def ranking_cache(ws: Ranked, kind: str, embedder: TextEncoder | None = None) -> RankingCache:
    """The results cache of one built-in retriever, keyed by everything that decides its rankings."""
    return RankingCache(
        kind,
        _ranking_key(ws, kind, embedder),
        len(ws.chunks),
        ws.settings.depth,
        ws.settings.cache_dir,
    )


def _ranking_key(ws: Ranked, kind: str, embedder: TextEncoder | None = None) -> dict[str, object]:
    s = ws.settings
    if kind == "bm25":
        return {
            "chunks": ws.chunks_key,
            "backend": s.bm25_backend,
            "k1": ws.bm25.k1 if ws.bm25 is not None else 1.5,
            "b": ws.bm25.b if ws.bm25 is not None else 0.75,
        }
    if kind == "vector":
        name = embedder.cache_name if embedder is not None else s.model
        plan = ws.window_plan
        key: dict[str, object] = {
            "chunks": ws.chunks_key,
            "embedder": model_slug(name, model_fingerprint(name)),
            "tokenizer": model_slug(s.model, model_fingerprint(s.model)),
            "windows": [plan.mode, plan.length, plan.stride] if plan is not None else None,
        }
        backend = embedding_backend(s, embedder)
        if backend != "torch":  # torch's rankings keep the key they had before there was a choice
            key["backend"] = backend
        return key
    return {
        "rrf": RRF_K,
        "bm25": _ranking_key(ws, "bm25"),
        "vector": _ranking_key(ws, "vector", embedder),
    }


def ranking_table(
    ws: Ranked,
    cache: RankingCache,
    texts: TextKeys,
    rank: Callable[[list[int]], list[Ranking]],
) -> RankingTable:
    """Every loaded question's ranking: read from ``cache``, the rows it lacks ranked by
    ``rank`` (row numbers of the loaded questions -> their rankings) and written back."""
    found = cache.lookup(texts)
    if found.missing:
        order = ws.chunk_order
        ranked = rank(found.missing)
        for i, ranking in zip(found.missing, ranked, strict=True):
            found.index[i] = -1
            found.scores[i] = 0.0
            cut = ranking[: cache.depth]
            found.index[i, : len(cut)] = [order[cid] for cid, _ in cut]
            found.scores[i, : len(cut)] = [score for _, score in cut]
    if found.missing or not found.remembered:
        cache.save(texts, found.index, found.scores)
    # No row names a chunk twice: the cache's rows are checked for it when read, and a built-in
    # retriever ranks each chunk once (so evaluation need not look: 10 ms at 100,000 questions).
    return RankingTable(
        ws.loaded_ids,
        [c.id for c in ws.chunks],
        found.index,
        found.scores,
        ws.loaded_rows,
        distinct=True,
    )


# ---- BM25 ------------------------------------------------------------------------------------


def add_bm25(ws: Ranked) -> None:
    """Build BM25 when it is needed (shown, reranked or fused) and rank the loaded questions with it."""
    needed = ws.settings.needed_retrievers()
    if "bm25" not in needed and "hybrid" not in needed:
        return
    settings = ws.settings
    bm25 = ws.bm25 = BM25Retriever(
        ws.chunks,
        backend=settings.bm25_backend,
        cache_root=settings.cache_dir,
        chunks_key=ws.chunks_key,
    )
    ws.warnings.extend(bm25.warnings)
    texts = ws.loaded_texts
    cache = ranking_cache(ws, "bm25")
    table = ranking_table(
        ws, cache, texts, lambda rows: [bm25.search(texts.texts[i], settings.depth) for i in rows]
    )
    ws.warnings.extend(w for w in cache.warnings if w not in ws.warnings)
    ws.rankings["bm25"] = table
    empty = table.empty_rows()
    if empty:
        ws.warnings.append(
            f"bm25: {len(empty)} question{'s share' if len(empty) != 1 else ' shares'} no word "
            f"with any chunk (e.g. {examples(empty, 3)}): no results; "
            f"{'they count' if len(empty) != 1 else 'it counts'} as an empty run"
        )


# ---- vector and hybrid -----------------------------------------------------------------------


def vectors_needed(settings: Settings) -> bool:
    """Whether the settings ask for the vector or hybrid retriever (shown, or reranked)."""
    return bool(settings.needed_retrievers() & {"vector", "hybrid"})


def embedding_backend(settings: Settings, embedder: TextEncoder | None = None) -> str:
    """What the vectors come from, ``torch`` or ``onnx``: the embedder's backend when it names
    one, else the settings' (resolved as ``Embedder`` resolves it)."""
    named = getattr(embedder, "backend", None)
    if isinstance(named, str):
        return named
    name = embedder.cache_name if embedder is not None else settings.model
    return resolve_backend(settings.embedding_backend, name, settings.cache_dir).name


def backend_note(settings: Settings) -> list[str]:
    """The one note saying the embedding model runs on torch although onnx was asked for (or an
    export failed), or nothing."""
    note = resolve_backend(settings.embedding_backend, settings.model, settings.cache_dir).note
    return [note] if note else []


def embedding_cache(settings: Settings, embedder: TextEncoder | None = None) -> EmbeddingCache:
    """The embedding cache of the chosen model (or of the embedder given in its place), for the
    backend its vectors come from."""
    name = embedder.cache_name if embedder is not None else settings.model
    return EmbeddingCache(name, settings.cache_dir, embedding_backend(settings, embedder))


def _wants_hybrid(ws: Ranked) -> bool:
    return "hybrid" in ws.settings.needed_retrievers() and ws.bm25 is not None


def cached_vectors(ws: Ranked, embedder: TextEncoder | None = None) -> VectorResult | None:
    """Every loaded question's vector (and hybrid) ranking from the results cache, without building
    the retrievers (no embedding read, no model); None unless the cache holds them all.

    The app shows these at once and builds the retrievers afterwards (``compute_vectors``).
    """
    if not vectors_needed(ws.settings) or ws.vector is not None:
        return None
    texts = ws.loaded_texts
    kinds = ["vector", "hybrid"] if _wants_hybrid(ws) else ["vector"]
    rankings: dict[str, Mapping[str, Ranking]] = {}
    warnings: list[str] = backend_note(ws.settings)
    for kind in kinds:
        cache = ranking_cache(ws, kind, embedder)
        found = cache.lookup(texts)
        warnings.extend(cache.warnings)
        if found.missing:
            return None
        rankings[kind] = RankingTable(
            ws.loaded_ids,
            ws.chunk_ids,
            found.index,
            found.scores,
            ws.loaded_rows,
            distinct=True,
        )
    return VectorResult(None, None, {}, rankings, warnings)


def compute_vectors(
    ws: Ranked,
    progress: Progress | None = None,
    embedder: TextEncoder | None = None,
    known: VectorResult | None = None,
) -> VectorResult | None:
    """Build the vector (and hybrid) retriever and rank every question with it: rankings the
    results cache holds are read (``known``: already read by ``cached_vectors``), the others
    computed, embedding only the texts the embedding cache lacks.

    Reads the workspace and never changes it, so it may run in a worker thread while the UI
    reads and grades; ``apply_vectors`` then adds the result (on the UI thread).
    """
    if not vectors_needed(ws.settings):
        return None
    # The questions as loaded: one added since is ranked by ``apply_vectors``.
    texts = ws.loaded_texts
    bm25_rankings = ws.rankings.get("bm25", {})
    model = embedder
    s = ws.settings
    if model is None and ws.shared is not None:
        key = f"{s.model}\0{s.embedding_backend}"
        if key not in ws.shared.embedders:
            ws.shared.embedders[key] = Embedder(s.model, s.embedding_backend, s.cache_dir)
        model = ws.shared.embedders[key]
    model = model or Embedder(s.model, s.embedding_backend, s.cache_dir)
    depth = ws.settings.depth
    want_hybrid = _wants_hybrid(ws)
    vector_cache = ranking_cache(ws, "vector", model)
    known_vector = known is not None and "vector" in known.rankings
    found = None if known_vector else vector_cache.lookup(texts)
    missing = found.missing if found is not None else []
    cache = embedding_cache(ws.settings, model)
    windows, window_warnings = cached_chunk_windows(
        ws.chunks, token_counter(ws.settings.model), ws.window_plan, ws.settings.cache_dir
    )
    todo = [texts.texts[i] for i in missing]
    matrix = cache.embed(windows.texts + todo, model, progress)
    # Read after embedding: a cache it could not write says so then.
    warnings = [*backend_note(s), *window_warnings, *cache.warnings]
    n = len(windows.texts)
    window_matrix, question_matrix = matrix[:n], matrix[n:]
    by_text: dict[str, np.ndarray] = {t: question_matrix[i] for i, t in enumerate(todo)}

    def embed_query(text: str) -> np.ndarray:
        row: np.ndarray = by_text[text] if text in by_text else cache.embed([text], model)[0]
        return row

    vector = VectorRetriever(
        ws.chunks,
        window_matrix,
        embed_query,
        windows.first_rows,
        ws.window_plan.mode if ws.window_plan is not None else "max",
    )
    rankings: dict[str, Mapping[str, Ranking]] = {}
    if known is not None and known_vector:
        rankings["vector"] = known.rankings["vector"]
    else:
        computed = dict(zip(todo, vector.search_vectors(question_matrix, depth), strict=True))
        rankings["vector"] = ranking_table(
            ws, vector_cache, texts, lambda rows: [computed[texts.texts[i]] for i in rows]
        )
        warnings.extend(vector_cache.warnings)
    hybrid = None
    if want_hybrid and ws.bm25 is not None:
        hybrid = HybridRetriever(ws.bm25, vector, ws.chunk_order)
        if known is not None and "hybrid" in known.rankings:
            rankings["hybrid"] = known.rankings["hybrid"]
        else:
            vector_rankings = rankings["vector"]
            ids = ws.loaded_ids
            fuse = hybrid.fuse
            hybrid_cache = ranking_cache(ws, "hybrid", model)
            rankings["hybrid"] = ranking_table(
                ws,
                hybrid_cache,
                texts,
                lambda rows: [
                    fuse(bm25_rankings.get(ids[i], []), vector_rankings[ids[i]], depth)
                    for i in rows
                ],
            )
            warnings.extend(hybrid_cache.warnings)
    return VectorResult(
        vector,
        hybrid,
        QuestionVectors(ws.question_by_id, embed_query),
        rankings,
        warnings,
        windows,
    )


def apply_vectors(ws: Ranked, result: VectorResult) -> bool:
    """Add vector and hybrid rankings computed by ``compute_vectors`` (or read by
    ``cached_vectors``) and evaluate them; retrievers given with them are kept. Returns whether
    any ranking changed (False: the same lists were applied before)."""
    assert ws.evaluation is not None
    if result.vector is not None:
        ws.vector = result.vector
        ws.hybrid = result.hybrid
        ws.windows = result.windows
        ws.question_vectors = result.question_vectors
    ws.warnings.extend(w for w in result.warnings if w not in ws.warnings)
    changed = False
    for name, given in result.rankings.items():
        current = ws.rankings.get(name)
        if (
            isinstance(given, RankingTable)
            and isinstance(current, RankingTable)
            and given.index is current.index
            and given.scores is current.scores
        ):
            continue  # the same arrays, read earlier: shown and evaluated already
        by_question: MutableMapping[str, Ranking] = (
            given.copy() if isinstance(given, RankingTable) else dict(given)
        )
        # Questions added while the worker ran are ranked now, on this thread (a table holds
        # every loaded question: only those added after the load can be missing).
        added = (
            ws.questions[len(ws.loaded_ids) :] if isinstance(given, RankingTable) else ws.questions
        )
        for q in added:
            if q.id not in by_question:
                by_question[q.id] = rank_new(ws, name, q.text)
        ws.rankings[name] = by_question
        if name in ws.settings.retrievers:
            ws.evaluation.set_rankings(name, ws.evaluated_rankings(by_question))
        changed = True
    return changed


def rank_new(ws: Ranked, name: str, text: str) -> Ranking:
    """One retriever's ranking of a text that was not embedded with the golden set."""
    depth = ws.settings.depth
    if name == "vector" and ws.vector is not None:
        return ws.vector.search(text, depth)
    if name == "hybrid" and ws.hybrid is not None:
        return ws.hybrid.search(text, depth)
    if name == "bm25" and ws.bm25 is not None:
        return ws.bm25.search(text, depth)
    if ws.reranker is not None and name == ws.reranker.name:
        ranked = ws.reranker.rerank(text, rank_new(ws, ws.reranker.over, text)).ranking
        ws.reranker.cache.save()
        return ranked
    return []


# ---- reranking -------------------------------------------------------------------------------


class RerankAsked(Protocol):
    """What ``compute_rerank`` reads: the reranking stage, the first stage's rankings and the
    golden questions (a workspace, or what the app captured of one for a worker thread)."""

    @property
    def reranker(self) -> Reranker | None:
        """The reranking stage (None: none)."""
        ...

    @property
    def rankings(self) -> Mapping[str, Mapping[str, Ranking]]:
        """Each retriever's ranking of each question (the first stage's at least)."""
        ...

    @property
    def questions(self) -> Sequence[Question]:
        """The golden questions."""
        ...


def compute_rerank(ws: RerankAsked, progress: RerankProgress | None = None) -> RerankResult | None:
    """Rerank every golden question's first-stage list with the cross-encoder (slow unless cached).

    Reads the workspace (the first stage must be ready: ``apply_vectors`` done for vector or
    hybrid) and changes only the score cache, so it may run in a worker thread;
    ``apply_rerank`` then adds the result.
    """
    reranker = ws.reranker
    if reranker is None:
        return None
    first_stage = ws.rankings.get(reranker.over)
    if first_stage is None:
        raise RuntimeError(f"{reranker.over} has no rankings yet: prepare the vectors first")
    questions = list(ws.questions)
    rankings: dict[str, Ranking] = {}
    seconds: dict[str, float] = {}
    scored_now: set[str] = set()
    try:
        for i, q in enumerate(questions, start=1):
            done = reranker.rerank(q.text, first_stage.get(q.id, []))
            rankings[q.id] = done.ranking
            seconds[q.id] = done.seconds
            if not done.cached:
                scored_now.add(q.id)
            if progress:
                progress(i, len(questions))
    finally:
        reranker.cache.save()
    return RerankResult(reranker.name, rankings, seconds, scored_now)


def apply_rerank(ws: Ranked, result: RerankResult) -> None:
    """Add the reranked rankings computed by ``compute_rerank`` and evaluate them."""
    assert ws.evaluation is not None
    by_question = dict(result.rankings)
    for q in ws.questions:
        if q.id not in by_question:
            by_question[q.id] = rank_new(ws, result.name, q.text)
    ws.rerank = result
    ws.warnings.extend(result.warnings)
    ws.rankings[result.name] = by_question
    ws.evaluation.set_rankings(result.name, by_question)
