"""A client for the team's OpenAI-compatible servers (vLLM, or anything speaking the same API).

* Streams answers (server-sent events), so closing the request is the cancel: vLLM aborts a
  generation when its client disconnects. Streams ask for usage (``stream_options``).
* Every request goes through the router (router.py): one of the replicas in team.url, with
  failover and retries only before any of the answer arrived.
* Sends the OpenAI ``user`` field (team.user, default the OS user name), and vLLM's
  ``priority`` when team.priority is on and the replica accepts it (a replica that refuses
  it gets the request again without it, and never again with it).
* Every failure is a :class:`TeamError` whose message says what happened and what to do.
  Messages never contain the API key (it only ever travels in the Authorization header) or
  a URL's credentials.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import getpass
import json
import logging
import random
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import httpx

from lsp_infer.config import TeamSettings
from lsp_infer.team.errors import (
    ErrorKind,
    TeamError,
    parse_metrics,
    retry_delay,
    status_error,
)
from lsp_infer.team.replicas import Registry, Replica
from lsp_infer.team.router import Router

log = logging.getLogger(__name__)

__all__ = [
    "Clients", "ErrorKind", "Health", "TeamAnswer", "TeamClient", "TeamError",
    "parse_metrics", "retry_delay",
]  # fmt: skip


@dataclass(frozen=True)
class TeamAnswer:
    text: str
    finish_reason: str | None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    # Each generated token's text and log-probability, when they were asked for (the
    # completions API's ``logprobs``); None where the server gave none for a token.
    token_logprobs: tuple[tuple[str, float | None], ...] = ()


@dataclass(frozen=True)
class Health:
    """One replica, as ``doctor`` reports it."""

    url: str  # without credentials
    ok: bool
    detail: str
    models: tuple[str, ...] = ()
    running: float | None = None  # vllm:num_requests_running
    waiting: float | None = None  # vllm:num_requests_waiting
    max_model_len: int | None = None
    engine: str | None = None  # "vLLM 0.32.0" from /version; None where there is none
    priority: bool | None = None  # a request with a priority accepted (None: not asked)


MAX_STOP_SEQUENCES = 4


def cut_at_stops(answer: TeamAnswer, stops: list[str]) -> TeamAnswer:
    """The answer up to the first of ``stops`` (the server stopped at the others)."""
    ends = [index for stop in stops if (index := answer.text.find(stop)) >= 0]
    if not ends:
        return answer
    return dataclasses.replace(answer, text=answer.text[: min(ends)], finish_reason="stop")


class _PriorityRefused(Exception):
    pass


class _Answer:
    """A streamed answer assembled from its events."""

    def __init__(self, chat: bool) -> None:
        self.chat = chat
        self.parts: list[str] = []
        self.finish: str | None = None
        self.usage: dict[str, Any] = {}
        self.token_logprobs: list[tuple[str, float | None]] = []

    def feed(self, data: str) -> str | None:
        """One event's data; the text it adds, if any."""
        try:
            chunk = json.loads(data)
        except json.JSONDecodeError:
            raise TeamError(
                "bad_response", "the team server sent a malformed event (not JSON)"
            ) from None
        if not isinstance(chunk, dict):
            raise TeamError("bad_response", "the team server sent an unexpected event")
        if chunk.get("error"):
            error = chunk["error"]
            message = error.get("message") if isinstance(error, dict) else ""
            raise TeamError("server_error", f"the team server reported an error: {message}")
        self.usage = chunk.get("usage") or self.usage
        added = []
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            piece = delta.get("content") if self.chat else choice.get("text")
            if piece:
                self.parts.append(piece)
                added.append(piece)
            self.finish = choice.get("finish_reason") or self.finish
            self._logprobs(choice.get("logprobs"))
        return "".join(added) or None

    def _logprobs(self, logprobs: Any) -> None:
        """The completions API's per-token log-probabilities of one event (vLLM and
        llama.cpp's server both send ``tokens`` beside ``token_logprobs``)."""
        if not isinstance(logprobs, dict):
            return
        tokens, values = logprobs.get("tokens"), logprobs.get("token_logprobs")
        if not isinstance(tokens, list) or not isinstance(values, list):
            return
        for token, value in zip(tokens, values, strict=False):
            number = float(value) if isinstance(value, int | float) else None
            self.token_logprobs.append((str(token), number))

    def stopped_reading(self) -> None:
        """The client had what it needed (``until``) and closed the stream: complete."""
        self.finish = self.finish or "until"

    def result(self, got_data: bool) -> TeamAnswer:
        if self.finish is None:
            # vLLM always ends with a finish_reason; a stream without one was cut short (or
            # interrupted by the server), whatever else it sent.
            raise TeamError(
                "incomplete",
                "the team server ended the stream before the answer was finished",
                failover=not got_data,
            )
        usage = self.usage
        return TeamAnswer(
            "".join(self.parts), self.finish, usage.get("prompt_tokens"),
            usage.get("completion_tokens"), tuple(self.token_logprobs),
        )  # fmt: skip


def os_user(setting: str | None) -> str | None:
    """The OpenAI ``user`` field to send: team.user, else the OS user name; None: send none."""
    if setting is not None:
        return setting or None
    try:
        return getpass.getuser() or None
    except (KeyError, OSError):  # no user name for this uid
        return None


class TeamClient:
    def __init__(
        self,
        settings: TeamSettings,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        rng: random.Random | None = None,
        registry: Registry | None = None,
    ) -> None:
        urls = settings.urls()
        if not urls:
            raise TeamError(
                "not_configured",
                "no team server is configured: set team.url (or LSP_INFER_TEAM_URL), e.g. "
                "http://gpu-box:8000/v1",
            )
        self.settings = settings
        self.replicas = (registry or Registry()).get(list(urls))
        headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
        self._http = httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(
                settings.timeout_ms / 1000, connect=settings.connect_timeout_ms / 1000
            ),
            verify=settings.verify_tls,
            transport=transport,
        )
        self.router = Router(self.replicas, self._http, settings.retries, rng)
        self._model: str | None = settings.model
        self._cards: asyncio.Future[dict[str, dict[str, Any]]] | None = None
        self._user = os_user(settings.user)
        self._users = 0
        self._retired = False
        self._closing: asyncio.Future[None] | None = None

    # -- lifetime -----------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def lease(self) -> AsyncIterator[TeamClient]:
        """Use the client; one retired meanwhile is closed when its last user is done."""
        self._users += 1
        try:
            yield self
        finally:
            self._users -= 1
            if self._retired and self._users == 0:
                await self.aclose()

    def retire(self) -> None:
        """The settings changed: close once no request uses this client any more."""
        self._retired = True
        if self._users == 0 and self._closing is None:
            self._closing = asyncio.ensure_future(self.aclose())

    async def aclose(self) -> None:
        self.router.close()
        if self._cards is not None:
            self._cards.cancel()
        await self._http.aclose()

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
        return list(await self._model_cards())

    async def context_limit(self) -> int | None:
        """The model's context in tokens: team.maxModelLen, else what the server reports
        (vLLM: max_model_len in /v1/models); None when neither says."""
        if self.settings.max_model_len is not None:
            return self.settings.max_model_len
        try:
            card = (await self._model_cards()).get(await self.model(), {})
        except TeamError:
            return None  # the request itself will tell what is wrong
        limit = card.get("max_model_len")
        return limit if isinstance(limit, int) and limit > 0 else None

    async def _model_cards(self) -> dict[str, dict[str, Any]]:
        """/v1/models by model id, asked once (concurrent callers share the request; a
        failure is not kept)."""
        if self._cards is None or (self._cards.done() and self._cards.exception()):
            self._cards = asyncio.ensure_future(self._fetch_cards())
            self._cards.add_done_callback(lambda f: f.cancelled() or f.exception())
        return await asyncio.shield(self._cards)

    async def _fetch_cards(self) -> dict[str, dict[str, Any]]:
        data = await self.router.call(lambda replica: self._get_json(replica, "/models"))
        try:
            return {str(item["id"]): dict(item) for item in data["data"]}
        except (KeyError, TypeError, ValueError) as exc:
            raise TeamError("bad_response", f"unexpected /v1/models answer ({exc})") from None

    async def chat(
        self,
        messages: list[dict[str, str]],
        max_tokens: int,
        *,
        priority: int | None = None,
        affinity: str | None = None,
        on_text: Callable[[str], None] | None = None,
    ) -> TeamAnswer:
        body: dict[str, Any] = {
            "model": await self.model(),
            "messages": messages,
            "max_tokens": max_tokens,  # vLLM's default is 16: always set it
            "temperature": 0,
        }
        return await self.router.call(
            lambda replica: self._stream(replica, "/chat/completions", body, priority, on_text),
            affinity,
        )

    async def completion(
        self,
        prompt: str,
        max_tokens: int,
        *,
        stop: list[str] | None = None,
        priority: int | None = None,
        affinity: str | None = None,
        on_text: Callable[[str], None] | None = None,
        logprobs: bool = False,
        until: Callable[[str], bool] | None = None,
        keep_special_tokens: bool = False,
    ) -> TeamAnswer:
        """``prompt`` continued (greedy). ``logprobs``: with each token's log-probability;
        ``until``: the stream is closed (and the server stops) once it holds for the text so
        far, and the answer is what came until then (finish_reason "until");
        ``keep_special_tokens``: special tokens written into the text (vLLM's
        ``skip_special_tokens`` false; a server that does not know the field ignores it)."""
        body: dict[str, Any] = {
            "model": await self.model(),
            "prompt": prompt,
            "max_tokens": max_tokens,
            "temperature": 0,
        }
        if logprobs:
            body["logprobs"] = 1  # the chosen token's, and the one most likely (the same)
        if keep_special_tokens:
            body["skip_special_tokens"] = False
        if stop:
            # The OpenAI API takes at most 4 stop sequences, and gateways that check requests
            # against it refuse more (vllm-router: HTTP 400); the rest are cut here.
            body["stop"] = stop[:MAX_STOP_SEQUENCES]
        answer = await self.router.call(
            lambda replica: self._stream(replica, "/completions", body, priority, on_text, until),
            affinity,
        )
        return cut_at_stops(answer, stop[MAX_STOP_SEQUENCES:] if stop else [])

    # -- one attempt on one replica -------------------------------------------------------

    def _payload(
        self, replica: Replica, body: dict[str, Any], priority: int | None
    ) -> dict[str, Any]:
        payload = {**body, "stream": True, "stream_options": {"include_usage": True}}
        if self._user:
            payload["user"] = self._user
        if self.settings.priority and priority is not None and replica.takes_priority:
            payload["priority"] = priority  # lower runs earlier (--scheduling-policy priority)
        return payload

    async def _stream(
        self,
        replica: Replica,
        path: str,
        body: dict[str, Any],
        priority: int | None,
        on_text: Callable[[str], None] | None,
        until: Callable[[str], bool] | None = None,
    ) -> TeamAnswer:
        payload = self._payload(replica, body, priority)
        try:
            return await self._stream_once(replica, path, payload, on_text, until)
        except _PriorityRefused:
            log.warning(
                "team replica %s refuses the priority field (start vLLM with "
                "--scheduling-policy priority); sending without it",
                replica.shown,
            )
            replica.takes_priority = False
            payload.pop("priority", None)
            return await self._stream_once(replica, path, payload, on_text, until)

    async def _stream_once(
        self,
        replica: Replica,
        path: str,
        payload: dict[str, Any],
        on_text: Callable[[str], None] | None,
        until: Callable[[str], bool] | None = None,
    ) -> TeamAnswer:
        answer = _Answer(chat=path == "/chat/completions")
        got_data = False
        try:
            async with self._http.stream("POST", f"{replica.url}{path}", json=payload) as response:
                if response.status_code >= 400:
                    await self._refuse(response, payload)
                async for line in response.aiter_lines():
                    if not line.startswith("data:"):
                        continue
                    got_data = True
                    data = line[5:].strip()
                    if data == "[DONE]":
                        break
                    piece = answer.feed(data)
                    if piece and on_text:
                        on_text(piece)
                    if piece and until is not None and until("".join(answer.parts)):
                        answer.stopped_reading()  # leaving the block closes the request
                        break
        except (TeamError, _PriorityRefused):
            raise
        except Exception as exc:
            raise self._transport_error(replica, exc, got_data) from None
        return answer.result(got_data)

    @staticmethod
    async def _refuse(response: httpx.Response, payload: dict[str, Any]) -> None:
        text = (await response.aread()).decode("utf-8", "replace")
        if response.status_code == 400 and "priority" in payload and "priority" in text.lower():
            raise _PriorityRefused()
        raise status_error(response.status_code, text, response.headers.get("retry-after"))

    async def _get_json(self, replica: Replica, path: str) -> Any:
        try:
            response = await self._http.get(f"{replica.url}{path}")
        except Exception as exc:
            raise self._transport_error(replica, exc, got_data=False) from None
        if response.status_code >= 400:
            raise status_error(
                response.status_code, response.text, response.headers.get("retry-after")
            )
        try:
            return response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise TeamError("bad_response", "the team server's answer was not valid JSON") from None

    def _transport_error(self, replica: Replica, exc: Exception, got_data: bool) -> TeamError:
        """Any failure below HTTP (httpx's errors, a closed client) as a TeamError."""
        if isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout)):
            return TeamError(
                "unreachable",
                f"cannot connect to the team server at {replica.shown} ({type(exc).__name__}); "
                "is it running? Check team.url",
                failover=True,
                unavailable=True,
            )
        if isinstance(exc, httpx.TimeoutException):
            return TeamError(
                "timeout",
                f"the team server did not answer within {self.settings.timeout_ms / 1000:.0f} "
                "s; raise team.timeoutMs or try a smaller batch",
            )
        if got_data:  # not retried (part of the answer came); the replica may have died
            return TeamError(
                "incomplete",
                f"the team server closed the connection mid-answer ({exc})",
                unavailable=isinstance(exc, httpx.TransportError),
            )
        if isinstance(exc, httpx.HTTPError):
            # Nothing of the answer arrived: the replica went away (or never answered).
            return TeamError(
                "unreachable",
                f"the connection to the team server at {replica.shown} failed before it "
                f"answered ({type(exc).__name__}: {exc})",
                failover=True,
                unavailable=True,
            )
        log.warning("team request failed: %r", exc)  # e.g. a client closed meanwhile
        return TeamError("unreachable", f"the team request failed ({type(exc).__name__}: {exc})")

    # -- doctor ------------------------------------------------------------------------------

    async def health(self) -> list[Health]:
        """Each replica: reachable, authorized and serving? Plus vLLM's gauges and context."""
        return [await self._health(replica) for replica in self.replicas]

    async def _health(self, replica: Replica) -> Health:
        try:
            data = await self._get_json(replica, "/models")
            cards = [dict(item) for item in data["data"]]
        except TeamError as exc:
            return Health(replica.shown, False, str(exc))
        except (KeyError, TypeError, ValueError) as exc:
            return Health(replica.shown, False, f"unexpected /v1/models answer ({exc})")
        models = tuple(str(card.get("id")) for card in cards)
        limit = next(
            (c.get("max_model_len") for c in cards if isinstance(c.get("max_model_len"), int)), None
        )
        detail = "ok"
        try:
            response = await self._http.get(f"{replica.root}/health")
            if response.status_code >= 500:
                return Health(replica.shown, False, "it reports it is unhealthy "
                              f"(HTTP {response.status_code})", models)  # fmt: skip
        except httpx.HTTPError:
            detail = "ok (no /health endpoint)"
        gauges: dict[str, float] = {}
        with contextlib.suppress(httpx.HTTPError):
            response = await self._http.get(f"{replica.root}/metrics")
            gauges = parse_metrics(response.text) if response.status_code == 200 else {}
        return Health(
            replica.shown, True, detail, models, gauges.get("vllm:num_requests_running"),
            gauges.get("vllm:num_requests_waiting"), limit, await engine_of(self._http, replica),
            await takes_priority(self._http, replica, self.settings.model or models[0])
            if models else None,
        )  # fmt: skip


async def engine_of(http: httpx.AsyncClient, replica: Replica) -> str | None:
    """vLLM answers /version (beside /v1); llama.cpp's servers and most gateways do not."""
    with contextlib.suppress(httpx.HTTPError, ValueError, TypeError, AttributeError):
        response = await http.get(f"{replica.root}/version")
        if response.status_code == 200:
            return f"vLLM {response.json()['version']}"
    return None


async def takes_priority(http: httpx.AsyncClient, replica: Replica, model: str) -> bool | None:
    """One token asked with a refactor's priority: does the server accept the field? (vLLM
    orders by it only under --scheduling-policy priority and says nothing of its policy; older
    ones refused it with a 400 under the default policy.)"""
    body = {"model": model, "prompt": "#", "max_tokens": 1, "priority": 10}
    try:
        response = await http.post(f"{replica.url}/completions", json=body)
    except httpx.HTTPError:
        return None
    if response.status_code == 400 and "priority" in response.text.lower():
        return False
    return True if response.status_code == 200 else None


class Clients:
    """One client per team settings. A client replaced by a settings change is closed once
    its last request is done (closing it under a running batch failed that batch)."""

    def __init__(self, factory: Callable[[TeamSettings], TeamClient] | None = None) -> None:
        self.registry = Registry()
        self._factory = factory or (lambda settings: TeamClient(settings, registry=self.registry))
        self._client: TeamClient | None = None
        self._settings: TeamSettings | None = None

    def get(self, settings: TeamSettings) -> TeamClient:
        if self._client is None or self._settings != settings:
            if self._client is not None:
                self._client.retire()
            self._client = self._factory(settings)
            self._settings = settings
        return self._client

    def current(self) -> TeamClient | None:
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
