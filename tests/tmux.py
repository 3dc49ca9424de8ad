"""The real app in a tmux pane: the one helper every test that drives a terminal uses.

Each ``Pane`` is a session on a private tmux server (its own socket, no config file), so no other
tmux session is touched; several panes may share a server (``socket``). A command starts only once
the pane has the size asked for, with ``COLUMNS`` and ``LINES`` unset: a shell started at tmux's
first size (80x24) and resized a moment later keeps ``COLUMNS=80 LINES=24`` in its environment,
which would pin the app at that size instead of the pane's.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

from tests.conftest import ROOT

TMUX = shutil.which("tmux")

#: Mark a test (or a module, as ``pytestmark``) that needs tmux.
needs_tmux = pytest.mark.skipif(
    TMUX is None,
    reason="tmux is not installed: apt-get install tmux (.ci/run does); this test drives the real app in a tmux pane",
)

#: How long to wait for the app (the first start imports torch and encodes with the real model).
STARTUP_SECONDS = 90.0

#: What a pane runs after the app: its exit code on screen (``Pane.exited`` reads it), and time to read it.
EXIT_LINE = "echo RAGTUI-EXIT=$?; sleep 60"


def ragtui_command() -> list[str]:
    """The installed ``ragtui`` script, else ``python -m ragtui`` from this checkout."""
    script = shutil.which("ragtui")
    return [script] if script else [sys.executable, "-m", "ragtui"]


def app_env(cache: Path, **more: str) -> dict[str, str]:
    """The environment of the app in a pane: ``cache`` as its cache, no download, ``TERM=screen``
    (as over SSH), this checkout importable; then ``more``."""
    return {
        "RAGTUI_CACHE_DIR": str(cache),
        "HF_HUB_OFFLINE": "1",
        "TERM": "screen",
        "TEXTUAL_ANIMATIONS": "none",
        "PYTHONPATH": str(ROOT),
        **more,
    }


def shell_command(
    args: Sequence[str], env: Mapping[str, str], *, cwd: Path = ROOT, then: str = EXIT_LINE
) -> str:
    """A pane's shell command: in ``cwd``, ``args`` with ``env`` added, then ``then``."""
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    return f"cd {shlex.quote(str(cwd))} && env {exports} {shlex.join(args)}; {then}"


class Pane:
    """One tmux session (``name``) on a private server (``socket``, a fresh one by default)."""

    def __init__(self, name: str = "app", socket: str | None = None) -> None:
        self.name = name
        self.socket = socket or f"ragtui-test-{uuid.uuid4().hex[:8]}"

    def tmux(self, *args: str) -> str:
        """Run a tmux command on this server and return its output.

        The server starts with this process's environment without ``COLUMNS`` and ``LINES``."""
        assert TMUX is not None, "tmux is not installed"
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        done = subprocess.run(
            [TMUX, "-L", self.socket, "-f", "/dev/null", *args],
            check=False,
            capture_output=True,
            text=True,
            timeout=20,
            env=env,
        )
        return done.stdout

    def start(
        self,
        command: str,
        width: int = 80,
        height: int = 24,
        *,
        options: Mapping[str, str] | None = None,
        title: str | None = None,
    ) -> None:
        """Start ``command`` in a detached session of ``width`` x ``height``, once the pane has that
        size, with ``COLUMNS`` and ``LINES`` unset. ``options`` (global tmux options) and ``title``
        (the pane's) are set in the same tmux call, before the command can write anything."""
        sized = (
            f'i=0; while [ "$(stty size)" != "{height} {width}" ] && [ $i -lt 200 ]; '
            "do sleep 0.05; i=$((i+1)); done; unset COLUMNS LINES; "
        )
        size = ["-x", str(width), "-y", str(height)]
        chained = ["new-session", "-d", "-s", self.name, *size, sized + command]
        for key, value in (options or {}).items():
            chained += [";", "set-option", "-g", key, value]
        if title is not None:
            chained += [";", "select-pane", "-t", self.name, "-T", title]
        self.tmux(*chained)

    def screen(self, escapes: bool = False) -> str:
        """The visible text of the pane (with its SGR escapes when ``escapes``)."""
        return self.tmux("capture-pane", "-p", *(["-e"] if escapes else []), "-t", self.name)

    def keys(self, *keys: str) -> None:
        """Send keys in one ``send-keys`` call (tmux names: Tab, BSpace, C-q, or literal text)."""
        self.tmux("send-keys", "-t", self.name, *keys)

    def type(self, text: str) -> None:
        """Send ``text`` as typed characters, in one write (no key names)."""
        self.tmux("send-keys", "-t", self.name, "-l", text)

    def value(self, fmt: str) -> str:
        """A tmux format of this pane (``#{pane_title}``, ``#{alternate_on}``, ``#{pane_pid}``)."""
        return self.tmux("display-message", "-p", "-t", self.name, fmt).strip()

    def wait_for(self, check: Callable[[str], object] | str, seconds: float, what: str) -> str:
        """Poll the screen until ``check`` holds (a text: until it is on screen); return the screen.
        Fails with the last screen otherwise."""
        test = (lambda s: check in s) if isinstance(check, str) else check
        deadline = time.monotonic() + seconds
        text = ""
        while time.monotonic() < deadline:
            text = self.screen()
            if test(text):
                return text
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}; the screen was:\n{text}")

    def settled(self, timeout: float = 15.0) -> str:
        """Wait until the screen stops changing (two captures 60 ms apart agree); return it."""
        deadline = time.monotonic() + timeout
        time.sleep(0.06)
        last = self.screen()
        while time.monotonic() < deadline:
            time.sleep(0.06)
            now = self.screen()
            if now == last:
                return now
            last = now
        raise AssertionError(f"the screen kept changing:\n{last}")

    def exited(self, code: int = 0, seconds: float = 30.0) -> str:
        """Wait for the app to exit with ``code`` (the pane's command ends in ``EXIT_LINE``)."""
        return self.wait_for(f"RAGTUI-EXIT={code}", seconds, f"the app to exit with code {code}")

    def kill(self) -> None:
        """Stop this tmux server (every session on it, and the apps in them); remove its socket."""
        socket_path = self.tmux("display-message", "-p", "#{socket_path}").strip()
        self.tmux("kill-server")
        if socket_path:
            Path(socket_path).unlink(missing_ok=True)
