"""The reference documentation stays true: docs/json.md names exactly the keys the commands print,
docs/commands.md names every command and option, links resolve, nothing points outside the
repository, and the examples shown with their output print today what the page shows."""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shlex
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ragtui.cli import main
from ragtui.cli.main import build_parser
from tests.conftest import ROOT, mini_args

DOCS = ROOT / "docs"
JSON_DOC = DOCS / "json.md"

#: A table row whose first cell is a key path: | `retrievers.<retriever>.recall` | ...
_ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|", re.MULTILINE)
#: A Markdown link to a relative target: [text](target) or [text](target#anchor).
_LINK = re.compile(r"\]\(([^)#\s]+)(?:#([^)\s]*))?\)")


pytestmark = pytest.mark.usefixtures("cli_cache_env")


_args = mini_args


def _json_of(argv: list[str], capsys: pytest.CaptureFixture[str]) -> object:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def key_paths(value: object, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every key path of a JSON value; the items of a list add ``[]`` to the list's own key."""
    if isinstance(value, dict):
        for key, item in value.items():
            path = (*prefix, str(key))
            yield path
            yield from key_paths(item, path)
    elif isinstance(value, list) and prefix:
        for item in value:
            yield from key_paths(item, (*prefix[:-1], prefix[-1] + "[]"))


def documented(section: str) -> set[tuple[str, ...]]:
    """The key paths in the tables of the docs/json.md section whose heading names ``section``."""
    parts = re.split(r"^## ", JSON_DOC.read_text(encoding="utf-8"), flags=re.MULTILINE)
    chosen = [p for p in parts[1:] if section in p.splitlines()[0]]
    assert len(chosen) == 1, f"docs/json.md has no single section about {section}"
    return {tuple(m.split(".")) for m in _ROW.findall(chosen[0]) if m != "path"}


def _matches(pattern: tuple[str, ...], path: tuple[str, ...]) -> bool:
    """Whether a documented path (``<name>`` stands for any key) describes a printed one."""
    return len(pattern) == len(path) and all(
        p == k or (p.startswith("<") and p.endswith(">"))
        for p, k in zip(pattern, path, strict=True)
    )


def assert_documented(printed: set[tuple[str, ...]], doc: set[tuple[str, ...]], what: str) -> None:
    """Every printed path is in the doc, and every path in the doc was printed."""
    missing = sorted(".".join(p) for p in printed if not any(_matches(d, p) for d in doc))
    assert not missing, f"{what}: keys printed but not in docs/json.md: {missing}"
    invented = sorted(".".join(d) for d in doc if not any(_matches(d, p) for p in printed))
    assert not invented, f"{what}: keys in docs/json.md that are never printed: {invented}"


def test_json_doc_names_every_key_of_eval_json_and_no_other(
    mini, capsys, tiny_cross_encoder, monkeypatch
):
    explain_doc = documented("ragtui explain QID --json")
    # A live retriever (a plugin with a passage of its own) adds its keys.
    (mini / "doc_plugin.py").write_text(
        "def make():\n    return lambda q, d: [('own-1', 1.0, 'A late book costs 0.25 EUR per day')]\n"
    )
    monkeypatch.syspath_prepend(str(mini))
    plain = _json_of(["eval", "--json", *_args(mini), "--retriever", "own=doc_plugin:make"], capsys)
    extras = _json_of(
        [
            "eval",
            "--json",
            *_args(mini),
            "--metrics",
            "R@3,nDCG@10",
            "--curve",
            "--compare",
            "bm25",
            "hybrid",
            "--explain",
            "m02",
            "--depth",
            "2",
        ],
        capsys,
    )
    reranked = _json_of(
        ["eval", "--json", *_args(mini), "--rerank", str(tiny_cross_encoder), "--explain", "m02"],
        capsys,
    )
    printed = set(key_paths(plain)) | set(key_paths(extras)) | set(key_paths(reranked))
    # The extras must reach every part of the schema, or the check below would pass vacuously.
    assert {("metrics",), ("recall_curve",), ("comparison",), ("explain",)} <= printed
    assert ("retrievers", "hybrid+rerank", "rerank", "latency", "p95_ms") in printed
    assert ("explain", "rerank", "results[]", "first_stage_rank") in printed
    assert ("retrievers", "hybrid", "pool_ceiling") in printed
    assert ("slices", "table", "bm25", "questions") in printed
    # ``explain`` holds the object of ``ragtui explain --json``, documented once in its own section.
    doc = documented("ragtui eval --json") | {("explain", *p) for p in explain_doc}
    assert_documented(printed, doc, "eval --json")


def test_json_doc_names_every_key_of_explain_json_and_no_other(mini, capsys, tiny_cross_encoder):
    printed: set[tuple[str, ...]] = set()
    # At depth 2 each list holds chunks the other lacks (m02 and m05 on the small corpus).
    for qid in ("m02", "m05"):
        printed |= set(
            key_paths(_json_of(["explain", qid, "--json", *_args(mini, "--depth", "2")], capsys))
        )
    rerank = ("--rerank", str(tiny_cross_encoder))
    printed |= set(key_paths(_json_of(["explain", "m02", "--json", *_args(mini, *rerank)], capsys)))
    assert ("rerank", "results[]", "score") in printed
    assert ("only_bm25[]", "hybrid_rank") in printed and ("only_vector[]", "chunk") in printed
    assert_documented(printed, documented("ragtui explain QID --json"), "explain --json")


def test_json_doc_names_every_key_of_diff_json_and_no_other(mini, capsys):
    runs = mini / "runs"
    bm25 = ("--retrievers", "bm25", "--runs-dir", str(runs))
    assert main(["eval", *_args(mini, *bm25), "--save", "a"]) == 0
    assert main(["eval", *_args(mini, *bm25), "--chunk-size", "24", "--save", "b"]) == 0
    capsys.readouterr()
    body = _json_of(["diff", "a", "b", "--json", "--runs-dir", str(runs), *_args(mini)], capsys)
    printed = set(key_paths(body))
    assert ("changes[]", "direction") in printed and ("means_a", "nDCG@3") in printed
    assert body["settings_changed"], "the two runs differ in chunk size"
    assert_documented(printed, documented("ragtui diff A B --json"), "diff --json")


def test_json_doc_names_every_key_of_experiment_json_and_no_other(
    tmp_path, capsys, monkeypatch, tiny_cross_encoder, cache_dir
):
    from ragtui.core.workspace import Workspace
    from tests.unit.test_windows import BREAD, DISTRACTORS, EVIDENCE, TAIL

    # The long chunk of test_windows.py: its evidence lies wholly in the tail (tail questions), a
    # hand grade on a 300-token chunking that is stale at 2000 tokens, and a reranked variant.
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "bakery.md").write_text("# Bakery\n\n" + BREAD * 2 + "\n\n" + TAIL)
    for name, text in DISTRACTORS.items():
        (tmp_path / "corpus" / name).write_text(text)
    (tmp_path / "golden").mkdir()
    question = {"id": "t1", "question": "The lighthouse cat's name?", "evidence": EVIDENCE}
    (tmp_path / "golden" / "questions.jsonl").write_text(json.dumps(question) + "\n")
    (tmp_path / "ragtui.toml").write_text(
        'corpus = "corpus"\ngolden = "golden"\nchunk-size = 2000\n'
        '[variants]\nbaseline = "off"\n[variants.off]\nwindows = "off"\n[variants.max]\n'
        f'[variants.reranked]\nrerank = "{tiny_cross_encoder}"\n'
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAGTUI_CACHE_DIR", str(cache_dir))
    from ragtui.core.settings import Settings

    short = Workspace.load(
        Settings(
            corpus=tmp_path / "corpus",
            golden=tmp_path / "golden",
            chunk_size=300,
            retrievers=("bm25",),
        )
    )
    short.set_grade("t1", "bakery.md#1", 2)
    body = _json_of(["experiment", "--json"], capsys)
    printed = set(key_paths(body))
    assert ("tail", "max", "vector", "RR", "p_value") in printed
    assert ("variants", "reranked", "rerank_latency", "p95_ms") in printed
    assert (
        "variants",
        "max",
        "hand_grades",
        "stale_reasons",
        "chunk not in the chunked corpus",
    ) in printed
    assert ("variants", "off", "settings", "windows") in printed
    assert_documented(printed, documented("ragtui experiment --json"), "experiment --json")


def test_key_paths_and_matching():
    paths = set(key_paths({"a": {"x": 1}, "l": [{"b": 2}, {"c": [1, 2]}], "s": [1]}))
    assert paths == {("a",), ("a", "x"), ("l",), ("l[]", "b"), ("l[]", "c"), ("s",)}
    assert _matches(("a", "<name>"), ("a", "x")) and not _matches(("a", "<name>"), ("a",))
    assert not _matches(("a", "y"), ("a", "x"))


def _parser_words() -> tuple[set[str], set[str]]:
    """Every command (``ragtui labels compact``) and every option flag the parser accepts (help aside)."""
    commands: set[str] = set()
    flags: set[str] = set()

    def walk(parser: argparse.ArgumentParser, prefix: str) -> None:
        for action in parser._actions:
            flags.update(s for s in action.option_strings if s.startswith("--") and s != "--help")
            choices = getattr(action, "choices", None)
            if isinstance(choices, dict):
                for name, sub in choices.items():
                    commands.add(f"{prefix} {name}")
                    walk(sub, f"{prefix} {name}")

    walk(build_parser(), "ragtui")
    return commands, flags


def test_commands_doc_names_every_command_and_option():
    text = (DOCS / "commands.md").read_text(encoding="utf-8")
    commands, flags = _parser_words()
    assert {"ragtui eval", "ragtui labels compact"} <= commands
    assert {"--json", "--chunk-size", "--run", "--no-mouse"} <= flags
    missing = sorted(c for c in commands if f"`{c}" not in text)
    missing += sorted(f for f in flags if f"`{f}" not in text)
    assert not missing, f"docs/commands.md does not mention {missing}"


def anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces made dashes."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_links_in_readme_and_docs_resolve():
    pages = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
    assert len(pages) > 5
    broken = []
    for page in pages:
        for target, fragment in _LINK.findall(page.read_text(encoding="utf-8")):
            if "://" in target or target.startswith("mailto:"):
                continue
            path = page.parent / target
            if not path.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
            elif fragment:
                headings = re.findall(r"^#+ (.*)$", path.read_text(encoding="utf-8"), re.MULTILINE)
                if fragment not in {anchor(h) for h in headings}:
                    broken.append(f"{page.relative_to(ROOT)}: {target}#{fragment}")
    assert not broken, broken
    assert anchor("`ragtui diff A B --json`") == "ragtui-diff-a-b---json"
    assert anchor("What `ragtui check` reports") == "what-ragtui-check-reports"


def test_nothing_points_outside_the_repository():
    # Spelled in pieces so that this file does not match itself.
    outside = re.compile(r"\.\./" + "shared|" + "DESIGN" + r"\.md|parent / \"" + "shared")
    found = []
    for folder in ("ragtui", "tests", "docs", "bench"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix not in {".py", ".md", ".toml", ".tcss"} or "__pycache__" in path.parts:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if outside.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    for name in ("README.md", "pyproject.toml"):
        if outside.search((ROOT / name).read_text(encoding="utf-8")):
            found.append(name)
    assert not found, found


# ---- the examples: every command shown with its output prints that output today -----------------

#: A line of an example that stands for any number of output lines: ``...`` or ``[... text ...]``.
_ELISION = re.compile(r"^(?:\.\.\.|\[\.\.\..*\])$")

#: Where the examples of the project walkthrough say the project and the cache are.
DOC_PROJECT = "/home/ana/water-board"
DOC_CACHE = "/home/ana/.cache/ragtui"


@dataclass(frozen=True)
class Step:
    """One command of an example and the lines the page shows it printing."""

    command: str
    expected: tuple[str, ...]


@dataclass(frozen=True)
class Example:
    """A fenced block of a page that shows commands (``$ ...``) with their output."""

    page: str
    steps: tuple[Step, ...]

    @property
    def key(self) -> tuple[str, str]:
        """The page and the first command: how the lists below name the example."""
        return (self.page, self.steps[0].command)


def _fenced_blocks(text: str) -> Iterator[list[str]]:
    """The bodies of a page's fenced code blocks."""
    body: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("```"):
            if body is None:
                body = []
            else:
                yield body
                body = None
        elif body is not None:
            body.append(line)


def examples() -> list[Example]:
    """Every block of README.md and docs/*.md that starts with ``$ `` and shows some output."""
    found = []
    for path in [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]:
        for body in _fenced_blocks(path.read_text(encoding="utf-8")):
            if not body or not body[0].startswith("$ "):
                continue
            steps: list[Step] = []
            command: str | None = None
            output: list[str] = []
            continued = False
            for line in body:
                if continued:
                    assert command is not None
                    command = command[:-1].rstrip() + " " + line.strip()
                elif line.startswith("$ "):
                    if command is not None:
                        steps.append(Step(command, tuple(output)))
                    command, output = line[2:].strip(), []
                else:
                    output.append(line)
                continued = command is not None and command.endswith("\\") and not output
            assert command is not None
            steps.append(Step(command, tuple(output)))
            if any(step.expected for step in steps):
                found.append(Example(str(path.relative_to(ROOT)), tuple(steps)))
    return found


#: Examples on the bundled data that the tests run and compare, line by line, with the page.
BUNDLED = {
    ("README.md", "ragtui eval"),
    ("docs/compare-and-explain.md", "ragtui eval --by-slice"),
    ("docs/compare-and-explain.md", "ragtui diff before after --limit 10"),
    ("docs/compare-and-explain.md", "ragtui eval --compare before after"),
    ("docs/compare-and-explain.md", "ragtui eval --compare bm25 hybrid"),
    ("docs/compare-and-explain.md", "ragtui explain q43"),
    (
        "docs/compare-and-explain.md",
        'ragtui eval --metrics "R@3,RR@10,nDCG@10,nDCG_exp@10,Success@1,AP"',
    ),
    ("docs/experiments.md", "ragtui check"),
    ("docs/labelling.md", "ragtui eval --judged"),
    ("docs/labelling.md", "ragtui check"),
    ("docs/why.md", "ragtui why"),
    ("docs/why.md", "ragtui why --by-slice"),
    ("docs/why.md", "ragtui why --windows off"),
}
#: The walkthrough of docs/project.md (and the ``ragtui config`` of docs/config.md), run in order in
#: a new project, comparing stdout and stderr.
PROJECT = {
    ("docs/project.md", "ragtui init water-board --handbook"),
    ("docs/project.md", "cd water-board"),
    (
        "docs/project.md",
        'ragtui add-question --question "How long are the diesels at PS-08 test-run each month?" --evidence "are test-run under load for 30 minutes on the first Monday of every month" --slice number',
    ),
    ("docs/project.md", "ragtui eval --save baseline"),
    ("docs/project.md", "ragtui report --format markdown --output report.md --baseline baseline"),
    ("docs/project.md", "ragtui eval --fail-under recall@3=0.80 --fail-under nDCG@3=0.80"),
    ("docs/config.md", "ragtui config --depth 20"),
}
#: Examples with output that no test runs, and why.
NOT_RUN = {
    ("docs/experiments.md", "ragtui eval --rerank ./models/ms-marco-MiniLM-L-6-v2"): (
        "a real cross-encoder that is not on disk; M, P and A stand for its figures"
    ),
    ("docs/experiments.md", "ragtui experiment"): (
        "six variants: embedding the 128- and 256-token chunkings takes too long for the suite"
    ),
    (
        "docs/labelling.md",
        'ragtui add-question --question "How often do dike wardens walk the peat embankments in a drought?" --evidence "dike wardens walk the peat embankments once a week" --slice lookup',
    ): ("writes the user's copy of the bundled golden set, in the reader's home folder"),
    (
        "docs/serve.md",
        "ragtui serve",
    ): "serves until stopped (tests/system/test_serve.py starts it)",
    ("docs/serve.md", "ragtui serve --annotators team.toml"): (
        "serves until stopped (tests/system/test_serve_annotators.py starts it and reads the line)"
    ),
    ("docs/why.md", "ragtui why --beir tests/data/cranfield --retrievers bm25"): (
        "Cranfield, not the bundled data: tests/unit/test_why_many_relevant.py runs it and compares the lines"
    ),
    (
        "docs/retriever-milvus.md",
        "ragtui index --milvus ./hb.db --collection handbook --chunk-size 256",
    ): (
        "embeds the bundled set at a second chunking; tests/system/test_milvus.py runs the same refusal "
        "on the small corpus and checks the line"
    ),
    ("docs/retrievers.md", "ragtui eval --retriever extra=extra_plugin:make"): (
        "needs the page's plugin on the path; tests/app/test_own_passages.py runs it and checks the lines"
    ),
    (
        "docs/judges.md",
        "ragtui judge --judge sim=similarity --retrievers bm25 --depth 3 --questions q01,q02,q03",
    ): (
        "writes the user's copy of the bundled golden set; tests/system/test_judge_run.py runs it in a "
        "fresh data folder and compares stderr and stdout, timings aside"
    ),
}


def test_every_example_with_output_is_run_or_says_why_not():
    keys = [example.key for example in examples()]
    assert len(keys) == len(set(keys)), "two examples start with the same command on one page"
    listed = BUNDLED | PROJECT | set(NOT_RUN)
    unlisted = sorted(set(keys) - listed)
    assert not unlisted, f"examples neither run by a test nor in NOT_RUN: {unlisted}"
    # Every command the lists name is still on its page (else a check would pass vacuously).
    commands = {(e.page, s.command) for e in examples() for s in e.steps}
    gone = sorted((BUNDLED | PROJECT | set(NOT_RUN)) - commands)
    assert not gone, f"examples the lists name that no page shows any more: {gone}"


def matches(expected: list[str], printed: list[str]) -> bool:
    """Whether printed lines are the expected ones, an elision standing for any number of lines."""
    expected = [line.rstrip() for line in expected]
    printed = [line.rstrip() for line in printed]
    memo: dict[tuple[int, int], bool] = {}

    def match(i: int, j: int) -> bool:
        if (i, j) not in memo:
            if i == len(expected):
                memo[(i, j)] = j == len(printed)
            elif _ELISION.match(expected[i].strip()):
                memo[(i, j)] = any(match(i + 1, m) for m in range(j, len(printed) + 1))
            else:
                memo[(i, j)] = (
                    j < len(printed) and expected[i] == printed[j] and match(i + 1, j + 1)
                )
        return memo[(i, j)]

    return match(0, 0)


def test_matches_elides_only_where_the_page_does():
    assert matches(["a", "...", "d"], ["a", "b", "c", "d"])
    assert matches(["a", "  [...]", "d"], ["a", "d"])
    assert matches(["[... the metric table ...]", "x"], ["t", "t", "x"])
    assert not matches(["a", "d"], ["a", "b", "d"])
    assert not matches(["a", "... 15 more"], ["a", "b"])
    assert not matches(["0.809"], ["0.810"])


def _assert_prints(example: Example, step: Step, printed: str) -> None:
    lines = printed.rstrip("\n").split("\n") if printed.strip() else []
    if not matches(list(step.expected), lines):
        diff = "\n".join(
            difflib.unified_diff(
                [line.rstrip() for line in step.expected],
                [line.rstrip() for line in lines],
                f"{example.page}: $ {step.command}",
                "printed today",
                lineterm="",
            )
        )
        pytest.fail(
            f"{example.page}: `{step.command}` no longer prints what the page shows:\n{diff}"
        )


def _run(command: str, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    argv = shlex.split(command)
    assert argv[0] == "ragtui", command
    code = main([*argv[1:], *extra])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def bundled_copy(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path) -> Path:
    """A folder holding a copy of the bundled golden set as ``golden`` (so that paths print as on
    the pages), with the saved runs of compare-and-explain.md: ``before`` without long-chunk windows
    and ``after`` with them (the embeddings of both are those ``why --windows off`` and every other
    example read, so the runs cost no embedding of their own)."""
    folder = tmp_path_factory.mktemp("bundled-examples")
    shutil.copytree(ROOT / "golden", folder / "golden")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAGTUI_CACHE_DIR", str(cache_dir))
        mp.chdir(folder)
        shown = ("--golden", "golden", "--no-project")
        assert main(["eval", *shown, "--windows", "off", "--save", "before"]) == 0
        assert main(["eval", *shown, "--save", "after"]) == 0
    return folder


def _bundled(key: tuple[str, str]) -> Example:
    return next(e for e in examples() if e.key == key)


@pytest.mark.parametrize("key", sorted(BUNDLED), ids=lambda k: f"{k[0]}: {k[1]}")
def test_bundled_example_prints_what_the_page_shows(key, bundled_copy, capsys, monkeypatch):
    example = _bundled(key)
    assert len(example.steps) == 1, "one command per bundled example"
    step = example.steps[0]
    monkeypatch.chdir(bundled_copy)
    capsys.readouterr()
    code, out, err = _run(step.command, capsys, "--golden", "golden", "--no-project")
    assert code in (0, 1), err
    _assert_prints(example, step, out)


def _normalised(text: str, project: Path, cache_dir: Path) -> str:
    """Output with this run's paths spelled as the pages spell them."""
    return text.replace(str(project), DOC_PROJECT).replace(str(cache_dir), DOC_CACHE)


def test_project_walkthrough_prints_what_the_pages_show(tmp_path, capsys, monkeypatch, cache_dir):
    """docs/project.md from `ragtui init` to the CI gate, every step in order in a new folder, then
    docs/config.md's `ragtui config` in that project (stdout, then stderr, as the pages show them)."""
    walk = [e for e in examples() if e.page == "docs/project.md"]
    walk += [e for e in examples() if e.key == ("docs/config.md", "ragtui config --depth 20")]
    # The pages show a warm embedding cache: the steps up to the first that embeds (the question
    # added) run first in a folder of their own, their output unread, so that the test embeds
    # nothing the pages do not show when it runs alone (the file's earlier tests warm the cache).
    (tmp_path / "warm").mkdir()
    monkeypatch.chdir(tmp_path / "warm")
    for step in (step for example in walk for step in example.steps):
        if step.command.startswith("cd "):
            os.chdir(step.command[3:])
        elif step.command != "echo $?":
            _run(step.command, capsys)
        if step.command.startswith("ragtui add-question"):
            break
    monkeypatch.chdir(tmp_path)
    project = tmp_path / "water-board"
    ran = 0
    code = 0
    for example in walk:
        for step in example.steps:
            if step.command.startswith("cd "):
                os.chdir(step.command[3:])
                continue
            if step.command == "echo $?":
                printed = f"{code}\n"
            else:
                code, out, err = _run(step.command, capsys)
                assert code in (0, 1), err
                printed = _normalised(out + err, project.resolve(), cache_dir)
            expected = step.expected
            if example.page == "docs/config.md":
                # The value column is as wide as the longest path, which is this run's temporary one.
                printed = re.sub(r"  +", "  ", printed)
                expected = tuple(re.sub(r"  +", "  ", line) for line in expected)
            _assert_prints(example, Step(step.command, expected), printed)
            ran += 1
    assert ran >= 9


_JQ = re.compile(r"ragtui (eval|experiment) --json \| jq '([^']+)'")


def test_jq_examples_read_documented_keys():
    found = []
    for path in [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]:
        for command, expression in _JQ.findall(path.read_text(encoding="utf-8")):
            names = re.findall(r"\.([A-Za-z_]\w*)(\[\])?", expression)
            keys = tuple(name + brackets for name, brackets in names)
            doc = documented(f"ragtui {command} --json")
            assert any(_matches(d, keys) for d in doc), f"{path.name}: jq '{expression}'"
            found.append(keys)
    assert ("retrievers", "hybrid", "ndcg") in found and ("rows[]", "significant") in found
