"""Chunking diagnostics on a corpus built to trip each of them, the model's limit, and stale labels across chunk sizes."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from ragtui.cli import main
from ragtui.cli.output import render_report
from ragtui.core.analysis.check import check_workspace
from ragtui.core.analysis.diagnostics import diagnose, histogram_bars, model_limit, token_histogram
from ragtui.core.analysis.reports import diagnostics_report
from ragtui.core.data.tokenizer import default_model_path, token_counter
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace

HARBOUR = """# Harbour

The harbour office keeps the keys of every pier and the logbook of each boat that moors there overnight during the summer season. The secret code of the gate is ZX-41.

Opening hours are nine to five.

Boats longer than twelve metres moor at the outer pier. Smaller boats use the inner basin, next to the fuel station.
"""
MUSEUM = """# Museum

The museum shows old maps of the polder. Opening hours are nine to five.
"""
QUESTIONS = [
    {
        "id": "d1",
        "question": "What is the gate code?",
        "evidence": "The secret code of the gate is ZX-41.",
    },
    {"id": "d2", "question": "When is it open?", "evidence": "Opening hours are nine to five."},
    {"id": "d3", "question": "Gate and hours?", "evidence": "the gate is ZX-41. Opening hours are"},
    {"id": "d4", "question": "What does the museum show?", "evidence": "old maps of the polder"},
]


def _model(folder: Path, **config: dict) -> Path:
    """A model folder with the bundled tokenizer and the given JSON files (no weights: nothing is embedded)."""
    folder.mkdir()
    shutil.copy(default_model_path() / "tokenizer.json", folder / "tokenizer.json")
    for name, obj in config.items():
        (folder / f"{name}.json").write_text(json.dumps(obj))
    return folder


@pytest.fixture
def tripwire(tmp_path: Path) -> Settings:
    """Two documents, four questions, and a model that reads 32 tokens (30 without [CLS] and [SEP]), chunked at 40."""
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "harbour.md").write_text(HARBOUR)
    (tmp_path / "corpus" / "museum.md").write_text(MUSEUM)
    (tmp_path / "golden").mkdir()
    (tmp_path / "golden" / "questions.jsonl").write_text(
        "".join(json.dumps(q) + "\n" for q in QUESTIONS)
    )
    model = _model(
        tmp_path / "model", sentence_bert_config={"max_seq_length": 32, "do_lower_case": False}
    )
    return Settings(
        corpus=tmp_path / "corpus",
        golden=tmp_path / "golden",
        chunk_size=40,
        model=str(model),
        retrievers=("bm25",),
    )


def test_each_diagnostic_trips(tripwire):
    ws = Workspace.load(tripwire)
    # harbour.md#0 ends with "... The secret code of the gate is ZX-41." (39 tokens); #1 starts with the opening hours.
    assert [(c.id, c.token_count) for c in ws.data.chunks] == [
        ("harbour.md#0", 39),
        ("harbour.md#1", 31),
        ("museum.md#0", 19),
    ]
    diag = diagnose(ws)
    assert diag.limit is not None and (
        diag.limit.max_seq_length,
        diag.limit.special_tokens,
        diag.limit.content_tokens,
    ) == (32, 2, 30)
    # Chunks over 30 content tokens: their tail is cut off; the visible part is exactly 30 tokens.
    assert [(t.chunk, t.hidden_tokens) for t in diag.truncated] == [
        ("harbour.md#0", 9),
        ("harbour.md#1", 1),
    ]
    counter = token_counter(tripwire.model)
    first = ws.passages.by_id["harbour.md#0"]
    assert (
        counter.count(ws.data.corpus.documents[0].text[first.start : diag.truncated[0].visible_end])
        == 30
    )
    # d1's evidence runs past the cut.
    assert [(h.question, h.chunk, h.wholly_hidden) for h in diag.hidden_evidence] == [
        ("d1", "harbour.md#0", False)
    ]
    # d2's evidence is in both documents: allowed, reported.
    assert [(m.question, m.chunks) for m in diag.multi_match] == [
        ("d2", ("harbour.md#1", "museum.md#0"))
    ]
    # d3's evidence spans the boundary of harbour.md#0 and #1.
    assert [(s.question, s.pairs) for s in diag.straddling] == [
        ("d3", (("harbour.md#0", "harbour.md#1"),))
    ]
    # Histogram: bins of 4 tokens (39 // 4 + 1 = 10 bins), one chunk each at 16-19, 28-31 and 36-39.
    assert [(b.low, b.high, b.count, b.over) for b in diag.histogram if b.count] == [
        (16, 19, 1, 0),
        (28, 31, 1, 1),
        (36, 39, 1, 1),
    ]
    assert sum(b.count for b in diag.histogram) == len(ws.data.chunks) and len(diag.histogram) == 10


def test_check_exits_1_only_for_problems_and_prints_notes(tripwire, capsys):
    args = [
        "check",
        "--corpus",
        str(tripwire.corpus),
        "--golden",
        str(tripwire.golden),
        "--chunk-size",
        "40",
        "--model",
        tripwire.model,
        "--retrievers",
        "bm25",
    ]
    assert main(args) == 1
    out = capsys.readouterr().out
    rows = [" ".join(line.split()) for line in out.splitlines()]
    problems = [line for line in out.splitlines() if line.startswith(str(tripwire.golden))]
    assert (
        len(problems) == 1
        and "d3: evidence 'the gate is ZX-41. Opening hours are' straddles a chunk boundary: harbour.md#0 and harbour.md#1"
        in problems[0]
    )
    # The notes: evidence in several chunks, evidence in a cut-off tail, chunks the model cuts.
    questions = str(Path(tripwire.golden) / "questions.jsonl")
    assert "evidence in several chunks (1): all of them relevant" in out
    assert f"{questions}:2 d2 'Opening hours are nine to five.' harbour.md#1, museum.md#0" in rows
    # Windows are on by default: a window reads the tail's evidence whole.
    assert "evidence in a cut-off tail (1): a window reads it whole" in out
    assert (
        f"{questions}:1 d1 harbour.md#0 partly whole 'The secret code of the gate is ZX-41.'"
        in rows
    )
    assert (
        "chunks longer than the 30 tokens the model reads (2): read as overlapping windows (windows "
        "of 30 tokens, stride 15, best window); without them the tail is invisible to the vector "
        "retriever" in out
    )
    assert (
        "windows: windows of 30 tokens, stride 15, best window; 2 chunks read as 4 windows; before: "
        "2 chunks and 1 evidence string in a cut-off tail; after: 0 chunks with an unread tail, "
        "0 evidence strings that no single window holds whole" in out
    )
    assert "harbour.md#0 39 9" in rows and "harbour.md#1 31 1" in rows
    assert "the embedding model reads 30 tokens: max_seq_length 32 less 2 special tokens" in out
    assert "chunk token counts (3 chunks; '>' marks bins" in out
    assert "36-39 > 1 " + "#" * 40 in rows
    assert (
        "2 of 3 chunks longer than the embedding model reads, 1 evidence string in a cut-off tail, 1 evidence string in several chunks"
        in out
    )
    assert out.rstrip().endswith("1 problem")
    # Without the straddling question the notes remain, and the exit code is 0.
    questions_file = Path(tripwire.golden) / "questions.jsonl"
    questions_file.write_text(
        "".join(
            line + "\n" for line in questions_file.read_text().splitlines() if '"d3"' not in line
        )
    )
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "evidence straddling a chunk boundary: none" in out
    assert "evidence in several chunks (1)" in out and "evidence in a cut-off tail (1)" in out
    assert out.rstrip().endswith("0 problems")


def test_model_limit_fallbacks(tmp_path):
    counter = token_counter()
    bundled = model_limit("all-MiniLM-L6-v2", counter)
    assert bundled is not None and (bundled.max_seq_length, bundled.content_tokens) == (256, 254)
    assert bundled.source.endswith("sentence_bert_config.json")
    # No sentence_bert_config.json: the smaller of max_position_embeddings and a real model_max_length.
    folder = _model(
        tmp_path / "plain",
        config={"max_position_embeddings": 512},
        tokenizer_config={"model_max_length": 1e30},
    )
    limit = model_limit(str(folder))
    assert limit is not None and (limit.max_seq_length, limit.content_tokens) == (512, 510)
    folder = _model(
        tmp_path / "short",
        config={"max_position_embeddings": 512},
        tokenizer_config={"model_max_length": 128},
    )
    assert model_limit(str(folder)).max_seq_length == 128
    assert model_limit(str(_model(tmp_path / "bare"))) is None


def test_special_tokens_read_from_the_json_are_what_tokenizers_counts(tmp_path):
    """The model's limit needs the special tokens' count; it is read from the tokenizer's JSON (8 ms)
    without parsing the tokenizer (34 ms at every start), for every kind of post-processor, and
    equals ``tokenizers``' own ``num_special_tokens_to_add``."""
    from tokenizers import Tokenizer, models, processors

    from ragtui.core.data.tokenizer import TokenCounter
    from ragtui.core.errors import InputError

    vocab = {"[CLS]": 0, "[SEP]": 1, "a": 2, "<s>": 3, "</s>": 4, "[X]": 5, "[Y]": 6}
    template = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", 0), ("[SEP]", 1)],
    )
    two_ids = processors.TemplateProcessing(
        single="[XY] $A [XY]",
        special_tokens=[{"id": "[XY]", "ids": [5, 6], "tokens": ["[X]", "[Y]"]}],
    )
    kinds = {
        "none": None,
        "bert": processors.BertProcessing(("[SEP]", 1), ("[CLS]", 0)),
        "roberta": processors.RobertaProcessing(("</s>", 4), ("<s>", 3)),
        "byte-level": processors.ByteLevel(),
        "template": template,
        "template, a token of two ids": two_ids,
        "sequence": processors.Sequence([processors.ByteLevel(), two_ids, template]),
    }
    counts = {}
    for name, processor in kinds.items():
        tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="a"))
        if processor is not None:
            tokenizer.post_processor = processor
        path = tmp_path / f"{name}.json"
        path.write_text(tokenizer.to_str(), encoding="utf-8")
        counter = TokenCounter(path, name)
        counts[name] = counter.special_tokens
        assert counts[name] == tokenizer.num_special_tokens_to_add(False), name
        assert "_tokenizer" not in vars(counter), name  # read from the JSON, not parsed
    assert counts == {
        "none": 0,
        "bert": 2,
        "roberta": 2,
        "byte-level": 0,
        "template": 2,
        "template, a token of two ids": 4,
        "sequence": 6,
    }
    # What the JSON reading does not know is left to tokenizers, which names the broken file:
    # an unknown kind, a template of the wrong shape or naming no special token it holds, a
    # document that is not an object.
    data = json.loads((tmp_path / "bert.json").read_text(encoding="utf-8"))
    hostile = {
        "unknown": {**data, "post_processor": {"type": "NoSuchProcessor"}},
        "shape": {**data, "post_processor": {"type": "TemplateProcessing", "single": "[CLS] $A"}},
        "unnamed": {
            **data,
            "post_processor": {
                "type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": "[Z]", "type_id": 0}}],
                "special_tokens": {},
            },
        },
        "list": [data],
    }
    for name, document in hostile.items():
        broken = tmp_path / f"{name}-broken.json"
        broken.write_text(json.dumps(document), encoding="utf-8")
        with pytest.raises(InputError, match="broken tokenizer") as raised:
            _ = TokenCounter(broken, name).special_tokens
        assert str(broken) in str(raised.value), name


def test_unknown_limit_is_a_note_not_a_problem(tripwire):
    bare = _model(Path(tripwire.corpus).parent / "bare")
    ws = Workspace.load(replace(tripwire, model=str(bare)))
    diag = diagnose(ws)
    assert diag.limit is None and not diag.truncated and not diag.hidden_evidence
    text = render_report(
        diagnostics_report(diag, chunk_size=40, overlap=0, questions_file="questions.jsonl")
    )
    assert "the model's maximum sequence length is unknown; chunk truncation not checked" in text
    assert "tokens the model reads" not in text
    assert all("sequence length" not in p.problem for p in check_workspace(ws))


def test_histogram_helpers():
    bins = token_histogram([0, 5, 5, 17, 40], mark=16)
    assert [(b.low, b.high, b.count, b.over) for b in bins] == [
        (0, 7, 3, 0),
        (8, 15, 0, 0),
        (16, 23, 1, 1),
        (24, 31, 0, 0),
        (32, 39, 0, 0),
        (40, 47, 1, 1),
    ]
    assert histogram_bars(bins, bar_width=6) == ["######", "", "##", "", "", "##"]
    assert token_histogram([]) == []


def test_bundled_set_passes_check_with_its_notes(capsys, monkeypatch, cache_dir):
    monkeypatch.setenv("RAGTUI_CACHE_DIR", str(cache_dir))
    assert main(["check", "--retrievers", "bm25"]) == 0
    out = capsys.readouterr().out
    # 512-token chunks and a model that reads 254 tokens: most chunks lose their tail, as information.
    assert "chunks longer than the 254 tokens the model reads (" in out
    assert "chunk token counts (" in out
    assert out.rstrip().endswith("0 problems")


def test_labels_survive_a_chunk_size_change_as_stale(mini_settings, mini):
    settings = replace(mini_settings, retrievers=("bm25",))
    ws = Workspace.load(settings)
    ws.set_grade("m01", "ferry.md#0", 1)
    ws.set_grade("m02", "library.md#1", 0)
    journal = mini / "golden" / "labels.jsonl"
    written = journal.read_bytes()
    labelled = {("m01", "ferry.md#0"): 1, ("m02", "library.md#1"): 0}
    assert ws.grades.effective_grades("m01")["ferry.md#0"] == 1 and not ws.grades.stale_labels()

    other = Workspace.load(replace(settings, chunk_size=24))
    assert journal.read_bytes() == written, "the journal is never rewritten"
    stale = {(s.label.question, s.label.chunk): s.reason for s in other.grades.stale_labels()}
    assert set(stale) == set(labelled)
    assert all(
        reason in ("chunk not in the chunked corpus", "chunk text changed since it was labelled")
        for reason in stale.values()
    )
    assert other.grades.hand_grades("m01") == {} and other.grades.hand_grades("m02") == {}
    assert sum(1 for p in check_workspace(other) if "stale label" in p.problem) == 2

    back = Workspace.load(settings)
    assert journal.read_bytes() == written
    assert not back.grades.stale_labels()
    assert {(q, c): back.grades.hand_grades(q)[c] for q, c in labelled} == labelled
    assert back.grades.effective_grades("m01")["ferry.md#0"] == 1
