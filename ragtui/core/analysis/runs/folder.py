"""Where saved runs live and how they are written and found: a run's file, the folder of a golden
set, writing a run without replacing one silently (the one replaced kept as a backup), and a run
given by name, by path or as ``RUN:RETRIEVER``."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import orjson

from ragtui.core.analysis.runs.saved import SavedRun, load_run, saved_run_from_workspace
from ragtui.core.analysis.why import WhyIndex
from ragtui.core.data.paths import is_bundled, safe_filename, user_golden
from ragtui.core.errors import InputError
from ragtui.core.files import check_writable, read_regular, write_atomic, write_new
from ragtui.core.metrics.measures import System, system_from_workspace
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace

__all__ = [
    "DEFAULT_RETRIEVER",
    "RunExistsError",
    "WrittenRun",
    "list_runs",
    "pick_retriever",
    "refuse_taken",
    "resolve_run",
    "resolve_saved",
    "resolve_system",
    "run_file",
    "runs_folder",
    "save_folder",
    "save_run",
    "write_run",
]

#: The retriever a saved run is read as when none is named.
DEFAULT_RETRIEVER = "hybrid"


def runs_folder(
    ws_or_golden: Workspace | Path | str | None, runs_dir: Path | str | None = None
) -> Path:
    """Where saved runs live: ``runs_dir`` if given, else ``<golden>/runs``."""
    if runs_dir is not None:
        return Path(runs_dir)
    golden: Path | str | None
    if isinstance(ws_or_golden, Workspace):
        golden = ws_or_golden.settings.resolved().golden
    else:
        golden = ws_or_golden
    if golden is None:
        raise InputError(None, "no golden folder to keep saved runs in; give --runs-dir")
    return Path(golden) / "runs"


class RunExistsError(InputError):
    """A saved run of that name exists and replacing it was not asked for (``--replace``)."""


@dataclass(frozen=True)
class WrittenRun:
    """Where a saved run was written, and where the run it replaced is kept (None when it replaced none)."""

    path: Path
    backup: Path | None = None


def run_file(folder: Path | str, name: str) -> Path:
    """The file of saved run ``name`` in ``folder``; InputError when the name cannot be a file name."""
    try:
        return Path(folder) / safe_filename(name, ".json")
    except ValueError:
        raise InputError(None, f"--save: {name!r} cannot be a run name") from None


def save_folder(settings: Settings, runs_dir: Path | str | None = None) -> Path:
    """The folder ``save_run`` will write into, known before anything is loaded: ``runs_dir``, else
    ``<golden>/runs`` of the folder written to (for the bundled golden set, the user's copy)."""
    if runs_dir is not None:
        return Path(runs_dir)
    golden = settings.resolved().golden
    if golden is None:
        raise InputError(None, "no golden folder to keep saved runs in; give --runs-dir")
    return (user_golden() if is_bundled(golden) else Path(golden)) / "runs"


def refuse_taken(
    folder: Path | str, names: Sequence[str], replace: bool = False, variant: bool = False
) -> None:
    """Raise ``RunExistsError`` (one line) when one of ``names`` is a saved run in ``folder`` and
    ``replace`` is not set: call it before anything slow, so nothing runs for a refusal.

    ``variant``: the names are experiment variants (the message says so, and how to avoid saving).
    """
    for name in names:
        path = run_file(folder, name)
        if path.is_dir():
            raise InputError(path, "is a folder, not a saved run; nothing was written")
        if replace or not os.path.lexists(path):
            continue
        if variant:
            raise RunExistsError(
                path,
                f"variant {name!r} would replace the saved run of that name; nothing was run. "
                "Give --replace to replace it (the old one is kept as a backup beside it), "
                "--runs-dir DIR to save elsewhere, or --no-save",
            )
        raise RunExistsError(
            path,
            f"a saved run {name!r} exists; nothing was run. Give --replace to replace it (the old "
            "one is kept as a backup beside it) or choose another name",
        )


def _write_backup(path: Path, data: bytes) -> Path:
    """``data`` in a new file ``<run>.json.<UTC time>.bak`` beside ``path``, never replacing a file."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    for n in range(1, 1000):
        backup = path.with_name(f"{path.name}.{stamp}{'' if n == 1 else f'-{n}'}.bak")
        try:
            write_new(backup, data)
        except FileExistsError:
            continue
        return backup
    raise InputError(path, "cannot name a new backup (999 exist for this instant)")


def write_run(
    ws: Workspace,
    name: str,
    runs_dir: Path | str | None = None,
    *,
    replace: bool = False,
    why: WhyIndex | None = None,
) -> WrittenRun:
    """Write the workspace's numbers as saved run ``name`` (``why``: the causes already computed
    for this workspace, e.g. by ``eval --json``, so they are not computed twice).

    A run of that name is never replaced silently: without ``replace`` it is a ``RunExistsError``
    (nothing written); with ``replace`` the old file is first copied to a new, timestamped
    ``<name>.json.<UTC time>.bak`` beside it, then the new run replaces it atomically.
    """
    run_file(".", name)  # a bad name is refused before the bundled golden set is copied
    folder = Path(runs_dir) if runs_dir is not None else ws.writable_golden() / "runs"
    path = run_file(folder, name)
    if is_bundled(folder.parent):
        raise InputError(folder, "the bundled golden set is never written; give another --runs-dir")
    check_writable(folder, "saved runs' folder")
    refuse_taken(folder, [name], replace)
    data = orjson.dumps(
        saved_run_from_workspace(ws, name, why).to_json(), option=orjson.OPT_INDENT_2
    )
    backup = None
    # The folders this attempt makes (runs/, and any missing parent): removed again when the run
    # cannot be written, so a failed save (a full disk) leaves no empty runs/ behind.
    made = [f for f in (folder, *folder.parents) if not f.exists()]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not replace:
            try:
                write_new(path, data)  # fails when another process saved that name meanwhile
            except FileExistsError:
                refuse_taken(folder, [name])
                raise
            return WrittenRun(path)
        try:
            old = read_regular(path)
        except FileNotFoundError:
            old = None
        if old is not None:
            backup = _write_backup(path, old)
        write_atomic(path, data)
    except OSError as exc:
        for made_folder in made:  # deepest first; one that holds anything stays
            with contextlib.suppress(OSError):
                made_folder.rmdir()
        raise InputError(
            path, f"cannot write the saved run ({exc.strerror or exc}); nothing was saved"
        ) from None
    return WrittenRun(path, backup)


def save_run(
    ws: Workspace, name: str, runs_dir: Path | str | None = None, *, replace: bool = False
) -> Path:
    """Write the workspace's numbers as saved run ``name`` and return the file (see ``write_run``:
    an existing run is refused unless ``replace``, and then kept as a backup)."""
    return write_run(ws, name, runs_dir, replace=replace).path


def list_runs(folder: Path) -> list[str]:
    """The names of the saved runs in a folder, sorted."""
    if not folder.is_dir():
        return []
    return sorted(p.stem for p in folder.glob("*.json") if not p.name.startswith("."))


def resolve_run(spec: str, folder: Path) -> Path:
    """The file of a saved run given by name (looked up in ``folder``) or by path; InputError when there is none."""
    as_path = Path(spec)
    # exists(), not is_file(): a FIFO or a device is then refused by name when read, not missed.
    if as_path.exists() and not as_path.is_dir():
        return as_path
    try:
        candidate = folder / safe_filename(spec, ".json")
    except ValueError:
        candidate = None
    if candidate is not None and candidate.exists() and not candidate.is_dir():
        return candidate
    known = list_runs(folder)
    hint = (
        f"saved runs in {folder}: {', '.join(known)}"
        if known
        else f"no saved runs in {folder} (ragtui eval --save NAME)"
    )
    raise InputError(spec, f"no such saved run or file; {hint}")


def pick_retriever(run: SavedRun, retriever: str | None) -> str:
    """The retriever to read a saved run as: the one named, else hybrid, else the run's only retriever."""
    if retriever is not None:
        return retriever
    if DEFAULT_RETRIEVER in run.rankings or len(run.rankings) != 1:
        return DEFAULT_RETRIEVER
    return next(iter(run.rankings))


def resolve_saved(spec: str, folder: Path) -> tuple[SavedRun, str | None]:
    """A saved run given as a name, a path or ``RUN:RETRIEVER``, and the retriever the spec names (None if none)."""
    try:
        return load_run(resolve_run(spec, folder)), None
    except InputError as first:
        head, sep, tail = spec.rpartition(":")
        if not sep or not head or not tail:
            raise first from None
        try:
            path = resolve_run(head, folder)
        except InputError:
            raise first from None
        return load_run(path), tail


def resolve_system(
    spec: str, ws: Workspace | None, folder: Path, retriever: str | None = None
) -> System:
    """A compare side: a retriever of the workspace, a saved run (name or path, read as ``retriever``), or ``RUN:RETRIEVER``."""
    if ws is not None and spec in ws.retrievers:
        return system_from_workspace(ws, spec)
    try:
        run, named = resolve_saved(spec, folder)
    except InputError as exc:
        if ws is None or (exc.path is not None and Path(exc.path).is_file()):
            raise  # no workspace to name retrievers from, or a saved run that is malformed
        raise InputError(
            None,
            f"{spec!r} is neither a retriever ({', '.join(ws.retrievers)}) nor a saved run: {exc.problem}",
        ) from None
    return run.system(named or pick_retriever(run, retriever))
