"""Building a judge from its spec: one function for every kind (``ragtui judge`` calls it).

Building runs no plugin code, loads no model and contacts no server: it checks what can be checked
without (a cross-encoder's folder, a plugin's module or entry point) and refuses the rest when the
judge is first used (``prepare``, ``grade``).
"""

from __future__ import annotations

from ragtui.core.data.grades import DEFAULT_GRADE_SCALE, GradeScale
from ragtui.core.data.tokenizer import resolve_model
from ragtui.core.judge_spec import JudgeSpec, shares_model_with
from ragtui.core.judges.base import Judge
from ragtui.core.settings import Settings

__all__ = ["build_judge", "judge_shares"]


def build_judge(spec: JudgeSpec, settings: Settings, scale: GradeScale | None = None) -> Judge:
    """The judge ``spec`` names, ready for ``prepare``: InputError (one line naming the judge and
    where it was given) when it cannot exist.

    ``scale`` is the project's grade scale (the openai judge writes its prompt for it); None takes
    the settings' (``settings.grade_scale`` when resolved), else the default 0-2.
    """
    if scale is None:
        scale = getattr(settings, "grade_scale", None) or DEFAULT_GRADE_SCALE
    if spec.kind == "openai":
        from ragtui.core.judges.openai import openai_judge

        return openai_judge(spec, scale, settings.allow_http)
    if spec.kind == "similarity":
        from ragtui.core.judges.local import SimilarityJudge

        return SimilarityJudge(spec, settings)
    if spec.kind == "cross-encoder":
        from ragtui.core.judges.local import CrossEncoderJudge

        return CrossEncoderJudge(spec, settings)
    from ragtui.core.judges.plugins import load_judge_plugin

    return load_judge_plugin(spec)


def judge_shares(model_id: str, settings: Settings) -> tuple[str, ...]:
    """The retrievers in force that use the model ``model_id`` (a judge's, or a verdict's ``model``
    in the journal): the embedding model's (vector, hybrid) and the reranker's (``<over>+rerank``).
    A judge favours the retriever it shares its model with; agreement and estimates mark it. A
    verdict naming the folder the embedding model resolves to (the bundled model's, not named
    after it) names the embedding model too."""
    retrievers = list(settings.retrievers)
    if settings.rerank:
        reranked = f"{settings.rerank_over}+rerank"
        if reranked not in retrievers:
            retrievers.append(reranked)
    embedding = settings.model
    if model_id.rstrip("/") == resolve_model(embedding).rstrip("/"):
        embedding = model_id
    return shares_model_with(model_id, embedding, settings.rerank, retrievers)
