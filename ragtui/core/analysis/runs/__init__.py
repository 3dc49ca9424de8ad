"""Saved runs and diffs: keep every retriever's per-question ranks and values with a manifest, and compare two.

``ragtui eval --save NAME`` writes ``<golden>/runs/<NAME>.json`` (the name made safe with
:func:`ragtui.core.data.paths.safe_filename`). A run of that name is never replaced silently: it is
refused unless replacing is asked for (``--replace``), and the run replaced is kept as a timestamped
``<NAME>.json.<UTC time>.bak`` beside the new one.  The file holds, besides the manifest (the settings and
versions that produced it), each question's text, slices and effective grades, and for every
retriever its means and, per evaluated question, the first relevant rank, the values and the ranked
chunk ids.  Because ranked lists and grades are kept, a diff or a comparison can recompute any
measure at any cut-off up to the run's depth; each run is judged by its own grades (chunk ids differ
between chunk sizes, so one run's grades cannot judge the other's chunks).

The modules: ``saved`` (the saved run: its manifest, its JSON, reading it back), ``folder`` (where
runs live: their files, writing without replacing silently, finding a run by name or path) and
``diff`` (two runs compared question by question; a saved run as the app's baseline).
"""

from ragtui.core.analysis.runs.diff import (
    Baseline,
    CauseChange,
    QuestionChange,
    RunDiff,
    cause_changes,
    diff_runs,
    load_baseline,
    settings_changes,
)
from ragtui.core.analysis.runs.folder import (
    RunExistsError,
    WrittenRun,
    list_runs,
    pick_retriever,
    refuse_taken,
    resolve_run,
    resolve_saved,
    resolve_system,
    run_file,
    runs_folder,
    save_folder,
    save_run,
    write_run,
)
from ragtui.core.analysis.runs.saved import (
    FORMAT,
    SavedRun,
    load_run,
    manifest,
    saved_run_from_workspace,
)

__all__ = [
    "FORMAT",
    "Baseline",
    "CauseChange",
    "QuestionChange",
    "RunDiff",
    "RunExistsError",
    "SavedRun",
    "WrittenRun",
    "cause_changes",
    "diff_runs",
    "list_runs",
    "load_baseline",
    "load_run",
    "manifest",
    "pick_retriever",
    "refuse_taken",
    "resolve_run",
    "resolve_saved",
    "resolve_system",
    "run_file",
    "runs_folder",
    "save_folder",
    "save_run",
    "saved_run_from_workspace",
    "settings_changes",
    "write_run",
]
