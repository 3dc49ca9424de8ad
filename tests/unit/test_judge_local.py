"""The local judges: ``similarity`` (the real bundled embedding model) and ``cross-encoder:PATH``
(a real tiny CrossEncoder built by the fixture), and the thresholds that turn their scores into
grades: fitted to the people's grades when there are enough (checked against a constructed case
with known best thresholds and against a brute-force search), else the defaults, and a note
saying which."""

from __future__ import annotations

import itertools
import json
import random
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from ragtui.cli import main
from ragtui.core.data.grades import DEFAULT_GRADE_SCALE
from ragtui.core.judge_spec import JudgeSpec
from ragtui.core.judges.base import JudgeError, JudgePair
from ragtui.core.judges.build import build_judge
from ragtui.core.judges.local import (
    SIMILARITY_DEFAULTS,
    CrossEncoderJudge,
    SimilarityJudge,
)
from ragtui.core.judges.thresholds import (
    MIN_FIT_PAIRS,
    Thresholds,
    _cut_values,
    choose_thresholds,
    default_thresholds,
    fit_thresholds,
    weighted_kappa,
)
from ragtui.core.retrieval.embeddings import EmbeddingCache
from ragtui.core.retrieval.rerank import CrossEncoderModel
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace
from tests.conftest import MINI, mini_args

SCALE = DEFAULT_GRADE_SCALE  # 0 not relevant, 1 partly, 2 answers fully


def _pool(ws: Workspace, retrievers=("bm25", "vector")) -> list[tuple[JudgePair, int]]:
    """Every pooled pair of the workspace with its effective grade (the evidence rule's here)."""
    out = []
    for q in ws.questions:
        seen: set[str] = set()
        grades = ws.grades.effective_grades(q.id)
        for name in retrievers:
            for cid, _ in ws.ranking(name, q.id):
                if cid not in seen:
                    seen.add(cid)
                    chunk = ws.passages.by_id[cid]
                    pair = JudgePair(q.id, q.text, cid, chunk.text, chunk.sha1)
                    out.append((pair, grades.get(cid, 0)))
    return out


# ---- thresholds -----------------------------------------------------------------------------------


def test_the_fit_finds_the_known_best_thresholds():
    """Scores that separate the people's grades: kappa 1, each threshold halfway between the
    highest score of one grade and the lowest of the next."""
    rng = random.Random(7)
    scores, human = [], []
    for grade, (lo, hi) in enumerate(((0.05, 0.31), (0.42, 0.55), (0.71, 0.93))):
        for _ in range(15):
            scores.append(round(rng.uniform(lo, hi), 4))
            human.append(grade)
    fit = fit_thresholds(scores, human, 3)
    top0 = max(s for s, h in zip(scores, human, strict=True) if h == 0)
    low1 = min(s for s, h in zip(scores, human, strict=True) if h == 1)
    top1 = max(s for s, h in zip(scores, human, strict=True) if h == 1)
    low2 = min(s for s, h in zip(scores, human, strict=True) if h == 2)
    assert fit.thresholds.values == pytest.approx(((top0 + low1) / 2, (top1 + low2) / 2))
    assert (fit.kappa, fit.accuracy) == (1.0, 1.0)
    assert fit.searched == fit.cut_points == len(set(scores)) + 1


def test_the_fit_is_the_exact_best_of_every_cut():
    """On noisy grades the fit equals a brute-force search over every placement of the thresholds
    (highest quadratic-weighted kappa, then accuracy, then the lowest thresholds)."""
    rng = random.Random(3)
    for _ in range(8):
        grades = rng.choice([2, 3, 4])
        human = [rng.randrange(grades) for _ in range(rng.randint(30, 50))]
        scores = [round(h * 0.3 + rng.gauss(0, 0.3), 2) for h in human]
        fit = fit_thresholds(scores, human, grades)
        cuts = _cut_values(np.unique(scores))
        best = None
        for chosen in itertools.combinations(range(len(cuts)), grades - 1):
            t = Thresholds(tuple(float(cuts[c]) for c in chosen))
            judged = [t.grade(s) for s in scores]
            kappa = weighted_kappa(human, judged, grades)
            accuracy = sum(a == b for a, b in zip(human, judged, strict=True)) / len(human)
            key = (round(kappa, 12), round(accuracy, 12))
            if best is None or key > best[0]:
                best = (key, t)
        assert best is not None
        assert (fit.kappa, fit.accuracy) == pytest.approx(best[0])
        assert fit.thresholds == best[1]


def test_a_large_fit_stays_quick_and_says_when_it_searched_fewer_cuts():
    rng = np.random.default_rng(0)
    human = rng.integers(0, 4, 3000)
    scores = (human * 0.3 + rng.normal(0, 0.3, 3000)).tolist()
    graded = list(zip(scores, human.tolist(), strict=True))
    scale = tuple((g, str(g)) for g in range(4))
    chosen, note = choose_thresholds(None, "x", scale, graded, default_thresholds(4, 0, 1))
    assert len(chosen.values) == 3
    assert "cut points searched" in note and note.startswith("thresholds fitted to 3,000")


def test_the_notes_say_which_thresholds_and_why():
    defaults = default_thresholds(3, *SIMILARITY_DEFAULTS)
    assert defaults.values == (0.4, 0.55)
    few = [(0.5, 1)] * 12
    chosen, note = choose_thresholds(None, "--judge sim", SCALE, few, defaults)
    assert chosen == defaults
    assert note == "too few people's grades (12 < 30): default thresholds >=0.40 -> 1, >=0.55 -> 2"
    same = [(0.1 * i, 0) for i in range(40)]
    assert choose_thresholds(None, "x", SCALE, same, defaults)[1] == (
        "the people's 40 grades are all 0: default thresholds >=0.40 -> 1, >=0.55 -> 2"
    )
    given, note = choose_thresholds((0.3, 0.8), "ragtui.toml [judges.sim]", SCALE, few, defaults)
    assert given.values == (0.3, 0.8)
    assert note == "thresholds from ragtui.toml [judges.sim]: >=0.30 -> 1, >=0.80 -> 2"
    with pytest.raises(JudgeError, match="thresholds gives 1 values; a scale of 3 grades needs 2"):
        choose_thresholds((0.3,), "ragtui.toml [judges.sim]", SCALE, few, defaults)
    assert default_thresholds(2, 0.4, 0.55).values == (0.4,)
    assert default_thresholds(5, 0.4, 0.7).values == pytest.approx((0.4, 0.5, 0.6, 0.7))


def test_a_reason_shows_enough_decimals_to_be_true():
    t = Thresholds((0.41, 0.6352))
    assert t.reason("cosine", 0.71) == "cosine 0.71 >= 0.64 (grade 2)"
    assert t.reason("cosine", 0.12) == "cosine 0.12 < 0.41 (grade 0)"
    assert t.reason("cosine", 0.6349) == "cosine 0.63 >= 0.41 (grade 1)"
    assert t.reason("cosine", 0.6353) == "cosine 0.6353 >= 0.6352 (grade 2)"
    assert t.grade(0.41) == 1 and t.grade(0.4099) == 0


# ---- the similarity judge -------------------------------------------------------------------------


@pytest.fixture
def workspace(mini_settings) -> Workspace:
    return Workspace.open(replace(mini_settings, retrievers=("bm25", "vector")))


def test_similarity_is_the_vector_retrievers_score_and_embeds_nothing_again(workspace):
    judge = build_judge(JudgeSpec("sim", "similarity"), workspace.settings)
    assert isinstance(judge, SimilarityJudge)
    pool = _pool(workspace)
    scores = judge.scores([pair for pair, _ in pool])
    vector = {
        (q.id, cid): score
        for q in workspace.questions
        for cid, score in workspace.ranking("vector", q.id)
    }
    compared = 0
    for (pair, _), score in zip(pool, scores, strict=True):
        if (pair.question_id, pair.chunk_id) in vector:
            assert score == pytest.approx(vector[(pair.question_id, pair.chunk_id)], abs=1e-5)
            compared += 1
    assert compared >= 40
    # Every text was in the workspace's embedding cache: the judge never loaded the model.
    assert not judge._embedder.loaded
    texts = [p.question for p, _ in pool] + [p.chunk for p, _ in pool]
    assert (
        EmbeddingCache(workspace.settings.model, workspace.settings.cache_dir).missing(texts) == []
    )


def test_similarity_grades_by_thresholds_fitted_to_the_people(workspace):
    judge = build_judge(JudgeSpec("sim", "similarity"), workspace.settings)
    pool = _pool(workspace)
    assert len(pool) >= MIN_FIT_PAIRS and len({g for _, g in pool}) == 2
    note = judge.prepare(SCALE, pool)
    assert note.startswith(f"thresholds fitted to {len(pool)} people's grades: >=")
    assert "(weighted kappa " in note
    verdicts = judge.grade([pair for pair, _ in pool])
    scores = judge.scores([pair for pair, _ in pool])
    assert judge.thresholds is not None
    for verdict, score in zip(verdicts, scores, strict=True):
        assert verdict.ok and verdict.grade == judge.thresholds.grade(score)
        assert verdict.reason.startswith("cosine ") and verdict.reason.endswith(
            f"(grade {verdict.grade})"
        )
    fitted_key = judge.settings_key
    # Fewer than 30 people's grades: the defaults, and a settings key of their own.
    assert judge.prepare(SCALE, pool[:12]) == (
        "too few people's grades (12 < 30): default thresholds >=0.40 -> 1, >=0.55 -> 2"
    )
    assert judge.settings_key != fitted_key
    # Thresholds in the spec win over any fit.
    given = build_judge(
        JudgeSpec("sim", "similarity", "", {"thresholds": (0.2, 0.5)}, "ragtui.toml [judges.sim]"),
        workspace.settings,
    )
    assert given.prepare(SCALE, pool) == (
        "thresholds from ragtui.toml [judges.sim]: >=0.20 -> 1, >=0.50 -> 2"
    )
    assert [v.grade for v in given.grade([pair for pair, _ in pool])] == [
        Thresholds((0.2, 0.5)).grade(s) for s in scores
    ]


def test_grade_before_prepare_is_a_judge_error(workspace):
    judge = build_judge(JudgeSpec("sim", "similarity"), workspace.settings)
    with pytest.raises(JudgeError, match="before prepare"):
        judge.grade([_pool(workspace)[0][0]])


def _long_corpus(tmp_path: Path) -> tuple[Path, Path]:
    corpus, golden = tmp_path / "long" / "corpus", tmp_path / "long" / "golden"
    corpus.mkdir(parents=True)
    golden.mkdir()
    mini = MINI / "corpus"
    text = "\n\n".join(p.read_text() for p in sorted(mini.iterdir()))
    (corpus / "all.md").write_text("# All\n\n" + text + "\n\n" + text.replace("EUR", "euro"))
    questions = [
        {"id": "l1", "question": "How much is a return ferry ticket?", "evidence": "return adult"},
        {"id": "l2", "question": "What is the fine for a late book?", "evidence": "late book"},
    ]
    (golden / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions))
    return corpus, golden


@pytest.mark.parametrize("windows", ["max", "mean"])
def test_a_long_chunk_is_scored_by_its_windows_as_the_vector_retriever_does(
    tmp_path, cache_dir, windows
):
    corpus, golden = _long_corpus(tmp_path)
    settings = Settings(
        corpus=corpus,
        golden=golden,
        chunk_size=2000,
        retrievers=("vector",),
        windows=windows,
        cache_dir=cache_dir,
    )
    ws = Workspace.open(settings)
    assert (
        ws.ranked.windows is not None and ws.ranked.windows.windowed >= 1
    )  # the chunk is read as windows
    judge = build_judge(JudgeSpec("sim", "similarity"), ws.settings)
    for q in ws.questions:
        for cid, score in ws.ranking("vector", q.id):
            chunk = ws.passages.by_id[cid]
            [mine] = judge.scores([JudgePair(q.id, q.text, cid, chunk.text, chunk.sha1)])
            assert mine == pytest.approx(score, abs=1e-5)


def test_judge_on_the_small_corpus_writes_similarity_verdicts(mini, capsys, cli_cache_env):
    assert main(["judge", *mini_args(mini, "--judge", "sim=similarity")]) == 0
    lines = [json.loads(x) for x in (mini / "golden" / "labels.jsonl").read_text().splitlines()]
    verdicts = [x for x in lines if x.get("annotator") == "model:sim"]
    assert verdicts and all(v["model"] == "all-MiniLM-L6-v2" for v in verdicts)
    assert all(v["reason"].startswith("cosine ") for v in verdicts)
    assert "sim: too few people's grades (0 < 30): default thresholds" in capsys.readouterr().err


# ---- the cross-encoder judge ---------------------------------------------------------------------


def test_a_cross_encoder_grades_by_its_own_scores(workspace, tiny_cross_encoder):
    judge = build_judge(
        JudgeSpec("ce", "cross-encoder", str(tiny_cross_encoder)), workspace.settings
    )
    assert isinstance(judge, CrossEncoderJudge)
    assert judge.model_id == tiny_cross_encoder.name
    pool = _pool(workspace)
    pairs = [pair for pair, _ in pool]
    scores = judge.scores(pairs)
    model = CrossEncoderModel(str(tiny_cross_encoder))
    for pair, score in zip(pairs[:8], scores[:8], strict=True):
        expected, _ = model.score(pair.question, [pair.chunk])
        assert score == pytest.approx(float(expected[0]), abs=1e-5)
    # Its scores are probabilities (a sigmoid on one logit): the defaults are probabilities too.
    assert all(0.0 <= s <= 1.0 for s in scores)
    note = judge.prepare(SCALE, pool[:5])
    assert note == (
        "too few people's grades (5 < 30): default thresholds >=0.50 -> 1, >=0.90 -> 2 "
        "(the model's probability of relevance)"
    )
    verdicts = judge.grade(pairs)
    assert [v.grade for v in verdicts] == [Thresholds((0.5, 0.9)).grade(s) for s in scores]
    assert all(v.reason.startswith("score ") for v in verdicts)
    key = judge.settings_key
    fitted = judge.prepare(SCALE, pool)
    assert fitted.startswith(f"thresholds fitted to {len(pool)} people's grades")
    assert judge.settings_key != key
    judge.close()
    # Closed, it loads the model again when asked.
    assert judge.scores(pairs[:1]) == pytest.approx(scores[:1], abs=1e-6)


def test_a_cross_encoder_with_two_outputs_is_refused_in_one_line(tmp_path, tiny_cross_encoder):
    """A classifier with two labels gives two scores a pair: before, 'cannot reshape array of
    size 4 into shape (2,)'; now one line saying what the judge needs."""
    import shutil

    import torch
    from transformers import BertConfig, BertForSequenceClassification

    folder = tmp_path / "two-labels"
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=37,
        num_labels=2,
    )
    BertForSequenceClassification(config).save_pretrained(folder)
    for name in ("tokenizer.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(tiny_cross_encoder / name, folder / name)
    judge = build_judge(JudgeSpec("ce", "cross-encoder", str(folder)), Settings())
    pair = JudgePair("q", "How much is a ticket?", "c", "A ticket costs 5 EUR.", "x")
    expected = "--judge ce: two-labels gives 2 scores for a pair (num_labels); a cross-encoder judge needs one, the pair's relevance"
    with pytest.raises(JudgeError) as info:
        judge.prepare(SCALE, [])
    assert str(info.value) == expected
    given = build_judge(
        JudgeSpec("ce", "cross-encoder", str(folder), {"thresholds": (0.5, 0.9)}), Settings()
    )
    given.prepare(SCALE, [])
    with pytest.raises(JudgeError) as info:
        given.grade([pair])
    assert str(info.value) == expected


def test_a_similarity_judge_without_its_model_stops_in_prepare(tmp_path):
    """Before, prepare said 'too few people's grades' and the missing model surfaced later, as an
    InputError from reading the settings key; now prepare stops the judge with the reason."""
    judge = build_judge(JudgeSpec("sim", "similarity"), Settings(model=str(tmp_path / "none")))
    with pytest.raises(JudgeError, match="model not found"):
        judge.prepare(SCALE, [])


def test_similarity_encodes_each_new_text_once_and_caches_it_in_one_write(tmp_path):
    from ragtui.core.retrieval.embeddings import Embedder

    encoded: list[str] = []

    class Counting(Embedder):
        """The real model, counting the texts it is asked to encode."""

        def encode(self, texts, progress=None):
            encoded.extend(texts)
            return super().encode(texts, progress)

    settings = Settings(cache_dir=tmp_path / "cache")
    pairs = [
        JudgePair(
            "q1", "How much is a return ticket?", "a", "A return ticket costs 5.80 EUR.", "1"
        ),
        JudgePair("q1", "How much is a return ticket?", "b", "The library opens at nine.", "2"),
        JudgePair("q2", "When does the library open?", "b", "The library opens at nine.", "2"),
    ]
    judge = build_judge(JudgeSpec("sim", "similarity"), settings)
    assert isinstance(judge, SimilarityJudge)
    judge._embedder = Counting(settings.model)
    first = judge.scores(pairs)
    again = judge.scores(pairs[::-1])
    assert again == first[::-1]
    texts = [p.question for p in pairs] + [p.chunk for p in pairs]
    assert sorted(encoded) == sorted(set(texts))  # each distinct text once
    disk = EmbeddingCache(settings.model, settings.cache_dir)
    assert disk.missing(texts) == list(dict.fromkeys(texts))  # not written batch by batch
    judge.close()
    assert EmbeddingCache(settings.model, settings.cache_dir).missing(texts) == []
    other = build_judge(JudgeSpec("sim", "similarity"), settings)
    assert isinstance(other, SimilarityJudge)
    assert other.scores(pairs) == pytest.approx(first, abs=1e-6)
    assert not other._embedder.loaded
