"""The team client against vLLM's documented request/response shapes (contract tests).

vLLM cannot run on these machines; these tests pin the shapes it documents for the OpenAI-
compatible API: the `priority` field (and its refusal without priority scheduling), the
`user` field, server-sent events with `stream_options.include_usage`, `finish_reason`,
Bearer auth, /v1/models' `max_model_len` and /metrics. The real-server tests are in
tests/team (llama-cpp-python's OpenAI-compatible server on loopback).
"""

from __future__ import annotations

import getpass
import json
import random
from collections.abc import Callable

import httpx
import pytest

from lsp_infer.config import TeamSettings
from lsp_infer.team.http_client import TeamClient, TeamError, os_user

Handler = Callable[[httpx.Request], httpx.Response]


def client(handler: Handler, *, probes: bool = False, **settings) -> TeamClient:
    """A client whose requests ``handler`` answers; unless ``probes``, the router's own
    /metrics polls and /health probes are answered 404 before they reach it."""
    settings.setdefault("url", "http://team:8000/v1")

    def answer(request: httpx.Request) -> httpx.Response:
        if not probes and request.url.path in ("/metrics", "/health"):
            return httpx.Response(404)
        return handler(request)

    team = TeamSettings(api_key="sk-test", model="coder", **settings)
    return TeamClient(team, transport=httpx.MockTransport(answer), rng=random.Random(0))


def sse(*events: object, done: bool = True) -> bytes:
    lines = [f"data: {json.dumps(e)}\n\n" for e in events]
    if done:
        lines.append("data: [DONE]\n\n")
    return "".join(lines).encode()


def done(text: str = "x") -> httpx.Response:
    return httpx.Response(
        200,
        content=sse({"choices": [{"index": 0, "text": text, "finish_reason": "stop"}]}),
        headers={"content-type": "text/event-stream"},
    )


async def test_a_request_streams_asks_for_usage_and_names_the_user() -> None:
    bodies: list[dict] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        assert request.headers["authorization"] == "Bearer sk-test"
        return done()

    await client(handler, user="alice").completion("p", 5)
    await client(handler, user="").completion("p", 5)
    first, second = bodies
    assert first["stream"] is True and first["stream_options"] == {"include_usage": True}
    assert first["user"] == "alice" and "user" not in second
    assert first["max_tokens"] == 5 and "priority" not in first


def test_the_user_defaults_to_the_os_user_name() -> None:
    assert os_user(None) == getpass.getuser()
    assert os_user("bob") == "bob" and os_user("") is None


async def test_priority_is_sent_only_when_enabled() -> None:
    bodies: list[dict] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return done()

    await client(handler, priority=True).completion("p", 5, priority=10)
    await client(handler, priority=False).completion("p", 5, priority=10)
    assert bodies[0]["priority"] == 10 and "priority" not in bodies[1]


async def test_a_server_without_priority_scheduling_gets_the_request_without_it() -> None:
    bodies: list[dict] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        bodies.append(body)
        if "priority" in body:  # vLLM without --scheduling-policy priority
            return httpx.Response(400, json={"message": "Got priority 0 but Priority "
                                             "scheduling is not enabled."})  # fmt: skip
        return done("ok")

    team = client(handler, priority=True)
    assert team.replicas[0].as_json()["acceptsPriority"] is True
    assert (await team.completion("p", 5, priority=0)).text == "ok"
    assert (await team.completion("p", 5, priority=0)).text == "ok"
    assert ["priority" in b for b in bodies] == [True, False, False]  # asked once, then never
    assert team.replicas[0].as_json()["acceptsPriority"] is False  # the stats say so


async def test_chat_stream_is_assembled() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        assert body["stream"] is True and body["max_tokens"] == 50 and body["temperature"] == 0
        return httpx.Response(200, content=sse(
            {"choices": [{"index": 0, "delta": {"role": "assistant"}}]},
            {"choices": [{"index": 0, "delta": {"content": "```py\n"}}]},
            {"choices": [{"index": 0, "delta": {"content": "x = 1\n```"}, "finish_reason": None}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        ), headers={"content-type": "text/event-stream"})  # fmt: skip

    pieces: list[str] = []
    answer = await client(handler).chat(
        [{"role": "user", "content": "hi"}], 50, on_text=pieces.append
    )
    assert answer.text == "```py\nx = 1\n```" and answer.finish_reason == "stop"
    assert pieces == ["```py\n", "x = 1\n```"]


async def test_a_stream_cut_midway_is_an_error_not_an_answer() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, content=sse({"choices": [{"index": 0, "text": "half"}]}, done=False)
        )

    with pytest.raises(TeamError) as error:
        await client(handler).completion("p", 10)
    assert error.value.kind == "incomplete"


async def test_malformed_event() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=b"data: {not json\n\n")

    with pytest.raises(TeamError) as error:
        await client(handler).completion("p", 10)
    assert error.value.kind == "bad_response"


async def test_429_is_retried_after_retry_after() -> None:
    calls = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        if calls == 1:
            return httpx.Response(429, headers={"retry-after": "0"}, json={"error": "busy"})
        return httpx.Response(200, json={"data": [{"id": "coder", "object": "model"}]})

    assert await client(handler).models() == ["coder"]
    assert calls == 2


async def test_overloaded_after_retries_run_out() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(503, headers={"retry-after": "0"})

    with pytest.raises(TeamError) as error:
        await client(handler, retries=1).models()
    assert error.value.kind == "overloaded" and "overloaded" in str(error.value)


async def test_401_says_what_to_do_and_never_shows_the_key() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(401, json={"error": "Unauthorized"})

    with pytest.raises(TeamError) as error:
        await client(handler).models()
    assert error.value.kind == "unauthorized" and "team.apiKey" in str(error.value)
    assert "sk-test" not in str(error.value)


async def test_connection_refused_is_retried_then_unreachable() -> None:
    calls = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        raise httpx.ConnectError("connection refused", request=request)

    with pytest.raises(TeamError) as error:
        await client(handler, retries=2).models()
    assert error.value.kind == "unreachable" and calls >= 3  # 3 attempts (+ probes)


async def test_health_reads_vllm_gauges() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/models":
            return httpx.Response(200, json={"object": "list", "data": [{"id": "coder"}]})
        if request.url.path == "/health":
            return httpx.Response(200)
        if request.url.path == "/metrics":
            return httpx.Response(
                200,
                text='vllm:num_requests_running{model_name="coder"} 2.0\n'
                'vllm:num_requests_waiting{model_name="coder"} 5.0\n',
            )
        return httpx.Response(404)

    [health] = await client(handler, probes=True).health()
    assert (
        health.ok
        and health.models == ("coder",)
        and health.running == 2.0
        and health.waiting == 5.0
    )
    assert health.engine is None and health.priority is None  # no /version, 404 on a request


@pytest.mark.parametrize(
    ("status", "text", "priority"),
    [(200, "", True), (400, "priority not supported by fcfs", False), (500, "boom", None)],
)
async def test_health_names_the_engine_and_whether_it_takes_priorities(
    status: int, text: str, priority: bool | None
) -> None:
    asked: list[dict] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/models":
            return httpx.Response(200, json={"object": "list", "data": [{"id": "coder"}]})
        if request.url.path == "/version":
            return httpx.Response(200, json={"version": "0.32.0"})
        if request.url.path == "/v1/completions":
            asked.append(json.loads(request.content))
            return httpx.Response(status, text=text or "{}")
        return httpx.Response(404)

    [health] = await client(handler, probes=True).health()
    assert health.engine == "vLLM 0.32.0" and health.priority is priority
    assert asked == [{"model": "coder", "prompt": "#", "max_tokens": 1, "priority": 10}]


async def test_at_most_four_stop_sequences_are_sent_and_the_rest_cut_here() -> None:
    """The OpenAI API's limit; vllm-router refuses a fifth with a 400."""
    bodies: list[dict] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return done("x = 1<|im_end|>junk")

    stops = ["<|fim_pad|>", "<|file_sep|>", "<|repo_name|>", "<|endoftext|>", "<|im_end|>"]
    answer = await client(handler).completion("p", 8, stop=stops)
    assert bodies[0]["stop"] == stops[:4]
    assert answer.text == "x = 1" and answer.finish_reason == "stop"
    answer = await client(handler).completion("p", 8, stop=stops[:2])
    assert answer.text == "x = 1<|im_end|>junk"  # what the server sent, when it had every stop


async def test_log_probabilities_are_read_and_the_stream_closed_once_enough_came() -> None:
    """vLLM's completions stream with ``logprobs``: each event's tokens and their
    log-probabilities; ``until`` closes the stream without waiting for the rest."""
    bodies: list[dict] = []
    pieces = [("    x", -0.1), (" = 1", -0.2), ("\n", -0.05), ("never read", -1.0)]

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        events = [{"choices": [{"index": 0, "text": text, "finish_reason": None,
                                "logprobs": {"tokens": [text], "token_logprobs": [value]}}]}
                  for text, value in pieces]  # fmt: skip
        return httpx.Response(200, content=sse(*events, done=False),
                              headers={"content-type": "text/event-stream"})  # fmt: skip

    answer = await client(handler).completion("p", 8, logprobs=True,
                                              until=lambda text: "\n" in text)  # fmt: skip
    assert bodies[0]["logprobs"] == 1
    assert answer.text == "    x = 1\n" and answer.finish_reason == "until"
    assert answer.token_logprobs == (("    x", -0.1), (" = 1", -0.2), ("\n", -0.05))
    # Without ``until``, a stream that ends without a finish_reason is still an error.
    with pytest.raises(TeamError):
        await client(handler).completion("p", 8, logprobs=True)


async def test_not_configured() -> None:
    with pytest.raises(TeamError) as error:
        TeamClient(TeamSettings())
    assert error.value.kind == "not_configured" and "team.url" in str(error.value)


@pytest.mark.parametrize(
    "error",
    [
        httpx.WriteError("broken pipe"),
        httpx.RemoteProtocolError("server disconnected"),
        httpx.UnsupportedProtocol("no such scheme"),
    ],
)
async def test_any_http_error_is_a_team_error(error: httpx.HTTPError) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        error.request = request
        raise error

    with pytest.raises(TeamError):
        await client(handler, retries=0).completion("p", 5)
