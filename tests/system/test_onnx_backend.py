"""The embedding model on ONNX Runtime (``--embedding-backend``; ``ragtui.core.retrieval.onnx_backend``).

The bundled model is exported for real (a process of its own, torch's exporter) into the tests'
cache folder, once for the module; its vectors are compared with torch's, the rankings and
metrics of both backends on the small set, the caches kept apart, a tampered or failed export, a
model that cannot run on ONNX Runtime, and the lean install without onnxruntime (a real
subprocess whose ``import onnxruntime`` fails: the CLI says so once and embeds with torch).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ragtui.core.data.tokenizer import default_model_path
from ragtui.core.errors import InputError
from ragtui.core.retrieval.embeddings import Embedder, EmbeddingCache
from ragtui.core.retrieval.onnx_backend import (
    MAX_BATCH,
    TOKEN_BUDGET,
    ExportInvalid,
    OnnxEncoder,
    export_folder,
    load_encoder,
    onnx_unsupported,
    onnxruntime_installed,
    resolve_backend,
)
from ragtui.core.workspace import Workspace
from tests.conftest import MINI, ROOT, mini_args, settings_of

if not onnxruntime_installed() and not os.environ.get("CI"):
    # A developer's install without the onnx extra; CI installs it (the test extra), and fails.
    pytest.skip("onnxruntime is not installed (pip install -e '.[test]')", allow_module_level=True)


def _tree(folder: Path) -> list[tuple[str, int, int]]:
    return sorted(
        (str(p.relative_to(folder)), p.stat().st_size, p.stat().st_mtime_ns)
        for p in folder.rglob("*")
    )


@pytest.fixture(scope="module")
def exported(cache_dir: Path) -> Path:
    """The bundled model's export in the tests' cache folder (made here if no test made it yet)."""
    model = default_model_path()
    before = _tree(model)
    load_encoder(None, cache_dir)
    # Written into the cache folder only: the installed model is not touched.
    assert _tree(model) == before
    return export_folder(None, cache_dir)


def _texts() -> list[str]:
    texts = []
    for path in sorted((MINI / "corpus").iterdir()):
        text = path.read_text(encoding="utf-8")
        texts += [text, text[:200], text.upper()[:300]]
    return [*texts, "x", "  blanks around  ", "Crème brûlée — 東京", "pump " * 400]


def test_the_export_is_in_the_cache_folder_and_gives_torchs_vectors(exported, cache_dir):
    assert exported.parent == cache_dir / "onnx"
    assert {p.name for p in exported.iterdir()} >= {"model.onnx", "tokenizer.json", "encoder.json"}
    config = json.loads((exported / "encoder.json").read_text())
    assert (config["max_seq_length"], config["dim"], config["pooling"]) == (256, 384, "mean")
    texts = _texts()
    onnx = Embedder(backend="onnx", cache_root=cache_dir)
    torch = Embedder(backend="torch")
    assert (onnx.backend, torch.backend) == ("onnx", "torch")
    a, b = onnx.encode(texts), torch.encode(texts)
    assert a.shape == b.shape == (len(texts), 384) and a.dtype == np.float32
    assert float(np.abs(a - b).max()) < 1e-5
    assert float((a * b).sum(axis=1).min()) > 0.99999
    assert onnx.max_seq_length == torch.max_seq_length == 256
    # Read again, not exported again.
    stamp = (exported / "model.onnx").stat().st_mtime_ns
    load_encoder(None, cache_dir)
    assert (exported / "model.onnx").stat().st_mtime_ns == stamp


def test_batches_are_sized_by_tokens_and_progress_follows_each(exported, cache_dir):
    encoder = OnnxEncoder(exported)
    short = [f"question {i} about PS-{i:02d}" for i in range(150)]
    long = [("dike breach " * 300) + str(i) for i in range(20)]
    calls: list[tuple[int, int]] = []
    rows = encoder.encode([*short, *long], lambda done, total: calls.append((done, total)))
    # The longest first: batches of TOKEN_BUDGET // 256 long texts, then MAX_BATCH short ones.
    per_long = TOKEN_BUDGET // 256
    assert [d for d, _ in calls][:4] == [0, per_long, 2 * per_long, 3 * per_long]
    assert calls[4][0] - calls[3][0] == MAX_BATCH
    assert calls[-1] == (170, 170) and all(t == 170 for _, t in calls)
    # Each text gets its own row, in the order given, as encoded alone.
    alone = np.vstack([encoder.encode([t]) for t in (short[3], long[5])])
    assert np.allclose(rows[[3, 155]], alone, atol=1e-5)
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    assert encoder.encode([]).shape == (0, 384)


def test_each_backend_has_its_cache_and_the_two_never_mix(exported, tmp_path):
    onnx = EmbeddingCache(None, tmp_path, "onnx")
    torch = EmbeddingCache(None, tmp_path, "torch")
    assert onnx.folder.name == torch.folder.name + "-onnx"
    onnx.embed(["what does PS-07 hold?"], Embedder(backend="onnx", cache_root=exported.parents[1]))
    assert torch.missing(["what does PS-07 hold?"]) == ["what does PS-07 hold?"]
    assert EmbeddingCache(None, tmp_path, "onnx").missing(["what does PS-07 hold?"]) == []
    # A torch cache put in the onnx folder is not read as onnx vectors: rebuilt, with a warning.
    torch.embed(["a torch vector"], Embedder(backend="torch"))
    shutil.rmtree(onnx.folder)
    shutil.copytree(torch.folder, onnx.folder)
    moved = EmbeddingCache(None, tmp_path, "onnx")
    assert moved.rows == {} and "manifest names another backend" in moved.warnings[0]


def test_both_backends_rank_and_score_the_small_set_alike(exported, mini, cache_dir):
    opened = {
        backend: Workspace.open(settings_of(mini, cache_dir=cache_dir, embedding_backend=backend))
        for backend in ("torch", "onnx")
    }
    torch, onnx = opened["torch"], opened["onnx"]
    assert not [w for w in [*onnx.warnings, *torch.warnings] if "torch" in w or "onnx" in w]
    for name in ("vector", "hybrid"):
        for q in torch.questions:
            assert [c for c, _ in onnx.ranking(name, q.id)] == [
                c for c, _ in torch.ranking(name, q.id)
            ]
        assert onnx.evaluation.summary(name) == torch.evaluation.summary(name)


def test_a_tampered_export_is_exported_again(exported, tmp_path):
    copy = export_folder(None, tmp_path)
    shutil.copytree(exported, copy)
    data = bytearray((copy / "model.onnx").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (copy / "model.onnx").write_bytes(bytes(data))
    with pytest.raises(ExportInvalid, match="does not match its recorded hash"):
        OnnxEncoder(copy)
    encoder = load_encoder(None, tmp_path)
    assert (copy / "model.onnx").read_bytes() != bytes(data)
    assert encoder.encode(["x"]).shape == (1, 384)


def test_a_failed_export_is_said_once_then_torch_with_its_reason(tmp_path):
    model = tmp_path / "model"
    shutil.copytree(default_model_path(), model)
    (model / "model.safetensors").write_bytes(b"not weights")  # reads as a model, cannot load
    assert resolve_backend(None, str(model), tmp_path).name == "onnx"
    with pytest.raises(InputError) as failed:
        load_encoder(str(model), tmp_path)
    assert "cannot export the embedding model to ONNX" in failed.value.message
    assert "later runs embed with torch" in failed.value.message
    assert "\n" not in failed.value.message
    chosen = resolve_backend(None, str(model), tmp_path)
    assert chosen.name == "torch"
    assert chosen.note is not None and "exporting" in chosen.note
    assert str(export_folder(str(model), tmp_path)) in chosen.note
    assert EmbeddingCache(str(model), tmp_path).backend == "torch"


def _model_folder(folder: Path, modules: list[str], pooling: dict[str, object]) -> Path:
    folder.mkdir()
    (folder / "modules.json").write_text(
        json.dumps(
            [
                {"idx": i, "name": str(i), "path": f"{i}_{kind.rsplit('.', 1)[-1]}", "type": kind}
                for i, kind in enumerate(modules)
            ]
        )
    )
    (folder / "0_Transformer").mkdir()
    shutil.copy(default_model_path() / "tokenizer.json", folder / "0_Transformer")
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    return folder


def test_a_model_onnx_cannot_run_is_embedded_with_torch(tmp_path):
    st = "sentence_transformers.models."
    dense = _model_folder(
        tmp_path / "dense",
        [f"{st}Transformer", f"{st}Pooling", f"{st}Dense"],
        {"pooling_mode_mean_tokens": True},
    )
    last = _model_folder(
        tmp_path / "last", [f"{st}Transformer", f"{st}Pooling"], {"pooling_mode": "lasttoken"}
    )
    old_format = _model_folder(
        tmp_path / "old", [f"{st}Transformer", f"{st}Pooling"], {"pooling_mode_cls_token": True}
    )
    assert "Transformer, Pooling, Dense" in (onnx_unsupported(str(dense)) or "")
    assert "lasttoken" in (onnx_unsupported(str(last)) or "")
    assert onnx_unsupported(str(old_format)) is None
    assert "modules.json" in (onnx_unsupported(str(tmp_path)) or "")
    # auto: torch without a word; onnx asked for: torch, and why.
    assert resolve_backend("auto", str(dense)).name == "torch"
    assert resolve_backend("auto", str(dense)).note is None
    asked = resolve_backend("onnx", str(dense))
    assert asked.name == "torch" and asked.note and asked.note.startswith("embedding with torch: ")


def _lean(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """ragtui's CLI in a process where ``import onnxruntime`` fails, as in the default install."""
    code = (
        "import sys\n"
        "sys.modules['onnxruntime'] = None\n"
        "from ragtui.cli import main\n"
        f"raise SystemExit(main({args!r}))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=600
    )


def test_without_onnxruntime_the_cli_embeds_with_torch_and_says_so_once(mini, tmp_path):
    env = {**os.environ, "RAGTUI_CACHE_DIR": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    base = ["eval", *mini_args(mini, "--retrievers", "vector", "--json"), "--no-project"]
    asked = _lean([*base, "--embedding-backend", "onnx"], env)
    assert asked.returncode == 0, asked.stderr
    notes = [line for line in asked.stderr.splitlines() if "onnx" in line]
    assert notes == [
        'ragtui: warning: embedding with torch: onnxruntime is not installed (pip install "ragtui[onnx]")'
    ], asked.stderr
    folders = sorted(p.name for p in (tmp_path / "cache" / "embeddings").iterdir())
    assert len(folders) == 1 and not folders[0].endswith("-onnx")
    # The default (auto) says nothing: the lean install has no onnxruntime, by design.
    default = _lean(base, env)
    assert default.returncode == 0 and "onnx" not in default.stderr, default.stderr
    assert json.loads(default.stdout) == json.loads(asked.stdout)


def test_the_cli_on_either_backend_gives_the_same_numbers(exported, mini, cli_cache_env, capsys):
    from ragtui.cli import main

    results = {}
    for backend in ("torch", "onnx"):
        argv = ["eval", *mini_args(mini, "--json"), "--no-project"]
        assert main([*argv, "--embedding-backend", backend]) == 0
        out = capsys.readouterr()
        assert "warning" not in out.err, out.err
        results[backend] = json.loads(out.out)
    assert results["torch"] == results["onnx"]
    with pytest.raises(SystemExit) as refused:
        main(["eval", *mini_args(mini), "--embedding-backend", "tensorflow"])
    assert refused.value.code == 2
    err = capsys.readouterr().err
    assert "--embedding-backend: 'tensorflow' is not one of auto, torch, onnx" in err
