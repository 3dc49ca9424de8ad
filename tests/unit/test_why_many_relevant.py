"""``ragtui why`` on questions with many relevant documents: the cause describes the miss of the top k,
not the hardest relevant document (issue 22: on NFCorpus, 38 relevant documents a question,
``lexical-gap`` came first for 296 of 309 bm25 misses, because some relevant document always shares
no word with the question); and single letters are no content words.

Cranfield (tests/data/cranfield: BEIR, 1,400 documents, 225 queries, 8 relevant documents a query
on average) is read with bm25 only, so nothing is embedded.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragtui.core.analysis.why import (
    FIXES,
    LexicalGap,
    NotRetrieved,
    Outranked,
    WhyIndex,
    cause_summary,
    question_why_json,
    question_words,
    why_question_report,
)
from ragtui.core.data.golden import query_terms
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace
from tests.conftest import CRANFIELD


@pytest.fixture(scope="module")
def cranfield(cache_dir: Path) -> tuple[Workspace, WhyIndex]:
    ws = Workspace.open(Settings(beir=CRANFIELD, retrievers=("bm25",), cache_dir=cache_dir))
    return ws, WhyIndex(ws)


def _words_of(ws: Workspace) -> dict[str, set[str]]:
    """Each document's BM25 tokens (at document level a document is all its chunks)."""
    words: dict[str, set[str]] = {}
    for chunk in ws.data.chunks:
        words.setdefault(chunk.doc, set()).update(query_terms(chunk.text))
    return words


def test_lexical_gap_comes_first_only_when_no_relevant_document_shares_a_word(cranfield):
    ws, index = cranfield
    assert ws.data.level == "document" and ws.settings.k == 3
    words = _words_of(ws)
    summary = cause_summary(index)["bm25"]
    lexical = summary.causes["lexical-gap"]
    # Before: 57 of 218 missed questions had lexical-gap first (some relevant document always
    # shares no word). Now only those none of whose relevant documents outside the top k does.
    assert summary.missed > 200
    assert lexical.first <= 5 < summary.causes["outranked"].first
    shares_some = 0
    for q in ws.questions:
        why = index.question(q.id)
        bm25 = why.retrievers["bm25"]
        question = set(question_words(q.text))
        outside = [d for d in why.relevant if d not in bm25.top]
        sharing = [d for d in outside if question & words.get(d, set())]
        if bm25.cause == "lexical-gap":
            assert sharing == [], q.id
        elif any("lexical-gap" in m.causes for m in bm25.misses):
            shares_some += 1
    # Questions with a relevant document sharing no word that is still a miss of the top k, but
    # not the first cause: a document sharing words came closer.
    assert shares_some >= 1


def test_the_misses_are_those_the_top_k_had_room_for(cranfield):
    ws, index = cranfield
    k = ws.settings.k
    full = 0
    for q in ws.questions:
        why = index.question(q.id)
        bm25 = why.retrievers["bm25"]
        outside = [d for d in why.relevant if d not in bm25.top]
        chunk_misses = [m for m in bm25.misses if m.chunk is not None]
        labels = [m for m in chunk_misses if FIXES[m.cause] == "dropped"]
        room = min(k, len(why.relevant)) - bm25.hits
        assert len(chunk_misses) == len(labels) + min(room, len(outside) - len(labels)), q.id
        assert bm25.beyond == len(outside) - len(chunk_misses)
        if room == 0 and outside:
            full += 1
            assert bm25.misses == () and bm25.cause is None
        # The misses are the closest: none left out ranks above one counted.
        counted = {m.chunk for m in chunk_misses}
        ranks = {cid: r for r, cid in enumerate(ws.ranking("bm25", q.id), start=1)}
        if chunk_misses and bm25.beyond:
            worst = max(ranks.get(m.chunk or "", 10**9) for m in chunk_misses)
            assert all(ranks.get(d, 10**9) >= worst for d in outside if d not in counted), q.id
    assert full >= 1  # some top 3 is all relevant, with more relevant documents outside it
    # Fixing what no top k has room for gains nothing: every ceiling is min(k, relevant) / relevant.
    every = [
        min(k, len(w.relevant)) / len(w.relevant)
        for w in index.questions()
        if w.evaluated and w.relevant
    ]
    evaluated = cause_summary(index)["bm25"].questions
    assert cause_summary(index)["bm25"].every_cause == pytest.approx(sum(every) / evaluated)


def test_a_full_top_k_is_shown_as_such(cranfield):
    ws, index = cranfield
    for q in ws.questions:
        bm25 = index.question(q.id).retrievers["bm25"]
        if bm25.beyond and not bm25.misses:
            break
    else:
        pytest.fail("no question with a top 3 full of relevant documents")
    report = why_question_report(index.question(q.id), 3, 10)
    words = " ".join(report.words())
    assert f"bm25: recall@3 {bm25.recall:.3f}; the top 3 is all relevant" in words
    assert f"{bm25.beyond} more relevant chunks outside the top 3 than it has room for" in words
    body = question_why_json(index.question(q.id), 3, 10)
    assert body["retrievers"]["bm25"]["beyond"] == bm25.beyond
    assert body["retrievers"]["bm25"]["misses"] == []


# ---- single letters ------------------------------------------------------------------------------


def test_single_letters_are_no_content_words(tmp_path: Path, cache_dir: Path):
    """A chunk that shares only ``s`` (of "doctor's") and ``c`` with the question shares no content
    word: bm25 ranks it by those letters alone, and the miss is a lexical gap."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "advice.md").write_text(
        "# Advice\n\nPhysicians recommend citrus fruit: an orange's worth of C a day is enough.\n"
    )
    (corpus / "clinic.md").write_text(
        "# Clinic\n\nThe doctor gives a view on the vitamin table at the clinic.\n"
    )
    (corpus / "garden.md").write_text("# Garden\n\nThe garden opens at nine.\n")
    golden = tmp_path / "golden"
    golden.mkdir()
    question = {
        "id": "s1",
        "question": "What is the doctor's view on vitamin c?",
        "evidence": "an orange's worth of C a day is enough",
    }
    (golden / "questions.jsonl").write_text(json.dumps(question) + "\n")
    ws = Workspace.open(
        Settings(
            corpus=corpus,
            golden=golden,
            retrievers=("bm25",),
            k=1,
            depth=3,
            cache_dir=cache_dir,
            annotator="tester",
        )
    )
    assert question_words(question["question"]) == ("doctor", "view", "vitamin")
    why = WhyIndex(ws).question("s1").retrievers["bm25"]
    assert why.top == ("clinic.md#0",)
    (miss,) = why.misses
    assert miss.chunk == "advice.md#0"
    assert miss.causes == ("lexical-gap", "outranked")
    gap, outranked = miss.findings
    assert isinstance(gap, LexicalGap) and isinstance(outranked, Outranked)
    assert gap.question_words == ("doctor", "view", "vitamin")
    assert "s" not in gap.evidence_words and "c" not in gap.evidence_words
    assert outranked.rank == 2  # found by "s" and "c" alone
    assert outranked.above[0].shared_words == ("doctor", "view", "vitamin")
    assert not isinstance(outranked, NotRetrieved)


def test_the_cranfield_example_of_the_page(capsys, monkeypatch, cli_cache_env):
    """docs/why.md's Cranfield example prints what the page shows (elisions aside)."""
    import shlex

    from ragtui.cli import main
    from tests.conftest import ROOT
    from tests.unit.test_docs import examples, matches

    command = "ragtui why --beir tests/data/cranfield --retrievers bm25"
    (example,) = [e for e in examples() if e.key == ("docs/why.md", command)]
    monkeypatch.chdir(ROOT)
    capsys.readouterr()
    assert main([*shlex.split(command)[1:], "--no-project"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert matches(list(example.steps[0].expected), printed), "\n".join(printed)
