"""Fuzzing the loaders: any bytes give a valid result or a one-line InputError/ValueError, nothing else.

Fixed seed (``derandomize=True``) and a bounded number of examples, so CI is repeatable and quick.
To hunt for new crashes locally: ``RAGTUI_FUZZ_EXPLORE=1 RAGTUI_FUZZ_EXAMPLES=2000`` (random seed,
more examples). The chunker's fuzz test lives in test_chunking.py.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragtui.core.data.beir import load_beir, load_beir_qrels, load_beir_queries
from ragtui.core.data.corpus import load_beir_corpus
from ragtui.core.data.golden import load_questions
from ragtui.core.data.questions_cache import cached_questions
from ragtui.core.data.trec import read_trec_qrels, read_trec_run
from ragtui.core.errors import InputError
from ragtui.core.labelling.journal import LabelJournal
from tests.conftest import grade_of

#: Examples per loader; docs/reliability.md ("Fuzzing") quotes the total.
EXAMPLES = int(os.environ.get("RAGTUI_FUZZ_EXAMPLES", "150"))

FUZZ = settings(
    max_examples=EXAMPLES,
    derandomize=not os.environ.get("RAGTUI_FUZZ_EXPLORE"),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# ---- building blocks ---------------------------------------------------------------------------------

_json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.sampled_from(["", " ", "q1", "a#0", "doc.md#1", "\u2028", "x\ny", "0", "-1", "9", "10"]),
)
_json_values = st.recursive(
    _json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)


def _objects(keys: list[str]) -> st.SearchStrategy[bytes]:
    """JSON objects over the loader's own keys (so many lines get far into validation), some extra."""
    return st.dictionaries(
        st.sampled_from([*keys, "extra"]), _json_values, max_size=len(keys) + 1
    ).map(lambda obj: json.dumps(obj, ensure_ascii=False).encode("utf-8", "surrogatepass"))


_garbage = st.one_of(
    st.binary(max_size=40),
    st.text(max_size=40).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.sampled_from(
        [
            b"{",
            b"}",
            b"[]",
            b"null",
            b"1",
            b'"s"',
            b"{}",
            b"\xff\xfe",
            b"\x00",
            b"\r",
            "\ufeff".encode(),
            b"[" * 1100,
            b"\t\t",
            b"nan",
        ]
    ),
)


def _join(
    lines: list[bytes],
    inserts: list[tuple[int, bytes]],
    newline: bytes,
    final_newline: bool,
    cut: int | None,
) -> bytes:
    lines = list(lines)
    for at, line in inserts:
        lines.insert(at % (len(lines) + 1), line)
    data = newline.join(lines) + (newline if final_newline else b"")
    return data if cut is None else data[:cut]


def _files(
    valid: st.SearchStrategy[bytes], *fuzzy: st.SearchStrategy[bytes]
) -> st.SearchStrategy[bytes]:
    """Valid lines with up to two odd lines slipped in anywhere, LF or CRLF, sometimes cut short.

    Starting from valid lines means many files load, and many fail only on a later line, so the
    checks past the first line (duplicates, line numbers, the torn last line) are reached too.
    """
    return st.builds(
        _join,
        st.lists(valid, max_size=8),
        st.lists(st.tuples(st.integers(0, 8), st.one_of(*fuzzy, _garbage)), max_size=2),
        st.sampled_from([b"\n", b"\r\n"]),
        st.booleans(),
        st.one_of(st.none(), st.none(), st.none(), st.integers(0, 400)),
    )


_ids = st.one_of(
    st.sampled_from(["q1", "q2", "d1", "d2", "a b", "ü", "1"]), st.text(min_size=1, max_size=6)
).filter(lambda t: t.strip() and not any(c.isspace() for c in t))
_texts = st.text(min_size=1, max_size=20).filter(str.strip)


def _dump(obj: object) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode("utf-8", "surrogatepass")


_valid_question = st.fixed_dictionaries(
    {
        "id": _ids,
        "question": _texts,
        "evidence": st.one_of(_texts, st.lists(_texts, min_size=1, max_size=3)),
    },
    optional={"slices": st.lists(st.text(max_size=5), max_size=2), "retired": st.booleans()},
).map(_dump)
_valid_label = st.fixed_dictionaries(
    {"question": _ids, "chunk": _ids, "grade": st.one_of(st.none(), st.integers(0, 9))},
    optional={
        "chunk_sha1": st.text(max_size=8),
        "at": st.text(max_size=8),
        "annotator": st.text(max_size=5),
    },
).map(_dump)
_valid_beir_doc = st.fixed_dictionaries(
    {"_id": st.one_of(_ids, st.integers(0, 99))},
    optional={"title": st.text(max_size=8), "text": st.text(max_size=20)},
).map(_dump)
_valid_beir_query = st.fixed_dictionaries(
    {"_id": st.one_of(_ids, st.integers(0, 99)), "text": _texts}
).map(_dump)
_valid_tsv = st.tuples(_ids, _ids, st.integers(-2, 3)).map(
    lambda t: f"{t[0]}\t{t[1]}\t{t[2]}".encode()
)
_valid_qrels = st.tuples(_ids, _ids, st.integers(-2, 3)).map(
    lambda t: f"{t[0]} 0 {t[1]} {t[2]}".encode()
)
_valid_run = st.tuples(_ids, _ids, st.integers(0, 99), st.floats(-1e6, 1e6)).map(
    lambda t: f"{t[0]} Q0 {t[1]} {t[2]} {t[3]!r} tag".encode()
)


def _tokens() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(
            [
                "q1",
                "Q0",
                "0",
                "1",
                "2",
                "-1",
                "1.5",
                "nan",
                "inf",
                "-inf",
                "1e400",
                "1_0",
                "#",
                "tag",
                "\u00a0",
                "\u2003",
                "\x1c",
            ]
        ),
        st.text(min_size=1, max_size=6),
    )


def _qrels_lines() -> st.SearchStrategy[bytes]:
    """Three or four columns, the shape that gets furthest into the TSV and TREC qrels readers."""
    return st.tuples(st.lists(_tokens(), min_size=3, max_size=4), st.sampled_from([" ", "\t"])).map(
        lambda t: t[1].join(t[0]).encode("utf-8", "surrogatepass")
    )


def _trec_lines() -> st.SearchStrategy[bytes]:
    return st.lists(_tokens(), max_size=8).flatmap(
        lambda toks: st.sampled_from([" ", "\t", "  "]).map(
            lambda sep: sep.join(toks).encode("utf-8", "surrogatepass")
        )
    )


def _check(load: Callable[[Path], object], name: str, data: bytes) -> object | None:
    """Run a loader on ``data`` written to a file: a result, or a one-line InputError/ValueError."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        try:
            return load(path)
        except (InputError, ValueError) as exc:
            error = exc
    message = error.message if isinstance(error, InputError) else str(error)
    assert message.strip() and "\n" not in message and "\r" not in message, repr(message)
    if isinstance(error, InputError):
        assert error.path is not None and Path(error.path).name in message
    return None


# ---- the loaders -------------------------------------------------------------------------------------

_QUESTION_KEYS = ["id", "question", "evidence", "slices"]


@FUZZ
@given(_files(_valid_question, _objects(_QUESTION_KEYS)))
def test_fuzz_questions(data):
    questions = _check(load_questions, "questions.jsonl", data)
    if questions is not None:
        ids = [q.id for q in questions]
        assert ids and len(ids) == len(set(ids))
        assert all(
            q.text.strip() and q.evidence and all(e.strip() for e in q.evidence) for q in questions
        )
        # The questions cache gives the same questions back: parsed and written by the first
        # start, built from its columns by the second.
        with tempfile.TemporaryDirectory() as folder:
            path, root = Path(folder) / "questions.jsonl", Path(folder) / "cache"
            path.write_bytes(data)
            assert _listed(cached_questions(path, root)) == (questions, [])
            assert any((root / "questions").iterdir())
            assert _listed(cached_questions(path, root)) == (questions, [])


def _listed(found):
    """``cached_questions``' answer with its questions as a list (the cache gives them lazily)."""
    questions, warnings = found
    return list(questions), warnings


_LABEL_KEYS = ["question", "chunk", "grade", "chunk_sha1", "at", "annotator"]


@FUZZ
@given(_files(_valid_label, _objects(_LABEL_KEYS)))
def test_fuzz_labels(data):
    def load_and_write(path: Path) -> LabelJournal:
        journal = LabelJournal(path)
        assert all(0 <= lab.grade <= 9 for lab in journal.current.values())
        # Whatever loaded must stay loadable after a write (a torn tail is repaired, never glued to).
        before = len(journal.history)
        journal.set_grade("fuzz", "doc.md#0", 1, "s")
        again = LabelJournal(path)
        assert len(again.history) == before + 1 and grade_of(again, "fuzz", "doc.md#0") == 1
        # Lines that cannot be read stay skipped; a torn tail is gone.
        assert again.bad_lines == journal.bad_lines
        assert len(again.warnings) == len(again.bad_lines)
        return journal

    _check(load_and_write, "labels.jsonl", data)


@FUZZ
@given(_files(_valid_beir_doc, _objects(["_id", "title", "text", "metadata"])))
def test_fuzz_beir_corpus(data):
    corpus = _check(lambda p: load_beir_corpus(p.parent), "corpus.jsonl", data)
    if corpus is not None:
        ids = [d.path for d in corpus.documents]
        assert ids and len(ids) == len(set(ids)) and all(i.strip() for i in ids)


@FUZZ
@given(_files(_valid_beir_query, _objects(["_id", "text", "metadata"])))
def test_fuzz_beir_queries(data):
    questions = _check(load_beir_queries, "queries.jsonl", data)
    if questions is not None:
        assert questions and all(q.id.strip() and q.text.strip() for q in questions)


@FUZZ
@given(_files(_valid_tsv, _qrels_lines(), _trec_lines()))
def test_fuzz_beir_qrels(data):
    qrels = _check(load_beir_qrels, "test.tsv", data)
    if qrels is not None:
        assert all(
            qid and doc and isinstance(g, int)
            for qid, docs in qrels.items()
            for doc, g in docs.items()
        )


@FUZZ
@given(
    st.dictionaries(
        st.sampled_from(["corpus.jsonl", "queries.jsonl", "qrels/test.tsv"]),
        st.sampled_from(
            [
                b'{"_id": "d1", "text": "a b"}\n',
                b'{"_id": "1", "text": "a"}\n',
                b"1\td1\t1\n",
                b"",
                b"{",
                b"1 d1\n",
            ]
        ),
    )
)
def test_fuzz_beir_folder(files):
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for name, data in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_bytes(data)
        try:
            load_beir(root)
            message = "loaded"
        except InputError as exc:
            message = exc.message
        assert "\n" not in message and message.strip()


@FUZZ
@given(_files(_valid_qrels, _qrels_lines(), _trec_lines()))
def test_fuzz_trec_qrels(data):
    qrels = _check(read_trec_qrels, "qrels.trec", data)
    if qrels is not None:
        assert all(isinstance(g, int) for docs in qrels.values() for g in docs.values())


@FUZZ
@given(_files(_valid_run, _trec_lines()))
def test_fuzz_trec_runs(data):
    run = _check(read_trec_run, "run.trec", data)
    if run is not None:
        assert all(len(docs) == len(set(docs)) for docs in run.values())


# ---- what fuzzing and review turned up (kept as plain regression tests) ------------------------------


def test_beir_ids_and_scores_are_strict(tmp_path):
    cases = [
        ("qrels/test.tsv", b"\td1\t1\n", "test.tsv:1: empty query-id or corpus-id"),
        ("qrels/test.tsv", b"\xc2\xa0\td1\t1\n", "test.tsv:1: empty query-id or corpus-id"),
        ("qrels/test.tsv", b"q1\td1\t1_0\n", "test.tsv:1: score '1_0' is not a whole number"),
        ("qrels/test.tsv", "q1\td1\t\u0661\n".encode(), "is not a whole number"),
        (
            "corpus.jsonl",
            b'{"_id": true, "text": "a"}\n',
            "corpus.jsonl:1: missing or invalid '_id'",
        ),
        (
            "corpus.jsonl",
            b'{"_id": " ", "text": "a"}\n',
            "corpus.jsonl:1: missing or invalid '_id'",
        ),
        (
            "corpus.jsonl",
            b'{"_id": "d1", "text": []}\n',
            "corpus.jsonl:1: 'title' and 'text' must be strings",
        ),
        (
            "queries.jsonl",
            b'{"_id": false, "text": "a"}\n',
            "queries.jsonl:1: missing or invalid '_id'",
        ),
    ]
    for name, data, expected in cases:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        load = {"qrels/test.tsv": load_beir_qrels, "queries.jsonl": load_beir_queries}.get(name)
        with pytest.raises(InputError) as raised:
            load(path) if load else load_beir_corpus(tmp_path)
        assert expected in raised.value.message, (name, data, raised.value.message)


def test_trec_numbers_are_ascii_like_trec_eval(tmp_path):
    path = tmp_path / "run.trec"
    for bad in ("1_0", "\u0661", "infinity_"):
        path.write_text(f"q1 Q0 d1 1 {bad} tag\n", encoding="utf-8")
        with pytest.raises(InputError) as raised:
            read_trec_run(path)
        assert (
            "is not a number" in raised.value.message
            or "not a finite number" in raised.value.message
        )
    path.write_text("q1 Q0 d1 +1 -.5e1 tag\nq1 Q0 d2 2 3. tag\n", encoding="utf-8")
    assert read_trec_run(path) == {"q1": ["d2", "d1"]}
