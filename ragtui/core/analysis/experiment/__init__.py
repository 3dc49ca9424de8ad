"""``ragtui experiment``: every variant of the project file evaluated, one table of variant x retriever x
measure against the baseline variant, with significance corrected for the number of comparisons.

How it is computed:

* Each variant is the settings every command would run with, with its ``[variants.NAME]`` keys set
  (``ragtui.core.variants``). Variants that share the data and the chunking read and chunk once,
  loaded models are reused, and embeddings and reranker scores come from their caches.
* Relevance is recomputed per variant: the evidence rule on the variant's own chunks (or the BEIR
  qrels), overridden by the hand grades that still apply (the labelled chunk id exists and its
  text is unchanged). Each variant says how many hand grades apply and how many are stale, and a
  variant judged on other hand grades than the baseline, or evaluating other questions, is flagged.
* A retriever of a variant is compared with the same retriever of the baseline (a reranked list the
  baseline lacks, ``hybrid+rerank``, with the baseline's first stage, ``hybrid``), question by
  question, on the questions both evaluate (paired by question id): the mean difference (variant -
  baseline), the two-sided paired randomisation test and the bootstrap 95 % interval
  (``ragtui.core.metrics.significance``).
* The p-values of the whole table are adjusted together, by Holm's method by default: the table is
  read as many yes/no answers at once ("is 256 better than 512 on MRR?"), and Holm keeps the chance
  that any of them is a false "significant" at most alpha (0.05) whatever the dependence between
  the tests, which matters here because every test reuses the same questions and the measures are
  strongly correlated. Benjamini-Hochberg (``--correction bh``) controls the expected share of
  false ones among the significant instead: more power, for screening many variants.
* Judged@k (the share of the top k that carries any grade) flags means that rest on thin
  judgements (below 0.5), per variant and retriever.
* Each variant is saved as a run (``ragtui diff A B`` compares two of them question by question).
  A variant named like a saved run is refused before anything is loaded unless ``replace_runs`` is given
  (``--replace``); a run replaced is kept as a timestamped backup beside the new one.

The modules: ``running`` (every variant loaded, evaluated and compared: :func:`run_experiment`) and
``result`` (what it returns, :class:`ExperimentResult`, with its JSON and its report).
"""

from ragtui.core.analysis.experiment.result import (
    ExperimentResult,
    ExperimentRow,
    Judgements,
    VariantResult,
    experiment_report,
)
from ragtui.core.analysis.experiment.running import (
    DEFAULT_CORRECTION,
    default_experiment_measures,
    run_experiment,
)

__all__ = [
    "DEFAULT_CORRECTION",
    "ExperimentResult",
    "ExperimentRow",
    "Judgements",
    "VariantResult",
    "default_experiment_measures",
    "experiment_report",
    "run_experiment",
]
