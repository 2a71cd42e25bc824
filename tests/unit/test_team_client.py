"""The team client against vLLM's documented request/response shapes (contract tests).

vLLM cannot run on these machines; these tests pin the shapes it documents for the OpenAI-
compatible API: list prompts in /v1/completions (answers by `index`), the `priority` field,
server-sent events, `finish_reason`, Bearer auth and /metrics. The real-server tests are in
tests/team (llama-cpp-python's OpenAI-compatible server on loopback).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable

import httpx
import pytest

from lsp_infer.config import TeamSettings
from lsp_infer.team.client import TeamClient, TeamError

Handler = Callable[[httpx.Request], httpx.Response]


def client(handler: Handler, **settings) -> TeamClient:
    team = TeamSettings(url="http://team:8000/v1", api_key="sk-test", model="coder", **settings)
    return TeamClient(team, transport=httpx.MockTransport(handler), rng=random.Random(0))


def sse(*events: object, done: bool = True) -> bytes:
    lines = [f"data: {json.dumps(e)}\n\n" for e in events]
    if done:
        lines.append("data: [DONE]\n\n")
    return "".join(lines).encode()


async def test_list_prompts_are_one_request_and_answers_follow_index() -> None:
    seen: list[dict] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body)
        assert request.headers["authorization"] == "Bearer sk-test"
        # vLLM answers a list of prompts with one choice per prompt, each with its index.
        return httpx.Response(200, json={
            "id": "cmpl-1", "object": "text_completion", "model": "coder",
            "choices": [
                {"index": 1, "text": "second", "finish_reason": "stop", "logprobs": None},
                {"index": 0, "text": "first", "finish_reason": "length", "logprobs": None},
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14},
        })  # fmt: skip

    answers = await client(handler).completion_batch(["p0", "p1"], 100)
    assert [a.text for a in answers] == ["first", "second"]
    assert answers[0].finish_reason == "length"
    assert seen[0]["prompt"] == ["p0", "p1"] and seen[0]["max_tokens"] == 100
    assert "priority" not in seen[0]


async def test_priority_is_sent_only_when_enabled() -> None:
    bodies: list[dict] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(
            200, json={"choices": [{"index": 0, "text": "x", "finish_reason": "stop"}]}
        )

    await client(handler, priority=True).completion_batch(["p"], 5, priority=10)
    await client(handler, priority=False).completion_batch(["p"], 5, priority=10)
    assert bodies[0]["priority"] == 10 and "priority" not in bodies[1]


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
    assert error.value.kind == "unreachable" and calls == 3


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

    health = await client(handler).health()
    assert (
        health.ok
        and health.models == ("coder",)
        and health.running == 2.0
        and health.waiting == 5.0
    )


async def test_not_configured() -> None:
    with pytest.raises(TeamError) as error:
        TeamClient(TeamSettings())
    assert error.value.kind == "not_configured" and "team.url" in str(error.value)
