"""Building a judge from its spec: one function for every kind (``ragtui judge`` calls it).

Building runs no plugin code, loads no model and contacts no server: it checks what can be checked
without (a cross-encoder's folder, a plugin's module or entry point) and refuses the rest when the
judge is first used (``prepare``, ``grade``).
"""

from __future__ import annotations

from ragtui.core.data.grades import DEFAULT_GRADE_SCALE, GradeScale
from ragtui.core.judge_spec import JudgeSettings, JudgeSpec, judge_shares
from ragtui.core.judges.base import Judge

__all__ = ["build_judge", "judge_shares"]


def build_judge(spec: JudgeSpec, settings: JudgeSettings, scale: GradeScale | None = None) -> Judge:
    """The judge ``spec`` names, ready for ``prepare``: InputError (one line naming the judge and
    where it was given) when it cannot exist.

    ``scale`` is the project's grade scale (the openai judge writes its prompt for it); None takes
    the settings' (``settings.grade_scale`` when resolved), else the default 0-2.
    """
    if scale is None:
        scale = getattr(settings, "grade_scale", None) or DEFAULT_GRADE_SCALE
    if spec.kind == "openai":
        from ragtui.core.judges.openai import openai_judge

        return openai_judge(spec, scale)
    if spec.kind == "similarity":
        from ragtui.core.judges.local import SimilarityJudge

        return SimilarityJudge(spec, settings)
    if spec.kind == "cross-encoder":
        from ragtui.core.judges.local import CrossEncoderJudge

        return CrossEncoderJudge(spec, settings)
    from ragtui.core.judges.plugins import load_judge_plugin

    return load_judge_plugin(spec)
