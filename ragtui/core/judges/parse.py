"""Reading a grade and a reason from what a chat model answered.

Models answer in many shapes, whatever the prompt asked: a bare digit, ``Grade: 2``,
``**Grade:** 2``, UMBRELA's ``##final score: 2`` or ``O = 2``, JSON (``{"grade": 2, "reason": …}``,
or ``score`` / ``relevance``), JSON in a fenced code block, or reasoning first and the answer last
(a ``<think>`` block included). ``parse_grade`` reads all of them and returns a ``Verdict``:

- the grade is the **last** grade the answer states with a word that names it (``grade``,
  ``score``, ``rating``, ``relevance``, ``final answer``, UMBRELA's ``O``) or as a line of its own
  (a bare ``2``, first or last); a number in the reasoning that is not stated as the grade (``step 1``,
  ``2 parts``) is never read as one, and a grade stated in passing in the reasoning is superseded
  by the last one;
- a grade can be a digit, a number word (``two``), ``2/2`` or ``2 out of 2`` (out of the scale's
  top grade), or one of the scale's own words (``Grade: partly``);
- it is a failure, never a grade, when the answer states no grade, refuses (``I can't help with
  that``), gives a grade outside the scale, a fraction of one (``1.5``), two at once (``1 or 2``),
  or two different grades as its answer (two grade lines, two final grades, JSON and text that
  differ, a number and another grade's words);
- the reason is one sentence: the answer's ``Reason:`` (or JSON ``reason``, ``explanation``...),
  else the sentence next to the grade, on one line, markdown and control characters removed, at
  most ``labels.MAX_REASON`` characters.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ragtui.core.data.grades import GradeScale
from ragtui.core.judges.base import Verdict
from ragtui.core.labelling.labels import MAX_REASON
from ragtui.core.text import has_control, visible_line, without_escapes

__all__ = [
    "CONFLICTING",
    "MAX_ANSWER_CHARS",
    "OUTSIDE",
    "REFUSED",
    "UNREADABLE",
    "clean_reason",
    "is_refusal",
    "parse_grade",
]

#: What a failure line starts with (``KIND: detail``; ``ragtui judge`` counts failures by it).
UNREADABLE = "unreadable answer"
REFUSED = "refused"
OUTSIDE = "grade outside the scale"
CONFLICTING = "conflicting grades"

#: The most of an answer read (its end, where the grade is): answers are bounded by max_tokens anyway.
MAX_ANSWER_CHARS = 100_000

_WORDS = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
}
_NUMBER = (
    r"(?P<neg>-\s*)?(?P<num>\d+(?:\.\d+)?|(?i:zero|one|two|three|four|five|six|seven|eight|nine)\b)"
)
#: What may wrap a value: markdown emphasis, quotes, brackets.
_WRAP = r"[*_`\"'\[(]*"
_UNWRAP = r"[*_`\"'\])]*"
#: After a value: ``/2`` or ``out of 2``, then a second grade (``or 2``, ``-2``, ``to 2``).
_TAIL = (
    r"(?:\s*\(?\s*(?:/|(?i:out\s+of))\s*(?P<outof>\d+)\)?)?"
    r"(?P<alt>\s*(?:(?i:or|to|and)\s+|[-–—]\s*)"
    r"[*_`\"'\[(]*(?:\d+\b|(?i:zero|one|two|three|four|five|six|seven|eight|nine)\b))?"
)


def _key(names: str) -> str:
    return r"(?P<final>(?i:final|overall)\s+)?(?:(?i:relevance)\s+)?(?P<key>(?i:" + names + "))"


#: The words that name a grade: the strong ones in any statement, the weak ones only before ``:``/``=``.
_STRONG = "grade|score|rating"
_WEAK = "relevance|judge?ment|label|answer|verdict"
_KEY = _key(f"{_STRONG}|{_WEAK}")
#: ``Grade: 2``, ``**Grade:** 2``, ``grade = 2``, ``"score": 2``, ``Grade 2`` (not ``Grade 2:``:
#: a scale echoed back), ``grade is 2``, ``a grade of 2``.
_STATED = re.compile(
    r"(?<![A-Za-z])" + _key(_STRONG) + r"(?![A-Za-z])[*_`\"']*"
    r"(?:\s*(?:[:=]|(?i:is|of|would\s+be|should\s+be|will\s+be))\s*[*_`\"']*\s*(?i:an?\s+)?"
    r"|[ \t]+(?=[*_`\"'\[(]*-?\d+\b(?!\s*[:=])))" + _WRAP + _NUMBER + _UNWRAP + _TAIL
)
#: ``Relevance: 2``, ``Final answer: 2``, ``"relevance": 2``.
_STATED_WEAK = re.compile(
    r"(?<![A-Za-z])"
    + _key(_WEAK)
    + r"(?![A-Za-z])[*_`\"']*\s*[:=]\s*[*_`\"']*\s*"
    + _WRAP
    + _NUMBER
    + _UNWRAP
    + _TAIL
)
#: UMBRELA's ``O = 2`` (overall), case-sensitive so that a lowercase ``o`` is not one.
_UMBRELA_O = re.compile(r"(?<![A-Za-z])O\s*[:=]\s*" + _WRAP + _NUMBER + _UNWRAP + _TAIL)
#: ``I'd grade it 2``, ``I give this passage a 1``, ``rate it as 2``.
_VERB = re.compile(
    r"(?i:\b(?:grade|rate|score|give|assign|award)s?\s+(?:it|this|this\s+passage|the\s+passage)"
    r"\s+(?:as\s+)?(?:an?\s+)?(?:grade\s+(?:of\s+)?)?)" + _WRAP + _NUMBER + _UNWRAP + _TAIL
)
#: A heading naming the grade, its value on the next line (``### Grade\n\n2``).
_HEADING = re.compile(
    r"(?m)^[\s#>*_-]*" + _KEY + r"[\s*_:]*\n\s*\n?[ \t*_`]*" + _NUMBER + r"[ \t*_`.]*$"
)
#: ``Grade: partly``: the words after the key, to be compared with the scale's labels.
_STATED_WORDS = re.compile(
    r"(?m)(?<![A-Za-z])" + _KEY + r"(?![A-Za-z])[*_`\"']*\s*[:=]\s*(?P<words>[^\n]+)$"
)
#: A value alone (a JSON string, a line of its own): ``2``, ``-1``, ``2/2``, ``1 or 2``.
_VALUE_ONLY = re.compile(_WRAP + _NUMBER + _UNWRAP + _TAIL + r"[\s.]*")
_REASON = re.compile(
    r"(?im)(?:^|[{,])[\s#>*_\-\"']*(?:reason(?:ing)?|explanation|rationale|justification|why)"
    r"[\s*_\"']*[:=][\s*_\"']*(?P<text>[^\n]*)"
)
_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.S)
_THINK_END = re.compile(r"</think(?:ing)?>", re.I)
_THINK_START = re.compile(r"<think(?:ing)?>", re.I)
_REFUSAL = re.compile(
    r"(?i)\b(?:i\s+(?:can\s*not|can't|cannot|won't|will\s+not|am\s+(?:not\s+able|unable)|must\s+decline)"
    r"|i'm\s+(?:not\s+able|unable)|as\s+an\s+ai\b|i\s+apologi[sz]e|i'm\s+sorry|i\s+am\s+sorry)"
)
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_ENDS = re.compile(r"[.!?](?=\s)")
#: A list item's or a step's number at a reason's start (``2.``, ``Step 3:``).
_LIST_ITEM = re.compile(r"^(?:(?i:step)\s+)?\d+[.):]\s+")
_MARKDOWN = re.compile(r"^[\s#>*\-]+", re.M)
_EMPHASIS = re.compile(r"\*\*|__|`")

#: How far around a stated grade its line is read.
_LINE_WINDOW = 300
#: The most ``{`` at which a JSON object inside prose is tried (a brace a try, each may read far).
_JSON_TRIES = 64
#: How deep in nested objects a grade and a reason are looked for.
_JSON_DEPTH = 3
_JSON_GRADE_KEYS = (
    "final_grade",
    "final_score",
    "grade",
    "score",
    "relevance_grade",
    "relevance_score",
    "relevance",
    "rating",
    "o",
)
_JSON_REASON_KEYS = ("reason", "reasoning", "explanation", "rationale", "justification", "why")


@dataclass(frozen=True, slots=True)
class _Stated:
    """One grade the answer states: where, the grade or what is wrong with it, and how it is stated."""

    start: int
    end: int
    grade: int | None
    problem: str
    final: bool
    on_own_line: bool


def _failure(problem: str) -> Verdict:
    return Verdict(None, failure=problem)


def _glimpse(text: str, limit: int = 60) -> str:
    flat = visible_line(" ".join(text.split()))
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _span(scale: GradeScale) -> str:
    return f"{scale[0][0]}–{scale[-1][0]}"


def _label_grade(words: str, scale: GradeScale) -> int | None:
    """The grade whose label ``words`` is (case, markdown and punctuation aside), or None."""
    wanted = " ".join(re.sub(r"[*_`\"'\[\]().,;:!]", " ", words).lower().split())
    for grade, label in scale:
        if wanted and wanted == " ".join(label.lower().split()):
            return grade
    return None


def _value(match: re.Match[str], scale: GradeScale) -> tuple[int | None, str]:
    """A stated value's grade, or None and what is wrong with it."""
    groups = match.groupdict()
    return _grade_of(
        groups["num"], bool(groups.get("neg")), groups.get("outof"), groups.get("alt"), scale
    )


def _grade_of(
    num: str, negative: bool, outof: str | None, alt: str | None, scale: GradeScale
) -> tuple[int | None, str]:
    """The grade a number (a digit string or a number word) stands for, or None and what is wrong."""
    top = scale[-1][0]
    if alt:
        return None, f"{CONFLICTING}: two at once ({_glimpse(num + alt, 40)})"
    if num.lower() in _WORDS:
        value = _WORDS[num.lower()]
    elif "." in num:
        number = float(num)
        if not number.is_integer():
            return None, f"{UNREADABLE}: {num} is not a whole grade"
        value = int(number)
    else:
        value = int(num) if len(num) <= 4 else 10**4
    if negative:
        return None, f"{OUTSIDE}: -{num} (the scale is {_span(scale)})"
    if outof is not None and int(outof) != top:
        return None, f"{OUTSIDE}: a grade out of {outof} (the scale is {_span(scale)})"
    if not 0 <= value <= top:
        return None, f"{OUTSIDE}: {num} (the scale is {_span(scale)})"
    return value, ""


def _line_of(text: str, start: int, end: int) -> tuple[str, str]:
    """The text before and after a span on its line (at most ``_LINE_WINDOW`` characters each way:
    a statement is read with its neighbourhood, and an answer of one long line stays linear)."""
    low = max(0, start - _LINE_WINDOW)
    high = min(len(text), end + _LINE_WINDOW)
    line_start = text.rfind("\n", low, start) + 1 or low
    line_end = text.find("\n", end, high)
    return text[line_start:start], text[end : high if line_end < 0 else line_end]


def _own_line(text: str, start: int, end: int, scale: GradeScale) -> bool:
    """Whether a statement is its line's whole content (but for markdown, and the grade's words)."""
    before, after = _line_of(text, start, end)
    if re.search(r"[A-Za-z0-9]", before):
        return False
    rest = re.sub(r"^[\s*_`.)\]:—–-]*", "", after).strip()
    return not rest or _label_grade(rest, scale) is not None


def _words_conflict(text: str, end: int, grade: int, scale: GradeScale) -> str:
    """What is wrong when a number is followed by another grade's words (``1 (answers fully)``)."""
    _, after = _line_of(text, end, end)
    rest = re.sub(r"^[\s*_`.:—–-]*", "", after).strip()
    named = _label_grade(rest, scale) if rest else None
    if named is not None and named != grade:
        return f"{CONFLICTING}: {grade} with the words of grade {named} ({_glimpse(rest.strip('()'), 30)})"
    return ""


def _statements(text: str, scale: GradeScale) -> list[_Stated]:
    """Every grade the text states, in order (overlapping matches: the earliest, longest one)."""
    found: list[_Stated] = []
    for pattern in (_STATED, _STATED_WEAK, _UMBRELA_O, _VERB, _HEADING):
        for match in pattern.finditer(text):
            grade, problem = _value(match, scale)
            if grade is not None:
                problem = _words_conflict(text, match.end(), grade, scale)
                grade = None if problem else grade
            final = pattern is _UMBRELA_O or (
                pattern is not _VERB and match.group("final") is not None
            )
            found.append(
                _Stated(
                    match.start(),
                    match.end(),
                    grade,
                    problem,
                    final,
                    pattern is _HEADING or _own_line(text, match.start(), match.end(), scale),
                )
            )
    for match in _STATED_WORDS.finditer(text):
        grade = _label_grade(match.group("words"), scale)
        if grade is not None:
            final = bool(match.group("final"))
            found.append(_Stated(match.start(), match.end(), grade, "", final, True))
    found.sort(key=lambda s: (s.start, -s.end))
    kept: list[_Stated] = []
    for stated in found:
        if kept and stated.start < kept[-1].end:
            continue
        kept.append(stated)
    return kept


def _bare(line: str, scale: GradeScale) -> tuple[int | None, str] | None:
    """A line that is only a grade (``2``, ``**2**``, ``[2]``, ``2.``, a scale's words): its grade
    or problem; None when the line is something else."""
    core = re.sub(r"^[\s*_`\"'\[(#>]+|[\s*_`\"'\])!.]+$", "", line)
    number = _VALUE_ONLY.fullmatch(core)
    if number is not None:
        return _value(number, scale)
    label = _label_grade(core, scale)
    if label is not None:
        return label, ""
    return None


def _first_sentence(text: str) -> str:
    parts = _SENTENCE_END.split(text.strip(), maxsplit=1)
    return parts[0] if parts else ""


def _last_sentence(text: str) -> str:
    parts = [p for p in _SENTENCE_END.split(text.strip()) if p.strip()]
    return parts[-1] if parts else ""


def clean_reason(text: str) -> str:
    """A reason as the journal keeps it: one line, markdown and control characters removed, at most
    ``MAX_REASON`` characters."""
    text = without_escapes(text)
    flat = " ".join(_MARKDOWN.sub(" ", _EMPHASIS.sub("", text)).split()).strip(" \"'")
    flat = _LIST_ITEM.sub("", flat)
    flat = "".join(ch for ch in flat if not has_control(ch))
    if not re.search(r"[^\W\d_]{2}", flat):  # no word in it: ``M = 2, T = 1`` says nothing
        return ""
    if flat[:2] in ('{"', "{'", "[{", "[["):  # JSON the parser could not read is not a sentence
        return ""
    return flat if len(flat) <= MAX_REASON else flat[: MAX_REASON - 1] + "…"


def is_refusal(text: str) -> bool:
    """Whether an answer opens by refusing (``I'm sorry, but I can't help with that``)."""
    opening = text.strip().replace("’", "'")[:200]
    return _REFUSAL.search(_first_sentence(opening) or opening) is not None


def _json_objects(text: str) -> list[tuple[int, int, dict[str, Any]]]:
    """The JSON objects in the text (whole, fenced, or inside prose), with their spans, in order."""
    out: list[tuple[int, int, dict[str, Any]]] = []
    decoder = json.JSONDecoder()

    def add(start: int, end: int, value: Any) -> None:
        if isinstance(value, list) and len(value) == 1:
            value = value[0]
        if isinstance(value, dict):
            out.append((start, end, value))

    stripped = text.strip()
    if stripped[:1] in "{[":
        whole = _loads(stripped)
        if whole is not None:
            add(0, len(text), whole)
            return out
    for fence in _FENCE.finditer(text):
        body = fence.group(1).strip()
        if body[:1] in "{[":
            add(fence.start(), fence.end(), _loads(body))
    if out:
        return out
    position = text.find("{")
    tries = 0
    while position >= 0 and tries < _JSON_TRIES:
        tries += 1
        try:
            value, end = decoder.raw_decode(text, position)
        except (ValueError, RecursionError):
            position = text.find("{", position + 1)
            continue
        add(position, end, value)
        position = text.find("{", end)
    return out


def _loads(text: str) -> Any:
    """The JSON value of ``text``, or None when it is not JSON (or nested past what Python can read)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _json_grade(
    obj: dict[str, Any], scale: GradeScale, depth: int = 0
) -> tuple[int | None, str] | None:
    """The grade a JSON object gives (or what is wrong with it); None when it names no grade."""
    lowered = {str(k).lower(): v for k, v in obj.items()}
    for key in _JSON_GRADE_KEYS:
        if key not in lowered:
            continue
        value = lowered[key]
        if isinstance(value, bool) or value is None:
            return None, f"{UNREADABLE}: the JSON's {key} is {json.dumps(value)}"
        if isinstance(value, int | float):
            value = str(int(value)) if float(value).is_integer() else str(value)
        if isinstance(value, str):
            bare = _bare(value, scale)
            if bare is not None:
                return bare
            number = _VALUE_ONLY.fullmatch(value.strip())
            if number is not None:
                return _value(number, scale)
            return None, f"{UNREADABLE}: the JSON's {key} is {_glimpse(value, 30)!r}"
        return None, f"{UNREADABLE}: the JSON's {key} is not a number"
    if depth < _JSON_DEPTH:
        for value in obj.values():
            if isinstance(value, dict):
                inner = _json_grade(value, scale, depth + 1)
                if inner is not None:
                    return inner
    return None


def _json_reason(obj: dict[str, Any], depth: int = 0) -> str:
    lowered = {str(k).lower(): v for k, v in obj.items()}
    for key in _JSON_REASON_KEYS:
        if isinstance(lowered.get(key), str) and lowered[key].strip():
            return str(lowered[key])
    if depth < _JSON_DEPTH:
        for value in obj.values():
            if isinstance(value, dict) and (inner := _json_reason(value, depth + 1)):
                return inner
    return ""


def _text_reason(text: str, stated: _Stated | None, scale: GradeScale) -> str:
    """The answer's ``Reason:``; else, for a grade stated inside a sentence, that sentence; else the
    sentence before the grade, else the one after it (``stated`` None: the text's last sentence)."""
    start, end = (stated.start, stated.end) if stated is not None else (len(text), len(text))
    labelled = [m for m in _REASON.finditer(text) if m.group("text").strip(" *_\"',}")]
    if labelled:
        match = labelled[-1]
        rest = text[match.start("text") :]
        # A reason runs to its paragraph's end, or to the grade when the grade follows on its line.
        stop = len(rest)
        for cut in (rest.find("\n\n"), start - match.start("text")):
            if 0 < cut < stop:
                stop = cut
        body = re.split(r"\n(?=[\s#>*_\-\"']*[A-Za-z ]{1,30}[*_\"']*\s*[:=])", rest[:stop])[0]
        return _first_sentence(body.strip().rstrip(",}").strip("\"'"))
    if stated is not None and not stated.on_own_line:
        ends = [m.end() for m in _ENDS.finditer(text, 0, start)]
        opening = max([text.rfind("\n", 0, start) + 1, *ends])
        closing = _ENDS.search(text, end)
        return text[opening : closing.end() if closing else len(text)]
    before = re.sub(r"[\s#>*_\-:]*(?i:final|overall)?[\s#>*_\-:]*$", "", text[:start])
    sentence = _last_sentence(before)
    if re.search(r"[A-Za-z]{3}", sentence):
        return sentence
    after = _first_sentence(re.sub(r"^[\s*_`.)\]:—–-]*", "", text[end:]))
    return "" if _label_grade(after, scale) is not None else after


def parse_grade(answer: str, scale: GradeScale) -> Verdict:
    """The grade and reason in a model's answer on ``scale``, or a failure saying why there is none.

    Never raises: anything unreadable is a ``Verdict`` without a grade (see the module's rules).
    """
    text = answer[-MAX_ANSWER_CHARS:] if len(answer) > MAX_ANSWER_CHARS else answer
    ends = list(_THINK_END.finditer(text))
    if ends:
        text = text[ends[-1].end() :]
    elif _THINK_START.search(text):
        return _failure(f"{UNREADABLE}: it ended inside its reasoning (<think> without </think>)")
    text = text.replace("\r\n", "\n").replace("\r", "\n").strip()
    if not text:
        return _failure(f"{UNREADABLE}: the answer is empty")

    # JSON: the last object that names a grade; a different grade stated after it is a conflict.
    for start, end, obj in reversed(_json_objects(text)):
        graded = _json_grade(obj, scale)
        if graded is None:
            continue
        grade, problem = graded
        if grade is None:
            return _failure(problem)
        others = sorted(
            s.grade for s in _statements(text[end:], scale) if s.grade not in (None, grade)
        )
        if others:
            return _failure(f"{CONFLICTING}: {grade} in the JSON, {others[0]} after it")
        before = [s for s in _statements(text[:start], scale) if s.grade not in (None, grade)]
        if any(s.final or s.on_own_line for s in before):
            other = next(s.grade for s in before if s.final or s.on_own_line)
            return _failure(f"{CONFLICTING}: {other} before the JSON, {grade} in it")
        reason = _json_reason(obj) or _text_reason(text[:start], None, scale)
        return Verdict(grade, clean_reason(_first_sentence(reason)))

    stated = _statements(text, scale)
    if stated:
        last = stated[-1]
        if last.grade is None:
            return _failure(last.problem)
        decisive = {s.grade for s in stated if (s.final or s.on_own_line) and s.grade is not None}
        if decisive - {last.grade}:
            other = min(decisive - {last.grade})
            return _failure(f"{CONFLICTING}: {other} and {last.grade}")
        return Verdict(last.grade, clean_reason(_text_reason(text, last, scale)))

    lines = [line for line in text.split("\n") if line.strip()]
    first = _bare(lines[0], scale)
    last_bare = _bare(lines[-1], scale) if len(lines) > 1 else None
    if first is not None and last_bare is not None and first[0] != last_bare[0]:
        return _failure(f"{CONFLICTING}: {first[0]} on the first line, {last_bare[0]} on the last")
    for bare, rest in (
        (last_bare, "\n".join(lines[:-1])),
        (first, "\n".join(lines[1:])),
    ):
        if bare is None:
            continue
        grade, problem = bare
        if grade is None:
            return _failure(problem)
        reason = _last_sentence(rest) if bare is last_bare else _first_sentence(rest)
        return Verdict(grade, clean_reason(reason))
    # ``2 - The passage states ...``: a grade, a dash or colon, the reason.
    leading = re.match(r"[\s*_`\"'\[(]*(\d+)[*_`\"'\])]*\s*[-–—:]\s+(?=\S)", text)
    if leading is not None:
        grade, problem = _grade_of(leading.group(1), False, None, None, scale)
        if grade is None:
            return _failure(problem)
        return Verdict(grade, clean_reason(_first_sentence(text[leading.end() :])))
    if is_refusal(text):
        return _failure(f"{REFUSED}: {_glimpse(text)}")
    return _failure(f"{UNREADABLE}: no grade in {_glimpse(text)!r}")
