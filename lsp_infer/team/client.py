"""A client for the team's OpenAI-compatible server (vLLM, or anything speaking the same API).

* Streams answers (server-sent events), so closing the request is the cancel: vLLM aborts a
  generation when its client disconnects.
* Retries only what is safe to retry: connection failures and 429/503 (honouring
  Retry-After), with exponential backoff and jitter. A stream that broke after data arrived is
  never retried blindly: the caller gets an error and decides.
* Every failure is a :class:`TeamError` whose message says what happened and what to do.
  Messages never contain the API key (it only ever travels in the Authorization header).
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import random
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from lsp_infer.config import TeamSettings

log = logging.getLogger(__name__)

ErrorKind = Literal[
    "not_configured",
    "unreachable",
    "unauthorized",
    "overloaded",
    "timeout",
    "server_error",
    "bad_response",
    "incomplete",
]

_RETRY_STATUSES = (429, 503)
_MAX_RETRY_AFTER = 30.0


class TeamError(Exception):
    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class TeamAnswer:
    text: str
    finish_reason: str | None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@dataclass(frozen=True)
class Health:
    ok: bool
    detail: str
    models: tuple[str, ...] = ()
    running: float | None = None  # vllm:num_requests_running
    waiting: float | None = None  # vllm:num_requests_waiting


def retry_delay(
    attempt: int, retry_after: str | None, rng: random.Random, base: float = 0.5
) -> float:
    """Seconds to wait before retry number ``attempt`` (1-based): the server's Retry-After
    (seconds or an HTTP date) when it sent one, else exponential backoff with full jitter."""
    seconds = _retry_after_seconds(retry_after) if retry_after else None
    if seconds is not None:
        return min(_MAX_RETRY_AFTER, max(0.0, seconds))
    return rng.uniform(0, base * 2 ** (attempt - 1))


def _retry_after_seconds(value: str) -> float | None:
    """Retry-After as seconds from now; None when unreadable."""
    try:
        return float(value)
    except ValueError:
        pass
    try:
        return email.utils.parsedate_to_datetime(value).timestamp() - time.time()
    except (TypeError, ValueError):
        return None


def parse_metrics(text: str) -> dict[str, float]:
    """The vLLM gauges we use, summed over label sets, from Prometheus text format."""
    wanted = ("vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc")
    values: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in wanted:
            try:
                values[name] = values.get(name, 0.0) + float(line.rsplit(" ", 1)[1])
            except ValueError:
                continue
    return values


def _status_error(status: int, body: str) -> TeamError:
    excerpt = " ".join(body.split())[:200]
    if status in (401, 403):
        return TeamError(
            "unauthorized",
            f"the team server refused the API key (HTTP {status}); set team.apiKey "
            "(or LSP_INFER_TEAM_API_KEY) to the server's key",
        )
    if status in _RETRY_STATUSES:
        return TeamError(
            "overloaded", f"the team server is overloaded (HTTP {status}); try again in a while"
        )
    if status == 404:
        return TeamError(
            "server_error",
            f"HTTP 404 from the team server: check team.url (it should end in /v1) and "
            f"team.model ({excerpt})",
        )
    return TeamError("server_error", f"HTTP {status} from the team server: {excerpt}")


class TeamClient:
    def __init__(
        self,
        settings: TeamSettings,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        rng: random.Random | None = None,
    ) -> None:
        if not settings.url:
            raise TeamError(
                "not_configured",
                "no team server is configured: set team.url (or LSP_INFER_TEAM_URL), e.g. "
                "http://gpu-box:8000/v1",
            )
        self.settings = settings
        self.base = settings.url.rstrip("/")
        # /health and /metrics live beside /v1, not under it.
        self.root = self.base[: -len("/v1")] if self.base.endswith("/v1") else self.base
        headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
        self._http = httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(
                settings.timeout_ms / 1000, connect=settings.connect_timeout_ms / 1000
            ),
            verify=settings.verify_tls,
            transport=transport,
        )
        self._rng = rng or random.Random()
        self._model: str | None = settings.model

    async def aclose(self) -> None:
        await self._http.aclose()

    # -- requests with retries --------------------------------------------------------

    async def _send(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        """One request (not streamed), retried on connection errors and 429/503."""
        attempt = 0
        while True:
            attempt += 1
            try:
                response = await self._http.request(method, url, **kwargs)
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                if attempt > self.settings.retries:
                    raise self._unreachable(exc) from None
                await asyncio.sleep(retry_delay(attempt, None, self._rng))
                continue
            except httpx.TimeoutException:
                raise self._timeout() from None
            except httpx.HTTPError as exc:
                raise TeamError(
                    "unreachable", f"the team server connection failed: {exc}"
                ) from None
            if response.status_code in _RETRY_STATUSES and attempt <= self.settings.retries:
                await asyncio.sleep(
                    retry_delay(attempt, response.headers.get("retry-after"), self._rng)
                )
                continue
            if response.status_code >= 400:
                raise _status_error(response.status_code, response.text)
            return response

    async def _stream_lines(self, url: str, body: dict[str, Any]) -> AsyncIterator[str]:
        """The data lines of a server-sent-event stream. Retried like _send until the first
        byte of a 200 answer arrives, never after."""
        attempt = 0
        while True:
            attempt += 1
            try:
                async with self._http.stream("POST", url, json=body) as response:
                    if response.status_code in _RETRY_STATUSES and attempt <= self.settings.retries:
                        delay = retry_delay(attempt, response.headers.get("retry-after"), self._rng)
                        await asyncio.sleep(delay)
                        continue
                    if response.status_code >= 400:
                        raise _status_error(response.status_code, (await response.aread()).decode(
                            "utf-8", "replace"))  # fmt: skip
                    async for line in response.aiter_lines():
                        if line.startswith("data:"):
                            yield line[5:].strip()
                    return
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                if attempt > self.settings.retries:
                    raise self._unreachable(exc) from None
                await asyncio.sleep(retry_delay(attempt, None, self._rng))
            except httpx.TimeoutException:
                raise self._timeout() from None
            except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
                raise self._cut(exc) from None

    def _unreachable(self, exc: Exception) -> TeamError:
        return TeamError(
            "unreachable",
            f"cannot connect to the team server at {self.base} ({type(exc).__name__}); is it "
            "running? Check team.url",
        )

    @staticmethod
    def _cut(exc: Exception) -> TeamError:
        return TeamError("incomplete", f"the team server closed the connection mid-answer ({exc})")

    def _timeout(self) -> TeamError:
        return TeamError(
            "timeout",
            f"the team server did not answer within {self.settings.timeout_ms / 1000:.0f} s; "
            "raise team.timeoutMs or try a smaller batch",
        )

    # -- API ------------------------------------------------------------------------------

    async def model(self) -> str:
        """team.model, or the first model the server lists."""
        if self._model:
            return self._model
        models = await self.models()
        if not models:
            raise TeamError("bad_response", "the team server lists no models at /v1/models")
        self._model = models[0]
        return self._model

    async def models(self) -> list[str]:
        response = await self._send("GET", f"{self.base}/models")
        data = self._json(response)
        try:
            return [str(item["id"]) for item in data["data"]]
        except (KeyError, TypeError) as exc:
            raise TeamError("bad_response", f"unexpected /v1/models answer ({exc})") from None

    async def chat(
        self,
        messages: list[dict[str, str]],
        max_tokens: int,
        *,
        priority: int | None = None,
        on_text: Callable[[str], None] | None = None,
    ) -> TeamAnswer:
        body: dict[str, Any] = {
            "model": await self.model(),
            "messages": messages,
            "max_tokens": max_tokens,  # vLLM's default is 16: always set it
            "temperature": 0,
            "stream": True,
        }
        self._add_priority(body, priority)
        return await self._streamed(f"{self.base}/chat/completions", body, on_text, chat=True)

    async def completion(
        self,
        prompt: str,
        max_tokens: int,
        *,
        stop: list[str] | None = None,
        priority: int | None = None,
        on_text: Callable[[str], None] | None = None,
    ) -> TeamAnswer:
        body: dict[str, Any] = {
            "model": await self.model(),
            "prompt": prompt,
            "max_tokens": max_tokens,
            "temperature": 0,
            "stream": True,
        }
        if stop:
            body["stop"] = stop
        self._add_priority(body, priority)
        return await self._streamed(f"{self.base}/completions", body, on_text, chat=False)

    async def completion_batch(
        self, prompts: list[str], max_tokens: int, *, priority: int | None = None
    ) -> list[TeamAnswer]:
        """Several prompts in one request (vLLM: one engine request each, batched together).
        Not streamed; answers come back in prompt order (by each choice's index)."""
        body: dict[str, Any] = {
            "model": await self.model(),
            "prompt": prompts,
            "max_tokens": max_tokens,
            "temperature": 0,
        }
        self._add_priority(body, priority)
        data = self._json(await self._send("POST", f"{self.base}/completions", json=body))
        try:
            choices = sorted(data["choices"], key=lambda c: int(c.get("index", 0)))
            answers = [TeamAnswer(str(c["text"]), c.get("finish_reason")) for c in choices]
        except (KeyError, TypeError, ValueError) as exc:
            raise TeamError("bad_response", f"unexpected /v1/completions answer ({exc})") from None
        if len(answers) != len(prompts):
            raise TeamError(
                "bad_response", f"sent {len(prompts)} prompts, got {len(answers)} answers"
            )
        return answers

    def _add_priority(self, body: dict[str, Any], priority: int | None) -> None:
        if self.settings.priority and priority is not None:
            body["priority"] = priority  # lower runs earlier (vLLM, --scheduling-policy priority)

    async def _streamed(
        self,
        url: str,
        body: dict[str, Any],
        on_text: Callable[[str], None] | None,
        *,
        chat: bool,
    ) -> TeamAnswer:
        parts: list[str] = []
        finish: str | None = None
        usage: dict[str, Any] = {}
        async for data in self._stream_lines(url, body):
            if data == "[DONE]":
                break
            try:
                chunk = json.loads(data)
            except json.JSONDecodeError:
                raise TeamError(
                    "bad_response", "the team server sent a malformed event (not JSON)"
                ) from None
            if not isinstance(chunk, dict):
                raise TeamError("bad_response", "the team server sent an unexpected event")
            if chunk.get("error"):
                message = chunk["error"].get("message") if isinstance(chunk["error"], dict) else ""
                raise TeamError("server_error", f"the team server reported an error: {message}")
            usage = chunk.get("usage") or usage
            for choice in chunk.get("choices") or []:
                piece = (choice.get("delta") or {}).get("content") if chat else choice.get("text")
                if piece:
                    parts.append(piece)
                    if on_text:
                        on_text(piece)
                finish = choice.get("finish_reason") or finish
        if finish is None:
            # vLLM always ends with a finish_reason; a stream without one was cut short (or
            # interrupted by the server), whatever else it sent.
            raise TeamError(
                "incomplete", "the team server ended the stream before the answer was finished"
            )
        return TeamAnswer(
            "".join(parts), finish, usage.get("prompt_tokens"), usage.get("completion_tokens")
        )

    @staticmethod
    def _json(response: httpx.Response) -> Any:
        try:
            return response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise TeamError("bad_response", "the team server's answer was not valid JSON") from None

    async def health(self) -> Health:
        """Reachable, authorized and serving? Plus load from vLLM's /metrics when it has them."""
        try:
            models = await self.models()
        except TeamError as exc:
            return Health(False, str(exc))
        detail = "ok"
        try:
            response = await self._http.get(f"{self.root}/health")
            if response.status_code >= 500:
                return Health(
                    False, f"the team server reports it is unhealthy (HTTP {response.status_code})"
                )
        except httpx.HTTPError:
            detail = "ok (no /health endpoint)"
        running = waiting = None
        try:
            response = await self._http.get(f"{self.root}/metrics")
            if response.status_code == 200:
                gauges = parse_metrics(response.text)
                running = gauges.get("vllm:num_requests_running")
                waiting = gauges.get("vllm:num_requests_waiting")
        except httpx.HTTPError:
            pass
        return Health(True, detail, tuple(models), running, waiting)
