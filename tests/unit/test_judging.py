"""The judging queue (pooling), Judged@k, ad-hoc queries and adding questions to the golden set."""

from __future__ import annotations

import json
import threading
from dataclasses import replace

import pytest

from ragtui.cli import main
from ragtui.core.data.golden import load_questions
from ragtui.core.errors import InputError
from ragtui.core.labelling.authoring import append_question, next_question_id
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace
from ragtui.core.workspace.judging import JudgingQueue, judged_summaries, pool_question
from tests.conftest import mini_args


@pytest.fixture
def bm25_ws(mini_settings: Settings) -> Workspace:
    return Workspace.load(replace(mini_settings, retrievers=("bm25",)))


@pytest.fixture
def full_ws(mini_settings: Settings) -> Workspace:
    return Workspace.open(mini_settings)


_args = mini_args


# ---- pooling and queue order --------------------------------------------------------------------


def test_pool_order_is_best_rank_then_retriever_then_chunk_order():
    rankings = {
        "bm25": {"q": [("c", 9.0), ("a", 8.0), ("d", 7.0), ("e", 6.0)]},
        "vector": {"q": [("b", 0.9), ("c", 0.8), ("e", 0.7)]},
        "hybrid": {"q": [("c", 0.1), ("b", 0.1), ("a", 0.1)]},
    }
    order = {cid: i for i, cid in enumerate("abcde")}
    pool = pool_question("q", rankings, ["bm25", "vector", "hybrid"], 3, order)
    # c and b are both rank 1: c by bm25 (first retriever), b by vector. Rank 2: a (bm25), then b is
    # taken, c taken. Rank 3: d (bm25), e (vector) by retriever order. e is rank 4 in bm25: outside the pool of bm25.
    assert [e.chunk for e in pool] == ["c", "b", "a", "d", "e"]
    assert [e.best_rank for e in pool] == [1, 1, 2, 3, 3]
    assert pool[0].ranks == (("bm25", 1), ("vector", 2), ("hybrid", 1))
    assert pool[4].retrievers == ("vector",)
    # Same best rank and retriever: chunk order decides.
    tied = pool_question(
        "q", {"x": {"q": [("e", 1.0)]}, "y": {"q": [("a", 1.0)]}}, ["x", "y"], 1, order
    )
    assert [e.chunk for e in tied] == ["e", "a"]
    tied = pool_question(
        "q", {"x": {"q": [("e", 1.0)]}, "y": {"q": [("a", 1.0)]}}, ["y", "x"], 1, order
    )
    assert [e.chunk for e in tied] == ["a", "e"]


def test_queue_progress_and_next_unjudged_across_questions(bm25_ws):
    ws = bm25_ws
    queue = JudgingQueue(ws)
    # bm25 alone: its top 3, except m04 where only one chunk shares a term with the question.
    assert {q: len(p) for q, p in queue.pools.items()} == {
        "m01": 3,
        "m02": 3,
        "m03": 3,
        "m04": 1,
        "m05": 3,
        "m06": 3,
        "m07": 3,
    }
    assert [e.chunk for e in queue.pools["m01"]] == ["ferry.md#1", "ferry.md#0", "library.md#1"]
    progress = queue.progress()
    assert (progress.overall.judged, progress.overall.pooled) == (0, 19)
    assert str(progress.per_question["m01"]) == "0/3"

    # The evidence rule makes ferry.md#1 relevant to m01, but for the queue only a person's grade counts.
    first = queue.next_unjudged()
    assert first is not None and first.key == ("m01", "ferry.md#1")
    ws.set_grade("m01", "ferry.md#1", 2)
    assert queue.next_unjudged(after=first.key).key == ("m01", "ferry.md#0")
    assert queue.next_unjudged().key == ("m01", "ferry.md#0"), "the start is the first unjudged"
    # Judged ones go to the end of the question's list; the queue order itself stays.
    assert [e.chunk for e in queue.entries("m01")] == ["ferry.md#0", "library.md#1", "ferry.md#1"]

    ws.set_grade("m01", "library.md#1", 0)
    # After the last m01 entry the next question's best-ranked chunk comes next.
    assert queue.next_unjudged(after=("m01", "library.md#1")).key == ("m02", "ferry.md#3")
    # m04's single entry, then m05's first.
    assert queue.next_unjudged(after=("m03", "ferry.md#3")).key == ("m04", "library.md#2")
    assert queue.next_unjudged(after=("m04", "library.md#2")).key == ("m05", "market.txt#0")
    # After the very last entry the queue wraps round to the first pair skipped.
    last = queue.pools["m07"][-1]
    assert queue.next_unjudged(after=last.key).key == ("m01", "ferry.md#0")
    assert queue.next_unjudged(after=last.key, wrap=False) is None
    # A chunk outside the pool starts the search at that question.
    assert queue.next_unjudged(after=("m02", "market.txt#0")).key == ("m02", "ferry.md#3")

    progress = queue.progress()
    assert (progress.overall.judged, progress.overall.pooled) == (2, 19)
    assert str(progress.per_question["m01"]) == "2/3" and progress.per_question["m01"].unjudged == 1

    # Removing a grade makes the pair unjudged again; a hand grade on an unpooled chunk counts nowhere.
    ws.set_grade("m01", "ferry.md#1", None)
    ws.set_grade("m01", "market.txt#1", 1)
    assert queue.count("m01").judged == 1

    # Judge everything: the queue is empty.
    entry = queue.next_unjudged()
    while entry is not None:
        ws.set_grade(entry.question, entry.chunk, 0)
        entry = queue.next_unjudged(after=entry.key)
    assert queue.progress().overall.fraction == 1.0


def test_stale_labels_do_not_count_as_judged(mini_settings, mini):
    (mini / "golden" / "labels.jsonl").write_text(
        '{"question": "m01", "chunk": "ferry.md#1", "grade": 2, "chunk_sha1": "edited-since", "at": ""}\n'
    )
    ws = Workspace.load(replace(mini_settings, retrievers=("bm25",)))
    queue = JudgingQueue(ws)
    assert queue.count("m01").judged == 0
    assert queue.next_unjudged().key == ("m01", "ferry.md#1")


def test_a_queue_per_person_when_several_people_grade(mini_settings, mini):
    """Issue 23: alice judges every pooled pair of bm25; bob (--annotator bob) still has all of them
    to judge, and each grade of his counts for his queue only. Without --annotator and with the
    journal holding only the login name's grades, any hand grade counts (one person)."""
    bm25 = replace(mini_settings, retrievers=("bm25",))
    alice = Workspace.load(replace(bm25, annotator="alice"))
    queue = JudgingQueue(alice)
    assert queue.person == "alice", "--annotator names one: a queue of her own"
    for qid, pool in list(queue.pools.items()):
        for entry in pool:
            alice.set_grade(qid, entry.chunk, 1)
    assert queue.progress().overall.fraction == 1.0
    bob = Workspace.load(replace(bm25, annotator="bob"))
    theirs = JudgingQueue(bob)
    assert theirs.person == "bob" and theirs.annotators() == {"alice"}
    progress = theirs.progress()
    assert (progress.overall.judged, progress.overall.pooled) == (0, 19), "judged by alice only"
    first = theirs.next_unjudged()
    assert first is not None and first.key == ("m01", "ferry.md#1")
    bob.set_grade("m01", "ferry.md#1", 2)
    assert theirs.own_grade("m01", "ferry.md#1") == 2 and theirs.count("m01").judged == 1
    assert theirs.next_unjudged(after=first.key).key == ("m01", "ferry.md#0")
    assert theirs.annotators() == {"alice", "bob"}
    # Withdrawing his grade makes it his to judge again, whatever alice said.
    bob.set_grade("m01", "ferry.md#1", None)
    assert not theirs.is_judged("m01", "ferry.md#1")
    # An adjudicated grade is nobody's own: the pair stays unjudged for bob.
    bob.set_grade("m01", "ferry.md#0", 0, adjudicate=True)
    assert not theirs.is_judged("m01", "ferry.md#0")

    # One person (no --annotator, only the login name's grades): any hand grade counts.
    (mini / "golden" / "labels.jsonl").unlink()
    solo = Workspace.load(replace(bm25, annotator=None))
    own = JudgingQueue(solo)
    solo.set_grade("m01", "ferry.md#1", 2)
    assert own.person is None and own.count("m01").judged == 1
    # Once the journal holds someone else's grades, the queue is the login name's own.
    other = Workspace.load(replace(bm25, annotator="zoe"))
    other.set_grade("m01", "ferry.md#0", 1)
    solo.refresh_labels()
    assert own.person == solo.grades.labels.annotator and own.count("m01").judged == 1


def test_random_order_is_a_seeded_permutation_per_question(full_ws):
    ranked = JudgingQueue(full_ws)
    shuffled = JudgingQueue(full_ws, order="random", seed=7)
    again = JudgingQueue(full_ws, order="random", seed=7)
    other = JudgingQueue(full_ws, order="random", seed=8)
    assert shuffled.pools == again.pools
    for qid, pool in ranked.pools.items():
        assert sorted(e.chunk for e in shuffled.pools[qid]) == sorted(e.chunk for e in pool)
    assert any(shuffled.pools[q] != ranked.pools[q] for q in ranked.pools)
    assert any(shuffled.pools[q] != other.pools[q] for q in ranked.pools)
    with pytest.raises(ValueError):
        JudgingQueue(full_ws, order="alphabetical")  # type: ignore[arg-type]


def test_pool_is_the_union_of_every_retrievers_top_k(full_ws):
    queue = JudgingQueue(full_ws)
    assert queue.retrievers == ["bm25", "vector", "hybrid"]
    for q in full_ws.questions:
        union = {
            cid
            for name in ("bm25", "vector", "hybrid")
            for cid, _ in full_ws.ranking(name, q.id)[:3]
        }
        assert {e.chunk for e in queue.pools[q.id]} == union
    deeper = JudgingQueue(full_ws, pool_depth=5)
    assert deeper.progress().overall.pooled > queue.progress().overall.pooled
    # The pool sizes counted from the rankings' arrays (no pool built) are the pools' sizes: every
    # question in the tables' order, in another order, and some of them.
    qids = [q.id for q in full_ws.questions]
    for pooled in (queue, deeper, JudgingQueue(full_ws, pool_depth=1)):
        for order in (qids, qids[::-1], qids[1::3]):
            counts = pooled.pooled_counts(order).tolist()
            assert counts == [len(pooled.pools[q]) for q in order]


def test_judged_counts_read_from_the_arrays_are_the_pools_counts(full_ws, mini_settings):
    """The judged count the progress line shows for every labelled question is read from the
    rankings' arrays (no question pooled: 3-4 s at the first screen of 100,000 labelled
    questions); after random grades by two people, adjudications, stale labels and withdrawals,
    each question's count is ``count(qid).judged`` from its pool, at every pool depth, with one
    person grading and with several, and for a question whose ranking changed since."""
    import random

    from ragtui.core.metrics.tables import RankingTable

    ws, rng = full_ws, random.Random(11)
    assert all(
        isinstance(ws.ranked.rankings[n], RankingTable) and ws.ranked.rankings[n].distinct
        for n in ("bm25", "vector", "hybrid")
    )
    qids = [q.id for q in ws.questions]
    cids = [c.id for c in ws.data.chunks]
    other = Workspace.load(replace(mini_settings, annotator="zoe", retrievers=("bm25",)))

    def check() -> None:
        for queue in (
            JudgingQueue(ws),
            JudgingQueue(ws, pool_depth=5),
            JudgingQueue(ws, pool_depth=1),
        ):
            for order in (qids, qids[::-1], qids[1::2]):
                assert queue.judged_counts(order).tolist() == [queue.count(q).judged for q in order]

    check()  # nothing labelled
    for step in range(60):
        session = ws if step % 3 else other
        session.set_grade(rng.choice(qids), rng.choice(cids), rng.choice([0, 1, 2, None]))
        if step % 7 == 0:
            session.set_grade(rng.choice(qids), rng.choice(cids), 2, adjudicate=True)
        if step % 10 == 9:
            ws.refresh_labels()
            check()
    ws.refresh_labels()
    assert JudgingQueue(ws).person is not None  # two people: each counts their own grades
    check()
    assert sum(JudgingQueue(ws, pool_depth=5).judged_counts(qids)) > 0
    # A ranking changed since the arrays were read: that question is pooled and counted as before.
    moved = qids[0]
    ws.ranked.rankings["bm25"][moved] = list(reversed(ws.ranking("bm25", moved)))
    assert moved in ws.ranked.rankings["bm25"].changed()
    check()


# ---- Judged@k ------------------------------------------------------------------------------------


def test_judged_at_k_counts_hand_grades_and_evidence_matches(bm25_ws):
    ws = bm25_ws
    before = judged_summaries(ws)["bm25"]
    # m01's top 3: ferry.md#1 (evidence), ferry.md#0, library.md#1: one of three judged.
    assert before.per_question["m01"] == pytest.approx(1 / 3)
    # m04: one result, and it holds the evidence: 1 / min(3, 1).
    assert before.per_question["m04"] == 1.0
    # m06: market.txt#1 and ferry.md#3 hold evidence: 2 / 3.
    assert before.per_question["m06"] == pytest.approx(2 / 3)
    # The mean is over the six evaluated questions (m07 has no relevant chunk): (1/3 * 4 + 1 + 2/3) / 6.
    assert before.mean == pytest.approx((4 / 3 + 1 + 2 / 3) / 6)
    assert before.thin is False and before.mean == pytest.approx(0.5)
    ws.set_grade("m01", "ferry.md#0", 0)  # a 0 is a judgement too
    after = judged_summaries(ws)["bm25"]
    assert after.per_question["m01"] == pytest.approx(2 / 3)
    assert after.mean == pytest.approx(before.mean + 1 / 18)
    assert judged_summaries(ws, threshold=0.6)["bm25"].thin is True


def test_eval_judged_column_and_json_keys(mini, cache_dir, monkeypatch, capsys):
    monkeypatch.setenv("RAGTUI_CACHE_DIR", str(cache_dir))
    assert main(["eval", "--judged", *_args(mini)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].split()[-1] == "judged@3"
    assert out[2].split()[:1] == ["bm25"] and out[2].split()[-1] == "0.500"
    assert out[3].split()[-2:] == ["0.389", "thin"]
    assert out[-1].startswith("judged@3: share of the top 3")
    assert main(["eval", *_args(mini)]) == 0
    assert "judged" not in capsys.readouterr().out, "the plain table is unchanged"
    assert main(["eval", "--json", *_args(mini)]) == 0
    report = json.loads(capsys.readouterr().out)
    bm25 = report["retrievers"]["bm25"]
    assert bm25["judged"] == pytest.approx(0.5) and bm25["thinly_judged"] is False
    assert report["retrievers"]["vector"]["thinly_judged"] is True
    assert bm25["per_question"]["m01"]["judged"] == pytest.approx(1 / 3)


# ---- ad-hoc queries and new questions ------------------------------------------------------------


def test_adhoc_query_ranks_any_text_with_every_retriever(mini_settings, mini):
    before = (mini / "golden" / "questions.jsonl").read_bytes()
    ws = Workspace.load(mini_settings)
    assert list(ws.search_adhoc("price of a ferry ticket")) == ["bm25"], "vectors not ready yet"
    ws.prepare_vectors()
    found = ws.search_adhoc("price of a ferry ticket")
    assert list(found) == ["bm25", "vector", "hybrid"]
    assert found["bm25"] == ws.ranked.bm25.search("price of a ferry ticket", 10)
    assert {cid for cid, _ in found["vector"]} <= set(ws.passages.by_id) and len(
        found["vector"]
    ) == 9
    assert found["hybrid"] == ws.ranked.hybrid.fuse(found["bm25"], found["vector"], 10)
    assert found["vector"][0][0].startswith("ferry.md")
    assert len(ws.search_adhoc("ferry", depth=2)["vector"]) == 2
    assert [q.id for q in ws.questions][-1] == "m07" and (
        mini / "golden" / "questions.jsonl"
    ).read_bytes() == before
    with pytest.raises(ValueError):
        ws.search_adhoc("   ")


def test_add_question_appends_atomically_and_evaluates_at_once(full_ws, mini):
    path = mini / "golden" / "questions.jsonl"
    before = path.read_bytes()
    added = full_ws.add_question(
        "How much is a single ferry ticket?", "| single adult | 3.20 EUR |", ["number", "table"]
    )
    after = path.read_bytes()
    assert after.startswith(before), "old lines stay byte-identical"
    assert json.loads(after[len(before) :]) == {
        "id": "m08",
        "question": "How much is a single ferry ticket?",
        "evidence": "| single adult | 3.20 EUR |",
        "slices": ["number", "table"],
    }
    assert added.question.id == "m08" and added.question.line == 8
    assert added.relevant_chunks == ["ferry.md#1"]
    assert list(added.rankings) == ["bm25", "vector", "hybrid"]
    assert added.metrics["bm25"].first_relevant_rank == 1
    # The workspace knows it at once: grades, rankings, evaluation, the queue.
    ws = full_ws
    assert ws.grades.effective_grades("m08") == {"ferry.md#1": 2}
    assert (
        "m08" in ws.evaluation.evaluated
        and ws.evaluation.per_question["vector"]["m08"] == added.metrics["vector"]
    )
    assert ws.ranking("hybrid", "m08") == added.rankings["hybrid"]
    assert ws.evaluation.summary("bm25").questions == 7
    assert "m08" in JudgingQueue(ws).pools
    # A fresh load reads the same question; a grade on it is saved like any other.
    assert [q.id for q in load_questions(path)][-1] == "m08"
    ws.set_grade("m08", "ferry.md#0", 1)
    assert ws.evaluation.per_question["bm25"]["m08"].num_relevant == 2
    # Several evidence strings and an explicit id.
    more = ws.add_question(
        "Which fares exist?",
        ["| single adult | 3.20 EUR |", "| return adult | 5.80 EUR |"],
        qid="fares",
    )
    assert more.question.id == "fares" and json.loads(path.read_text().splitlines()[-1])[
        "evidence"
    ] == ["| single adult | 3.20 EUR |", "| return adult | 5.80 EUR |"]
    assert not list(mini.joinpath("golden").glob(".*tmp")), "no temporary file left behind"


def test_bad_new_questions_are_refused_and_nothing_is_written(bm25_ws, mini):
    path = mini / "golden" / "questions.jsonl"
    before = path.read_bytes()
    ws = bm25_ws
    with pytest.raises(
        InputError, match="evidence 'the town swimming pool opens at dawn' is found in no chunk"
    ):
        ws.add_question("Is there a pool?", "the town swimming pool opens at dawn")
    with pytest.raises(InputError, match="question id 'm03' is already in the golden set"):
        ws.add_question("Late fees?", "A late book costs 0.25 EUR per day", qid="m03")
    with pytest.raises(InputError, match="must not contain white space"):
        ws.add_question("Late fees?", "A late book costs 0.25 EUR per day", qid="m 9")
    with pytest.raises(InputError, match="'question' must be a non-empty string"):
        ws.add_question("  ", "A late book costs 0.25 EUR per day")
    with pytest.raises(InputError, match="'evidence' must not be empty"):
        ws.add_question("Late fees?", [])
    assert path.read_bytes() == before and len(ws.questions) == 7
    # At a small chunk size the fares table straddles a boundary: the message names the two chunks.
    small = Workspace.load(replace(ws.settings, chunk_size=12))
    with pytest.raises(
        InputError, match=r"straddles a chunk boundary \(ferry\.md#\d+ and ferry\.md#\d+\)"
    ):
        small.add_question("Fares?", "| single adult | 3.20 EUR | | return adult | 5.80 EUR |")
    assert path.read_bytes() == before


def test_append_keeps_bytes_adds_a_missing_newline_and_serialises_writers(bm25_ws, mini):
    path = mini / "golden" / "questions.jsonl"
    raw = path.read_bytes().rstrip(b"\n")
    path.write_bytes(raw)  # an editor left the last line without its newline
    q = append_question(
        mini / "golden", "Fine?", "A late book costs 0.25 EUR per day", chunks=bm25_ws.data.chunks
    )
    assert path.read_bytes().startswith(raw + b"\n") and q.line == 8
    errors: list[Exception] = []

    def add(i: int) -> None:
        try:
            append_question(
                mini / "golden",
                f"Question {i}?",
                "cost 18 EUR per day",
                ["number"],
                chunks=bm25_ws.data.chunks,
            )
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=add, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    ids = [q.id for q in load_questions(path)]
    assert ids == [f"m{i:02d}" for i in range(1, 17)], "every writer got its own next id"


def test_next_question_id():
    assert next_question_id(["q01", "q02", "q68"]) == "q69"
    assert next_question_id(["m1", "m2"]) == "m3"
    assert next_question_id(["q009", "x", "q010"]) == "q011"
    assert next_question_id(["alpha", "beta"]) == "q01"
    assert next_question_id([]) == "q01"
    assert next_question_id(["q01", "q02", "x1"]) == "x2"


def test_add_question_command(mini, cache_dir, monkeypatch, capsys):
    monkeypatch.setenv("RAGTUI_CACHE_DIR", str(cache_dir))
    argv = [
        "add-question",
        *_args(mini),
        "--question",
        "How much is a single ferry ticket?",
        "--evidence",
        "| single adult | 3.20 EUR |",
        "--slice",
        "number",
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("questions.jsonl:8: added m08; relevant (evidence): ferry.md#1")
    assert [line.split()[0] for line in out[2:]] == ["bm25", "vector", "hybrid"]
    assert out[2].split()[1] == "1"
    assert (
        main(
            [
                "add-question",
                *_args(mini),
                "--question",
                "Pool?",
                "--evidence",
                "no such text anywhere",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0] == (
        f"ragtui: error: {mini / 'golden' / 'questions.jsonl'}: evidence 'no such text anywhere' is found in no chunk of the corpus"
    )
    assert len(load_questions(mini / "golden" / "questions.jsonl")) == 8
