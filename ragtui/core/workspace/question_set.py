"""The golden questions part of a workspace: an immutable list of questions with their look-ups,
replaced whole when a question is added, retired or brought back (``Workspace`` does it)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress
from operator import attrgetter
from typing import overload

import numpy as np

from ragtui.core.data.golden import Question
from ragtui.core.retrieval.results_cache import TextKeys


@dataclass(frozen=True, eq=False)
class QuestionSet(Sequence[Question]):
    """The golden questions in golden-set order, by id, and as loaded (the rows of every rankings
    table); built by ``of`` at load, then by ``with_question`` for each change."""

    items: tuple[Question, ...]
    by_id: Mapping[str, Question]
    #: The questions as loaded (ids and texts): the rows of the rankings tables.
    loaded_ids: list[str]
    loaded_texts: TextKeys
    loaded_rows: dict[str, int]
    #: The ids of the retired questions (kept in the file, left out of every mean).
    retired_ids: frozenset[str]

    @classmethod
    def of(cls, questions: Iterable[Question]) -> QuestionSet:
        """The questions as loaded (each look-up built in one pass in C: 100,000 questions)."""
        items = tuple(questions)
        ids = list(map(attrgetter("id"), items))
        return cls(
            items,
            dict(zip(ids, items, strict=True)),
            ids,
            TextKeys(list(map(attrgetter("text"), items))),
            dict(zip(ids, range(len(ids)), strict=True)),
            frozenset(compress(ids, map(attrgetter("retired"), items))),
        )

    def with_question(self, question: Question) -> QuestionSet:
        """This set with ``question`` in place of the one of its id (retired or brought back), or
        added at the end; the loaded rows stay as they are."""
        known = self.by_id.get(question.id)
        if known is None:
            items = (*self.items, question)
        else:
            position = int(self.positions([question.id])[0])
            items = (*self.items[:position], question, *self.items[position + 1 :])
        retired = self.retired_ids - {question.id} | ({question.id} if question.retired else set())
        by_id = {**self.by_id, question.id: question}
        return QuestionSet(
            items, by_id, self.loaded_ids, self.loaded_texts, self.loaded_rows, frozenset(retired)
        )

    @property
    def retired(self) -> list[str]:
        """The ids of the retired questions, in golden-set order."""
        return [q.id for q in self.items if q.retired] if self.retired_ids else []

    def positions(self, qids: Iterable[str]) -> np.ndarray:
        """Each question's place in the golden set, ``-1`` for an unknown id; read from the rows
        kept at load, so no pass over every question."""
        items = self.items
        tail: dict[str, int] | None = None
        out = []
        for qid in qids:
            row = self.loaded_rows.get(qid)
            if row is None or row >= len(items) or items[row].id != qid:
                if tail is None:  # added since the load
                    tail = {q.id: i for i, q in enumerate(items)}
                row = tail.get(qid, -1)
            out.append(row)
        return np.asarray(out, dtype=np.int64)

    def in_golden_order(self, qids: Iterable[str]) -> list[str]:
        """``qids`` in golden-set order."""
        chosen = list(qids)
        return [chosen[i] for i in np.argsort(self.positions(chosen), kind="stable")]

    @overload
    def __getitem__(self, index: int) -> Question: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Question]: ...
    def __getitem__(self, index: int | slice) -> Question | Sequence[Question]:
        return self.items[index]

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Question]:
        return iter(self.items)
