"""A BEIR folder of NFCorpus's size made from the bundled Cranfield collection, without internet.

NFCorpus (the set issue 26 timed) has 3,162 documents of about 230 words and 323 test questions.
This builds a set of that shape, deterministically, from ``tests/data/cranfield``:

- the 1,400 Cranfield abstracts as they are (ids ``1``..``1400``);
- synthetic variants (ids ``v1``..): a Cranfield abstract's sentences in another order, followed
  by sentences of one to three other abstracts, so the lengths spread from a few dozen words to
  about 1,000 (mean about 240 words overall; some documents need several 512-token chunks, many
  chunks more than one 256-token window);
- the 225 Cranfield questions with their graded judgements, a variant judged one grade below its
  first abstract's grade (at least 1);
- synthetic questions (ids ``s1``..) made of words of a variant's title and first sentence,
  judging that variant 2 and its first abstract 1.

The folder is written once under a cache folder (``$RAGTUI_BENCH_DIR``, else the system's temp
folder), named by the parameters and this generator's version, never into the source tree.

python -m bench.beir_set [--documents 3000] [--questions 300] [--out DIR]   # prints the folder
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import tempfile
from pathlib import Path

from bench.common import CRANFIELD

#: Bump when the generator makes something else of the same parameters.
VERSION = 1
#: NFCorpus's size, rounded (3,162 documents, 323 test questions).
DOCUMENTS = 3000
QUESTIONS = 300


def _read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _sentences(text: str) -> list[str]:
    return [s.strip() + " ." for s in re.split(r"\s\.(?:\s|$)", text) if s.strip()]


def write_set(
    folder: Path, documents: int = DOCUMENTS, questions: int = QUESTIONS, seed: int = 26
) -> Path:
    """Write the set into ``folder`` (corpus.jsonl, queries.jsonl, qrels/test.tsv); returns it."""
    corpus = _read_jsonl(CRANFIELD / "corpus.jsonl")
    queries = _read_jsonl(CRANFIELD / "queries.jsonl")
    qrels: dict[str, dict[str, int]] = {}
    for line in (CRANFIELD / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        qid, doc, score = line.split("\t")
        qrels.setdefault(qid, {})[doc] = int(score)
    if documents < 1 or questions < 1:
        raise ValueError("documents and questions must be at least 1")
    rng = random.Random(seed)
    with_text = [d for d in corpus if d["text"].strip()]
    docs = [
        {"_id": d["_id"], "title": d["title"], "text": d["text"]}
        for d in corpus[: min(documents, len(corpus))]
    ]
    variants: list[tuple[dict, str]] = []  # (variant, its first abstract's id)
    while len(docs) < documents:
        first = rng.choice(with_text)
        parts = _sentences(first["text"])
        rng.shuffle(parts)
        for other in rng.sample(with_text, rng.choice((1, 1, 1, 2, 2, 3))):
            extra = _sentences(other["text"])
            parts.extend(extra[: rng.randint(1, len(extra))])
        variant = {
            "_id": f"v{len(variants) + 1}",
            "title": f"{first['title'].rstrip(' .')} (revisited)",
            "text": " ".join(parts),
        }
        docs.append(variant)
        variants.append((variant, first["_id"]))
    known = {d["_id"] for d in docs}
    judged: dict[str, dict[str, int]] = {}
    out_queries: list[dict] = []
    by_first: dict[str, list[str]] = {}
    for variant, first in variants:
        by_first.setdefault(first, []).append(variant["_id"])
    for q in queries[:questions]:
        grades = {doc: g for doc, g in qrels.get(q["_id"], {}).items() if doc in known}
        for doc, g in list(grades.items()):
            for vid in by_first.get(doc, ()):
                grades[vid] = max(1, g - 1)
        if grades:
            out_queries.append({"_id": q["_id"], "text": q["text"]})
            judged[q["_id"]] = grades
    for variant, first in variants:
        if len(out_queries) >= questions:
            break
        words = [w for w in (variant["title"] + " " + variant["text"]).split() if w.isalpha()]
        picked = rng.sample(words[:40], min(len(words[:40]), rng.randint(5, 10)))
        if not picked:
            continue
        qid = f"s{len(out_queries) - len(queries[:questions]) + 1}"
        out_queries.append({"_id": qid, "text": "what about " + " ".join(picked) + " ?"})
        judged[qid] = {variant["_id"]: 2, first: 1}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "qrels").mkdir(exist_ok=True)
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8"
    )
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps(q) + "\n" for q in out_queries), encoding="utf-8"
    )
    rows = [f"{q}\t{doc}\t{g}" for q, graded in judged.items() for doc, g in graded.items()]
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "\n".join(rows) + "\n", encoding="utf-8"
    )
    return folder


def bench_folder() -> Path:
    """Where the benchmark's generated sets live: ``$RAGTUI_BENCH_DIR``, else the temp folder."""
    explicit = os.environ.get("RAGTUI_BENCH_DIR")
    return Path(explicit) if explicit else Path(tempfile.gettempdir()) / "ragtui-bench"


def nfcorpus_sized(
    documents: int = DOCUMENTS, questions: int = QUESTIONS, root: Path | None = None
) -> Path:
    """The set of this size, written on the first call (a finished folder is reused as it is)."""
    folder = (root or bench_folder()) / f"cranfield-nf-v{VERSION}-{documents}d-{questions}q"
    done = folder / ".complete"
    if not done.exists():
        partial = folder.with_name(folder.name + f".partial-{os.getpid()}")
        write_set(partial, documents, questions)
        (partial / ".complete").write_text("", encoding="utf-8")
        try:
            partial.rename(folder)
        except OSError:  # another process finished it first: theirs is the same set
            import shutil

            shutil.rmtree(partial, ignore_errors=True)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=DOCUMENTS)
    parser.add_argument("--questions", type=int, default=QUESTIONS)
    parser.add_argument("--out", type=Path, help="write here (default: the bench cache folder)")
    args = parser.parse_args()
    if args.out is not None:
        print(write_set(args.out, args.documents, args.questions))
    else:
        print(nfcorpus_sized(args.documents, args.questions))


if __name__ == "__main__":
    main()
