"""The rankings part of a workspace (``Ranked``, built by ``ranked``): BM25 at load, the vector
and hybrid retrievers, the reranking stage, and the results cache they are read from and written to.

Each slow step has a ``compute_*`` function that only reads (for a worker thread); the
``Workspace.apply_*`` method of the same step adds its result (on the UI thread).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from ragtui.core.data.golden import Question
from ragtui.core.data.tokenizer import model_fingerprint, token_counter
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
from ragtui.core.retrieval.external import ExternalRun
from ragtui.core.retrieval.hybrid import RRF_K, HybridRetriever
from ragtui.core.retrieval.live import examples
from ragtui.core.retrieval.rerank import Reranker, RerankProgress, RerankResult
from ragtui.core.retrieval.results_cache import RankingCache
from ragtui.core.retrieval.vector import VectorRetriever
from ragtui.core.retrieval.window_cache import cached_chunk_windows
from ragtui.core.retrieval.windows import ChunkWindows, WindowPlan
from ragtui.core.settings import Settings
from ragtui.core.workspace.loading import Data, Shared, read_runs, reranker_for, windows_for
from ragtui.core.workspace.question_set import QuestionSet


@dataclass(frozen=True)
class VectorResult:
    """What ``compute_vectors`` found: the vector and hybrid retrievers and their rankings.

    ``cached_vectors`` gives one without retrievers (``vector`` None): every ranking came from the
    results cache, the long chunks' windows from theirs, and the retrievers are built afterwards.
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


@dataclass(frozen=True)
class Ranked:
    """The rankings part of a workspace: each retriever's ranking of each golden question, and the
    built-in retrievers and stages that made them (built by ``ranked``; replaced whole when a
    retriever's rankings arrive, its tables growing by a row when a question is added)."""

    rankings: dict[str, MutableMapping[str, Ranking]]
    bm25: BM25Retriever | None = None
    vector: VectorRetriever | None = None
    hybrid: HybridRetriever | None = None
    question_vectors: Mapping[str, np.ndarray] = field(default_factory=dict)
    #: How chunks longer than the model reads are cut into windows (None: windows off, or the
    #: model's limit unknown); ``windows`` holds every chunk's windows once read with the cached
    #: rankings (``cached_vectors``) or embedded.
    window_plan: WindowPlan | None = None
    windows: ChunkWindows | None = None
    #: The reranking stage (``--rerank``), and what its last run found.
    reranker: Reranker | None = None
    rerank: RerankResult | None = None
    external: Mapping[str, ExternalRun] = field(default_factory=dict)

    def with_rankings(self, name: str, by_question: MutableMapping[str, Ranking]) -> Ranked:
        """This part with ``name``'s rankings replaced."""
        return replace(self, rankings={**self.rankings, name: by_question})

    def rank_new(self, name: str, text: str, depth: int) -> Ranking:
        """One built-in retriever's (or the reranked list's) ranking of a text that was not
        ranked with the golden set."""
        if name == "vector" and self.vector is not None:
            return self.vector.search(text, depth)
        if name == "hybrid" and self.hybrid is not None:
            return self.hybrid.search(text, depth)
        if name == "bm25" and self.bm25 is not None:
            return self.bm25.search(text, depth)
        if self.reranker is not None and name == self.reranker.name:
            over = self.rank_new(self.reranker.over, text, depth)
            ranked = self.reranker.rerank(text, over).ranking
            self.reranker.cache.save()
            return ranked
        return []


def ranked(
    settings: Settings,
    data: Data,
    questions: QuestionSet,
    shared: Shared | None,
    warnings: list[str],
) -> Ranked:
    """The rankings part at load: BM25's (when it is needed: shown, reranked or fused) and the
    external runs', with the windows plan and the reranking stage ready for later."""
    plan = windows_for(settings, data.counter)
    reranker = reranker_for(settings, data.chunks, shared)
    external = read_runs(settings, data, questions.loaded_ids)
    rankings: dict[str, MutableMapping[str, Ranking]] = {n: r.rankings for n, r in external.items()}
    bm25 = None
    needed = settings.needed_retrievers()
    if "bm25" in needed or "hybrid" in needed:
        bm25 = BM25Retriever(
            data.chunks,
            backend=settings.bm25_backend,
            cache_root=settings.cache_dir,
            chunks_key=data.chunks_key,
        )
        warnings.extend(bm25.warnings)
        texts = questions.loaded_texts
        cache = ranking_cache(settings, data, bm25, plan, "bm25")
        table = ranking_table(
            data,
            questions,
            cache,
            lambda rows: [bm25.search(texts.texts[i], settings.depth) for i in rows],
        )
        warnings.extend(w for w in cache.warnings if w not in warnings)
        rankings = {"bm25": table, **rankings}
        empty = table.empty_rows()
        if empty:
            warnings.append(
                f"bm25: {len(empty)} question{'s share' if len(empty) != 1 else ' shares'} no word "
                f"with any chunk (e.g. {examples(empty, 3)}): no results; "
                f"{'they count' if len(empty) != 1 else 'it counts'} as an empty run"
            )
    for run in external.values():
        warnings.extend(run.warnings)
    return Ranked(rankings, bm25, window_plan=plan, reranker=reranker, external=external)


# ---- the results cache -----------------------------------------------------------------------


def ranking_cache(
    settings: Settings,
    data: Data,
    bm25: BM25Retriever | None,
    plan: WindowPlan | None,
    kind: str,
    embedder: TextEncoder | None = None,
) -> RankingCache:
    """The results cache of one built-in retriever, keyed by everything that decides its rankings."""
    key = _ranking_key(settings, data, bm25, plan, kind, embedder)
    return RankingCache(kind, key, len(data.chunks), settings.depth, settings.cache_dir)


def _ranking_key(
    s: Settings,
    data: Data,
    bm25: BM25Retriever | None,
    plan: WindowPlan | None,
    kind: str,
    embedder: TextEncoder | None = None,
) -> dict[str, object]:
    if kind == "bm25":
        return {
            "chunks": data.chunks_key,
            "backend": s.bm25_backend,
            "k1": bm25.k1 if bm25 is not None else 1.5,
            "b": bm25.b if bm25 is not None else 0.75,
        }
    if kind == "vector":
        name = embedder.cache_name if embedder is not None else s.model
        key: dict[str, object] = {
            "chunks": data.chunks_key,
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
        "bm25": _ranking_key(s, data, bm25, plan, "bm25"),
        "vector": _ranking_key(s, data, bm25, plan, "vector", embedder),
    }


def ranking_table(
    data: Data,
    questions: QuestionSet,
    cache: RankingCache,
    rank: Callable[[list[int]], list[Ranking]],
) -> RankingTable:
    """Every loaded question's ranking: read from ``cache``, the rows it lacks ranked by
    ``rank`` (row numbers of the loaded questions -> their rankings) and written back."""
    texts = questions.loaded_texts
    found = cache.lookup(texts)
    if found.missing:
        order = {cid: i for i, cid in enumerate(data.chunk_ids)}
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
        questions.loaded_ids,
        data.chunk_ids,
        found.index,
        found.scores,
        questions.loaded_rows,
        distinct=True,
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


def cached_vectors(
    settings: Settings,
    data: Data,
    questions: QuestionSet,
    ranked: Ranked,
    embedder: TextEncoder | None = None,
) -> VectorResult | None:
    """Every loaded question's vector (and hybrid) ranking from the results cache, without building
    the retrievers (no embedding read, no model); None unless the cache holds them all.

    The app shows these at once and builds the retrievers afterwards (``compute_vectors``).
    """
    if not vectors_needed(settings) or ranked.vector is not None:
        return None
    texts = questions.loaded_texts
    hybrid = "hybrid" in settings.needed_retrievers() and ranked.bm25 is not None
    rankings: dict[str, Mapping[str, Ranking]] = {}
    warnings: list[str] = backend_note(settings)
    for kind in ["vector", "hybrid"] if hybrid else ["vector"]:
        cache = ranking_cache(settings, data, ranked.bm25, ranked.window_plan, kind, embedder)
        found = cache.lookup(texts)
        warnings.extend(cache.warnings)
        if found.missing:
            return None
        rankings[kind] = RankingTable(
            questions.loaded_ids,
            data.chunk_ids,
            found.index,
            found.scores,
            questions.loaded_rows,
            distinct=True,
        )
    # The long chunks' windows these rankings were made with, from their cache: what the vector
    # retriever reads of each chunk (the why column's cut-off) is known from the first screen.
    windows = None
    if ranked.window_plan is not None:
        windows, window_warnings = cached_chunk_windows(
            data.chunks, data.counter, ranked.window_plan, settings.cache_dir
        )
        warnings.extend(window_warnings)
    return VectorResult(None, None, {}, rankings, warnings, windows)


def compute_vectors(
    settings: Settings,
    data: Data,
    questions: QuestionSet,
    ranked: Ranked,
    shared: Shared | None,
    progress: Progress | None = None,
    embedder: TextEncoder | None = None,
    known: VectorResult | None = None,
) -> VectorResult | None:
    """Build the vector (and hybrid) retriever and rank every question with it: rankings the
    results cache holds are read (``known``: already read by ``cached_vectors``), the others
    computed, embedding only the texts the embedding cache lacks.

    Reads the workspace and never changes it, so it may run in a worker thread while the UI
    reads and grades; ``Workspace.apply_vectors`` then adds the result (on the UI thread).
    """
    s = settings
    if not vectors_needed(s):
        return None
    # The questions as loaded: one added since is ranked by ``Workspace.apply_vectors``.
    texts = questions.loaded_texts
    bm25, plan = ranked.bm25, ranked.window_plan
    bm25_rankings = ranked.rankings.get("bm25", {})
    model = embedder
    if model is None and shared is not None:
        key = f"{s.model}\0{s.embedding_backend}"
        if key not in shared.embedders:
            shared.embedders[key] = Embedder(s.model, s.embedding_backend, s.cache_dir)
        model = shared.embedders[key]
    model = model or Embedder(s.model, s.embedding_backend, s.cache_dir)
    depth = s.depth
    vector_cache = ranking_cache(s, data, bm25, plan, "vector", model)
    known_vector = known is not None and "vector" in known.rankings
    found = None if known_vector else vector_cache.lookup(texts)
    missing = found.missing if found is not None else []
    cache = embedding_cache(s, model)
    window_warnings: list[str] = []
    if ranked.windows is not None and ranked.windows.plan == plan:
        windows = ranked.windows  # read with the cached rankings
    else:
        windows, window_warnings = cached_chunk_windows(
            data.chunks, token_counter(s.model), plan, s.cache_dir
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
        data.chunks,
        window_matrix,
        embed_query,
        windows.first_rows,
        plan.mode if plan is not None else "max",
    )
    rankings: dict[str, Mapping[str, Ranking]] = {}
    if known is not None and known_vector:
        rankings["vector"] = known.rankings["vector"]
    else:
        computed = dict(zip(todo, vector.search_vectors(question_matrix, depth), strict=True))
        rankings["vector"] = ranking_table(
            data, questions, vector_cache, lambda rows: [computed[texts.texts[i]] for i in rows]
        )
        warnings.extend(vector_cache.warnings)
    hybrid = None
    if "hybrid" in s.needed_retrievers() and bm25 is not None:
        hybrid = HybridRetriever(bm25, vector, {cid: i for i, cid in enumerate(data.chunk_ids)})
        if known is not None and "hybrid" in known.rankings:
            rankings["hybrid"] = known.rankings["hybrid"]
        else:
            vector_rankings = rankings["vector"]
            ids = questions.loaded_ids
            fuse = hybrid.fuse
            hybrid_cache = ranking_cache(s, data, bm25, plan, "hybrid", model)
            rankings["hybrid"] = ranking_table(
                data,
                questions,
                hybrid_cache,
                lambda rows: [
                    fuse(bm25_rankings.get(ids[i], []), vector_rankings[ids[i]], depth)
                    for i in rows
                ],
            )
            warnings.extend(hybrid_cache.warnings)
    return VectorResult(
        vector,
        hybrid,
        QuestionVectors(questions.by_id, embed_query),
        rankings,
        warnings,
        windows,
    )


# ---- reranking -------------------------------------------------------------------------------


def compute_rerank(
    reranker: Reranker | None,
    first_stage: Mapping[str, Ranking] | None,
    questions: Sequence[Question],
    progress: RerankProgress | None = None,
) -> RerankResult | None:
    """Rerank every golden question's first-stage list with the cross-encoder (slow unless cached).

    Reads the workspace (the first stage must be ready: ``apply_vectors`` done for vector or
    hybrid) and changes only the score cache, so it may run in a worker thread;
    ``Workspace.apply_rerank`` then adds the result.
    """
    if reranker is None:
        return None
    if first_stage is None:
        raise RuntimeError(f"{reranker.over} has no rankings yet: prepare the vectors first")
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
