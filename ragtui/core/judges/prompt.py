"""What a chat judge is asked: ragtui's default prompt, a user's own prompt file, and the prompt filled in.

A prompt is a template with three placeholders: ``{question}``, ``{passage}`` (the chunk's text) and
``{scale}`` (the project's grade scale, one ``N = meaning`` line per grade). Only those three are
filled, in one pass, so a question or chunk that holds ``{passage}`` is sent as it is, and any other
brace (a JSON example in the prompt) is left alone. ``prompt_sha1`` is the sha1 of the template as
it is sent (after a file's byte-order mark is dropped and its line ends made ``\\n``): the journal
records it with every verdict, so a verdict says which prompt gave it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ragtui.core.data.grades import GradeScale
from ragtui.core.errors import InputError
from ragtui.core.files import TooLargeError, content_hash, read_regular
from ragtui.core.text import has_control, visible_line

__all__ = [
    "DEFAULT_PROMPT",
    "MAX_PROMPT_BYTES",
    "PLACEHOLDERS",
    "Prompt",
    "default_prompt",
    "fill_prompt",
    "load_prompt",
    "prompt_sha1",
    "scale_text",
]

#: The placeholders a prompt must hold, each once or more.
PLACEHOLDERS = ("question", "passage", "scale")

#: The largest prompt file read (a prompt is a page of text; a bigger file is not one).
MAX_PROMPT_BYTES = 64 * 1024

#: ragtui's default prompt (docs/judges.md prints it in full).
DEFAULT_PROMPT = """\
You are a careful relevance assessor for a search system. A person asked the question below, and
the search system returned the passage below. Judge how well the passage answers the question,
using exactly one of these grades:

{scale}

How to judge:
- Think about what the person wants to know, then read the passage for it.
- Judge the passage by what its own text says, not by what you know about the topic or what the
  document around it might say.
- A passage on the question's topic that does not help answer it gets the lowest grade.
- When you hesitate between two grades, choose the lower one.

Question: {question}

Passage:
<<<
{passage}
>>>

Answer in exactly two lines and nothing else:
Reason: <one sentence saying why>
Grade: <the number of one grade above>
"""

_PLACEHOLDER = re.compile(r"\{(question|passage|scale)\}")
#: Names people give these placeholders in other tools' prompts (UMBRELA's is ``{query}``).
_LOOKALIKES = {
    "question": ("query", "q", "topic"),
    "passage": ("document", "doc", "chunk", "context", "text", "content"),
    "scale": ("grades", "grade_scale", "scale_text"),
}


def prompt_sha1(template: str) -> str:
    """The sha1 of a template's text as it is sent (UTF-8)."""
    return content_hash(template)


@dataclass(frozen=True, slots=True)
class Prompt:
    """A prompt template, its sha1 and where it came from (``default`` or the file's path)."""

    template: str
    sha1: str
    source: str = "default"


def default_prompt() -> Prompt:
    """ragtui's default prompt."""
    return Prompt(DEFAULT_PROMPT, prompt_sha1(DEFAULT_PROMPT), "default")


def scale_text(scale: GradeScale) -> str:
    """The grade scale as the prompt shows it: one ``N = meaning`` line per grade, lowest first.

    A label's white space (line breaks included) is made single spaces and its control characters
    are dropped, so the scale cannot break the prompt's layout.
    """
    lines = []
    for grade, label in scale:
        clean = "".join(ch for ch in " ".join(label.split()) if not has_control(ch))
        lines.append(f"{grade} = {clean}")
    return "\n".join(lines)


def fill_prompt(template: str, question: str, passage: str, scale: str) -> str:
    """The template with its placeholders filled in one pass (a value is never filled again)."""
    values = {"question": question, "passage": passage, "scale": scale}
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def load_prompt(path: str | Path) -> Prompt:
    """A user's prompt file: UTF-8 text holding ``{question}``, ``{passage}`` and ``{scale}``.

    A byte-order mark is dropped and line ends are made ``\\n``; tabs and line breaks are kept. A
    file that cannot be read, is not UTF-8, is empty, is over ``MAX_PROMPT_BYTES``, holds another
    control character (a binary file given by mistake) or lacks a placeholder raises
    ``InputError``: one line naming the file (and the line, for a control character).
    """
    path = Path(path)
    try:
        raw = read_regular(path, limit=MAX_PROMPT_BYTES)
    except TooLargeError:
        raise InputError(path, f"the prompt is over {MAX_PROMPT_BYTES // 1024} KB") from None
    except OSError as exc:
        raise InputError(path, f"cannot read the prompt ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError(
            path, f"the prompt is not UTF-8 (byte 0x{raw[exc.start]:02x})", line
        ) from None
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise InputError(path, "the prompt is empty")
    for number, line_text in enumerate(text.split("\n"), start=1):
        for ch in line_text:
            if ch != "\t" and has_control(ch):
                raise InputError(
                    path,
                    f"the prompt holds a control character ({visible_line(ch)}); "
                    "a prompt is plain text",
                    number,
                )
    missing = [name for name in PLACEHOLDERS if "{" + name + "}" not in text]
    if missing:
        name = missing[0]
        found = [alias for alias in _LOOKALIKES[name] if "{" + alias + "}" in text]
        hint = f" (it has {{{found[0]}}}: rename it {{{name}}})" if found else ""
        raise InputError(
            path,
            f"the prompt has no {{{name}}} placeholder{hint}; "
            "a prompt holds {question}, {passage} and {scale}",
        )
    return Prompt(text, prompt_sha1(text), str(path))
