"""A retriever plugin for ragtui's tests: Okapi BM25 (rank-bm25) over a chunks file.

It is what a team writes to put its own search behind ragtui: a factory that returns an object
with ``search(question, depth)``. This one ranks exactly as ragtui's built-in bm25 (same tokens,
same parameters, only chunks sharing a word with the question, ties by chunk order), so the tests
can check that a plugin gets the very same numbers.
"""

from __future__ import annotations

import json
import os
import re

from rank_bm25 import BM25Okapi

_WORD = re.compile(r"\w+")


def _tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class KeywordSearch:
    """BM25 over the chunks of a JSON-lines file (``id`` and ``text`` on each line)."""

    concurrency = 2
    version = "1.0"

    def __init__(self, chunks_file: str) -> None:
        self.ids: list[str] = []
        tokenized: list[list[str]] = []
        with open(chunks_file, encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    obj = json.loads(line)
                    self.ids.append(obj["id"])
                    tokenized.append(_tokens(obj["text"]))
        self.postings: dict[str, set[int]] = {}
        for i, toks in enumerate(tokenized):
            for tok in toks:
                self.postings.setdefault(tok, set()).add(i)
        self.okapi = BM25Okapi(tokenized)
        self.settings = {"chunks_file": chunks_file}

    def search(self, question: str, depth: int) -> list[dict[str, object]]:
        terms = _tokens(question)
        candidates: set[int] = set()
        for term in terms:
            candidates |= self.postings.get(term, set())
        if not candidates:
            return []
        scores = self.okapi.get_scores(terms)
        best = sorted(candidates, key=lambda i: (-scores[i], i))[:depth]
        return [{"id": self.ids[i], "score": float(scores[i])} for i in best]


def make(chunks_file: str | None = None) -> KeywordSearch:
    """The factory: the chunks file from the project file's options, else from the environment."""
    return KeywordSearch(chunks_file or os.environ["RAGTUI_TEST_PLUGIN_CHUNKS"])


def make_function(chunks_file: str | None = None):
    """A factory that returns a plain search function whose results are (id, score, text) tuples."""
    search = make(chunks_file)
    texts: dict[str, str] = {}
    with open(search.settings["chunks_file"], encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                obj = json.loads(line)
                texts[obj["id"]] = obj["text"]

    def find(question: str, depth: int) -> list[tuple[str, float, str]]:
        return [(h["id"], h["score"], texts[h["id"]]) for h in search.search(question, depth)]

    return find


class _Broken:
    """A search whose backend is down."""

    def search(self, question: str, depth: int) -> list[dict[str, object]]:
        raise RuntimeError("index offline")


def make_broken() -> _Broken:
    """A factory whose search always fails."""
    return _Broken()


def make_bad_results():
    """A search that returns something that is not a list of results."""
    return lambda question, depth: [{"id": "x", "score": "high"}]
