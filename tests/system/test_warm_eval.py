"""Warm means warm (issue 26, item 5): a warm ``ragtui eval`` tokenizes nothing (the windows of long
chunks come from the window cache, keyed by each text's content, the tokenizer and the plan), gives
exactly the numbers a cold one gives, and computes the causes of misses once, only when its output
holds them.

The set is made by ``bench.beir_set`` from the bundled Cranfield text (whole documents, never
counted when read: every one is tokenized to cut its windows when the cache is cold).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from bench.beir_set import write_set
from ragtui.cli import main
from ragtui.core.analysis.why import index as why_index
from ragtui.core.data.beir import load_beir
from ragtui.core.data.binary_cache import ArrayStore
from ragtui.core.data.chunking import Chunk, chunk_documents
from ragtui.core.data.tokenizer import DEFAULT_MODEL, TokenCounter, model_limit, token_counter
from ragtui.core.retrieval.window_cache import cached_chunk_windows, text_digest, window_store
from ragtui.core.retrieval.windows import WindowPlan, chunk_windows, window_plan
from tests.conftest import ROOT


class _Counting:
    """Counts the calls of a real method (the method still runs)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, owner: type, name: str) -> None:
        self.calls = 0
        original = getattr(owner, name)

        def counted(obj: object, *args: object, **kwargs: object) -> object:
            self.calls += 1
            return original(obj, *args, **kwargs)

        monkeypatch.setattr(owner, name, counted)


def _tokenizer_calls(monkeypatch: pytest.MonkeyPatch) -> list[_Counting]:
    """Counters of every way a TokenCounter tokenizes: count, offsets, count_batch."""
    return [_Counting(monkeypatch, TokenCounter, n) for n in ("count", "offsets", "count_batch")]


def _windows_input(beir: Path) -> tuple[list[Chunk], TokenCounter, WindowPlan]:
    """The set's documents as whole chunks (as ``--beir`` reads them), the tokenizer, the plan."""
    corpus, _, _ = load_beir(beir, with_corpus=True)
    counter = token_counter(None)
    plan = window_plan("max", None, model_limit(DEFAULT_MODEL, counter))
    assert plan is not None
    return chunk_documents(corpus.documents, counter, None), counter, plan


@pytest.fixture(scope="module")
def small_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """40 Cranfield abstracts, the questions that judge them, their qrels (BEIR layout)."""
    return write_set(tmp_path_factory.mktemp("beir") / "set", documents=40, questions=300)


@pytest.fixture(scope="module")
def embeddings(tmp_path_factory: pytest.TempPathFactory, small_set: Path) -> Path:
    """A cache folder holding the set's embeddings only (the model runs once for the module)."""
    root = tmp_path_factory.mktemp("embedded")
    _eval(root, small_set)
    for name in list(root.iterdir()):
        if name.name != "embeddings" and name.is_dir():
            shutil.rmtree(name)
    return root


def _eval(cache: Path, beir: Path, *extra: str) -> str:
    """``ragtui eval --beir`` in this process with ``cache`` as the cache; what it printed."""
    buffer = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(buffer):
        mp.setenv("RAGTUI_CACHE_DIR", str(cache))
        code = main(["eval", "--beir", str(beir), *extra])
    assert code == 0
    return buffer.getvalue()


def _copy(embeddings: Path, tmp_path: Path) -> Path:
    root = tmp_path / "cache"
    shutil.copytree(embeddings, root)
    return root


def test_a_warm_eval_tokenizes_nothing_and_prints_what_a_cold_one_prints(
    small_set: Path, embeddings: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = _copy(embeddings, tmp_path)
    with pytest.MonkeyPatch.context() as mp:
        cold = _tokenizer_calls(mp)
        first_table = _eval(cache, small_set)
        first_json = _eval(cache, small_set, "--json")
    assert cold[1].calls >= 40, "the cold run cut every document's windows"
    warm = _tokenizer_calls(monkeypatch)
    assert _eval(cache, small_set) == first_table
    assert _eval(cache, small_set, "--json") == first_json
    assert [c.calls for c in warm] == [0, 0, 0], "a warm eval tokenizes nothing"
    body = json.loads(first_json)
    assert body["retrievers"]["vector"]["recall"] > 0 and body["questions"] > 0


def test_windows_from_the_cache_equal_windows_cut_now(small_set: Path, tmp_path: Path) -> None:
    chunks, counter, plan = _windows_input(small_set)
    expected = chunk_windows(chunks, counter, plan)
    assert expected.windowed > 0, "the set has documents longer than one window"
    root = tmp_path / "cache"
    first, warnings = cached_chunk_windows(chunks, counter, plan, root)
    assert warnings == []
    with pytest.MonkeyPatch.context() as mp:
        calls = _tokenizer_calls(mp)
        again, warnings = cached_chunk_windows(chunks, counter, plan, root)
    assert [c.calls for c in calls] == [0, 0, 0] and warnings == []
    for got in (first, again):
        assert got.spans == expected.spans and got.texts == expected.texts
        assert np.array_equal(got.first_rows, expected.first_rows)
    # One long document edited: only its text is tokenized again.
    long = next(i for i, s in enumerate(expected.spans) if len(s) > 1)
    text = chunks[long].text + " and more words at the end ."
    edited = [*chunks]
    edited[long] = replace(chunks[long], text=text, end=len(text))
    with pytest.MonkeyPatch.context() as mp:
        calls = _tokenizer_calls(mp)
        changed, _ = cached_chunk_windows(edited, counter, plan, root)
    assert calls[1].calls == 1, "only the edited document's offsets were asked for"
    assert changed.spans == chunk_windows(edited, counter, plan).spans
    # Another stride is another store, cut with that stride.
    narrow = WindowPlan(plan.mode, plan.length, 100)
    assert window_store(counter, narrow, root).folder != window_store(counter, plan, root).folder
    other, _ = cached_chunk_windows(chunks, counter, narrow, root)
    assert other.spans == chunk_windows(chunks, counter, narrow).spans != expected.spans


@pytest.mark.parametrize("how", ["torn", "forged-span", "forged-order", "manifest"])
def test_a_damaged_window_cache_is_rebuilt_never_used(
    small_set: Path, tmp_path: Path, how: str
) -> None:
    chunks, counter, plan = _windows_input(small_set)
    expected = chunk_windows(chunks, counter, plan)
    root = tmp_path / "cache"
    cached_chunk_windows(chunks, counter, plan, root)
    folder = window_store(counter, plan, root).folder
    if how == "torn":
        raw = (folder / "start.npy").read_bytes()
        (folder / "start.npy").write_bytes(raw[: len(raw) // 2])
    elif how == "manifest":
        (folder / "manifest.json").write_bytes(b"{not json")
    else:
        # A forger who also rewrites the hashes: the spans are still checked against the texts.
        store = ArrayStore(folder)
        found = store.read()
        assert found is not None
        meta, arrays = found
        changed = {n: a.copy() for n, a in arrays.items()}
        if how == "forged-span":
            changed["end"][:] = 10**9
        else:
            changed["text"] = changed["text"][::-1].copy()
        store.write(meta, changed)
    got, warnings = cached_chunk_windows(chunks, counter, plan, root)
    assert any("window cache ignored and rebuilt" in w for w in warnings), warnings
    assert got.spans == expected.spans and got.texts == expected.texts
    again, warnings = cached_chunk_windows(chunks, counter, plan, root)
    assert warnings == [] and again.spans == expected.spans, "the rebuilt cache is used"


def test_a_text_whose_digest_ends_in_a_zero_byte_is_kept_once(tmp_path: Path) -> None:
    """numpy's bytes arrays drop trailing zero bytes: a stored digest ending in one still matches
    its text when the store is rewritten with another text (else it is kept twice, and the store
    is refused as out of order the next time)."""
    counter = token_counter(None)
    plan = WindowPlan("max", 254, 127)
    texts = [f"text number {i} of a few" for i in range(600)]
    assert any(text_digest(t).endswith(b"\0") for t in texts)
    chunks = [Chunk(t, t, 0, 0, len(t), t, (), -1) for t in texts]
    root = tmp_path / "cache"
    cached_chunk_windows(chunks, counter, plan, root)
    more = [*chunks, Chunk("new", "new", 0, 0, 8, "new text", (), -1)]
    _, warnings = cached_chunk_windows(more, counter, plan, root)
    assert warnings == []
    with pytest.MonkeyPatch.context() as mp:
        calls = _tokenizer_calls(mp)
        got, warnings = cached_chunk_windows(more, counter, plan, root)
    assert warnings == [] and [c.calls for c in calls] == [0, 0, 0]
    assert got.spans == [[(0, len(c.text))] for c in more]


def test_eval_json_with_save_works_out_the_causes_once(
    small_set: Path, embeddings: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = _copy(embeddings, tmp_path)
    plain = _eval(cache, small_set, "--json")
    built = _Counting(monkeypatch, why_index.WhyIndex, "__init__")
    table = _eval(cache, small_set)
    assert built.calls == 0, "the table alone works out no cause"
    saved = _eval(cache, small_set, "--json", "--save", "a", "--runs-dir", str(tmp_path / "runs"))
    assert built.calls == 1, "--json and the saved run share one computation of the causes"
    assert saved == plain and table
    run = json.loads((tmp_path / "runs" / "a.json").read_text(encoding="utf-8"))
    body = json.loads(plain)
    for name, per_question in body["retrievers"].items():
        for qid, entry in per_question["per_question"].items():
            assert run["retrievers"][name]["per_question"][qid]["causes"] == entry["causes"]


def test_a_warm_eval_imports_no_rich(small_set: Path, embeddings: Path, tmp_path: Path) -> None:
    """The progress bar is made at its first report: a warm eval reports nothing, imports no Rich."""
    cache = _copy(embeddings, tmp_path)
    _eval(cache, small_set)  # the derived caches
    code = (
        "import contextlib, io, sys\n"
        "from ragtui.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()): main(sys.argv[1:])\n"
        "print(sorted(m for m in ('rich', 'torch') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "eval", "--beir", str(small_set)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "RAGTUI_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1"},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
