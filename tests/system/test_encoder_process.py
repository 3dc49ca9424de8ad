"""The embedding model read in a helper process (issue 26, item 5): the helper's vectors are this
process's, bit for bit; progress and a cancelled request go through the pipes; a helper that dies
is replaced by the model read here; a closed one reads nothing more; a helper whose app dies ends
too. The app starts it only once the first full screen is painted, and the first ad-hoc query then
gets its lists without the app process ever importing torch (``adhoc_preload_child``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from ragtui.core.retrieval.embeddings import Embedder
from ragtui.core.retrieval.encoder_process import BackgroundEmbedder, EncoderGone
from tests.conftest import ROOT, mini_args
from tests.tmux import Pane, app_env, needs_tmux, ragtui_command, shell_command

TEXTS = [
    "what is the lift of a wing in a propeller slipstream",
    "boundary layer transition at supersonic speeds",
    "heat transfer to a blunt body " * 60,  # longer than the model reads
    "x",
]


@pytest.fixture(scope="module")
def helper() -> Iterator[BackgroundEmbedder]:
    """One embedder whose model is read in a helper process (it takes seconds: once a module)."""
    embedder = BackgroundEmbedder()
    assert embedder.start() and not embedder.start(), "started once"
    assert embedder.helper is not None and embedder.helper.wait(300), embedder.helper.failure
    yield embedder
    embedder.close()


def test_the_helper_encodes_what_this_process_encodes(helper: BackgroundEmbedder) -> None:
    seen: list[tuple[int, int]] = []
    rows = helper.encode(TEXTS, lambda done, total: seen.append((done, total)))
    assert not helper.local.loaded, "the model was not read in this process"
    assert helper.loaded
    here = Embedder().encode(TEXTS)
    assert rows.dtype == np.float32 and np.array_equal(rows, here)
    assert np.array_equal(helper.encode(TEXTS[:1]), Embedder().encode(TEXTS[:1]))
    assert seen[0] == (0, len(TEXTS)) and seen[-1] == (len(TEXTS), len(TEXTS))


def test_a_withdrawn_request_leaves_the_helper_answering(helper: BackgroundEmbedder) -> None:
    class Stop(Exception):
        pass

    def stop(done: int, total: int) -> None:
        if done > 0:
            raise Stop

    many = [f"question number {i} about wings and flow" for i in range(200)]
    with pytest.raises(Stop):
        helper.encode(many, stop)
    # The pipes are in step: the next request gets its own answer.
    assert np.array_equal(helper.encode(TEXTS[:2]), Embedder().encode(TEXTS[:2]))


def test_a_helper_that_dies_gives_way_to_the_model_here(helper: BackgroundEmbedder) -> None:
    """(The module's helper ends here: the tests after this one start their own.)"""
    process = helper.helper
    assert process is not None and process._process is not None and process.ready
    process._process.kill()
    rows = helper.encode(TEXTS[:2])
    assert helper.local.loaded and np.array_equal(rows, Embedder().encode(TEXTS[:2]))
    assert not process.ready and "stopped answering" in process.failure


def test_a_closed_embedder_reads_no_model() -> None:
    embedder = BackgroundEmbedder()
    embedder.start()
    helper = embedder.helper
    assert helper is not None and helper._process is not None
    embedder.close()  # while the helper is still reading the model
    assert helper._process.poll() is not None, "the helper ended"
    with pytest.raises(EncoderGone):
        embedder.encode(["a question asked while quitting"])
    with pytest.raises(EncoderGone):
        embedder.load()
    assert not embedder.local.loaded and not embedder.start()


def test_the_helper_ends_when_its_app_dies() -> None:
    """A parent killed while its helper reads the model: the helper ends too (its stdin closes)."""
    code = (
        "import os, sys\n"
        "from ragtui.core.retrieval.encoder_process import BackgroundEmbedder\n"
        "b = BackgroundEmbedder(); b.start()\n"
        "print(b.helper._process.pid, flush=True)\n"
        "os._exit(0)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    pid = int(done.stdout.strip())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        if Path(f"/proc/{pid}/stat").is_file():
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            if state == "Z":  # ended, waiting for init to reap it
                return
        time.sleep(0.05)
    os.kill(pid, 9)
    raise AssertionError("the helper outlived its app by 10 s")


def test_the_app_reads_the_model_in_a_helper_after_the_first_full_screen(
    mini: Path, cache_dir: Path
) -> None:
    """A real app (headless, preloading asked for) on a warm cache, in a process of its own: the
    helper starts after the first full screen, and the first ad-hoc query's lists come without
    a 'loading model' step and without torch in the app's process."""
    env = {**os.environ, "RAGTUI_CACHE_DIR": str(cache_dir), "HF_HUB_OFFLINE": "1"}
    child = [sys.executable, "-m", "tests.adhoc_preload_child", str(mini)]
    # The first start fills the caches (and embeds, the first time ever): the next needs no model.
    first = subprocess.run(
        [*child, "--no-query"], capture_output=True, text=True, cwd=ROOT, env=env, timeout=600
    )
    assert first.returncode == 0, first.stderr
    done = subprocess.run(
        child,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**env, "RAGTUI_PRELOAD_MODEL": "1"},
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["helper_started"] is not None, got
    assert got["helper_started"] >= got["full_screen"], "the model waited for the first screen"
    # No 'loading model' step (on ONNX Runtime the lists may come before any step is shown).
    assert not any("loading model" in s for s in got["steps"]), got
    assert got["lists_match"] and got["vector_rows"] > 0, got
    assert got["query_vector_matches"], "the helper's vector is the model's"
    assert got["heavy_imports"] == [], "the app process never imported torch"
    # Without preloading (a headless app by default), no helper starts.
    assert json.loads(first.stdout.strip().splitlines()[-1])["helper_started"] is None


def _helpers_of(pid: int) -> list[int]:
    """The encoder helper processes among ``pid``'s descendants (the app's process tree)."""
    from tests.system.test_serve import live_children

    found, todo = [], [pid]
    while todo:
        for child in live_children(todo.pop()):
            todo.append(child)
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
            if b"ragtui.core.retrieval.encoder_process" in cmdline:
                found.append(child)
    return found


@needs_tmux
def test_on_a_terminal_the_helper_starts_when_the_ad_hoc_screen_opens(
    mini: Path, cache_dir: Path, tmp_path: Path
) -> None:
    """Issue 34 (footprint): an app on a terminal (tmux 100x30) with the vector retriever and a warm
    cache starts no helper process after its first screen (it held about 570 MB on every launch);
    ``a`` starts it (a query is then encoded there, as tested above)."""
    env = app_env(cache_dir, RAGTUI_PRELOAD_MODEL="")  # the default, whatever the shell says
    warm = subprocess.run(
        [*ragtui_command(), "eval", *mini_args(mini)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **env},
        timeout=600,
    )
    assert warm.returncode == 0, warm.stderr
    args = [*ragtui_command(), *mini_args(mini)]
    pane = Pane()
    pane.start(shell_command(args, env), 100, 30)
    try:
        pane.wait_for(lambda s: "hybrid" in s and "m01" in s, 90, "the first full screen")
        app = int(pane.value("#{pane_pid}"))
        time.sleep(3)  # the vector retriever is built after the first screen; no helper follows
        assert _helpers_of(app) == [], "a helper started though nothing needs the model"
        pane.keys("a")
        deadline = time.monotonic() + 20
        while not _helpers_of(app) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(_helpers_of(app)) == 1, "a did not start the helper"
        pane.keys("C-q")
    finally:
        pane.kill()
