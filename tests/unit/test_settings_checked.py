"""``Settings.checked()``: the options that cannot go together are refused before anything is read,
with the one-line messages ``Workspace.load`` gives (it calls ``checked()`` first)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from ragtui.core.data.grades import DEFAULT_GRADE_SCALE
from ragtui.core.errors import InputError
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace

# Folders that do not exist: a check that read anything would fail on them with another message.
_NOWHERE = Path("/nonexistent/ragtui-test")
#: Given, so that resolving reads no grades.json either.
_SCALE = DEFAULT_GRADE_SCALE


def _settings(**changes: object) -> Settings:
    base = Settings(corpus=_NOWHERE / "corpus", golden=_NOWHERE / "golden", grade_scale=_SCALE)
    return replace(base, **changes)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"retrievers": ("bm25", "hybrid+rerank")},
            "--retrievers: hybrid+rerank comes from --rerank MODEL",
        ),
        (
            {"retrievers": ("bm25+rerank",), "rerank": "model"},
            "--retrievers: bm25+rerank comes from --rerank MODEL with --rerank-over bm25",
        ),
        ({"rerank": "model", "rerank_over": "mine"}, "--rerank-over: 'mine' cannot be reranked"),
        ({"k": 0}, "--k and --depth must be at least 1"),
        ({"depth": 0}, "--k and --depth must be at least 1"),
        ({"runs": (("bm25", _NOWHERE / "r.run"),)}, "--run: the name 'bm25' is taken"),
        (
            {"runs": (("a", _NOWHERE / "1.run"), ("a", _NOWHERE / "2.run"))},
            "--run: the name 'a' is taken",
        ),
        (
            {"chunk_size": 100, "overlap": 100},
            "--overlap must be at least 0 and smaller than --chunk-size",
        ),
        (
            {"chunk_size": 100, "overlap": -1},
            "--overlap must be at least 0 and smaller than --chunk-size",
        ),
        (
            {"chunks": _NOWHERE / "chunks.jsonl"},
            "--chunks replaces --corpus (the chunks are the corpus); give one of them",
        ),
    ],
)
def test_checked_refuses_before_reading_anything(changes: dict[str, object], message: str) -> None:
    settings = _settings(**changes)
    with pytest.raises(InputError) as raised:
        settings.checked()
    assert message in str(raised.value)
    # The load refuses the same way, before it opens a file.
    with pytest.raises(InputError) as loaded:
        Workspace.load(settings)
    assert str(loaded.value) == str(raised.value)


def test_checked_passes_good_settings_resolved() -> None:
    settings = _settings(k=5, depth=5, runs=(("mine", _NOWHERE / "r.run"),), chunk_size=None)
    checked = settings.checked()
    assert checked == settings.resolved()
    assert checked.notes() == []


def test_k_above_depth_is_a_note_not_an_error() -> None:
    (note,) = _settings(k=20, depth=5).checked().notes()
    assert note.startswith("--k 20 is above --depth 5:")
    assert "recall@20 is recall@5" in note


def test_needed_retrievers_add_what_is_reranked_and_fused() -> None:
    assert _settings(retrievers=("bm25",)).needed_retrievers() == {"bm25"}
    assert _settings(retrievers=("hybrid",)).needed_retrievers() == {"bm25", "vector", "hybrid"}
    assert _settings(
        retrievers=("bm25", "vector+rerank"), rerank="m", rerank_over="vector"
    ).needed_retrievers() == {
        "bm25",
        "vector",
    }
