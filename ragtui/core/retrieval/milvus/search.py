"""Searching a Milvus collection as ``milvus-bm25``, ``milvus-vector`` and ``milvus-hybrid``, and the
check that it holds the workspace's chunks (and vectors cut as its windows) before it is searched.

Each search ranks as its built-in counterpart does:

- ``milvus-vector`` on a collection indexed with windows searches the window rows with Milvus's
  grouping search (``group_by_field`` on the chunk id), so a chunk scores its best window, as
  ``vector`` does with ``--windows max``; with ``--windows mean`` a chunk scores the mean of all
  its windows' cosines (every window of the candidate chunks is fetched, and candidates are taken
  by their best window until no chunk left out could score higher). Milvus Lite groups by
  over-fetching a fixed number of windows and can return fewer chunks than asked; ragtui then
  fetches enough windows itself (chunks x the most windows a chunk has) and groups them.
- Equal scores are ordered by chunk order, as ragtui's retrievers order them, and a tie across the
  cut at ``depth`` is resolved by asking for more results until the tie ends.
- ``milvus-hybrid`` is Reciprocal Rank Fusion (k = 60) of the top ``depth`` of the two searches
  above, computed by ragtui as ``hybrid`` computes it (ties by chunk order).

A team's own collection works too: the fields are found from the schema (the primary key, the one
float-vector field, the BM25 function's output and input) and any can be named explicitly with
``--milvus-field ROLE=FIELD`` (roles: id, text, doc, vector, sparse).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragtui.core.errors import InputError
from ragtui.core.retrieval.base import Hit
from ragtui.core.retrieval.hybrid import RRF_K, rrf_fuse
from ragtui.core.retrieval.live_base import LiveError
from ragtui.core.retrieval.milvus.connection import (
    MilvusTarget,
    check_target,
    close_client,
    connect,
    properties,
    reason,
    require_milvus,
)
from ragtui.core.retrieval.milvus.indexing import _quoted
from ragtui.core.retrieval.milvus.record import (
    PROP_CHUNKS,
    PROP_POOLING,
    PROP_ROLE,
    PROP_WINDOW_MAX,
    PROP_WINDOW_ROWS,
    PROP_WINDOWS_COLLECTION,
    CollectionRecord,
    mismatch,
    windows_label,
)
from ragtui.core.retrieval.windows import DEFAULT_WINDOWS
from ragtui.core.text import mask_url

__all__ = ["MAX_LIMIT", "MilvusRetriever", "resolve_fields"]

#: The most results one Milvus search may ask for (a server's ``topk`` limit).
MAX_LIMIT = 16384


@dataclass(frozen=True)
class _Fields:
    id: str
    text: str | None
    doc: str | None
    vector: str | None
    sparse: str | None
    vector_metric: str | None
    vector_dim: int | None = None


def resolve_fields(client: Any, collection: str, overrides: Mapping[str, str]) -> _Fields:
    """The collection's id, text, doc, vector and sparse fields: named ones as given, the rest found from the schema."""
    described = client.describe_collection(collection)
    fields = described.get("fields", [])
    names = {f["name"] for f in fields}
    for role, field_name in overrides.items():
        if field_name not in names:
            raise LiveError(
                f"collection {collection!r} has no field {field_name!r} (for {role}); it has {', '.join(sorted(names))}"
            )

    def type_name(f: dict[str, Any]) -> str:
        return getattr(f.get("type"), "name", str(f.get("type")))

    primary = next((f["name"] for f in fields if f.get("is_primary")), None)
    dense = [f["name"] for f in fields if type_name(f) == "FLOAT_VECTOR"]
    bm25_out: dict[str, str] = {}
    for fn in described.get("functions", []):
        if getattr(fn.get("type"), "name", str(fn.get("type"))) == "BM25":
            for out_name in fn.get("output_field_names", []):
                inputs = fn.get("input_field_names", [])
                bm25_out[out_name] = inputs[0] if inputs else ""
    sparse = overrides.get("sparse") or (next(iter(bm25_out)) if len(bm25_out) == 1 else None)
    text = overrides.get("text") or (bm25_out.get(sparse or "") or None)
    if text is None and "text" in names:
        text = "text"
    doc = overrides.get("doc") or ("doc" if "doc" in names else None)
    vector = overrides.get("vector") or (dense[0] if len(dense) == 1 else None)
    metric = None
    if vector is not None:
        try:
            metric = str(client.describe_index(collection, index_name=vector).get("metric_type"))
        except Exception:
            metric = None
    id_field = overrides.get("id") or primary
    if id_field is None:
        raise LiveError(f"collection {collection!r} has no primary key")
    dim: int | None = None
    for f in fields:
        if f["name"] == vector:
            with contextlib.suppress(TypeError, ValueError):
                dim = int((f.get("params") or {}).get("dim", ""))
    return _Fields(id_field, text, doc, vector, sparse, metric, dim)


@dataclass(frozen=True)
class _Windows:
    """Where a collection's window rows are (``ragtui index`` with windows on)."""

    collection: str
    rows: int
    most: int
    """The most windows one chunk has."""
    chunks: int
    label: str
    pooling: str


class _Order(dict[str, int]):
    """Chunk order for breaking ties; an id the workspace lacks comes after, in the order first seen."""

    def __missing__(self, key: str) -> int:
        value = self[key] = 1 << 40 | len(self)
        return value


@dataclass
class _Group:
    """One chunk found by a grouped search: its best window as a hit, and its window count."""

    hit: Hit
    windows: int


class MilvusRetriever:
    """``milvus-bm25``, ``milvus-vector`` or ``milvus-hybrid`` (RRF of both, as ``hybrid``) on one collection."""

    concurrency = 1
    batch_size = 32
    cacheable = True

    def __init__(
        self,
        name: str,
        search: str,
        target: MilvusTarget,
        model: str,
        cache_root: Path | None = None,
        rrf_k: int = RRF_K,
    ) -> None:
        if search not in ("bm25", "vector", "hybrid"):
            raise ValueError(f"unknown Milvus search {search!r}")
        self.name = name
        self.kind = search
        self.target = target
        self.model = model
        self.cache_root = cache_root
        self.rrf_k = rrf_k
        #: What the collection must hold (the workspace's chunks), set by ``check_collection``.
        self.expected: CollectionRecord | None = None
        #: The workspace's chunk order (equal scores are ordered by it), set by ``check_collection``.
        self.chunk_order: Mapping[str, int] | None = None
        #: How a chunk's windows make its score (``max`` or ``mean``; None: as the collection was
        #: indexed), set by ``check_collection`` from ``--windows``.
        self.pooling: str | None = None
        self._client: Any = None
        self._fields: _Fields | None = None
        self._windows: _Windows | None = None
        self._embedder: Any = None
        self._cache: Any = None
        # A missing milvus extra, a bad collection name or Lite path is one line now (nothing is
        # imported, contacted or started).
        require_milvus(target.is_lite)
        check_target(target)

    def _ready(self) -> tuple[Any, _Fields]:
        """Connect, load the collection, find its fields and check it (once)."""
        if self._client is None or self._fields is None:
            try:
                client = connect(self.target.uri, log_root=self.cache_root)
            except InputError as exc:
                raise LiveError(exc.message) from None
            name = self.target.collection
            try:
                if not client.has_collection(name):
                    raise LiveError(
                        f"{self.target.uri}: no collection {name!r} (build it with ragtui index --milvus {self.target.uri} --collection {name})"
                    )
                props = properties(client, name)
                model = self.model if self.kind != "bm25" else None
                problem = mismatch(name, props, self.expected, model)
                if problem:
                    raise LiveError(f"{self.target.uri}: {problem}")
                client.load_collection(name)
                fields = resolve_fields(client, name, self.target.overrides)
                windows = None
                if self.kind != "bm25":
                    windows = self._windows_of(client, name, props)
                need = {"bm25": ("sparse",), "vector": ("vector",), "hybrid": ("sparse", "vector")}
                for role in need[self.kind]:
                    if role == "vector" and windows is not None:
                        continue
                    if getattr(fields, role) is None:
                        raise LiveError(
                            f"collection {name!r}: no {role} field found for {self.name}; name it with --milvus-field {role}=FIELD"
                        )
                if self.kind != "bm25" and CollectionRecord.read(props) is None:
                    self._check_dim(name, fields.vector_dim)  # ragtui's own: the model is checked
            except LiveError:
                close_client(client)
                raise
            except InputError as exc:
                close_client(client)
                raise LiveError(exc.message) from None
            except Exception as exc:
                close_client(client)
                raise LiveError(f"{self.target.uri}: {reason(exc)}") from None
            self._client, self._fields, self._windows = client, fields, windows
        return self._client, self._fields

    def _windows_of(self, client: Any, name: str, props: Mapping[str, str]) -> _Windows | None:
        """The window rows of a collection ``ragtui index`` built with windows on (None: one
        vector per chunk), checked to be this collection's and loaded."""
        wname = props.get(PROP_WINDOWS_COLLECTION)
        stored = CollectionRecord.read(props)
        if not wname or stored is None:
            return None
        again = f"run ragtui index --milvus {self.target.uri} --collection {name} --replace"
        if not client.has_collection(wname):
            raise LiveError(
                f"{self.target.uri}: collection {name!r} keeps its window vectors in {wname!r}, "
                f"which is not there; {again}"
            )
        wprops = properties(client, wname)
        if wprops.get(PROP_ROLE) != "windows" or wprops.get(PROP_CHUNKS) != stored.chunks:
            raise LiveError(
                f"{self.target.uri}: collection {wname!r} does not hold the windows of {name!r}; {again}"
            )
        client.load_collection(wname)
        try:
            rows = int(props.get(PROP_WINDOW_ROWS, "0"))
            most = int(props.get(PROP_WINDOW_MAX, "1"))
        except ValueError:
            rows, most = 0, 1
        pooling = self.pooling or props.get(PROP_POOLING) or DEFAULT_WINDOWS
        return _Windows(wname, rows, max(1, most), stored.count, stored.windows, pooling)

    def _check_dim(self, collection: str, dim: int | None) -> None:
        """The vector field's dimension against the model's, before a question is sent (Milvus
        would fail every search, each with a traceback in its log)."""
        if dim is None:
            return
        cache = self._embedding_cache()
        vectors = cache.vectors
        if vectors is not None and vectors.size:
            model_dim = int(vectors.shape[1])
        else:
            model_dim = int(self._embedder.encode(["dimension"]).shape[1])
        if model_dim != dim:
            raise LiveError(
                f"{self.target.uri}: collection {collection!r} holds {dim}-dim vectors, but "
                f"{self.model} makes {model_dim}-dim ones; give --model the model its vectors were made with"
            )

    def identity(self) -> dict[str, Any]:
        """The collection, its fingerprint (or row count for one ragtui did not build), the fields,
        the model, the windows and pooling, and the search (with its tie rule and fusion)."""
        client, fields = self._ready()
        name = self.target.collection
        props = properties(client, name)
        content = props.get(PROP_CHUNKS)
        if content is None:
            stats = client.get_collection_stats(name)
            content = f"rows={stats.get('row_count')}"
        windows = self._windows
        return {
            "kind": "milvus",
            "search": self.kind,
            "uri": self.target.uri
            if self.target.is_lite is False
            else str(Path(self.target.uri).expanduser().resolve()),
            "collection": name,
            "content": content,
            "fields": [fields.id, fields.text, fields.doc, fields.vector, fields.sparse],
            "model": self.model if self.kind != "bm25" else None,
            "rrf_k": self.rrf_k if self.kind == "hybrid" else None,
            # Since issue 26: ties by chunk order, RRF computed by ragtui, windows as rows.
            "ranking": "ties by chunk order; hybrid fused by ragtui",
            "windows": None
            if self.kind == "bm25"
            else (windows.label if windows else windows_label(None)),
            "pooling": windows.pooling if windows is not None and self.kind != "bm25" else None,
        }

    def describe(self) -> dict[str, Any]:
        """What a saved run's manifest records (a cluster URI's user info masked)."""
        return {
            "kind": "milvus",
            "uri": mask_url(self.target.uri),
            "collection": self.target.collection,
            "search": self.kind,
            "model": self.model if self.kind != "bm25" else None,
        }

    def _embedding_cache(self) -> Any:
        """The model's embedding cache (read once: questions embedded before, by the vector
        retriever, are not encoded again) and its embedder (loaded on first use)."""
        from ragtui.core.retrieval.embeddings import Embedder, EmbeddingCache

        if self._embedder is None:
            self._embedder = Embedder(self.model)
            self._cache = EmbeddingCache(self.model, self.cache_root)
        return self._cache

    def _embed(self, questions: Sequence[str]) -> list[list[float]]:
        vectors = self._embedding_cache().embed(list(questions), self._embedder)
        return [list(map(float, v)) for v in vectors]

    def _score(self, distance: float, kind: str, fields: _Fields) -> float:
        if kind == "bm25":
            return abs(distance)  # BM25 is never negative; Lite reports it negated
        if kind == "vector" and fields.vector_metric == "L2":
            return -distance  # smaller is nearer: negated so that higher is better, as elsewhere
        return distance

    def _hits(self, rows: Sequence[Any], fields: _Fields, kind: str) -> list[Hit]:
        hits = []
        for row in rows:
            entity = row.get("entity", {}) or {}
            hit_id = entity.get(fields.id, row.get("id"))
            score = self._score(float(row.get("distance", 0.0)), kind, fields)
            text = entity.get(fields.text) if fields.text else None
            doc = entity.get(fields.doc) if fields.doc else None
            hits.append(
                Hit(
                    str(hit_id),
                    score,
                    text if isinstance(text, str) else None,
                    None if doc is None else str(doc),
                )
            )
        return hits

    def _order(self) -> _Order:
        return _Order(self.chunk_order or {})

    def _top(
        self,
        count: int,
        depth: int,
        fetch: Callable[[list[int], int], list[list[Hit]]],
    ) -> list[list[Hit]]:
        """Each question's top ``depth``, equal scores in chunk order. ``fetch(questions, limit)``
        gives each question's best ``limit`` (Milvus's order); one more than ``depth`` is asked
        for, and more again while the last result ties the ``depth``-th (a tie across the cut)."""
        out: list[list[Hit]] = [[] for _ in range(count)]
        if depth <= 0:
            return out
        order = self._order()
        todo = list(range(count))
        limit = min(depth + 1, MAX_LIMIT)
        while todo:
            found = fetch(todo, limit)
            again = []
            for i, hits in zip(todo, found, strict=True):
                crosses = len(hits) >= limit > depth and hits[depth - 1].score == hits[-1].score
                if crosses and limit < MAX_LIMIT:
                    again.append(i)
                    continue
                out[i] = sorted(hits, key=lambda h: (-h.score, order[h.id]))[:depth]
            todo, limit = again, min(limit * 4, MAX_LIMIT)
        return out

    def _plain(
        self, client: Any, fields: _Fields, kind: str, data: Sequence[Any], depth: int
    ) -> list[list[Hit]]:
        """BM25 (``data``: the questions) or one vector per chunk (``data``: their embeddings)."""
        name = self.target.collection
        output = [f for f in (fields.id, fields.text, fields.doc) if f]
        anns = fields.sparse if kind == "bm25" else fields.vector

        def fetch(todo: list[int], limit: int) -> list[list[Hit]]:
            found = client.search(
                name,
                data=[data[i] for i in todo],
                anns_field=anns,
                limit=limit,
                output_fields=output,
            )
            return [self._hits(list(rows), fields, kind) for rows in found]

        return self._top(len(data), depth, fetch)

    def _groups(
        self, client: Any, windows: _Windows, vectors: Sequence[list[float]], limit: int
    ) -> list[list[_Group]]:
        """The best ``limit`` chunks of each question by their best window: Milvus's grouping
        search on the chunk id; where it returns fewer chunks than it could (Milvus Lite's
        grouping over-fetches a fixed number of windows), the windows are fetched and grouped here."""
        found = client.search(
            windows.collection,
            data=list(vectors),
            anns_field="vector",
            limit=limit,
            group_by_field="chunk",
            output_fields=["chunk", "doc", "windows"],
        )
        out = []
        for vector, rows in zip(vectors, found, strict=True):
            groups = self._grouped(rows, limit)
            if len(groups) < min(limit, windows.chunks):
                groups = self._group_here(client, windows, vector, limit)
            out.append(groups)
        return out

    @staticmethod
    def _grouped(rows: Sequence[Any], limit: int) -> list[_Group]:
        """Window rows (best first) as chunks: each chunk's first (best) window, ``limit`` chunks."""
        seen: dict[str, _Group] = {}
        for row in rows:
            entity = row.get("entity", {}) or {}
            chunk = str(entity.get("chunk"))
            if chunk in seen:
                continue
            doc = entity.get("doc")
            hit = Hit(
                chunk, float(row.get("distance", 0.0)), None, None if doc is None else str(doc)
            )
            seen[chunk] = _Group(hit, int(entity.get("windows") or 1))
            if len(seen) == limit:
                break
        return list(seen.values())

    def _group_here(
        self, client: Any, windows: _Windows, vector: list[float], limit: int
    ) -> list[_Group]:
        """Grouping done by ragtui: the best ``limit x most`` windows hold at least ``limit``
        chunks (no chunk has more than ``most`` windows), so their best windows are the top ``limit``."""
        want = min(max(windows.rows, 1), limit * windows.most)
        found = client.search(
            windows.collection,
            data=[vector],
            anns_field="vector",
            limit=want,
            output_fields=["chunk", "doc", "windows"],
        )
        return self._grouped(list(found[0]), limit)

    def _window_scores(
        self, client: Any, windows: _Windows, vector: list[float], groups: Sequence[_Group]
    ) -> dict[str, list[float]]:
        """Every window's score of each chunk in ``groups`` (a filtered search on their ids)."""
        scores: dict[str, list[float]] = {g.hit.id: [] for g in groups}
        part: list[_Group] = []
        parts: list[list[_Group]] = []
        for g in groups:
            if part and sum(p.windows for p in part) + g.windows > MAX_LIMIT:
                parts.append(part)
                part = []
            part.append(g)
        if part:
            parts.append(part)
        for part in parts:
            ids = ", ".join(_quoted(g.hit.id) for g in part)
            found = client.search(
                windows.collection,
                data=[vector],
                anns_field="vector",
                limit=sum(g.windows for g in part),
                filter=f"chunk in [{ids}]",
                output_fields=["chunk"],
            )
            for row in found[0]:
                chunk = str((row.get("entity", {}) or {}).get("chunk"))
                if chunk in scores:
                    scores[chunk].append(float(row.get("distance", 0.0)))
        return scores

    def _windowed(
        self, client: Any, windows: _Windows, vectors: Sequence[list[float]], depth: int
    ) -> list[list[Hit]]:
        """Chunks scored by their windows: the best window (``max``) or the mean of all (``mean``)."""
        if windows.pooling != "mean":

            def fetch(todo: list[int], limit: int) -> list[list[Hit]]:
                found = self._groups(client, windows, [vectors[i] for i in todo], limit)
                return [[g.hit for g in groups] for groups in found]

            return self._top(len(vectors), depth, fetch)
        return [self._mean_top(client, windows, vector, depth) for vector in vectors]

    def _mean_top(
        self, client: Any, windows: _Windows, vector: list[float], depth: int
    ) -> list[Hit]:
        """The top ``depth`` chunks by the mean of their windows' cosines. Candidates come by their
        best window: a chunk never reached scores a mean at most its best window, at most the last
        candidate's; more are taken until the ``depth``-th mean is above that."""
        if depth <= 0:
            return []
        order = self._order()
        limit = depth + 1
        while True:
            groups = self._groups(client, windows, [vector], limit)[0]
            every = len(groups) < limit or limit >= MAX_LIMIT
            bound = -math.inf if every else groups[-1].hit.score
            scores = self._window_scores(client, windows, vector, groups)
            means = [
                Hit(
                    g.hit.id,
                    math.fsum(scores[g.hit.id]) / max(1, len(scores[g.hit.id])),
                    None,
                    g.hit.doc,
                )
                for g in groups
            ]
            means.sort(key=lambda h: (-h.score, order[h.id]))
            if every or (len(means) >= depth and means[depth - 1].score > bound):
                return means[:depth]
            limit = min(limit * 4, MAX_LIMIT)

    def search_batch(self, questions: Sequence[str], depth: int) -> list[list[Hit]]:
        """One Milvus request for several questions (its ``nq``) per search (more only to settle
        a tie across the cut, or, with ``--windows mean``, to read the candidates' windows)."""
        client, fields = self._ready()
        name = self.target.collection
        try:
            bm25: list[list[Hit]] = []
            dense: list[list[Hit]] = []
            if self.kind in ("bm25", "hybrid"):
                bm25 = self._plain(client, fields, "bm25", list(questions), depth)
            if self.kind in ("vector", "hybrid"):
                vectors = self._embed(questions)
                if self._windows is not None:
                    dense = self._windowed(client, self._windows, vectors, depth)
                else:
                    dense = self._plain(client, fields, "vector", vectors, depth)
        except InputError as exc:
            raise LiveError(exc.problem) from None
        except Exception as exc:
            raise LiveError(f"{self.target.uri} {name}: {reason(exc)}") from None
        if self.kind == "bm25":
            return bm25
        if self.kind == "vector":
            return dense
        return [self._fuse(a, b, depth) for a, b in zip(bm25, dense, strict=True)]

    def _fuse(self, bm25: list[Hit], dense: list[Hit], depth: int) -> list[Hit]:
        """RRF of the two lists, as ``hybrid``: ``rrf_fuse`` with k = ``rrf_k``, ties by chunk order."""
        known: dict[str, Hit] = {h.id: h for h in dense}
        known.update({h.id: h for h in bm25 if h.text is not None or h.id not in known})
        fused = rrf_fuse(
            [[(h.id, h.score) for h in bm25], [(h.id, h.score) for h in dense]],
            self._order(),
            depth,
            self.rrf_k,
        )
        return [Hit(cid, score, known[cid].text, known[cid].doc) for cid, score in fused]

    def search(self, question: str, depth: int) -> list[Hit]:
        """One question."""
        return self.search_batch([question], depth)[0]

    def close(self) -> None:
        """Close the connection (Lite's server stops at exit)."""
        if self._client is not None:
            close_client(self._client)
            self._client = None
