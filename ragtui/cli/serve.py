"""``ragtui serve``: the same app in a web browser, through textual-serve.

Each browser tab gets its own app process, started as ``python -m ragtui`` with the flags this
command was given (the project file is read by the app itself, from the same working folder), so
the app in the browser is the one in the terminal. It listens on 127.0.0.1 unless told otherwise;
anything else is said loudly, since whoever holds the address can write labels.

Who may use it (docs/serve.md has the threat model):

- every request must name this server in its ``Host`` header (the served address, ``--public-url``'s
  host, or localhost, 127.0.0.1 and [::1] on the served port): a DNS-rebinding page names its own;
- a request that carries an ``Origin`` (a browser's websocket always does) must come from one of the
  same addresses: a page served from anywhere else, another local port included, is refused;
- the page and the websocket need the random token printed with the address (``?token=``; the page
  gives its websocket the token in the websocket's path), unless ``--no-token``; with
  ``--annotators FILE`` (name = token, one per person) each person's own token instead, and the
  app of that tab records their grades under their name and walks their own queue;
- at most ``--max-sessions`` app processes run at once, and each ends with its socket: asked to quit,
  then its process group is terminated, then killed.

A tab opens on an app that is already running (``--no-spare`` turns this off): the server keeps one
spare app process started ahead, its screen kept until a browser's websocket (past every check
above) takes it, then replayed to that browser and redrawn at its size; a new spare is started
for the next tab. The spare counts toward ``--max-sessions`` (it is started only while fewer
sessions than that are open). A spare whose inputs changed since it started (the project file,
the corpus, the golden set but its label journal, which every app follows by itself) is ended
and the tab gets an app started for it.

Refusals are HTTP 403 (503 for a full server) with one plain line, also printed on the server's
stderr; nothing reaches a log with a traceback, and the access log (which would show tokens) is off.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hmac
import json
import os
import re
import secrets
import shlex
import signal
import socket
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit

from aiohttp import WSMsgType, web
from aiohttp_jinja2 import render_template
from aiohttp_jinja2 import setup as setup_templates
from jinja2 import FileSystemLoader
from textual_serve.app_service import AppService
from textual_serve.download_manager import DownloadManager
from textual_serve.server import Server

from ragtui.cli.output import err, warn
from ragtui.core.errors import InputError
from ragtui.core.labelling.labels import is_model_annotator
from ragtui.core.options import OPTIONS
from ragtui.core.project import key_line, read_toml
from ragtui.core.text import is_loopback, visible_line

#: The page template: textual-serve's, without the web-font link (the page fetches nothing), its
#: websocket address carrying the token.
TEMPLATES = Path(__file__).resolve().parent / "serve_templates"
#: A token given by the environment instead of a fresh random one (not a flag: other local users
#: can read a process's command line, not its environment).
TOKEN_ENV = "RAGTUI_SERVE_TOKEN"
#: The names of this machine a browser may use on the served port.
LOCAL_NAMES = ("localhost", "127.0.0.1", "::1")
#: Seconds an app process has to quit when its socket closes, then to end on SIGTERM.
QUIT_GRACE = 3.0
TERM_GRACE = 2.0
#: Refusals printed on stderr (each kind once) before the server stops printing them: a page can
#: send thousands.
MAX_REFUSALS_SHOWN = 50
#: Headers on every page and refusal: no framing (clickjacking), no token in a Referer, no caching.
PAGE_HEADERS = {
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "frame-ancestors 'none'",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
}
#: The size a spare app starts at (then the size of the last browser that took one).
SPARE_SIZE = (120, 40)
#: Bytes of screen a spare app may write before a browser takes it (its first screens: about
#: 100 KB); one that writes more is ended when a tab comes, which gets an app of its own.
SPARE_OUTPUT_LIMIT = 8 << 20
#: Files looked at to tell whether a spare's inputs changed; with more, no spare is kept.
STAMP_FILES = 20_000
#: A spare is asked to quit once it has drawn its first screen (or after this many seconds): an
#: app asked to quit while it mounts its screen fails with a traceback (NoMatches).
SPARE_PAINT_WAIT = 10.0
#: Bytes of one write that are a screen, not a terminal mode switch (those are under 20 bytes).
SCREEN_BYTES = 512
_TOKEN_SHAPE = re.compile(r"[A-Za-z0-9._~-]{16,256}")
_AUTHORIZATION = re.compile(r"(?:token|bearer)\s+(\S+)\s*", re.IGNORECASE)

#: A host as a browser names it: lower case, IPv6 without brackets, and the port (None: not given).
Address = tuple[str, int | None]


def app_argv(args: argparse.Namespace, per_person: bool = False) -> list[str]:
    """The command each browser session runs: this Python, ``-m ragtui``, and the shared flags
    given (``per_person``: without ``--annotator``, which each session adds with its person's name)."""
    argv = [sys.executable, "-m", "ragtui"]
    given = vars(args)
    for option in OPTIONS:
        if option.name in given and not (per_person and option.name == "annotator"):
            argv += option.args(given[option.name])
    if given.get("project") is not None:
        argv += ["--project", str(Path(given["project"]).resolve())]
    if given.get("no_project"):
        argv.append("--no-project")
    return argv


# ---- the spare app ------------------------------------------------------------------------------


def _followed(name: str) -> bool:
    """Files an app follows while it runs (the label journal and its backups) or that say nothing
    about its inputs (locks and other dot-files)."""
    return name.startswith((".", "labels.jsonl.")) or name == "labels.jsonl"


def _files_stamp(path: Path, left: list[int]) -> list[tuple[str, int, int]] | None:
    """(name, size, modification time) of ``path``: the file, or every file under the folder (in
    name order); None once more than ``left[0]`` files were looked at."""
    try:
        if not path.is_dir():
            st = path.stat()
            return [(str(path), st.st_size, st.st_mtime_ns)]
    except OSError:
        return [(str(path), -1, -1)]
    found: list[tuple[str, int, int]] = []
    for root, dirs, names in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            if _followed(name):
                continue
            left[0] -= 1
            if left[0] < 0:
                return None
            with contextlib.suppress(OSError):
                st = os.stat(os.path.join(root, name))
                found.append((os.path.join(root, name), st.st_size, st.st_mtime_ns))
    return found


def input_stamp(args: argparse.Namespace) -> object | None:
    """What an app started now would read: the project file and the data it names (the paths,
    and each file's size and time; the label journal aside, which a running app follows). None
    when that cannot be told (a project file that does not read, over ``STAMP_FILES`` files)."""
    from ragtui.core.project import effective_settings, project_for

    names = {o.name for o in OPTIONS}
    flags = {k: v for k, v in vars(args).items() if k in names}
    try:
        project = project_for(
            Path.cwd(), getattr(args, "project", None), disabled=getattr(args, "no_project", False)
        )
        settings = effective_settings(flags, project).settings.resolved()
    except (InputError, OSError, ValueError):
        return None
    paths = [
        project.path if project is not None else None,
        settings.corpus,
        settings.golden,
        settings.beir,
        settings.chunks,
    ]
    left = [STAMP_FILES]
    stamp: list[object] = []
    for path in paths:
        files = _files_stamp(Path(path), left) if path is not None else []
        if files is None:
            return None
        stamp.append((str(path), files))
    return tuple(stamp)


class Tap:
    """Where a spare app's output goes: kept (in order, up to ``limit`` bytes) until a browser's
    websocket takes it, then replayed to it and passed on as it comes."""

    def __init__(self, limit: int = SPARE_OUTPUT_LIMIT) -> None:
        self.limit = limit
        self.kept: list[bytes | str] = []
        self.size = 0
        self.websocket: web.WebSocketResponse | None = None
        #: The app closed its side (it ended) or wrote more than ``limit`` before a browser came.
        self.gone = False
        #: Set once the app has drawn a screen (it is mounted: it may be asked to quit).
        self.painted = asyncio.Event()
        self._turn = asyncio.Lock()

    async def write_bytes(self, data: bytes) -> None:
        if len(data) >= SCREEN_BYTES:
            self.painted.set()
        async with self._turn:
            if self.websocket is not None:
                await self.websocket.send_bytes(data)
            else:
                self._keep(data)

    async def write_str(self, data: str) -> None:
        async with self._turn:
            if self.websocket is not None:
                await self.websocket.send_str(data)
            else:
                self._keep(data)

    async def close(self) -> None:
        async with self._turn:
            if self.websocket is not None:
                await self.websocket.close()
            else:
                self.gone = True
        self.painted.set()  # an app that ended is not asked to quit

    def _keep(self, data: bytes | str) -> None:
        self.size += len(data)
        if self.size > self.limit:
            self.gone = True
            self.kept.clear()
        elif not self.gone:
            self.kept.append(data)

    async def attach(self, websocket: web.WebSocketResponse) -> None:
        """Send ``websocket`` everything kept, then everything that comes."""
        async with self._turn:
            for item in self.kept:
                if isinstance(item, bytes):
                    await websocket.send_bytes(item)
                else:
                    await websocket.send_str(item)
            self.kept.clear()
            self.websocket = websocket


# ---- who may use the server ---------------------------------------------------------------------


def parse_address(netloc: str) -> Address | None:
    """``host[:port]`` (a Host header, a URL's authority) as an :data:`Address`; None if it is not one."""
    if not netloc or any(c in netloc for c in "/\\@?# \t"):
        return None
    try:
        parts = urlsplit("//" + netloc)
        host, port = parts.hostname, parts.port
    except ValueError:  # a port out of range or not a number, a bad IPv6 literal
        return None
    if not host:
        return None
    return host, port


def _named(host: str, port: int) -> set[Address]:
    """The addresses a browser may write for ``host`` on ``port`` (without the port when it is 80 or 443)."""
    names: set[Address] = {(host, port)}
    if port in (80, 443):
        names.add((host, None))
    return names


def _shown(address: Address) -> str:
    host, port = address
    host = f"[{host}]" if ":" in host else host
    return host if port is None else f"{host}:{port}"


def _quoted(value: str) -> str:
    """A header value from the request, shortened and made printable, in quotes."""
    value = visible_line(value)
    return repr(value if len(value) <= 80 else value[:77] + "...")


#: The longest annotator name an ``--annotators`` file may give.
MAX_NAME = 100
_ASSIGNMENT = re.compile(r"\s*[^#\[\s].*=")


def load_annotators(path: Path) -> dict[str, str]:
    """``--annotators FILE``: each person's token (TOML, ``name = "token"``, at the top level or
    in an ``[annotators]`` table) as token -> name. The file must be the user's and writable by no
    one else (as a project file); InputError naming the file, the line and the problem."""
    data, lines = read_toml(path)
    table = ""
    if set(data) == {"annotators"} and isinstance(data["annotators"], dict):
        data, table = data["annotators"], "annotators"
    if not data:
        raise InputError(path, 'names no annotator: give one line per person, name = "token"')
    # Each entry's line: found by its key, else (a quoted key with escapes) the n-th assignment.
    assignments = [i + 1 for i, text in enumerate(lines) if _ASSIGNMENT.match(text)]
    people: dict[str, str] = {}
    for index, (name, token) in enumerate(data.items()):
        line = key_line(lines, table, name) or (
            assignments[index] if index < len(assignments) else None
        )
        shown = _quoted(name)
        if not name.strip() or visible_line(name) != name or len(name) > MAX_NAME:
            raise InputError(path, f"{shown}: a name is 1 to {MAX_NAME} visible characters", line)
        if is_model_annotator(name):
            raise InputError(path, f"{shown}: names starting with model: are model judges'", line)
        if not isinstance(token, str) or not _TOKEN_SHAPE.fullmatch(token):
            raise InputError(
                path,
                f"{shown}: the token must be a string of 16 to 256 letters, digits and . _ ~ -",
                line,
            )
        if token in people:
            raise InputError(
                path,
                f"{shown}: the same token as {_quoted(people[token])}; give each their own",
                line,
            )
        people[token] = name
    return people


@dataclass(frozen=True)
class Guard:
    """The addresses browsers may name this server by, and the token (None: ``--no-token``) or
    each person's (``people``: token -> name, from ``--annotators``)."""

    addresses: frozenset[Address]
    token: str | None
    people: tuple[tuple[str, str], ...] = ()

    @classmethod
    def build(
        cls,
        host: str,
        port: int,
        public_url: str | None,
        token: str | None,
        people: dict[str, str] | None = None,
    ) -> Guard:
        """The served address, ``public_url``'s host and the localhost names on ``port``."""
        addresses: set[Address] = set()
        for name in (*LOCAL_NAMES, host.strip("[]").lower()):
            addresses |= _named(name, port)
        if public_url is not None:
            parts = urlsplit(public_url)
            if parts.hostname:
                default = 443 if parts.scheme == "https" else 80
                addresses |= _named(parts.hostname, parts.port or default)
        return cls(frozenset(addresses), token, tuple((people or {}).items()))

    def known(self) -> str:
        """The addresses accepted, for a refusal's message (without the portless duplicates)."""
        return ", ".join(sorted(_shown(a) for a in self.addresses if a[1] is not None))

    def host_problem(self, value: str | None) -> str | None:
        """Why a request with this ``Host`` header is refused, or None."""
        if value is None:
            return "the request names no Host"
        address = parse_address(value.strip())
        if address is None or address not in self.addresses:
            return (
                f"the Host header {_quoted(value)} is not this server's address ({self.known()}); "
                "behind a proxy or on another name, give that address as --public-url"
            )
        return None

    def origin_problem(self, value: str | None) -> str | None:
        """Why a request from a page of this ``Origin`` is refused, or None (no Origin: not a page's)."""
        if value is None:
            return None
        parts = urlsplit(value.strip())
        address = parse_address(parts.netloc) if parts.scheme in ("http", "https") else None
        if address is not None and parts.path in ("", "/"):
            default = 443 if parts.scheme == "https" else 80
            if address in self.addresses or (
                address[1] == default and (address[0], None) in self.addresses
            ):
                return None
        return (
            f"a page from {_quoted(value)} may not use this server "
            f"(only pages from {self.known()} may)"
        )

    def person(self, given: str | None) -> str | None:
        """Whose token ``given`` is (None: nobody's, or no ``--annotators``); every token is
        compared whole, in constant time."""
        found = None
        for token, name in self.people:
            if given and hmac.compare_digest(given.encode("utf-8"), token.encode("utf-8")):
                found = name
        return found

    def token_problem(self, given: str | None) -> str | None:
        """Why a request with this token (None: none given) is refused, or None."""
        if self.people:
            if not given:
                return (
                    "this server needs your own token (from the --annotators file): "
                    "open its address with ?token=YOUR_TOKEN"
                )
            if self.person(given) is None:
                return "no annotator has this token: open the address with your own token"
            return None
        if self.token is None:
            return None
        if not given:
            return (
                "this server needs the token printed by `ragtui serve`: "
                "open the address it printed, ending in ?token=..."
            )
        if not hmac.compare_digest(given.encode("utf-8"), self.token.encode("utf-8")):
            return "wrong token: open the address `ragtui serve` printed"
        return None


def given_token(request: web.Request) -> str | None:
    """The token a request carries: in the path (the page's websocket), ``?token=``, or an
    ``Authorization: token …`` header (scripts), first found."""
    token = request.match_info.get("token") or request.query.get("token")
    if not token:
        match = _AUTHORIZATION.fullmatch(request.headers.get("Authorization", ""))
        token = match.group(1) if match else None
    return token or None


def server_token(token_required: bool) -> tuple[str | None, bool]:
    """The token (None without one) and whether it came from ``RAGTUI_SERVE_TOKEN``."""
    if not token_required:
        return None, False
    given = os.environ.get(TOKEN_ENV)
    if given is None or given == "":
        return secrets.token_urlsafe(32), False
    if not _TOKEN_SHAPE.fullmatch(given):
        raise InputError(
            None,
            f"{TOKEN_ENV}: a token is 16 to 256 letters, digits and . _ ~ - "
            f"(got {len(given)} characters); unset it for a random one",
        )
    return given, True


# ---- the app processes --------------------------------------------------------------------------


def _signal_group(pid: int, sig: signal.Signals) -> None:
    """Send ``sig`` to the process group led by ``pid`` (each app process leads its own)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


async def _exited(process: asyncio.subprocess.Process, seconds: float) -> bool:
    try:
        await asyncio.wait_for(process.wait(), seconds)
    except TimeoutError:
        return False
    return True


class AppProcess(AppService):
    """textual-serve's AppService, starting the app without a shell, in its own process group,
    and ending it (and anything it started) for sure."""

    def __init__(
        self,
        argv: list[str],
        *,
        write_bytes: Callable[[bytes], Awaitable[None]],
        write_str: Callable[[str], Awaitable[None]],
        close: Callable[[], Awaitable[object]],
        download_manager: DownloadManager,
    ) -> None:
        super().__init__(
            shlex.join(argv),
            write_bytes=write_bytes,
            write_str=write_str,
            close=close,  # type: ignore[arg-type]  # aiohttp's close returns a bool
            download_manager=download_manager,
        )
        self.argv = argv
        self._ending: asyncio.Future[None] | None = None
        #: The start of a spare app (its process is being made while the server goes on).
        self.starting: asyncio.Future[None] | None = None
        #: The terminal size the app was last given.
        self.size: tuple[int, int] | None = None
        #: A spare's output, until a browser takes it.
        self.tap: Tap | None = None

    async def _open_app_process(
        self, width: int = 80, height: int = 24
    ) -> asyncio.subprocess.Process:
        environment = self._build_environment(width=width, height=height)
        environment.pop(TOKEN_ENV, None)  # the app has no use for it
        self.size = (width, height)
        process = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=environment,
            start_new_session=True,  # ctrl+c on the server reaches the server only; it ends these
        )
        self._process = process
        self._stdin = process.stdin
        return process

    async def set_terminal_size(self, width: int, height: int) -> None:
        """Tell the app its new size; the size it has already is not sent again (a resize
        lays out and redraws the whole screen: a spare app taken by a browser of the size it
        was started at would redraw for nothing while the first keys wait)."""
        if (width, height) == self.size:
            return
        self.size = (width, height)
        await super().set_terminal_size(width, height)

    @property
    def pid(self) -> int | None:
        return None if self._process is None else int(self._process.pid)

    @property
    def ended(self) -> bool:
        """Whether the app process has ended (a session still starting counts as running)."""
        return self._process is not None and self._process.returncode is not None

    @property
    def running(self) -> asyncio.Task[None] | None:
        """The task reading the app's output: done when the app has ended."""
        task: asyncio.Task[None] | None = self._task
        return task

    async def stop(self) -> None:
        """End the app: ask it to quit, then terminate, then kill its process group. Once."""
        if self._ending is None:
            self._ending = asyncio.ensure_future(self._end())
        await asyncio.shield(self._ending)

    async def _end(self) -> None:
        if self.starting is not None:
            with contextlib.suppress(Exception):
                await self.starting  # a process still being made is ended once made
        if self.tap is not None:
            # A spare still mounting its screen is let finish first (see SPARE_PAINT_WAIT).
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.tap.painted.wait(), SPARE_PAINT_WAIT)
        process = self._process
        if process is None:
            return
        await self._download_manager.cancel_app_downloads(app_service_id=self.app_service_id)
        if process.returncode is None:
            await self.send_meta({"type": "quit"})
            if not await _exited(process, QUIT_GRACE):
                _signal_group(process.pid, signal.SIGTERM)
                if not await _exited(process, TERM_GRACE):
                    _signal_group(process.pid, signal.SIGKILL)
                    await process.wait()
        _signal_group(process.pid, signal.SIGKILL)  # anything the app started and left behind
        task = self._task
        if task is not None:
            try:
                await asyncio.wait_for(task, TERM_GRACE)
            except (TimeoutError, asyncio.CancelledError):
                task.cancel()
            self._task = None


# ---- the server ---------------------------------------------------------------------------------


def _bounded(raw: str | None, default: int, low: int, high: int) -> int:
    try:
        value = int(raw) if raw is not None else default
    except ValueError:
        return default
    return min(max(value, low), high)


#: The routes that need the token, and what each serves (for a refusal's line).
_TOKEN_ROUTES = {"index", "websocket", "websocket-token"}
_WHAT = {
    "index": "the page",
    "websocket": "a websocket",
    "websocket-token": "a websocket",
    "static": "a static file",
    "download": "a download",
}


class RagtuiServer(Server):
    """textual-serve's server behind the guard, with its app processes capped and ended."""

    def __init__(
        self,
        argv: list[str],
        *,
        host: str,
        port: int,
        public_url: str | None,
        guard: Guard,
        max_sessions: int,
        stamp: Callable[[], object | None] | None = None,
    ) -> None:
        super().__init__(
            shlex.join(argv),
            host=host,
            port=port,
            public_url=public_url,
            title="ragtui",
            templates_path=TEMPLATES,
        )
        self.argv = argv
        self.guard = guard
        self.max_sessions = max_sessions
        self.public_url = self.public_url.rstrip("/")
        #: The open sessions: each app process and its browser's socket.
        self.sessions: dict[AppProcess, web.WebSocketResponse] = {}
        #: With ``--annotators``: whose each session is.
        self.owners: dict[AppProcess, str] = {}
        self.refusals_shown: set[str] = set()
        #: What the apps' inputs look like now (``input_stamp``); None: no spare app is kept.
        self.stamp = stamp
        #: The spare app, its output and the stamp of its inputs when it started.
        self.spare: tuple[AppProcess, Tap, object] | None = None
        self.spare_size = SPARE_SIZE
        #: Apps being ended (a spare whose inputs changed): they count until they have ended.
        self.ending: set[AppProcess] = set()
        self.endings: set[asyncio.Future[None]] = set()
        self.closing = False

    # -- serving

    def serve(self, debug: bool = False) -> None:
        """Serve until SIGINT or SIGTERM, without textual-serve's log (its access lines hold tokens)."""
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.request_exit)
        web.run_app(
            self._make_app(),
            host=self.host,
            port=self.port,
            handle_signals=False,
            loop=loop,
            print=None,
            access_log=None,
        )

    async def _make_app(self) -> web.Application:
        @web.middleware
        async def guard(
            request: web.Request,
            handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
        ) -> web.StreamResponse:
            route = request.match_info.route.name
            problem = self.guard.host_problem(
                request.headers.get("Host")
            ) or self.guard.origin_problem(request.headers.get("Origin"))
            if problem is None and route in _TOKEN_ROUTES:
                problem = self.guard.token_problem(given_token(request))
            if problem is not None:
                return self.refuse(403, _WHAT.get(route or "", "a request"), problem)
            response = await handler(request)
            if not response.prepared and route != "static":
                response.headers.update(PAGE_HEADERS)
            return response

        app = web.Application(middlewares=[guard])
        setup_templates(app, loader=FileSystemLoader(TEMPLATES))
        app.add_routes(
            [
                web.get("/", self.page, name="index"),
                web.get("/ws", self.app_socket, name="websocket"),
                web.get("/ws/{token}", self.app_socket, name="websocket-token"),
                web.get("/download/{key}", self.handle_download, name="download"),
                web.static("/static", self.statics_path, name="static"),
            ]
        )
        app.on_startup.append(self._first_spare)
        app.on_shutdown.append(self.on_shutdown)
        return app

    async def _first_spare(self, app: web.Application) -> None:
        self.keep_spare()

    def refuse(self, status: int, what: str, reason: str) -> web.Response:
        """A plain one-line refusal, also said on stderr (each kind once, the first few kinds)."""
        line = f"ragtui serve: refused {what}: {reason}"
        if line not in self.refusals_shown and len(self.refusals_shown) < MAX_REFUSALS_SHOWN:
            self.refusals_shown.add(line)
            err(line)
            if len(self.refusals_shown) == MAX_REFUSALS_SHOWN:
                err("ragtui serve: further refusals are not printed")
        return web.Response(
            status=status, text=f"ragtui serve refused this: {reason}\n", headers=PAGE_HEADERS
        )

    def running(self) -> int:
        """App processes of sessions and being ended (the spare aside)."""
        return sum(1 for service in [*self.sessions, *self.ending] if not service.ended)

    def full(self) -> str | None:
        """Why no other app may start now, or None (an app that has ended frees its place)."""
        running = self.running()
        if running < self.max_sessions:
            return None
        return (
            f"{running} app sessions are open, the most --max-sessions allows; "
            "close a tab (its app ends with it), then reload"
        )

    # -- the spare app

    def keep_spare(self) -> None:
        """Start a spare app, unless there is one, the server is stopping, or it would make
        more app processes than ``--max-sessions``."""
        if self.stamp is None or self.spare is not None or self.closing:
            return
        if self.running() + 1 > self.max_sessions:
            return
        stamp = self.stamp()
        if stamp is None:
            return
        tap = Tap()
        service = AppProcess(
            self.argv,
            write_bytes=tap.write_bytes,
            write_str=tap.write_str,
            close=tap.close,
            download_manager=self.download_manager,
        )
        service.tap = tap
        service.starting = asyncio.ensure_future(service.start(*self.spare_size))
        self.spare = (service, tap, stamp)

    def take_spare(self) -> tuple[AppProcess, Tap] | None:
        """The spare app for a tab, if there is one still running on unchanged inputs; a
        spare that is not is ended (it counts until it has ended)."""
        spare, self.spare = self.spare, None
        if spare is None:
            return None
        service, tap, stamp = spare
        alive = not (service.ended or tap.gone)
        if alive and self.stamp is not None and self.stamp() == stamp:
            return service, tap
        self.ending.add(service)

        async def end() -> None:
            try:
                await service.stop()
            finally:
                self.ending.discard(service)

        task = asyncio.ensure_future(end())
        self.endings.add(task)
        task.add_done_callback(self.endings.discard)
        return None

    # -- the page

    async def page(self, request: web.Request) -> web.StreamResponse:
        problem = self.full()
        if problem is not None:
            return self.refuse(503, "the page", problem)
        websocket_url = self.public_url + "/ws"
        token = given_token(request) if self.guard.people else self.guard.token
        if token is not None:
            websocket_url += "/" + quote(token, safe="")
        scheme, rest = websocket_url.split(":", 1)
        context = {
            "font_size": _bounded(request.query.get("fontsize"), 16, 6, 64),
            "app_websocket_url": ("wss:" if scheme == "https" else "ws:") + rest,
            "config": {"static": {"url": self.public_url + "/static/"}},
            "application": {"name": self.title},
        }
        return render_template("app_index.html", request, context)

    # -- the websocket: one app process each

    async def app_socket(self, request: web.Request) -> web.StreamResponse:
        websocket = web.WebSocketResponse(heartbeat=15)
        if not websocket.can_prepare(request).ok:
            return self.refuse(400, "a request for /ws", "not a websocket handshake")
        problem = self.full()
        if problem is not None:
            return self.refuse(503, "a websocket", problem)
        width = _bounded(request.query.get("width"), 80, 10, 1000)
        height = _bounded(request.query.get("height"), 24, 5, 1000)
        person = self.guard.person(given_token(request))
        taken = self.take_spare() if person is None else None
        tap = None
        if taken is not None:
            service, tap = taken
        else:
            service = AppProcess(
                self.argv if person is None else [*self.argv, "--annotator", person],
                write_bytes=websocket.send_bytes,
                write_str=websocket.send_str,
                close=websocket.close,
                download_manager=self.download_manager,
            )
        self.sessions[service] = websocket  # counted before the first await: no race past the cap
        if person is not None:
            self.owners[service] = person
            self._say_sessions(f"{visible_line(person)} opened a session")
        try:
            await websocket.prepare(request)
            if tap is not None:
                # The spare's screen so far, then the app redraws it at this browser's size.
                if service.starting is not None:
                    await service.starting
                await tap.attach(websocket)
                await service.set_terminal_size(width, height)
            else:
                if self.endings:
                    # An out-of-date spare ends first: never more apps than --max-sessions.
                    await asyncio.wait(list(self.endings))
                await service.start(width, height)
            self.spare_size = (width, height)
            self.keep_spare()
            messages = asyncio.ensure_future(self._messages(websocket, service))
            ended = service.running
            waiting = {messages, ended} if ended is not None else {messages}
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            messages.cancel()
        except (asyncio.CancelledError, ConnectionError, OSError):
            pass
        finally:
            await service.stop()
            del self.sessions[service]
            owner = self.owners.pop(service, None)
            if owner is not None:
                self._say_sessions(f"{visible_line(owner)} closed a session")
            await websocket.close()
            self.keep_spare()
        return websocket

    def _say_sessions(self, what: str) -> None:
        """``ragtui serve: alice opened a session (open: alice 2, bob 1)`` on stderr."""
        counts: dict[str, int] = {}
        for name in self.owners.values():
            counts[name] = counts.get(name, 0) + 1
        open_now = ", ".join(f"{visible_line(n)} {c}" for n, c in sorted(counts.items()))
        err(f"ragtui serve: {what} (open: {open_now or 'none'})")

    async def _messages(self, websocket: web.WebSocketResponse, service: AppProcess) -> None:
        """The browser's keys, sizes and pings, passed to the app; anything malformed is ignored."""
        async for message in websocket:
            if message.type != WSMsgType.TEXT:
                continue
            try:
                envelope = json.loads(message.data)
            except ValueError:
                continue
            if not isinstance(envelope, list) or not envelope:
                continue
            kind, data = envelope[0], envelope[1] if len(envelope) > 1 else None
            if kind == "stdin" and isinstance(data, str):
                await service.send_bytes(data.encode("utf-8"))
            elif kind == "resize" and isinstance(data, dict):
                await service.set_terminal_size(
                    _bounded(str(data.get("width")), 80, 10, 1000),
                    _bounded(str(data.get("height")), 24, 5, 1000),
                )
            elif kind == "ping":
                await websocket.send_json(["pong", data])
            elif kind == "blur":
                await service.blur()
            elif kind == "focus":
                await service.focus()

    async def on_shutdown(self, app: web.Application) -> None:
        """Close every socket and end every app process (the spare too) before the server exits."""
        self.closing = True
        sessions = list(self.sessions.items())
        spare = [self.spare[0]] if self.spare is not None else []
        self.spare = None
        await asyncio.gather(
            *(
                websocket.close(code=1001, message=b"ragtui serve stopped")
                for _, websocket in sessions
            ),
            *(service.stop() for service in [*(s for s, _ in sessions), *spare]),
            *(service.stop() for service in list(self.ending)),
            return_exceptions=True,
        )


def check_listen(host: str, port: int) -> None:
    """InputError when the server could not listen on ``host``:``port`` (a name that resolves to
    nothing, an address not of this machine, a port taken), found before anything is printed: each
    address the host resolves to is bound once, as the server binds them, and let go."""
    where = f"cannot listen on {_shown((host.strip('[]'), port))}"
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InputError(None, f"{where}: {why} (--host)") from None
    probes: list[socket.socket] = []
    try:
        bound = set()
        for family, kind, proto, _, address in found:
            if (family, address) in bound:
                continue
            bound.add((family, address))
            probe = socket.socket(family, kind, proto)
            probes.append(probe)
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6 and hasattr(socket, "IPPROTO_IPV6"):
                probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            probe.bind(address)
    except OSError as exc:
        raise InputError(None, f"{where}: {exc.strerror or exc} (--host, --port)") from None
    finally:
        for probe in probes:
            probe.close()


def run_serve(
    args: argparse.Namespace,
    host: str = "127.0.0.1",
    port: int = 8000,
    public_url: str | None = None,
    max_sessions: int = 3,
    token_required: bool = True,
    spare: bool = True,
    annotators: Path | None = None,
) -> int:
    """Serve the app until interrupted (ctrl+c); with ``annotators`` (a file of name = token), each
    person's tabs with their own token, grading under their name."""
    if port > 65535:
        raise InputError(None, f"--port: {port} is not a port (1-65535)")
    if public_url is not None:
        try:
            parts = urlsplit(public_url)
            scheme, address = parts.scheme, parse_address(parts.netloc)
        except ValueError:  # a bracket that does not close: http://[::1/x
            scheme, address = "", None
        if scheme not in ("http", "https") or address is None:
            raise InputError(
                None, f"--public-url: {public_url!r} is not an http:// or https:// address"
            )
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]  # [::1] as a URL writes it
    if not host.strip():
        raise InputError(None, "--host: give an address (0.0.0.0 or :: for every interface)")
    people = None
    if annotators is not None:
        if not token_required:
            raise InputError(
                None, "--annotators gives each person a token: it cannot go with --no-token"
            )
        people = load_annotators(annotators)
    check_listen(host, port)
    token, from_environment = server_token(token_required and people is None)
    guard = Guard.build(host, port, public_url, token, people)
    if not is_loopback(host):
        warn(
            f"serving on {host}:{port}, beyond this machine: anyone who can reach it "
            + ("and has the address with its token " if token else "")
            + "can use the app and change labels; use --host 127.0.0.1 and an SSH tunnel unless you mean it"
        )
    if host in ("0.0.0.0", "::") and public_url is None:
        warn(
            "browsers reaching this server by another name or address are refused (DNS rebinding); "
            "give the address they use as --public-url"
        )
    if token is None and people is None:
        warn(
            "--no-token: every user and program on this machine (and anything that reaches the "
            "port) can use the app and change labels"
        )
    argv = app_argv(args, per_person=people is not None)
    base = public_url.rstrip("/") if public_url else f"http://{_shown((host.strip('[]'), port))}"
    server = RagtuiServer(
        argv,
        host=host,
        port=port,
        public_url=base,
        guard=guard,
        max_sessions=max_sessions,
        # A spare app is started before anyone is known: with one token each, each tab starts its own.
        stamp=(lambda: input_stamp(args)) if spare and people is None else None,
    )
    if people is not None:
        names = ", ".join(sorted(visible_line(n) for n in people.values()))
        url = f"{base}/ for {names}: each opens it with ?token= their own token from {annotators}"
    elif token is None:
        url = f"{base}/"
    elif from_environment:
        url = f"{base}/?token=${TOKEN_ENV}"
    else:
        url = f"{base}/?token={token}"
    err(f"ragtui: serving the app on {url} (ctrl+c stops)")
    try:
        server.serve()
    except OSError as exc:
        raise InputError(None, f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return 0
