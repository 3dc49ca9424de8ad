"""The judges that run on this machine: ``similarity`` and ``cross-encoder:PATH``.

Both score a (question, chunk) pair and map the score to a grade by thresholds
(``ragtui.core.judges.thresholds``): the ones the ``[judges.NAME]`` table gives, else fitted in
``prepare`` to the people's grades when there are enough, else documented defaults.

- ``similarity`` is the workspace's embedding model (``--model``, the bundled all-MiniLM-L6-v2 by
  default): the cosine between the question and the chunk, exactly as the ``vector`` retriever
  scores it (a chunk longer than the model reads is scored by its best window, or their mean, as
  ``--windows`` says). Texts are embedded through the embedding cache the workspace fills, so a
  question or chunk the workspace embedded is never embedded again, and the model is loaded only
  when a text is missing from the cache. Nothing leaves the machine. Its defaults:
  :data:`SIMILARITY_DEFAULTS`.
- ``cross-encoder:PATH`` is a sentence-transformers ``CrossEncoder`` from a folder (or a name in the
  local Hugging Face cache), never downloaded, loaded when it first scores. Its defaults are the
  model's probability of relevance :data:`CROSS_ENCODER_DEFAULTS` (as logits for a model whose
  scores are logits).

A judge that shares its model with a retriever favours that retriever:
``ragtui.core.judges.build.judge_shares`` names them from its model id.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from ragtui.core.data.grades import GradeScale
from ragtui.core.data.tokenizer import TokenCounter, model_fingerprint, model_limit, token_counter
from ragtui.core.errors import InputError
from ragtui.core.judge_spec import JudgeSpec, judge_where
from ragtui.core.judges.base import JudgeError, JudgePair, Verdict
from ragtui.core.judges.thresholds import Thresholds, choose_thresholds, default_thresholds
from ragtui.core.retrieval.embeddings import Embedder, EmbeddingCache
from ragtui.core.retrieval.rerank import CrossEncoderModel
from ragtui.core.retrieval.windows import WindowPlan, token_windows, window_plan
from ragtui.core.settings import Settings

__all__ = [
    "CROSS_ENCODER_DEFAULTS",
    "SIMILARITY_DEFAULTS",
    "CrossEncoderJudge",
    "SimilarityJudge",
    "model_name",
]

#: The similarity judge's default thresholds: the cosine that starts grade 1, and the one that
#: starts the top grade (the grades between evenly spaced). Chosen on the bundled handbook with the
#: bundled model, over the 1,054 pairs its three retrievers pool at depth 10: the 74 chunks holding
#: a question's evidence score 0.08 to 0.78 (median 0.48), the others -0.07 to 0.59 (median 0.26);
#: grade 1 from 0.40 finds 73 % of the evidence chunks. Fit them to your people's grades instead
#: (30 graded pairs are enough).
SIMILARITY_DEFAULTS = (0.4, 0.55)
#: The cross-encoder judge's defaults as probabilities of relevance (grade 1 from 0.5, the top grade
#: from 0.9); for a model whose scores are logits, the same as logits (0 and 2.20).
CROSS_ENCODER_DEFAULTS = (0.5, 0.9)

#: Pairs per ``grade`` call.
BATCH_SIZE = 64
#: Texts the similarity judge encodes before it writes them into the embedding cache (else at
#: ``close``): one write of the cache, not one a batch.
FLUSH_TEXTS = 4096


def model_name(model: str) -> str:
    """A model as the journal records it: a folder's name, else the name as given."""
    path = Path(model).expanduser()
    if ("/" in model or "\\" in model) and path.is_dir():
        return path.resolve().name
    return model


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


def _key(*parts: Any) -> str:
    return hashlib.sha256(orjson.dumps(parts)).hexdigest()[:32]


class _ScoringJudge:
    """What the two local judges share: thresholds chosen in ``prepare``, verdicts from scores."""

    #: The word the reason puts before the score (``cosine 0.71 >= 0.63 (grade 2)``).
    what = "score"
    prompt_sha1 = ""
    batch_size = BATCH_SIZE
    concurrency = 1

    def __init__(self, spec: JudgeSpec, settings: Settings, model_id: str) -> None:
        self.name = spec.name
        self.spec = spec
        self.model_id = model_id
        self._settings = settings
        given = spec.options.get("thresholds")
        self._given: tuple[float, ...] | None = tuple(given) if given is not None else None
        self.thresholds: Thresholds | None = None
        self._lock = threading.Lock()

    def _identity(self) -> list[Any]:
        """What, besides the thresholds, changes a grade."""
        raise NotImplementedError

    @property
    def settings_key(self) -> str:
        """A hash of the kind, the model (its files' fingerprint too) and the thresholds in force."""
        chosen = self.thresholds.values if self.thresholds is not None else self._given
        return _key(self.spec.kind, *self._identity(), list(chosen) if chosen else None)

    def _defaults(self, grades: int) -> tuple[Thresholds, str]:
        raise NotImplementedError

    def scores(self, pairs: Sequence[JudgePair]) -> list[float]:
        """The judge's score of each pair, in order."""
        raise NotImplementedError

    def prepare(self, scale: GradeScale, graded: Sequence[tuple[JudgePair, int]]) -> str:
        """Choose the thresholds: the spec's, else fitted to ``graded``, else the defaults."""
        try:
            self._identity()  # the model's files and tokenizer are there (nothing is loaded yet)
        except InputError as exc:
            raise JudgeError(exc.message) from None
        grades = len(scale)
        on_scale = [(pair, g) for pair, g in graded if 0 <= g < grades]
        enough = self._given is None and len(on_scale) >= 30 and len({g for _, g in on_scale}) > 1
        scored: list[tuple[float, int]] = []
        if enough:
            values = self._safe_scores([pair for pair, _ in on_scale])
            scored = [
                (s, g) for s, (_, g) in zip(values, on_scale, strict=True) if math.isfinite(s)
            ]
        else:
            scored = [(0.0, g) for _, g in on_scale]  # counted for the note, never fitted
        defaults, defaults_note = (
            self._defaults(grades) if self._given is None else (Thresholds(()), "")
        )
        chosen, note = choose_thresholds(
            self._given, self.spec.source, scale, scored, defaults, defaults_note
        )
        self.thresholds = chosen
        return note

    def _safe_scores(self, pairs: Sequence[JudgePair]) -> list[float]:
        """``scores``, a model that cannot be loaded or used being a JudgeError (one line)."""
        try:
            with self._lock:
                return self.scores(pairs)
        except InputError as exc:
            raise JudgeError(exc.message) from None
        except (RuntimeError, ValueError, OSError) as exc:
            raise JudgeError(f"{self.model_id}: {' '.join(str(exc).split())}") from None

    def grade(self, pairs: Sequence[JudgePair]) -> list[Verdict]:
        """One verdict per pair: its grade by the thresholds and the score that gave it."""
        thresholds = self.thresholds
        if thresholds is None:
            raise JudgeError(f"{self.name}: grade was asked before prepare chose the thresholds")
        out = []
        for score in self._safe_scores(pairs):
            if not math.isfinite(score):
                out.append(Verdict(None, failure=f"the model gave no score ({score})"))
                continue
            out.append(Verdict(thresholds.grade(score), thresholds.reason(self.what, score)))
        return out

    def close(self) -> None:
        """Nothing to let go of but memory (the model, when loaded)."""


class SimilarityJudge(_ScoringJudge):
    """The embedding model's cosine between question and chunk (as the vector retriever scores it)."""

    what = "cosine"

    def __init__(self, spec: JudgeSpec, settings: Settings) -> None:
        super().__init__(spec, settings, model_name(settings.model))
        self.model = settings.model
        # The backend the workspace embeds with (its cache is keyed by it: the same vectors).
        self._embedder = Embedder(settings.model, settings.embedding_backend, settings.cache_dir)
        self._cache: EmbeddingCache | None = None
        self._pending: dict[str, np.ndarray] = {}
        self._counter: TokenCounter | None = None
        self._plan: WindowPlan | None = None
        self._planned = False

    def _identity(self) -> list[Any]:
        plan = self._window_plan()
        windows = [plan.mode, plan.length, plan.stride] if plan is not None else None
        return [self.model, model_fingerprint(self.model), windows]

    def _defaults(self, grades: int) -> tuple[Thresholds, str]:
        return default_thresholds(grades, *SIMILARITY_DEFAULTS), ""

    def _window_plan(self) -> WindowPlan | None:
        """The windows the vector retriever cuts long chunks into (None: whole chunks)."""
        if not self._planned:
            self._counter = token_counter(self.model)
            limit = model_limit(self.model, self._counter)
            self._plan = window_plan(self._settings.windows, self._settings.window_stride, limit)
            self._planned = True
        return self._plan

    def _windows(self, text: str) -> list[str]:
        plan = self._window_plan()
        if plan is None or self._counter is None:
            return [text]
        return [text[a:b] for a, b in token_windows(text, self._counter, plan.length, plan.stride)]

    def _vectors(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """Each text's embedding: from the workspace's embedding cache, else encoded once and kept
        until ``close`` (or :data:`FLUSH_TEXTS` of them) adds them to the cache in one write."""
        if self._cache is None:
            self._cache = EmbeddingCache(
                self.model, self._settings.cache_dir, self._settings.embedding_backend
            )
        cache = self._cache
        todo = [t for t in cache.missing(texts) if t not in self._pending]
        if todo:
            for text, row in zip(todo, self._embedder.encode(todo), strict=True):
                self._pending[text] = row
        found = {t: self._pending[t] for t in texts if t in self._pending}
        cached = [t for t in dict.fromkeys(texts) if t not in found]
        if cached:
            found.update(zip(cached, cache.get(cached), strict=True))
        if len(self._pending) >= FLUSH_TEXTS:
            self._flush()
        return found

    def _flush(self) -> None:
        """Add the texts encoded since the last write to the embedding cache (one write)."""
        if self._pending and self._cache is not None:
            texts = list(self._pending)
            self._cache.add(texts, np.vstack([self._pending[t] for t in texts]))
        self._pending = {}

    def scores(self, pairs: Sequence[JudgePair]) -> list[float]:
        """Each pair's cosine: with the chunk's best window (``--windows max``), their mean, or the
        chunk as the model reads it (``--windows off``)."""
        if not pairs:
            return []
        windows = {pair.chunk: self._windows(pair.chunk) for pair in pairs}
        texts = [p.question for p in pairs] + [w for ws in windows.values() for w in ws]
        vectors = self._vectors(texts)
        mean = self._plan is not None and self._plan.mode == "mean"
        out = []
        for pair in pairs:
            q = vectors[pair.question]
            cosines = np.asarray([float(q @ vectors[w]) for w in windows[pair.chunk]])
            value = float(cosines.mean() if mean else cosines.max())
            out.append(min(1.0, max(-1.0, value)) if math.isfinite(value) else value)
        return out

    def close(self) -> None:
        """Write what was encoded into the embedding cache, and let go of the cache's rows."""
        with self._lock:
            self._flush()
            self._cache = None


class CrossEncoderJudge(_ScoringJudge):
    """A sentence-transformers CrossEncoder's score of (question, chunk)."""

    def __init__(self, spec: JudgeSpec, settings: Settings) -> None:
        try:
            model = CrossEncoderModel(spec.target)
        except InputError as exc:
            raise InputError(None, f"{judge_where(spec)}: {exc.message}") from None
        super().__init__(spec, settings, model_name(spec.target))
        self.model = model

    def _identity(self) -> list[Any]:
        return [self.model.path, self.model.fingerprint]

    def _probabilities(self) -> bool:
        """Whether the model's scores are probabilities (a sigmoid on its logit), not logits."""
        loaded = self._loaded()
        activation = getattr(loaded, "activation_fn", None) or getattr(
            loaded, "default_activation_function", None
        )
        return type(activation).__name__ == "Sigmoid"

    def _loaded(self) -> Any:
        """The model, loaded; JudgeError when it cannot be, or gives a pair more than one score."""
        try:
            loaded = self.model._load()
        except InputError as exc:
            raise JudgeError(exc.message) from None
        labels = getattr(loaded, "num_labels", None)
        if labels is None:
            labels = getattr(getattr(loaded, "config", None), "num_labels", None)
        if labels is not None and labels != 1:
            raise JudgeError(
                f"{judge_where(self.spec)}: {self.model_id} gives {labels} scores for a pair "
                "(num_labels); a cross-encoder judge needs one, the pair's relevance"
            )
        return loaded

    def _defaults(self, grades: int) -> tuple[Thresholds, str]:
        low, high = CROSS_ENCODER_DEFAULTS
        if self._probabilities():
            return default_thresholds(grades, low, high), "(the model's probability of relevance)"
        return default_thresholds(grades, _logit(low), _logit(high)), (
            f"(the model's logits: probability {low:g} and {high:g})"
        )

    def scores(self, pairs: Sequence[JudgePair]) -> list[float]:
        """The model's score of each pair (pairs of one question scored together)."""
        self._loaded()
        by_question: dict[str, list[int]] = {}
        for i, pair in enumerate(pairs):
            by_question.setdefault(pair.question, []).append(i)
        out = [math.nan] * len(pairs)
        for question, rows in by_question.items():
            values, _ = self.model.score(question, [pairs[i].chunk for i in rows])
            for i, value in zip(rows, values.tolist(), strict=True):
                out[i] = float(value)
        return out

    def close(self) -> None:
        """Let go of the model."""
        self.model._model = None
