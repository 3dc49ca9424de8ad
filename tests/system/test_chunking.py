"""Chunking: exact spans, sizes in model tokens, coverage, headings, tables, overlap."""

from __future__ import annotations

import itertools
import re
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragtui.core.data.chunking import Chunker, chunk_documents, headings
from ragtui.core.data.corpus import Document
from ragtui.core.data.tokenizer import token_counter

COUNTER = token_counter()

DOC = """# Handbook

Intro paragraph with a few words.

## Pumps

The pump at the north end lifts water. It runs on diesel when the grid fails.

| station | capacity |
| --- | --- |
| PS-01 | 40 m3/min |
| PS-02 | 55 m3/min |

### Spares

Keep two spare impellers per station.

## Dikes

Walk the dike every spring and after every storm.
"""


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def test_spans_ids_and_sizes():
    chunks = Chunker(COUNTER, size=24).chunk(Document("h.md", DOC))
    assert len(chunks) > 3
    for n, c in enumerate(chunks):
        assert c.id == f"h.md#{n}" and c.index == n and c.doc == "h.md"
        assert DOC[c.start : c.end] == c.text
        assert c.token_count == COUNTER.count(c.text)
        assert c.token_count <= 24
        assert c.text == c.text.strip()


def test_chunks_cover_the_document_in_order_without_overlap():
    chunks = Chunker(COUNTER, size=24).chunk(Document("h.md", DOC))
    assert "".join(_squash(c.text) for c in chunks) == _squash(DOC)
    assert all(a.end <= b.start for a, b in itertools.pairwise(chunks))


def test_heading_path_follows_the_markdown_outline():
    chunks = Chunker(COUNTER, size=24).chunk(Document("h.md", DOC))
    spares = next(c for c in chunks if "impellers" in c.text)
    assert spares.heading_path == ("Handbook", "Pumps", "Spares")
    dikes = next(c for c in chunks if "storm" in c.text)
    assert dikes.heading_path == ("Handbook", "Dikes")


def test_table_stays_whole_when_it_fits():
    chunks = Chunker(COUNTER, size=40).chunk(Document("h.md", DOC))
    holding = [c for c in chunks if "| PS-01 |" in c.text]
    assert len(holding) == 1 and "| PS-02 |" in holding[0].text and "| station |" in holding[0].text


def test_whole_document_fits_in_one_chunk_at_default_size():
    chunks = Chunker(COUNTER).chunk(Document("h.md", DOC))
    assert len(chunks) == 1 and chunks[0].text == DOC.strip()


def test_a_heading_line_joins_the_section_that_follows():
    chunks = Chunker(COUNTER, size=24).chunk(Document("h.md", DOC))
    assert not any(c.text.startswith("#") and "\n" not in c.text for c in chunks)


def test_overlap_repeats_the_tail_of_the_previous_chunk():
    text = " ".join(f"Sentence number {i} ends here." for i in range(40))
    chunks = Chunker(COUNTER, size=30, overlap=10).chunk(Document("s.txt", text))
    assert len(chunks) > 3
    for a, b in itertools.pairwise(chunks):
        assert b.start < a.end, "consecutive chunks share text"
        assert COUNTER.count(text[b.start : a.end]) <= 10
        assert b.token_count <= 30


def test_text_without_spaces_is_cut_at_token_boundaries():
    text = "-".join(["ab"] * 200)
    chunks = Chunker(COUNTER, size=16).chunk(Document("w.txt", text))
    assert len(chunks) > 1 and all(c.token_count <= 16 for c in chunks)
    assert "".join(c.text for c in chunks) == text


def test_one_token_longer_than_the_size_is_kept_whole():
    # WordPiece reads a 600-character word as one [UNK] token: a chunk may not cut inside it.
    text = "x" + "ab" * 300
    chunks = Chunker(COUNTER, size=4).chunk(Document("w.txt", text))
    assert [c.text for c in chunks] == [text] and chunks[0].token_count == 1


def test_headings_inside_code_fences_are_not_headings():
    text = "# Real\n\n```\n# not a heading\n```\n\n## Also real\n"
    assert [t for _, _, t in headings(text)] == ["Real", "Also real"]


def test_beir_style_whole_documents_keep_their_ids():
    docs = [Document("17", "Title\n\nbody", title="Title"), Document("18", "other")]
    chunks = chunk_documents(docs, COUNTER, None)
    assert [c.id for c in chunks] == ["17", "18"] and chunks[0].heading_path == ("Title",)


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError):
        Chunker(COUNTER, size=0)
    with pytest.raises(ValueError):
        Chunker(COUNTER, size=10, overlap=10)


_words = st.sampled_from(
    ["pump", "dike", "PS-07", "42", "m³/min", "water", "Level", "NAP", "a", "héllo", "x" * 30]
)
_separators = st.sampled_from([" ", " ", " ", "\n", "\n\n", ". ", "\n## Head\n", "\n| a | b |\n"])


@st.composite
def _documents(draw):
    parts = draw(st.lists(st.tuples(_words, _separators), min_size=1, max_size=120))
    return "".join(w + s for w, s in parts)


@settings(
    max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(text=_documents(), size=st.integers(4, 80), overlap_share=st.floats(0, 0.5))
def test_fuzz_chunks_cover_in_order_within_size(text, size, overlap_share):
    overlap = min(int(size * overlap_share), size - 1)
    chunks = Chunker(COUNTER, size=size, overlap=overlap).chunk(Document("f.md", text))
    for c in chunks:
        assert text[c.start : c.end] == c.text
        # Within the size unless one token alone is bigger (never the case with this tokenizer).
        assert c.token_count <= size
    starts = [c.start for c in chunks]
    assert starts == sorted(starts)
    # Nothing lost: every non-space character lies in some chunk.
    covered = [False] * len(text)
    for c in chunks:
        for i in range(c.start, c.end):
            covered[i] = True
    assert all(covered[i] for i, ch in enumerate(text) if not ch.isspace())
    if overlap == 0:
        assert all(a.end <= b.start for a, b in itertools.pairwise(chunks))
    else:
        for a, b in itertools.pairwise(chunks):
            if b.start < a.end:
                assert COUNTER.count(text[b.start : a.end]) <= overlap


def test_chunking_does_not_import_torch():
    code = (
        "import sys; from ragtui.core.workspace import Workspace, Settings;"
        "from tests.conftest import MINI;"
        "ws = Workspace.load(Settings(corpus=MINI/'corpus', golden=MINI/'golden', chunk_size=48));"
        "assert ws.data.chunks;"
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'textual', 'rich') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
