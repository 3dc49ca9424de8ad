"""Every file ragtui reads of a kind that a person or another tool may have replaced: a FIFO never
blocks, a device or an oversized file is never read whole, and a second judge run on one journal
is refused (issue 32's hostile cases)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from ragtui.core.errors import InputError
from ragtui.core.files import TooLargeError, read_regular
from ragtui.core.judges.prompt import load_prompt
from ragtui.core.judges.run import sole_judge_run
from ragtui.core.judges.sample import SAMPLE_FILE, load_sample


def _within(seconds: float, call) -> object:
    """``call()``'s result, failing the test when it has not returned within ``seconds`` (a hang)."""
    out: list[object] = []
    worker = threading.Thread(target=lambda: out.append(_run(call)), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "it hung"
    return out[0]


def _run(call):
    try:
        return call()
    except InputError as exc:
        return exc


def test_a_sample_that_is_a_fifo_or_a_device_is_one_error_not_a_hang(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / SAMPLE_FILE)
    error = _within(5, lambda: load_sample(tmp_path))
    assert isinstance(error, InputError) and "FIFO" in str(error) and SAMPLE_FILE in str(error)
    (tmp_path / SAMPLE_FILE).unlink()
    (tmp_path / SAMPLE_FILE).symlink_to("/dev/zero")
    error = _within(5, lambda: load_sample(tmp_path))
    assert isinstance(error, InputError) and "not a regular file" in str(error)


def test_a_file_over_its_kinds_limit_is_refused_without_being_read_whole(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 4096)
    with pytest.raises(TooLargeError, match="over 2 KB"):
        read_regular(big, limit=2048)
    assert read_regular(big, limit=4096) == b" " * 4096


def test_a_prompt_that_is_a_fifo_does_not_block(tmp_path: Path) -> None:
    fifo = tmp_path / "prompt.txt"
    os.mkfifo(fifo)
    error = _within(5, lambda: load_prompt(fifo))
    assert isinstance(error, InputError) and "FIFO" in str(error)


def test_a_second_judge_run_on_one_journal_is_refused_with_one_line(tmp_path: Path) -> None:
    journal = tmp_path / "labels.jsonl"
    refused = pytest.raises(InputError, match="another ragtui judge is writing verdicts")
    with sole_judge_run(journal), refused as err, sole_judge_run(journal):
        pass
    assert "\n" not in str(err.value)
    with sole_judge_run(journal):  # free again once the first run ended
        pass
