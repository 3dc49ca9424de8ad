"""The app's first load, started in a thread of its own before the app is imported.

``ragtui`` knows what to load once it has read its arguments, and then spends 0.2 s importing the
app and Textual. :class:`FirstLoad` runs what the app's loading worker would run first: read and
chunk the data (``Workspace.load``), choose the embedding model (``BackgroundEmbedder``, which loads
nothing yet) and read the vector and hybrid rankings from the results cache. Reading and checking
the caches (file reads, hashes, numpy) lets go of the interpreter lock, so on a second core that
part costs the imports running meanwhile nothing; the rest takes turns with them as the worker
would have. The app's first loading worker then takes the results (``loading.load``) instead of
computing them, so what it shows, reports and fails with is the same: each step's exception is
kept and raised where the worker would have met it.
"""

from __future__ import annotations

import importlib
import threading

from ragtui.core.retrieval.encoder_process import BackgroundEmbedder
from ragtui.core.settings import Settings
from ragtui.core.workspace.vectors import VectorResult
from ragtui.core.workspace.workspace import Workspace

__all__ = ["FirstLoad"]


def _huge_page_advice(on: bool) -> bool:
    """Turn numpy's advice that arrays of 4 MB and more be backed by huge pages on or off; returns
    whether it was on (False where numpy has no such switch).

    Where the kernel gives huge pages only to memory advised so (``transparent_hugepage`` set to
    ``madvise``, the default of many distributions), a fault in advised memory may wait while the
    kernel compacts memory into a free 2 MB page. The first load fills fresh arrays of 8 MB (the
    rankings' code matrices at 100,000 questions): with the advice, its first screen came 75-110 ms
    later on a 2-core virtual machine (three runs of 14 rounds alternating). The advice stays on for
    everything else: an exact vector search over 100,000 chunks ran 20-25 % faster with it.
    """
    for name in ("numpy._core.multiarray", "numpy.core.multiarray"):  # numpy 2, numpy 1
        try:
            switch = getattr(importlib.import_module(name), "_set_madvise_hugepage", None)
        except ImportError:
            continue
        return bool(switch(on)) if switch is not None else False
    return False


class FirstLoad:
    """``Workspace.load(settings)``, the model chosen and the cached rankings applied, in a thread
    started now; each result is waited for when asked (a failed step raises what it raised)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._done = threading.Event()
        self._workspace: Workspace | None = None
        self._load_error: Exception | None = None
        self._model: BackgroundEmbedder | None = None
        self._model_error: Exception | None = None
        self._cached: VectorResult | None = None
        self._thread = threading.Thread(target=self._run, daemon=True, name="first-load")
        self._thread.start()

    def _run(self) -> None:
        advised = _huge_page_advice(False)
        try:
            try:
                ws = self._workspace = Workspace.load(self.settings)
            except Exception as exc:
                self._load_error = exc
                return
            if not ws.vectors_needed or ws.ranked.vector is not None:
                return
            try:
                s = ws.settings
                model = self._model = BackgroundEmbedder(s.model, s.embedding_backend, s.cache_dir)
            except Exception as exc:
                self._model_error = exc
                return
            try:
                cached = ws.cached_vectors(model)
            except Exception:  # a cache that cannot be read: the worker computes the rankings
                cached = None
            if cached is not None:
                ws.apply_vectors(cached)
                self._cached = cached
        finally:
            _huge_page_advice(advised)
            self._done.set()

    def workspace(self) -> Workspace:
        """The loaded workspace (raises what ``Workspace.load`` raised)."""
        self._done.wait()
        if self._load_error is not None:
            raise self._load_error
        assert self._workspace is not None
        return self._workspace

    def model(self) -> BackgroundEmbedder:
        """The embedding model chosen (raises what choosing it raised)."""
        self._done.wait()
        if self._model_error is not None:
            raise self._model_error
        if self._model is None:  # the vector retrievers were not needed: chosen as the worker would
            s = self.workspace().settings
            self._model = BackgroundEmbedder(s.model, s.embedding_backend, s.cache_dir)
        return self._model

    def cached(self) -> VectorResult | None:
        """The vector and hybrid rankings read from the results cache and applied to the
        workspace, or None when the cache did not hold them all."""
        self._done.wait()
        return self._cached
