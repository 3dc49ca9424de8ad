"""The dataclass code cache (``ragtui.cli.dataclass_cache``): the same classes, compiled once.

Each run is a process of its own with ``RAGTUI_CACHE_DIR`` set to the test's folder, as two
starts of ``ragtui`` are:
- a class made with the cache, cold or warm, is the class Python makes without it: the same
  signature and annotations, the same compiled code and flags, the same equality, hashing, repr
  and frozen errors;
- the second run compiles nothing that the first compiled; the app's import compiles nothing after
  a command ran, but what only the app imports;
- a cache file that is not safe to run (writable by others, a link) or not a table of code is
  read as no cache: nothing in it runs, and the run still works; a folder that cannot be written
  costs the cache, not the run.
"""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import ROOT

#: Dataclasses of every kind ragtui and Textual declare (the module has postponed annotations, as
#: ragtui's modules do), each described by what Python made of it.
CLASSES = textwrap.dedent(
    """\
    from __future__ import annotations

    import dataclasses
    import inspect
    import json
    import sys

    # The classes of a ragtui module (the cache keeps ragtui's, Textual's and Rich's only).
    __name__ = "ragtui.probe"
    sys.modules[__name__] = sys.modules["__main__"]
    from dataclasses import dataclass, field
    from typing import ClassVar


    @dataclass(frozen=True, slots=True)
    class Point:
        x: int
        y: float = 0.5
        tags: tuple[str, ...] = ()


    @dataclass(order=True)
    class Row:
        name: str
        values: list[int] = field(default_factory=list)
        seen: ClassVar[int] = 0


    @dataclass(frozen=True, kw_only=True)
    class Options:
        k: int = 3
        model: str | None = None


    @dataclass(eq=False)
    class Message:
        text: str


    def described(cls, *samples):
        methods = {}
        for name in ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__",
                     "__lt__"):
            fn = cls.__dict__.get(name)
            code = getattr(fn, "__code__", None)
            methods[name] = None if code is None else [
                code.co_code.hex(), code.co_flags, code.co_varnames, code.co_names,
                repr(getattr(fn, "__annotations__", None)),
            ]
        described = {
            "signature": str(inspect.signature(cls)),
            "methods": methods,
            "repr": [repr(s) for s in samples],
            "equal": samples[0] == samples[1],
            "hash": [hash(s) for s in samples] if cls.__dict__.get("__hash__") else None,
            "frozen": None,
        }
        try:
            setattr(samples[0], dataclasses.fields(cls)[0].name, 7)
        except dataclasses.FrozenInstanceError as exc:
            described["frozen"] = str(exc)
        return described


    print(json.dumps({
        "Point": described(Point, Point(1, tags=("a",)), Point(1, tags=("a",))),
        "Row": described(Row, Row("a", [1]), Row("a", [1])),
        "Options": described(Options, Options(k=5, model="m"), Options(k=5, model="m")),
        "Message": described(Message, Message("hi"), Message("hi")),
    }))
    """
)


def _run(
    code: str,
    cache: Path | str,
    *,
    hook: bool = True,
    check: bool = True,
    timeout: float = 120,
    cwd: Path = ROOT,
) -> subprocess.CompletedProcess[str]:
    """``code`` in a process of its own, with the cache installed first (as ``ragtui`` does)."""
    future = "from __future__ import annotations\n"
    install = "from ragtui.cli import dataclass_cache as _dc; _dc.install()\n" if hook else ""
    body = code.removeprefix(future)
    code = (future if body != code else "") + install + body
    env = {**os.environ, "RAGTUI_CACHE_DIR": str(cache), "PYTHONHASHSEED": "0"}
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=timeout,
        check=check,
    )


#: After the classes: how many texts the run compiled, then the cache saved.
COUNTED = "\nprint(len(_dc._new)); _dc.save()\n"


def _warmed(cache: Path) -> Path:
    """``cache`` holding the code of what importing the command line defines (the probe's runs
    import it too), so that a run's count is its own classes'."""
    _run("pass" + COUNTED, cache)
    return cache


def _cache_file(cache: Path) -> Path:
    (found,) = cache.glob("dataclass-code-*.marshal")
    return found


def test_classes_made_with_the_cache_are_the_classes_made_without(tmp_path: Path) -> None:
    plain = json.loads(_run(CLASSES, tmp_path, hook=False).stdout)
    cold = _run(CLASSES + COUNTED, _warmed(tmp_path)).stdout.splitlines()
    warm = _run(CLASSES + COUNTED, tmp_path).stdout.splitlines()
    assert json.loads(cold[0]) == plain
    assert json.loads(warm[0]) == plain
    # Postponed annotations stay the class's own: the generated __init__ is annotated with the
    # names, as Python annotates it, not with strings.
    assert "'x': '_type_x'" not in plain["Point"]["methods"]["__init__"][4]
    assert 15 <= int(cold[1]) <= 25  # four classes: their methods compiled once...
    assert int(warm[1]) == 0  # ...and then read from the file
    assert _cache_file(tmp_path).stat().st_mode & 0o777 == 0o600


def test_the_app_compiles_only_what_a_command_did_not(tmp_path: Path) -> None:
    """``ragtui eval``'s modules, then the app's import: the app compiles only its own modules'
    texts, and a second import of the app compiles none."""
    command = "import ragtui.cli.evaluate" + COUNTED
    app = "import ragtui.cli\nimport ragtui.tui.app" + COUNTED
    first = int(_run(command, tmp_path).stdout)
    app_cold = int(_run(app, tmp_path).stdout)
    app_warm = int(_run(app, tmp_path).stdout)
    assert first > 300
    assert 0 < app_cold < first
    assert app_warm == 0


def _evil_table(cache: Path, marker: Path) -> dict[bytes, object]:
    """The file's table with every entry's code replaced by code that writes ``marker``."""
    table = marshal.loads(_cache_file(cache).read_bytes())
    evil = compile(f"open({str(marker)!r}, 'w').close()", "<string>", "exec")
    return dict.fromkeys(table, evil)


#: Modes of a planted file that others may write, or read (as a checkout or an archive leaves it).
NOT_PRIVATE = {"group-writable": 0o620, "world-writable": 0o602, "readable by all": 0o644}


@pytest.mark.parametrize("unsafe", [*NOT_PRIVATE, "a link"])
def test_a_cache_file_that_is_not_private_is_never_run(tmp_path: Path, unsafe: str) -> None:
    cache, marker = tmp_path / "cache", tmp_path / "ran"
    _run(CLASSES + COUNTED, cache)
    path = _cache_file(cache)
    evil = marshal.dumps(_evil_table(cache, marker))
    if unsafe == "a link":
        target = tmp_path / "elsewhere.marshal"
        target.write_bytes(evil)
        target.chmod(0o600)
        path.unlink()
        path.symlink_to(target)
    else:
        path.write_bytes(evil)
        path.chmod(NOT_PRIVATE[unsafe])
    out = _run(CLASSES + COUNTED, cache).stdout.splitlines()
    assert not marker.exists()
    assert json.loads(out[0]) == json.loads(_run(CLASSES, cache, hook=False).stdout)
    assert int(out[1]) >= 15  # compiled again, as with no file


def test_the_cache_file_is_run_when_it_is_the_users_own(tmp_path: Path) -> None:
    """The check above is what keeps the code out: the same table, owned and private, runs."""
    cache, marker = tmp_path / "cache", tmp_path / "ran"
    _run(CLASSES + COUNTED, cache)
    path = _cache_file(cache)
    path.write_bytes(marshal.dumps(_evil_table(cache, marker)))
    path.chmod(0o600)
    _run(CLASSES, cache, check=False)  # the planted code breaks the classes: no matter
    assert marker.exists()


#: What a cache file may hold instead of a table of code, made from the good file's table.
NOT_CODE = {
    "empty": lambda table: b"",
    "garbage": lambda table: b"\x00garbage",
    "a list": lambda table: marshal.dumps(list(table.values())),
    "text for code": lambda table: marshal.dumps(dict.fromkeys(table, "1 / 0")),
    "other keys": lambda table: marshal.dumps({str(k): v for k, v in table.items()}),
}


@pytest.mark.parametrize("content", NOT_CODE.values(), ids=NOT_CODE.keys())
def test_a_cache_file_that_is_not_a_table_of_code_is_no_cache(
    tmp_path: Path, content: Callable[[dict[bytes, object]], bytes]
) -> None:
    _run(CLASSES + COUNTED, tmp_path)
    path = _cache_file(tmp_path)
    path.write_bytes(content(marshal.loads(path.read_bytes())))
    out = _run(CLASSES + COUNTED, tmp_path).stdout.splitlines()
    assert json.loads(out[0])["Point"]["equal"] is True
    assert int(out[1]) >= 15
    # ...and the save put a good table back: the next run compiles nothing.
    assert int(_run(CLASSES + COUNTED, tmp_path).stdout.splitlines()[1]) == 0


def test_a_pipe_in_the_cache_files_place_is_no_cache_and_no_wait(tmp_path: Path) -> None:
    """Opening a pipe to read waits for a writer: the file is opened without waiting, and a pipe
    is not a regular file."""
    _run(CLASSES + COUNTED, tmp_path)
    path = _cache_file(tmp_path)
    path.unlink()
    os.mkfifo(path)
    out = _run(CLASSES, tmp_path, timeout=30).stdout
    assert json.loads(out)["Point"]["equal"] is True


def test_a_cache_folder_that_cannot_be_written_costs_only_the_cache(tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    out = _run(CLASSES + COUNTED, blocked / "cache").stdout.splitlines()
    assert json.loads(out[0])["Row"]["equal"] is True
    assert blocked.read_text() == "not a folder"
    assert list(tmp_path.iterdir()) == [blocked]


def test_no_cache_folder_to_be_found_means_no_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """No home folder (``Path.home`` raises): ragtui starts without the cache, as before it."""
    import dataclasses

    from ragtui.cli import dataclass_cache

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(dataclass_cache, "cache_dir", no_home)
    monkeypatch.delattr(dataclasses, "exec", raising=False)
    dataclass_cache.install()
    assert not hasattr(dataclasses, "exec")
    dataclass_cache.save()  # nothing to save to: no error


def test_a_relative_cache_folder_is_no_cache(tmp_path: Path) -> None:
    """``RAGTUI_CACHE_DIR=cache`` would let the folder ragtui is started in choose the code it
    runs: a relative folder is no cache (nothing read from it, nothing written)."""
    first = tmp_path / "first"
    _run(CLASSES + COUNTED, first)
    planted = tmp_path / "cwd" / "cache"
    planted.mkdir(parents=True)
    marker = tmp_path / "ran"
    (planted / _cache_file(first).name).write_bytes(marshal.dumps(_evil_table(first, marker)))
    (planted / _cache_file(first).name).chmod(0o600)
    out = _run(CLASSES + COUNTED, "cache", cwd=tmp_path / "cwd").stdout.splitlines()
    assert not marker.exists()
    assert json.loads(out[0])["Point"]["equal"] is True
    assert int(out[1]) == 0  # no cache: nothing kept to save
    assert [p.name for p in planted.iterdir()] == [_cache_file(first).name]


def test_classes_of_other_modules_are_compiled_as_always(tmp_path: Path) -> None:
    """A test's, a plugin's or another program's dataclasses are not kept: the file holds the
    code of ragtui, Textual and Rich only."""
    elsewhere = CLASSES.replace('__name__ = "ragtui.probe"', '__name__ = "someone.else"')
    kept = len(marshal.loads(_cache_file(_warmed(tmp_path)).read_bytes()))
    out = _run(elsewhere + COUNTED, tmp_path).stdout.splitlines()
    assert json.loads(out[0])["Point"]["equal"] is True
    assert int(out[1]) == 0
    assert len(marshal.loads(_cache_file(tmp_path).read_bytes())) == kept


def test_what_else_exec_is_given_goes_to_exec() -> None:
    """A later ``dataclasses`` may pass ``exec`` more (Python 3.11's takes ``closure``): the cache
    passes it on instead of failing every class."""
    from ragtui.cli import dataclass_cache

    namespace: dict[str, object] = {}
    dataclass_cache._exec("made = 6 * 7", namespace, None, closure=None)
    assert namespace["made"] == 42
