"""The app over a real SSH session: sshd on 127.0.0.1, an 80x24 terminal with TERM=screen.

Judging with one key a pair (some keys sent in one burst, as SSH delivers them), a key off the grade
scale, then the SSH client killed: exactly the intended pairs are in the journal, and the app on the
server side has exited. sshd is started once per test session (``.ci/run`` installs it).
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace
from ragtui.tui.judging_session import JudgingSession, JudgingWalk
from tests.conftest import ROOT
from tests.tmux import Pane, needs_tmux

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"

#: What the test lacks on this machine (it then skips, saying how to install it), or None.
MISSING = next(
    (
        f"{tool} is not installed: apt-get install openssh-server openssh-client (.ci/run does)"
        for tool, present in (("sshd", Path(SSHD).exists()), ("ssh", shutil.which("ssh")))
        if not present
    ),
    None,
)
pytestmark = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path]]:
    """A real sshd on 127.0.0.1 (its own host key, config and authorized key): (port, client key)."""
    folder = tmp_path_factory.mktemp("sshd")
    for name in ("host", "client"):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(folder / name)], check=True
        )
    (folder / "authorized_keys").write_text((folder / "client.pub").read_text())
    os.chmod(folder / "authorized_keys", 0o600)
    port = _free_port()
    config = folder / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {folder / 'host'}\n"
        f"PidFile {folder / 'sshd.pid'}\nAuthorizedKeysFile {folder / 'authorized_keys'}\n"
        "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nPrintMotd no\n"
        "PermitUserEnvironment no\n"
    )
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(parents=True, exist_ok=True)  # privilege separation
    server = subprocess.Popen(
        [SSHD, "-D", "-e", "-f", str(config)], stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 15
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                problem = server.stderr.read() if server.stderr else ""
                raise AssertionError(f"sshd did not start: {problem}") from None
            time.sleep(0.1)
    try:
        yield port, folder / "client"
    finally:
        server.terminate()
        server.wait(timeout=10)


def _remote_processes(marker: str) -> list[str]:
    found = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True, check=False)
    return found.stdout.split()


@needs_tmux
def test_judging_over_ssh_at_80x24_then_the_client_dies(
    sshd: tuple[int, Path], mini_settings: Settings, cache_dir: Path
) -> None:
    port, key = sshd
    settings = replace(mini_settings, annotator=f"ssh-{uuid.uuid4().hex[:8]}")
    marker = settings.annotator
    assert marker is not None
    # The pairs the judging view will visit: every pair starts unjudged, so it walks the pools of
    # the questions in golden-set order from m01 (the same model and cache the app uses).
    ws = Workspace.open(settings)
    session = JudgingSession(JudgingWalk(ws, [q.id for q in ws.questions]), ("m01", None))
    intended = [e.key for e in session.pairs[:20]]
    grades = [str((i * 7) % 3) for i in range(20)]
    args = ["--corpus", str(settings.corpus), "--golden", str(settings.golden)]
    args += ["--chunk-size", str(settings.chunk_size), "--annotator", marker]
    client = _over_ssh(port, key, args, cache_dir)
    pane = Pane()
    pane.start(client, 80, 24)
    try:
        pane.wait_for("hybrid #", 90, "every list ready")
        pane.keys("j")
        pane.wait_for("pair 1 of", 30, "the judging view")
        # Ten keys one at a time (each once the last is on screen), then ten in two bursts, as SSH
        # delivers a fast typist's keys.
        for number, grade in enumerate(grades[:10], start=1):
            pane.type(grade)
            pane.wait_for(f"judged {number}/", 30, f"grade {number} on screen")
        pane.type("".join(grades[10:15]))
        pane.type("".join(grades[15:20]))
        pane.wait_for("judged 20/", 30, "the twenty grades")
        pane.type("7")
        pane.wait_for("not on the grade scale", 30, "the key off the scale refused")
        assert _remote_processes(marker), "the app runs on the server side"
    finally:
        # Kill the SSH client itself (exec'd as the pane's process).
        pane_pid = pane.value("#{pane_pid}")
        if pane_pid:
            os.kill(int(pane_pid), signal.SIGKILL)
        pane.kill()
    deadline = time.monotonic() + 15
    while _remote_processes(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _remote_processes(marker), "the app on the server side has exited"
    journal = Path(settings.golden) / "labels.jsonl"
    import json

    written = [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]
    assert [(w["question"], w["chunk"]) for w in written] == intended
    assert [w["grade"] for w in written] == [int(g) for g in grades]
    assert {w["annotator"] for w in written} == {marker}


def _over_ssh(port: int, key: Path, args: list[str], cache_dir: Path) -> str:
    """The SSH client's command running the app with ``args`` on the server side (80x24,
    ``TERM=screen``)."""
    env = {
        "HF_HUB_OFFLINE": "1",
        "RAGTUI_CACHE_DIR": str(cache_dir),
        "TERM": "screen",
        "TEXTUAL_ANIMATIONS": "none",
        "PYTHONPATH": str(ROOT),
    }
    remote = (
        f"cd {shlex.quote(str(ROOT))} && exec env "
        + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        + f" {shlex.quote(sys.executable)} -m ragtui "
        + " ".join(shlex.quote(a) for a in args)
    )
    return (
        f"exec ssh -tt -p {port} -i {shlex.quote(str(key))} -o StrictHostKeyChecking=no"
        f" -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
        f" {os.environ.get('USER', 'root')}@127.0.0.1 {shlex.quote(remote)}"
    )


@needs_tmux
def test_two_people_and_an_adjudicator_over_ssh_at_80x24(
    sshd: tuple[int, Path], mini_settings: Settings, cache_dir: Path
) -> None:
    """Issue 33's done-when over a real sshd: ann then bob grade the same 40 pairs, neither sees the
    other's grade before their own, each status names the person's own grade; carol adjudicates,
    seeing both grades, and the disputed filter empties as the disputes are settled."""
    from tests.system.test_tmux_judging import (
        ANN_GRADE,
        BOB_GRADE,
        adjudicate_all,
        check_two_people_journal,
        disputed_after,
        judge_forty,
        two_people_args,
        two_people_settings,
    )

    port, key = sshd
    settings, total = two_people_settings(mini_settings)
    for who, grades, other in (("ann", ANN_GRADE, None), ("bob", BOB_GRADE, "ann")):
        pane = Pane()
        pane.start(_over_ssh(port, key, two_people_args(settings, who), cache_dir), 80, 24)
        try:
            judge_forty(pane, who, grades, other, total)  # each grade seen saved on screen
            pane.keys("C-q")
        finally:
            pane.kill()
    disputed = disputed_after(settings)
    pane = Pane()
    pane.start(_over_ssh(port, key, two_people_args(settings, "carol"), cache_dir), 80, 24)
    try:
        pane.wait_for("questions 8", 90, "carol's main screen")
        adjudicate_all(pane, disputed)
        pane.keys("C-q")
    finally:
        pane.kill()
    check_two_people_journal(settings, disputed)
