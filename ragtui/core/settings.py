"""The settings every command shares: what to load and how."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from ragtui.core.data.chunking import DEFAULT_CHUNK_SIZE
from ragtui.core.data.corpus import MAX_FILE_BYTES
from ragtui.core.data.paths import bundled_corpus, bundled_golden
from ragtui.core.data.tokenizer import DEFAULT_MODEL
from ragtui.core.retrieval.base import RETRIEVER_NAMES
from ragtui.core.retrieval.live import LiveSpec


@dataclass(frozen=True)
class Settings:
    """What to load and how: the options every command shares (see DESIGN.md)."""

    corpus: Path | None = None
    golden: Path | None = None
    beir: Path | None = None
    chunk_size: int | None = DEFAULT_CHUNK_SIZE
    overlap: int = 0
    model: str = DEFAULT_MODEL
    k: int = 3
    depth: int = 10
    retrievers: tuple[str, ...] = RETRIEVER_NAMES
    threshold: int = 1
    bm25_backend: str = "rank-bm25"
    annotator: str | None = None
    cache_dir: Path | None = None
    #: External retrievers: (name, TREC run file), shown after the built-in ones (``--run NAME=path``).
    runs: tuple[tuple[str, Path], ...] = ()
    #: Largest corpus document read, in MB (a bigger file is refused with a clear message).
    max_file_mb: float = MAX_FILE_BYTES / 1048576
    #: Live retrievers (``--retriever NAME=SPEC``, ``[retrievers.NAME]``), shown after the runs.
    live_retrievers: tuple[LiveSpec, ...] = ()
    #: Ask live retrievers again instead of using their cached answers (``--refresh``).
    refresh: bool = False
    #: Milvus: a Milvus Lite file or ``http(s)://host:19530`` (``--milvus``), and the collection.
    milvus: str | None = None
    collection: str | None = None
    #: Field names of a Milvus collection ragtui did not build: (role, field) pairs.
    milvus_fields: tuple[tuple[str, str], ...] = ()
    #: The team's own chunks, one JSON object a line, used as they are (``--chunks``).
    chunks: Path | None = None
    #: ``document`` or ``chunk``: the level qrels are evaluated at; None chooses (document when
    #: document-level qrels meet a chunked corpus).
    level: str | None = None

    def resolved(self) -> Settings:
        """Defaults filled in: the bundled data, and whole documents as chunks for BEIR without a size."""
        corpus = self.corpus
        golden = self.golden
        if self.beir is None:
            # The team's chunks (--chunks) replace the corpus folder, so none is filled in.
            corpus = corpus or (None if self.chunks is not None else bundled_corpus())
            golden = golden or bundled_golden()
        else:
            golden = golden or self.beir
        return replace(self, corpus=corpus, golden=golden)
