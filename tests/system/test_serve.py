"""``ragtui serve`` without a browser: who may use it (Host, Origin, token), how many app processes it
runs and that each ends with its socket, against real servers started as a user starts them (the
browser test is test_serve_browser.py)."""

from __future__ import annotations

import asyncio
import base64
import http.client
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import pytest

from ragtui.cli.main import build_parser, settings_from
from ragtui.cli.serve import (
    QUIT_GRACE,
    TERM_GRACE,
    TOKEN_ENV,
    Guard,
    app_argv,
    is_loopback,
    server_token,
)
from tests.conftest import MINI, MINI_CHUNK_SIZE, ROOT

pytest.importorskip("textual_serve")
aiohttp = pytest.importorskip("aiohttp")
WSMsgType = aiohttp.WSMsgType

# ---- the rules, without a server ----------------------------------------------------------------


def test_loopback_hosts():
    for host in ("127.0.0.1", "127.1.2.3", "localhost", "::1", "[::1]"):
        assert is_loopback(host), host
    for host in ("0.0.0.0", "::", "192.168.1.5", "example.org"):
        assert not is_loopback(host), host


def test_the_app_command_gives_the_app_the_same_settings(tmp_path):
    argv = [
        "--k",
        "5",
        "--retrievers",
        "bm25,hybrid",
        "--run",
        f"mine={tmp_path / 'my run.trec'}",
        "--max-file-mb",
        "2.5",
        "serve",
        "--corpus",
        str(tmp_path / "docs"),
        "--no-project",
        "--port",
        "9000",
        "--max-sessions",
        "5",
        "--no-token",
    ]
    args = build_parser().parse_args(argv)
    command = app_argv(args)
    assert command[:3] == [sys.executable, "-m", "ragtui"]
    for flag in ("serve", "--port", "--max-sessions", "--no-token", "--token"):
        assert flag not in command
    # The app's own parse of the command gives the settings serve was given.
    app_args = build_parser().parse_args(command[3:])
    assert app_args.command is None
    assert settings_from(app_args) == settings_from(args)
    assert settings_from(app_args).runs == (("mine", tmp_path / "my run.trec"),)


def test_the_guard_knows_this_servers_names_only():
    guard = Guard.build("127.0.0.1", 8000, None, "t" * 20)
    for host in ("127.0.0.1:8000", "localhost:8000", "LOCALHOST:8000", "[::1]:8000"):
        assert guard.host_problem(host) is None, host
    for host in (
        "evil.example:8000",  # DNS rebinding: the attacker's name, resolving to 127.0.0.1
        "127.0.0.1:8001",
        "127.0.0.1",  # port 80
        "localhost.:8000",
        "127.0.0.1:8000@evil.example",
        "evil.example#@127.0.0.1:8000",
        "127.0.0.1:99999",
        "[::1",
        "",
        None,
    ):
        assert guard.host_problem(host) is not None, host
    for origin in (None, "http://127.0.0.1:8000", "http://localhost:8000", "http://[::1]:8000"):
        assert guard.origin_problem(origin) is None, origin
    for origin in (
        "http://127.0.0.1:9999",  # another local port: another origin
        "http://evil.example:8000",
        "null",  # a sandboxed frame or a file:// page
        "file://",
        "http://127.0.0.1:8000.evil.example",
        "ftp://127.0.0.1:8000",
    ):
        problem = guard.origin_problem(origin)
        assert problem is not None and "may not use this server" in problem, origin
    # Behind a proxy: the public name too, on its own port (the scheme's default may be left out).
    proxied = Guard.build("127.0.0.1", 8000, "https://ragtui.example/team/", None)
    assert proxied.host_problem("ragtui.example") is None
    assert proxied.host_problem("ragtui.example:443") is None
    assert proxied.host_problem("ragtui.example:8443") is not None
    assert proxied.origin_problem("https://ragtui.example") is None
    assert proxied.origin_problem("https://ragtui.example:443") is None
    assert proxied.origin_problem("https://other.example") is not None
    assert proxied.host_problem("127.0.0.1:8000") is None
    # A wildcard bind is not a name browsers may use by itself: another host name is refused.
    wildcard = Guard.build("0.0.0.0", 8000, None, None)
    assert wildcard.host_problem("192.168.1.5:8000") is not None
    assert wildcard.host_problem("localhost:8000") is None


def test_the_token_is_compared_whole():
    guard = Guard.build("127.0.0.1", 8000, None, "s3cret-token-0123456789")
    assert guard.token_problem("s3cret-token-0123456789") is None
    for wrong in ("s3cret-token-012345678", "s3cret-token-01234567890", "x" * 23, "é" * 23):
        assert "wrong token" in (guard.token_problem(wrong) or ""), wrong
    assert "needs the token" in (guard.token_problem(None) or "")
    assert Guard.build("127.0.0.1", 8000, None, None).token_problem(None) is None


def test_the_token_is_random_or_from_the_environment(monkeypatch):
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    first, from_env = server_token(True)
    second, _ = server_token(True)
    assert first and second and first != second and not from_env and len(first) >= 40
    assert server_token(False) == (None, False)
    monkeypatch.setenv(TOKEN_ENV, "a-token-of-my-own-1234")
    assert server_token(True) == ("a-token-of-my-own-1234", True)
    assert server_token(False) == (None, False)  # --no-token says so on the command line


def test_a_bad_token_in_the_environment_and_bad_flags_are_usage_errors(monkeypatch, capsys):
    from ragtui.cli import main

    monkeypatch.setenv(TOKEN_ENV, "short")
    assert main(["serve", "--no-project"]) == 2
    assert "RAGTUI_SERVE_TOKEN: a token is 16 to 256" in capsys.readouterr().err
    monkeypatch.delenv(TOKEN_ENV)
    assert main(["serve", "--public-url", "ragtui.example", "--no-project"]) == 2
    assert "--public-url: 'ragtui.example' is not an http:// or https:// address" in (
        capsys.readouterr().err
    )
    assert main(["serve", "--port", "70000", "--no-project"]) == 2
    assert "70000 is not a port" in capsys.readouterr().err
    for argv in (["serve", "--port", "0"], ["serve", "--max-sessions", "0"]):
        with pytest.raises(SystemExit):
            main(argv)


# ---- real servers -------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Served:
    """``ragtui serve`` started as a user starts it, in a project folder; its printed address."""

    def __init__(self, folder: Path, env: dict[str, str], *flags: str) -> None:
        self.folder = folder
        self.port = _free_port()
        self.log_path = folder / f"serve-{self.port}.log"
        self.log = self.log_path.open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "ragtui", "serve", "--port", str(self.port), *flags],
            cwd=folder,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while True:
            match = re.search(r"serving the app on (\S+)", self.output())
            if match and _answers(self.port):
                self.url = match.group(1)
                break
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"ragtui serve did not start: {self.output()}")
            time.sleep(0.1)
        token = re.search(r"\?token=([A-Za-z0-9_-]+)", self.url)
        self.token = token.group(1) if token else None
        self.host = f"127.0.0.1:{self.port}"
        self.origin = f"http://{self.host}"

    def output(self) -> str:
        if not self.log.closed:
            self.log.flush()
        return self.log_path.read_text()

    def apps(self) -> set[int]:
        """The app processes the server runs now (its children, zombies not counted)."""
        return live_children(self.process.pid)

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()
        return self.process.returncode


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def live_children(pid: int) -> set[int]:
    """The live child processes of ``pid`` (zombies, ended but not yet reaped, not counted)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            found.add(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def _wait_until(check: Any, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {seconds} s")
        time.sleep(0.1)


def request(
    served: Served,
    path: str,
    *,
    host: str | None = None,
    origin: str | None = None,
    websocket: bool = False,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], str]:
    """One raw request (any Host and Origin, a websocket handshake if asked): status, headers, body.
    A websocket accepted (101) is closed at once, which ends the app process it started."""
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=20)
    conn.putrequest("GET", path, skip_host=True, skip_accept_encoding=True)
    conn.putheader("Host", host if host is not None else served.host)
    if origin is not None:
        conn.putheader("Origin", origin)
    if websocket:
        conn.putheader("Upgrade", "websocket")
        conn.putheader("Connection", "Upgrade")
        conn.putheader("Sec-WebSocket-Version", "13")
        conn.putheader("Sec-WebSocket-Key", base64.b64encode(os.urandom(16)).decode())
    for name, value in (headers or {}).items():
        conn.putheader(name, value)
    conn.endheaders()
    response = conn.getresponse()
    status, head = response.status, {k.lower(): v for k, v in response.getheaders()}
    body = "" if status == 101 else response.read().decode("utf-8", "replace")
    conn.close()
    return status, head, body


def passes(served: Served, path: str, **how: Any) -> bool:
    """Whether a request for the websocket gets past the checks (Host, Origin, token): sent as a
    plain GET, it then meets "not a websocket handshake" (400) instead of a refusal (403)."""
    status, _, body = request(served, path, **how)
    assert status in (400, 403), (status, body)
    return status == 400


def _project(folder: Path) -> None:
    shutil.copytree(MINI / "corpus", folder / "corpus")
    shutil.copytree(MINI / "golden", folder / "golden")
    (folder / "golden" / "labels.jsonl").unlink(missing_ok=True)
    (folder / "ragtui.toml").write_text(
        f'corpus = "corpus"\ngolden = "golden"\nchunk-size = {MINI_CHUNK_SIZE}\n'
        'retrievers = "bm25"\n'
    )


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path) -> dict[str, str]:
    environment = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "RAGTUI_CACHE_DIR": str(cache_dir),
        "HF_HUB_OFFLINE": "1",
        "TEXTUAL_ANIMATIONS": "none",
        "XDG_DATA_HOME": str(tmp_path_factory.mktemp("xdg")),
    }
    environment.pop(TOKEN_ENV, None)
    return environment


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, env: dict[str, str]) -> Iterator[Served]:
    """The default server (a random token, localhost only), with room for two app sessions, and no
    spare app (each socket starts its own, so the processes counted are the sessions': the spare
    is tested in tests/system/test_serve_spare.py)."""
    folder = tmp_path_factory.mktemp("served")
    _project(folder)
    server = Served(folder, env, "--max-sessions", "2", "--no-spare")
    try:
        yield server
    finally:
        assert server.stop() == 0
        # However it was used, the server never printed a traceback.
        assert "Traceback" not in server.output(), server.output()


def test_the_printed_address_carries_a_token_and_the_page_needs_it(served):
    assert served.token and len(served.token) >= 40
    assert served.url == f"http://127.0.0.1:{served.port}/?token={served.token}"
    status, head, body = request(served, "/")
    assert status == 403
    assert body == (
        "ragtui serve refused this: this server needs the token printed by `ragtui serve`: "
        "open the address it printed, ending in ?token=...\n"
    )
    assert head["content-type"].startswith("text/plain")
    status, _, body = request(served, "/?token=" + served.token[:-1] + "x")
    assert (status, body) == (
        403,
        "ragtui serve refused this: wrong token: open the address `ragtui serve` printed\n",
    )
    status, head, body = request(served, "/?token=" + served.token)
    assert status == 200
    # The page gives its websocket the token; it may not be framed and sends no Referer.
    assert f'data-session-websocket-url="ws://127.0.0.1:{served.port}/ws/{served.token}"' in body
    assert head["x-frame-options"] == "DENY" and head["referrer-policy"] == "no-referrer"
    assert "frame-ancestors 'none'" in head["content-security-policy"]
    # The page's own files are served without the token, to this server's names only.
    assert request(served, "/static/js/textual.js")[0] == 200
    assert request(served, "/static/js/textual.js", host="evil.example")[0] == 403
    # The server says what it refused, on one line each, never the token.
    out = served.output()
    assert "ragtui serve: refused the page: this server needs the token" in out
    assert "ragtui serve: refused the page: wrong token" in out
    assert out.count(served.token) == 1  # the printed address only (no access log)


def test_the_websocket_needs_the_token(served):
    ws = f"/ws/{served.token}"
    for path in ("/ws", "/ws/" + "x" * 43, "/ws?token=nope"):
        status, _, body = request(served, path, origin=served.origin, websocket=True)
        assert status == 403, path
        assert "token" in body, path
    # Not a handshake: one plain line, not textual-serve's traceback. It also shows the request got
    # past the checks without starting an app, which the tests below use (a 101 starts one).
    assert request(served, ws) == (
        400,
        ANY,
        "ragtui serve refused this: not a websocket handshake\n",
    )
    assert passes(served, ws, origin=served.origin)
    assert passes(served, f"/ws?token={served.token}")
    assert passes(served, "/ws", headers={"Authorization": f"token {served.token}"})
    assert passes(served, "/ws", headers={"Authorization": f"Bearer {served.token}"})
    assert not passes(served, "/ws", headers={"Authorization": f"token {served.token}x"})
    # A real handshake with the token starts the app (test_sessions… follows it to its end).
    assert request(served, ws, origin=served.origin, websocket=True)[0] == 101
    _wait_until(served.apps, 20, "the app did not start")
    _wait_until(lambda: served.apps() == set(), QUIT_GRACE + TERM_GRACE + 5, "the app did not end")


def test_a_page_from_another_origin_is_refused_page_and_websocket(served):
    ws, page = f"/ws/{served.token}", f"/?token={served.token}"
    for origin in ("http://127.0.0.1:9999", "http://localhost:1", "null", "http://evil.example"):
        for path, websocket in ((ws, True), (page, False)):
            status, _, body = request(served, path, origin=origin, websocket=websocket)
            assert status == 403, (origin, path)
            assert "may not use this server" in body, (origin, path)
    # The server's own names are pages of its own.
    for origin in (served.origin, f"http://localhost:{served.port}", f"http://[::1]:{served.port}"):
        assert passes(served, ws, origin=origin), origin
        assert request(served, page, origin=origin)[0] == 200, origin
    assert "ragtui serve: refused a websocket: a page from 'http://127.0.0.1:9999'" in (
        served.output()
    )


def test_a_dns_rebinding_host_is_refused(served):
    ws, page = f"/ws/{served.token}", f"/?token={served.token}"
    # The attacker's page at http://rebind.example:PORT, its name now resolving to 127.0.0.1: its
    # requests name its own host (and origin), whatever they carry.
    attacker = f"rebind.example:{served.port}"
    for path, websocket in ((ws, True), (page, False)):
        status, _, body = request(
            served, path, host=attacker, origin=f"http://{attacker}", websocket=websocket
        )
        assert status == 403
        assert f"the Host header '{attacker}' is not this server's address" in body
        assert request(served, path, host=attacker, websocket=websocket)[0] == 403
    assert passes(served, ws, host=f"localhost:{served.port}")
    assert passes(served, ws, host=f"[::1]:{served.port}")


def _connect(served: Served, *, path: str | None = None) -> Any:
    async def connect() -> Any:
        session = aiohttp.ClientSession()
        try:
            socket_ = await session.ws_connect(
                f"http://127.0.0.1:{served.port}{path or '/ws/' + str(served.token)}",
                origin=served.origin,
                heartbeat=None,
            )
        except Exception:
            await session.close()
            raise
        return session, socket_

    return connect()


def test_sessions_are_capped_and_each_app_ends_with_its_socket(served):
    async def scenario() -> None:
        opened = [await _connect(served), await _connect(served)]
        # Each socket runs its app: the app's first screen bytes arrive.
        for _, ws in opened:
            message = await ws.receive(timeout=60)
            assert message.type == aiohttp.WSMsgType.BINARY
        apps = served.apps()
        assert len(apps) == 2
        # The third is refused, socket and page alike, with the reason; no third process started.
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await _connect(served)
        assert refused.value.status == 503
        status, _, body = request(served, f"/?token={served.token}")
        assert status == 503
        assert "2 app sessions are open, the most --max-sessions allows" in body
        assert served.apps() == apps
        # Closing the sockets ends the apps (and frees the places).
        for session, ws in opened:
            await ws.close()
            await session.close()
        started = time.monotonic()
        while any(_alive(pid) for pid in apps):
            assert time.monotonic() - started < QUIT_GRACE + TERM_GRACE + 5, (
                "an app outlived its socket"
            )
            await asyncio.sleep(0.1)
        assert served.apps() == set()
        again = await _connect(served)
        await again[1].close()
        await again[0].close()

    asyncio.run(scenario())
    _wait_until(lambda: served.apps() == set(), QUIT_GRACE + TERM_GRACE + 5, "the app did not end")
    assert "ragtui serve: refused a websocket: 2 app sessions are open" in served.output()


def test_a_second_server_on_the_port_is_one_line(served, env):
    result = subprocess.run(
        [sys.executable, "-m", "ragtui", "serve", "--port", str(served.port)],
        cwd=served.folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert lines[-1].startswith(f"ragtui: error: cannot listen on 127.0.0.1:{served.port}: ")
    assert "Traceback" not in result.stderr


def test_no_token_beyond_loopback_warns_and_stopping_the_server_ends_its_apps(tmp_path, env):
    _project(tmp_path)
    public = "ragtui.example:1234"
    # --no-token on the command line wins over a token in the environment.
    env = {**env, TOKEN_ENV: "a-token-in-the-environment"}
    server = Served(
        tmp_path,
        env,
        "--host",
        "0.0.0.0",
        "--no-token",
        "--public-url",
        f"http://{public}",
        "--no-spare",
    )
    try:
        out = server.output()
        assert "ragtui: warning: serving on 0.0.0.0:" in out and "beyond this machine" in out
        assert "ragtui: warning: --no-token: every user and program on this machine" in out
        assert server.url == f"http://{public}/" and server.token is None
        # No token needed; the names are still checked (the public one, localhost, not others).
        status, _, body = request(server, "/")
        assert status == 200 and f'"ws://{public}/ws"' in body
        assert request(server, "/", host=public)[0] == 200
        assert request(server, "/", host=f"192.168.1.5:{server.port}")[0] == 403
        assert request(server, "/ws", origin="http://127.0.0.1:9999", websocket=True)[0] == 403

        async def open_one() -> Any:
            session, ws = await _connect(server, path="/ws")
            await ws.receive(timeout=60)
            return session, ws

        loop = asyncio.new_event_loop()
        session, ws = loop.run_until_complete(open_one())
        (app,) = server.apps()
        # The app is not given the server's token.
        assert TOKEN_ENV.encode() not in Path(f"/proc/{app}/environ").read_bytes()
        # ctrl+c or SIGTERM on the server: its apps end with it, and the socket is closed.
        assert server.stop() == 0
        assert not _alive(app)

        async def last_message() -> Any:
            while True:  # the app's last screen bytes, then the close
                message = await ws.receive(timeout=10)
                if message.type != WSMsgType.BINARY:
                    await session.close()
                    return message

        message = loop.run_until_complete(last_message())
        loop.close()
        assert message.type in (WSMsgType.CLOSE, WSMsgType.CLOSED)
        assert "Traceback" not in server.output()
    finally:
        server.stop()


#: The graces the stubborn app gets (shorter than a real app's, to keep the test short).
GRACE = 0.5
STUBBORN_SERVER = textwrap.dedent(
    """
    import sys
    import ragtui.cli.serve
    from ragtui.cli.serve import Guard, RagtuiServer

    ragtui.cli.serve.QUIT_GRACE = ragtui.cli.serve.TERM_GRACE = {grace}
    # An app that ignores SIGTERM (and the quit message) and has started a process of its own.
    app = [sys.executable, "-c", (
        "import signal, subprocess, time\\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\\n"
        "subprocess.Popen(['sleep', '300'])\\n"
        "time.sleep(300)\\n"
    )]
    port = int(sys.argv[1])
    server = RagtuiServer(
        app, host="127.0.0.1", port=port, public_url=None,
        guard=Guard.build("127.0.0.1", port, None, None), max_sessions=1,
    )
    server.serve()
    """
)


def test_an_app_that_ignores_quit_and_sigterm_is_killed_with_what_it_started(tmp_path, env):
    """The end of a session does not depend on the app's goodwill: quit, SIGTERM, then SIGKILL,
    to its whole process group (here an app that ignores SIGTERM and started a child of its own)."""
    port = _free_port()
    log = (tmp_path / "log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-c", STUBBORN_SERVER.format(grace=GRACE), str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        _wait_until(lambda: _answers(port), 30, "the server did not start")
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.putrequest("GET", "/ws")
        for name, value in (
            ("Upgrade", "websocket"),
            ("Connection", "Upgrade"),
            ("Sec-WebSocket-Version", "13"),
            ("Sec-WebSocket-Key", base64.b64encode(os.urandom(16)).decode()),
        ):
            conn.putheader(name, value)
        conn.endheaders()
        assert conn.getresponse().status == 101
        _wait_until(lambda: len(live_children(server.pid)) == 1, 20, "the app did not start")
        (app,) = live_children(server.pid)
        _wait_until(lambda: live_children(app), 20, "the app's child did not start")
        (grandchild,) = live_children(app)
        started = time.monotonic()
        conn.close()  # the socket closes
        _wait_until(
            lambda: not _alive(app) and not _alive(grandchild),
            2 * GRACE + 5,
            "the app or its child outlived the socket",
        )
        assert time.monotonic() - started >= 2 * GRACE  # asked to quit, then SIGTERM, then SIGKILL
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=20)
        log.close()
    assert "Traceback" not in (tmp_path / "log").read_text()


def test_the_app_is_run_without_a_shell(served):
    # No shell between the server and the app: the process the socket started is Python itself,
    # with the server's flags (a shell would be a process of its own, left behind by a kill).
    async def scenario() -> None:
        session, ws = await _connect(served)
        await ws.receive(timeout=60)
        (pid,) = served.apps()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        assert cmdline[0].decode() == sys.executable
        assert cmdline[1:3] == [b"-m", b"ragtui"]
        await ws.close()
        await session.close()

    asyncio.run(scenario())
    _wait_until(lambda: served.apps() == set(), QUIT_GRACE + TERM_GRACE + 5, "the app did not end")
