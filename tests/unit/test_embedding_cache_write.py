"""An embedding cache that cannot be written warns, as the other caches do, instead of ending the
command (issue 22: an unwritable cache folder was fatal after the whole embedding had run)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragtui.cli import main
from ragtui.core.retrieval.embeddings import Embedder, EmbeddingCache
from tests.conftest import mini_args

TEXTS = [
    "the ferry leaves at nine",
    "a late book costs 0.25 EUR per day",
    "the ferry leaves at nine",
]


def _blocked(root: Path) -> Path:
    """A cache root whose ``embeddings`` folder cannot be made: a file stands in its place (this
    fails for root too, unlike mode bits)."""
    root.mkdir()
    (root / "embeddings").write_text("not a folder\n")
    return root


def test_an_unwritable_cache_keeps_the_rows_in_memory_and_warns(tmp_path):
    root = _blocked(tmp_path / "cache")
    cache = EmbeddingCache(None, root)
    embedder = Embedder()
    rows = cache.embed(TEXTS, embedder)
    assert rows.shape == (3, 384) and np.allclose(rows[0], rows[2])
    assert np.allclose(rows, embedder.encode(TEXTS), atol=1e-5)
    (warning,) = cache.warnings
    assert warning.startswith(f"{cache.folder}: embedding cache not written (")
    # Held for the rest of the run: nothing is embedded again, and the warning is said once.
    assert cache.missing(TEXTS) == []
    more = cache.embed([*TEXTS, "the museum opens at ten"], embedder)
    assert np.allclose(more[:3], rows) and len(cache.warnings) == 1
    assert (root / "embeddings").read_text() == "not a folder\n"


def test_a_write_that_fails_keeps_what_the_cache_held(tmp_path):
    """A cache written once, then its folder made unwritable in place: the old rows stay usable."""
    root = tmp_path / "cache"
    cache = EmbeddingCache(None, root)
    embedder = Embedder()
    first = cache.embed(TEXTS[:1], embedder)
    # The array file replaced by a folder: the next atomic rename onto it fails.
    npy = cache.folder / "vectors.npy"
    npy.unlink()
    npy.mkdir()
    rows = cache.embed(TEXTS, embedder)
    assert np.allclose(rows[0], first[0]) and cache.missing(TEXTS) == []
    assert len(cache.warnings) == 1 and "embedding cache not written" in cache.warnings[0]


@pytest.mark.parametrize("retrievers", ["vector", "bm25,vector,hybrid"])
def test_eval_runs_with_an_unwritable_embedding_cache(
    mini, tmp_path, capsys, monkeypatch, retrievers
):
    root = _blocked(tmp_path / "cache")
    monkeypatch.setenv("RAGTUI_CACHE_DIR", str(root))
    # torch: a cold cache folder would otherwise export the model to ONNX first (seconds, and
    # another subject: docs/performance.md).
    args = mini_args(mini, "--retrievers", retrievers, "--embedding-backend", "torch")
    assert main(["eval", *args, "--no-project"]) == 0
    out, err = capsys.readouterr()
    assert "ragtui: error" not in err and "Traceback" not in err
    assert out.splitlines()[2].startswith(retrievers.split(",")[0])
