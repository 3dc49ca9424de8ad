"""Keeping the garbage collector off the loaded workspace, so a key never waits for a collection."""

from __future__ import annotations

import gc


class Heap:
    """Moves every object alive now (the workspace, its questions, rankings and pools) out of the
    garbage collector's reach (``gc.freeze``).

    A full collection walks every tracked object: with 100,000 questions that took 90-130 ms once
    every eight keys or so, the whole tail of the key-to-screen times (bench.app traces each
    collection). The workspace lives until the next load, so nothing is lost by not walking it.

    ``ragtui`` starts the app with collection off (``gc.disable``: no full collection walks the
    objects the imports and the load make while the first screen is on its way); ``settle`` turns
    it back on. The cycles the start left behind (some 10,000 objects, the same at 68 and 100,000
    questions) are frozen with the workspace rather than walked for 0.1 s; a reload collects them.
    """

    def __init__(self) -> None:
        #: Whether ``settle`` froze the heap (a later load unfreezes it first).
        self.frozen = False

    def settle(self, collect: bool = False) -> None:
        """Freeze what is alive now, and collect from now on (collection is off while the app
        starts). ``collect`` (after a reload, whose old workspace is frozen) unfreezes the heap
        and collects it once, a single pause after the new screen is drawn, before freezing it
        again."""
        if collect and self.frozen:
            gc.unfreeze()
            gc.collect()
        gc.freeze()
        self.frozen = True
        gc.enable()

    def refreeze(self) -> None:
        """Freeze what was made since, once the heap is settled: a screen's parts once it is
        drawn (the judging view's 500,000 pooled pairs at 100,000 questions, which the first full
        collection walked for 0.5 s inside a key). Nothing before the first ``settle``."""
        if self.frozen:
            gc.freeze()
