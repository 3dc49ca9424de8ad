"""Live HTTP retrievers keep secrets where they belong, every wait has a deadline, and bad URLs or
answers give one line: against real servers this module starts once on 127.0.0.1, real
subprocesses (``python -m ragtui``), a real pseudo-terminal for the app, and real cache files.

Two servers on two ports: the *main* one redirects, trickles one byte at a time, or never answers;
the *other* one answers searches and records the headers every request brought, so a redirect from
one port to the other (another origin, as another host would be) shows what followed it.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from ragtui.cli import main
from ragtui.core.retrieval.http import HttpRetriever
from ragtui.core.retrieval.live import (
    CONSECUTIVE_FAILURES,
    LiveCache,
    LiveError,
    parse_retriever_section,
    parse_retriever_spec,
    prune_cache,
    run_live,
)
from ragtui.core.text import mask_url, mask_urls
from ragtui.core.workspace import Workspace
from tests.conftest import MINI, MINI_CHUNK_SIZE, ROOT, mini_args

#: The deadline the timing tests set (seconds), and the slack allowed over it (a loaded CI runner).
DEADLINE = 2.0
SLACK = 1.5
#: Seconds between two bytes of /trickle, and its body (long enough to outlast any deadline here).
TRICKLE_GAP = 0.5
TRICKLE_BODY = b'{"results": []}' + b" " * 45


@dataclass
class Servers:
    """The two running servers: base URLs, requests per path, and the headers each request carried."""

    main: str = ""
    other: str = ""
    requests: dict[str, int] = field(default_factory=dict)
    headers: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stop: threading.Event = field(default_factory=threading.Event)

    def seen(self, key: str, headers: dict[str, str]) -> None:
        with self.lock:
            self.requests[key] = self.requests.get(key, 0) + 1
            self.headers.setdefault(key, []).append({k.lower(): v for k, v in headers.items()})

    def count(self, key: str) -> int:
        with self.lock:
            return self.requests.get(key, 0)


def _handler(state: Servers, role: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            return

        def _json(self, status: int, body: object, extra: dict[str, str] | None = None) -> None:
            raw = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            for key, value in (extra or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(raw)

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            query = parse_qs(parts.query)
            question = query.get("q", [""])[0]
            state.seen(f"{role}{parts.path}", dict(self.headers.items()))
            if parts.path == "/search" or (parts.path == "/elsewhere" and "ferry" not in question):
                # Each question gets its own passage (a stable id from its text).
                results = [{"id": f"x:{abs(hash(question)) % 997}", "score": 1.0, "text": question}]
                self._json(200, {"results": results})
            elif parts.path == "/away":  # to the other server: another origin
                self._json(302, {}, {"Location": f"{state.other}/search?{parts.query}"})
            elif parts.path == "/elsewhere":  # a scheme urllib refuses, a key in its query
                self._json(302, {}, {"Location": "file:///srv/search?token=SEKRET"})
            elif parts.path == "/hop":  # to this server: the same origin
                self._json(302, {}, {"Location": f"/search?{parts.query}"})
            elif parts.path == "/trickle":
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(TRICKLE_BODY)))
                self.end_headers()
                self.wfile.flush()
                for byte in TRICKLE_BODY:
                    if state.stop.wait(TRICKLE_GAP):
                        return
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
            elif parts.path == "/silent":
                state.stop.wait(120)  # never answers (until the module is done)
            else:
                self._json(404, {"error": "not found"})

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        return  # a client that gave up (its deadline) is expected here


@pytest.fixture(scope="module")
def servers() -> Iterator[Servers]:
    state = Servers()
    running = []
    for role in ("main", "other"):
        httpd = _Server(("127.0.0.1", 0), _handler(state, role))
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        setattr(state, role, f"http://127.0.0.1:{httpd.server_address[1]}")
        running.append((httpd, thread))
    yield state
    state.stop.set()
    for httpd, thread in running:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def _retriever(name: str, table: dict[str, object]) -> HttpRetriever:
    retriever = HttpRetriever(parse_retriever_section(name, table))
    retriever.backoff = 0.05
    return retriever


def _exit_code(args: list[str]) -> int:
    """``main(args)``'s exit code, also when the option parser exits (a bad option value)."""
    try:
        return main(args)
    except SystemExit as exc:
        return int(exc.code or 0)


def _python_ragtui(*args: str) -> list[str]:
    return [sys.executable, "-m", "ragtui", *args]


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["RAGTUI_CACHE_DIR"] = str(tmp_path / "cache")
    env["HF_HUB_OFFLINE"] = "1"
    env.setdefault("PYTHONPATH", str(ROOT))
    return env


def _mini_cli(*extra: str) -> list[str]:
    return [
        "--corpus",
        str(MINI / "corpus"),
        "--golden",
        str(MINI / "golden"),
        "--chunk-size",
        str(MINI_CHUNK_SIZE),
        "--retrievers",
        "bm25",
        *extra,
    ]


# ---- secrets ------------------------------------------------------------------------------------


SECRET_HEADERS = {
    "Authorization": "Bearer hunter2-token",
    "X-Api-Key": "${RAGTUI_TEST_KEY}",
    "X-Tenant": "acme",
}


def test_credentials_do_not_follow_a_redirect_to_another_origin(servers, monkeypatch):
    monkeypatch.setenv("RAGTUI_TEST_KEY", "k-123")
    retriever = _retriever(
        "redir", {"url": f"{servers.main}/away?q={{query}}", "headers": SECRET_HEADERS}
    )
    hits = retriever.search("where is the ferry", 3)
    assert hits and hits[0].text == "where is the ferry"  # the redirect was followed
    sent = servers.headers["main/away"][-1]
    assert sent["authorization"] == "Bearer hunter2-token" and sent["x-api-key"] == "k-123"
    received = servers.headers["other/search"][-1]
    # Another port is another origin: neither the credentials nor any configured header follow.
    for name in ("authorization", "x-api-key", "x-tenant", "cookie"):
        assert name not in received, f"{name} followed the redirect to another origin"
    assert received["accept"] == "application/json"


def test_a_redirect_on_the_same_origin_keeps_the_headers(servers, monkeypatch):
    monkeypatch.setenv("RAGTUI_TEST_KEY", "k-123")
    retriever = _retriever(
        "hop", {"url": f"{servers.main}/hop?q={{query}}", "headers": SECRET_HEADERS}
    )
    assert retriever.search("late book fine", 3)
    received = servers.headers["main/search"][-1]
    assert received["authorization"] == "Bearer hunter2-token"
    assert received["x-api-key"] == "k-123" and received["x-tenant"] == "acme"


def test_urls_are_masked():
    assert mask_url("https://elastic:pw@es:9200/_search?api_key=K&q={query}&k={depth}") == (
        "https://***@es:9200/_search?api_key=***&q={query}&k={depth}"
    )
    assert mask_url("http://h/s?access_token=abc&x=1#sig=zz") == (
        "http://h/s?access_token=***&x=1#sig=***"
    )
    assert mask_url("http://h/s?token=${TOKEN}") == "http://h/s?token=${TOKEN}"  # a placeholder
    assert mask_url("http://[::1/x?key=1") == "http://[::1/x?key=***"  # malformed: still masked
    assert mask_urls("failed (http://u:p@h:1/a?secret=s). then") == (
        "failed (http://***@h:1/a?secret=***). then"
    )
    assert mask_urls("no url here: key=1") == "no url here: key=1"


def test_config_masks_user_info_and_keys(capsys):
    spec = "web=http://bob:hunter2@search.example:8080/s?q={query}&api_key=SEKRET&k={depth}"
    assert main(["config", "--retriever", spec, "--milvus", "https://root:Milvus1@db:19530"]) == 0
    text = capsys.readouterr().out
    assert "web=http://***@search.example:8080/s?q={query}&api_key=***&k={depth}" in text
    assert "https://***@db:19530" in text
    assert main(["config", "--json", "--retriever", spec]) == 0
    shown = json.loads(capsys.readouterr().out)["options"]["live-retrievers"]["value"]
    assert shown == "web=http://***@search.example:8080/s?q={query}&api_key=***&k={depth}"
    for secret in ("hunter2", "SEKRET", "Milvus1", "bob:"):
        assert secret not in text


def test_error_lines_mask_keys(capsys):
    spec = "web=http://bob:hunter2@h/s?q={query}&api_key=SEKRET&x={size}"
    assert _exit_code(["eval", *_mini_cli("--retriever", spec)]) == 2
    err = capsys.readouterr().err
    assert "unknown placeholder {size}" in err
    assert "hunter2" not in err and "SEKRET" not in err
    assert "http://***@h/s?q={query}&api_key=***" in err


def test_failure_reasons_mask_keys_in_json_and_warnings(servers, tmp_path, monkeypatch, capsys):
    # The server answers every question but the ferry one (m01), which it redirects to a file://
    # URL holding a key: urllib refuses it, and its message quotes the URL.
    monkeypatch.setenv("RAGTUI_CACHE_DIR", str(tmp_path / "cache"))
    url = f"odd={servers.main}/elsewhere?q={{query}}"
    assert _exit_code(["eval", "--json", *_mini_cli("--retriever", url)]) == 0
    captured = capsys.readouterr()
    reason = json.loads(captured.out)["retrievers"]["odd"]["failed"]["m01"]
    assert "file:///srv/search?token=***" in reason
    assert "odd: 1 of 7 questions not answered (m01)" in captured.err
    assert "token=***" in captured.err
    assert "SEKRET" not in captured.out + captured.err


# ---- deadlines ----------------------------------------------------------------------------------


def test_a_trickling_server_is_cut_at_the_deadline(servers):
    retriever = _retriever(
        "drip", {"url": f"{servers.main}/trickle?q={{query}}", "timeout": DEADLINE, "retries": 2}
    )
    started = time.monotonic()
    with pytest.raises(LiveError) as caught:
        retriever.search("x", 3)
    elapsed = time.monotonic() - started
    assert elapsed < DEADLINE + SLACK, f"took {elapsed:.1f} s for a {DEADLINE:g} s deadline"
    assert str(caught.value) == f"{servers.main}/trickle: no answer within {DEADLINE:g} s (1 try)"


QUESTIONS = [(f"q{i}", f"question number {i}") for i in range(12)]


@pytest.mark.parametrize("concurrency", [4, 1])
def test_a_server_that_never_answers_costs_one_deadline_per_failure_in_a_row(
    servers, tmp_path, concurrency
):
    retriever = _retriever(
        "mute",
        {
            "url": f"{servers.main}/silent?q={{query}}",
            "timeout": 1.0,
            "retries": 2,
            "concurrency": concurrency,
        },
    )
    before = servers.count("main/silent")
    started = time.monotonic()
    run = run_live(retriever, QUESTIONS, 3, root=tmp_path)
    elapsed = time.monotonic() - started
    asked = servers.count("main/silent") - before
    # Concurrent questions fail together (one deadline); one at a time, three deadlines.
    rounds = 1 if concurrency >= CONSECUTIVE_FAILURES else CONSECUTIVE_FAILURES
    assert elapsed < rounds * 1.0 + SLACK, f"took {elapsed:.1f} s"
    assert asked == max(concurrency, CONSECUTIVE_FAILURES)  # one try each, then no more questions
    assert run.status.state == "failed" and not run.hits
    assert sorted(run.failed) == sorted(qid for qid, _ in QUESTIONS)
    assert run.failed["q11"].startswith("not asked after 3 failures in a row")


def _wait_for(predicate, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_ctrl_c_stops_eval_waiting_on_a_hanging_server(servers, tmp_path):
    before = servers.count("main/silent")
    url = f"mute={servers.main}/silent?q={{query}}"
    proc = subprocess.Popen(
        _python_ragtui("eval", *_mini_cli("--retriever", url)),
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )
    try:
        assert _wait_for(lambda: servers.count("main/silent") > before, 60), "never asked"
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        started = time.monotonic()
        try:
            out, err = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            pytest.fail("ragtui eval did not stop within 5 s of Ctrl-C")
        elapsed = time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert elapsed < 1.0, f"Ctrl-C took {elapsed:.2f} s"
    assert proc.returncode == 130
    text = err.decode()
    assert "Traceback" not in text
    assert text.strip().splitlines()[-1] == "ragtui: interrupted"
    assert out == b""


def _read_available(fd: int, seconds: float) -> bytes:
    data = b""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.05)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    return data


def test_ctrl_q_ends_the_app_while_a_live_retriever_waits(servers, tmp_path):
    before = servers.count("main/silent")
    url = f"mute={servers.main}/silent?q={{query}}"
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    env = _env(tmp_path) | {"TERM": "xterm-256color", "TEXTUAL_ANIMATIONS": "none"}
    proc = subprocess.Popen(
        _python_ragtui(*_mini_cli("--retriever", url)),
        env=env,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=tmp_path,
        start_new_session=True,
    )
    os.close(slave)
    try:
        asked = threading.Event()

        def drain() -> None:  # keep the terminal's output flowing while we wait
            while proc.poll() is None:
                _read_available(master, 0.2)
                if servers.count("main/silent") > before:
                    asked.set()

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        assert asked.wait(90), "the app never asked the live retriever"
        time.sleep(0.5)
        os.write(master, b"\x11")  # ctrl+q
        started = time.monotonic()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pytest.fail("the app's process was still running 10 s after ctrl+q")
        elapsed = time.monotonic() - started
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        os.close(master)
    assert proc.returncode == 0
    assert elapsed < 3.5, f"the process ended {elapsed:.1f} s after ctrl+q"


# ---- bad URLs, bad cache files ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://127.0.0.1:99999/s?q={query}", "Port out of range"),
        ("http://[::1/x?q={query}", "Invalid IPv6 URL"),
    ],
)
def test_a_bad_url_is_one_line_and_exit_2(url, problem, capsys):
    assert _exit_code(["eval", *_mini_cli("--retriever", f"bad={url}")]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and problem in lines[0] and lines[0].startswith("ragtui: error: ")
    assert captured.out == ""


def test_a_bad_url_in_the_project_file_stops_the_app_with_one_line(tmp_path):
    (tmp_path / "ragtui.toml").write_text('[retrievers.bad]\nurl = "http://[::1/x?q={query}"\n')
    done = subprocess.run(
        _python_ragtui(*_mini_cli()),
        env=_env(tmp_path),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert "Traceback" not in done.stderr
    assert lines[-1].startswith("ragtui: error: ") and "Invalid IPv6 URL" in lines[-1]


@pytest.fixture
def ws_settings(mini_settings, tmp_path):
    return replace(mini_settings, retrievers=("bm25",), cache_dir=tmp_path / "cache")


def test_a_corrupted_cache_file_is_asked_again_without_a_traceback(
    servers, ws_settings, capsys, monkeypatch
):
    spec = parse_retriever_spec(f"web={servers.other}/search?q={{query}}&k={{depth}}")
    settings = replace(ws_settings, live_retrievers=(spec,))
    first = Workspace.open(settings)
    asked = servers.count("other/search")
    files = sorted((ws_settings.cache_dir / "live").glob("web-*/*.json"))
    assert len(files) == len(first.questions)
    forged = []
    for path, change in zip(files, ("text", "score", "id", "garbage"), strict=False):
        obj = json.loads(path.read_bytes())
        if change == "garbage":
            path.write_bytes(b'{"question": [1, 2')
        else:
            obj["hits"][0][{"text": 2, "score": 1, "id": 0}[change]] = (
                5 if change == "text" else ([] if change == "id" else "high")
            )
            path.write_text(json.dumps(obj))
        forged.append(path)
    again = Workspace.open(settings)
    assert servers.count("other/search") == asked + len(forged)  # each forged answer asked again
    assert again.live.status["web"].state == "ready"
    assert again.ranked.rankings["web"] == first.ranked.rankings["web"]
    # The files now hold good answers again, and a command reads them without a word.
    cli = mini_args(
        ws_settings.corpus.parent,
        "--retrievers",
        "bm25",
        "--retriever",
        f"web={servers.other}/search?q={{query}}&k={{depth}}",
    )
    obj = json.loads(forged[0].read_bytes())
    obj["hits"][0][2] = 5
    forged[0].write_text(json.dumps(obj))
    monkeypatch.setenv("RAGTUI_CACHE_DIR", str(ws_settings.cache_dir))
    assert main(["eval", "--json", *cli]) == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert "web" in json.loads(captured.out)["retrievers"]


def test_the_cache_bound_drops_the_oldest_answers(tmp_path):
    live = tmp_path / "live"
    folders = [live / "a-0123456789abcdef", live / "b-0123456789abcdef"]
    for folder in folders:
        folder.mkdir(parents=True)
    now = time.time()
    paths = []
    for i in range(10):
        path = folders[i % 2] / f"{i:040x}.json"
        path.write_bytes(b"x" * 1000)
        os.utime(path, (now - 100 + i, now - 100 + i))  # 0 oldest, 9 newest
        paths.append(path)
    (folders[0] / ".tmp.json").write_bytes(b"x" * 1000)  # a write in progress is left alone
    assert prune_cache(live, limit=4500) == 6
    kept = [p.exists() for p in paths]
    assert kept == [False] * 6 + [True] * 4
    assert (folders[0] / ".tmp.json").exists()
    assert prune_cache(live, limit=4500) == 0  # under the bound: nothing to do


def test_run_live_keeps_the_cache_under_the_bound(servers, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGTUI_LIVE_CACHE_MB", "0.001")  # about 1 KB: a few answers
    retriever = _retriever("web", {"url": f"{servers.other}/search?q={{query}}"})
    run = run_live(retriever, QUESTIONS, 3, root=tmp_path)
    assert len(run.hits) == len(QUESTIONS)
    files = list((tmp_path / "live").glob("*/*.json"))
    assert 0 < len(files) < len(QUESTIONS)
    assert sum(f.stat().st_size for f in files) <= 1048
    # What is kept is still read as answers.
    cache = LiveCache("web", retriever.identity(), tmp_path)
    assert sum(cache.get(text, 3) is not None for _, text in QUESTIONS) == len(files)
