"""Shared fixtures and test data: the small fixed corpus copied to a temporary folder, one embedding cache
per run, and the paths of trec_eval's test vectors and the Cranfield collection (all under tests/data)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ragtui.core.settings import Settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")
# This interpreter's scripts first on PATH, as an activated virtual environment has them: a test
# that starts `ragtui` or `python3` by name (in tmux, over SSH) runs the environment under test
# (`.venv/bin/python -m pytest`), not another Python's install found further along PATH.
os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
MINI = DATA / "mini"
#: trec_eval's own test vectors (qrels, a run and trec_eval's output for them); see its SOURCE.md.
TREC_EVAL = DATA / "trec_eval"
#: The Cranfield collection in BEIR format (1,400 documents, 225 queries, graded qrels); see its SOURCE.md.
CRANFIELD = DATA / "cranfield"

#: The small corpus is chunked at this size so that it gives several chunks per document.
MINI_CHUNK_SIZE = 48


#: The test tiers, one folder each (README.md, "Run the tests"): ``unit`` runs in this process
#: (no subprocess, no terminal, no Pilot), ``app`` drives the Textual app with Pilot and snapshots,
#: ``system`` starts processes: the CLI, tmux, sshd, Chromium, servers, Milvus Lite.
TIERS = ("unit", "app", "system")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each test is marked with its tier (its folder), so ``-m unit`` picks the fast tier."""
    for item in items:
        parts = Path(str(item.path)).relative_to(ROOT / "tests").parts
        if parts and parts[0] in TIERS:
            item.add_marker(getattr(pytest.mark, parts[0]))


@pytest.fixture(scope="session", autouse=True)
def user_data_home(tmp_path_factory: pytest.TempPathFactory):
    """A fresh ``$XDG_DATA_HOME`` for the run: the user's copy of the bundled golden set never leaks in or out."""
    before = os.environ.get("XDG_DATA_HOME")
    home = tmp_path_factory.mktemp("xdg-data")
    os.environ["XDG_DATA_HOME"] = str(home)
    yield home
    if before is None:
        os.environ.pop("XDG_DATA_HOME", None)
    else:
        os.environ["XDG_DATA_HOME"] = before


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An embedding cache shared by the whole test run (the real model fills it once)."""
    explicit = os.environ.get("RAGTUI_CACHE_DIR")
    if explicit:
        return Path(explicit)
    return tmp_path_factory.mktemp("embedding-cache")


@pytest.fixture
def cli_cache_env(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Commands run in the test's process use the shared test cache (``RAGTUI_CACHE_DIR``)."""
    monkeypatch.setenv("RAGTUI_CACHE_DIR", str(cache_dir))


def grade_of(labels: Any, question: str, chunk: str) -> int | None:
    """The current hand grade of a pair in a label journal (the one that counts), or None."""
    label = labels.current.get((question, chunk))
    return label.grade if label else None


def mini_args(mini: Path, *extra: str) -> list[str]:
    """Command-line options for the small corpus copy made by the ``mini`` fixture, then ``extra``."""
    return [
        "--corpus",
        str(mini / "corpus"),
        "--golden",
        str(mini / "golden"),
        "--chunk-size",
        str(MINI_CHUNK_SIZE),
        *extra,
    ]


@pytest.fixture
def mini(tmp_path: Path) -> Path:
    """A writable copy of the small corpus and golden set: ``<tmp>/corpus`` and ``<tmp>/golden``."""
    shutil.copytree(MINI / "corpus", tmp_path / "corpus")
    shutil.copytree(MINI / "golden", tmp_path / "golden")
    return tmp_path


def settings_of(mini: Path, **changes: Any) -> Settings:
    """Settings for a copy of the small corpus (``mini``: what ``mini_args`` gives a command), then ``changes``."""
    from ragtui.core.settings import Settings

    return Settings(
        corpus=mini / "corpus", golden=mini / "golden", chunk_size=MINI_CHUNK_SIZE, **changes
    )


@pytest.fixture
def mini_settings(mini: Path, cache_dir: Path) -> Settings:
    """Settings for the small corpus copy, with the shared test cache."""
    return settings_of(mini, cache_dir=cache_dir, annotator="tester")


@pytest.fixture(scope="session")
def mini_embedded(cache_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shared test cache, holding the small corpus's embeddings (the real model embeds them once
    per test session)."""
    from ragtui.core.workspace import Workspace

    copy = tmp_path_factory.mktemp("mini-embedded")
    shutil.copytree(MINI / "corpus", copy / "corpus")
    shutil.copytree(MINI / "golden", copy / "golden")
    Workspace.load(settings_of(copy, cache_dir=cache_dir)).prepare_vectors()
    return cache_dir


@pytest.fixture
def own_cache(tmp_path: Path, mini_embedded: Path) -> Path:
    """A cache folder of this test's own, cold but for the small corpus's embeddings (copied from the
    shared cache, so the embedding model is not loaded again)."""
    root = tmp_path / "cache"
    root.mkdir()
    shutil.copytree(mini_embedded / "embeddings", root / "embeddings")
    return root


@pytest.fixture(scope="session")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sentence-transformers CrossEncoder folder built here: a one-layer BERT of width 32 with seeded
    random weights and the bundled model's tokenizer files (nothing is downloaded)."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    from ragtui.core.data.tokenizer import default_model_path

    folder = tmp_path_factory.mktemp("tiny-cross-encoder")
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=512,
        num_labels=1,
        initializer_range=0.2,
    )
    BertForSequenceClassification(config).save_pretrained(folder)
    source = default_model_path()
    for name in ("tokenizer.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(source / name, folder / name)
    return folder
