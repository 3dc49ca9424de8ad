"""The embedding model read in a helper process, so that reading it never stalls the app.

On a warm cache the app starts without the model, and the first text it must embed (an ad-hoc
query) waited for it: importing torch and sentence-transformers and reading the model took 10-27 s
on a busy 2-core machine. Read in a thread of the app, that import holds the interpreter lock in
long stretches (the UI thread stalled up to 0.9 s at a time while it ran), so keys would lag. So
the app starts a helper process (``python -m ragtui.core.retrieval.encoder_process --backend B
[--cache-root DIR] [MODEL]``) once
its first full screen is painted: the model is read there (at low priority), and texts are
encoded there, their vectors sent back through a pipe. The helper runs the same :class:`Embedder`, so its
vectors are the ones this process would compute.

:class:`BackgroundEmbedder` is the app's embedder: the model in this process when it is loaded here
(a cold cache embeds the corpus here, with progress), else the helper once :meth:`start` started
it, else loaded here as before. A helper that fails or dies is dropped and the model is read here.

The pipes carry frames: a 4-byte big-endian length, then the bytes. Requests are JSON
(``{"texts": [...], "progress": bool}``, or ``{"cancel": true}`` while one runs); the helper
answers ``{"ready": true}`` (or ``{"failed": why}``) once, then per request any number of
``{"progress": [done, total]}`` and ``{"rows": n, "dim": d}`` followed by a frame of ``n * d``
little-endian float32 (or ``{"error": why}``). The helper's stdout and stderr never reach the
terminal (the app owns it), and it ends as soon as its stdin closes: when the app quits or dies.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import queue
import struct
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, BinaryIO

import numpy as np
import orjson

from ragtui.core.errors import InputError
from ragtui.core.retrieval.embeddings import Embedder, Progress

__all__ = ["BackgroundEmbedder", "EncoderGone", "EncoderProcess", "serve"]

#: The niceness the helper reads the model at: the app (its keys) comes first on a busy machine.
HELPER_NICE = 10
#: The largest frame read (a request or an answer of about a million 384-dimension vectors).
MAX_FRAME = 1 << 31
_LENGTH = struct.Struct(">I")


class EncoderGone(RuntimeError):
    """The helper process ended, or answered what this side cannot read."""


def _write_frame(stream: IO[bytes], payload: bytes) -> None:
    stream.write(_LENGTH.pack(len(payload)) + payload)
    stream.flush()


def _read_exact(stream: IO[bytes], size: int) -> bytes | None:
    chunks: list[bytes] = []
    left = size
    while left:
        chunk = stream.read(left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _read_frame(stream: IO[bytes]) -> bytes | None:
    """The next frame, or None at the end of the stream."""
    head = _read_exact(stream, _LENGTH.size)
    if head is None:
        return None
    (size,) = _LENGTH.unpack(head)
    if size > MAX_FRAME:
        raise EncoderGone(f"a frame of {size} bytes")
    return _read_exact(stream, size)


def _message(exc: BaseException) -> str:
    return exc.message if isinstance(exc, InputError) else f"{type(exc).__name__}: {exc}"


# ---- the helper ----------------------------------------------------------------------------------


class _Cancel(Exception):
    """The app withdrew the request being encoded."""


def serve(model: str | None, backend: str | None = None, cache_root: Path | None = None) -> int:
    """The helper's main loop: read the model, say so, then encode each request (until stdin closes)."""
    answers: BinaryIO = os.fdopen(os.dup(1), "wb")
    # Whatever a library prints goes nowhere: stdout is the app's protocol, never its screen.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    requests: queue.Queue[bytes] = queue.Queue()
    cancel = threading.Event()
    write = threading.Lock()

    def send(obj: Any, data: bytes | None = None) -> None:
        with write:
            _write_frame(answers, orjson.dumps(obj))
            if data is not None:
                _write_frame(answers, data)

    def read_requests() -> None:
        source = sys.stdin.buffer
        while True:
            frame = _read_frame(source)
            if frame is None:
                os._exit(0)  # the app closed the pipe (it quit or died): so does the helper
            if orjson.loads(frame).get("cancel"):
                cancel.set()
            else:
                requests.put(frame)

    threading.Thread(target=read_requests, daemon=True).start()
    embedder = Embedder(model, backend, cache_root)
    failure: list[str] = []

    def read_model() -> None:
        # Imports at low priority (this thread only, on Linux), so the app's keys come first on a
        # busy machine; the queries are encoded at the usual priority, by the main thread.
        with contextlib.suppress(AttributeError, OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), HELPER_NICE)
        try:
            embedder.load()
        except Exception as exc:
            failure.append(_message(exc))

    reader = threading.Thread(target=read_model, name="read-model")
    reader.start()
    reader.join()
    if not failure:
        try:
            # The first encoding allocates (and makes torch's threads, at this thread's priority).
            embedder.encode(["warming up"])
        except Exception as exc:
            failure.append(_message(exc))
    if failure:
        send({"failed": failure[0]})
        return 1
    send({"ready": True})
    wanted = [False]  # whether the request being encoded asked for progress

    def progress(done: int, total: int) -> None:
        if cancel.is_set():
            raise _Cancel
        if wanted[0]:
            send({"progress": [done, total]})

    while True:
        request = orjson.loads(requests.get())
        cancel.clear()
        wanted[0] = bool(request.get("progress"))
        try:
            rows = np.ascontiguousarray(embedder.encode(request["texts"], progress), dtype="<f4")
        except _Cancel:
            send({"error": "cancelled"})
            continue
        except Exception as exc:
            send({"error": _message(exc)})
            continue
        send({"rows": int(rows.shape[0]), "dim": int(rows.shape[1])}, rows.tobytes())


# ---- the app's side ------------------------------------------------------------------------------


class EncoderProcess:
    """The app's handle on one helper process (see the module docstring); thread-safe."""

    def __init__(
        self, model: str | None, backend: str | None = None, cache_root: Path | None = None
    ) -> None:
        self.model = model
        #: What the helper runs the model with (the app's embedder's resolved backend).
        self.backend = backend
        self.cache_root = cache_root
        self._process: subprocess.Popen[bytes] | None = None
        self._settled = threading.Event()
        self._ready = False
        #: Why the helper could not read the model (or ended), once it could not.
        self.failure = ""
        #: One request at a time goes through the pipes.
        self._turn = threading.Lock()

    def start(self) -> None:
        """Start the helper (a no-op if started); it reads the model while this process goes on."""
        if self._process is not None:
            return
        args = [sys.executable, "-m", "ragtui.core.retrieval.encoder_process"]
        if self.backend:
            args += ["--backend", self.backend]
        if self.cache_root is not None:
            args += ["--cache-root", str(self.cache_root)]
        try:
            self._process = subprocess.Popen(
                [*args, *([self.model] if self.model else [])],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # a ctrl+c meant for the app is not the helper's
            )
        except OSError as exc:
            self._settle(f"cannot start the helper: {exc.strerror or exc}")
            return
        threading.Thread(target=self._await_ready, daemon=True, name="encoder-ready").start()

    def _await_ready(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        try:
            frame = _read_frame(self._process.stdout)
            said = orjson.loads(frame) if frame is not None else {}
        except (EncoderGone, ValueError, OSError) as exc:
            said = {"failed": str(exc)}
        if said.get("ready") is True:
            self._ready = True
            self._settled.set()
        else:
            self._settle(str(said.get("failed") or "the helper ended before reading the model"))

    def _settle(self, failure: str) -> None:
        self.failure = failure
        self._ready = False
        self._settled.set()

    @property
    def started(self) -> bool:
        """Whether :meth:`start` was called."""
        return self._process is not None or self._settled.is_set()

    @property
    def ready(self) -> bool:
        """Whether the helper has read the model and answers."""
        return self._ready

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the helper has read the model (True) or could not (False)."""
        self._settled.wait(timeout)
        return self._ready

    def encode(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        """The helper's embeddings of ``texts`` (``EncoderGone`` when it cannot answer). An
        exception from ``progress`` (a cancelled load) withdraws the request, then is raised."""
        if not self.wait():
            raise EncoderGone(self.failure)
        with self._turn:
            process = self._process
            assert process is not None and process.stdin is not None and process.stdout is not None
            try:
                _write_frame(
                    process.stdin,
                    orjson.dumps({"texts": list(texts), "progress": progress is not None}),
                )
                return self._answer(process, progress)
            except (OSError, ValueError, EncoderGone) as exc:
                self.close()
                self._settle(f"the helper stopped answering ({exc})")
                raise EncoderGone(self.failure) from None

    def _answer(self, process: subprocess.Popen[bytes], progress: Progress | None) -> np.ndarray:
        assert process.stdin is not None and process.stdout is not None
        interrupted: BaseException | None = None
        while True:
            frame = _read_frame(process.stdout)
            if frame is None:
                raise EncoderGone("the helper ended")
            said = orjson.loads(frame)
            if "progress" in said:
                if progress is not None and interrupted is None:
                    try:
                        progress(*said["progress"])
                    except BaseException as exc:  # re-raised once the helper has stopped
                        interrupted = exc
                        _write_frame(process.stdin, orjson.dumps({"cancel": True}))
                continue
            if "error" in said:
                if interrupted is not None:
                    raise interrupted
                raise InputError(self.model or "the embedding model", str(said["error"]))
            rows, dim = int(said["rows"]), int(said["dim"])
            data = _read_frame(process.stdout)
            if data is None or len(data) != rows * dim * 4:
                raise EncoderGone("an answer of the wrong size")
            if interrupted is not None:
                raise interrupted
            return np.frombuffer(data, dtype="<f4").reshape(rows, dim).copy()

    def close(self) -> None:
        """End the helper now (it holds nothing to save: the app writes the embedding cache)."""
        process = self._process
        if process is None:
            return
        self._settle("the helper was closed")
        for stream in (process.stdin, process.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        process.kill()
        process.wait()


#: ``RAGTUI_PRELOAD_MODEL``: when the app reads the embedding model in a helper process. Unset: in an
#: app on a terminal, when it is first needed (the ad-hoc screen opens, or a query needs it), so an
#: app that never types a query never holds the model (about 570 MB); a headless app (tests) reads
#: it in a worker instead. 1: right after the first screen, headless too. 0: never in a helper (the
#: first query reads it in a worker).
PRELOAD_ENV = "RAGTUI_PRELOAD_MODEL"


def preload_setting() -> str:
    """``RAGTUI_PRELOAD_MODEL`` as given: "0", "1", or "" (unset or anything else)."""
    value = os.environ.get(PRELOAD_ENV, "").strip()
    return value if value in ("0", "1") else ""


def preload_at_start() -> bool:
    """Whether the app reads the model in a helper process right after the first screen
    (``PRELOAD_ENV`` is 1), before anything needs it."""
    return preload_setting() == "1"


def helper_on_use(headless: bool) -> bool:
    """Whether the app reads the model in a helper process when it is first needed
    (``PRELOAD_ENV`` unset in an app on a terminal, or 1), rather than in a worker of the app."""
    setting = preload_setting()
    return setting == "1" or (setting == "" and not headless)


class BackgroundEmbedder:
    """An :class:`Embedder` whose model may be read in a helper process (see the module docstring)."""

    def __init__(
        self,
        model: str | None = None,
        backend: str | None = None,
        cache_root: Path | None = None,
    ) -> None:
        self.local = Embedder(model, backend, cache_root)
        self._model = model
        self._cache_root = cache_root
        self._helper: EncoderProcess | None = None
        self._closed = False

    @property
    def cache_name(self) -> str:
        """The name its embeddings are cached under: the model's, wherever it runs."""
        return self.local.cache_name

    @property
    def backend(self) -> str:
        """``torch`` or ``onnx``: what runs the model, here and in the helper alike."""
        return self.local.backend

    @property
    def loaded(self) -> bool:
        """Whether a text can be encoded without reading the model first (here or in the helper)."""
        return self.local.loaded or (self._helper is not None and self._helper.ready)

    @property
    def helper(self) -> EncoderProcess | None:
        """The helper process, once started."""
        return self._helper

    def start(self) -> bool:
        """Start reading the model in a helper process, unless it is loaded here or started
        already; whether it was started now."""
        if self.local.loaded or self._helper is not None or self._closed:
            return False
        self._helper = EncoderProcess(self._model, self.local.backend, self._cache_root)
        self._helper.start()
        return True

    def load(self) -> None:
        """Make the model ready: wait for the helper if it was started (and did not fail), else
        read it here."""
        if self._helper is not None and self._helper.wait():
            return
        self._refuse_closed()
        self.local.load()

    def encode(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        """Unit-length float32 embeddings of ``texts``: the helper's when the model is not loaded
        here and the helper was started (it is waited for), else this process's."""
        helper = self._helper
        if texts and not self.local.loaded and helper is not None and helper.wait():
            try:
                return helper.encode(texts, progress)
            except EncoderGone:
                pass  # the helper died: the model is read here (unless the app is quitting)
        self._refuse_closed()
        return self.local.encode(texts, progress)

    def _refuse_closed(self) -> None:
        if self._closed and not self.local.loaded:
            raise EncoderGone("the app is quitting: the model is not read")

    def close(self) -> None:
        """End the helper process, if any (the app quits)."""
        self._closed = True
        if self._helper is not None:
            self._helper.close()


def main(argv: list[str]) -> int:
    """``python -m ragtui.core.retrieval.encoder_process [--backend B] [--cache-root DIR] [MODEL]``."""
    parser = argparse.ArgumentParser(prog="encoder_process")
    parser.add_argument("--backend", default=None)
    parser.add_argument("--cache-root", type=Path, default=None)
    parser.add_argument("model", nargs="?", default=None)
    args = parser.parse_args(argv)
    return serve(args.model, args.backend, args.cache_root)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
