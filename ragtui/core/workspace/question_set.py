"""The golden questions part of a workspace: an immutable list of questions with their look-ups,
replaced whole when a question is added, retired or brought back (``Workspace`` does it)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain, compress
from operator import attrgetter
from typing import overload

import numpy as np

from ragtui.core.data.golden import Question, QuestionColumns
from ragtui.core.retrieval.results_cache import TextKeys


@dataclass(frozen=True, eq=False)
class QuestionSet(Sequence[Question]):
    """The golden questions in golden-set order, by id, and as loaded (the rows of every rankings
    table); built by ``of`` at load, then by ``with_question`` for each change.

    The questions as loaded stay as they were read (``QuestionColumns`` from the questions cache
    builds each one when first asked for); a change is kept beside them, so neither the load nor a
    change builds every question.
    """

    #: The questions as loaded, in golden-set order.
    loaded: Sequence[Question]
    #: The questions as loaded (ids and texts): the rows of the rankings tables.
    loaded_ids: list[str]
    loaded_texts: TextKeys
    loaded_rows: dict[str, int]
    #: The ids of the retired questions (kept in the file, left out of every mean).
    retired_ids: frozenset[str]
    #: Questions replaced since the load (retired or brought back), by their row.
    replaced: Mapping[int, Question] = field(default_factory=dict)
    #: Questions added since the load, in order, and their places in the set.
    added: tuple[Question, ...] = ()
    added_rows: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, questions: Iterable[Question]) -> QuestionSet:
        """The questions as loaded (each look-up built in one pass in C: 100,000 questions)."""
        if isinstance(questions, QuestionColumns):
            ids = questions.ids
            return cls(
                questions,
                ids,
                TextKeys(questions.texts, questions.text_digest),
                questions.rows,
                frozenset(compress(ids, questions.retired)),
            )
        loaded = tuple(questions)
        ids = list(map(attrgetter("id"), loaded))
        return cls(
            loaded,
            ids,
            TextKeys(list(map(attrgetter("text"), loaded))),
            dict(zip(ids, range(len(ids)), strict=True)),
            frozenset(compress(ids, map(attrgetter("retired"), loaded))),
        )

    def with_question(self, question: Question) -> QuestionSet:
        """This set with ``question`` in place of the one of its id (retired or brought back), or
        added at the end; the loaded rows stay as they are."""
        row = self.loaded_rows.get(question.id)
        replaced, added, added_rows = self.replaced, self.added, self.added_rows
        if row is not None:
            replaced = {**replaced, row: question}
        elif question.id in added_rows:
            at = added_rows[question.id] - len(self.loaded)
            added = (*added[:at], question, *added[at + 1 :])
        else:
            added_rows = {**added_rows, question.id: len(self.loaded) + len(added)}
            added = (*added, question)
        retired = self.retired_ids - {question.id} | ({question.id} if question.retired else set())
        return replace(
            self,
            retired_ids=frozenset(retired),
            replaced=replaced,
            added=added,
            added_rows=added_rows,
        )

    @property
    def by_id(self) -> Mapping[str, Question]:
        """Every question by its id (built only when read)."""
        return _ById(self)

    @property
    def ids(self) -> list[str]:
        """Every question's id, in golden-set order."""
        return [*self.loaded_ids, *(q.id for q in self.added)]

    @property
    def retired(self) -> list[str]:
        """The ids of the retired questions, in golden-set order."""
        return self.in_golden_order(self.retired_ids) if self.retired_ids else []

    def evidence(self) -> tuple[Sequence[tuple[str, ...]], str | None]:
        """Each loaded question's evidence strings, in golden-set order, and their ``list_digest``
        when the questions cache kept it (the evidence rule grades every question at load: the
        evidence cache then finds their grades by the digest, without reading the strings)."""
        if isinstance(self.loaded, QuestionColumns):
            return self.loaded.evidence, self.loaded.evidence_digest
        return [q.evidence for q in self.loaded], None

    def fields(self) -> Iterator[tuple[str, str, tuple[str, ...]]]:
        """Every question's id, text and slices, in golden-set order, read from the columns as
        loaded where it can (a filter reads every question at each keystroke: at 100,000
        questions, building them made the first keystroke take 456 ms against 80 ms after)."""
        loaded, replaced = self.loaded, self.replaced
        if isinstance(loaded, QuestionColumns):
            rows: Iterable[tuple[str, str, tuple[str, ...]]] = zip(
                loaded.ids, loaded.texts, loaded.slices, strict=True
            )
        else:
            rows = ((q.id, q.text, q.slices) for q in loaded)
        if replaced:
            rows = (
                row if (q := replaced.get(i)) is None else (q.id, q.text, q.slices)
                for i, row in enumerate(rows)
            )
        return chain(rows, ((q.id, q.text, q.slices) for q in self.added))

    def row(self, qid: str) -> int:
        """A question's place in the golden set, ``-1`` for an unknown id."""
        row = self.loaded_rows.get(qid)
        return row if row is not None else self.added_rows.get(qid, -1)

    def positions(self, qids: Iterable[str]) -> np.ndarray:
        """Each question's place in the golden set, ``-1`` for an unknown id; read from the rows
        kept at load, so no pass over every question."""
        return np.asarray([self.row(qid) for qid in qids], dtype=np.int64)

    def in_golden_order(self, qids: Iterable[str]) -> list[str]:
        """``qids`` in golden-set order."""
        chosen = list(qids)
        return [chosen[i] for i in np.argsort(self.positions(chosen), kind="stable")]

    @overload
    def __getitem__(self, index: int) -> Question: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Question]: ...
    def __getitem__(self, index: int | slice) -> Question | Sequence[Question]:
        at = range(len(self))[index]  # from the end when negative; IndexError past either end
        if isinstance(at, range):
            return [self[i] for i in at]
        loaded = len(self.loaded)
        if at >= loaded:
            return self.added[at - loaded]
        found = self.replaced.get(at)
        return found if found is not None else self.loaded[at]

    def __len__(self) -> int:
        return len(self.loaded) + len(self.added)

    def __iter__(self) -> Iterator[Question]:
        if not self.replaced and not self.added:
            return iter(self.loaded)
        return map(self.__getitem__, range(len(self)))


class _ById(Mapping[str, Question]):
    """A question set's questions by id, read through its rows (no dictionary of every question)."""

    __slots__ = ("_set",)

    def __init__(self, questions: QuestionSet) -> None:
        self._set = questions

    def __getitem__(self, qid: str) -> Question:
        row = self._set.row(qid) if isinstance(qid, str) else -1
        if row < 0:
            raise KeyError(qid)
        return self._set[row]

    def __contains__(self, qid: object) -> bool:
        return isinstance(qid, str) and self._set.row(qid) >= 0

    def __len__(self) -> int:
        return len(self._set)

    def __iter__(self) -> Iterator[str]:
        return iter(self._set.ids)
