"""The settings every command shares: what to load and how."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ragtui.core.data.chunking import DEFAULT_CHUNK_SIZE
from ragtui.core.data.corpus import MAX_FILE_BYTES
from ragtui.core.data.grades import DEFAULT_GRADE_SCALE, GradeScale, load_grade_scale
from ragtui.core.data.paths import bundled_corpus, bundled_golden, golden_for_reading
from ragtui.core.data.tokenizer import DEFAULT_MODEL
from ragtui.core.errors import InputError
from ragtui.core.judge_spec import JudgeSpec
from ragtui.core.labelling.labels import GRADES_HUMAN
from ragtui.core.retrieval.base import RETRIEVER_NAMES
from ragtui.core.retrieval.live import LiveSpec
from ragtui.core.retrieval.rerank import RERANK_SUFFIX, RERANKABLE
from ragtui.core.retrieval.windows import DEFAULT_WINDOWS


@dataclass(frozen=True)
class Variant:
    """A named pipeline variant of the project file (``[variants.NAME]``): the settings it overrides."""

    name: str
    overrides: tuple[tuple[str, Any], ...] = ()
    """(``Settings`` field, value) pairs, in the file's order."""

    def __str__(self) -> str:
        shown = ", ".join(
            f"{field.replace('_', '-')} {_shown(value)}" for field, value in self.overrides
        )
        return f"{self.name} ({shown or 'no change'})"


def _shown(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ",".join(_shown(v) for v in value)
    return str(value)


@dataclass(frozen=True)
class Settings:
    """What to load and how: the options every command shares (declared in ``ragtui.core.options``)."""

    corpus: Path | None = None
    golden: Path | None = None
    beir: Path | None = None
    chunk_size: int | None = DEFAULT_CHUNK_SIZE
    overlap: int = 0
    model: str = DEFAULT_MODEL
    #: What runs the embedding model: ``auto`` (ONNX Runtime where the onnx extra is installed and
    #: the model can run on it, else torch), ``torch`` or ``onnx`` (``ragtui.core.retrieval.onnx_backend``).
    embedding_backend: str = "auto"
    k: int = 3
    depth: int = 10
    retrievers: tuple[str, ...] = RETRIEVER_NAMES
    threshold: int = 1
    bm25_backend: str = "rank-bm25"
    annotator: str | None = None
    #: Which grades count: ``human`` (people's only) or ``human+model`` (a model judge's verdict
    #: where no person graded the pair); every header says which.
    counted_grades: str = GRADES_HUMAN
    #: Judge blind: the judging view hides which retrievers ranked a chunk, the evidence rule's
    #: grade and its highlight (``--blind``; ``b`` in the view toggles it for the session).
    blind: bool = False
    #: In a person's own queue, show other people's grades (and the judges') before the person
    #: graded the pair (``--show-others``); by default they are hidden until then.
    show_others: bool = False
    cache_dir: Path | None = None
    #: External retrievers: (name, TREC run file), shown after the built-in ones (``--run NAME=path``).
    runs: tuple[tuple[str, Path], ...] = ()
    #: Largest corpus document read, in MB (a bigger file is refused with a clear message).
    max_file_mb: float = MAX_FILE_BYTES / 1048576
    #: The grades a person may give, (grade, label) from 0 (the project file's ``[grades]``); None:
    #: the golden set's ``grades.json``, else 0-2 (see ``ragtui.core.data.grades``).
    grade_scale: GradeScale | None = None
    #: Live retrievers (``--retriever NAME=SPEC``, ``[retrievers.NAME]``), shown after the runs.
    live_retrievers: tuple[LiveSpec, ...] = ()
    #: Model judges (``--judge NAME=SPEC``, the project file's ``[judges.NAME]``): the ones
    #: ``ragtui judge`` grades with (``ragtui.core.judges``; docs/judges.md).
    judges: tuple[JudgeSpec, ...] = ()
    #: Show how sure the numbers are (``--estimate``): eval, report and the app's metric panel add
    #: the range the unjudged pairs allow, the model-filled value and the prediction-powered
    #: estimate with its 95 % interval (``ragtui.core.judges.estimates``; docs/judges.md).
    estimate: bool = False
    #: Ask live retrievers again instead of using their cached answers (``--refresh``).
    refresh: bool = False
    #: Send a key or a credential header over plain ``http://`` to a host other than this machine
    #: (``--allow-http``); refused otherwise (``text.plain_http_refusal``).
    allow_http: bool = False
    #: Milvus: a Milvus Lite file or ``http(s)://host:19530`` (``--milvus``), and the collection.
    milvus: str | None = None
    collection: str | None = None
    #: Field names of a Milvus collection ragtui did not build: (role, field) pairs.
    milvus_fields: tuple[tuple[str, str], ...] = ()
    #: The team's own chunks, one JSON object a line, used as they are (``--chunks``).
    chunks: Path | None = None
    #: ``document`` or ``chunk``: the level qrels are evaluated at; None chooses (document when
    #: document-level qrels meet a chunked corpus).
    level: str | None = None
    #: ``chunks`` or ``evidence``: the unit every row's measures are in; None chooses (chunks when
    #: every retriever searches ragtui's chunks, evidence when one returns passages of its own).
    unit: str | None = None
    #: Long chunks as overlapping token windows: ``max`` (a chunk scores its best window), ``mean``
    #: or ``off`` (``ragtui.core.retrieval.windows``).
    windows: str = DEFAULT_WINDOWS
    #: Tokens between the starts of two windows (None: half a window).
    window_stride: int | None = None
    #: A cross-encoder (a folder, or a name in the local Hugging Face cache) re-scoring the top
    #: ``depth`` of ``rerank_over``; adds the retriever ``<rerank_over>+rerank``.
    rerank: str | None = None
    rerank_over: str = "hybrid"
    #: The project file's ``[variants.NAME]`` tables, for ``ragtui experiment``.
    variants: tuple[Variant, ...] = ()
    #: The variant the others are compared against (None: the first).
    baseline_variant: str | None = None

    @property
    def rerank_name(self) -> str | None:
        """The reranked retriever's name (``hybrid+rerank``), or None without a reranker."""
        return f"{self.rerank_over}+rerank" if self.rerank else None

    def resolved(self) -> Settings:
        """Defaults filled in: the bundled data (or the user's copy of the golden set once it exists),
        the grade scale, and whole documents as chunks for BEIR without a size."""
        corpus = self.corpus
        golden = self.golden
        if self.beir is None:
            # The team's chunks (--chunks) replace the corpus folder, so none is filled in.
            corpus = corpus or (None if self.chunks is not None else bundled_corpus())
            golden = golden_for_reading(golden or bundled_golden())
        else:
            golden = golden or self.beir
        scale = self.grade_scale
        if scale is None:
            scale = load_grade_scale(golden) or DEFAULT_GRADE_SCALE
        return replace(self, corpus=corpus, golden=golden, grade_scale=scale)

    def checked(self) -> Settings:
        """``resolved()``, refused with one line (InputError) when the options cannot go together:
        a reranked retriever without its ``--rerank``, a retriever that cannot be reranked, k or
        depth below 1, a run named like a retriever or another run, an overlap outside the chunk
        size, or ``--chunks`` with ``--corpus``."""
        settings = self.resolved()
        for name in settings.retrievers:
            if name.endswith(RERANK_SUFFIX) and name != settings.rerank_name:
                raise InputError(
                    None,
                    f"--retrievers: {name} comes from --rerank MODEL"
                    + (
                        f" with --rerank-over {name.removesuffix(RERANK_SUFFIX)}"
                        if settings.rerank
                        else ""
                    ),
                )
        if settings.rerank and settings.rerank_over not in RERANKABLE:
            raise InputError(
                None,
                f"--rerank-over: {settings.rerank_over!r} cannot be reranked; choose from {', '.join(RERANKABLE)}",
            )
        if settings.k < 1 or settings.depth < 1:
            raise InputError(None, "--k and --depth must be at least 1")
        run_names = [name for name, _ in settings.runs]
        for name in run_names:
            if name in RETRIEVER_NAMES or run_names.count(name) > 1:
                raise InputError(
                    None, f"--run: the name {name!r} is taken; give each run its own name"
                )
        if settings.chunk_size is not None and not 0 <= settings.overlap < settings.chunk_size:
            raise InputError(None, "--overlap must be at least 0 and smaller than --chunk-size")
        if settings.chunks is not None and settings.corpus is not None:
            raise InputError(
                None, "--chunks replaces --corpus (the chunks are the corpus); give one of them"
            )
        return settings

    def notes(self) -> list[str]:
        """What the settings allow but the user should know: k above depth caps recall@k."""
        if self.k <= self.depth:
            return []
        note = (
            f"--k {self.k} is above --depth {self.depth}: no retriever returns more than "
            f"{self.depth} chunks, so recall@{self.k} is recall@{self.depth} "
            f"(precision@{self.k} still divides by {self.k}); raise --depth to see deeper"
        )
        return [note]

    def needed_retrievers(self) -> set[str]:
        """The built-in retrievers to compute: the ones shown, the one reranked, and what hybrid fuses."""
        needed = {n for n in self.retrievers if n in RETRIEVER_NAMES}
        if self.rerank:
            needed.add(self.rerank_over)
        if "hybrid" in needed:
            needed |= {"bm25", "vector"}
        return needed
