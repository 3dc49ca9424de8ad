"""``ragtui config`` (every option's effective value and where it came from) and ``ragtui init DIR``."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from ragtui.cli.output import err, out, print_json, print_report
from ragtui.core.data.grades import DEFAULT_GRADE_SCALE, GRADES_FILE, GradeScale
from ragtui.core.data.paths import (
    bundled_corpus,
    bundled_golden,
    cache_dir,
    is_bundled,
    user_golden,
)
from ragtui.core.errors import InputError
from ragtui.core.options import OPTIONS, Option, value_text
from ragtui.core.project import DEFAULT, PROJECT_FILE, Effective, load_project
from ragtui.core.report_model import Report, table, text_section
from ragtui.core.settings import Settings
from ragtui.core.text import mask_urls

# ---- config -------------------------------------------------------------------------------------


def _scale_text(scale: GradeScale) -> str:
    return ", ".join(f"{grade} {label}" for grade, label in scale)


def _shown_value(option: Option | None, value: Any) -> str:
    """A value as ``ragtui config`` prints it, any URL in it masked (user info, keys in the query)."""
    return mask_urls(_value_text(option, value))


def _value_text(option: Option | None, value: Any) -> str:
    if value is None:
        return "-"
    if option is not None and option.repeatable:
        return (
            "; ".join(option.unparse(v) if option.unparse else value_text(v) for v in value) or "-"
        )
    if isinstance(value, float):
        return f"{value:g}"
    return value_text(value)


def _default_source(name: str, raw: Settings, resolved: Settings) -> str:
    """Where a value nothing set came from: the bundled data, the user's copy, a golden set's file."""
    if name == "corpus" and raw.corpus is None and raw.beir is None:
        return "default (the bundled handbook)"
    if name == "golden" and raw.golden is None:
        if raw.beir is not None:
            return "default (the BEIR folder)"
        if resolved.golden == user_golden():
            return "default (your copy of the bundled golden set)"
        return "default (the bundled golden set)"
    if (
        name == "grade_scale"
        and resolved.golden is not None
        and (Path(resolved.golden) / GRADES_FILE).is_file()
    ):
        return str(Path(resolved.golden) / GRADES_FILE)
    return DEFAULT


def _in_force(name: str, resolved: Settings) -> tuple[Any, str] | None:
    """What a command runs with where an option is unset and ragtui decides (the annotator, the
    window stride), and why; None for any other option."""
    if name == "annotator":
        from ragtui.core.labelling.journal import default_annotator

        return default_annotator(), "default (your login name)"
    if name == "window_stride":
        if resolved.windows == "off":
            return None, "default (windows off)"
        from ragtui.core.data.tokenizer import model_limit, token_counter
        from ragtui.core.retrieval.windows import window_plan

        try:
            plan = window_plan(
                resolved.windows, None, model_limit(resolved.model, token_counter(resolved.model))
            )
        except (InputError, OSError, ValueError):
            plan = None
        if plan is None:
            return None, "default (the model's limit is unknown: no windows)"
        return plan.stride, f"default (half the model's window of {plan.length} tokens)"
    return None


def config_rows(effective: Effective) -> list[tuple[str, str, str]]:
    """(key, value, where it came from) for every option, the grade scale and any section's settings."""
    raw = effective.settings
    resolved = raw.resolved()
    rows = []
    for option in OPTIONS:
        source = effective.sources.get(option.name, DEFAULT)
        value = getattr(resolved, option.name, None)
        if source == DEFAULT:
            source = _default_source(option.name, raw, resolved)
            decided = _in_force(option.name, resolved) if value is None else None
            if decided is not None:
                value, source = decided
        rows.append((option.key, _shown_value(option, value), source))
    scale_source = effective.sources.get("grade_scale", DEFAULT)
    if scale_source == DEFAULT:
        scale_source = _default_source("grade_scale", raw, resolved)
    rows.append(("grades", _scale_text(resolved.grade_scale or DEFAULT_GRADE_SCALE), scale_source))
    listed = {o.name for o in OPTIONS} | {"grade_scale"}
    for name, source in effective.sources.items():
        if name not in listed and source != DEFAULT:
            # A setting a section added (live retrievers, variants): shown under its field name.
            rows.append(
                (name.replace("_", "-"), _shown_value(None, getattr(resolved, name, None)), source)
            )
    return rows


def config_report(effective: Effective) -> Report:
    """``ragtui config`` as a report: the project file, then every setting, its value and its source."""
    project = effective.project
    where = (
        f"project file: {project.path}"
        if project is not None
        else f"project file: none ({PROJECT_FILE}, or pyproject.toml with [tool.ragtui], "
        "in the working folder or a parent; --project FILE names one)"
    )
    return Report(
        "ragtui config",
        (
            text_section(where, f"embedding cache: {cache_dir()}"),
            table(("option", "value", "from"), config_rows(effective)),
        ),
    )


def run_config(effective: Effective, as_json: bool = False) -> int:
    """``ragtui config``: what every command would run with, and why."""
    if as_json:
        project = effective.project
        print_json(
            {
                "project": str(project.path) if project is not None else None,
                "options": {
                    key: {"value": value, "from": source}
                    for key, value, source in config_rows(effective)
                },
            }
        )
        return 0
    print_report(config_report(effective))
    return 0


# ---- init ---------------------------------------------------------------------------------------

_HEADER = """\
# ragtui project file. Every key is the option of the same name (ragtui --help lists them);
# a flag on the command line overrides the value here. Paths are relative to this file's folder.
# `ragtui config` prints what is in force and where each value came from.

"""

_EXAMPLE_QUESTION = {
    "id": "q01",
    "question": "Replace me: a question your documents answer",
    "evidence": "the exact text in a document that answers it",
    "slices": ["example"],
}


def _toml(value: Any) -> str:
    """A value written as TOML (strings as JSON strings, which TOML reads the same)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return f"{value:g}" if isinstance(value, float) else str(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)


def project_file_text(beir: str | None = None) -> str:
    """The commented ``ragtui.toml`` of a new project (``beir``: the dataset's path as written in it)."""
    lines = [_HEADER]
    set_here = {"golden": "golden"}
    if beir is None:
        set_here["corpus"] = "corpus"
    else:
        set_here["beir"] = beir
    for option in OPTIONS:
        comment = f"# {option.help}"
        if option.name in set_here:
            lines += [comment, f"{option.key} = {_toml(set_here[option.name])}", ""]
            continue
        default = option.default
        if option.example is not None:
            example = _toml(option.example)
        elif option.repeatable:
            example = f'["{option.metavar or "VALUE"}"]'
        elif option.example is not None:
            example = _toml(option.example)
        elif default is None or default == ():
            example = json.dumps(option.metavar or "VALUE")
        else:
            example = _toml(default)
        lines += [comment, f"# {option.key} = {example}", ""]
    lines += [
        "# Pipeline variants for `ragtui experiment` (docs/experiments.md): each [variants.NAME] sets",
        "# option keys; every variant is compared with the baseline, question by question.",
        "# [variants]",
        '#   baseline = "c512"',
        "# [variants.c512]",
        "#   chunk-size = 512",
        "# [variants.c256]",
        "#   chunk-size = 256",
        "",
        "# The grade scale: what each digit key means when you label (at most 0-9, from 0 without gaps).",
        "[grades]",
        *(f"{grade} = {_toml(label)}" for grade, label in DEFAULT_GRADE_SCALE),
        "",
    ]
    return "\n".join(lines)


def _check_beir(folder: Path) -> None:
    """A BEIR folder must hold corpus.jsonl, queries.jsonl and qrels/test.tsv."""
    if not folder.is_dir():
        raise InputError(folder, "BEIR folder not found")
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        if not (folder / name).is_file():
            raise InputError(folder / name, "file not found (a BEIR dataset needs it)")


def _relative_or_absolute(target: Path, base: Path) -> str:
    """``target`` as written in a file in ``base``: relative when inside it, else absolute."""
    resolved = target.resolve()
    try:
        return str(resolved.relative_to(base.resolve()))
    except ValueError:
        return str(resolved)


def run_init(folder: Path, handbook: bool = False, from_beir: Path | None = None) -> int:
    """``ragtui init DIR``: ragtui.toml with comments, corpus/ and golden/questions.jsonl, and nothing else."""
    if handbook and from_beir is not None:
        raise InputError(None, "init: --handbook and --from-beir exclude each other")
    folder = folder.expanduser()
    if folder.exists() and not folder.is_dir():
        raise InputError(folder, "exists and is not a folder")
    if is_bundled(folder):
        raise InputError(folder, "init: choose a folder outside ragtui's own files")
    config = folder / PROJECT_FILE
    questions = folder / "golden" / "questions.jsonl"
    corpus = folder / "corpus"
    for existing in (config, questions):
        if existing.exists():
            raise InputError(existing, "already exists; init never overwrites a project")
    if handbook and corpus.is_dir() and any(corpus.iterdir()):
        raise InputError(corpus, "is not empty; --handbook copies the handbook into an empty one")
    beir_text = None
    if from_beir is not None:
        _check_beir(from_beir.expanduser())
        beir_text = _relative_or_absolute(from_beir.expanduser(), folder)
    created: list[str] = []
    (folder / "golden").mkdir(parents=True, exist_ok=True)
    if from_beir is None:
        corpus.mkdir(exist_ok=True)
        if handbook:
            for document in sorted(bundled_corpus().iterdir()):
                if document.is_file():
                    shutil.copyfile(document, corpus / document.name)
            created.append(f"{corpus}{os.sep} ({sum(1 for _ in corpus.iterdir())} documents)")
        else:
            created.append(f"{corpus}{os.sep} (empty: put your .md and .txt documents here)")
        if handbook:
            first = (bundled_golden() / "questions.jsonl").read_text(encoding="utf-8")
            example = first.splitlines()[0] + "\n"
        else:
            example = json.dumps(_EXAMPLE_QUESTION, ensure_ascii=False) + "\n"
        questions.write_text(example, encoding="utf-8")
        created.append(f"{questions} (one example question)")
    else:
        created.append(
            f"{folder / 'golden'}{os.sep} (labels and saved runs; the questions come from the BEIR queries)"
        )
    config.write_text(project_file_text(beir_text), encoding="utf-8")
    # Whatever the umask, the project file is writable by its owner alone: ragtui refuses one that others may write.
    config.chmod(0o644)
    load_project(config)  # what init writes must read back
    created.insert(0, f"{config} (every option, commented)")
    for line in created:
        out(f"created {line}")
    steps = [f"cd {folder}"]
    if from_beir is None and not handbook:
        steps.append("add documents to corpus/ and questions to golden/questions.jsonl")
    steps += ["ragtui check", "ragtui (label with the digit keys)", "ragtui eval"]
    err("next: " + "; ".join(steps))
    return 0
