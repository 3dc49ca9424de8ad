"""A team's own chunks (``--chunks``) and document-level evaluation of document qrels over chunks.

The BEIR data set here is made from the small corpus: each file is a document, each golden
question a query, and the qrels grade the document that holds the question's evidence. Chunked, the
qrels stay about documents, so the metrics rank documents (each at its best chunk's rank) unless
chunk level is asked for; pytrec_eval on the exported files must give the same numbers.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import pytrec_eval

from ragtui.cli import main
from ragtui.core.analysis.export import export_trec
from ragtui.core.data.chunks_file import load_chunks_file
from ragtui.core.data.golden import load_questions, normalize_ws
from ragtui.core.data.trec import read_trec_qrels, read_trec_run
from ragtui.core.errors import InputError
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace
from tests.conftest import MINI, MINI_CHUNK_SIZE


@pytest.fixture
def beir(tmp_path: Path) -> Path:
    """A BEIR folder made from the small corpus: documents, queries, and document-level qrels."""
    root = tmp_path / "beir"
    (root / "qrels").mkdir(parents=True)
    docs = {p.name: p.read_text() for p in sorted((MINI / "corpus").iterdir())}
    with open(root / "corpus.jsonl", "w") as out:
        for name, text in docs.items():
            out.write(json.dumps({"_id": name, "title": "", "text": text}) + "\n")
    questions = load_questions(MINI / "golden" / "questions.jsonl")
    lines = ["query-id\tcorpus-id\tscore"]
    with open(root / "queries.jsonl", "w") as out:
        for q in questions:
            out.write(json.dumps({"_id": q.id, "text": q.text}) + "\n")
            for name, text in docs.items():
                if any(normalize_ws(e) in normalize_ws(text) for e in q.evidence):
                    lines.append(f"{q.id}\t{name}\t1")
    (root / "qrels" / "test.tsv").write_text("\n".join(lines) + "\n")
    return root


@pytest.fixture
def beir_settings(beir: Path, cache_dir: Path, tmp_path: Path) -> Settings:
    return Settings(
        beir=beir,
        golden=tmp_path / "labels",
        chunk_size=MINI_CHUNK_SIZE,
        cache_dir=cache_dir,
        annotator="tester",
    )


def _maxp(ranking):
    seen: list[str] = []
    for cid, _ in ranking:
        doc = cid.split("#")[0]
        if doc not in seen:
            seen.append(doc)
    return seen


def test_document_qrels_over_chunks_are_evaluated_per_document(beir_settings):
    (beir_settings.golden).mkdir()
    ws = Workspace.open(beir_settings)
    assert ws.data.level == "document"
    assert len(ws.data.chunks) == 9
    ev = ws.evaluation
    assert ev is not None
    for name in ws.retrievers:
        for q in ws.questions:
            ranked = [d for d, _ in ev.rankings[name][q.id]]
            assert ranked == _maxp(ws.ranking(name, q.id))
            assert set(ev.gains(q.id)) <= {"ferry.md", "library.md", "market.txt"}


def test_the_exported_document_files_give_trec_evals_numbers(beir_settings, tmp_path):
    beir_settings.golden.mkdir()
    ws = Workspace.open(beir_settings)
    folder = tmp_path / "export"
    export_trec(ws, folder)
    qrels = read_trec_qrels(folder / "qrels.trec")
    assert all("#" not in doc for grades in qrels.values() for doc in grades)
    ev = ws.evaluation
    assert ev is not None
    k = ws.settings.k
    for name in ws.retrievers:
        ranked = read_trec_run(folder / f"{name}.trec")
        run = {q: {d: float(len(ds) - i) for i, d in enumerate(ds)} for q, ds in ranked.items()}
        reference = pytrec_eval.RelevanceEvaluator(
            qrels, {f"ndcg_cut_{k}", "recip_rank", f"recall_{k}"}
        ).evaluate(run)
        for qid in ev.evaluated:
            ours = ev.per_question[name][qid]
            assert ours.ndcg == pytest.approx(reference[qid][f"ndcg_cut_{k}"], abs=1e-12)
            assert ours.rr == pytest.approx(reference[qid]["recip_rank"], abs=1e-12)
            assert ours.recall == pytest.approx(reference[qid][f"recall_{k}"], abs=1e-12)


def test_eval_says_so_and_the_json_carries_the_level(beir_settings, capsys):
    beir_settings.golden.mkdir()
    argv = [
        "eval",
        "--beir",
        str(beir_settings.beir),
        "--golden",
        str(beir_settings.golden),
        "--chunk-size",
        str(MINI_CHUNK_SIZE),
        "--retrievers",
        "bm25",
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1] == (
        "document level: the qrels name documents, so each document ranks at its best chunk's rank "
        "(--level chunk for chunk level)"
    )
    assert main([*argv, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["level"] == "document"
    assert report["retrievers"]["bm25"]["per_question"]["m03"]["ranked"][0] == "library.md"
    assert main([*argv, "--json", "--level", "chunk"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["level"] == "chunk"
    assert report["retrievers"]["bm25"]["per_question"]["m03"]["ranked"][0] == "library.md#1"


def test_a_run_of_document_ids_keeps_matching(beir_settings, tmp_path):
    beir_settings.golden.mkdir()
    ws = Workspace.open(replace(beir_settings, retrievers=("bm25",)))
    run = tmp_path / "docs.trec"
    lines = []
    for q in ws.questions:
        for rank, doc in enumerate(_maxp(ws.ranking("bm25", q.id)), start=1):
            lines.append(f"{q.id} Q0 {doc} {rank} {100 - rank} docs")
    run.write_text("\n".join(lines) + "\n")
    with_run = Workspace.open(replace(beir_settings, retrievers=("bm25",), runs=(("docs", run),)))
    assert not [w for w in with_run.warnings if "not among the corpus chunks" in w]
    ev = with_run.evaluation
    assert ev is not None
    assert ev.summary("docs") == ev.summary("bm25")


def test_a_hand_grade_on_a_chunk_grades_its_document(beir_settings):
    beir_settings.golden.mkdir()
    ws = Workspace.open(replace(beir_settings, retrievers=("bm25",)))
    assert ws.grades.evaluation_grades("m04") == {"library.md": 1}
    ws.set_grade("m04", "ferry.md#2", 2)
    assert ws.grades.evaluation_grades("m04") == {"library.md": 1, "ferry.md": 2}
    ev = ws.evaluation
    assert ev is not None and ev.gains("m04") == {"library.md": 1, "ferry.md": 2}
    # The highest hand grade among a document's chunks is the document's.
    ws.set_grade("m04", "ferry.md#0", 0)
    assert ws.grades.evaluation_grades("m04")["ferry.md"] == 2


def test_document_level_needs_document_qrels(mini_settings):
    with pytest.raises(InputError) as caught:
        Workspace.load(replace(mini_settings, level="document"))
    assert "--level document needs document-level qrels (--beir)" in caught.value.message


# ---- the team's own chunks ---------------------------------------------------------------------


def _write_chunks(ws: Workspace, path: Path, prefix: str = "C") -> dict[str, str]:
    """The workspace's chunks written as a chunks file with new ids; returns old id -> new id."""
    renamed = {}
    with open(path, "w") as out:
        for i, c in enumerate(ws.data.chunks):
            renamed[c.id] = f"{prefix}{i:03d}"
            line = {
                "id": renamed[c.id],
                "text": c.text,
                "doc": c.doc,
                "heading": list(c.heading_path),
            }
            if i == 0:
                line["meta"] = {"source": "team chunker v2"}
            out.write(json.dumps(line) + "\n")
    return renamed


def test_own_chunks_are_used_as_they_are(mini_settings, tmp_path):
    ws = Workspace.open(mini_settings)
    path = tmp_path / "chunks.jsonl"
    renamed = _write_chunks(ws, path)
    own = Workspace.open(replace(mini_settings, corpus=None, chunks=path))
    assert [c.id for c in own.data.chunks] == list(renamed.values())
    assert own.passages.by_id["C000"].meta == {"source": "team chunker v2"}
    assert own.passages.by_id["C000"].heading_path == ws.data.chunks[0].heading_path
    for c in own.data.chunks:
        doc = next(d for d in own.data.corpus.documents if d.path == c.doc)
        assert doc.text[c.start : c.end] == c.text
    ev, theirs = ws.evaluation, own.evaluation
    assert ev is not None and theirs is not None
    for name in ws.retrievers:
        assert theirs.summary(name) == ev.summary(name)
        for q in ws.questions:
            assert [renamed[c] for c, _ in ws.ranking(name, q.id)] == [
                c for c, _ in own.ranking(name, q.id)
            ]
    # Evidence matching and labels use the team's ids.
    assert set(own.grades.effective_grades("m03")) == {
        renamed[c] for c in ws.grades.effective_grades("m03")
    }
    label = own.set_grade("m03", "C004", 1).label
    assert label.chunk == "C004"


def test_own_chunks_with_beir_qrels_are_evaluated_per_document(beir_settings, tmp_path):
    beir_settings.golden.mkdir()
    ws = Workspace.open(beir_settings)
    path = tmp_path / "chunks.jsonl"
    _write_chunks(ws, path)
    own = Workspace.open(replace(beir_settings, chunks=path))
    assert own.data.level == "document"
    ev, theirs = ws.evaluation, own.evaluation
    assert ev is not None and theirs is not None
    for name in ws.retrievers:
        assert theirs.summary(name) == ev.summary(name)


@pytest.mark.parametrize(
    ("lines", "where", "problem"),
    [
        (
            ['{"id": "a", "text": "x", "doc": "d"}', '{"text": "y", "doc": "d"}'],
            2,
            "missing field 'id'",
        ),
        (
            ['{"id": "a", "text": "x", "doc": "d"}', '{"id": "a", "text": "y", "doc": "d"}'],
            2,
            "duplicate chunk id 'a' (first on line 1)",
        ),
        (['{"id": "a", "text": "  ", "doc": "d"}'], 1, "chunk 'a' has an empty text"),
        (['{"id": "a", "text": 3, "doc": "d"}'], 1, "'text' must be a string"),
        (['{"id": "a b", "text": "x", "doc": "d"}'], 1, "holds white space"),
        (['{"id": "a", "text": "x", "doc": ""}'], 1, "'doc' must be a non-empty string"),
        (
            ['{"id": "a", "text": "x", "doc": "d", "heading": 4}'],
            1,
            "'heading' must be a string or a list",
        ),
        (['{"id": "a", "text": "x", "doc": "d", "meta": []}'], 1, "'meta' must be a JSON object"),
        (['{"id": "a", "text": "x", "doc": "d"', ""], 1, "malformed JSON"),
        ([""], None, "the chunks file holds no chunks"),
    ],
)
def test_a_bad_chunks_file_is_one_line_naming_file_and_line(tmp_path, lines, where, problem):
    path = tmp_path / "chunks.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as caught:
        load_chunks_file(path)
    prefix = f"{path}:{where}: " if where else f"{path}: "
    assert caught.value.message.startswith(prefix)
    assert problem in caught.value.message


def test_unknown_keys_are_a_warning_and_corpus_with_chunks_is_refused(
    mini_settings, tmp_path, capsys
):
    path = tmp_path / "chunks.jsonl"
    path.write_text('{"id": "a", "text": "ferry ticket", "doc": "d", "embedding": [1]}\n')
    assert load_chunks_file(path).corpus.warnings == [
        f"{path}:1: key 'embedding' is not a chunk field (id, text, doc, heading, meta); ignored"
    ]
    argv = ["eval", "--chunks", str(path), "--corpus", str(mini_settings.corpus)]
    assert main(argv) == 2
    assert "--chunks replaces --corpus" in capsys.readouterr().err


def test_a_chunks_sha1_is_kept_and_follows_its_text() -> None:
    """A chunk's SHA-1 is computed once (a label's status asks for it at every label), and the
    kept value neither makes two chunks of the same text unequal nor outlives a new text."""
    from ragtui.core.data.chunking import Chunk
    from ragtui.core.files import content_hash

    one = Chunk("d.md#0", "d.md", 0, 0, 5, "hello", (), 1)
    two = Chunk("d.md#0", "d.md", 0, 0, 5, "hello", (), 1)
    assert one.sha1 == content_hash("hello") and one.sha1 is one.sha1
    assert one == two and hash(one) == hash(two) and repr(one) == repr(two)
    edited = replace(one, text="world")
    assert edited.sha1 == content_hash("world") != one.sha1
