"""The live retrievers' answers (plugins, HTTP APIs, Milvus) as ragtui judges them.

An answer is read through ``map_hits``: an id that is a chunk is that chunk, a passage whose text
is one of ragtui's chunks is that chunk, and any other passage with a text is the retriever's own,
judged for it alone (``own_passages``), with evidence recall as its recall when the evidence rule
grades. ``compute_live`` only reads (for a worker thread); ``apply_live`` changes the workspace.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from ragtui.core.data.chunking import Chunk
from ragtui.core.data.golden import EVIDENCE_GRADE, EvidenceIndex, Question, normalize_ws
from ragtui.core.metrics.evaluation import (
    UNIT_CHUNKS,
    UNIT_EVIDENCE,
    Evaluation,
    EvidenceUnits,
    OwnPassages,
)
from ragtui.core.retrieval.base import Hit, Ranking
from ragtui.core.retrieval.live import (
    LiveError,
    LiveProgress,
    LiveRetriever,
    LiveRun,
    LiveStatus,
    examples,
    run_live,
)
from ragtui.core.settings import Settings
from ragtui.core.workspace.grading import LEVEL_CHUNK, SOURCE_EVIDENCE

#: The kinds of passage a live retriever returns, in ``PassageCounts`` order.
_PASSAGE_KINDS = ("chunk_ids", "mapped", "own", "unknown")


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


class ChunkTexts:
    """Texts with white space collapsed, each computed when first asked for: ragtui's chunk ids by
    their text (to map a passage onto the chunk it is), and any passage's text (for evidence recall)."""

    def __init__(self) -> None:
        self._by_text: dict[str, str] | None = None
        self._normalized: dict[str, str] = {}

    def chunk_of(self, text: str, chunks: Iterable[Chunk]) -> str | None:
        """The chunk of ``chunks`` whose text is ``text`` with white space collapsed (the first), or None."""
        by_text = self._by_text
        if by_text is None:
            by_text = {}
            for c in chunks:
                by_text.setdefault(normalize_ws(c.text), c.id)
            self._by_text = by_text
        return by_text.get(normalize_ws(text))

    def normalized(self, cid: str, chunk_by_id: Mapping[str, Chunk]) -> str:
        """The text of a passage with white space collapsed ("" for an id that is no passage)."""
        text = self._normalized.get(cid)
        if text is None:
            chunk = chunk_by_id.get(cid)
            text = self._normalized[cid] = normalize_ws(chunk.text) if chunk is not None else ""
        return text


class PassageIndex(Protocol):
    """What ``map_hits`` reads: ragtui's chunks, every passage by id, the live retrievers' own
    passages, and the index of the chunks' texts (a workspace, or a copy a worker thread reads)."""

    @property
    def chunks(self) -> Sequence[Chunk]:
        """ragtui's chunks."""
        ...

    @property
    def chunk_by_id(self) -> Mapping[str, Chunk]:
        """Every passage by id: ragtui's chunks and the own passages."""
        ...

    @property
    def foreign(self) -> Mapping[str, Chunk]:
        """The passages live retrievers returned that ragtui's chunks do not hold."""
        ...

    @property
    def chunk_texts(self) -> ChunkTexts:
        """ragtui's chunk ids by their text."""
        ...


class LiveAsked(Protocol):
    """What ``compute_live`` reads: the settings (depth, cache folder), the live retrievers and the
    golden questions (a workspace, or what the app captured of one for a worker thread)."""

    @property
    def settings(self) -> Settings:
        """The depth asked for and the cache folder."""
        ...

    @property
    def live(self) -> Mapping[str, LiveRetriever]:
        """The live retrievers, in display order."""
        ...

    @property
    def questions(self) -> Sequence[Question]:
        """The golden questions."""
        ...


class LiveAnswered(Protocol):
    """What the live-answer functions read and change of a workspace (``Workspace`` is one)."""

    settings: Settings
    chunks: list[Chunk]
    questions: list[Question]
    question_by_id: dict[str, Question]
    chunk_by_id: dict[str, Chunk]
    chunk_order: dict[str, int]
    rankings: dict[str, MutableMapping[str, Ranking]]
    evaluation: Evaluation | None
    warnings: list[str]
    base_source: str
    level: str
    qrels: dict[str, dict[str, int]]
    live: dict[str, LiveRetriever]
    live_status: dict[str, LiveStatus]
    #: Passages live retrievers returned that ragtui's chunks do not hold, and their grades.
    foreign: dict[str, Chunk]
    own_grades: dict[str, dict[str, int]]
    passages: dict[str, PassageCounts]
    chunk_texts: ChunkTexts

    def evaluated_rankings(
        self, by_question: MutableMapping[str, Ranking]
    ) -> MutableMapping[str, Ranking]:
        """Rankings as the metrics read them (documents at document level)."""
        ...

    def hand_grades(self, qid: str, own: bool = False) -> dict[str, int]:
        """The hand grades of a question that apply (``own``: of own passages too)."""
        ...


# ---- asking and applying ---------------------------------------------------------------------


def compute_live(
    ws: LiveAsked,
    names: Iterable[str] | None = None,
    *,
    refresh: bool = False,
    progress: LiveProgress | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> LiveResult:
    """Every golden question's answer from each live retriever (``names``: some of them), cached ones read from disk.

    Reads the workspace and never changes it, so it may run in a worker thread (one per
    retriever, so a slow one does not hold up the others); ``apply_live`` then adds the result on
    the UI thread. ``refresh`` asks again instead of reading the cache.
    """
    chosen = list(ws.live) if names is None else [n for n in names if n in ws.live]
    questions = [(q.id, q.text) for q in list(ws.questions)]
    runs = {}
    for name in chosen:
        runs[name] = run_live(
            ws.live[name],
            questions,
            ws.settings.depth,
            refresh=refresh,
            root=ws.settings.cache_dir,
            progress=progress,
            cancelled=cancelled,
        )
    return LiveResult(runs)


def apply_live(ws: LiveAnswered, result: LiveResult) -> None:
    """Add live answers computed by ``compute_live``: rankings, statuses, the passages they brought, then the numbers.

    Each answer is read through ``map_hits``. No other retriever's numbers change. A retriever
    that answered no question keeps whatever rankings it had (none on the first run) and shows its
    error; one that answered some shows how many it could not answer, and those count as empty runs.
    """
    assert ws.evaluation is not None
    for name, run in result.runs.items():
        ws.live_status[name] = run.status
        if not run.hits:
            continue
        counts: dict[str, set[str]] = {kind: set() for kind in _PASSAGE_KINDS}
        mapped = {qid: map_hits(ws, name, hits, counts) for qid, hits in run.hits.items()}
        add_foreign(ws, [h for hits in mapped.values() for h in hits], origin=name)
        ws.passages[name] = PassageCounts(*(len(counts[kind]) for kind in _PASSAGE_KINDS))
        previous = ws.rankings.get(name, {})
        by_question: dict[str, Ranking] = {}
        for q in ws.questions:
            if q.id in mapped:
                by_question[q.id] = [(h.id, h.score) for h in mapped[q.id]]
            elif q.id in run.failed:
                by_question[q.id] = []
            else:  # a question added while the worker ran keeps the ranking it was given
                by_question[q.id] = previous.get(q.id, [])
        ws.rankings[name] = by_question
        _warn_unknown(ws, name, counts["unknown"])
    changed = [name for name, run in result.runs.items() if run.hits and name in ws.rankings]
    own = {name: own_passages(ws, name) for name in changed}
    if ws.evaluation.units is None and any(own.values()):
        # Rows of different units: every row becomes evidence-level (docs/metrics.md#units).
        for name in changed:
            ws.evaluation.own.pop(name, None)
        ws.evaluation.set_units(evidence_units(ws, own=True))
    for name in changed:
        ws.evaluation.set_rankings(name, ws.evaluated_rankings(ws.rankings[name]), own[name])


def search_live(ws: LiveAnswered, name: str, text: str, depth: int | None = None) -> Ranking:
    """One live retriever's ranking of any text (an ad-hoc query, a new question), through its cache.

    The passages it brings with their text are kept, so the chunk view can show them; an error
    is raised as LiveError with its one-line reason.
    """
    depth = depth if depth is not None else ws.settings.depth
    run = run_live(ws.live[name], [("", text)], depth, root=ws.settings.cache_dir)
    if "" in run.failed:
        raise LiveError(run.failed[""])
    hits = map_hits(ws, name, run.hits.get("", []))
    add_foreign(ws, hits, origin=name)
    return [(h.id, h.score) for h in hits]


def _warn_unknown(ws: LiveAnswered, name: str, ids: Iterable[str]) -> None:
    unknown = sorted(set(ids) - {c.doc for c in ws.chunks})
    if unknown:
        ws.warnings.append(
            f"{name}: {len(unknown)} result id{'s' if len(unknown) != 1 else ''} neither among the "
            f"chunks nor returned with a text (e.g. {examples(unknown, 3)}); "
            "they count as not relevant and are shown by id"
        )


# ---- mapping passages onto chunks ------------------------------------------------------------


def map_hits(
    ws: PassageIndex, name: str, hits: Iterable[Hit], counts: dict[str, set[str]] | None = None
) -> list[Hit]:
    """A live retriever's answer as ragtui judges it, best first.

    An id that is one of ragtui's chunks stays as it is; a passage under another id whose text
    (white space collapsed) is one of ragtui's chunks becomes that chunk (so it scores exactly as
    the chunk's id would); any other passage with a text is the retriever's own, kept under its
    id (or ``id@name`` when another retriever returned that id with another text). A passage met
    twice keeps its first place. ``counts`` gathers the returned ids by kind. Reads the
    workspace only, so a worker may call it.
    """
    out: list[Hit] = []
    seen: set[str] = set()
    foreign = ws.foreign
    for hit in hits:
        kind = "chunk_ids"
        if hit.id in ws.chunk_by_id and hit.id not in foreign:
            mapped = Hit(hit.id, hit.score, None, hit.doc)
        elif hit.text is None:
            kind = "unknown" if hit.id not in foreign else "own"
            mapped = hit
        else:
            cid = ws.chunk_texts.chunk_of(hit.text, ws.chunks)
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


def add_foreign(ws: LiveAnswered, hits: Iterable[Hit], origin: str) -> None:
    """Keep the passages of ``hits`` (already through ``map_hits``) that ragtui's chunks do not
    hold, and their evidence-rule (or qrels) grades, which only their retriever's numbers read."""
    new: list[Chunk] = []
    for hit in hits:
        if hit.text is None or hit.id in ws.chunk_by_id:
            continue
        chunk = Chunk(
            id=hit.id,
            doc=hit.doc or hit.id,
            index=0,
            start=0,
            end=len(hit.text),
            text=hit.text,
            heading_path=(),
            token_count=-1,
            meta={"retriever": origin},
        )
        ws.foreign[hit.id] = chunk
        ws.chunk_by_id[hit.id] = chunk
        ws.chunk_order[hit.id] = len(ws.chunk_order)
        new.append(chunk)
    if not new:
        return
    if ws.base_source == SOURCE_EVIDENCE:
        index = EvidenceIndex([c.id for c in new], [c.text for c in new])
        for q in ws.questions:
            found = index.matching_chunks(q.evidence)
            if found:
                ws.own_grades.setdefault(q.id, {}).update(dict.fromkeys(found, EVIDENCE_GRADE))
    else:
        for q in ws.questions:
            graded = ws.qrels.get(q.id, {})
            for chunk in new:
                if chunk.doc in graded:
                    ws.own_grades.setdefault(q.id, {})[chunk.id] = graded[chunk.doc]


# ---- judging own passages --------------------------------------------------------------------


def own_passages(ws: LiveAnswered, name: str) -> OwnPassages | None:
    """How ``name`` is judged when its golden rankings hold passages of its own (None: like
    ragtui's retrievers, on ragtui's chunks alone): by the grades of what it could return, its own
    passages, and ragtui's chunks only when it returns some of them."""
    if ws.level != LEVEL_CHUNK or name not in ws.live:
        return None
    ids = {cid for ranking in ws.rankings.get(name, {}).values() for cid, _ in ranking}
    if not any(cid in ws.foreign for cid in ids):
        return None
    returns_chunks = any(cid not in ws.foreign for cid in ids)

    def gains(qid: str, ranked: Iterable[str], shared: Mapping[str, int]) -> Mapping[str, int]:
        return _own_gains(ws, qid, ranked, shared if returns_chunks else {})

    return OwnPassages(gains)


def evidence_units(ws: LiveAnswered, own: bool) -> EvidenceUnits | None:
    """The evaluation's unit: evidence-level measures (for every retriever) when the settings ask
    for them or when a retriever returns passages of its own (``own``), else None (chunks)."""
    unit = ws.settings.unit
    if own and unit == UNIT_CHUNKS:
        note = (
            "--unit chunks: a retriever returns passages of its own, so every row is "
            "evidence-level (docs/metrics.md#units)"
        )
        if note not in ws.warnings:
            ws.warnings.append(note)
    if not own and unit != UNIT_EVIDENCE:
        return None

    return functools.partial(_evidence_ranks, ws)


def _own_gains(
    ws: LiveAnswered, qid: str, ranked: Iterable[str], shared: Mapping[str, int]
) -> Mapping[str, int]:
    """The shared grades and those of the retriever's own passages in ``ranked`` (a hand grade wins)."""
    own = [cid for cid in ranked if cid in ws.foreign]
    if not own:
        return shared
    grades = dict(shared)
    hand = ws.hand_grades(qid, own=True)
    base = ws.own_grades.get(qid, {})
    for cid in own:
        if cid in hand:
            grades[cid] = hand[cid]
        elif cid in base:
            grades[cid] = base[cid]
    return grades


def _evidence_ranks(
    ws: LiveAnswered,
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
    threshold = ws.settings.threshold
    question = ws.question_by_id.get(qid)
    needles: tuple[str, ...] = ()
    if question is not None and ws.level == LEVEL_CHUNK:
        needles = tuple(dict.fromkeys(n for n in map(normalize_ws, question.evidence) if n))
    passages = ws.chunk_by_id

    def doc_of(cid: str) -> str:
        passage = passages.get(cid)
        return passage.doc if passage is not None else cid

    units: tuple[str, ...] = needles or tuple(
        dict.fromkeys(doc_of(cid) for cid, grade in shared.items() if grade >= threshold)
    )
    found: dict[str, int] = {}
    for rank, cid in enumerate(dict.fromkeys(ranked), start=1):
        if gains.get(cid, 0) < threshold:
            continue
        if needles:
            text = ws.chunk_texts.normalized(cid, passages)
            held = [n for n in needles if n not in found and n in text]
        else:
            # A relevant passage of a document that is no unit (graded by hand) holds nothing.
            held = [d for d in (doc_of(cid),) if d in units and d not in found]
        for unit in held:
            found[unit] = rank
        if len(found) == len(units):
            break
    return tuple(found.get(unit) for unit in units)
