"""The atomic-write and lock helpers every writer uses (ragtui.core.files)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from ragtui.core.files import atomic_writer, locked, write_atomic


def test_a_failed_write_leaves_the_old_file_and_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "runs.json"
    path.write_bytes(b"old")

    def write_half() -> None:
        with atomic_writer(path) as out:
            out.write(b"half of the new")
            raise RuntimeError("disk gone")

    with pytest.raises(RuntimeError):
        write_half()
    assert path.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs.json"]


def test_the_replaced_files_mode_is_kept_and_a_given_mode_wins(tmp_path: Path) -> None:
    path = tmp_path / "questions.jsonl"
    path.write_bytes(b"a\n")
    os.chmod(path, 0o640)
    write_atomic(path, b"a\nb\n")
    assert path.read_bytes() == b"a\nb\n" and path.stat().st_mode & 0o7777 == 0o640
    write_atomic(path, b"c\n", mode=0o600)
    assert path.stat().st_mode & 0o7777 == 0o600


def test_threads_writing_one_file_at_once_never_mix_their_bytes(tmp_path: Path) -> None:
    """Each writer has its own temporary file (a name per process was shared by threads)."""
    path = tmp_path / "manifest.json"
    contents = [bytes([65 + i]) * 200_000 for i in range(6)]
    errors: list[BaseException] = []

    def write(data: bytes) -> None:
        try:
            for _ in range(20):
                write_atomic(path, data)
        except BaseException as exc:  # reported below: a thread's exception is otherwise lost
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(c,)) for c in contents]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert path.read_bytes() in contents
    assert [p.name for p in tmp_path.iterdir()] == ["manifest.json"]


def test_a_lock_waiting_on_a_replaced_file_moves_to_the_new_one(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_bytes(b"old\n")
    got: list[int] = []
    with locked(path) as fd:
        old_inode = os.fstat(fd).st_ino
        waiter = threading.Thread(target=lambda: _lock_and_record(path, got))
        waiter.start()
        waiter.join(0.3)
        assert waiter.is_alive(), "the second lock must wait"
        write_atomic(path, b"new\n")
    waiter.join(10)
    assert got and got[0] != old_inode and got[0] == path.stat().st_ino


def _lock_and_record(path: Path, got: list[int]) -> None:
    with locked(path) as fd:
        got.append(os.fstat(fd).st_ino)
