"""The live retrievers part of a workspace (``Live``, built by ``live_part``) and their answers as
ragtui judges them.

An answer is read through ``map_hits``: an id that is a chunk is that chunk, a passage whose text
is one of ragtui's chunks is that chunk, and any other passage with a text is the retriever's own,
judged for it alone (``own_passages``), with evidence recall as its recall when the evidence rule
grades. ``compute_live`` only reads (for a worker thread); ``Workspace.apply_live`` adds answers.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ragtui.core.data.golden import Question, normalize_ws
from ragtui.core.metrics.evaluation import UNIT_CHUNKS, UNIT_EVIDENCE, EvidenceUnits, OwnPassages
from ragtui.core.retrieval.base import Hit, Ranking
from ragtui.core.retrieval.connectors import build_live_retrievers
from ragtui.core.retrieval.live import (
    LiveProgress,
    LiveRetriever,
    LiveRun,
    LiveStatus,
    examples,
    run_live,
)
from ragtui.core.settings import Settings
from ragtui.core.workspace.grading import Grades
from ragtui.core.workspace.loading import LEVEL_CHUNK, Data, Passages

#: The kinds of passage a live retriever returns, in ``PassageCounts`` order.
PASSAGE_KINDS = ("chunk_ids", "mapped", "own", "unknown")


@dataclass(frozen=True, slots=True)
class PassageCounts:
    """What a live retriever returned for the golden questions, counted by distinct passage: ids that
    are ragtui's chunks, passages under other ids whose text is one of ragtui's chunks (white space
    collapsed: mapped onto it), passages ragtui does not hold (its own), and ids with neither."""

    chunk_ids: int = 0
    mapped: int = 0
    own: int = 0
    unknown: int = 0

    @property
    def returned(self) -> int:
        """Every distinct passage returned."""
        return self.chunk_ids + self.mapped + self.own + self.unknown

    def as_dict(self) -> dict[str, int]:
        """The counts as ``ragtui eval --json`` gives them (``passages``)."""
        return {
            "returned": self.returned,
            "chunk_ids": self.chunk_ids,
            "mapped": self.mapped,
            "own": self.own,
            "unknown": self.unknown,
        }

    def describe(self, name: str) -> str:
        """One line: what was mapped, what is its own, and how it is scored."""
        parts = [f"{self.chunk_ids} by ragtui's chunk id"]
        parts.append(f"{self.mapped} mapped onto ragtui's chunks by their text")
        parts.append(f"{self.own} its own")
        if self.unknown:
            parts.append(
                f"{self.unknown} unknown id{'s' if self.unknown != 1 else ''} without text"
            )
        line = (
            f"{name}: {self.returned} passage{'s' if self.returned != 1 else ''} returned: "
            + ", ".join(parts)
        )
        if self.own:
            line += (
                f"; its own passages are judged for {name} alone; to score it on ragtui's "
                "chunks, give ragtui the service's chunks with --chunks FILE.jsonl"
            )
        return line


@dataclass(frozen=True)
class LiveResult:
    """What ``compute_live`` found: each live retriever's answers, failures and counts."""

    runs: dict[str, LiveRun]


@dataclass(frozen=True)
class Live:
    """The live retrievers part of a workspace (plugins, HTTP APIs, Milvus), in display order: each
    one's state and error message (for its list header), and what it returned for the golden
    questions; built by ``live_part``, replaced whole when answers arrive."""

    retrievers: Mapping[str, LiveRetriever]
    status: Mapping[str, LiveStatus]
    counts: Mapping[str, PassageCounts] = field(default_factory=dict)


def live_part(settings: Settings, data: Data, warnings: list[str]) -> Live:
    """The live retrievers, built but not asked yet, each waiting.

    A Milvus collection indexed from other chunks, corpus or model is refused (its ids would name
    other texts); one ragtui did not index is searched with a warning.
    """
    s = settings
    live = build_live_retrievers(
        s.retrievers,
        s.live_retrievers,
        milvus=s.milvus,
        collection=s.collection,
        milvus_fields=s.milvus_fields,
        model=s.model,
        cache_root=s.cache_dir,
        taken=[name for name, _ in s.runs],
        allow_http=s.allow_http,
    )
    if live:  # else nothing to check: the Milvus modules (and logging) are not even imported
        from ragtui.core.retrieval.milvus import check_collection

        warnings.extend(
            check_collection(
                live,
                data.chunks,
                s.model,
                documents=data.corpus.documents,
                chunk_size=s.chunk_size,
                overlap=s.overlap,
                chunks_file=s.chunks,
                windows=s.windows,
                window_stride=s.window_stride,
            )
        )
    return Live(live, {name: LiveStatus(name, "waiting") for name in live})


# ---- asking and applying ---------------------------------------------------------------------


def compute_live(
    settings: Settings,
    retrievers: Mapping[str, LiveRetriever],
    questions: Sequence[Question],
    *,
    refresh: bool = False,
    progress: LiveProgress | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> LiveResult:
    """Every golden question's answer from each of ``retrievers``, cached ones read from disk.

    Changes nothing of a workspace, so it may run in a worker thread (one per retriever, so a slow
    one does not hold up the others); ``Workspace.apply_live`` then adds the result on the UI
    thread. ``refresh`` asks again instead of reading the cache.
    """
    asked = [(q.id, q.text) for q in questions]
    runs = {}
    for name, retriever in retrievers.items():
        runs[name] = run_live(
            retriever,
            asked,
            settings.depth,
            refresh=refresh,
            root=settings.cache_dir,
            progress=progress,
            cancelled=cancelled,
        )
    return LiveResult(runs)


def unknown_warning(name: str, ids: Iterable[str], data: Data) -> list[str]:
    """The warning for ids a live retriever returned that are neither chunks nor come with a text."""
    unknown = sorted(set(ids) - data.corpus_docs)
    if not unknown:
        return []
    many = len(unknown) != 1
    line = (
        f"{name}: {len(unknown)} result id{'s' if many else ''} neither among the chunks nor "
        f"returned with a text (e.g. {examples(unknown, 3)}); "
        "they count as not relevant and are shown by id"
    )
    return [line]


# ---- mapping passages onto chunks ------------------------------------------------------------


def map_hits(
    passages: Passages, name: str, hits: Iterable[Hit], counts: dict[str, set[str]] | None = None
) -> list[Hit]:
    """A live retriever's answer as ragtui judges it, best first.

    An id that is one of ragtui's chunks stays as it is; a passage under another id whose text
    (white space collapsed) is one of ragtui's chunks becomes that chunk (so it scores exactly as
    the chunk's id would); any other passage with a text is the retriever's own, kept under its
    id (or ``id@name`` when another retriever returned that id with another text). A passage met
    twice keeps its first place. ``counts`` gathers the returned ids by kind. Only reads, so a
    worker may call it (with a ``Passages.snapshot``).
    """
    out: list[Hit] = []
    seen: set[str] = set()
    foreign = passages.foreign
    for hit in hits:
        kind = "chunk_ids"
        if hit.id in passages.by_id and hit.id not in foreign:
            mapped = Hit(hit.id, hit.score, None, hit.doc)
        elif hit.text is None:
            kind = "unknown" if hit.id not in foreign else "own"
            mapped = hit
        else:
            cid = passages.texts.chunk_of(hit.text, passages.chunks)
            if cid is not None:
                kind = "mapped"
                mapped = Hit(cid, hit.score, None, None)
            else:
                kind = "own"
                own_id = hit.id
                known = foreign.get(own_id)
                if known is not None and known.text != hit.text:
                    # Another passage under this id (another retriever's, or an earlier text):
                    # the first text keeps the id.
                    own_id = f"{hit.id}@{name}"
                mapped = Hit(own_id, hit.score, hit.text, hit.doc)
        if counts is not None:
            counts[kind].add(hit.id)
        if mapped.id in seen:
            continue
        seen.add(mapped.id)
        out.append(mapped)
    return out


# ---- judging own passages --------------------------------------------------------------------


def own_passages(
    grades: Grades, live: Live, rankings: Mapping[str, Ranking] | None, name: str
) -> OwnPassages | None:
    """How ``name`` is judged when its golden rankings hold passages of its own (None: like
    ragtui's retrievers, on ragtui's chunks alone): by the grades of what it could return, its own
    passages, and ragtui's chunks only when it returns some of them (``rankings``: its rankings)."""
    if grades.data.level != LEVEL_CHUNK or name not in live.retrievers:
        return None
    foreign = grades.passages.foreign
    ids = {cid for ranking in (rankings or {}).values() for cid, _ in ranking}
    if not any(cid in foreign for cid in ids):
        return None
    returns_chunks = any(cid not in foreign for cid in ids)

    def gains(qid: str, ranked: Iterable[str], shared: Mapping[str, int]) -> Mapping[str, int]:
        return _own_gains(grades, qid, ranked, shared if returns_chunks else {})

    return OwnPassages(gains)


def evidence_units(
    settings: Settings, grades: Grades, own: bool, warnings: list[str]
) -> EvidenceUnits | None:
    """The evaluation's unit: evidence-level measures (for every retriever) when the settings ask
    for them or when a retriever returns passages of its own (``own``), else None (chunks)."""
    unit = settings.unit
    if own and unit == UNIT_CHUNKS:
        note = (
            "--unit chunks: a retriever returns passages of its own, so every row is "
            "evidence-level (docs/metrics.md#units)"
        )
        if note not in warnings:
            warnings.append(note)
    if not own and unit != UNIT_EVIDENCE:
        return None

    return functools.partial(_evidence_ranks, settings.threshold, grades)


def _own_gains(
    grades: Grades, qid: str, ranked: Iterable[str], shared: Mapping[str, int]
) -> Mapping[str, int]:
    """The shared grades and those of the retriever's own passages in ``ranked`` (a hand grade wins)."""
    own = [cid for cid in ranked if cid in grades.passages.foreign]
    if not own:
        return shared
    gains = dict(shared)
    hand = grades.hand_grades(qid, own=True)
    base = grades.passages.own_grades.get(qid, {})
    for cid in own:
        if cid in hand:
            gains[cid] = hand[cid]
        elif cid in base:
            gains[cid] = base[cid]
    return gains


def _evidence_ranks(
    threshold: int,
    grades: Grades,
    qid: str,
    ranked: Sequence[str],
    gains: Mapping[str, int],
    shared: Mapping[str, int],
) -> tuple[int | None, ...]:
    """For each evidence unit of a question, the rank of the first relevant passage of ``ranked``
    that holds it (None: none does).

    The units are the question's evidence strings (white space collapsed; a passage holds one when
    its text contains it), else the documents of the question's relevant chunks (``shared``; a
    passage holds one when it comes from that document). A passage below the threshold holds
    nothing, so one graded 0 by hand finds nothing.
    """
    question = grades.questions.by_id.get(qid)
    needles: tuple[str, ...] = ()
    if question is not None and grades.data.level == LEVEL_CHUNK:
        needles = tuple(dict.fromkeys(n for n in map(normalize_ws, question.evidence) if n))
    passages = grades.passages
    doc_of = passages.doc_of

    units: tuple[str, ...] = needles or tuple(
        dict.fromkeys(doc_of(cid) for cid, grade in shared.items() if grade >= threshold)
    )
    found: dict[str, int] = {}
    for rank, cid in enumerate(dict.fromkeys(ranked), start=1):
        if gains.get(cid, 0) < threshold:
            continue
        if needles:
            text = passages.texts.normalized(cid, passages.by_id)
            held = [n for n in needles if n not in found and n in text]
        else:
            # A relevant passage of a document that is no unit (graded by hand) holds nothing.
            held = [d for d in (doc_of(cid),) if d in units and d not in found]
        for unit in held:
            found[unit] = rank
        if len(found) == len(units):
            break
    return tuple(found.get(unit) for unit in units)
