"""Hostile and clumsy input, round two (issue 12): one regression test per item, each run on the real
code (the real model where vectors are needed). Escape sequences are ``tests/system/test_hostile_text.py``."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
import threading
from dataclasses import replace
from pathlib import Path

import numpy as np
import orjson
import pytest
import pytrec_eval

from ragtui.cli import main
from ragtui.core.data.corpus import load_folder
from ragtui.core.data.trec import read_trec_qrels, read_trec_run
from ragtui.core.errors import InputError
from ragtui.core.retrieval.embeddings import EmbeddingCache
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace
from tests.conftest import CRANFIELD, ROOT, mini_args, settings_of


def _args(mini: Path, *extra: str) -> list[str]:
    return mini_args(mini, "--no-project", *extra)


pytestmark = pytest.mark.usefixtures("cli_cache_env")


def one_error(capsys) -> str:
    """The one ``ragtui: error:`` line on stderr (warnings may come before it; no traceback)."""
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert lines and all(line.startswith("ragtui: ") for line in lines), err
    assert [line for line in lines if line.startswith("ragtui: error: ")] == lines[-1:], err
    return lines[-1]


def ragtui(*argv: str, timeout: float = 60, env: dict[str, str] | None = None, **kw):
    """``python -m ragtui ARGV`` in a child process (so a read that blocks fails the test, not hangs it)."""
    return subprocess.run(
        [sys.executable, "-m", "ragtui", "--no-project", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        **kw,
    )


# ---- 2. symbolic links: followed inside the corpus folder, refused (with a warning) outside -------


def test_symlinks_are_followed_inside_the_corpus_and_refused_outside(tmp_path: Path) -> None:
    corpus, outside = tmp_path / "corpus", tmp_path / "outside"
    (corpus / "sub").mkdir(parents=True)
    outside.mkdir()
    (corpus / "a.md").write_text("alpha document")
    (corpus / "sub" / "b.md").write_text("beta document")
    (outside / "secret.md").write_text("root:x:0:0 the secret")
    (corpus / "passwd.md").symlink_to(outside / "secret.md")  # ln -s /etc/passwd corpus/passwd.md
    (corpus / "outdir").symlink_to(outside, target_is_directory=True)
    (corpus / "again.md").symlink_to(corpus / "a.md")  # inside: followed
    (corpus / "linked").symlink_to(corpus / "sub", target_is_directory=True)  # inside: followed
    (corpus / "sub" / "loop").symlink_to(corpus, target_is_directory=True)  # a loop: skipped
    (corpus / "broken.md").symlink_to(tmp_path / "nowhere.md")

    loaded = load_folder(corpus)
    assert [d.path for d in loaded.documents] == ["a.md", "again.md", "linked/b.md", "sub/b.md"]
    assert not any("secret" in d.text for d in loaded.documents)
    said = "\n".join(loaded.warnings)
    assert (
        f"{corpus / 'passwd.md'}: symbolic link to {outside / 'secret.md'}, outside the corpus folder, skipped"
        in said
    )
    assert f"{corpus / 'outdir'}: symbolic link to {outside}, outside the corpus folder" in said
    assert (
        f"{corpus / 'sub' / 'loop'}: symbolic link to a folder it is in (a loop), skipped" in said
    )
    assert f"{corpus / 'broken.md'}: broken symbolic link, skipped" in said


# ---- 6. the embedding cache under concurrent writers ---------------------------------------------


class FakeEmbedder:
    """Deterministic 8-dimensional unit vectors from the text's hash (the cache is what is tested)."""

    def encode(self, texts, progress=None):
        rows = np.vstack(
            [np.frombuffer(hashlib.sha256(t.encode()).digest()[:8], np.uint8) for t in texts]
        ).astype(np.float32)
        rows += 1
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _expected(texts: list[str]) -> np.ndarray:
    return FakeEmbedder().encode(texts)


def test_threads_embedding_at_once_lose_nothing_and_never_fail(tmp_path: Path) -> None:
    """4 threads with a cache object each and 4 sharing one, every text embedded one call at a time."""
    shared = EmbeddingCache("fake", tmp_path)
    errors: list[BaseException] = []
    seen_warnings: list[str] = []

    def work(worker: int, own: bool) -> None:
        try:
            for i in range(25):
                cache = EmbeddingCache("fake", tmp_path) if own else shared
                seen_warnings.extend(cache.warnings)
                text = f"{'own' if own else 'shared'} {worker} text {i}"
                assert np.array_equal(cache.embed([text], FakeEmbedder()), _expected([text]))
        except BaseException as exc:  # reported below, after every thread ended
            errors.append(exc)

    threads = [
        threading.Thread(target=work, args=(w, own)) for w in range(4) for own in (True, False)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert seen_warnings == [], "a reader saw the array of one write with the manifest of another"
    texts = [
        f"{kind} {w} text {i}" for kind in ("own", "shared") for w in range(4) for i in range(25)
    ]
    final = EmbeddingCache("fake", tmp_path)
    assert not final.warnings and len(final.rows) == 200
    assert np.array_equal(final.get(texts), _expected(texts))
    assert sorted(p.name for p in final.folder.iterdir()) == [
        ".lock",
        "manifest.json",
        "vectors.npy",
    ]


_WRITER = textwrap.dedent(
    """
    import hashlib, sys
    import numpy as np
    from ragtui.core.retrieval.embeddings import EmbeddingCache

    class Fake:
        def encode(self, texts, progress=None):
            rows = np.vstack([np.frombuffer(hashlib.sha256(t.encode()).digest()[:8], np.uint8)
                              for t in texts]).astype(np.float32) + 1
            return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    root, name = sys.argv[1], sys.argv[2]
    for i in range(30):
        cache = EmbeddingCache("fake", __import__("pathlib").Path(root))
        assert not cache.warnings, cache.warnings
        cache.embed([f"{name} text {i}"], Fake())
    """
)


def test_processes_adding_texts_at_once_keep_every_row(tmp_path: Path) -> None:
    """3 processes adding 30 texts each, one write per text (3 such processes once left 10 of 90 rows)."""
    script = tmp_path / "writer.py"
    script.write_text(_WRITER)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    writers = [
        subprocess.Popen(
            [sys.executable, str(script), str(tmp_path), f"p{n}"], env=env, stderr=subprocess.PIPE
        )
        for n in range(3)
    ]
    for writer in writers:
        _, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err.decode()
    texts = [f"p{n} text {i}" for n in range(3) for i in range(30)]
    final = EmbeddingCache("fake", tmp_path)
    assert not final.warnings and len(final.rows) == 90
    assert np.array_equal(final.get(texts), _expected(texts))


# ---- 7. model errors: one line naming the input, in the CLI and in the app ------------------------


def _broken_model(tmp_path: Path) -> Path:
    """A copy of the bundled model's tokenizer.json, cut in the middle."""
    from ragtui.core.data.tokenizer import default_model_path

    folder = tmp_path / "broken-model"
    folder.mkdir()
    raw = (default_model_path() / "tokenizer.json").read_bytes()
    (folder / "tokenizer.json").write_bytes(raw[: len(raw) // 2])
    return folder


def test_model_errors_are_one_line_naming_the_model(mini: Path, tmp_path: Path, capsys) -> None:
    from ragtui.core.data.tokenizer import token_counter

    token_counter.cache_clear()
    broken = _broken_model(tmp_path)
    cases = {
        "/nonexistent": "/nonexistent: model not found: no such folder, and not a Hugging Face model name",
        "foo bar/../baz": "foo bar/../baz: model not found: no such folder, and not a Hugging Face model name",
        "someone/not-cached": "someone/not-cached: model not found: no such folder, and not in the local Hugging Face cache (offline)",
        str(broken): f"{broken / 'tokenizer.json'}: broken tokenizer: EOF while parsing",
        str(mini / "corpus" / "ferry.md"): "ferry.md: --model names a file",
    }
    for model, message in cases.items():
        assert main(["eval", *_args(mini, "--model", model)]) == 2, model
        assert message in one_error(capsys), model


def test_the_apps_cannot_start_screen_shows_the_same_line(mini_settings: Settings, tmp_path: Path):
    from tests.app.test_tui import LoadErrorScreen, make_app, run_async

    settings = replace(mini_settings, model=str(_broken_model(tmp_path)))

    @run_async
    async def check() -> None:
        app = make_app(settings)
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert isinstance(app.screen, LoadErrorScreen)
            assert app.screen.message.startswith(
                f"{tmp_path / 'broken-model' / 'tokenizer.json'}: broken tokenizer: "
            )
            assert "\n" not in app.screen.message and "Exception" not in app.screen.message

    check()


# ---- 8. file names and arguments that are not UTF-8 ------------------------------------------------


def test_a_file_name_that_is_not_utf8_gets_chunk_ids_every_writer_can_write(
    mini: Path, tmp_path: Path, capsys
):
    (mini / "corpus" / os.fsdecode(b"bad\xff.md")).write_text(
        "The ferry ticket office is by the pier.\n"
    )
    args = _args(mini, "--retrievers", "bm25")
    assert main(["eval", "--json", *args]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    ranked = {c for q in report["retrievers"]["bm25"]["per_question"].values() for c in q["ranked"]}
    assert "bad\\xff.md#0" in ranked
    assert "bad\\xff.md: the file name is not UTF-8" in captured.err
    assert main(["export", str(tmp_path / "out"), *args]) == 0
    run = read_trec_run(tmp_path / "out" / "bm25.trec")  # UTF-8, as trec_eval reads it
    assert any("bad%5Cxff.md#0" in docs for docs in run.values())
    assert main(["eval", "--save", "r", *args]) == 0
    assert "bad\\\\xff.md#0" in (mini / "golden" / "runs" / "r.json").read_text(encoding="utf-8")
    capsys.readouterr()
    # Grading that chunk writes a journal line (Label.to_json once raised on the file name).
    ws = Workspace.load(settings_of(mini, retrievers=("bm25",)))
    ws.set_grade("m01", "bad\\xff.md#0", 1)
    assert (
        json.loads((mini / "golden" / "labels.jsonl").read_text().splitlines()[-1])["chunk"]
        == "bad\\xff.md#0"
    )


def test_arguments_that_are_not_utf8_are_refused_with_one_line(mini: Path, capsys):
    questions = (mini / "golden" / "questions.jsonl").read_bytes()
    question = os.fsdecode(b"caf\xe9?")
    assert (
        main(["add-question", "--question", question, "--evidence", "late book", *_args(mini)]) == 2
    )
    assert one_error(capsys) == "ragtui: error: --question: not UTF-8 text (byte 0xe9)"
    assert (mini / "golden" / "questions.jsonl").read_bytes() == questions
    assert (
        main(["eval", "--save", os.fsdecode(b"r\xe9"), *_args(mini, "--retrievers", "bm25")]) == 2
    )
    assert one_error(capsys) == "ragtui: error: --save: not UTF-8 text (byte 0xe9)"
    with pytest.raises(SystemExit):
        main(["eval", *_args(mini, "--annotator", os.fsdecode(b"a\xe9"))])
    assert "--annotator: not UTF-8 text (byte 0xe9)" in capsys.readouterr().err
    # The core refuses it too (the app's add-question dialog goes there).
    ws = Workspace.load(settings_of(mini, retrievers=("bm25",)))
    with pytest.raises(InputError, match="the question is not UTF-8 text"):
        ws.add_question(question, "late book")


# ---- 9. a FIFO where a file is read: refused at once, never waited on ------------------------------


def test_a_fifo_where_a_file_is_read_is_refused_not_waited_on(
    mini: Path, tmp_path: Path, cache_dir
):
    """Each command in a child process with a time limit: a blocked read would hang it (it did)."""
    data = mini_args(mini, "--retrievers", "bm25")
    questions = mini / "golden" / "questions.jsonl"
    shutil.copy(questions, tmp_path / "questions.jsonl")
    questions.unlink()
    os.mkfifo(questions)
    done = ragtui("eval", *data, timeout=30)
    assert (
        done.returncode == 2
        and done.stderr == f"ragtui: error: {questions}: a FIFO, not a regular file\n"
    )
    questions.unlink()
    shutil.copy(tmp_path / "questions.jsonl", questions)

    os.mkfifo(mini / "corpus" / "pipe.md")  # in the corpus folder: skipped, with a warning
    done = ragtui("eval", *data, timeout=30)
    assert (
        done.returncode == 0
        and f"{mini / 'corpus' / 'pipe.md'}: a FIFO, not a regular file, skipped" in done.stderr
    )

    run = tmp_path / "run.trec"
    os.mkfifo(run)
    done = ragtui("eval", *data, "--run", f"x={run}", timeout=30)
    assert (
        done.returncode == 2
        and done.stderr == f"ragtui: error: {run}: a FIFO, not a regular file\n"
    )

    runs = mini / "golden" / "runs"
    runs.mkdir()
    os.mkfifo(runs / "a.json")
    done = ragtui("diff", "a", "a", *data, timeout=30)
    assert (
        done.returncode == 2
        and done.stderr == f"ragtui: error: {runs / 'a.json'}: a FIFO, not a regular file\n"
    )

    model = tmp_path / "model"
    model.mkdir()
    os.mkfifo(model / "tokenizer.json")
    done = ragtui("eval", *data, "--model", str(model), timeout=30)
    assert (
        done.returncode == 2
        and done.stderr
        == f"ragtui: error: {model / 'tokenizer.json'}: a FIFO, not a regular file\n"
    )

    qrels = tmp_path / "beir"
    shutil.copytree(CRANFIELD, qrels, ignore=shutil.ignore_patterns("*.trec"))
    (qrels / "qrels" / "test.tsv").unlink()
    os.mkfifo(qrels / "qrels" / "test.tsv")
    done = ragtui("eval", "--beir", str(qrels), "--retrievers", "bm25", timeout=30)
    assert (
        done.returncode == 2
        and done.stderr
        == f"ragtui: error: {qrels / 'qrels' / 'test.tsv'}: a FIFO, not a regular file\n"
    )


def test_a_fifo_as_the_cache_manifest_is_rebuilt_not_waited_on(tmp_path: Path) -> None:
    cache = EmbeddingCache("fake", tmp_path)
    cache.embed(["one", "two"], FakeEmbedder())
    (cache.folder / "manifest.json").unlink()
    os.mkfifo(cache.folder / "manifest.json")
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            f"from ragtui.core.retrieval.embeddings import EmbeddingCache; from pathlib import Path; print(EmbeddingCache('fake', Path({str(tmp_path)!r})).warnings)",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert (
        "manifest.json: a FIFO, not a regular file" in done.stdout
        and "ignored and rebuilt" in done.stdout
    )
    again = EmbeddingCache("fake", tmp_path)
    again.embed(["one"], FakeEmbedder())
    assert stat.S_ISREG(os.stat(again.folder / "manifest.json").st_mode)
    assert not EmbeddingCache("fake", tmp_path).warnings


# ---- 10. a forged .npy header: refused before anything is allocated, then rebuilt ------------------


def test_a_forged_cache_header_is_a_warning_and_the_cache_is_rebuilt(mini: Path, tmp_path: Path):
    cache_root = tmp_path / "cache"
    env = {"RAGTUI_CACHE_DIR": str(cache_root), "HF_HUB_OFFLINE": "1"}
    data = mini_args(mini)
    first = ragtui("eval", "--json", *data, env=env, timeout=300)
    assert first.returncode == 0, first.stderr
    (folder,) = (cache_root / "embeddings").iterdir()
    raw = (folder / "vectors.npy").read_bytes()
    rows = len(orjson.loads((folder / "manifest.json").read_bytes())["hashes"])
    header_end = raw.index(b"\n") + 1
    forged_shape = b"(100000000000, 384)"
    shape = f"({rows}, 384)".encode()
    pad = len(forged_shape) - len(shape)
    assert raw[header_end - 1 - pad : header_end - 1] == b" " * pad, "the header's padding has room"
    forged = raw[: header_end - 1 - pad].replace(shape, forged_shape) + b"\n" + raw[header_end:]
    assert len(forged) == len(raw)
    (folder / "vectors.npy").write_bytes(forged)
    manifest = orjson.loads((folder / "manifest.json").read_bytes())
    manifest["npy_sha256"] = hashlib.sha256(forged).hexdigest()  # a careful forger
    (folder / "manifest.json").write_bytes(orjson.dumps(manifest))
    second = ragtui("eval", "--json", *data, env=env, timeout=300)
    assert second.returncode == 0, second.stderr
    assert (
        "embedding cache ignored and rebuilt (shape (100000000000, 384) does not match the manifest"
        in second.stderr
    )
    assert json.loads(second.stdout)["retrievers"] == json.loads(first.stdout)["retrievers"]
    third = ragtui("eval", *data, env=env, timeout=300)
    assert third.returncode == 0 and "embedding cache" not in third.stderr, "it was rebuilt"


# ---- 11. saved runs: every field used is checked ---------------------------------------------------


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (
            lambda r: r["manifest"].update(k="three"),
            "saved run: manifest 'k' must be a whole number, got 'three'",
        ),
        (lambda r: r["manifest"].update(k=0), "saved run: manifest 'k' must be at least 1, got 0"),
        (
            lambda r: r["manifest"].update(threshold=1.5),
            "manifest 'threshold' must be a whole number",
        ),
        (
            lambda r: r["retrievers"]["bm25"]["per_question"]["m01"].update(recall="lots"),
            "retrievers.bm25.per_question.m01.recall must be a number from 0 to 1, got 'lots'",
        ),
        (
            lambda r: r["retrievers"]["bm25"]["per_question"]["m01"].update(ndcg=7),
            "retrievers.bm25.per_question.m01.ndcg must be a number from 0 to 1, got 7",
        ),
        (
            lambda r: r["retrievers"]["bm25"]["per_question"]["m01"].update(first_relevant_rank=-2),
            "first_relevant_rank must be at least 1, got -2",
        ),
        (
            lambda r: r["retrievers"]["bm25"]["per_question"]["m01"].update(ranked="x"),
            "ranked must be a list of strings",
        ),
        (
            lambda r: r["questions"]["m01"]["grades"].update({"ferry.md#1": "2"}),
            "questions.m01.grades.ferry.md#1 must be a whole number",
        ),
        (
            lambda r: r["retrievers"]["bm25"].update(mrr=None),
            "retrievers.bm25.mrr must be a number from 0 to 1, got None",
        ),
        (lambda r: r.update(questions=[]), "'questions' must be an object, got list"),
    ],
)
def test_a_garbled_saved_run_is_one_line_naming_the_field(mini: Path, capsys, edit, problem):
    args = _args(mini, "--retrievers", "bm25")
    assert main(["eval", "--save", "a", *args]) == 0
    path = mini / "golden" / "runs" / "a.json"
    run = json.loads(path.read_text())
    edit(run)
    (mini / "golden" / "runs" / "b.json").write_text(json.dumps(run))
    capsys.readouterr()
    assert main(["diff", "a", "b", *args]) == 2
    line = one_error(capsys)
    assert (
        line.startswith(f"ragtui: error: {mini / 'golden' / 'runs' / 'b.json'}: ")
        and problem in line
    )
    assert main(["diff", "a", "a", *args]) == 0, "an untouched run still reads"


# ---- 12. a read-only golden folder (mode bits, so root too) ---------------------------------------


def test_a_read_only_golden_folder_is_never_written(mini: Path, tmp_path: Path, capsys):
    golden = mini / "golden"
    before = {p.name: p.read_bytes() for p in golden.iterdir()}
    os.chmod(golden, 0o555)
    try:
        question = [
            "add-question",
            "--question",
            "What does a late book cost?",
            "--evidence",
            "late book",
        ]
        assert main([*question, *_args(mini, "--retrievers", "bm25")]) == 2
        assert (
            one_error(capsys)
            == f"ragtui: error: {golden}: the golden-set folder is read-only; nothing was written"
        )
        assert main(["eval", "--save", "x", *_args(mini, "--retrievers", "bm25")]) == 2
        assert (
            one_error(capsys)
            == f"ragtui: error: {golden}: the saved runs' folder is read-only; nothing was written"
        )
        assert {p.name: p.read_bytes() for p in golden.iterdir()} == before, (
            "nothing created or changed"
        )
        export = tmp_path / "export"
        export.mkdir(mode=0o555)
        assert main(["export", str(export), *_args(mini, "--retrievers", "bm25")]) == 2
        assert (
            one_error(capsys)
            == f"ragtui: error: {export}: the export folder is read-only; nothing was written"
        )
        assert list(export.iterdir()) == []
        assert (
            main(["report", "--output", str(export / "r.md"), *_args(mini, "--retrievers", "bm25")])
            == 2
        )
        assert (
            one_error(capsys)
            == f"ragtui: error: {export}: the report's folder is read-only; nothing was written"
        )
        assert list(export.iterdir()) == []
    finally:
        os.chmod(golden, 0o755)


# ---- 13 and 14. qrels of documents the corpus lacks; means at --threshold above 1 -----------------


def _beir(tmp_path: Path, qrels: str) -> Path:
    root = tmp_path / "beir"
    (root / "qrels").mkdir(parents=True)
    docs = {
        "d1": "the ferry ticket costs five euro",
        "d2": "library fines are small",
        "d3": "market stalls open at nine",
    }
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in docs.items())
    )
    queries = {"q1": "ferry ticket", "q2": "library fines"}
    (root / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in queries.items())
    )
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels)
    return root


def _pytrec_means(qrels: dict, folder: Path, name: str, k: int, level: int) -> dict[str, float]:
    ranked = read_trec_run(folder / f"{name}.trec")
    run = {q: {d: float(len(ds) - i) for i, d in enumerate(ds)} for q, ds in ranked.items()}
    measures = {f"recall_{k}", f"P_{k}", "recip_rank", f"ndcg_cut_{k}"}
    per_query = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=level).evaluate(run)
    assert set(per_query) == set(ranked), "every judged question has a run"
    return {
        "recall": np.mean([v[f"recall_{k}"] for v in per_query.values()]),
        "precision": np.mean([v[f"P_{k}"] for v in per_query.values()]),
        "mrr": np.mean([v["recip_rank"] for v in per_query.values()]),
        "ndcg": np.mean([v[f"ndcg_cut_{k}"] for v in per_query.values()]),
    }


def test_qrels_naming_documents_the_corpus_lacks_stay_relevant(tmp_path: Path, capsys):
    """The issue's example: q1 d1 2, q1 d99 2, q2 d2 1, no d99; trec_eval's numbers on the original qrels."""
    beir = _beir(tmp_path, "q1\td1\t2\nq1\td99\t2\nq2\td2\t1\n")
    assert (
        main(["eval", "--json", "--no-project", "--beir", str(beir), "--retrievers", "bm25"]) == 0
    )
    captured = capsys.readouterr()
    assert (
        "the qrels judge 1 document the corpus lacks (e.g. d99; 1 judgement, 1 relevant)"
        in captured.err
    )
    ours = json.loads(captured.out)["retrievers"]["bm25"]
    assert (
        main(
            [
                "export",
                str(tmp_path / "out"),
                "--no-project",
                "--beir",
                str(beir),
                "--retrievers",
                "bm25",
            ]
        )
        == 0
    )
    original = {"q1": {"d1": 2, "d99": 2}, "q2": {"d2": 1}}
    reference = _pytrec_means(original, tmp_path / "out", "bm25", 3, 1)
    assert ours["recall"] == pytest.approx(reference["recall"]) == 0.75
    for key in ("precision", "mrr", "ndcg"):
        assert ours[key] == pytest.approx(reference[key], abs=1e-12), key
    assert read_trec_qrels(tmp_path / "out" / "qrels.trec") == original, "the export keeps d99"


@pytest.mark.parametrize("chunk_size", [None, 64], ids=["chunk level", "document level"])
def test_means_at_threshold_3_follow_trec_eval_on_cranfield(tmp_path: Path, chunk_size: int | None):
    """Cranfield has 42 queries judged only below grade 3: trec_eval -l 3 averages them in with zeros."""
    settings = Settings(
        beir=CRANFIELD, chunk_size=chunk_size, retrievers=("bm25",), k=10, depth=100, threshold=3
    )
    ws = Workspace.load(settings)
    assert ws.data.level == ("document" if chunk_size else "chunk")
    from ragtui.core.analysis.export import export_trec

    export_trec(ws, tmp_path)
    qrels = read_trec_qrels(tmp_path / "qrels.trec")
    assert len(qrels) == 225 and sum(1 for g in qrels.values() if max(g.values()) < 3) == 42
    reference = _pytrec_means(qrels, tmp_path, "bm25", 10, 3)
    summary = ws.evaluation.summary("bm25")
    assert summary.questions == 225 and ws.evaluation.skipped == []
    assert summary.recall == pytest.approx(reference["recall"], abs=1e-12)
    assert summary.precision == pytest.approx(reference["precision"], abs=1e-12)
    assert summary.mrr == pytest.approx(reference["mrr"], abs=1e-12)
    assert summary.ndcg == pytest.approx(reference["ndcg"], abs=1e-12)


def test_a_question_with_no_judgement_is_still_skipped(mini_settings: Settings) -> None:
    ws = Workspace.load(replace(mini_settings, retrievers=("bm25",)))
    assert ws.evaluation.skipped == ["m07"]  # its evidence is in no chunk, and nobody graded it


# ---- 15. the smaller ones -----------------------------------------------------------------------


def test_k_above_depth_is_a_warning(mini: Path, capsys):
    assert main(["eval", *_args(mini, "--k", "10", "--depth", "3", "--retrievers", "bm25")]) == 0
    assert (
        "ragtui: warning: --k 10 is above --depth 3: no retriever returns more than 3 chunks, so recall@10 is recall@3"
        in capsys.readouterr().err
    )


def test_export_to_a_full_disk_names_the_file_and_keeps_the_old_one(mini: Path, tmp_path: Path):
    """A write error half-way (a file-size limit stands in for a full disk) leaves the old file whole."""
    import resource

    out = tmp_path / "out"
    data = mini_args(mini, "--retrievers", "bm25", "--depth", "100")
    assert ragtui("export", str(out), *data).returncode == 0
    (out / "bm25.trec").write_text("old run\n")
    limit = (out / "qrels.trec").stat().st_size + 8

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    done = ragtui("export", str(out), *data, preexec_fn=small_files)
    assert done.returncode == 2
    assert (
        done.stderr
        == f"ragtui: error: {out / 'bm25.trec'}: cannot write the file (File too large)\n"
    )
    assert (out / "bm25.trec").read_text() == "old run\n"
    assert sorted(p.name for p in out.iterdir()) == ["bm25.trec", "qrels.trec"], (
        "no temporary file left"
    )


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32"])
def test_a_utf16_document_with_a_bom_is_read(tmp_path: Path, encoding: str) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    text = "# Fähre\n\nDie Rückfahrkarte kostet 5,80 EUR.\n"
    raw = text.encode(encoding)
    if encoding == "utf-16-be":
        raw = b"\xfe\xff" + raw
    (corpus / "wide.md").write_bytes(raw)
    loaded = load_folder(corpus)
    assert [d.text for d in loaded.documents] == [text] and loaded.warnings == []


def test_a_usage_error_is_one_line(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["eval", "--k", "three"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        "ragtui: error: argument --k: 'three' is not a whole number (ragtui eval --help lists the options)"
    ]


def test_questions_bm25_cannot_answer_get_a_note(mini: Path, capsys):
    rows = (mini / "golden" / "questions.jsonl").read_text()
    extra = {"id": "m99", "question": "zzq qqx?", "evidence": "late book"}
    (mini / "golden" / "questions.jsonl").write_text(rows + json.dumps(extra) + "\n")
    assert main(["eval", *_args(mini, "--retrievers", "bm25")]) == 0
    assert (
        "ragtui: warning: bm25: 1 question shares no word with any chunk (e.g. m99): no results; it counts as an empty run"
        in capsys.readouterr().err
    )


def test_read_regular_refuses_devices_and_folders(tmp_path: Path) -> None:
    from ragtui.core.files import NotRegularFileError, read_regular

    with pytest.raises(NotRegularFileError, match="a character device, not a regular file"):
        read_regular("/dev/zero")  # would never end
    with pytest.raises(NotRegularFileError, match="a folder, not a regular file"):
        read_regular(tmp_path)
    (tmp_path / "f").write_bytes(b"data")
    assert read_regular(tmp_path / "f") == b"data"
