"""Every key in one ordered stream: any sequence of keys sent in one burst (a paste, tmux, SSH
coalescing keys) does exactly what the same keys typed slowly do.

Random key sequences (a fixed seed) of digits on and off the grade scale, ``u``, backspace, arrows,
tab, ``x``, ``j``, ``n`` and escape are played by two apps on two copies of the same data, one
sequence after the other: one app gets each key slowly (it settles and its workers finish after
every key), the other gets each sequence as one burst (every key posted before the app gets to
run). After every sequence the journal lines it wrote, the effective labels (question, chunk, grade
per annotator and adjudicated), the retired questions, the undo history and where the view is must
be the same in both.

A second run plays in the adjudication pass (the ``disputed`` filter, pairs that two other
annotators graded differently), where digits record adjudicated grades. A third sends 20 sequences
to the real app in tmux: one ``tmux send-keys`` call per sequence against one call per key.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
import re
import shutil
import uuid
from pathlib import Path
from typing import Any

from textual import events

from ragtui.core.labelling.journal import LabelJournal
from ragtui.core.settings import Settings
from ragtui.tui.app import RagtuiApp
from ragtui.tui.screens.judging import JudgingScreen
from tests.app.test_tui import WIDE, FakeEmbedder, run_async, wait_ready
from tests.system.test_tui_burst import App
from tests.tmux import needs_tmux

#: The seed of the generated sequences (fixed: a failure names the sequence to replay).
SEED = 23
#: Sequences played from the main screen, and in the adjudication pass.
MAIN_SEQUENCES = 160
ADJUDICATION_SEQUENCES = 40
#: Sequences sent to the real app in tmux.
TMUX_SEQUENCES = 20

#: The keys and how often each is drawn: grades on the scale (0-2) most, then off it, undo, clear,
#: moves, focus, retire, the judging view, the next unjudged pair, escape.
KEYS: tuple[tuple[str, int], ...] = (
    ("0", 6),
    ("1", 6),
    ("2", 6),
    ("3", 1),
    ("7", 1),
    ("u", 8),
    ("backspace", 3),
    ("up", 2),
    ("down", 3),
    ("left", 1),
    ("right", 2),
    ("tab", 4),
    ("x", 2),
    ("j", 3),
    ("n", 2),
    ("escape", 2),
)


def sequences(rng: random.Random, count: int) -> list[list[str]]:
    """``count`` key sequences of 3 to 10 keys."""
    names = [k for k, _ in KEYS]
    weights = [w for _, w in KEYS]
    return [rng.choices(names, weights, k=rng.randint(3, 10)) for _ in range(count)]


def _key(app: RagtuiApp, key: str) -> None:
    """Post one key to the app as the terminal driver does."""
    event = events.Key(key, key if len(key) == 1 else None)
    event.set_sender(app)
    app.post_message(event)


async def settle(pilot: Any) -> None:
    """Wait until the app, its screen and the focused widget have handled everything queued
    (keys, requests, a new screen's mounting, a forwarded key) and the workers are done; twice, as
    a key may push a screen whose messages come next. (Pilot's own wait walks every widget on the
    screen and sleeps until the process is idle: ten times slower, for nothing that keys change.)"""
    app: RagtuiApp = pilot.app
    loop = asyncio.get_running_loop()
    for _ in range(2):
        nodes = {app, app.screen, *((app.focused,) if app.focused is not None else ())}
        waiting = []
        for node in nodes:
            done = loop.create_future()
            if node.call_later(done.set_result, None):
                waiting.append(done)
        await asyncio.wait_for(asyncio.gather(*waiting), timeout=30)
        await app.workers.wait_for_complete()


def state(app: RagtuiApp, journal: Path, offset: int) -> dict[str, Any]:
    """What the keys left: the journal lines written since ``offset`` (without their time), the
    effective labels, the retired questions, the undo history, and the view (screen, pair, the
    main screen's question and focus)."""
    ws = app.workspace
    assert ws is not None
    lines = [json.loads(line) for line in journal.read_text().splitlines()[offset:]]
    for line in lines:
        line.pop("at", None)
    effective = {
        (q, c): (
            tuple(sorted((a, label.grade) for a, label in pair.annotators.items())),
            pair.adjudicated.grade if pair.adjudicated is not None else None,
        )
        for q, by_chunk in ws.grades.labels.pairs.items()
        for c, pair in by_chunk.items()
    }
    screen = app.screen
    view: tuple[object, ...] = (type(screen).__name__,)
    if isinstance(screen, JudgingScreen):
        current = screen.session.current
        view += (current.key if current is not None else None, screen.session.adjudicate)
    main = app.main_screen
    focused = main.focused
    return {
        "journal": lines,
        "labels": effective,
        "retired": sorted(ws.questions.retired_ids),
        "undo": [
            (e.kind, e.question, e.chunk, e.retired_before) for e in app.controller.undo_stack
        ],
        "view": view,
        "main": (main.current_qid, focused.id if focused is not None else None),
    }


def copy_of(settings: Settings, folder: Path) -> Settings:
    """The same data with its own golden set (and journal) in ``folder``."""
    shutil.copytree(Path(settings.golden), folder / "golden")
    return dataclasses.replace(settings, golden=folder / "golden")


async def disputes(pilot: Any) -> None:
    """Two other annotators disagree on three pairs; the list shows the disputed questions, and
    ``j`` opened the adjudication pass on them."""
    app: RagtuiApp = pilot.app
    ws = app.workspace
    assert ws is not None and ws.settings.golden is not None
    journal = Path(ws.settings.golden) / "labels.jsonl"
    pairs = [("m01", "ferry.md#0"), ("m01", "library.md#1"), ("m03", "library.md#1")]
    for annotator, grade in (("ann", 0), ("bob", 2)):
        other = LabelJournal(journal, annotator=annotator)
        for qid, cid in pairs:
            other.set_grade(qid, cid, grade, ws.passages.by_id[cid].sha1)
        other.close()
    app.poll_labels()
    await settle(pilot)
    assert len(ws.grades.disputed_pairs()) == len(pairs)
    app.main_screen.set_filter("disputed")
    _key(app, "j")
    await settle(pilot)
    assert isinstance(app.screen, JudgingScreen) and app.screen.adjudicate


async def play(
    settings: Settings, keys_list: list[list[str]], burst: bool, prepare: Any = None
) -> list[dict[str, Any]]:
    """Play every sequence on one app (slowly, or each as one burst); the state after each."""
    app = RagtuiApp(settings, embedder=FakeEmbedder())
    journal = Path(settings.golden or "") / "labels.jsonl"
    states = []
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        if prepare is not None:
            await prepare(pilot)
        offset = len(journal.read_text().splitlines()) if journal.exists() else 0
        for keys in keys_list:
            for key in keys:
                _key(app, key)
                if not burst:
                    await settle(pilot)
            await settle(pilot)
            states.append(state(app, journal, offset))
            offset = len(journal.read_text().splitlines()) if journal.exists() else 0
    return states


async def compare(
    settings: Settings, tmp_path: Path, keys_list: list[list[str]], prepare: Any = None
) -> list[dict[str, Any]]:
    """The slow play and the burst play leave the same state after every sequence (returned)."""
    slow = await play(copy_of(settings, tmp_path / "slow"), keys_list, False, prepare)
    fast = await play(copy_of(settings, tmp_path / "burst"), keys_list, True, prepare)
    for number, (keys, a, b) in enumerate(zip(keys_list, slow, fast, strict=True)):
        assert b == a, (
            f"sequence {number}: {' '.join(keys)} (after: "
            f"{' | '.join(' '.join(k) for k in keys_list[max(0, number - 2) : number])})\n"
            f"slow:  {a}\nburst: {b}"
        )
    # Every kind of change happened: grades, clears, undos, retirements, the judging view.
    lines = [line for a in slow for line in a["journal"]]
    assert any(line["grade"] is None for line in lines)
    assert len(lines) > len(keys_list)
    assert any(a["retired"] for a in slow)
    assert any(a["view"][0] == "JudgingScreen" for a in slow)
    return slow


@run_async
async def test_random_bursts_do_what_slow_keys_do(mini_settings: Settings, tmp_path: Path) -> None:
    """160 sequences from the main screen: after each, the burst left what the slow keys left."""
    settings = dataclasses.replace(mini_settings, cache_dir=tmp_path / "cache")
    await compare(settings, tmp_path, sequences(random.Random(SEED), MAIN_SEQUENCES))


@run_async
async def test_random_bursts_in_the_adjudication_pass(
    mini_settings: Settings, tmp_path: Path
) -> None:
    """40 sequences in the adjudication pass over pairs two other annotators disagree on."""
    settings = dataclasses.replace(mini_settings, cache_dir=tmp_path / "cache")
    keys_list = sequences(random.Random(SEED + 1), ADJUDICATION_SEQUENCES)
    states = await compare(settings, tmp_path, keys_list, disputes)
    lines = [line for a in states for line in a["journal"]]
    assert any(line.get("adjudicated") for line in lines), "no adjudicated grade was given"


#: Textual's key names as tmux names them.
TMUX_NAMES = {
    "backspace": "BSpace",
    "up": "Up",
    "down": "Down",
    "left": "Left",
    "right": "Right",
    "tab": "Tab",
    "escape": "Escape",
}


def tmux_sequences(rng: random.Random, count: int) -> list[list[str]]:
    """Sequences of tmux key names. Escape only ends a sequence: in one write a terminal sends
    escape and the next key as one sequence (``ESC 1`` is alt+1, ``ESC Tab`` shift+tab), which no
    app can tell from the keys typed slowly; the escape that ends a burst arrives alone."""
    out = []
    for keys in sequences(rng, count):
        keys = [k for k in keys if k != "escape"] or ["j"]
        if rng.random() < 0.3:
            keys.append("escape")
        out.append([TMUX_NAMES.get(k, k) for k in keys])
    return out


def view(screen: str) -> tuple[object, ...]:
    """Where the app is: the judging view's pair and counts, or the main screen's question and
    whether a result list has the focus (its footer offers Ungrade)."""
    judging = re.search(r"pair (\d+) of (\d+) · judged (\d+)/(\d+)", screen)
    if judging:
        return ("judging", *judging.groups())
    shown = re.search(r"╮ (m\d\d) ", screen)
    return ("main", shown.group(1) if shown else None, "Ungrade" in screen)


@needs_tmux
def test_tmux_bursts_do_what_slow_keys_do(tmp_path: Path) -> None:
    """20 sequences to the real app in tmux, each in one ``send-keys`` call to one app and one
    key at a time (waiting for the screen to settle) to another, on two copies of the small
    corpus: after each, both journals, retirements and views are the same."""
    keys_list = tmux_sequences(random.Random(SEED + 2), TMUX_SEQUENCES)
    socket = f"ragtui-burst-{uuid.uuid4().hex[:8]}"
    slow = App(socket, "slow", tmp_path / "slow")
    fast = App(socket, "burst", tmp_path / "burst")
    try:
        slow.ready()
        fast.ready()
        for number, keys in enumerate(keys_list):
            fast.keys(*keys)
            for key in keys:
                slow.keys(key)
                slow.settled()
            a, b = slow.settled(), fast.settled()
            assert (fast.journal(), fast.retired(), view(b)) == (
                slow.journal(),
                slow.retired(),
                view(a),
            ), f"sequence {number}: {' '.join(keys)}\nslow:\n{a}\nburst:\n{b}"
        assert len(slow.journal()) > TMUX_SEQUENCES
        slow.quit()
        fast.quit()
    finally:
        slow.kill()
