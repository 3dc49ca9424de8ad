"""Windows for long chunks: how chunks are cut, how windows are pooled, what the real model finds with
them and without them, what ``check`` reports before and after, and that window texts are cached."""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from ragtui.cli import main
from ragtui.core.analysis.diagnostics import diagnose
from ragtui.core.data.chunking import Chunk
from ragtui.core.data.tokenizer import ModelLimit, token_counter
from ragtui.core.errors import InputError
from ragtui.core.retrieval.embeddings import EmbeddingCache, text_key
from ragtui.core.retrieval.vector import VectorRetriever
from ragtui.core.retrieval.windows import chunk_windows, token_windows, window_plan
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace
from tests.unit.test_diagnostics import QUESTIONS, _model

BREAD = (
    "Sourdough bread is made from flour, water and salt, leavened by a starter of wild yeast and "
    "lactic acid bacteria. The baker feeds the starter every morning with fresh rye flour and "
    "lukewarm water, and keeps it in a clay pot near the oven. A long, cool fermentation gives the "
    "crumb its open structure and the crust its deep colour and slightly sour taste. Dough is folded "
    "every half hour during bulk fermentation, then shaped into round loaves and left to rise in "
    "linen-lined baskets overnight. Before baking, each loaf is scored with a razor blade so that "
    "steam can escape and the bread can expand evenly in the heat. The oven is heated to two hundred "
    "and fifty degrees and a tray of water on the lowest rack keeps the air humid for the first "
    "twenty minutes. Whole wheat, spelt and rye flours absorb more water than white flour, so the "
    "hydration of the dough has to be adjusted for each mix. "
)
EVIDENCE = "The cat that lives in the lighthouse is called Marmalade."
TAIL = (
    "Far from the bakery, on the rocks of the northern cape, stands the old lighthouse. "
    f"{EVIDENCE} Marmalade is a ginger tomcat who sleeps beside the great lamp at the top of the "
    "tower, where the glass keeps him warm on stormy nights. The lighthouse keeper adopted the cat "
    "as a kitten after a shipwreck and the cat has never left the tower since. Every evening "
    "Marmalade climbs the spiral staircase with the keeper when the lamp is lit, and visitors to "
    "the lighthouse ask first of all to see the cat. "
)
DISTRACTORS = {
    "lighthouse.md": "# Lighthouse\n\nThe lighthouse on the northern cape was built in 1852. Its lamp "
    "can be seen twenty miles out at sea, and the keeper climbs one hundred and twenty steps every "
    "evening to light it.",
    "cats.md": "# Cats\n\nCats are popular pets. Many cats sleep sixteen hours a day and like warm "
    "places such as a sunny windowsill.",
    "names.md": "# Pet names\n\nPopular names for pets include Max, Bella, Luna and Charlie.",
    "harbour.md": "# Harbour\n\nThe harbour has a fish market, a ferry to the islands and a small "
    "museum about shipwrecks along the cape.",
}


@pytest.fixture
def tail_corpus(tmp_path: Path, cache_dir: Path) -> Settings:
    """One long chunk (about 510 tokens) whose answer lies only in its last 118 tokens, four short distractors."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "bakery.md").write_text("# Bakery\n\n" + BREAD * 2 + "\n\n" + TAIL)
    for name, text in DISTRACTORS.items():
        (corpus / name).write_text(text)
    golden = tmp_path / "golden"
    golden.mkdir()
    question = {
        "id": "t1",
        "question": "What is the name of the cat that lives in the lighthouse?",
        "evidence": EVIDENCE,
    }
    (golden / "questions.jsonl").write_text(json.dumps(question) + "\n")
    return Settings(
        corpus=corpus,
        golden=golden,
        chunk_size=2000,
        retrievers=("vector",),
        cache_dir=cache_dir,
    )


def test_evidence_only_in_the_tail_is_found_with_windows_and_not_without(tail_corpus):
    with_windows = Workspace.open(tail_corpus)
    assert with_windows.settings.windows == "max", "windows are on by default"
    long_chunk = with_windows.passages.by_id["bakery.md#0"]
    assert long_chunk.token_count > 254 and EVIDENCE in long_chunk.text
    # The model reads 254 tokens: the evidence starts after them.
    head = token_counter().offsets(long_chunk.text)[254][0]
    assert long_chunk.text.index(EVIDENCE) > head
    ranked = [cid for cid, _ in with_windows.ranking("vector", "t1")]
    assert ranked[0] == "bakery.md#0"

    without = Workspace.open(replace(tail_corpus, windows="off"))
    ranked_off = [cid for cid, _ in without.ranking("vector", "t1")]
    assert "bakery.md#0" not in ranked_off[:3]
    assert without.evaluation is not None and with_windows.evaluation is not None
    assert without.evaluation.per_question["vector"]["t1"].recall == 0.0
    assert with_windows.evaluation.per_question["vector"]["t1"].rr == 1.0


def test_window_texts_are_cached_by_content(tail_corpus):
    ws = Workspace.open(tail_corpus)
    assert ws.ranked.windows is not None and ws.ranked.windows.windowed == 1
    spans = ws.ranked.windows.spans[ws.passages.order["bakery.md#0"]]
    assert len(spans) >= 3
    cache = EmbeddingCache(tail_corpus.model, tail_corpus.cache_dir)
    assert all(text_key(t) in cache.rows for t in ws.ranked.windows.texts)

    class Refuses:
        """An embedder that fails if anything is left to encode."""

        cache_name = tail_corpus.model

        def encode(self, texts, progress=None):
            raise AssertionError(f"{len(texts)} texts were not cached")

    again = Workspace.load(tail_corpus)
    again.prepare_vectors(embedder=Refuses())  # type: ignore[arg-type]
    assert again.ranking("vector", "t1") == ws.ranking("vector", "t1")


def test_token_windows_cover_the_text_within_the_length():
    counter = token_counter()
    text = BREAD * 2 + TAIL
    offsets = counter.offsets(text)
    spans = token_windows(text, counter, 100, 50)
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    for (a, b), (c, _d) in itertools.pairwise(spans):
        assert c < b, "consecutive windows overlap"
        assert a < c
    assert all(counter.count(text[a:b]) <= 100 for a, b in spans)
    # Starts every 50 tokens: the n-th window starts at token 50 n (the last one ends at the end).
    starts = [next(i for i, (s, _) in enumerate(offsets) if s == a) for a, _ in spans]
    assert starts[:-1] == list(range(0, 50 * (len(spans) - 1), 50))
    assert len(offsets) - starts[-1] <= 100
    # Every token is in some window.
    assert all(any(a <= s and e <= b for a, b in spans) for s, e in offsets)
    assert token_windows("short text", counter, 100, 50) == [(0, len("short text"))]


def test_window_plan():
    limit = ModelLimit(256, 2, "test")
    plan = window_plan("max", None, limit)
    assert plan is not None and (plan.length, plan.stride, plan.mode) == (254, 127, "max")
    assert window_plan("mean", 200, limit).stride == 200  # type: ignore[union-attr]
    assert window_plan("off", None, limit) is None
    assert window_plan("max", None, None) is None
    with pytest.raises(InputError, match="over the model's window of 254 tokens"):
        window_plan("max", 255, limit)


def test_pooling_takes_the_best_or_the_mean_window():
    chunks = [Chunk(f"d#{i}", "d", i, 0, 1, "x", (), 1) for i in range(3)]
    e = np.eye(4, dtype=np.float32)
    # Chunk 0 has windows e0 and e1, chunk 1 has e2, chunk 2 has e3 and (e1 + e3)/sqrt(2).
    mixed = (e[1] + e[3]) / np.sqrt(2)
    matrix = np.vstack([e[0], e[1], e[2], e[3], mixed])
    first_rows = np.array([0, 2, 3])
    best = VectorRetriever(chunks, matrix, lambda q: e[1], first_rows, "max")
    assert best.search("q", 3)[0] == ("d#0", pytest.approx(1.0))
    assert [cid for cid, _ in best.search("q", 3)] == ["d#0", "d#2", "d#1"]
    mean = VectorRetriever(chunks, matrix, lambda q: e[1], first_rows, "mean")
    scores = dict(mean.search("q", 3))
    assert scores["d#0"] == pytest.approx(0.5)
    assert scores["d#2"] == pytest.approx((0 + 1 / np.sqrt(2)) / 2)
    assert scores["d#1"] == pytest.approx(0.0)
    batch = best.search_vectors(np.vstack([e[1], e[2]]), 3)
    assert batch[0] == best.search_vector(e[1], 3) and batch[1][0][0] == "d#1"
    with pytest.raises(ValueError):
        VectorRetriever(chunks, matrix, lambda q: e[1], np.array([0, 3, 3]), "max")


def test_chunks_that_fit_are_their_own_window(mini_settings):
    ws = Workspace.load(mini_settings)
    windows = chunk_windows(ws.data.chunks, token_counter(), ws.ranked.window_plan)
    assert windows.windowed == 0 and windows.texts == [c.text for c in ws.data.chunks]


@pytest.fixture
def tripwire_windows(tmp_path: Path) -> Settings:
    """The diagnostics' corpus (harbour.md#0 is 39 tokens) with a model that reads 30, and a long evidence string."""
    from tests.unit.test_diagnostics import HARBOUR, MUSEUM

    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "harbour.md").write_text(HARBOUR)
    (tmp_path / "corpus" / "museum.md").write_text(MUSEUM)
    (tmp_path / "golden").mkdir()
    questions = [
        *QUESTIONS,
        {
            "id": "d5",
            "question": "What does the office keep?",
            # Tokens 5-33 of harbour.md#0 (39 tokens): shorter than a window of 30, yet neither
            # window (tokens 0-29 and 9-38, the last one ending at the chunk's end) holds it whole.
            "evidence": "keeps the keys of every pier and the logbook of each boat that moors there "
            "overnight during the summer season. The secret code of the gate is",
        },
    ]
    (tmp_path / "golden" / "questions.jsonl").write_text(
        "".join(json.dumps(q) + "\n" for q in questions)
    )
    model = _model(tmp_path / "model", sentence_bert_config={"max_seq_length": 32})
    return Settings(
        corpus=tmp_path / "corpus",
        golden=tmp_path / "golden",
        chunk_size=40,
        model=str(model),
        retrievers=("bm25",),
    )


def test_diagnostics_before_and_after_windows(tripwire_windows, capsys):
    ws = Workspace.load(tripwire_windows)
    diag = diagnose(ws)
    assert [t.chunk for t in diag.truncated] == ["harbour.md#0", "harbour.md#1"]
    assert sorted(h.question for h in diag.hidden_evidence) == ["d1", "d5"]
    assert diag.windows is not None
    assert (diag.windows.plan.length, diag.windows.plan.stride) == (30, 15)
    assert diag.windows.windowed == 2 and diag.windows.windows == 4
    # d1's evidence (tokens 27-38) lies inside the second window; d5's (tokens 5-33) in neither.
    assert [h.question for h in diag.windows.split] == ["d5"]
    assert diagnose(Workspace.load(replace(tripwire_windows, windows="off"))).windows is None

    args = [
        "check",
        "--corpus",
        str(tripwire_windows.corpus),
        "--golden",
        str(tripwire_windows.golden),
        "--chunk-size",
        "40",
        "--model",
        tripwire_windows.model,
        "--retrievers",
        "bm25",
    ]
    main(args)
    out = capsys.readouterr().out
    assert (
        "windows: windows of 30 tokens, stride 15, best window; 2 chunks read as 4 windows; "
        "before: 2 chunks and 2 evidence strings in a cut-off tail; after: 0 chunks with an unread "
        "tail, 1 evidence string that no single window holds whole"
    ) in out
    rows = {
        line.split()[1]: line.split()[2:6]
        for line in out.splitlines()
        if "questions.jsonl:" in line
    }
    # d1's evidence lies partly in harbour.md#0's cut-off tail and a window reads it whole; d5's in none.
    assert rows["d1"] == ["harbour.md#0", "partly", "whole", "'The"]
    assert rows["d5"] == ["harbour.md#0", "partly", "split", "'keeps"]
    assert "read as overlapping windows (windows of 30 tokens, stride 15, best window)" in out
    assert re.search(r"^  harbour\.md#0 +39 +9$", out, re.M), "39 tokens, the last 9 unread"
    main([*args, "--windows", "off"])
    out = capsys.readouterr().out
    assert (
        "windows: off (--windows off): 2 chunks and 2 evidence strings in a cut-off tail, left unread"
        in out
    )
    assert re.search(r"^  harbour\.md#0 +39 +9$", out, re.M)
    assert "read as overlapping windows" not in out


def test_a_stride_over_the_window_is_bad_input(tripwire_windows, capsys):
    settings = replace(tripwire_windows, retrievers=("vector",), window_stride=31)
    with pytest.raises(InputError, match="--window-stride 31 is over the model's window of 30"):
        Workspace.load(settings)
    code = main(
        [
            "check",
            "--corpus",
            str(tripwire_windows.corpus),
            "--golden",
            str(tripwire_windows.golden),
            "--model",
            tripwire_windows.model,
            "--window-stride",
            "31",
        ]
    )
    assert code == 2
    assert "--window-stride 31 is over" in capsys.readouterr().err
