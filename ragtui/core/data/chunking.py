"""Recursive, token-sized chunking with exact character spans and heading paths.

The text is cut at the coarsest boundary that makes pieces fit (headings, then blank lines, lines,
sentences, words and finally single tokens); neighbouring pieces are merged back greedily while the
merged span still fits, as LangChain's recursive splitter does, but sizes are counted in the
embedding model's tokens and every chunk is an exact ``[start, end)`` span of its document. A
Markdown table is one paragraph, so it stays whole whenever it fits in one chunk.
"""

from __future__ import annotations

import itertools
import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ragtui.core.data.corpus import Document
from ragtui.core.data.tokenizer import TokenCounter, TokenIndex
from ragtui.core.files import content_hash

DEFAULT_CHUNK_SIZE = 512

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t#]*$", re.MULTILINE)
_FENCE = re.compile(r"^[ \t]*(```|~~~)", re.MULTILINE)
_BLANK_RUN = re.compile(r"\n[ \t]*\n\s*")
_NEWLINE = re.compile(r"\n")
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s+")
_WHITESPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Chunk:
    """A piece of a document: ``text == document.text[start:end]``."""

    id: str
    doc: str
    index: int
    start: int
    end: int
    text: str
    heading_path: tuple[str, ...]
    token_count: int
    #: The metadata a team's chunks file gave the chunk (``--chunks``), shown as it is.
    meta: Mapping[str, Any] | None = field(default=None, compare=False, hash=False)
    _sha1: str | None = field(default=None, init=False, repr=False, compare=False, hash=False)

    @property
    def sha1(self) -> str:
        """SHA-1 of the chunk text, which labels carry to notice edited chunks (computed once:
        every label's status asks for it, 600,000 times when 300,000 labels are read)."""
        found = self._sha1
        if found is None:
            found = content_hash(self.text)
            object.__setattr__(self, "_sha1", found)  # frozen: a memo of the text, not a change
        return found

    @property
    def span(self) -> tuple[int, int]:
        """The chunk's character span in its document."""
        return (self.start, self.end)


def _fenced_ranges(text: str) -> list[tuple[int, int]]:
    """Character ranges of fenced code blocks, where '#' lines are not headings."""
    marks = [m.start() for m in _FENCE.finditer(text)]
    ranges = []
    for i in range(0, len(marks) - 1, 2):
        ranges.append((marks[i], marks[i + 1]))
    if len(marks) % 2:
        ranges.append((marks[-1], len(text)))
    return ranges


def headings(text: str) -> list[tuple[int, int, str]]:
    """Markdown ATX headings outside code fences: (position, level, title)."""
    fences = _fenced_ranges(text)
    found = []
    for m in _HEADING.finditer(text):
        if any(a <= m.start() < b for a, b in fences):
            continue
        found.append((m.start(), len(m.group(1)), m.group(2).strip()))
    return found


class _HeadingPaths:
    """Answers "which headings are in force at character p" for one document."""

    def __init__(self, text: str) -> None:
        self.positions: list[int] = []
        self.paths: list[tuple[str, ...]] = []
        stack: list[tuple[int, str]] = []
        for pos, level, title in headings(text):
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            self.positions.append(pos)
            self.paths.append(tuple(t for _, t in stack))

    def at(self, pos: int) -> tuple[str, ...]:
        i = bisect_right(self.positions, pos) - 1
        return self.paths[i] if i >= 0 else ()


def _cuts_after(pattern: re.Pattern[str]) -> Callable[[str, int, int], list[int]]:
    def cuts(text: str, a: int, b: int) -> list[int]:
        return [m.end() for m in pattern.finditer(text, a, b) if a < m.end() < b]

    return cuts


class Chunker:
    """Splits documents into chunks of at most ``size`` tokens, consecutive chunks sharing up to ``overlap``."""

    def __init__(self, counter: TokenCounter, size: int = DEFAULT_CHUNK_SIZE, overlap: int = 0):
        if size < 1:
            raise ValueError("chunk size must be at least 1 token")
        if not 0 <= overlap < size:
            raise ValueError("overlap must be at least 0 and smaller than the chunk size")
        self.counter = counter
        self.size = size
        self.overlap = overlap

    def chunk(self, doc: Document) -> list[Chunk]:
        """The chunks of one document, in order, ids ``<doc path>#<n>`` from 0."""
        text = doc.text
        index = TokenIndex(self.counter.offsets(text))
        heading_cuts = [pos for pos, _, _ in headings(text)]

        def heading_level(t: str, a: int, b: int) -> list[int]:
            return [p for p in heading_cuts if a < p < b]

        levels: list[Callable[[str, int, int], list[int]]] = [
            heading_level,
            _cuts_after(_BLANK_RUN),
            _cuts_after(_NEWLINE),
            _cuts_after(_SENTENCE_END),
            _cuts_after(_WHITESPACE),
        ]
        spans = self._split(text, 0, len(text), 0, levels, index)
        paths = _HeadingPaths(text)
        chunks: list[Chunk] = []
        for a, b in spans:
            while a < b and text[a].isspace():
                a += 1
            while b > a and text[b - 1].isspace():
                b -= 1
            if a == b:
                continue
            n = len(chunks)
            chunks.append(
                Chunk(
                    id=f"{doc.path}#{n}",
                    doc=doc.path,
                    index=n,
                    start=a,
                    end=b,
                    text=text[a:b],
                    heading_path=paths.at(a),
                    token_count=index.count(a, b),
                )
            )
        return chunks

    def _split(
        self,
        text: str,
        a: int,
        b: int,
        level: int,
        levels: list[Callable[[str, int, int], list[int]]],
        index: TokenIndex,
    ) -> list[tuple[int, int]]:
        if index.count(a, b) <= self.size:
            return [(a, b)]
        if level >= len(levels):
            return self._split_tokens(a, b, index)
        cuts = levels[level](text, a, b)
        if not cuts:
            return self._split(text, a, b, level + 1, levels, index)
        bounds = [a, *cuts, b]
        pieces = list(itertools.pairwise(bounds))
        out: list[tuple[int, int]] = []
        current: list[tuple[int, int]] = []

        def fits(group_start: int, group_end: int) -> bool:
            return index.count(group_start, group_end) <= self.size

        for piece in pieces:
            if index.count(*piece) > self.size:
                parts = self._split(text, piece[0], piece[1], level + 1, levels, index)
                if current:
                    # A short lead-in (often a heading line) joins the first part when it fits.
                    if fits(current[0][0], parts[0][1]):
                        parts[0] = (current[0][0], parts[0][1])
                    else:
                        out.append((current[0][0], current[-1][1]))
                    current = []
                out.extend(parts)
                continue
            if not current or fits(current[0][0], piece[1]):
                current.append(piece)
                continue
            out.append((current[0][0], current[-1][1]))
            current = self._overlap_tail(current, piece, index)
            current.append(piece)
        if current:
            out.append((current[0][0], current[-1][1]))
        return out

    def _overlap_tail(
        self, previous: list[tuple[int, int]], nxt: tuple[int, int], index: TokenIndex
    ) -> list[tuple[int, int]]:
        """The trailing pieces of the previous chunk to repeat: at most ``overlap`` tokens, and still fitting."""
        if not self.overlap:
            return []
        tail: list[tuple[int, int]] = []
        for piece in reversed(previous):
            start = piece[0]
            if index.count(start, previous[-1][1]) > self.overlap:
                break
            if index.count(start, nxt[1]) > self.size:
                break
            tail.insert(0, piece)
        return tail

    def _split_tokens(self, a: int, b: int, index: TokenIndex) -> list[tuple[int, int]]:
        """Last resort for text with no usable boundary: runs of ``size`` tokens (overlapping by ``overlap``)."""
        bounds = index.token_bounds(a, b)
        if not bounds:
            return [(a, b)]
        step = self.size - self.overlap
        out = []
        for i in range(0, len(bounds), step):
            group = bounds[i : i + self.size]
            start = a if i == 0 else group[0][0]
            end = b if i + self.size >= len(bounds) else bounds[i + self.size][0]
            out.append((start, end))
            if i + self.size >= len(bounds):
                break
        return out


def chunk_documents(
    documents: Iterable[Document], counter: TokenCounter, size: int | None, overlap: int = 0
) -> list[Chunk]:
    """Chunk every document; with ``size`` None each document is one chunk whose id is its path."""
    if size is None:
        out = []
        for doc in documents:
            out.append(
                Chunk(
                    id=doc.path,
                    doc=doc.path,
                    index=0,
                    start=0,
                    end=len(doc.text),
                    text=doc.text,
                    heading_path=(doc.title,) if doc.title else (),
                    token_count=-1,
                )
            )
        return out
    chunker = Chunker(counter, size, overlap)
    chunks: list[Chunk] = []
    for doc in documents:
        chunks.extend(chunker.chunk(doc))
    return chunks
