"""The router's pure parts: which replica, from given loads; and its failover, retries and
probes against fake replicas (httpx's MockTransport) — the real-process tests are in
tests/team/test_router.py."""

from __future__ import annotations

import asyncio
import json
import random

import httpx
import pytest

from lsp_infer.config import TeamSettings, load_settings, shown_url, team_urls
from lsp_infer.team.http_client import TeamClient, TeamError
from lsp_infer.team.replicas import Load, Registry, Replica, affinity_index, pick, score

UP, DOWN = True, False


def load(healthy: bool = UP, in_flight: int = 0, requests: int = 0, **gauges: float) -> Load:
    waiting, running = gauges.get("waiting"), gauges.get("running")
    return Load(healthy, in_flight, requests, waiting, running)


@pytest.mark.parametrize(
    ("loads", "exclude", "expected"),
    [
        # Own in-flight counts when there are no gauges.
        ([load(in_flight=2), load(in_flight=1)], (), 1),
        # A tie goes to the first in the given order (the router's is random).
        ([load(), load()], (), 0),
        # vLLM's gauges: a waiting request weighs more than running ones.
        ([load(waiting=1, running=0), load(waiting=0, running=3)], (), 1),
        ([load(waiting=0, running=5), load(waiting=2, running=0)], (), 0),
        # Down replicas only when no healthy one is left to try.
        ([load(DOWN), load(in_flight=9)], (), 1),
        ([load(DOWN), load(in_flight=9)], (1,), 0),
        ([load(DOWN), load(DOWN, in_flight=1)], (), 0),
        # Everything tried: None (the router backs off and starts a new round).
        ([load(), load()], (0, 1), None),
        ([], (), None),
    ],
)
def test_pick(loads: list[Load], exclude: tuple[int, ...], expected: int | None) -> None:
    assert pick(loads, exclude=frozenset(exclude)) == expected


def test_ties_follow_the_order_given() -> None:
    idle = [load(), load(), load()]
    assert pick(idle, order=[2, 0, 1]) == 2
    assert pick(idle, order=[2, 0, 1], exclude=frozenset({2})) == 0
    assert pick([load(in_flight=1), load(), load()], order=[0, 2, 1]) == 2


def test_affinity_keeps_a_document_on_its_replica_while_it_is_not_busier() -> None:
    key = "file:///w/a.py"
    home = affinity_index(key, 3)
    idle = [load() for _ in range(3)]
    assert pick(idle, affinity=key) == home
    busy = [load(in_flight=2 if i == home else 0) for i in range(3)]
    assert pick(busy, affinity=key) != home  # two more than the others: go elsewhere
    slightly = [load(in_flight=1 if i == home else 0) for i in range(3)]
    assert pick(slightly, affinity=key) == home  # within the slack: keep the cache


def test_score_counts_requests_sent_since_the_sample() -> None:
    assert score(Load(UP, 3)) == 3.0
    assert score(Load(UP, 3, 0, waiting=1.0, running=2.0, sent_since_sample=1)) == 7.0


def test_replica_json_hides_credentials_and_reports_nulls_without_metrics() -> None:
    replica = Replica("http://bob:hunter2@gpu:8000/v1")
    shown = replica.as_json()
    assert shown["url"] == "http://gpu:8000/v1" and "hunter2" not in json.dumps(shown)
    assert shown["waiting"] is None and shown["p50Ms"] is None and shown["healthy"] is True
    assert replica.root == "http://bob:hunter2@gpu:8000"


def test_registry_keeps_state_across_settings() -> None:
    registry = Registry()
    [a] = registry.get(["http://a/v1"])
    a.failures = 3
    a2, b = registry.get(["http://a/v1", "http://b/v1"])
    assert a2 is a and a2.failures == 3 and b.url == "http://b/v1"


@pytest.mark.parametrize(
    ("value", "urls"),
    [
        ("http://a:8000/v1", ("http://a:8000/v1",)),
        ("http://a/v1/, http://b/v1", ("http://a/v1", "http://b/v1")),
        ("http://a/v1 http://b/v1\thttp://a/v1", ("http://a/v1", "http://b/v1")),
        (["http://a/v1", "https://b/v1"], ("http://a/v1", "https://b/v1")),
        (None, ()),
        ("", ()),
    ],
)
def test_team_urls(value: str | list[str] | None, urls: tuple[str, ...]) -> None:
    assert team_urls(value) == urls


@pytest.mark.parametrize(
    "value", [42, ["http://a/v1", 3], "ftp://a/v1", "http://", {"url": "x"}, "http://h:port/v1"]
)
def test_a_bad_team_url_is_one_problem_and_keeps_the_default(value: object) -> None:
    settings, problems = load_settings({"team": {"url": value, "maxTokens": 99}})
    assert len(problems) == 1 and problems[0].startswith("team.url"), problems
    assert settings.team.url is None and settings.team.max_tokens == 99


def test_a_url_with_credentials_is_never_echoed() -> None:
    _, problems = load_settings({"team": {"url": "ftp://bob:hunter2@a/v1"}})
    assert problems and "hunter2" not in problems[0]
    assert shown_url("https://bob:hunter2@a:1/v1?x=1") == "https://a:1/v1?x=1"


class InOrder(random.Random):
    """Ties in the replicas' own order (the router's order is random otherwise)."""

    def sample(self, population, k, *, counts=None):  # type: ignore[no-untyped-def,override]
        return list(population)[:k]


def client(handlers: dict[str, object], retries: int = 1) -> TeamClient:
    """A client over fake replicas "a" and "b": ``handlers[host]`` is a status to answer, or
    an exception to raise, or "ok"."""

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path in ("/metrics", "/health"):
            return httpx.Response(404)
        what = handlers[request.url.host]
        if isinstance(what, Exception):
            raise what
        if what == "ok":
            event = {"choices": [{"index": 0, "text": request.url.host, "finish_reason": "stop"}]}
            return httpx.Response(200, content=f"data: {json.dumps(event)}\n\n".encode())
        assert isinstance(what, int)
        return httpx.Response(what, headers={"retry-after": "0"}, json={"error": "x"})

    settings = TeamSettings(url=["http://a/v1", "http://b/v1"], model="m", retries=retries)
    return TeamClient(settings, transport=httpx.MockTransport(answer), rng=InOrder(0))


async def comes_back(replica: Replica) -> bool:
    """Whether the background probe marks the replica healthy within 5 s."""
    for _ in range(100):
        if replica.healthy:
            return True
        await asyncio.sleep(0.05)
    return replica.healthy


@pytest.mark.parametrize(
    "failure", [httpx.ConnectError("refused"), 503, 502, httpx.RemoteProtocolError("gone")]
)
async def test_failover_before_the_first_byte_marks_the_replica_down(failure: object) -> None:
    team = client({"a": failure, "b": "ok"})
    try:
        assert (await team.completion("p", 5)).text == "b"
        a, b = team.replicas
        assert not a.healthy and a.failures == 1 and b.healthy and b.requests == 1
        assert (await team.completion("p", 5)).text == "b"  # a stays out while down
        assert a.requests == 1
    finally:
        await team.aclose()


async def test_429_tries_another_replica_without_marking_it_down() -> None:
    team = client({"a": 429, "b": "ok"})
    try:
        assert (await team.completion("p", 5)).text == "b"
        assert team.replicas[0].healthy
    finally:
        await team.aclose()


async def test_errors_after_the_request_was_served_are_not_retried_elsewhere() -> None:
    team = client({"a": 500, "b": "ok"})
    try:
        with pytest.raises(TeamError) as error:
            await team.completion("p", 5)
        assert "HTTP 500" in str(error.value) and team.replicas[1].requests == 0
    finally:
        await team.aclose()


async def test_a_down_replica_is_probed_and_comes_back() -> None:
    handlers: dict[str, object] = {"a": httpx.ConnectError("refused"), "b": "ok"}
    team = client(handlers)
    try:
        await team.completion("p", 5)
        a = team.replicas[0]
        assert not a.healthy
        handlers["a"] = "ok"  # it restarted; the probe (/health, then /v1/models) finds it
        assert await comes_back(a)
    finally:
        await team.aclose()


async def test_every_replica_down_is_an_error_after_the_retries() -> None:
    team = client({"a": httpx.ConnectError("refused"), "b": 503}, retries=1)
    try:
        with pytest.raises(TeamError) as error:
            await team.completion("p", 5)
        assert error.value.kind in ("unreachable", "overloaded")
        assert [r.requests for r in team.replicas] == [2, 2]  # two rounds of both
    finally:
        await team.aclose()


async def test_gauges_from_metrics_steer_requests() -> None:
    """A replica whose vLLM queue is long gets no new work while another is idle."""
    metrics = {
        "a": 'vllm:num_requests_waiting{model_name="m"} 6.0\nvllm:num_requests_running 8.0\n',
        "b": "vllm:num_requests_waiting 0.0\nvllm:num_requests_running 1.0\n",
    }
    hosts: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/metrics":
            return httpx.Response(200, text=metrics[request.url.host])
        hosts.append(request.url.host)
        event = {"choices": [{"index": 0, "text": "x", "finish_reason": "stop"}]}
        return httpx.Response(200, content=f"data: {json.dumps(event)}\n\n".encode())

    settings = TeamSettings(url=["http://a/v1", "http://b/v1"], model="m")
    team = TeamClient(settings, transport=httpx.MockTransport(answer), rng=InOrder(0))
    try:
        await team.completion("p", 5)  # the first request starts the polls
        await asyncio.sleep(0.1)
        hosts.clear()
        for _ in range(3):
            await team.completion("p", 5)
        assert hosts == ["b", "b", "b"]
        assert team.replicas[0].waiting == 6.0 and team.replicas[0].running == 8.0
    finally:
        await team.aclose()


def test_editors_that_know_only_their_own_requests_spread_over_the_replicas() -> None:
    """Without /metrics every idle editor sees the same loads: the random order decides."""
    rng = random.Random(14)
    picks = [pick([load(), load()], order=rng.sample(range(2), 2)) for _ in range(400)]
    assert 150 < picks.count(0) < 250


async def test_invoked_completions_get_priority_0_and_refactors_10() -> None:
    """Where vLLM schedules by priority (lower first), interactive work runs first."""
    from lsp_infer.config import CompletionSettings
    from lsp_infer.core.cancel import CancelToken
    from lsp_infer.core.engine import CompletionEngine
    from lsp_infer.team.http_client import Clients
    from lsp_infer.team.invoked_completions import TeamCompletionBackend
    from lsp_infer.team.refactor import Refactorer, RefactorJob

    priorities: dict[str, int | None] = {}

    def answer(request: httpx.Request) -> httpx.Response:
        if request.method != "POST":
            return httpx.Response(404)
        body = json.loads(request.content)
        kind = "refactor" if "messages" in body else "completion"
        priorities[kind] = body.get("priority")
        text = "```python\nx = 2\n```" if kind == "refactor" else "a + b"
        delta = {"delta": {"content": text}} if kind == "refactor" else {"text": text}
        event = {"choices": [{"index": 0, **delta, "finish_reason": "stop"}]}
        return httpx.Response(200, content=f"data: {json.dumps(event)}\n\n".encode())

    settings = TeamSettings(url="http://a/v1", model="m", priority=True, max_model_len=4096)
    clients = Clients(lambda s: TeamClient(s, transport=httpx.MockTransport(answer)))
    try:
        job = RefactorJob("file:///w/a.py", 1, "a.py", "python", "x = 1\n", "change it")
        assert (await Refactorer(clients).compute(job, settings)).status == "applied"
        backend = TeamCompletionBackend(clients.get(settings), "qwen")
        text = "def add(a, b):\n    return "
        engine = CompletionEngine(backend)
        await engine.complete(text, len(text), CompletionSettings(), CancelToken())
        assert priorities == {"refactor": 10, "completion": 0}
    finally:
        await clients.aclose()


async def test_a_busy_replica_is_up_even_when_its_probe_times_out() -> None:
    """llama.cpp's server answers /v1/models only between generations: a probe that got its
    connection but no answer in time found a busy replica, not a dead one."""
    handlers: dict[str, object] = {"a": httpx.ConnectError("refused"), "b": "ok"}
    team = client(handlers)
    try:
        await team.completion("p", 5)
        a = team.replicas[0]
        assert not a.healthy
        handlers["a"] = httpx.ReadTimeout("busy generating")
        assert await comes_back(a)
    finally:
        await team.aclose()


class CutStream(httpx.AsyncByteStream):
    """Half an answer, then the connection drops."""

    async def __aiter__(self):  # type: ignore[no-untyped-def,override]
        yield b'data: {"choices": [{"index": 0, "text": "half"}]}\n\n'
        raise httpx.RemoteProtocolError("peer closed connection")


async def test_a_stream_cut_mid_answer_is_not_retried_but_the_replica_is_probed() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path in ("/metrics", "/health"):
            return httpx.Response(404)
        if request.url.host == "b":
            raise AssertionError("nothing is retried once part of the answer came")
        return httpx.Response(200, stream=CutStream())

    settings = TeamSettings(url=["http://a/v1", "http://b/v1"], model="m")
    team = TeamClient(settings, transport=httpx.MockTransport(answer), rng=InOrder(0))
    try:
        with pytest.raises(TeamError) as error:
            await team.completion("p", 5)
        assert error.value.kind == "incomplete" and not team.replicas[0].healthy
    finally:
        await team.aclose()
