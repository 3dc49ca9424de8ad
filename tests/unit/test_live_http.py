"""HTTP search APIs as live retrievers, against real servers this test starts on 127.0.0.1.

The server ranks with a real bm25s index over the same chunks ragtui holds, so a live retriever
asking it must give exactly the numbers of ragtui's own bm25 (bm25s backend); servers that time
out, fail or answer garbage must leave the other retrievers and ``eval`` working with one message.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace

import pytest

from ragtui.cli import main
from ragtui.core.errors import InputError
from ragtui.core.retrieval.http import HttpRetriever, fill_body, fill_url, get_path
from ragtui.core.retrieval.live import (
    CONSECUTIVE_FAILURES,
    LiveError,
    parse_retriever_section,
    parse_retriever_spec,
)
from ragtui.core.workspace import Workspace
from tests.conftest import mini_args
from tests.live_servers import serve


@pytest.fixture
def ws_settings(mini_settings, tmp_path):
    """The small corpus with bm25 on the bm25s backend (what the server runs) and a fresh answer cache."""
    return replace(
        mini_settings,
        retrievers=("bm25",),
        bm25_backend="bm25s",
        cache_dir=tmp_path / "cache",
    )


@pytest.fixture
def server(ws_settings):
    chunks = Workspace.load(ws_settings).data.chunks
    with serve(chunks) as running:
        yield running


def _with(settings, *specs):
    return replace(settings, live_retrievers=tuple(parse_retriever_spec(s) for s in specs))


def _args(mini, *extra: str) -> list[str]:
    return mini_args(mini, "--retrievers", "bm25", "--bm25-backend", "bm25s", *extra)


def test_a_live_retriever_returning_bm25s_rankings_gives_bm25s_numbers(ws_settings, server):
    settings = _with(ws_settings, f"web={server.url}/search?q={{query}}&k={{depth}}")
    ws = Workspace.open(settings)
    assert ws.retrievers == ["bm25", "web"]
    assert ws.live.status["web"].state == "ready"
    ev = ws.evaluation
    assert ev is not None
    for q in ws.questions:
        assert ws.ranking("web", q.id) == ws.ranking("bm25", q.id)
        assert ev.per_question["web"][q.id] == ev.per_question["bm25"][q.id]
    assert ev.summary("web") == ev.summary("bm25")
    assert server.requests["/search"] == len(ws.questions)


def test_answers_are_cached_per_question_and_refresh_asks_again(ws_settings, server):
    settings = _with(
        ws_settings,
        f"web={server.url}/search?q={{query}}&k={{depth}}",
    )
    settings = replace(settings, depth=3)
    first = Workspace.open(settings)
    asked = server.requests["/search"]
    assert asked == len(first.questions)
    again = Workspace.open(settings)
    assert server.requests["/search"] == asked, "a second run reads the cache"
    assert again.live.status["web"].from_cache == len(again.questions)
    assert again.ranked.rankings["web"] == first.ranked.rankings["web"]
    # A deeper run re-asks the questions whose cached answer was full (there may be more);
    # a shorter answer was all the server had.
    full = sum(1 for r in first.ranked.rankings["web"].values() if len(r) == 3)
    assert 0 < full < asked
    Workspace.open(replace(settings, depth=5))
    assert server.requests["/search"] == asked + full
    # A shallower run is served from the deeper answers, cut.
    shallow = Workspace.open(replace(settings, depth=1))
    assert server.requests["/search"] == asked + full
    assert shallow.ranked.rankings["web"] == shallow.ranked.rankings["bm25"]
    count = server.requests["/search"]
    Workspace.open(replace(settings, refresh=True))
    assert server.requests["/search"] == count + asked
    # The palette's refresh: the core function, computed then applied.
    result = again.compute_live(["web"], refresh=True)
    again.apply_live(result)
    assert result.runs["web"].queried == len(again.questions)
    assert server.requests["/search"] == count + 2 * asked


def test_the_eval_command_prints_identical_numbers_for_the_live_retriever(mini, server, capsys):
    url = f"{server.url}/search?q={{query}}&k={{depth}}"
    assert main(["eval", "--json", *_args(mini, "--retriever", f"web={url}")]) == 0
    report = json.loads(capsys.readouterr().out)
    bm25, web = report["retrievers"]["bm25"], report["retrievers"]["web"]
    assert web["failed"] == {}
    for key in ("recall", "precision", "mrr", "ndcg"):
        assert web[key] == bm25[key]
    assert web["per_question"] == bm25["per_question"]


def test_elasticsearch_mapping_posts_a_body_and_reads_hits(ws_settings, server):
    spec = parse_retriever_section(
        "es",
        {
            "url": f"{server.url}/idx/_search",
            "preset": "elasticsearch",
            "body": {"size": "{depth}", "query": {"match": {"text": "{query}"}}},
        },
    )
    ws = Workspace.open(replace(ws_settings, live_retrievers=(spec,)))
    for q in ws.questions:
        assert ws.ranking("es", q.id) == ws.ranking("bm25", q.id)
    assert server.requests["/idx/_search"] == len(ws.questions)


def test_a_503_is_asked_again_after_a_back_off(ws_settings, server):
    settings = _with(ws_settings, f"flaky={server.url}/flaky?q={{query}}&k={{depth}}")
    ws = Workspace.open(settings)
    assert ws.live.status["flaky"].state == "ready"
    assert server.requests["/flaky"] == 2 * len(ws.questions)
    assert ws.ranked.rankings["flaky"] == ws.ranked.rankings["bm25"]


def test_a_server_that_times_out_fails_fast_with_one_message(ws_settings, server):
    spec = parse_retriever_section(
        "slow", {"url": f"{server.url}/slow?q={{query}}", "timeout": 0.3, "retries": 1}
    )
    settings = replace(ws_settings, live_retrievers=(spec,))
    started = time.monotonic()
    ws = Workspace.open(settings)
    elapsed = time.monotonic() - started
    status = ws.live.status["slow"]
    assert status.state == "failed"
    # The timeout is the question's whole deadline: no time is left for the retry.
    assert status.message == (
        f"no question answered: {server.url}/slow: no answer within 0.3 s (1 try)"
    )
    # Stopped after a few failures in a row, not one timeout per question.
    assert server.requests["/slow"] <= CONSECUTIVE_FAILURES + 4
    assert elapsed < 10
    # The other retriever is untouched.
    assert ws.retrievers == ["bm25"]
    assert ws.evaluation is not None and ws.evaluation.summary("bm25").recall > 0


def test_eval_exits_2_with_one_line_when_a_retriever_answers_nothing(mini, server, capsys):
    url = f"{server.url}/garbage?q={{query}}"
    assert main(["eval", *_args(mini, "--retriever", f"junk={url}")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert lines[-1] == (
        f"ragtui: error: junk: no question answered: {server.url}/garbage: the response is not JSON "
        "(it starts '<html><body>Bad gateway, try later</body')"
    )


def test_eval_names_the_questions_a_retriever_could_not_answer(mini, server, capsys):
    url = f"{server.url}/partial?q={{query}}&k={{depth}}"
    assert main(["eval", "--json", *_args(mini, "--retriever", f"part={url}")]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    failed = report["retrievers"]["part"]["failed"]
    assert sorted(failed) == ["m01"]  # "How much is a return ferry ticket?"
    assert failed["m01"].startswith(f"{server.url}/partial: HTTP 404")
    assert "part: 1 of 7 questions not answered (m01)" in captured.err
    assert "they count as empty runs" in captured.err
    assert report["retrievers"]["part"]["per_question"]["m01"]["recall"] == 0.0


def test_passages_with_the_text_of_a_chunk_are_that_chunk(ws_settings, server):
    """A service returning ragtui's own passages under its own ids scores as the ranking it serves."""
    settings = _with(ws_settings, f"ext={server.url}/foreign?q={{query}}&k={{depth}}")
    ws = Workspace.open(settings)
    assert ws.passages.foreign == {}
    for q in ws.questions:
        assert [c for c, _ in ws.ranking("ext", q.id)] == [c for c, _ in ws.ranking("bm25", q.id)]
    assert ws.live.counts["ext"].mapped == ws.live.counts["ext"].returned > 0
    ev = ws.evaluation
    assert ev is not None
    assert ev.summary("ext") == ev.summary("bm25")


def test_adhoc_queries_reach_the_live_retriever(ws_settings, server):
    settings = _with(ws_settings, f"web={server.url}/search?q={{query}}&k={{depth}}")
    ws = Workspace.open(settings)
    before = server.requests["/search"]
    found = ws.search_adhoc("late book fine")
    assert found["web"] == found["bm25"] and found["web"]
    assert server.requests["/search"] == before + 1


def test_url_and_body_templates():
    assert fill_url("http://h/s?q={query}&k={depth}", "a&b c/?é", 7) == (
        "http://h/s?q=a%26b%20c%2F%3F%C3%A9&k=7"
    )
    body = fill_body({"size": "{depth}", "q": ['say "{query}"']}, 'x"y', 3)
    assert body == {"size": 3, "q": ['say "x"y"']}
    assert get_path({"a": {"b": [{"c": 1}]}}, "a.b.0.c") == 1
    assert get_path({"a": 1}, "a.b") is None


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ("web", "expected NAME=SPEC"),
        ("web=ftp://host/x", "only http:// and https:// URLs are supported"),
        ("web=http://host/search", "url must hold {query}"),
        ("web=http://host/s?q={query}&x={size}", "unknown placeholder {size}"),
        ("bm25=http://host/s?q={query}", "'bm25' is a built-in retriever"),
        ("../x=http://host/s?q={query}", "may hold only letters"),
        ("web=not a spec", "neither an http(s) URL"),
    ],
)
def test_bad_specs_are_one_line_errors(spec, problem):
    with pytest.raises(InputError) as caught:
        parse_retriever_spec(spec)
    assert problem in caught.value.message
    assert "\n" not in caught.value.message


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        ({"url": "http://h/s?q={query}", "factory": "a.b:c"}, "exactly one of url, factory"),
        ({"url": "http://h/s?q={query}", "sice": 3}, "unknown key 'sice'"),
        ({"url": "http://h/s", "method": "POST", "body": "{not json"}, "body is not JSON"),
        ({"url": "http://h/s?q={query}", "preset": "solr"}, "preset must be one of"),
        ({"url": "http://h/s?q={query}", "timeout": 0}, "timeout must be a number"),
        ({"url": "http://h/s?q={query}", "body": {"q": "x"}, "method": "GET"}, "GET request"),
        ({"url": "http://h/s", "body": {"q": "x"}}, "must hold {query}"),
        ({"factory": "no colon"}, "factory must be package.module:function"),
        ({"factory": "a.b:c", "url2": 1}, "unknown key 'url2'"),
    ],
)
def test_bad_retriever_sections_name_the_key(table, problem):
    with pytest.raises(InputError) as caught:
        parse_retriever_section("web", table)
    assert caught.value.message.startswith("[retrievers.web]: ")
    assert problem in caught.value.message


def test_the_error_names_the_endpoint_without_its_query_string(server):
    spec = parse_retriever_spec(f"web={server.url}/nothing?q={{query}}&key=SECRET")
    with pytest.raises(LiveError) as caught:
        HttpRetriever(spec).search("x", 3)
    assert (
        str(caught.value) == f'{server.url}/nothing: HTTP 404 Not Found ({{"error": "not found"}})'
    )
    assert "SECRET" not in str(caught.value)


def test_a_plain_retriever_name_keeps_its_meaning_in_eval_and_is_refused_elsewhere(mini, capsys):
    # eval --retriever NAME (no =SPEC) is the retriever a saved run stands for, as before.
    assert main(["eval", *_args(mini, "--save", "one")]) == 0
    assert main(["eval", *_args(mini, "--compare", "one", "bm25", "--retriever", "bm25")]) == 0
    capsys.readouterr()
    assert main(["export", str(mini / "out"), *_args(mini, "--retriever", "bm25")]) == 2
    assert (
        "a name without =SPEC only chooses the retriever of a saved run" in capsys.readouterr().err
    )


SECRET = "sk-search-0f9e8d7c6b5a4f3e2d1c"


def test_header_values_a_hostile_server_echoes_are_never_printed(
    mini, server, capsys, tmp_path, monkeypatch
):
    monkeypatch.setenv("RAGTUI_TEST_SEARCH_KEY", SECRET)
    project = tmp_path / "ragtui.toml"
    project.write_text(
        "[retrievers.echo]\n"
        f'url = "{server.url}/echo?q={{query}}"\n'
        'headers = { Authorization = "Bearer ${RAGTUI_TEST_SEARCH_KEY}", '
        'X-Team = "team-secret-value" }\n'
    )
    for extra in ([], ["--json"]):
        args = mini_args(mini, "--retrievers", "bm25,echo", "--bm25-backend", "bm25s", *extra)
        code = main(["eval", "--project", str(project), *args])
        captured = capsys.readouterr()
        shown = captured.out + captured.err
        assert code == 2 and "echo" in captured.err
        assert SECRET not in shown and "team-secret-value" not in shown, shown
        assert "***" in captured.err


@pytest.mark.parametrize(
    ("spec", "refused"),
    [
        ("web=http://search.example/s?q={query}&api_key=K123", True),
        ("web=https://search.example/s?q={query}&api_key=K123", False),
        ("web=http://127.0.0.1:9/s?q={query}&api_key=K123", False),
        ("web=http://search.example/s?q={query}", False),
    ],
)
def test_a_credential_goes_over_plain_http_only_to_this_machine_or_when_allowed(spec, refused):
    from ragtui.core.retrieval.connectors import build_live_retrievers

    def build(allow: bool) -> object:
        return build_live_retrievers(
            ("web",),
            (parse_retriever_spec(spec),),
            milvus=None,
            collection=None,
            milvus_fields=(),
            model="m",
            cache_root=None,
            allow_http=allow,
        )

    assert build(True)
    if refused:
        with pytest.raises(InputError, match="--allow-http"):
            build(False)
    else:
        assert build(False)
