"""Hostile arguments, round three: one regression test per finding of a hostile run, then a sweep of
about 200 hostile argument lists over eval, export, check, why, diff and labels compact. Every bad
value is one ``ragtui: error:`` line naming the option (or the file and line) and a non-zero exit
(2 for usage errors), never a traceback. All in-process, on the small corpus, BM25 only."""

from __future__ import annotations

import errno
import json
import random
import socket
from pathlib import Path

import orjson
import pytest

from ragtui.cli import main
from ragtui.core.analysis.curve import recall_curves
from ragtui.core.data.chunking import Chunk
from ragtui.core.labelling.journal import LabelJournal
from ragtui.core.retrieval.bm25 import BM25Retriever
from ragtui.core.retrieval.results_cache import RankingCache, TextKeys
from ragtui.core.workspace import Workspace
from tests.conftest import grade_of, mini_args, settings_of

pytestmark = pytest.mark.usefixtures("cli_cache_env")


def _args(mini: Path, *extra: str) -> list[str]:
    return mini_args(mini, "--no-project", "--retrievers", "bm25", *extra)


def run(argv: list[str]) -> int:
    """``main(argv)``'s exit code, a usage error's SystemExit included."""
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)


def one_error(capsys: pytest.CaptureFixture[str], code: int, expected: int = 2) -> str:
    """The one ``ragtui: error:`` line, last on stderr (warnings may come before it), no traceback."""
    assert code == expected
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert "Traceback" not in err, err
    assert lines and all(line.startswith("ragtui: ") for line in lines), err
    assert [line for line in lines if line.startswith("ragtui: error: ")] == lines[-1:], err
    return lines[-1]


# ---- 1. a number too large for anything: every numeric option has a maximum ----------------------


def test_a_hundred_digit_k_is_one_line(mini: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = one_error(capsys, run(["eval", *_args(mini, "--k", "9" * 100)]))
    assert "argument --k: 999" in line and "must be at most 1000000" in line
    assert len(line) < 200  # the number is cut, not printed whole


@pytest.mark.parametrize(
    ("command", "flag", "too_large"),
    [
        ("eval", "--k", "1000001"),
        ("eval", "--depth", "1000001"),
        ("eval", "--chunk-size", "1" + "0" * 30),
        ("eval", "--overlap", "9" * 50),
        ("eval", "--threshold", "9" * 50),
        ("eval", "--window-stride", "9" * 50),
        ("eval", "--max-file-mb", "1e308"),
        ("eval", "--seed", "9" * 30),
        ("eval", "--seed", "-1"),
        ("diff", "--limit", "9" * 30),
    ],
    ids=lambda v: v[:12],
)
def test_every_numeric_option_is_bounded(
    mini: Path, capsys: pytest.CaptureFixture[str], command: str, flag: str, too_large: str
) -> None:
    extra = ["a", "b"] if command == "diff" else []
    line = one_error(capsys, run([command, *extra, *_args(mini, flag, too_large)]))
    assert f"argument {flag}:" in line
    assert "must be at most" in line or "must be at least 0" in line


# ---- 2. a depth beyond the chunks is the number of chunks, never an allocation -------------------


def test_a_depth_beyond_the_chunks_is_the_number_of_chunks(
    mini: Path, cache_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A results cache asked for a thousand thousand million results of 9 chunks holds rows of 9.
    cache = RankingCache("bm25", {"chunks": "x"}, 9, 10**12, tmp_path / "cache")
    assert cache.depth == 9
    assert cache.lookup(TextKeys(["a question"])).index.shape == (1, 9)
    # A workspace whose settings say so (below the option's bound, settings can come from code).
    ws = Workspace.load(settings_of(mini, depth=10**12, retrievers=("bm25",), cache_dir=cache_dir))
    table = ws.ranked.rankings["bm25"]
    assert table.index.shape == (len(ws.questions.loaded_ids), len(ws.data.chunks))
    assert {len(curve) for curve in recall_curves(ws).values()} == {len(ws.data.chunks)}
    # The command line takes up to a million, and the run is the same as at the number of chunks.
    assert run(["eval", *_args(mini, "--depth", "1000000", "--json")]) == 0
    deep = json.loads(capsys.readouterr().out)
    assert run(["eval", *_args(mini, "--depth", str(len(ws.data.chunks)), "--json")]) == 0
    exact = json.loads(capsys.readouterr().out)
    assert deep["retrievers"] == exact["retrievers"]


# ---- 3. a float where a whole number is meant ------------------------------------------------------


@pytest.mark.parametrize("value", ["1e30", "1" + "0" * 30, "10.0", "1e3"])
def test_a_float_depth_is_one_line(
    mini: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    line = one_error(capsys, run(["eval", *_args(mini, "--depth", value)]))
    assert "argument --depth:" in line


def test_a_float_depth_in_the_project_file_names_the_file_and_line(
    mini: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "ragtui.toml"
    project.write_text("k = 3\ndepth = 1e30\n")
    argv = ["eval", *mini_args(mini, "--project", str(project), "--retrievers", "bm25")]
    line = one_error(capsys, run(argv))
    assert line.startswith(f"ragtui: error: {project}:2: depth: ")


# ---- 4. --max-file-mb too large ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "value", ["1e308", "1e400", "inf", "nan", "-1", "0", "9" * 400], ids=lambda v: v[:12]
)
def test_max_file_mb_is_bounded(mini: Path, capsys: pytest.CaptureFixture[str], value: str) -> None:
    line = one_error(capsys, run(["eval", *_args(mini, "--max-file-mb", value)]))
    assert "argument --max-file-mb:" in line and len(line) < 200


# ---- 5. BM25 over documents without a word -------------------------------------------------------------


def _beir(folder: Path, *documents: str) -> Path:
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        "".join(
            json.dumps({"_id": f"d{i}", "title": "", "text": text}) + "\n"
            for i, text in enumerate(documents, start=1)
        )
    )
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "what is it"}) + "\n")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    return folder


@pytest.mark.parametrize("backend", ["rank-bm25", "bm25s"])
def test_a_beir_corpus_of_one_empty_document_ranks_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], backend: str
) -> None:
    beir = _beir(tmp_path / "beir", "")
    argv = ["eval", "--no-project", "--beir", str(beir), "--retrievers", "bm25"]
    assert run([*argv, "--bm25-backend", backend, "--json"]) == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert "no word with any chunk" in captured.err
    assert json.loads(captured.out)["retrievers"]["bm25"]["per_question"]["q1"]["ranked"] == []


@pytest.mark.parametrize("backend", ["rank-bm25", "bm25s"])
def test_bm25_over_no_words_returns_nothing(tmp_path: Path, backend: str) -> None:
    blank = [
        Chunk(f"d#{i}", "d", i, 0, len(text), text, (), 0) for i, text in enumerate(["", " ", "--"])
    ]
    for key, chunks in (("blank", blank), ("none", [])):
        for _ in range(2):  # the second reads the index the first wrote (rank-bm25 caches it)
            bm25 = BM25Retriever(chunks, backend=backend, cache_root=tmp_path, chunks_key=key)
            assert bm25.search("what is it", 10) == []
            assert bm25.warnings == []


# ---- 6. a project file nested too deeply for the TOML reader ------------------------------------------


def test_a_deeply_nested_project_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "ragtui.toml"
    project.write_text("k = " + "[" * 5000 + "\n")
    line = one_error(capsys, run(["config", "--project", str(project)]))
    assert (
        line
        == f"ragtui: error: {project}: invalid TOML: arrays or tables nested too deeply to read"
    )
    # Found by looking up from the working folder, and as pyproject.toml's [tool.ragtui].
    monkeypatch.chdir(tmp_path)
    assert "nested too deeply" in one_error(capsys, run(["config"]))
    project.unlink()
    (tmp_path / "pyproject.toml").write_text("[tool.ragtui]\nk = " + "{a = " * 5000 + "\n")
    assert "pyproject.toml: invalid TOML" in one_error(capsys, run(["config"]))


# ---- 7. and 8. ragtui serve: a URL that does not parse, a host it cannot listen on --------------------


@pytest.mark.parametrize("url", ["http://[::1/x", "https://[zz]:80/", "http://[::1]:99999/"])
def test_a_public_url_that_does_not_parse_is_one_line(
    capsys: pytest.CaptureFixture[str], url: str
) -> None:
    line = one_error(capsys, run(["serve", "--no-project", "--public-url", url]))
    assert line.startswith(f"ragtui: error: --public-url: {url!r} is not an http")


@pytest.fixture
def no_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """A test that got past the checks fails instead of serving forever."""
    import ragtui.cli.serve as serve

    class Refused(serve.RagtuiServer):
        def serve(self, debug: bool = False) -> None:
            raise AssertionError("the server was started")

    monkeypatch.setattr(serve, "RagtuiServer", Refused)


@pytest.mark.usefixtures("no_server")
def test_a_host_that_cannot_be_served_on_is_one_line_before_anything_is_said(
    capsys: pytest.CaptureFixture[str],
) -> None:
    line = one_error(
        capsys, run(["serve", "--no-project", "--host", "999.1.1.1", "--port", "8765"])
    )
    assert line.startswith("ragtui: error: cannot listen on 999.1.1.1:8765: ")
    assert "(--host)" in line
    line = one_error(capsys, run(["serve", "--no-project", "--host", ""]))
    assert "--host" in line
    # A port another program holds: said before "serving", too.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = one_error(capsys, run(["serve", "--no-project", "--port", str(port)]))
    assert line.startswith(f"ragtui: error: cannot listen on 127.0.0.1:{port}: ")


# ---- 9. an empty --metrics, a number given as text in the project file ---------------------------------


@pytest.mark.parametrize(
    "metrics", ["", " , ", "R@" + "9" * 5000, "R@10000000"], ids=lambda v: repr(v[:12])
)
def test_metrics_that_name_no_measure_are_one_line(
    mini: Path, capsys: pytest.CaptureFixture[str], metrics: str
) -> None:
    line = one_error(capsys, run(["eval", *_args(mini, "--metrics", metrics)]))
    assert line.startswith("ragtui: error: --metrics: ")
    if not metrics.strip(" ,"):
        assert "no measure given" in line
    assert len(line) < 200


@pytest.mark.parametrize(
    ("setting", "problem"),
    [
        ('k = "3"', "k: expected a number, not the text '3' (write it without quotes)"),
        ('depth = "10"', "depth: expected a number, not the text '10' (write it without quotes)"),
        (
            'max-file-mb = "2"',
            "max-file-mb: expected a number, not the text '2' (write it without quotes)",
        ),
        ('estimate = "true"', "estimate: expected true or false, not the text 'true'"),
        ("k = 3.0", "k: 3.0 is not a whole number"),
    ],
)
def test_project_values_must_have_their_toml_type(
    mini: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], setting: str, problem: str
) -> None:
    project = tmp_path / "ragtui.toml"
    project.write_text(f"retrievers = ['bm25']\n{setting}\n")
    line = one_error(capsys, run(["eval", *mini_args(mini, "--project", str(project))]))
    assert line == f"ragtui: error: {project}:2: {problem}"


def test_a_variant_value_must_have_its_toml_type(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "ragtui.toml"
    project.write_text("[variants.a]\n[variants.b]\nchunk-size = '256'\n")
    line = one_error(capsys, run(["config", "--project", str(project)]))
    assert "chunk-size: expected a number, not the text '256'" in line


# ---- 10. a full disk: the file is named, and a failed save leaves no empty runs/ ---------------------


def _full_disk(*_args: object, **_kwargs: object) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


def _journal(mini: Path, lines: int = 3) -> Path:
    path = mini / "golden" / "labels.jsonl"
    label = {
        "question": "m01",
        "chunk": "ferry.md#0",
        "chunk_sha1": "s",
        "at": "t",
        "annotator": "a",
    }
    path.write_bytes(
        b"".join(orjson.dumps({**label, "grade": g % 3}) + b"\n" for g in range(lines))
    )
    return path


def test_compacting_on_a_full_disk_names_the_journal(
    mini: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _journal(mini)
    before = path.read_bytes()
    monkeypatch.setattr("ragtui.core.labelling.journal.write_atomic", _full_disk)
    line = one_error(capsys, run(["labels", "compact", *_args(mini)]))
    assert line == (
        f"ragtui: error: {path}: cannot write the compacted journal (No space left on device); "
        "the journal was left as it was"
    )
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["labels.jsonl", "questions.jsonl"]
    # The backup cannot be written either: named too, nothing changed.
    monkeypatch.setattr("ragtui.core.labelling.journal.write_backup", _full_disk)
    line = one_error(capsys, run(["labels", "compact", *_args(mini)]))
    assert line.startswith(f"ragtui: error: {path}: cannot write its backup beside it (No space")
    assert path.read_bytes() == before


def test_saving_a_run_on_a_full_disk_leaves_no_runs_folder(
    mini: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("ragtui.core.analysis.runs.folder.write_new", _full_disk)
    runs = mini / "golden" / "runs"
    line = one_error(capsys, run(["eval", *_args(mini, "--save", "base")]))
    assert line == (
        f"ragtui: error: {runs / 'base.json'}: cannot write the saved run "
        "(No space left on device); nothing was saved"
    )
    assert not runs.exists()
    # A --runs-dir two folders deep that did not exist: neither is left behind.
    deep = mini / "made" / "runs"
    one_error(capsys, run(["eval", *_args(mini, "--save", "base", "--runs-dir", str(deep))]))
    assert not (mini / "made").exists()
    # A runs folder that existed stays.
    runs.mkdir()
    one_error(capsys, run(["eval", *_args(mini, "--save", "base")]))
    assert runs.is_dir() and not any(runs.iterdir())


# ---- 11. a byte-order mark at the start of a middle line of the journal -----------------------------------


def test_a_byte_order_mark_on_a_middle_line_keeps_its_label(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    bom = "\ufeff".encode()
    lines = [
        orjson.dumps({"question": f"q{i}", "chunk": "c", "grade": 2, "chunk_sha1": "s", "at": "t"})
        for i in range(3)
    ]
    path.write_bytes(bom + lines[0] + b"\n" + bom + lines[1] + b"\n" + bom + b"\n" + lines[2])
    journal = LabelJournal(path, "tester")
    assert journal.bad_lines == [] and journal.warnings == []
    assert [grade_of(journal, f"q{i}", "c") for i in range(3)] == [2, 2, 2]
    # Appended after a BOM line without its newline: read too.
    path.write_bytes(path.read_bytes() + b"\n" + bom + lines[0].replace(b"q0", b"q3") + b"\n")
    journal.refresh()
    assert grade_of(journal, "q3", "c") == 2 and journal.bad_lines == []


# ---- 12. compacting a large journal: linear, and right ------------------------------------------------


PEOPLE = ("ana", "bob", "cy", "dee", "eve")
MODELS = ("model:one", "model:two")


def _large_journal(path: Path, lines: int, seed: int = 7) -> list[dict[str, object]]:
    """A journal of ``lines`` lines: people and model judges grading and withdrawing, adjudications,
    and one pair graded by 1,000 annotators (what made reading it quadratic)."""
    rng = random.Random(seed)
    out = []
    for i in range(lines):
        crowd = i % 50 == 0
        annotator = f"p{rng.randrange(1000)}" if crowd else rng.choice(PEOPLE + MODELS)
        obj: dict[str, object] = {
            "question": "q-crowd" if crowd else f"q{rng.randrange(300)}",
            "chunk": "c-crowd" if crowd else f"d{rng.randrange(10)}.md#{rng.randrange(5)}",
            "grade": rng.choice([0, 1, 2, 3, None]) if not crowd else rng.choice([1, 2, None]),
            "chunk_sha1": rng.choice(["s1", "s2"]),
            "at": f"2024-01-01T00:00:{i % 60:02d}.000+00:00",
            "annotator": annotator,
        }
        if not crowd and annotator in PEOPLE and rng.random() < 0.05:
            obj["adjudicated"] = True
        if annotator in MODELS:
            obj["model"] = "m"
        out.append(obj)
    path.write_bytes(b"".join(orjson.dumps(obj) + b"\n" for obj in out))
    return out


def _reference(objs: list[dict[str, object]], models: bool) -> tuple[list[int], dict]:
    """What compaction keeps (line indices) and the label that counts per pair, the slow way."""
    by_pair: dict[tuple, dict[str, int]] = {}
    adjudicated: dict[tuple, int] = {}
    for i, obj in enumerate(objs):
        pair = (obj["question"], obj["chunk"])
        if obj.get("adjudicated"):
            if obj["grade"] is None:
                adjudicated.pop(pair, None)
            else:
                adjudicated[pair] = i
        elif obj["grade"] is None:
            by_pair.get(pair, {}).pop(str(obj["annotator"]), None)
        else:
            by_pair.setdefault(pair, {})[str(obj["annotator"])] = i
    kept = sorted(
        [*adjudicated.values(), *(i for lines in by_pair.values() for i in lines.values())]
    )
    counts: dict[tuple, int] = {}
    for pair in by_pair.keys() | adjudicated.keys():
        if pair in adjudicated:
            counts[pair] = adjudicated[pair]
            continue
        lines = by_pair.get(pair, {})
        people = [i for a, i in lines.items() if not a.startswith("model:")]
        judges = [i for a, i in lines.items() if a.startswith("model:")]
        if people or (models and judges):
            counts[pair] = max(people or judges)
    return kept, counts


def test_compacting_a_large_journal_keeps_exactly_the_current_labels(
    mini: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = mini / "golden" / "labels.jsonl"
    objs = _large_journal(path, 50_000)
    kept, counts = _reference(objs, models=False)
    _, counts_with_models = _reference(objs, models=True)

    def summary(journal: LabelJournal) -> dict:
        return {k: (lab.annotator, lab.grade, lab.chunk_sha1) for k, lab in journal.current.items()}

    expected = {
        pair: (objs[i]["annotator"], objs[i]["grade"], objs[i]["chunk_sha1"])
        for pair, i in counts.items()
    }
    before = LabelJournal(path, "tester")
    assert summary(before) == expected
    assert summary(LabelJournal(path, "tester", models=True)) == {
        pair: (objs[i]["annotator"], objs[i]["grade"], objs[i]["chunk_sha1"])
        for pair, i in counts_with_models.items()
    }

    assert run(["labels", "compact", *_args(mini)]) == 0
    out = capsys.readouterr().out
    assert f"50000 lines -> {len(kept)}" in out
    assert path.read_bytes() == b"".join(orjson.dumps(objs[i]) + b"\n" for i in kept)
    backups = list(path.parent.glob("labels.jsonl.*.bak"))
    assert len(backups) == 1
    assert backups[0].read_bytes() == b"".join(orjson.dumps(obj) + b"\n" for obj in objs)

    # Read again, and as the compacting journal holds it: the same labels, at their new lines.
    after = LabelJournal(path, "tester")
    assert summary(after) == expected
    assert [lab.line for lab in after.history] == list(range(1, len(kept) + 1))
    before.take_touched()
    assert before.compact() is None  # compact already (read under the lock: it changed on disk)
    assert summary(before) == expected
    assert before.history == after.history and before.current == after.current


def test_a_compacting_journal_takes_the_file_it_wrote_as_read(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    objs = _large_journal(path, 3_000, seed=3)
    journal = LabelJournal(path, "tester")
    journal.take_touched()
    assert journal.compact() is not None
    assert journal.take_touched() == set()  # a compaction changes no pair's labels
    fresh = LabelJournal(path, "tester")
    assert journal.history == fresh.history and journal.current == fresh.current
    # Lines appended after it by another writer are read from where the compaction left off.
    extra = {**objs[1], "grade": 3, "annotator": "late", "adjudicated": True}
    with path.open("ab") as out:
        out.write(orjson.dumps(extra) + b"\n")
    added = journal.refresh()
    assert [(lab.annotator, lab.grade) for lab in added] == [("late", 3)]
    assert grade_of(journal, str(extra["question"]), str(extra["chunk"])) == 3


# ---- the sweep: ~200 hostile argument lists, never a traceback -----------------------------------------

NUMBERS = (
    "9" * 100,
    "9" * 5000,
    "-1",
    "0",
    "1.5",
    "nan",
    "inf",
    "-inf",
    "1e308",
    "",
    " ",
    "\x1b[2J\x07",
    "1\x00",
    "0x10",
    "1_000",
    "\u0663",  # an Arabic-Indic three: int() reads it
    "1000001",
)
PATHS = ("", " ", "\x1b[31mred\x07", "nowhere/\x01", "/dev/null", "\udcff", "a\x00b", "x" * 5000)

#: command -> (the arguments before the options, its numeric options, its path options)
COMMANDS: dict[str, tuple[list[str], list[str], list[str]]] = {
    "eval": (
        ["eval"],
        [
            "--k",
            "--depth",
            "--chunk-size",
            "--overlap",
            "--threshold",
            "--window-stride",
            "--max-file-mb",
            "--seed",
        ],
        ["--corpus", "--golden", "--beir", "--chunks", "--runs-dir", "--project", "--run"],
    ),
    "export": (["export", "out"], ["--k", "--depth", "--max-file-mb"], ["DIR", "--golden"]),
    "check": (["check"], ["--chunk-size", "--overlap", "--max-file-mb"], ["--corpus", "--golden"]),
    "why": (["why"], ["--k", "--depth", "--threshold"], ["--golden", "--corpus"]),
    "diff": (["diff", "a", "b"], ["--limit", "--k"], ["A", "--runs-dir"]),
    "labels": (["labels", "compact"], ["--chunk-size"], ["--golden"]),
}


def _sweep() -> list[tuple[str, list[str]]]:
    """Every command with each hostile value of each of its options, cut to about 200 by a fixed draw."""
    cases: list[tuple[str, list[str]]] = []
    for name, (head, numeric, paths) in COMMANDS.items():
        for flag in numeric:
            cases += [(name, [*head, flag, value]) for value in NUMBERS]
        for flag in paths:
            for value in PATHS:
                if flag == "DIR":
                    cases.append((name, ["export", value]))
                elif flag == "A":
                    cases.append((name, ["diff", value, "b"]))
                else:
                    cases.append((name, [*head, flag, f"x={value}" if flag == "--run" else value]))
    return random.Random(12).sample(cases, 200)


def test_two_hundred_hostile_argument_lists_never_raise(
    mini: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(
        mini
    )  # relative paths (export's DIR, a runs folder) land in the test's folder
    # Saved runs a and b for diff, and a journal with something to compact, so that the valid
    # values among the hostile ones run the command through.
    for run_name in ("a", "b"):
        assert run(["eval", *_args(mini, "--save", run_name)]) == 0
    _journal(mini)
    capsys.readouterr()
    for name, argv in _sweep():
        # The small corpus's options after the hostile ones: a hostile --corpus must not be replaced.
        hostile = {a for a in argv if a.startswith("--")}
        if hostile & {"--chunks", "--beir"}:
            hostile.add("--corpus")  # each replaces the corpus
        base = _args(mini)
        if "--project" in hostile:
            base.remove("--no-project")
        for flag in hostile & set(base):
            at = base.index(flag)
            del base[at : at + 2]
        try:
            code = main([*argv, *base])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 0
        except BaseException as exc:
            pytest.fail(f"{name} {argv!r}: {type(exc).__name__}: {exc}")
        err = capsys.readouterr().err
        assert "Traceback" not in err, (argv, err)
        if code == 2:
            errors = [line for line in err.splitlines() if line.startswith("ragtui: error: ")]
            assert errors == err.splitlines()[-1:], (argv, err)
            if argv[-1] in NUMBERS:  # a number is cut; a path is named as given
                assert len(errors[0]) < 300, (argv, errors[0][:300])


# ---- the unit of the measures (--unit, unit = ..., a saved run's unit) ------------------------------


@pytest.mark.parametrize("value", ["bogus", "", "EVIDENCE", "chunks\x1b[31m"])
def test_a_unit_that_is_not_one_is_one_line(
    mini: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    line = one_error(
        capsys, run(["eval", *mini_args(mini, "--retrievers", "bm25", "--unit", value)])
    )
    assert "--unit" in line and "\x1b" not in line


@pytest.mark.parametrize("setting", ["unit = 3", "unit = ['evidence']", "unit = 'docs'"])
def test_a_unit_in_the_project_file_must_be_one(
    mini: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], setting: str
) -> None:
    project = tmp_path / "ragtui.toml"
    project.write_text(f"retrievers = ['bm25']\n{setting}\n")
    line = one_error(capsys, run(["eval", *mini_args(mini, "--project", str(project))]))
    assert line.startswith(f"ragtui: error: {project}:2: ")


def _saved_evidence_run(mini: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    runs = tmp_path / "runs"
    argv = ["eval", "--save", "ev", "--unit", "evidence", "--runs-dir", str(runs)]
    assert run([*argv, *mini_args(mini, "--retrievers", "bm25")]) == 0
    capsys.readouterr()
    return runs / "ev.json"


@pytest.mark.parametrize(
    ("forge", "problem"),
    [
        (lambda o: o["manifest"].update(unit="documents"), "manifest 'unit' must be"),
        (lambda o: o["manifest"].update(unit=["evidence"]), "manifest 'unit' must be"),
        (
            lambda o: next(iter(o["retrievers"]["bm25"]["per_question"].values())).pop(
                "evidence_ranks"
            ),
            "evidence_ranks is missing",
        ),
        (
            lambda o: next(iter(o["retrievers"]["bm25"]["per_question"].values())).update(
                evidence_ranks="1"
            ),
            "evidence_ranks must be a list",
        ),
        (
            lambda o: next(iter(o["retrievers"]["bm25"]["per_question"].values())).update(
                evidence_ranks=[0, -5]
            ),
            "must be at least 1",
        ),
        (
            lambda o: next(iter(o["retrievers"]["bm25"]["per_question"].values())).update(
                grades={"x": "2"}
            ),
            "must be a whole number",
        ),
    ],
)
def test_a_forged_evidence_level_run_is_one_line(
    mini: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], forge, problem: str
) -> None:
    """A saved run someone else wrote (or edited): every unit field it is read by is checked, and
    a bad one is one line naming the file and the field, for --compare as for diff."""
    path = _saved_evidence_run(mini, tmp_path, capsys)
    good = tmp_path / "runs" / "good.json"
    good.write_bytes(path.read_bytes())
    body = json.loads(path.read_text())
    forge(body)
    path.write_text(json.dumps(body))
    for argv in (["diff", "good", "ev"], ["eval", "--compare", "good", "ev", "--unit", "evidence"]):
        full = [
            *argv,
            "--runs-dir",
            str(tmp_path / "runs"),
            *mini_args(mini, "--retrievers", "bm25"),
        ]
        line = one_error(capsys, run(full))
        assert str(path) in line and problem in line, line
