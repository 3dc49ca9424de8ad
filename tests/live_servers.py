"""Real HTTP search servers for the live-retriever tests, started on 127.0.0.1 by the tests themselves.

One server answers on several paths, all backed by a real bm25s index over the chunks it is given:

- ``GET /search?q=…&k=…``: the default shape ``{"results": [{"id", "score"}, …]}``;
- ``POST /idx/_search``: an Elasticsearch/OpenSearch ``_search`` response (``hits.hits[]._id``,
  ``_score``, ``_source.text``) for a body ``{"size": N, "query": {"match": {"text": "…"}}}``;
- ``GET /flaky?q=…``: HTTP 503 the first time a question is asked, the answer after that;
- ``GET /partial?q=…``: HTTP 404 for questions holding "ferry", the answer otherwise;
- ``GET /foreign?q=…``: results that are not chunks of the corpus, each with its text;
- ``GET /slow``: sleeps past any sensible timeout; ``GET /garbage``: 200 with an HTML page.

Every request is counted per path, so a test can tell a cached answer from a fresh one.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from ragtui.core.data.chunking import Chunk
from ragtui.core.retrieval.bm25 import BM25Retriever

#: How long /slow sleeps (tests use a much shorter client timeout).
SLOW_SECONDS = 5.0


class SearchServer:
    """A running server: its base URL and the number of requests per path."""

    def __init__(self, chunks: Sequence[Chunk], backend: str = "bm25s") -> None:
        self.chunks = list(chunks)
        self.bm25 = BM25Retriever(self.chunks, backend=backend)
        self.text = {c.id: c.text for c in self.chunks}
        self.requests: Counter[str] = Counter()
        self.seen_flaky: set[str] = set()
        self.lock = threading.Lock()
        self.url = ""

    def results(self, question: str, depth: int) -> list[tuple[str, float]]:
        return self.bm25.search(question, depth)


def _handler(server: SearchServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # quiet test output
            return

        def _json(self, status: int, body: object) -> None:
            raw = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def _count(self, path: str) -> None:
            with server.lock:
                server.requests[path] += 1

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            query = parse_qs(parts.query)
            question = query.get("q", [""])[0]
            depth = int(query.get("k", ["10"])[0])
            self._count(parts.path)
            if parts.path == "/search":
                results = server.results(question, depth)
                self._json(200, {"results": [{"id": c, "score": s} for c, s in results]})
            elif parts.path == "/flaky":
                with server.lock:
                    first = question not in server.seen_flaky
                    server.seen_flaky.add(question)
                if first:
                    self._json(503, {"error": "warming up"})
                else:
                    results = server.results(question, depth)
                    self._json(200, {"results": [{"id": c, "score": s} for c, s in results]})
            elif parts.path == "/partial":
                if "ferry" in question.lower():
                    self._json(404, {"error": "no such index"})
                else:
                    results = server.results(question, depth)
                    self._json(200, {"results": [{"id": c, "score": s} for c, s in results]})
            elif parts.path == "/foreign":
                results = server.results(question, depth)
                self._json(
                    200,
                    {
                        "results": [
                            {"id": f"ext:{c}", "score": s, "text": server.text[c], "doc": "ext"}
                            for c, s in results
                        ]
                    },
                )
            elif parts.path == "/passages":
                # Its own chunking of the same documents (a team's service over other passages):
                # each of bm25's chunks cut in two halves at a word, under ids of its own.
                passages = []
                for c, s in server.results(question, depth):
                    words = server.text[c].split(" ")
                    half = max(1, len(words) // 2)
                    for i, part in enumerate((words[:half], words[half:])):
                        if part:
                            passages.append(
                                {"id": f"p:{c}:{i}", "score": s, "text": " ".join(part)}
                            )
                self._json(200, {"results": passages[:depth]})
            elif parts.path == "/echo":
                # A hostile server: every header it was sent, back in its error.
                sent = [v for k, v in self.headers.items() if k.lower() not in ("host",)]
                sent.sort(key=lambda v: "Bearer" not in v and "secret" not in v)
                self._json(400, {"error": f"denied: {'; '.join(sent)}"})
            elif parts.path == "/slow":
                time.sleep(SLOW_SECONDS)
                self._json(200, {"results": []})
            elif parts.path == "/garbage":
                raw = b"<html><body>Bad gateway, try later</body></html>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)
            else:
                self._json(404, {"error": "not found"})

        def do_POST(self) -> None:
            parts = urlsplit(self.path)
            self._count(parts.path)
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            if parts.path != "/idx/_search":
                self._json(404, {"error": "not found"})
                return
            question = body["query"]["match"]["text"]
            size = body["size"]
            if not isinstance(size, int):
                self._json(400, {"error": "size must be a number"})
                return
            hits = [
                {"_index": "idx", "_id": c, "_score": s, "_source": {"text": server.text[c]}}
                for c, s in server.results(question, size)
            ]
            self._json(200, {"took": 1, "hits": {"total": {"value": len(hits)}, "hits": hits}})

    return Handler


class _Server(ThreadingHTTPServer):
    """A threading server that does not print the client's hang-ups (a timed-out client leaves)."""

    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        return


@contextmanager
def serve(chunks: Sequence[Chunk], backend: str = "bm25s") -> Iterator[SearchServer]:
    """Start a search server over ``chunks`` on 127.0.0.1 (a free port) for the duration of the block."""
    state = SearchServer(chunks, backend)
    httpd = _Server(("127.0.0.1", 0), _handler(state))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
