"""A reranking stage: a sentence-transformers ``CrossEncoder`` re-scores the top ``depth`` of one retriever.

The reranked list is a retriever of its own, named ``<retriever>+rerank`` (``hybrid+rerank``): the
same chunks as the first stage's top ``depth``, ordered by the cross-encoder's score of each
(question, chunk text) pair, ties broken by chunk order like every ranking.

The model is a folder on disk or a name in the local Hugging Face cache; nothing is downloaded
(``HF_HUB_OFFLINE=1``), and a model that is absent is a one-line ``InputError``.

Scores are cached on disk like embeddings: ``<cache>/rerank/<model>/scores.json`` maps the SHA-1 of
``question + NUL + chunk text`` to ``[score, seconds]``, the seconds being that pair's share of the
time its question took to score. A question's latency is the sum over its pairs, measured when the
pairs were scored (a warm-up pair first, so loading is never counted) and kept with the scores, so
a run read from the cache still reports what the model costs. The cache also records the model
files' sizes and modification times; when they change (a retrained model in the same folder) the
cache is rebuilt, never trusted.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from ragtui.core.data.paths import cache_dir
from ragtui.core.data.tokenizer import model_fingerprint
from ragtui.core.errors import InputError
from ragtui.core.files import content_hash
from ragtui.core.retrieval.base import Ranking
from ragtui.core.retrieval.embeddings import (
    model_slug,
    quiet_offline_hub,
    silence_loaded_libraries,
)

#: The suffix of a reranked retriever's name.
RERANK_SUFFIX = "+rerank"
#: The retrievers whose lists can be reranked (their chunks are the corpus's, with text).
RERANKABLE = ("bm25", "vector", "hybrid")
#: Pairs scored per batch.
PREDICT_BATCH = 32
#: The cache file's ``format``.
CACHE_FORMAT = "ragtui-rerank-cache"

#: Called as ``progress(done, total)`` while questions are reranked.
RerankProgress = Callable[[int, int], None]


def reranked_name(retriever: str) -> str:
    """``hybrid`` -> ``hybrid+rerank``."""
    return retriever + RERANK_SUFFIX


def pair_key(question: str, text: str) -> str:
    """The cache key of a (question, chunk text) pair."""
    return content_hash(question, text)


def _missing(name: str) -> InputError:
    return InputError(
        name,
        "cross-encoder not found: not a folder and not in the local Hugging Face cache "
        "(nothing is downloaded; see docs/experiments.md to place one there)",
    )


def locate_cross_encoder(name_or_path: str) -> tuple[str, str]:
    """(what to load, a fingerprint of its files): a model folder, or a name in the local HF cache; InputError otherwise."""
    folder = Path(name_or_path).expanduser()
    if folder.is_dir():
        if not (folder / "config.json").is_file():
            raise InputError(folder, "not a model folder: it has no config.json")
        stamp = [
            f"{item.name}\t{info.st_size}\t{info.st_mtime_ns}\n"
            for item in sorted(folder.iterdir())
            if item.is_file() and (info := item.stat())
        ]
        return str(folder), content_hash("".join(stamp))
    if name_or_path.startswith((".", "/", "~")) or name_or_path.count("/") > 1:
        raise InputError(name_or_path, "cross-encoder folder not found")
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - comes with sentence-transformers
        raise _missing(name_or_path) from None
    found = try_to_load_from_cache(name_or_path, "config.json")
    if not isinstance(found, str):
        raise _missing(name_or_path)
    # The snapshot folder's name is the model's commit: a new download is a new fingerprint.
    return name_or_path, content_hash(str(Path(found).parent))


class CrossEncoderModel:
    """A sentence-transformers CrossEncoder, located at once and loaded (torch imported) on first use."""

    def __init__(self, name_or_path: str) -> None:
        self.name = name_or_path
        self.path, self.fingerprint = locate_cross_encoder(name_or_path)
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            quiet_offline_hub()
            try:
                from sentence_transformers import CrossEncoder

                silence_loaded_libraries()
                model = CrossEncoder(self.path, device="cpu")
                # One untimed pair: the first call pays for lazy set-up that is not the model's cost.
                model.predict([("warm-up", "warm-up")], show_progress_bar=False)
            except Exception as exc:  # any failure to find or read the model is bad input
                message = " ".join(str(exc).split())
                raise InputError(self.name, f"cannot load the cross-encoder: {message}") from None
            self._model = model
        return self._model

    def score(self, question: str, texts: Sequence[str]) -> tuple[np.ndarray, float]:
        """The model's score of each (question, text) pair, and the seconds the scoring took."""
        model = self._load()
        started = time.perf_counter()
        scores = model.predict(
            [(question, t) for t in texts],
            batch_size=PREDICT_BATCH,
            show_progress_bar=False,
            convert_to_numpy=True,
        )
        elapsed = time.perf_counter() - started
        return np.asarray(scores, dtype=np.float64).reshape(len(texts)), elapsed


class RerankCache:
    """The scores of one cross-encoder on disk, looked up by (question, chunk text)."""

    def __init__(self, model: str, fingerprint: str, root: Path | None = None) -> None:
        self.model = model
        self.fingerprint = fingerprint
        self.folder = (root or cache_dir()) / "rerank" / model_slug(model, model_fingerprint(model))
        self.path = self.folder / "scores.json"
        self.entries: dict[str, tuple[float, float]] = {}
        #: Why a cache on disk was not used, for the user to see.
        self.warnings: list[str] = []
        self._dirty = False
        self._load()

    def _load(self) -> None:
        if not self.path.exists():
            return
        try:
            body = orjson.loads(self.path.read_bytes())
            if not isinstance(body, dict) or body.get("format") != CACHE_FORMAT:
                raise ValueError("not a rerank cache")
            if body.get("model") != self.model:
                raise ValueError("it names another model")
            if body.get("fingerprint") != self.fingerprint:
                raise ValueError("the model's files changed since the scores were cached")
            scores = body.get("scores")
            if not isinstance(scores, dict):
                raise ValueError("'scores' is not an object")
            entries: dict[str, tuple[float, float]] = {}
            for key, value in scores.items():
                if (
                    not isinstance(value, list)
                    or len(value) != 2
                    or not all(
                        isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
                        for v in value
                    )
                    or value[1] < 0
                ):
                    raise ValueError(f"entry {key!r} is not [score, seconds]")
                entries[key] = (float(value[0]), float(value[1]))
        except (OSError, ValueError) as exc:
            # orjson.JSONDecodeError is a ValueError.
            reason = " ".join(str(exc).split())
            self.warnings.append(f"{self.folder}: rerank cache ignored and rebuilt ({reason})")
            return
        self.entries = entries

    def get(self, question: str, text: str) -> tuple[float, float] | None:
        """(score, seconds) of a pair, or None when it is not cached."""
        return self.entries.get(pair_key(question, text))

    def put(self, question: str, text: str, score: float, seconds: float) -> None:
        """Remember a pair's score (written by ``save``)."""
        self.entries[pair_key(question, text)] = (score, seconds)
        self._dirty = True

    def save(self) -> None:
        """Write the cache atomically (temp file, fsync, rename) if anything was added."""
        if not self._dirty:
            return
        body = {
            "format": CACHE_FORMAT,
            "model": self.model,
            "fingerprint": self.fingerprint,
            "scores": {k: [s, t] for k, (s, t) in self.entries.items()},
        }
        self.folder.mkdir(parents=True, exist_ok=True)
        partial = self.folder / f"scores.{os.getpid()}.tmp.json"
        with open(partial, "wb") as fh:
            fh.write(orjson.dumps(body))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(partial, self.path)
        self._dirty = False


@dataclass(frozen=True, slots=True)
class Reranked:
    """One question reranked: the new ranking, the seconds its pairs took to score, and whether all came from the cache."""

    ranking: Ranking
    seconds: float
    cached: bool


class Reranker:
    """Re-scores a first-stage ranking with a cross-encoder, through the score cache."""

    def __init__(
        self,
        model: str,
        over: str,
        chunk_texts: Mapping[str, str],
        chunk_order: Mapping[str, int],
        root: Path | None = None,
        cross_encoder: CrossEncoderModel | None = None,
    ) -> None:
        if over not in RERANKABLE:
            raise InputError(
                None,
                f"--rerank-over: {over!r} cannot be reranked; choose from {', '.join(RERANKABLE)}",
            )
        self.model = cross_encoder if cross_encoder is not None else CrossEncoderModel(model)
        self.over = over
        self.name = reranked_name(over)
        self.texts = chunk_texts
        self.order = chunk_order
        self.cache = RerankCache(self.model.name, self.model.fingerprint, root)

    def rerank(self, question: str, first_stage: Ranking) -> Reranked:
        """The chunks of ``first_stage`` ordered by the cross-encoder's score (ties by chunk order)."""
        ids = [cid for cid, _ in first_stage if cid in self.texts]
        found = {cid: self.cache.get(question, self.texts[cid]) for cid in ids}
        todo = [cid for cid in ids if found[cid] is None]
        if todo:
            scores, elapsed = self.model.score(question, [self.texts[c] for c in todo])
            share = elapsed / len(todo)
            for cid, score in zip(todo, scores, strict=True):
                found[cid] = (float(score), share)
                self.cache.put(question, self.texts[cid], float(score), share)
        scored = {cid: value for cid, value in found.items() if value is not None}
        ranking = sorted(
            ((cid, scored[cid][0]) for cid in ids),
            key=lambda item: (-item[1], self.order.get(item[0], len(self.order))),
        )
        seconds = math.fsum(scored[cid][1] for cid in ids)
        return Reranked(ranking, seconds, cached=not todo)


@dataclass(frozen=True)
class RerankLatency:
    """The cross-encoder's time per question: mean, median and 95th percentile, in seconds."""

    questions: int
    mean: float
    median: float
    p95: float
    scored_now: int
    """Questions with at least one pair scored in this run (the others' times come from the cache)."""

    def as_dict(self) -> dict[str, float | int]:
        """Milliseconds, for JSON."""
        return {
            "questions": self.questions,
            "mean_ms": self.mean * 1000,
            "median_ms": self.median * 1000,
            "p95_ms": self.p95 * 1000,
            "scored_now": self.scored_now,
        }

    def describe(self) -> str:
        """``median 12.1 ms, p95 20.4 ms, mean 13.0 ms per question (68 questions, 0 scored now: ...)``."""
        cached = self.questions - self.scored_now
        where = (
            f"{self.scored_now} scored now"
            + (f", {cached} from the cache (timed when scored)" if cached else "")
            if self.scored_now
            else "all from the cache, timed when scored"
        )
        return (
            f"median {self.median * 1000:.1f} ms, p95 {self.p95 * 1000:.1f} ms, "
            f"mean {self.mean * 1000:.1f} ms per question ({self.questions} questions; {where})"
        )


def latency(seconds: Mapping[str, float], scored_now: int) -> RerankLatency:
    """The latency summary of per-question seconds."""
    values = np.asarray(list(seconds.values()), dtype=np.float64)
    if len(values) == 0:
        return RerankLatency(0, 0.0, 0.0, 0.0, scored_now)
    return RerankLatency(
        len(values),
        float(values.mean()),
        float(np.median(values)),
        float(np.percentile(values, 95)),
        scored_now,
    )


@dataclass(frozen=True)
class RerankResult:
    """What ``Workspace.compute_rerank`` found: the reranked rankings and each question's time."""

    name: str
    rankings: dict[str, Ranking]
    seconds: dict[str, float]
    scored_now: set[str] = field(default_factory=set)
    warnings: list[str] = field(default_factory=list)

    @property
    def latency(self) -> RerankLatency:
        """Time per question."""
        return latency(self.seconds, len(self.scored_now))
