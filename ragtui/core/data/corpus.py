"""Loading documents: a folder of Markdown and text files, or a BEIR dataset's corpus."""

from __future__ import annotations

import codecs
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ragtui.core.errors import InputError
from ragtui.core.files import NotRegularFileError, read_regular

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


#: Byte-order marks that name an encoding other than UTF-8 (UTF-32 first: its LE mark starts with UTF-16's).
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le", "UTF-32"),
    (codecs.BOM_UTF32_BE, "utf-32-be", "UTF-32"),
    (codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16"),
    (codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16"),
)


def unicode_bom(raw: bytes) -> tuple[str, str, int] | None:
    """(codec, name, BOM length) when ``raw`` starts with a UTF-16 or UTF-32 byte-order mark, else None."""
    for bom, codec, name in _BOMS:
        if raw.startswith(bom):
            return codec, name, len(bom)
    return None


def decode_utf8(path: Path, raw: bytes) -> str:
    """Decode ``raw`` as UTF-8 (a BOM is dropped), or as UTF-16/32 when a byte-order mark says so; else an InputError naming the line."""
    bom = unicode_bom(raw)
    codec, name, skip = bom if bom is not None else ("utf-8-sig", "UTF-8", 0)
    try:
        text = raw[skip:].decode(codec)
    except UnicodeDecodeError as exc:
        start = skip + exc.start
        if bom is None:
            line = _line_of_offset(raw, start)
        else:
            line = raw[skip:start].decode(codec, errors="replace").count("\n") + 1
        raise InputError(
            path, f"not {name} text (byte 0x{raw[start]:02x} at offset {start})", line
        ) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def utf8_name(name: str) -> str:
    """A file name as valid text: bytes that are not UTF-8 (kept by Python as lone surrogates) spelled ``\\xNN``.

    Chunk ids are made from file names and end up in JSON, TREC files and the label journal,
    which hold only valid UTF-8; so ``bad\\xff.md`` (the byte) becomes the id ``bad\\\\xff.md``.
    """
    return os.fsencode(name).decode("utf-8", errors="backslashreplace")


def _documents_below(root: Path, warnings: list[str]) -> list[tuple[tuple[str, ...], Path]]:
    """Every file below ``root`` with a document suffix, as (parts of its path under ``root``, path), in path order.

    Hidden files and folders are passed over. Symbolic links are followed while they stay inside
    the corpus folder; a link that leads outside it, a broken link and a link back to a folder it
    sits in are skipped with a warning (the rule is in docs/file-formats.md).
    """
    real_root = root.resolve()
    found: list[tuple[tuple[str, ...], Path]] = []

    def visit(folder: Path, parts: tuple[str, ...], ancestors: frozenset[Path]) -> None:
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            warnings.append(f"{folder}: cannot list the folder ({exc.strerror}), skipped")
            return
        for entry in entries:
            if entry.name.startswith("."):
                continue
            path = folder / entry.name
            here = (*parts, entry.name)
            is_document = path.suffix.lower() in DOCUMENT_SUFFIXES
            try:
                is_dir = entry.is_dir()  # follows a link
            except OSError:
                is_dir = False
            if entry.is_symlink() and (is_dir or is_document):
                try:
                    target = path.resolve(strict=True)
                except (OSError, RuntimeError):
                    warnings.append(f"{path}: broken symbolic link, skipped")
                    continue
                if not target.is_relative_to(real_root):
                    warnings.append(
                        f"{path}: symbolic link to {target}, outside the corpus folder, skipped "
                        "(links are followed only inside it)"
                    )
                    continue
            if is_dir:
                real = path.resolve()
                if real in ancestors:
                    warnings.append(f"{path}: symbolic link to a folder it is in (a loop), skipped")
                    continue
                visit(path, here, ancestors | {real})
            elif is_document:
                found.append((here, path))

    visit(root, (), frozenset({real_root}))
    found.sort(key=lambda item: item[0])
    return found


def load_folder(folder: str | Path, max_file_bytes: int = MAX_FILE_BYTES) -> Corpus:
    """Read every Markdown/text file below ``folder`` in path order; binary and special files are skipped with a warning."""
    root = Path(folder)
    if not root.exists():
        raise InputError(root, "corpus folder not found")
    if not root.is_dir():
        raise InputError(root, "corpus path is not a folder")
    documents: list[Document] = []
    warnings: list[str] = []
    seen: dict[str, Path] = {}
    for parts, path in _documents_below(root, warnings):
        rel = "/".join(parts)
        name = utf8_name(rel)
        if name != rel:
            warnings.append(
                f"{path}: the file name is not UTF-8; its chunk ids spell the other bytes as \\xNN"
            )
        if name in seen:
            warnings.append(
                f"{path}: same chunk ids as {seen[name]} (its name spelled the same), skipped"
            )
            continue
        try:
            size = path.stat().st_size
            if size > max_file_bytes:
                raise InputError(
                    path,
                    f"file is {size / 1048576:.1f} MB, over the {_mb(max_file_bytes)} MB limit "
                    "for one document (split it, or raise --max-file-mb)",
                )
            raw = read_regular(path)
        except NotRegularFileError as exc:
            warnings.append(f"{exc.message}, skipped")
            continue
        except OSError as exc:
            raise InputError(path, f"cannot read the file ({exc.strerror})") from None
        if unicode_bom(raw) is None and b"\x00" in raw:
            warnings.append(f"{path}: binary file (NUL bytes), skipped")
            continue
        text = decode_utf8(path, raw)
        if "\x00" in text:
            warnings.append(f"{path}: binary file (NUL characters), skipped")
            continue
        if not text.strip():
            warnings.append(f"{path}: empty document, skipped")
            continue
        seen[name] = path
        documents.append(Document(path=name, text=text))
    if not documents:
        raise InputError(root, "corpus folder holds no non-empty .md, .markdown or .txt file")
    return Corpus(documents=documents, source=str(root), warnings=warnings)


def read_file(path: Path) -> bytes:
    """The bytes of a data file; InputError when it is missing, unreadable or not a regular file (a FIFO)."""
    try:
        return read_regular(path)
    except FileNotFoundError:
        raise InputError(path, "file not found") from None
    except OSError as exc:
        raise InputError(path, f"cannot read the file ({exc.strerror})") from None


def read_jsonl(path: Path, raw: bytes | None = None) -> list[tuple[int, dict[str, Any]]]:
    """Parse a JSON-lines file (or its bytes, already read) into (line number, object) pairs;
    blank lines are skipped."""
    rows: list[tuple[int, dict[str, Any]]] = []
    if raw is None:
        raw = read_file(path)
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
