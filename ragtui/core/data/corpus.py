"""Loading documents: a folder of Markdown and text files, or a BEIR dataset's corpus."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ragtui.core.errors import InputError

#: File endings read as documents; everything else in the folder is passed over.
DOCUMENT_SUFFIXES = frozenset({".md", ".markdown", ".txt"})

#: Files larger than this are refused with a clear message instead of being read into memory.
MAX_FILE_BYTES = 20 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Document:
    """One document: its path relative to the corpus folder (POSIX form, the chunk id prefix) and text."""

    path: str
    text: str
    title: str = ""


@dataclass(slots=True)
class Corpus:
    """The documents in a stable order, plus warnings about files that were passed over."""

    documents: list[Document]
    source: str
    warnings: list[str] = field(default_factory=list)


def _mb(size: int) -> str:
    """A size in MB, to three decimals at most: ``20``, ``0.001``."""
    return f"{size / 1048576:.3f}".rstrip("0").rstrip(".")


def _line_of_offset(raw: bytes, offset: int) -> int:
    """The 1-based line number holding byte ``offset``."""
    return raw.count(b"\n", 0, offset) + 1


def decode_utf8(path: Path, raw: bytes) -> str:
    """Decode ``raw`` as UTF-8 (a BOM is dropped) or raise an InputError naming the line."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = _line_of_offset(raw, exc.start)
        raise InputError(
            path, f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})", line
        ) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def load_folder(folder: str | Path, max_file_bytes: int = MAX_FILE_BYTES) -> Corpus:
    """Read every Markdown/text file below ``folder`` in path order; binary files are skipped with a warning."""
    root = Path(folder)
    if not root.exists():
        raise InputError(root, "corpus folder not found")
    if not root.is_dir():
        raise InputError(root, "corpus path is not a folder")
    documents: list[Document] = []
    warnings: list[str] = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if path.suffix.lower() not in DOCUMENT_SUFFIXES or any(
            part.startswith(".") for part in path.relative_to(root).parts
        ):
            continue
        try:
            size = path.stat().st_size
            if size > max_file_bytes:
                raise InputError(
                    path,
                    f"file is {size / 1048576:.1f} MB, over the {_mb(max_file_bytes)} MB limit "
                    "for one document (split it, or raise --max-file-mb)",
                )
            raw = path.read_bytes()
        except OSError as exc:
            raise InputError(path, f"cannot read the file ({exc.strerror})") from None
        if b"\x00" in raw:
            warnings.append(f"{path}: binary file (NUL bytes), skipped")
            continue
        text = decode_utf8(path, raw)
        if not text.strip():
            warnings.append(f"{path}: empty document, skipped")
            continue
        documents.append(Document(path=rel, text=text))
    if not documents:
        raise InputError(root, "corpus folder holds no non-empty .md, .markdown or .txt file")
    return Corpus(documents=documents, source=str(root), warnings=warnings)


def read_jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """Parse a JSON-lines file into (line number, object) pairs; blank lines are skipped."""
    if not path.is_file():
        raise InputError(path, "file not found")
    rows: list[tuple[int, dict[str, Any]]] = []
    raw = path.read_bytes()
    text = decode_utf8(path, raw)
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise InputError(
                path, f"malformed JSON ({exc.args[0].split(':')[0]})", number
            ) from None
        if not isinstance(obj, dict):
            raise InputError(path, f"expected a JSON object, got {type(obj).__name__}", number)
        rows.append((number, obj))
    return rows


def beir_id(value: object, path: Path, line: int) -> str:
    """A BEIR ``_id``: a non-blank string or a whole number (not a boolean), as a string."""
    if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
        raise InputError(
            path, "missing or invalid '_id' (a non-empty string or a whole number)", line
        )
    return str(value)


def load_beir_corpus(folder: str | Path) -> Corpus:
    """Read a BEIR ``corpus.jsonl``: one document per line, ``_id``, optional ``title``, ``text``."""
    root = Path(folder)
    if not root.is_dir():
        raise InputError(root, "BEIR folder not found")
    path = root / "corpus.jsonl"
    documents: list[Document] = []
    seen: set[str] = set()
    for number, obj in read_jsonl(path):
        doc_id = beir_id(obj.get("_id"), path, number)
        if doc_id in seen:
            raise InputError(path, f"duplicate document id {doc_id!r}", number)
        seen.add(doc_id)
        title = obj.get("title")
        body = obj.get("text")
        if not isinstance(title, (str, type(None))) or not isinstance(body, (str, type(None))):
            raise InputError(path, "'title' and 'text' must be strings", number)
        title, body = title or "", body or ""
        text = f"{title}\n\n{body}" if title and body else (title or body)
        documents.append(Document(path=doc_id, text=text, title=title))
    if not documents:
        raise InputError(path, "BEIR corpus holds no documents")
    return Corpus(documents=documents, source=str(root))
