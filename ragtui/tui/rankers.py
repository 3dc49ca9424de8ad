"""What ranks typed text (an ad-hoc query, a new question), captured on the UI thread for a worker.

A worker never reads the live workspace: the UI thread may change it meanwhile (a grade, a chunk a
live retriever brought). ``Rankers.capture`` takes, on the UI thread, what ranking needs: the
settings' depth and cache folder, the built retrievers (their indexes and embeddings never change
once built), the live retrievers, and a copy of what ``map_hits`` reads to turn a live retriever's
answer into ragtui's chunks. The worker posts the passages a live retriever brought; the app keeps
them (``ForeignChunks``, or with the question it added).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ragtui.core.retrieval.base import RETRIEVER_NAMES, Hit, Ranking
from ragtui.core.retrieval.bm25 import BM25Retriever
from ragtui.core.retrieval.hybrid import HybridRetriever
from ragtui.core.retrieval.live import LiveRetriever, LiveRun, run_live
from ragtui.core.retrieval.vector import VectorRetriever
from ragtui.core.workspace import Workspace
from ragtui.core.workspace.live_answers import map_hits
from ragtui.core.workspace.loading import Passages


@dataclass(frozen=True)
class Rankers:
    """The retrievers that rank typed text, and what they read, captured on the UI thread."""

    depth: int
    cache_dir: Path | None
    builtin: tuple[str, ...]
    """The chosen built-in retrievers (bm25, vector, hybrid), in the standard order."""
    bm25: BM25Retriever | None
    vector: VectorRetriever | None
    hybrid: HybridRetriever | None
    live: Mapping[str, LiveRetriever]
    """The live retrievers to ask, in display order."""
    passages: Passages

    @classmethod
    def capture(cls, ws: Workspace, live: Iterable[str]) -> Rankers:
        """What ranking reads of ``ws`` now (on the UI thread), with the live retrievers ``live``
        names."""
        settings = ws.settings
        asked = {name: ws.live.retrievers[name] for name in live if name in ws.live.retrievers}
        return cls(
            depth=settings.depth,
            cache_dir=settings.cache_dir,
            builtin=tuple(n for n in RETRIEVER_NAMES if n in settings.retrievers),
            bm25=ws.ranked.bm25,
            vector=ws.ranked.vector,
            hybrid=ws.ranked.hybrid,
            live=asked,
            # Only a live retriever's answer is mapped: without one, nothing to copy.
            passages=ws.passages.snapshot() if asked else ws.passages,
        )

    def ask(self, name: str, text: str) -> LiveRun:
        """Live retriever ``name``'s answer to ``text``, through its cache."""
        return run_live(self.live[name], [("", text)], self.depth, root=self.cache_dir)

    def passages_of(self, name: str, run: LiveRun) -> list[Hit]:
        """The answer of ``run`` as ragtui judges it: an id or a text that is one of ragtui's chunks
        is that chunk, any other passage with a text is the retriever's own (``map_hits``)."""
        return map_hits(self.passages, name, run.hits.get("", []))

    def rank_all(self, text: str) -> tuple[dict[str, Ranking], dict[str, list[Hit]]]:
        """Every chosen retriever's ranking of ``text`` (as ``Workspace.search_adhoc`` gives them:
        the built-in ones ready, then the live ones; one that fails is left out), and the passages
        each live retriever brought."""
        found: dict[str, Ranking] = {}
        if self.bm25 is not None:
            found["bm25"] = self.bm25.search(text, self.depth)
        if self.vector is not None:
            found["vector"] = self.vector.search(text, self.depth)
        if self.hybrid is not None and "bm25" in found and "vector" in found:
            found["hybrid"] = self.hybrid.fuse(found["bm25"], found["vector"], self.depth)
        rankings = {name: found[name] for name in self.builtin if name in found}
        brought: dict[str, list[Hit]] = {}
        for name in self.live:
            run = self.ask(name, text)
            if "" in run.failed:
                continue
            hits = self.passages_of(name, run)
            rankings[name] = [(h.id, h.score) for h in hits]
            brought[name] = hits
        return rankings, brought
