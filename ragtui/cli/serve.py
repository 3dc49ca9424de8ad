"""``ragtui serve``: the same app in a web browser, through textual-serve.

Each browser tab gets its own app process, started as ``python -m ragtui`` with the flags this
command was given (the project file is read by the app itself, from the same working folder), so
the app in the browser is the one in the terminal. It listens on 127.0.0.1 unless told otherwise;
anything else is said loudly, since there is no login and the app writes labels.
"""

from __future__ import annotations

import argparse
import ipaddress
import shlex
import sys
from pathlib import Path

from ragtui.cli.output import err, warn
from ragtui.core.errors import InputError
from ragtui.core.options import OPTIONS

#: The page template: textual-serve's, without the web-font link (the page fetches nothing).
TEMPLATES = Path(__file__).resolve().parent / "serve_templates"


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine only (127.0.0.0/8, ::1 or ``localhost``)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def app_command(args: argparse.Namespace) -> str:
    """The shell command each browser session runs: this Python, ``-m ragtui``, and the shared flags given."""
    argv = [sys.executable, "-m", "ragtui"]
    given = vars(args)
    for option in OPTIONS:
        if option.name in given:
            argv += option.args(given[option.name])
    if given.get("project") is not None:
        argv += ["--project", str(Path(given["project"]).resolve())]
    if given.get("no_project"):
        argv.append("--no-project")
    return shlex.join(argv)


def run_serve(
    args: argparse.Namespace,
    host: str = "127.0.0.1",
    port: int = 8000,
    public_url: str | None = None,
) -> int:
    """Serve the app until interrupted (ctrl+c)."""
    try:
        from textual_serve.server import Server
    except ImportError:
        raise InputError(
            None, "ragtui serve needs textual-serve: pip install 'textual-serve==1.1.3'"
        ) from None
    if port > 65535:
        raise InputError(None, f"--port: {port} is not a port (1-65535)")
    if not is_loopback(host):
        warn(
            f"serving on {host}:{port}, beyond this machine: anyone who can reach it can use the app "
            "and change labels (there is no login); use --host 127.0.0.1 and an SSH tunnel unless you mean it"
        )
    command = app_command(args)
    url = public_url or f"http://{host if ':' not in host else f'[{host}]'}:{port}"
    server = _quiet_server(Server)(
        command, host=host, port=port, title="ragtui", public_url=url, templates_path=TEMPLATES
    )
    err(f"ragtui: serving the app on {url} (ctrl+c stops)")
    server.serve()
    return 0


def _quiet_server(base: type) -> type:
    """textual-serve's server with its banner replaced by ragtui's own line."""

    class RagtuiServer(base):
        async def on_startup(self, app: object) -> None:
            """Print nothing: ``run_serve`` already said where the app is."""

    return RagtuiServer
