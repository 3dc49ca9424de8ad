"""What a collection ``ragtui index`` built holds: its record in the collection's properties (the
chunking, the corpus's content digest, the model and its files' fingerprint, the chunks'
fingerprint, the windows its vectors were cut into), and why a collection cannot be searched for a
workspace: other chunks, another model, other windows, or an index stopped before it finished.

With windows on, the vectors are one row per window in a second collection (``NAME_windows``: the
chunk id and the window's number are fields), named in the chunks collection's properties; the
chunks collection keeps one row per chunk (its text and Milvus's BM25 of it).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ragtui.core.data.chunking import Chunk
from ragtui.core.data.corpus import Document
from ragtui.core.data.tokenizer import model_fingerprint
from ragtui.core.files import content_hash
from ragtui.core.retrieval.windows import WindowPlan

__all__ = [
    "LAYOUT_VERSION",
    "PROP_CHUNKING",
    "PROP_CHUNKS",
    "PROP_COMPLETE",
    "PROP_CORPUS",
    "PROP_COUNT",
    "PROP_DIM",
    "PROP_LAYOUT",
    "PROP_MODEL",
    "PROP_MODEL_FILES",
    "PROP_POOLING",
    "PROP_ROLE",
    "PROP_WINDOWS",
    "PROP_WINDOWS_COLLECTION",
    "PROP_WINDOW_MAX",
    "PROP_WINDOW_ROWS",
    "WINDOWS_OFF",
    "CollectionRecord",
    "chunking_label",
    "chunks_fingerprint",
    "corpus_digest",
    "mismatch",
    "windows_collection_name",
    "windows_label",
]

#: The version of the collection layout ``ragtui index`` writes (3: windows as rows).
LAYOUT_VERSION = "3"

#: The collection property keys ``ragtui index`` writes.
PROP_LAYOUT = "ragtui.layout"
PROP_CHUNKS = "ragtui.chunks_sha256"
PROP_COUNT = "ragtui.chunk_count"
PROP_MODEL = "ragtui.model"
PROP_DIM = "ragtui.dim"
PROP_COMPLETE = "ragtui.complete"
# Since layout 2: what the chunks were made from, so a refusal can say what differs.
PROP_CHUNKING = "ragtui.chunking"
PROP_CORPUS = "ragtui.corpus_sha256"
PROP_MODEL_FILES = "ragtui.model_fingerprint"
# Since layout 3: how the vectors were cut (``windows_label``), and with windows on where they are.
PROP_WINDOWS = "ragtui.windows"
PROP_POOLING = "ragtui.pooling"
PROP_WINDOWS_COLLECTION = "ragtui.windows_collection"
PROP_WINDOW_ROWS = "ragtui.window_rows"
PROP_WINDOW_MAX = "ragtui.windows_per_chunk_max"
#: ``chunks`` (one row per chunk) or ``windows`` (one row per window, the chunk id a field).
PROP_ROLE = "ragtui.rows"

#: The windows label of one vector per chunk (``--windows off``; every collection before layout 3).
WINDOWS_OFF = "off (one vector per chunk)"
#: The suffix of the collection that holds the window rows.
WINDOWS_SUFFIX = "_windows"


def windows_label(plan: WindowPlan | None) -> str:
    """How a chunk's vectors are cut, in words: ``windows of 254 tokens, stride 127`` or
    ``off (one vector per chunk)``. Pooling (best window or mean) is not part of it: both read the
    same window rows."""
    if plan is None:
        return WINDOWS_OFF
    return f"windows of {plan.length} tokens, stride {plan.stride}"


def windows_collection_name(name: str) -> str:
    """The collection of ``name``'s window rows."""
    return name + WINDOWS_SUFFIX


def chunks_fingerprint(chunks: Sequence[Chunk]) -> str:
    """SHA-256 over every chunk's id, document and text hash, in order."""
    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(f"{chunk.id}\t{chunk.doc}\t{chunk.sha1}\n".encode())
    return digest.hexdigest()


def corpus_digest(documents: Sequence[Document]) -> str:
    """SHA-256 over every document's path and text hash, in order: the corpus's content digest."""
    digest = hashlib.sha256()
    for doc in documents:
        text_hash = content_hash(doc.text)
        digest.update(f"{doc.path}\t{text_hash}\n".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def chunking_label(
    chunk_size: int | None, overlap: int, chunks_file: str | Path | None = None
) -> str:
    """How the chunks were made, in words: ``chunk size 512, overlap 0``, ``whole documents``, or
    ``the chunks file NAME``."""
    if chunks_file is not None:
        return f"the chunks file {Path(chunks_file).name}"
    if chunk_size is None:
        return "whole documents"
    return f"chunk size {chunk_size}, overlap {overlap}"


@dataclass(frozen=True)
class CollectionRecord:
    """What a collection ``ragtui index`` built holds (its properties), or what a workspace would
    need it to hold: the chunks' fingerprint and count, the chunking, the corpus's content digest,
    the model and its files' fingerprint. An empty field is unknown (a collection of layout 1, or
    chunks indexed without their corpus) and is not compared."""

    chunks: str
    count: int
    model: str
    chunking: str = ""
    corpus: str = ""
    model_files: str = ""
    windows: str = ""
    """``windows_label`` of how the vectors were cut (empty: unknown, not compared)."""

    @classmethod
    def of(
        cls,
        chunks: Sequence[Chunk],
        model: str,
        *,
        documents: Sequence[Document] | None = None,
        chunk_size: int | None = None,
        overlap: int = 0,
        chunks_file: str | Path | None = None,
        windows: str = "",
    ) -> CollectionRecord:
        """The record of ``chunks`` made from ``documents`` with these settings (the chunking and the
        corpus are unknown without ``documents``); ``windows``: ``windows_label`` of the vectors."""
        known = documents is not None
        return cls(
            chunks=chunks_fingerprint(chunks),
            count=len(chunks),
            model=model,
            chunking=chunking_label(chunk_size, overlap, chunks_file) if known else "",
            corpus=corpus_digest(documents) if documents is not None else "",
            model_files=model_fingerprint(model),
            windows=windows,
        )

    @classmethod
    def read(cls, props: Mapping[str, str]) -> CollectionRecord | None:
        """The record in a collection's properties; None for a collection ``ragtui index`` did not build."""
        layout = props.get(PROP_LAYOUT)
        if layout is None:
            return None
        try:
            count = int(props.get(PROP_COUNT, "0"))
        except ValueError:
            count = 0
        # Before layout 3 ragtui index stored one vector per chunk: windows off.
        windows = props.get(PROP_WINDOWS, "") if layout not in ("1", "2") else WINDOWS_OFF
        return cls(
            chunks=props.get(PROP_CHUNKS, ""),
            count=count,
            model=props.get(PROP_MODEL, ""),
            chunking=props.get(PROP_CHUNKING, ""),
            corpus=props.get(PROP_CORPUS, ""),
            model_files=props.get(PROP_MODEL_FILES, ""),
            windows=windows,
        )

    def properties(self, dim: int) -> dict[str, str]:
        """The collection properties ``ragtui index`` writes (``complete`` is set when done)."""
        props = {
            PROP_LAYOUT: LAYOUT_VERSION,
            PROP_CHUNKS: self.chunks,
            PROP_COUNT: str(self.count),
            PROP_MODEL: self.model,
            PROP_DIM: str(dim),
            PROP_COMPLETE: "false",
        }
        for key, value in (
            (PROP_CHUNKING, self.chunking),
            (PROP_CORPUS, self.corpus),
            (PROP_MODEL_FILES, self.model_files),
            (PROP_WINDOWS, self.windows),
        ):
            if value:
                props[key] = value
        return props

    def window_differences(self, wanted: CollectionRecord) -> list[str]:
        """How the vectors were cut, when it differs from ``wanted``'s (both known)."""
        if self.windows and wanted.windows and self.windows != wanted.windows:
            return [f"windows: {self.windows}, not {wanted.windows}"]
        return []

    def chunk_differences(self, wanted: CollectionRecord) -> list[str]:
        """What differs between the chunks this record holds and ``wanted``'s: the chunking, the
        corpus, or (neither known to differ) the chunks themselves; empty when the chunks are the same."""
        if self.chunks == wanted.chunks:
            return []
        found = []
        if self.chunking and wanted.chunking and self.chunking != wanted.chunking:
            found.append(f"chunking: {self.chunking}, not {wanted.chunking}")
        if self.corpus and wanted.corpus and self.corpus != wanted.corpus:
            found.append(
                f"corpus: content digest {self.corpus[:12]}, not {wanted.corpus[:12]} "
                "(documents were added, removed or changed)"
            )
        if not found:
            found.append(
                f"chunks: {self.count} chunks with fingerprint {self.chunks[:12]}, "
                f"not these {wanted.count} with {wanted.chunks[:12]}"
            )
        return found

    def model_differences(self, model: str, files: str) -> list[str]:
        """What differs between the model this record names and ``model`` (files: its fingerprint)."""
        if self.model_files and files:
            if self.model_files == files:
                return []  # the same files, whatever the name they were given by
            if self.model == model:
                old, new = self.model_files[:12], files[:12]
                return [f"model: {self.model} with other files (fingerprint {old}, not {new})"]
        if self.model and self.model != model:
            return [f"model: {self.model}, not {model}"]
        return []


def mismatch(
    name: str, props: Mapping[str, str], wanted: CollectionRecord | None, model: str | None
) -> str | None:
    """Why a collection cannot be searched for this workspace (one line), or None: other chunks
    than ``wanted``'s, another model than ``model`` (given when its vectors are searched), or an
    index that was stopped before it finished. A collection ragtui did not build is not judged here."""
    stored = CollectionRecord.read(props)
    if stored is None:
        return None
    differences = stored.chunk_differences(wanted) if wanted is not None else []
    vectors: list[str] = []
    if model is not None:
        vectors += stored.model_differences(model, model_fingerprint(model))
        if wanted is not None:
            vectors += stored.window_differences(wanted)
    if differences or vectors:
        harm = []
        if differences:
            harm.append("its ids would name other texts")
        if any(d.startswith("model:") for d in vectors):
            harm.append("its vectors are another model's")
        if any(d.startswith("windows:") for d in vectors):
            harm.append("its vectors are cut into other windows (--windows, --window-stride)")
        differences += vectors
        return (
            f"collection {name!r} was indexed from other data than this workspace's "
            f"({'; '.join(differences)}): {' and '.join(harm)}; use the settings it was indexed "
            "with, or index it again (ragtui index --replace)"
        )
    if props.get(PROP_COMPLETE) != "true":
        return (
            f"collection {name!r} is incomplete (ragtui index was stopped before it finished); "
            "run ragtui index again to finish it"
        )
    return None
