"""The random sample of questions people judge fully, for the prediction-powered estimate.

The estimate (``eval --estimate``) corrects a model judge with the people's grades on questions
drawn at random: only then is the human-minus-model difference on them an unbiased guess of the
difference everywhere. Questions people chose themselves are not a random sample, so the draw is
recorded in ``sample.json`` beside the label journal: the seed, the questions it was drawn from
(their number and a hash of their ids), and the drawn questions in order. A person may judge the
first n of them; the estimate uses those that people judged fully.

Drawing is ``random.Random(seed).sample`` over the question ids in golden-set order: the same seed
and questions give the same sample on every machine.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson

from ragtui.core.errors import InputError
from ragtui.core.files import content_hash, read_regular, write_atomic
from ragtui.core.labelling.labels import now_iso

__all__ = ["SAMPLE_FILE", "HumanSample", "draw_sample", "load_sample", "save_sample"]

#: The file beside ``labels.jsonl`` that records the random sample.
SAMPLE_FILE = "sample.json"


def _ids_sha1(question_ids: Sequence[str]) -> str:
    return content_hash("\n".join(question_ids))


@dataclass(frozen=True, slots=True)
class HumanSample:
    """A random draw of questions: the seed, what it was drawn from, and the drawn ids in order."""

    seed: int
    population: int
    population_sha1: str
    questions: tuple[str, ...]
    at: str = ""

    def drawn_from(self, question_ids: Sequence[str]) -> bool:
        """Whether the sample was drawn from exactly these questions (in this order)."""
        return len(question_ids) == self.population and _ids_sha1(question_ids) == (
            self.population_sha1
        )

    def to_json(self) -> bytes:
        """The file's content."""
        return orjson.dumps(
            {
                "seed": self.seed,
                "population": self.population,
                "population_sha1": self.population_sha1,
                "questions": list(self.questions),
                "at": self.at,
            },
            option=orjson.OPT_INDENT_2,
        )


def draw_sample(question_ids: Sequence[str], n: int, seed: int) -> HumanSample:
    """``n`` questions drawn at random (``random.Random(seed)``) from ``question_ids`` (all when fewer)."""
    if n < 1:
        raise ValueError("a sample needs at least one question")
    ids = list(question_ids)
    drawn = random.Random(seed).sample(ids, min(n, len(ids)))
    return HumanSample(seed, len(ids), _ids_sha1(ids), tuple(drawn), now_iso())


def save_sample(golden: Path, sample: HumanSample) -> Path:
    """Write ``sample.json`` into the golden-set folder atomically; returns its path."""
    path = Path(golden) / SAMPLE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, sample.to_json() + b"\n", 0o644)
    return path


#: The largest ``sample.json`` read (a sample of 100,000 questions is about 2 MB).
MAX_SAMPLE_BYTES = 32 * 1048576


def load_sample(golden: Path) -> HumanSample | None:
    """The recorded sample of a golden-set folder, or None when there is none; InputError when it is malformed."""
    path = Path(golden) / SAMPLE_FILE
    try:
        raw = read_regular(path, limit=MAX_SAMPLE_BYTES)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(path, f"cannot read ({exc.strerror or exc})") from None
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InputError(path, f"malformed JSON ({exc.args[0].split(':')[0]})") from None
    if not isinstance(obj, dict):
        raise InputError(path, "expected a JSON object")
    seed, population, sha1, questions = (
        obj.get("seed"),
        obj.get("population"),
        obj.get("population_sha1"),
        obj.get("questions"),
    )
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise InputError(path, "'seed' must be a whole number")
    if not isinstance(population, int) or isinstance(population, bool) or population < 0:
        raise InputError(path, "'population' must be a whole number")
    if not isinstance(sha1, str):
        raise InputError(path, "'population_sha1' must be a string")
    if not isinstance(questions, list) or not all(isinstance(q, str) for q in questions):
        raise InputError(path, "'questions' must be a list of question ids")
    if len(set(questions)) != len(questions):
        raise InputError(path, "'questions' names a question twice")
    at = obj.get("at", "")
    return HumanSample(seed, population, sha1, tuple(questions), at if isinstance(at, str) else "")
