"""A judge plugin for ragtui's tests.

``make`` is what a team writes to put its own grading behind ragtui: a factory returning an object
with ``grade(pairs)``. This one grades by the share of the question's words found in the chunk
(2 from 60 %, 1 from 30 %), so the tests know every grade it gives. The other factories misbehave
in every way a plugin can: they raise, exit, hang, return garbage or the wrong number of answers.
"""

from __future__ import annotations

import re
import sys
import threading
import time

_WORD = re.compile(r"\w+")


def _words(text):
    return {w for w in _WORD.findall(text.lower()) if len(w) > 3}


def overlap_grade(question, chunk):
    """The grade ``make``'s judge gives: 2 from 60 % of the question's words in the chunk, 1 from 30 %."""
    words = _words(question)
    if not words:
        return 0
    share = len(words & _words(chunk)) / len(words)
    return 2 if share >= 0.6 else 1 if share >= 0.3 else 0


class OverlapJudge:
    """Grades by word overlap; says which words it found."""

    model_id = "word-overlap"
    version = "2"
    batch_size = 4

    def __init__(self, scale_note="", answer_as="tuples"):
        self.scale_note = scale_note
        self.answer_as = answer_as
        self.prepared = None
        self.closed = False

    def prepare(self, scale, graded):
        self.prepared = (scale, len(graded))
        return (
            f"word overlap on {len(scale)} grades, {len(graded)} graded pairs seen{self.scale_note}"
        )

    def grade(self, pairs):
        out = []
        for pair in pairs:
            found = sorted(_words(pair.question) & _words(pair.chunk))
            grade = overlap_grade(pair.question, pair.chunk)
            if self.answer_as == "ints":
                out.append(grade)
            else:
                out.append((grade, f"shares {len(found)} words: {', '.join(found[:5])}"))
        return out

    def close(self):
        self.closed = True


def make(**options):
    """The factory: the project file's ``options`` arrive as keyword arguments."""
    return OverlapJudge(**options)


def grade_function(pairs):
    """A plain function is a judge too: every pair grade 1."""
    return [(1, "always partly") for _ in pairs]


def make_function():
    return grade_function


def make_raising_factory():
    raise RuntimeError("no GPU found")


def make_exiting_factory():
    sys.exit(3)


def make_without_grade():
    return object()


class _Misbehaving:
    def __init__(self, how, seconds=30.0):
        self.how = how
        self.seconds = seconds
        self.release = threading.Event()

    def grade(self, pairs):
        how = self.how
        if how == "raise":
            raise ValueError("the model server is down")
        if how == "exit":
            sys.exit(7)
        if how == "interrupt":
            raise KeyboardInterrupt
        if how == "hang":
            self.release.wait(self.seconds)
            return [(1, "late") for _ in pairs]
        if how == "none":
            return None
        if how == "text":
            return "2"
        if how == "dict":
            return {"grade": 2}
        if how == "fewer":
            return [(1, "one")] * (len(pairs) - 1)
        if how == "more":
            return [(1, "one")] * (len(pairs) + 1)
        if how == "endless":

            def forever():
                while True:
                    yield (1, "again")

            return forever()
        if how == "mixed":
            # Per pair: off the scale, a bool, a float, a bad tuple, no grade with a reason, fine.
            items = [
                (7, "seven"),
                (True, "yes"),
                (2.0, "two"),
                (1, 2, 3),
                (None, "refused to judge"),
                (2, "fine"),
            ]
            return [items[i % len(items)] for i in range(len(pairs))]
        if how == "hostile-text":

            class Evil(str):
                def __str__(self):
                    raise RuntimeError("str() of the reason")

            return [(1, Evil("evil")) for _ in pairs]
        raise AssertionError(how)


def make_misbehaving(how, seconds=30.0):
    return _Misbehaving(how, seconds)


class _HangingPrepare(OverlapJudge):
    def prepare(self, scale, graded):
        time.sleep(30)
        return "never"


def make_hanging_prepare():
    return _HangingPrepare()


class _ExitingPrepare(OverlapJudge):
    def prepare(self, scale, graded):
        raise SystemExit("bye")


def make_exiting_prepare():
    return _ExitingPrepare()
