"""A saved run: the manifest of what produced the numbers, the JSON written to disk, and reading it
back (every field a diff or a comparison uses is checked, and a bad one named)."""

from __future__ import annotations

import codecs
import hashlib
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from ragtui import __version__
from ragtui.core.analysis.why import WhyIndex
from ragtui.core.data.corpus import utf8_name
from ragtui.core.errors import InputError
from ragtui.core.files import read_regular
from ragtui.core.metrics.evaluation import UNIT_EVIDENCE
from ragtui.core.metrics.measures import System
from ragtui.core.retrieval.hybrid import RRF_K
from ragtui.core.workspace import Workspace

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "SavedRun",
    "load_run",
    "manifest",
    "saved_run_from_workspace",
]

#: The ``format`` field of a saved run, and its version.
FORMAT = "ragtui-run"
FORMAT_VERSION = 1


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
    for chunk in ws.data.chunks:
        chunk_hash.update(f"{chunk.id}\t{chunk.sha1}\n".encode())
    # Recorded only when used, so a diff against a run saved before they existed shows no change.
    extra: dict[str, Any] = {}
    if ws.live.retrievers:
        extra["live_retrievers"] = {name: r.describe() for name, r in ws.live.retrievers.items()}
    if s.chunks is not None:
        extra["chunks_file"] = _path_text(s.chunks)
    if ws.data.level != "chunk":
        extra["level"] = ws.data.level
    if ws.evaluation is not None and ws.evaluation.units is not None:
        extra["unit"] = ws.evaluation.unit
    return {
        **extra,
        "ragtui_version": __version__,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "corpus": _path_text(s.corpus),
        "golden": _path_text(golden),
        "beir": _path_text(s.beir),
        "chunk_size": s.chunk_size,
        "overlap": s.overlap,
        "chunks": len(ws.data.chunks),
        "chunks_sha256": chunk_hash.hexdigest(),
        "model": s.model,
        "tokenizer": token_counter(s.model).name,
        "bm25": ws.ranked.bm25.variant if ws.ranked.bm25 is not None else None,
        "bm25_backend": s.bm25_backend,
        "rrf_k": ws.ranked.hybrid.k if ws.ranked.hybrid is not None else RRF_K,
        "windows": s.windows,
        "window_length": ws.ranked.window_plan.length
        if ws.ranked.window_plan is not None
        else None,
        "window_stride": ws.ranked.window_plan.stride
        if ws.ranked.window_plan is not None
        else None,
        "rerank": s.rerank,
        "rerank_over": s.rerank_over if s.rerank else None,
        "k": s.k,
        "depth": s.depth,
        "threshold": s.threshold,
        "retrievers": list(ws.retrievers),
        "external_runs": {
            name: {"path": _path_text(run.path), "sha256": run.sha256}
            for name, run in ws.ranked.external.items()
        },
        "labels_sha256": _sha256_file(ws.grades.labels.path),
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
        values = self.values.get(retriever, {})
        # A retriever judged on passages of its own was saved with its own grades.
        grades = {q: values.get(q, {}).get("grades", g) for q, g in self.grades.items()}
        unit_ranks = None
        if self.manifest.get("unit") == UNIT_EVIDENCE:
            unit_ranks = {q: v.get("evidence_ranks", ()) for q, v in values.items()}
        averaged = [q for q, info in self.questions.items() if info.get("evaluated")]
        return System(
            f"{self.name}:{retriever}",
            self.rankings[retriever],
            grades,
            self.question_ids,
            self.threshold,
            unit_ranks,
            frozenset(averaged) if any("evaluated" in i for i in self.questions.values()) else None,
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


def saved_run_from_workspace(ws: Workspace, name: str, why: WhyIndex | None = None) -> SavedRun:
    """The workspace's current numbers as a saved run (not yet written); ``why``: its causes,
    when already computed."""
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
    why = why if why is not None else WhyIndex(ws)
    for r in ws.retrievers:
        summary = ev.summary(r)
        summaries[r] = {**summary.as_dict(), "questions": summary.questions}
        rankings[r] = {q: [cid for cid, _ in ev.rankings[r].get(q, ())] for q in ev.question_ids}
        values[r] = {}
        ranks = ev.unit_ranks(r)
        for q in ev.question_ids:
            if q not in ev.evaluated:
                continue
            m = ev.per_question[r][q]
            extra: dict[str, Any] = {}
            if r in ev.own:
                extra["grades"] = dict(ev.gains_for(r, q))
            if ranks is not None:
                extra["evidence_ranks"] = list(ranks.get(q, ()))
            values[r][q] = {
                **extra,
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
    """The manifest fields a diff or a comparison computes with: k, depth, threshold, unit."""
    for key, minimum in (("k", 1), ("depth", 1), ("threshold", None)):
        if key in manifest:
            _whole(manifest[key], f"manifest '{key}'", minimum)
    if manifest.get("unit", UNIT_EVIDENCE) != UNIT_EVIDENCE:
        raise _Malformed(
            f"manifest 'unit' must be \"evidence\" or absent, got {manifest['unit']!r}"
        )


def _check_values(values: dict[str, Any], where: str) -> None:
    """Saved per-question values (or means): numbers from 0 to 1, a rank of 1 or more (or null), a count."""
    for key, value in values.items():
        if key in _UNIT_VALUES:
            _unit(value, f"{where}.{key}")
        elif key == "first_relevant_rank" and value is not None:
            _whole(value, f"{where}.{key}", 1)
        elif key == "questions":
            _whole(value, f"{where}.{key}", 0)
        elif key == "evidence_ranks":
            if not isinstance(value, list):
                raise _Malformed(f"{where}.{key} must be a list")
            for i, rank in enumerate(value):
                if rank is not None:
                    _whole(rank, f"{where}.{key}[{i}]", 1)
        elif key == "grades":
            for c, g in _mapping(value, f"{where}.{key}").items():
                _whole(g, f"{where}.{key}.{c}")


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
        evidence = manifest.get("unit") == UNIT_EVIDENCE
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
                if evidence and "recall" in kept and "evidence_ranks" not in kept:
                    # An evaluated question of an evidence-level run: its recall needs its ranks.
                    raise _Malformed(
                        f"{where}.evidence_ranks is missing (the run is evidence-level)"
                    )
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
