"""``ragtui serve --annotators FILE`` (issue 33, item 5): one token per person, each tab's grades
recorded under that person's name, in their own queue; sessions per person counted on the server's
stderr; a bad file is one line naming the file, the line and the problem; an unknown token is
refused; no token reaches an app process or the server's output.

Real servers and real websockets (keys sent as the page sends them), as in test_serve_spare.py."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pyte
import pytest

from ragtui.cli import main
from ragtui.cli.serve import Guard, load_annotators
from ragtui.core.errors import InputError
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace
from tests.conftest import settings_of
from tests.system.test_serve import Served, _connect, _project, passes, request
from tests.system.test_serve_spare import _screen_of, environment  # noqa: F401  (a fixture)

ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-fedcba9876543210xyz"


def _file(tmp_path: Path, text: str, mode: int = 0o600) -> Path:
    path = tmp_path / "team.toml"
    path.write_text(text)
    path.chmod(mode)
    return path


def test_the_file_gives_each_token_its_person(tmp_path):
    people = load_annotators(_file(tmp_path, f'alice = "{ALICE}"\nbob = "{BOB}"\n'))
    assert people == {ALICE: "alice", BOB: "bob"}
    table = load_annotators(_file(tmp_path, f'[annotators]\nalice = "{ALICE}"\n'))
    assert table == {ALICE: "alice"}
    guard = Guard.build("127.0.0.1", 8000, None, None, people)
    assert guard.person(ALICE) == "alice" and guard.person(BOB) == "bob"
    assert guard.token_problem(ALICE) is None
    # Another token, a token's prefix, none: refused.
    assert "no annotator has this token" in str(guard.token_problem("x" * 30))
    assert guard.person(ALICE[:-1]) is None and guard.token_problem(ALICE[:-1]) is not None
    assert "your own token" in str(guard.token_problem(None))


@pytest.mark.parametrize(
    ("text", "problem", "line"),
    [
        ('alice = "short"\n', "'alice': the token must be a string of 16 to 256", 1),
        (f'alice = "{ALICE}"\nbob = 5\n', "'bob': the token must be a string", 2),
        (f'alice = "{ALICE}"\nbob = "{ALICE}"\n', "'bob': the same token as 'alice'", 2),
        (f'"model:llm" = "{ALICE}"\n', "names starting with model: are model judges'", 1),
        (f'"a\\u001b[31mb" = "{ALICE}"\n', "a name is 1 to 100 visible characters", 1),
        ("", "names no annotator", None),
        ('alice = "unclosed\n', "invalid TOML", 1),
    ],
)
def test_a_bad_file_is_one_line_naming_the_file_and_line(tmp_path, text, problem, line):
    path = _file(tmp_path, text)
    with pytest.raises(InputError) as caught:
        load_annotators(path)
    assert problem in caught.value.message
    assert caught.value.line == line
    assert "\x1b" not in str(caught.value)


def test_a_file_others_may_write_or_a_fifo_is_refused(tmp_path, capsys):
    path = _file(tmp_path, f'alice = "{ALICE}"\n', mode=0o666)
    assert main(["serve", "--annotators", str(path)]) == 2
    assert "writable by" in capsys.readouterr().err
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    assert main(["serve", "--annotators", str(fifo)]) == 2  # refused at once, not a hang
    assert "FIFO" in capsys.readouterr().err
    good = _file(tmp_path, f'alice = "{ALICE}"\n')
    assert main(["serve", "--annotators", str(good), "--no-token"]) == 2
    assert "cannot go with --no-token" in capsys.readouterr().err


def test_two_people_grade_the_same_pair_in_two_tabs(tmp_path, environment):  # noqa: F811
    """Alice and bob open the app with their own tokens and give the first pair of the judging view
    different grades: the journal holds both names, the pair is disputed once, the server counted
    each person's sessions, and no token is in an app's command line or the server's output."""
    _project(tmp_path)
    team = _file(tmp_path, f'alice = "{ALICE}"\nbob = "{BOB}"\n')
    server = Served(tmp_path, environment, "--annotators", str(team), "--max-sessions", "3")
    try:
        assert "for alice, bob" in server.output() and server.token is None
        assert not passes(server, "/ws/" + "x" * 30), "an unknown token got past"
        assert passes(server, "/ws/" + ALICE)
        # Each person's page opens its websocket with that person's token, and only theirs.
        for mine, theirs in ((ALICE, BOB), (BOB, ALICE)):
            status, _, page = request(server, f"/?token={mine}")
            assert status == 200 and f"/ws/{mine}" in page and theirs not in page
        assert request(server, "/")[0] == 403 and request(server, "/?token=" + "y" * 20)[0] == 403

        async def grade(token: str, key: str) -> str:
            session, ws = await _connect(server, path=f"/ws/{token}?width=100&height=30")
            # One emulator for the socket: a later frame rewrites only the rows that changed.
            screen = pyte.Screen(100, 30)
            try:
                await _screen_of(ws, (100, 30), "m01", screen=screen)
                for pid in server.apps():
                    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
                    assert ALICE.encode() not in cmdline and BOB.encode() not in cmdline
                await ws.send_str(json.dumps(["stdin", "j"]))
                await _screen_of(ws, (100, 30), "pair 1 of", screen=screen)
                await ws.send_str(json.dumps(["stdin", key]))
                return await _screen_of(ws, (100, 30), "saved:", screen=screen)
            finally:
                await ws.close()
                await session.close()

        async def both() -> tuple[str, str]:
            return await grade(ALICE, "2"), await grade(BOB, "0")

        alice_screen, bob_screen = asyncio.run(both())
        assert "by alice" in alice_screen
        assert "by bob" in bob_screen
    finally:
        server.stop()
    output = server.output()
    assert "alice opened a session (open: alice 1)" in output
    assert "bob opened a session (open: " in output and "bob closed a session" in output
    assert ALICE not in output and BOB not in output
    assert "Traceback" not in output
    lines = [json.loads(x) for x in (tmp_path / "golden" / "labels.jsonl").read_text().splitlines()]
    graded = [(line["annotator"], line["question"], line["chunk"], line["grade"]) for line in lines]
    assert [(a, g) for a, _, _, g in graded] == [("alice", 2), ("bob", 0)]
    assert graded[0][1:3] == graded[1][1:3], "both graded the pair on screen: the same one"
    settings: Settings = settings_of(tmp_path, annotator="carol", retrievers=("bm25",))
    ws = Workspace.load(settings)
    assert [(q, c) for q, c in ws.grades.disputed_pairs()] == [graded[0][1:3]]
    # Bob never saw alice's grade before his own (hidden in his queue until he graded).
    assert graded[1][0] == "bob" and lines[1].get("independent") is True
