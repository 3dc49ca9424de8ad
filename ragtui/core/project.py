"""The project file: ``ragtui.toml`` (or ``[tool.ragtui]`` in ``pyproject.toml``) in the working folder or a parent.

Every shared option's key (``ragtui.core.options.OPTIONS``) is valid at top level, with the value a
flag would take (``k = 5``, ``retrievers = ["bm25", "hybrid"]``, ``corpus = "docs"``); paths are
relative to the file's folder. Tables are sections, each read by the parser ``SECTIONS`` names
(``[grades]`` here; ``[retrievers.NAME]`` and ``[variants.NAME]`` are added by the modules that
define them). An unknown key or section, or a bad value, is an ``InputError`` naming the file, the
line, the key and the problem. Flags override the file; ``effective_settings`` says where each value
came from, for ``ragtui config``.

A project file can run code (a ``[retrievers.NAME]`` plugin is imported and called), so one that
is not owned by the user (or root), or that others may write, is refused with the reason and the
fix (:func:`distrust`), as git refuses a repository owned by someone else.
"""

from __future__ import annotations

import difflib
import os
import re
import shlex
import stat
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from ragtui.core.data.grades import parse_grade_scale
from ragtui.core.errors import InputError
from ragtui.core.files import read_regular
from ragtui.core.judge_spec import JudgeSectionError, JudgeSpec, parse_judges_table, resolve_judges
from ragtui.core.options import OPTIONS, Option, OptionError, settings_from_values
from ragtui.core.settings import Settings
from ragtui.core.variants import parse_variants

#: The project file's name.
PROJECT_FILE = "ragtui.toml"
#: The table of ``pyproject.toml`` that may hold the same keys.
PYPROJECT_TABLE = ("tool", "ragtui")
#: Where a value came from when nothing set it.
DEFAULT = "default"
#: Options that each name the data to load: a flag for one of them replaces the file's others,
#: so ``--corpus`` on the command line wins over ``beir`` in the file.
DATA_SOURCES = frozenset({"corpus", "beir", "chunks"})


@dataclass(frozen=True)
class SectionContext:
    """What a section parser may need: the project file and the folder its paths are relative to."""

    path: Path
    name: str
    """The section's name (``grades``)."""

    @property
    def folder(self) -> Path:
        """The folder relative paths in the file are relative to."""
        return self.path.resolve().parent

    def resolve(self, raw: str | Path) -> Path:
        """A path from the file, relative to the file's folder (``~`` expanded)."""
        path = Path(raw).expanduser()
        return path if path.is_absolute() else self.folder / path


#: Reads one section's table into ``Settings`` field values; raises OptionError (or ValueError)
#: with a message that names the entry at fault, such as ``mine: url is not http(s)``.
SectionParser = Callable[[Mapping[str, Any], SectionContext], Mapping[str, Any]]


def _grades_section(table: Mapping[str, Any], context: SectionContext) -> dict[str, Any]:
    """``[grades]``: ``0 = "not relevant"``, ``1 = "partly"``, ... -> ``Settings.grade_scale``."""
    return {"grade_scale": parse_grade_scale(table)}


def _retrievers_section(table: Mapping[str, Any], context: SectionContext) -> dict[str, Any]:
    """``[retrievers]``: ``show = [...]`` (the retrievers shown, as the ``retrievers`` key would, which
    TOML cannot have beside the table) and one ``[retrievers.NAME]`` table per live retriever."""
    from ragtui.core.options import name_list
    from ragtui.core.retrieval.live import parse_retriever_section

    values: dict[str, Any] = {}
    specs = []
    for name, entry in table.items():
        if name == "show":
            values["retrievers"] = name_list(entry)
            continue
        if not isinstance(entry, Mapping):
            raise OptionError(f"{name}: expected a table [retrievers.{name}] (or show = [...])")
        try:
            spec = parse_retriever_section(str(name), dict(entry))
            specs.append(replace(spec, from_project=True))
        except InputError as exc:
            raise OptionError(exc.problem) from None
    if specs:
        values["live_retrievers"] = tuple(specs)
    return values


def _judges_section(table: Mapping[str, Any], context: SectionContext) -> dict[str, Any]:
    """``[judges]``: one ``[judges.NAME]`` table per model judge (``ragtui.core.judge_spec``); a
    bad one is a ``JudgeSectionError`` naming the judge and the key, so the line can be found."""
    specs = parse_judges_table(table, lambda raw: context.resolve(raw), str(context.path))
    return {"judges": specs}


#: Section name -> parser. A module that defines a section adds its parser here.
SECTIONS: dict[str, SectionParser] = {
    "grades": _grades_section,
    "judges": _judges_section,
    "retrievers": _retrievers_section,
    "variants": parse_variants,
}

#: Options by project-file key.
_OPTIONS_BY_KEY: dict[str, Option] = {o.key: o for o in OPTIONS}


@dataclass
class Project:
    """A project file read: the option values it sets and where each came from."""

    path: Path
    values: dict[str, Any] = field(default_factory=dict)
    """``Settings`` field -> value, paths made absolute."""
    sources: dict[str, str] = field(default_factory=dict)
    """``Settings`` field -> ``file:key`` (or ``file:[section]``)."""
    found_in_parent: bool = False
    """Found by looking up from the working folder, in a parent of it (every command says so)."""


# ---- finding and reading ----------------------------------------------------------------------------


def _has_ragtui_table(pyproject: Path) -> bool:
    """Whether a ``pyproject.toml`` holds ``[tool.ragtui]`` (parsed only when the text mentions it)."""
    try:
        text = read_regular(pyproject, limit=MAX_PROJECT_BYTES).decode("utf-8", errors="replace")
    except (OSError, InputError):
        return False
    if "ragtui" not in text:
        return False
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):
        # Someone else's broken pyproject.toml is not ours to report unless it is meant for us.
        return re.search(r"^\s*\[\s*tool\s*\.\s*ragtui\b", text, re.M) is not None
    tool = data.get("tool")
    return isinstance(tool, dict) and "ragtui" in tool


def find_project_file(start: str | Path) -> Path | None:
    """The nearest ``ragtui.toml``, or ``pyproject.toml`` with ``[tool.ragtui]``, in ``start`` or a parent."""
    folder = Path(start).resolve()
    for candidate in (folder, *folder.parents):
        own = candidate / PROJECT_FILE
        if own.is_file():
            return _shown(own)
        pyproject = candidate / "pyproject.toml"
        if pyproject.is_file() and _has_ragtui_table(pyproject):
            return _shown(pyproject)
    return None


def _shown(path: Path) -> Path:
    """``path`` relative to the working folder when it lies inside it (shorter in messages)."""
    try:
        return path.relative_to(Path.cwd().resolve())
    except ValueError:
        return path


# ---- trust: a project file can run code ------------------------------------------------------------


def _user_name(uid: int) -> str:
    """The login name of ``uid``, else ``uid N``."""
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        return f"uid {uid}"


def _owner(uid: int) -> str:
    """``nobody (uid 65534)``, or ``uid 1234`` for a user without a name."""
    name = _user_name(uid)
    return name if name == f"uid {uid}" else f"{name} (uid {uid})"


def _private_group(gid: int, uid: int) -> bool:
    """Whether ``gid`` is the user private group of ``uid`` (named as the user, the user's primary
    group, no other member): writable by that group is writable by the user alone, as Debian's
    OpenSSH also accepts."""
    try:
        import grp
        import pwd

        user = pwd.getpwuid(uid)
        group = grp.getgrgid(gid)
    except (ImportError, KeyError):
        return False
    return (
        group.gr_name == user.pw_name and user.pw_gid == gid and set(group.gr_mem) <= {user.pw_name}
    )


def distrust(path: str | Path, status: os.stat_result) -> str | None:
    """Why a project file must not be read (None when it may): it names plugins ragtui imports and
    runs, so it must be yours (or root's; under sudo, also the user's who ran it) and writable by no
    one else, as git refuses a repository another user owns. The reason is one line with the
    command that fixes it."""
    if not hasattr(os, "geteuid"):  # pragma: no cover - no POSIX owners (Windows)
        return None
    me = os.geteuid()
    shown = shlex.quote(str(path))
    why = "a project file can run code (plugins)"
    owners = {me, 0}
    if me == 0 and os.environ.get("SUDO_UID", "").isdigit():
        owners.add(
            int(os.environ["SUDO_UID"])
        )  # root by sudo also reads its user's files, as git does
    if status.st_uid not in owners:
        whom = f"you ({_user_name(me)})" + (" or root" if me != 0 else "")
        return (
            f"refused: owned by {_owner(status.st_uid)}, not by {whom}; "
            f"{why}, so ragtui reads only yours: if you trust it, "
            f"{'' if me == 0 else 'sudo '}chown {_user_name(me)} {shown} "
            "(or --no-project to read none)"
        )
    mode = stat.S_IMODE(status.st_mode)
    writable = []
    if mode & stat.S_IWGRP and not _private_group(status.st_gid, status.st_uid):
        writable.append("its group")
    if mode & stat.S_IWOTH:
        writable.append("every user")
    if writable:
        return (
            f"refused: writable by {' and '.join(writable)} (mode {mode:04o}); "
            f"{why}, so only its owner may change it: chmod go-w {shown}"
        )
    return None


#: The largest project file read (a pyproject.toml is a few KB).
MAX_PROJECT_BYTES = 4 * 1048576


def read_trusted(path: str | Path) -> bytes:
    """A project file's bytes, when :func:`distrust` finds nothing against it (checked on the
    descriptor read, so the file cannot be swapped in between); InputError naming the reason."""

    def trust(status: os.stat_result) -> None:
        reason = distrust(path, status)
        if reason is not None:
            raise InputError(path, reason)

    return read_regular(path, check=trust, limit=MAX_PROJECT_BYTES)


_TOML_WHERE = re.compile(r"\s*\(at line (\d+), column \d+\)\s*$")


def read_toml(path: Path) -> tuple[dict[str, Any], list[str]]:
    """The parsed file and its lines; InputError with the line for a syntax error."""
    try:
        raw = read_trusted(path)
    except OSError as exc:
        raise InputError(path, f"cannot read the project file ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise InputError(path, f"not UTF-8 text (byte 0x{raw[exc.start]:02x})", line) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        where = _TOML_WHERE.search(message)
        problem = _TOML_WHERE.sub("", message) if where else message
        raise InputError(
            path, f"invalid TOML: {problem}", int(where.group(1)) if where else None
        ) from None
    except RecursionError:
        # tomllib reads nested arrays and tables by recursion: thousands of ``[`` exhaust the stack.
        raise InputError(path, "invalid TOML: arrays or tables nested too deeply to read") from None
    return data, text.splitlines()


def key_line(lines: Sequence[str], table: str, key: str) -> int | None:
    """The line where ``key`` is set in table ``table`` ("" for the top level), best effort."""
    current = ""
    header = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
    wanted = re.compile(
        rf"""^\s*(?:"{re.escape(key)}"|'{re.escape(key)}'|{re.escape(key)})\s*[.=]"""
    )
    for number, line in enumerate(lines, start=1):
        match = header.match(line)
        if match:
            current = re.sub(r"\s*\.\s*", ".", match.group(1)).replace('"', "")
            if current == f"{table}.{key}".lstrip(".") or current.startswith(
                f"{table}.{key}.".lstrip(".")
            ):
                return number
            continue
        if current == table and wanted.match(line):
            return number
    return None


def _anchor(value: Any, folder: Path) -> Any:
    """``value`` with every relative path made relative to ``folder`` (tuples and lists followed)."""
    if isinstance(value, Path):
        return value if value.is_absolute() else folder / value
    if isinstance(value, tuple):
        return tuple(_anchor(v, folder) for v in value)
    if isinstance(value, list):
        return [_anchor(v, folder) for v in value]
    return value


def _parse_option(option: Option, raw: Any) -> Any:
    """An option's value from the file: one value, or for a repeatable option a list (or one item),
    of the TOML type the option takes (``k = 3``, not ``k = "3"``)."""
    return option.parse_file(raw)


def _unknown(key: str, known: Sequence[str]) -> str:
    """``unknown key 'kk'`` with a hint when a known key is close."""
    if "_" in key and key.replace("_", "-") in known:
        return f"unknown key {key!r}; keys use dashes: {key.replace('_', '-')!r}"
    close = difflib.get_close_matches(key, known, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown key {key!r}{hint} (known: {', '.join(sorted(known))})"


def load_project(path: str | Path) -> Project:
    """Read a project file (``ragtui.toml``, or ``pyproject.toml``'s ``[tool.ragtui]``); InputError on any problem."""
    path = Path(path)
    data, lines = read_toml(path)
    table_name = ""
    if path.name == "pyproject.toml":
        table: Any = data
        for part in PYPROJECT_TABLE:
            table = table.get(part, {}) if isinstance(table, dict) else {}
        if not isinstance(table, dict):
            raise InputError(path, "[tool.ragtui] must be a table")
        data = table
        table_name = ".".join(PYPROJECT_TABLE)
    project = Project(path)
    folder = path.resolve().parent
    prefix = f"{table_name}." if table_name else ""
    known = sorted({*_OPTIONS_BY_KEY, *SECTIONS})
    for key, raw in data.items():
        line = key_line(lines, table_name, key)
        option = _OPTIONS_BY_KEY.get(key)
        section = SECTIONS.get(key)
        if isinstance(raw, dict) and section is not None:
            context = SectionContext(path, key)
            body = dict(raw)
            if option is not None and "show" in body and not isinstance(body["show"], dict):
                # ``retrievers = [...]`` and ``[retrievers.NAME]`` cannot share one TOML file, so
                # the section's ``show`` entry sets the option of the same name.
                shown = body.pop("show")
                try:
                    project.values[option.name] = _anchor(_parse_option(option, shown), folder)
                except OptionError as exc:
                    raise InputError(path, f"[{prefix}{key}] show: {exc}", line) from None
                project.sources[option.name] = f"{path}:[{prefix}{key}] show"
            try:
                produced = section(body, context)
            except (OptionError, ValueError) as exc:
                if isinstance(exc, JudgeSectionError):
                    # A judge's table: the line of its key (else of its header) and its own name.
                    entry, sub = exc.at
                    table_path = f"{prefix}{key}.{entry}"
                    found = key_line(lines, table_path, sub) if sub else None
                    found = found or key_line(lines, f"{prefix}{key}", entry) or line
                    where = f"[{table_path}] {sub}: " if sub else f"[{table_path}] "
                    raise InputError(path, where + str(exc.problem), found) from None
                raise InputError(path, f"[{prefix}{key}] {exc}", line) from None
            for name, value in produced.items():
                project.values[name] = _anchor(value, folder)
                project.sources[name] = f"{path}:[{prefix}{key}]"
            continue
        if isinstance(raw, dict):
            hint = f"; {key} = VALUE sets the option" if option is not None else ""
            raise InputError(
                path,
                f"[{prefix}{key}]: unknown section (sections: {', '.join(sorted(SECTIONS))}){hint}",
                line,
            )
        if option is None:
            if section is not None:
                problem = f"{prefix}{key}: expected a table [{prefix}{key}]"
            else:
                problem = _unknown(key, known)
            raise InputError(path, problem, line)
        try:
            value = _parse_option(option, raw)
        except OptionError as exc:
            raise InputError(path, f"{prefix}{key}: {exc}", line) from None
        if option.name == "judges":
            named = [v for v in value if not isinstance(v, JudgeSpec)]
            if named:
                raise InputError(
                    path,
                    f"{prefix}{key}: {named[0]!r} names no judge here: give NAME=SPEC, or a "
                    f"[{prefix}{key}.{named[0]}] table",
                    line,
                )
        project.values[option.name] = _anchor(value, folder)
        project.sources[option.name] = f"{path}:{prefix}{key}"
    return project


# ---- merging with the command line --------------------------------------------------------------


@dataclass(frozen=True)
class Effective:
    """The settings a command runs with, and where each field's value came from."""

    settings: Settings
    sources: dict[str, str]
    """``Settings`` field -> ``default``, ``FILE:KEY`` or ``flag --NAME``."""
    project: Project | None


def effective_settings(flags: Mapping[str, Any], project: Project | None) -> Effective:
    """Settings from the project file's values overridden by the flags given (by ``Settings`` field)."""
    values: dict[str, Any] = {}
    sources: dict[str, str] = {f.name: DEFAULT for f in fields(Settings)}
    if project is not None:
        file_values = dict(project.values)
        if DATA_SOURCES & flags.keys():
            for name in DATA_SOURCES:
                file_values.pop(name, None)
        values.update(file_values)
        sources.update({k: v for k, v in project.sources.items() if k in file_values})
    by_name = {o.name: o for o in OPTIONS}
    for name, value in flags.items():
        values[name] = value
        option = by_name.get(name)
        sources[name] = f"flag {option.flag}" if option is not None else "flag"
    if "judges" in values:
        # ``--judge NAME`` names a [judges.NAME] of the file (a flag's judges replace the file's).
        file_judges = project.values.get("judges", ()) if project is not None else ()
        defined = [spec for spec in file_judges if isinstance(spec, JudgeSpec)]
        values["judges"] = resolve_judges(
            values["judges"], defined, str(project.path) if project is not None else None
        )
    return Effective(settings_from_values(values), sources, project)


def project_for(
    folder: str | Path, explicit: str | Path | None = None, disabled: bool = False
) -> Project | None:
    """The project in force: ``explicit`` (``--project FILE``), none when ``disabled``, else the nearest one."""
    if disabled:
        return None
    if explicit is not None:
        path = Path(explicit)
        if not path.is_file():
            raise InputError(path, "project file not found")
        return load_project(path)
    found = find_project_file(folder)
    if found is None:
        return None
    project = load_project(found)
    project.found_in_parent = found.resolve().parent != Path(folder).resolve()
    return project
