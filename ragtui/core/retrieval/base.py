"""The retriever interface: ``search(question, depth) -> [(chunk id, score), ...]``, best first.

Every retriever, built-in or live (a plugin, an HTTP search API, Milvus), has a ``name`` and answers
``search(question, depth)``. Built-in ones return ``(chunk id, score)`` pairs; a live one may also
return :class:`Hit` objects (or dicts, or ``(id, score, text)`` triples) that carry the text of a
chunk ragtui does not hold. :func:`normalize_hits` reads all of these the same way.

Ties in score are always broken by chunk order (the position of the chunk in the corpus), so every
run is deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ragtui.core.metrics.evaluation import Ranking

__all__ = ["RETRIEVER_NAMES", "Ranking", "Retriever", "top_indices"]

#: The built-in retrievers, in display order.
RETRIEVER_NAMES = ("bm25", "vector", "hybrid")


class Retriever(Protocol):
    """Anything that ranks chunks for a question."""

    name: str

    def search(self, question: str, depth: int) -> Ranking:
        """The top ``depth`` chunks for ``question``, best first, with their scores."""
        ...


@dataclass(frozen=True, slots=True)
class Hit:
    """One result of a live retriever: a chunk id and score, and the chunk's text and document when it has them."""

    id: str
    score: float
    text: str | None = None
    doc: str | None = None


class HitError(ValueError):
    """A result a retriever returned that is not a hit; the message says which and why."""


def _hit_field(item: Any, key: str) -> Any:
    """A field of a hit given as a mapping or an object (None when absent)."""
    if isinstance(item, Mapping):
        return item.get(key)
    return getattr(item, key, None)


def normalize_hit(item: Any, rank: int) -> Hit:
    """One result as a Hit: a Hit, ``(id, score)``, ``(id, score, text)``, a mapping or an object with ``id`` and ``score``."""
    if isinstance(item, Hit):
        hit_id, score, text, doc = item.id, item.score, item.text, item.doc
    elif isinstance(item, tuple | list):
        if len(item) not in (2, 3):
            raise HitError(
                f"result {rank} is a sequence of {len(item)} items, not (id, score[, text])"
            )
        hit_id, score = item[0], item[1]
        text = item[2] if len(item) == 3 else None
        doc = None
    else:
        hit_id, score = _hit_field(item, "id"), _hit_field(item, "score")
        text, doc = _hit_field(item, "text"), _hit_field(item, "doc")
    if isinstance(hit_id, bool) or not isinstance(hit_id, str | int) or not str(hit_id).strip():
        raise HitError(f"result {rank} has no id (a non-empty string or a whole number)")
    if score is None:
        raise HitError(f"result {rank} ({hit_id}) has no score")
    try:
        if isinstance(score, bool):
            raise TypeError
        value = float(score)
    except (TypeError, ValueError):
        raise HitError(
            f"result {rank} ({hit_id}) has a score that is not a number: {score!r}"
        ) from None
    if not math.isfinite(value):
        raise HitError(f"result {rank} ({hit_id}) has a score that is not finite: {score!r}")
    if text is not None and not isinstance(text, str):
        raise HitError(f"result {rank} ({hit_id}) has a text that is not a string")
    if doc is not None and not isinstance(doc, str | int):
        raise HitError(f"result {rank} ({hit_id}) has a doc that is not a string")
    return Hit(str(hit_id), value, text, None if doc is None else str(doc))


def normalize_hits(items: Iterable[Any], depth: int) -> list[Hit]:
    """A retriever's results as Hits, best first, cut to ``depth``; a repeated id keeps its first (best) place."""
    if isinstance(items, str | bytes) or not isinstance(items, Iterable):
        raise HitError(f"search returned {type(items).__name__}, not a list of results")
    out: list[Hit] = []
    seen: set[str] = set()
    for rank, item in enumerate(items, start=1):
        hit = normalize_hit(item, rank)
        if hit.id in seen:
            continue
        seen.add(hit.id)
        out.append(hit)
        if len(out) >= depth:
            break
    return out


def top_indices(scores: np.ndarray, candidates: np.ndarray, depth: int) -> list[int]:
    """Indices of the ``depth`` best candidates by score, ties broken by index (ascending)."""
    if len(candidates) == 0 or depth <= 0:
        return []
    cand_scores = scores[candidates]
    if len(candidates) > depth:
        # Everything tied with the depth-th score stays in, so the tie-break is exact.
        kth = np.partition(cand_scores, len(cand_scores) - depth)[len(cand_scores) - depth]
        keep = cand_scores >= kth
        candidates, cand_scores = candidates[keep], cand_scores[keep]
    order = np.lexsort((candidates, -cand_scores))
    return [int(i) for i in candidates[order][:depth]]
