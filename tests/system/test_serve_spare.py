"""``ragtui serve``'s spare app: a tab opens on an app started before it (docs/serve.md).

Real servers (``ragtui serve`` in a project folder, as a user starts it) and real websockets: the
app a socket gets is the spare that was running before it connected (that process ends with the
socket), its kept screen is replayed first, a new spare is started for the next tab, the spare
counts toward ``--max-sessions``, a spare whose inputs changed is not used (the tab gets an app
started for it, which shows the new question), a new label in the journal does not make it stale,
and stopping the server ends the spare.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import aiohttp
import pyte
import pytest

from ragtui.cli.serve import QUIT_GRACE, TERM_GRACE, TOKEN_ENV, input_stamp
from tests.conftest import ROOT
from tests.system.test_serve import Served, _alive, _connect, _project, _wait_until

ENDED = QUIT_GRACE + TERM_GRACE + 10


def _one_spare(server: Served) -> int:
    """The spare app, once the server has started it (and it alone)."""
    _wait_until(lambda: len(server.apps()) == 1, 30, "the spare app did not start")
    (pid,) = server.apps()
    return pid


async def _screen_of(
    ws: Any,
    size: tuple[int, int],
    until: str,
    seconds: float = 60,
    screen: pyte.Screen | None = None,
) -> str:
    """The screen a socket shows (its bytes fed to a VT100 emulator) once it holds ``until``; with
    ``screen``, the bytes are fed to that emulator, which holds what the socket sent before (else
    a new one holds only what comes now: the rows Textual writes again)."""
    screen = screen if screen is not None else pyte.Screen(*size)
    stream = pyte.ByteStream(screen)
    received = b""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            message = await ws.receive(timeout=max(0.1, deadline - time.monotonic()))
        except TimeoutError:
            break
        if message.type != aiohttp.WSMsgType.BINARY:
            continue
        received += message.data
        stream.feed(message.data)
        if until in "\n".join(screen.display):
            return "\n".join(screen.display)
    raise AssertionError(f"{until!r} never shown; the screen:\n" + "\n".join(screen.display))


async def _open(server: Served, width: int = 100, height: int = 30) -> tuple[Any, Any]:
    return await _connect(server, path=f"/ws/{server.token}?width={width}&height={height}")


@pytest.fixture
def environment(tmp_path: Path, cache_dir: Path) -> dict[str, str]:
    """The server's environment: the tests' cache, no network, a data home of its own."""
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "RAGTUI_CACHE_DIR": str(cache_dir),
        "HF_HUB_OFFLINE": "1",
        "TEXTUAL_ANIMATIONS": "none",
        "XDG_DATA_HOME": str(tmp_path / "xdg"),
    }
    env.pop(TOKEN_ENV, None)
    return env


@pytest.fixture
def project(tmp_path: Path) -> Path:
    _project(tmp_path)
    return tmp_path


def test_a_tab_opens_on_the_spare_and_a_new_spare_waits_for_the_next(project, environment):
    server = Served(project, environment, "--max-sessions", "2")
    try:
        spare = _one_spare(server)

        async def scenario() -> None:
            opened: list[tuple[Any, Any]] = []
            try:
                first = await _open(server)
                opened.append(first)
                # The first bytes are the spare's kept screen: the terminal set-up it wrote first.
                message = await first[1].receive(timeout=60)
                assert message.type == aiohttp.WSMsgType.BINARY
                assert message.data.startswith(b"\x1b[?1049h"), message.data[:40]
                await _screen_of(first[1], (100, 30), "m01")
                # A new spare for the next tab: two app processes, the first serving the socket.
                _wait_until(lambda: len(server.apps()) == 2, 30, "no new spare")
                (second_spare,) = server.apps() - {spare}
                # The next socket takes that one; none is started after it (2 sessions, the most).
                second = await _open(server)
                opened.append(second)
                await _screen_of(second[1], (100, 30), "m01")
                await asyncio.sleep(1)
                assert server.apps() == {spare, second_spare}
                with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                    await _open(server)
                assert refused.value.status == 503
                # The first socket closes: its app, the first spare, ends; a new spare comes.
                await first[1].close()
                started = time.monotonic()
                while _alive(spare):
                    assert time.monotonic() - started < ENDED, "the app outlived its socket"
                    await asyncio.sleep(0.1)
                assert _alive(second_spare)
            finally:
                for session, ws in opened:
                    await ws.close()
                    await session.close()

        asyncio.run(scenario())
        _wait_until(lambda: len(server.apps()) == 1, ENDED, "the apps did not end")
        (last,) = server.apps()
        assert last not in (spare,)
        # Stopping the server ends the spare too (let finish its first screen, however young).
        assert server.stop() == 0
        assert not _alive(last)
        assert "Traceback" not in server.output()
    finally:
        server.stop()


def test_a_spare_whose_questions_changed_is_not_used_and_a_label_does_not_matter(
    project, environment
):
    server = Served(project, environment)
    try:
        spare = _one_spare(server)
        time.sleep(1)
        # Another session's label: every app follows the journal, so the spare is still good.
        question = json.loads((project / "golden" / "questions.jsonl").read_text().splitlines()[0])
        label = {"question": question["id"], "chunk": "x#0", "grade": 1, "annotator": "other"}
        (project / "golden" / "labels.jsonl").write_text(json.dumps(label) + "\n")

        async def label_changed() -> None:
            session, ws = await _open(server)
            try:
                await _screen_of(ws, (100, 30), "m01")
                # The spare serves the socket: still running while it is open (a stale one is
                # ended at once).
                await asyncio.sleep(QUIT_GRACE + 0.5)
                assert spare in server.apps()
            finally:
                await ws.close()
                await session.close()

        asyncio.run(label_changed())
        _wait_until(lambda: not _alive(spare), ENDED, "the app outlived its socket")
        next_spare = _one_spare(server)
        time.sleep(1)
        # A question added to the golden set: the spare read the old file, so it is ended and
        # the tab gets an app started for it, which shows the new question.
        with (project / "golden" / "questions.jsonl").open("a") as questions:
            questions.write(
                json.dumps({"id": "q-new", "question": "Who mows the dikes?", "evidence": "mows"})
                + "\n"
            )

        async def questions_changed() -> None:
            session, ws = await _open(server)
            try:
                await _screen_of(ws, (100, 30), "q-new")
                # Ended while the socket is open: it was not the app serving it.
                _wait_until(lambda: not _alive(next_spare), ENDED, "the stale spare was not ended")
            finally:
                await ws.close()
                await session.close()

        asyncio.run(questions_changed())
        assert server.stop() == 0
        assert "Traceback" not in server.output()
    finally:
        server.stop()


def test_the_stamp_follows_the_inputs_but_not_the_label_journal(project, monkeypatch):
    from ragtui.cli.main import build_parser

    monkeypatch.chdir(project)
    args = build_parser().parse_args(["serve"])
    before = input_stamp(args)
    assert before is not None
    (project / "golden" / "labels.jsonl").write_text("{}\n")
    (project / "golden" / ".lock").write_text("")
    assert input_stamp(args) == before
    (project / "corpus" / "new.md").write_text("# New\n\nA new page.\n")
    assert input_stamp(args) != before
    after = input_stamp(args)
    (project / "ragtui.toml").write_text((project / "ragtui.toml").read_text() + "k = 5\n")
    assert input_stamp(args) != after
    # A project file that does not read: no stamp (no spare is used; the app says what is wrong).
    (project / "ragtui.toml").write_text("k = [\n")
    assert input_stamp(args) is None
