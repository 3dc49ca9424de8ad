"""The reference documentation stays true: docs/json.md names exactly the keys the commands print,
docs/commands.md names every command and option, links resolve, and nothing points outside the
repository."""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragtui.cli import main
from ragtui.cli.main import build_parser
from tests.conftest import MINI_CHUNK_SIZE, ROOT

DOCS = ROOT / "docs"
JSON_DOC = DOCS / "json.md"

#: A table row whose first cell is a key path: | `retrievers.<retriever>.recall` | ...
_ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|", re.MULTILINE)
#: A Markdown link to a relative target: [text](target) or [text](target#anchor).
_LINK = re.compile(r"\]\(([^)#\s]+)(?:#([^)\s]*))?\)")


@pytest.fixture(autouse=True)
def _cache_env(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGTUI_CACHE_DIR", str(cache_dir))


def _args(mini: Path, *extra: str) -> list[str]:
    return [
        "--corpus",
        str(mini / "corpus"),
        "--golden",
        str(mini / "golden"),
        "--chunk-size",
        str(MINI_CHUNK_SIZE),
        *extra,
    ]


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


def test_json_doc_names_every_key_of_eval_json_and_no_other(mini, capsys, tiny_cross_encoder):
    explain_doc = documented("ragtui explain QID --json")
    plain = _json_of(["eval", "--json", *_args(mini)], capsys)
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
    from tests.test_windows import BREAD, DISTRACTORS, EVIDENCE, TAIL

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
