"""``ragtui serve`` without a browser: the command each session runs keeps the flags given, and binding
beyond loopback is warned about (the browser test is test_serve_browser.py)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from ragtui.cli.main import build_parser, settings_from
from ragtui.cli.serve import app_command, is_loopback


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
    ]
    args = build_parser().parse_args(argv)
    command = shlex.split(app_command(args))
    assert command[:3] == [sys.executable, "-m", "ragtui"]
    assert "serve" not in command and "--port" not in command
    # The app's own parse of the command gives the settings serve was given.
    app_args = build_parser().parse_args(command[3:])
    assert app_args.command is None
    assert settings_from(app_args) == settings_from(args)
    assert settings_from(app_args).runs == (("mine", tmp_path / "my run.trec"),)


def test_serving_beyond_loopback_warns(monkeypatch, capsys):
    from textual_serve import server

    served = {}

    def serve(self, debug: bool = False) -> None:
        served.update(command=self.command, host=self.host, port=self.port, url=self.public_url)
        served["templates"] = Path(self.templates_path)

    monkeypatch.setattr(server.Server, "serve", serve)
    from ragtui.cli import main

    assert main(["serve", "--host", "0.0.0.0", "--port", "8123", "--no-project"]) == 0
    err = capsys.readouterr().err
    assert "ragtui: warning: serving on 0.0.0.0:8123, beyond this machine" in err
    assert served["host"] == "0.0.0.0" and served["port"] == 8123
    assert (served["templates"] / "app_index.html").is_file()
    assert "googleapis" not in (served["templates"] / "app_index.html").read_text()
    assert main(["serve", "--no-project"]) == 0
    err = capsys.readouterr().err
    assert "warning" not in err and "serving the app on http://127.0.0.1:8000" in err
    assert served["url"] == "http://127.0.0.1:8000"


def test_a_port_out_of_range_is_a_usage_error(capsys):
    from ragtui.cli import main

    assert main(["serve", "--port", "70000", "--no-project"]) == 2
    assert "70000 is not a port" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["serve", "--port", "0"])
