"""The grade scale: the grades a person may give and what each means (``[grades]`` or ``golden/grades.json``).

A scale is a tuple of ``(grade, label)`` with grades contiguous from 0, at most ten of them since
the app grades with the digit keys. The project file's ``[grades]`` section wins over the golden
set's ``grades.json``; with neither, the scale is 0-2 with the words 0 not relevant, 1 partly, 2 answers fully.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from ragtui.core.data.corpus import decode_utf8, read_file
from ragtui.core.errors import InputError

#: One scale: (grade, label) pairs, grades 0, 1, ... in order.
GradeScale = tuple[tuple[int, str], ...]

#: The scale when nothing names one (the evidence rule gives 2, "answers fully").
DEFAULT_GRADE_SCALE: GradeScale = ((0, "not relevant"), (1, "partly"), (2, "answers fully"))
#: The most grades a scale may have: the app grades with the keys 0-9.
MAX_GRADES = 10
#: The file in a golden-set folder that may carry its scale.
GRADES_FILE = "grades.json"


def parse_grade_scale(table: Mapping[Any, Any]) -> GradeScale:
    """A scale from ``{"0": "not relevant", "1": "partly", ...}``; ValueError says what is wrong."""
    if not isinstance(table, Mapping):
        raise ValueError('expected a table of grade = "label", such as 0 = "not relevant"')
    grades: dict[int, str] = {}
    for key, label in table.items():
        raw = str(key).strip()
        if isinstance(key, bool) or not raw.isdigit():
            raise ValueError(f"{key!r} is not a grade (a whole number from 0 to {MAX_GRADES - 1})")
        grade = int(raw)
        if grade >= MAX_GRADES:
            raise ValueError(
                f"grade {grade} is above {MAX_GRADES - 1} (the app grades with digits)"
            )
        if grade in grades:
            raise ValueError(f"grade {grade} is given twice")
        if not isinstance(label, str) or not label.strip():
            raise ValueError(f"grade {grade}: the label must be a non-empty text")
        grades[grade] = label.strip()
    if len(grades) < 2:
        raise ValueError("a scale needs at least two grades (0 and 1)")
    missing = [g for g in range(max(grades) + 1) if g not in grades]
    if missing:
        raise ValueError(
            f"grades must run from 0 without gaps; missing {', '.join(map(str, missing))}"
        )
    return tuple(sorted(grades.items()))


def load_grade_scale(golden: str | Path) -> GradeScale | None:
    """The scale a golden-set folder carries in ``grades.json``, or None when it has none."""
    path = Path(golden) / GRADES_FILE
    if not path.exists():
        return None
    try:
        obj = orjson.loads(decode_utf8(path, read_file(path)))
    except orjson.JSONDecodeError as exc:
        raise InputError(path, f"malformed JSON ({exc.args[0].split(':')[0]})") from None
    except OSError as exc:
        raise InputError(path, f"cannot read the grade scale ({exc.strerror})") from None
    if not isinstance(obj, dict):
        raise InputError(path, 'expected an object such as {"0": "not relevant", "1": "relevant"}')
    try:
        return parse_grade_scale(obj)
    except ValueError as exc:
        raise InputError(path, str(exc)) from None
