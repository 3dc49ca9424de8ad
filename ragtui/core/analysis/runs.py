"""Saved runs and diffs: keep every retriever's per-question ranks and values with a manifest, and compare two.

``ragtui eval --save NAME`` writes ``<golden>/runs/<NAME>.json`` (the name made safe with
:func:`ragtui.core.data.paths.safe_filename`). A run of that name is never replaced silently: it is
refused unless replacing is asked for (``--replace``), and the run replaced is kept as a timestamped
``<NAME>.json.<UTC time>.bak`` beside the new one.  The file holds, besides the manifest (the settings and
versions that produced it), each question's text, slices and effective grades, and for every
retriever its means and, per evaluated question, the first relevant rank, the values and the ranked
chunk ids.  Because ranked lists and grades are kept, a diff or a comparison can recompute any
measure at any cut-off up to the run's depth; each run is judged by its own grades (chunk ids differ
between chunk sizes, so one run's grades cannot judge the other's chunks).
"""

from __future__ import annotations

import codecs
import hashlib
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from ragtui import __version__
from ragtui.core.analysis.why import CAUSES, WhyIndex
from ragtui.core.data.corpus import utf8_name
from ragtui.core.data.paths import is_bundled, safe_filename, user_golden
from ragtui.core.errors import InputError
from ragtui.core.files import check_writable, read_regular, write_atomic, write_new
from ragtui.core.metrics.measures import Measure, System, system_from_workspace
from ragtui.core.retrieval.hybrid import RRF_K
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace

__all__ = [
    "FORMAT",
    "CauseChange",
    "QuestionChange",
    "RunDiff",
    "RunExistsError",
    "SavedRun",
    "WrittenRun",
    "cause_changes",
    "diff_runs",
    "list_runs",
    "load_run",
    "manifest",
    "pick_retriever",
    "refuse_taken",
    "resolve_run",
    "resolve_saved",
    "resolve_system",
    "run_file",
    "runs_folder",
    "save_folder",
    "save_run",
    "saved_run_from_workspace",
    "write_run",
]

#: The ``format`` field of a saved run, and its version.
FORMAT = "ragtui-run"
FORMAT_VERSION = 1
#: The retriever a saved run is read as when none is named.
DEFAULT_RETRIEVER = "hybrid"
#: nDCG and RR changes smaller than this are no change.
TOLERANCE = 1e-12


def _sha256_file(path: Path) -> str | None:
    try:
        return hashlib.sha256(read_regular(path)).hexdigest()
    except (OSError, InputError):
        return None


def _path_text(path: Path | str | None) -> str | None:
    """A path as JSON text: bytes of its name that are not UTF-8 spelled ``\\xNN`` (JSON holds only UTF-8)."""
    return utf8_name(str(path)) if path is not None else None


def manifest(ws: Workspace) -> dict[str, Any]:
    """What produced the workspace's numbers: data, chunking, tokenizer and model, BM25, RRF, k, depth, versions, hashes."""
    from ragtui.core.data.tokenizer import token_counter

    s = ws.settings
    golden = Path(s.golden) if s.golden is not None else None
    chunk_hash = hashlib.sha256()
    for chunk in ws.chunks:
        chunk_hash.update(f"{chunk.id}\t{chunk.sha1}\n".encode())
    # Recorded only when used, so a diff against a run saved before they existed shows no change.
    extra: dict[str, Any] = {}
    if ws.live:
        extra["live_retrievers"] = {name: r.describe() for name, r in ws.live.items()}
    if s.chunks is not None:
        extra["chunks_file"] = _path_text(s.chunks)
    if ws.level != "chunk":
        extra["level"] = ws.level
    return {
        **extra,
        "ragtui_version": __version__,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "corpus": _path_text(s.corpus),
        "golden": _path_text(golden),
        "beir": _path_text(s.beir),
        "chunk_size": s.chunk_size,
        "overlap": s.overlap,
        "chunks": len(ws.chunks),
        "chunks_sha256": chunk_hash.hexdigest(),
        "model": s.model,
        "tokenizer": token_counter(s.model).name,
        "bm25": ws.bm25.variant if ws.bm25 is not None else None,
        "bm25_backend": s.bm25_backend,
        "rrf_k": ws.hybrid.k if ws.hybrid is not None else RRF_K,
        "windows": s.windows,
        "window_length": ws.window_plan.length if ws.window_plan is not None else None,
        "window_stride": ws.window_plan.stride if ws.window_plan is not None else None,
        "rerank": s.rerank,
        "rerank_over": s.rerank_over if s.rerank else None,
        "k": s.k,
        "depth": s.depth,
        "threshold": s.threshold,
        "retrievers": list(ws.retrievers),
        "external_runs": {
            name: {"path": _path_text(run.path), "sha256": run.sha256}
            for name, run in ws.external.items()
        },
        "labels_sha256": _sha256_file(ws.labels.path),
        "questions_sha256": _sha256_file(golden / "questions.jsonl")
        if golden is not None and s.beir is None
        else None,
    }


@dataclass
class SavedRun:
    """A saved run: manifest, questions with their grades, and each retriever's ranked lists and values."""

    name: str
    manifest: dict[str, Any]
    question_ids: list[str]
    questions: dict[str, dict[str, Any]]
    grades: dict[str, dict[str, int]]
    rankings: dict[str, dict[str, list[str]]]
    summaries: dict[str, dict[str, float]] = field(default_factory=dict)
    values: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    path: Path | None = None

    @property
    def retrievers(self) -> list[str]:
        """The retrievers the run holds, in the order saved."""
        return list(self.rankings)

    @property
    def k(self) -> int:
        """The cut-off the run was saved with."""
        return int(self.manifest.get("k", 3))

    @property
    def threshold(self) -> int:
        """The grade threshold the run was saved with."""
        return int(self.manifest.get("threshold", 1))

    def system(self, retriever: str) -> System:
        """One retriever of the run as a system judged by the run's own grades, labelled ``name:retriever``."""
        if retriever not in self.rankings:
            raise InputError(
                self.path,
                f"saved run {self.name!r} has no retriever {retriever!r}; it has {', '.join(self.retrievers)}",
            )
        return System(
            f"{self.name}:{retriever}",
            self.rankings[retriever],
            self.grades,
            self.question_ids,
            self.threshold,
        )

    def causes(self, retriever: str) -> dict[str, list[str]] | None:
        """Each evaluated question's causes for one retriever, as saved (``ragtui why``); None when
        the run was saved without them."""
        # Skipped questions are saved with their ranked list only.
        evaluated = {q: v for q, v in self.values.get(retriever, {}).items() if "recall" in v}
        if not evaluated or not all("causes" in v for v in evaluated.values()):
            return None
        return {q: [str(c) for c in v["causes"]] for q, v in evaluated.items()}

    def to_json(self) -> dict[str, Any]:
        """The JSON object written to disk."""
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "name": self.name,
            "manifest": self.manifest,
            "questions": {
                q: {**self.questions.get(q, {}), "grades": self.grades.get(q, {})}
                for q in self.question_ids
            },
            "retrievers": {
                r: {
                    **self.summaries.get(r, {}),
                    "per_question": {
                        q: {**self.values.get(r, {}).get(q, {}), "ranked": ranked}
                        for q, ranked in self.rankings[r].items()
                    },
                }
                for r in self.rankings
            },
        }


def saved_run_from_workspace(ws: Workspace, name: str) -> SavedRun:
    """The workspace's current numbers as a saved run (not yet written)."""
    ev = ws.evaluation
    assert ev is not None
    questions = {
        q.id: {"text": q.text, "slices": list(q.slices), "evaluated": q.id in ev.evaluated}
        for q in ws.questions
    }
    grades = {q: dict(ev.gains(q)) for q in ev.question_ids}
    rankings: dict[str, dict[str, list[str]]] = {}
    summaries: dict[str, dict[str, float]] = {}
    values: dict[str, dict[str, dict[str, Any]]] = {}
    why = WhyIndex(ws)
    for r in ws.retrievers:
        summary = ev.summary(r)
        summaries[r] = {**summary.as_dict(), "questions": summary.questions}
        rankings[r] = {q: [cid for cid, _ in ev.rankings[r].get(q, ())] for q in ev.question_ids}
        values[r] = {}
        for q in ev.question_ids:
            if q not in ev.evaluated:
                continue
            m = ev.per_question[r][q]
            values[r][q] = {
                "first_relevant_rank": m.first_relevant_rank,
                "recall": m.recall,
                "precision": m.precision,
                "precision_ceiling": m.precision_ceiling,
                "rr": m.rr,
                "ndcg": m.ndcg,
                "causes": list(why.causes(q, r)),
            }
    return SavedRun(
        name, manifest(ws), list(ev.question_ids), questions, grades, rankings, summaries, values
    )


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
    ws: Workspace, name: str, runs_dir: Path | str | None = None, *, replace: bool = False
) -> WrittenRun:
    """Write the workspace's numbers as saved run ``name``.

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
    data = orjson.dumps(saved_run_from_workspace(ws, name).to_json(), option=orjson.OPT_INDENT_2)
    backup = None
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
        raise InputError(folder, f"cannot write the saved run: {exc.strerror or exc}") from None
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


#: Per-question values (and means) a saved run keeps: each a number from 0 to 1.
_UNIT_VALUES = ("recall", "precision", "precision_ceiling", "rr", "mrr", "ndcg")


class _Malformed(Exception):
    """A saved run's field that is not what the format says: where it is, and what is wrong."""


def _whole(value: object, where: str, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Malformed(f"{where} must be a whole number, got {value!r}")
    if minimum is not None and value < minimum:
        raise _Malformed(f"{where} must be at least {minimum}, got {value}")
    return value


def _mapping(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Malformed(f"{where} must be an object, got {type(value).__name__}")
    return value


def _strings(value: object, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _Malformed(f"{where} must be a list of strings")
    return value


def _unit(value: object, where: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not 0 <= value <= 1
    ):
        raise _Malformed(f"{where} must be a number from 0 to 1, got {value!r}")
    return float(value)


def _check_manifest(manifest: dict[str, Any]) -> None:
    """The manifest fields a diff or a comparison computes with: k, depth, threshold."""
    for key, minimum in (("k", 1), ("depth", 1), ("threshold", None)):
        if key in manifest:
            _whole(manifest[key], f"manifest '{key}'", minimum)


def _check_values(values: dict[str, Any], where: str) -> None:
    """Saved per-question values (or means): numbers from 0 to 1, a rank of 1 or more (or null), a count."""
    for key, value in values.items():
        if key in _UNIT_VALUES:
            _unit(value, f"{where}.{key}")
        elif key == "first_relevant_rank" and value is not None:
            _whole(value, f"{where}.{key}", 1)
        elif key == "questions":
            _whole(value, f"{where}.{key}", 0)


def load_run(path: Path | str) -> SavedRun:
    """Read a saved run file; InputError naming the field when it is not one (every field used is checked)."""
    path = Path(path)
    try:
        raw = read_regular(path)
        obj = orjson.loads(raw[len(codecs.BOM_UTF8) :] if raw.startswith(codecs.BOM_UTF8) else raw)
    except OSError as exc:
        raise InputError(path, f"cannot read the saved run: {exc.strerror or exc}") from None
    except orjson.JSONDecodeError as exc:
        raise InputError(path, f"malformed JSON: {exc}") from None
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise InputError(path, 'not a ragtui saved run (no "format": "ragtui-run")')
    version = obj.get("format_version", 0)
    if isinstance(version, bool) or not isinstance(version, int):
        raise InputError(
            path, f"saved run: 'format_version' must be a whole number, got {version!r}"
        )
    if version > FORMAT_VERSION:
        raise InputError(path, f"saved by a newer ragtui (format version {version})")
    try:
        manifest = _mapping(obj.get("manifest") or {}, "'manifest'")
        _check_manifest(manifest)
        questions_obj = _mapping(obj.get("questions"), "'questions'")
        grades: dict[str, dict[str, int]] = {}
        questions: dict[str, dict[str, Any]] = {}
        for q, info in questions_obj.items():
            info = _mapping(info, f"questions.{q}")
            graded = _mapping(info.get("grades", {}), f"questions.{q}.grades")
            grades[q] = {c: _whole(g, f"questions.{q}.grades.{c}") for c, g in graded.items()}
            if "text" in info and not isinstance(info["text"], str):
                raise _Malformed(f"questions.{q}.text must be a string")
            if "slices" in info:
                _strings(info["slices"], f"questions.{q}.slices")
            questions[q] = {k: v for k, v in info.items() if k != "grades"}
        rankings: dict[str, dict[str, list[str]]] = {}
        summaries: dict[str, dict[str, float]] = {}
        values: dict[str, dict[str, dict[str, Any]]] = {}
        for r, body in _mapping(obj.get("retrievers"), "'retrievers'").items():
            body = _mapping(body, f"retrievers.{r}")
            per_question = _mapping(body.get("per_question", {}), f"retrievers.{r}.per_question")
            rankings[r], values[r] = {}, {}
            for q, entry in per_question.items():
                where = f"retrievers.{r}.per_question.{q}"
                entry = _mapping(entry, where)
                rankings[r][q] = _strings(entry.get("ranked", []), f"{where}.ranked")
                kept = {k: x for k, x in entry.items() if k != "ranked"}
                _check_values(kept, where)
                values[r][q] = kept
            summary = {k: v for k, v in body.items() if k != "per_question"}
            _check_values(summary, f"retrievers.{r}")
            summaries[r] = summary
    except _Malformed as exc:
        raise InputError(path, f"saved run: {exc}") from None
    return SavedRun(
        name=str(obj.get("name") or path.stem),
        manifest=dict(manifest),
        question_ids=list(questions_obj),
        questions=questions,
        grades=grades,
        rankings=rankings,
        summaries=summaries,
        values=values,
        path=path,
    )


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
        if ws is None:
            raise
        raise InputError(
            None,
            f"{spec!r} is neither a retriever ({', '.join(ws.retrievers)}) nor a saved run: {exc.problem}",
        ) from None
    return run.system(named or pick_retriever(run, retriever))


@dataclass(frozen=True, slots=True)
class QuestionChange:
    """One question in both runs: first relevant rank and nDCG@k in A and in B."""

    question: str
    text: str
    rank_a: int | None
    rank_b: int | None
    ndcg_a: float
    ndcg_b: float
    #: The two runs judge this question with other grades (the same chunks, other hand grades).
    regraded: bool = False
    #: Both runs ranked the same ids in the same order.
    same_ranking: bool = False

    @property
    def ndcg_change(self) -> float:
        """nDCG@k in B minus nDCG@k in A."""
        return self.ndcg_b - self.ndcg_a

    @property
    def rr_change(self) -> float:
        """Reciprocal rank in B minus in A (a rank of None counts as RR 0)."""
        return (1.0 / self.rank_b if self.rank_b else 0.0) - (
            1.0 / self.rank_a if self.rank_a else 0.0
        )

    @property
    def direction(self) -> str:
        """``better``, ``worse`` or ``same``: by nDCG@k, then by the first relevant rank;
        ``regraded`` when the ranking is the same and only the grades that judge it changed the
        numbers (retrieval did not get better or worse)."""
        for change in (self.ndcg_change, self.rr_change):
            if abs(change) > TOLERANCE:
                if self.regraded and self.same_ranking:
                    return "regraded"
                return "better" if change > 0 else "worse"
        return "same"


@dataclass(frozen=True, slots=True)
class CauseChange:
    """One cause of a miss between two runs: of the questions it marked in A, those B no longer
    misses, those B misses for other causes only and those it still marks; and those only B marks."""

    cause: str
    became_hits: tuple[str, ...]
    other_causes: tuple[str, ...]
    still: tuple[str, ...]
    new: tuple[str, ...]


def cause_changes(
    a: Mapping[str, Sequence[str]], b: Mapping[str, Sequence[str]], questions: Sequence[str]
) -> list[CauseChange]:
    """For every cause, in the order of precedence, what became of its misses (questions in the
    order given)."""
    out = []
    for cause in CAUSES:
        had = [q for q in questions if cause in a.get(q, ())]
        has = [q for q in questions if cause in b.get(q, ())]
        out.append(
            CauseChange(
                cause,
                tuple(q for q in had if not b.get(q)),
                tuple(q for q in had if b.get(q) and cause not in b.get(q, ())),
                tuple(q for q in had if cause in b.get(q, ())),
                tuple(q for q in has if cause not in a.get(q, ())),
            )
        )
    return out


@dataclass(frozen=True)
class RunDiff:
    """Run B against run A for one retriever: every common question's change, worst first, and the means."""

    a: str
    b: str
    k: int
    changes: list[QuestionChange]
    only_a: list[str]
    only_b: list[str]
    means_a: dict[str, float]
    means_b: dict[str, float]
    settings_changed: list[tuple[str, Any, Any]]
    #: What became of each cause of a miss; None when a run was saved without causes or at another k.
    causes: list[CauseChange] | None = None
    #: Questions in both that the two runs judge with other grades (same chunks or documents,
    #: other hand grades), in golden order; empty when the grades cannot be compared (other chunks).
    regraded: list[str] = field(default_factory=list)
    #: The label journal differs between the runs (its hash in the manifests), whatever the chunks.
    labels_differ: bool = False
    #: Whether grades were compared question by question (same chunks, or both at document level).
    grades_compared: bool = True

    @property
    def better(self) -> list[QuestionChange]:
        """Questions that got better, best first."""
        return [c for c in reversed(self.changes) if c.direction == "better"]

    @property
    def worse(self) -> list[QuestionChange]:
        """Questions that got worse, worst first."""
        return [c for c in self.changes if c.direction == "worse"]

    @property
    def changed(self) -> list[QuestionChange]:
        """Questions that got better or worse, or whose numbers moved with their grades alone, worst first."""
        return [c for c in self.changes if c.direction != "same"]

    @property
    def regraded_only(self) -> list[QuestionChange]:
        """Questions ranked the same whose numbers changed with their grades alone, worst first."""
        return [c for c in self.changes if c.direction == "regraded"]

    @property
    def mean_change(self) -> dict[str, float]:
        """Mean of B minus mean of A, per measure."""
        return {m: self.means_b[m] - self.means_a[m] for m in self.means_a}


#: Manifest fields that do not describe a setting (a diff does not list them as changes).
_NOT_SETTINGS = {"created", "external_runs"}


def grades_comparable(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two runs' grades can be compared question by question: both at document level, or
    the same chunks (the manifests' chunk hash; runs saved without it are taken as comparable)."""
    if a.get("level") == b.get("level") == "document":
        return True
    return a.get("level") == b.get("level") and a.get("chunks_sha256") == b.get("chunks_sha256")


def settings_changes(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """(field, value in A, value in B) for every manifest field that differs, dates left out."""
    keys = [k for k in a if k not in _NOT_SETTINGS] + [
        k for k in b if k not in a and k not in _NOT_SETTINGS
    ]
    return [(k, a.get(k), b.get(k)) for k in keys if a.get(k) != b.get(k)]


def diff_runs(
    a: System,
    b: System,
    k: int,
    *,
    texts: Mapping[str, str] | None = None,
    manifests: tuple[Mapping[str, Any], Mapping[str, Any]] | None = None,
    causes: tuple[Mapping[str, Sequence[str]], Mapping[str, Sequence[str]]] | None = None,
) -> RunDiff:
    """Every question both systems evaluate, sorted worst first (nDCG@k change, then RR change, then
    golden order); with ``causes`` (each run's causes per question), what became of each cause."""
    from ragtui.core.metrics.formulas import first_relevant_rank
    from ragtui.core.metrics.measures import relevant_set

    evaluated_b = set(b.evaluated())
    common = [q for q in a.evaluated() if q in evaluated_b]
    only_a = [q for q in a.evaluated() if q not in evaluated_b]
    only_b = [q for q in b.evaluated() if q not in set(common)]
    ndcg = Measure("nDCG", k)
    ndcg_a, ndcg_b = a.values(ndcg, common), b.values(ndcg, common)
    compared = manifests is None or grades_comparable(*manifests)
    changes = []
    for i, q in enumerate(common):
        changes.append(
            QuestionChange(
                question=q,
                text=(texts or {}).get(q, ""),
                rank_a=first_relevant_rank(a.ranked(q), relevant_set(a.gains(q), a.threshold)),
                rank_b=first_relevant_rank(b.ranked(q), relevant_set(b.gains(q), b.threshold)),
                ndcg_a=float(ndcg_a[i]),
                ndcg_b=float(ndcg_b[i]),
                regraded=compared and dict(a.gains(q)) != dict(b.gains(q)),
                same_ranking=list(a.ranked(q)) == list(b.ranked(q)),
            )
        )
    position = {q: i for i, q in enumerate(common)}
    changes.sort(key=lambda c: (c.ndcg_change, c.rr_change, position[c.question]))
    measures: Sequence[Measure] = (Measure("R", k), Measure("RR"), ndcg)
    means_a = {m.name: float(a.values(m, common).mean()) if common else 0.0 for m in measures}
    means_b = {m.name: float(b.values(m, common).mean()) if common else 0.0 for m in measures}
    changed = settings_changes(*manifests) if manifests is not None else []
    moved = cause_changes(causes[0], causes[1], common) if causes is not None else None
    labels = manifests is not None and manifests[0].get("labels_sha256") != manifests[1].get(
        "labels_sha256"
    )
    regraded = [
        c.question for c in sorted(changes, key=lambda c: position[c.question]) if c.regraded
    ]
    return RunDiff(
        a.label,
        b.label,
        k,
        changes,
        only_a,
        only_b,
        means_a,
        means_b,
        changed,
        moved,
        regraded=regraded,
        labels_differ=labels,
        grades_compared=compared,
    )


@dataclass(frozen=True)
class Baseline:
    """A saved run chosen as baseline: each question's nDCG@k then, for one retriever, at every k asked."""

    name: str
    run: SavedRun
    retriever: str
    values_at: dict[int, dict[str, float]] = field(default_factory=dict)
    """nDCG@k of every question the run evaluated, by k (filled by ``with_k``)."""

    def with_k(self, k: int) -> Baseline:
        """The baseline with its values at ``k`` computed (itself when they are there already)."""
        if k in self.values_at:
            return self
        system = self.run.system(self.retriever)
        evaluated = system.evaluated()
        array = system.values(Measure("nDCG", k), evaluated)
        values = {q: float(v) for q, v in zip(evaluated, array, strict=True)}
        return Baseline(self.name, self.run, self.retriever, {**self.values_at, k: values})

    def deltas(self, ws: Workspace) -> dict[str, float]:
        """nDCG@k now minus in the baseline, for the questions both evaluate (k as in ``ws``)."""
        ev = ws.evaluation
        if ev is None or self.retriever not in ev.per_question or ev.k not in self.values_at:
            return {}
        then = self.values_at[ev.k]
        now = ev.per_question[self.retriever]
        return {q: now[q].ndcg - then[q] for q in ev.evaluated if q in then}


def load_baseline(folder: Path, name: str, retriever: str | None, k: int) -> Baseline:
    """Read saved run ``name`` from ``folder`` as a baseline for ``retriever`` (default: the run's
    hybrid, else its first retriever), with its nDCG@k values; InputError when it cannot be read."""
    run = load_run(folder / f"{safe_filename(name)}.json")
    chosen = pick_retriever(run, retriever)
    if chosen not in run.rankings and run.rankings:
        chosen = next(iter(run.rankings))
    return Baseline(name, run, chosen).with_k(k)
