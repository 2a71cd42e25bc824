"""Requests across the team's replicas: choice, failover, health probes, load from /metrics.

* Each request goes to the replica ``replicas.pick`` chooses. When an attempt fails before
  any of the answer arrived (connection refused or reset, 502/503/504, 429), the next replica
  is tried; once every replica was tried, the round starts again after a backoff (the
  server's Retry-After when it sent one), ``team.retries`` times. After the first data of an
  answer nothing is retried: the caller gets the error.
* A replica that refused a connection or answered 502/503/504 is marked down and probed in
  the background (``/health``, then ``/v1/models``) with a growing delay until it answers;
  then it is up again. A request it serves also brings it back.
* vLLM's ``/metrics`` gauges are polled at most every ``METRICS_INTERVAL_S`` per replica,
  and only while requests are being routed; a replica without them is asked again after
  ``METRICS_RETRY_S``.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import httpx

from lsp_infer.team.errors import TeamError, parse_metrics, retry_delay
from lsp_infer.team.replicas import Replica, pick

log = logging.getLogger(__name__)

T = TypeVar("T")

METRICS_INTERVAL_S = 2.0
METRICS_RETRY_S = 60.0
PROBE_DELAYS_S = (0.5, 1.0, 2.0, 4.0, 8.0, 15.0)  # then every 15 s
PROBE_TIMEOUT_S = 5.0


class Router:
    def __init__(
        self,
        replicas: list[Replica],
        http: httpx.AsyncClient,
        retries: int,
        rng: random.Random | None = None,
    ) -> None:
        self.replicas = replicas
        self._http = http
        self._retries = retries
        self._rng = rng or random.Random()
        self._tasks: set[asyncio.Task[None]] = set()
        self._probing: set[str] = set()
        self._polling: set[str] = set()
        for replica in replicas:
            if not replica.healthy:
                self._start_probe(replica)  # down when an earlier client left it

    async def call(
        self, attempt: Callable[[Replica], Awaitable[T]], affinity: str | None = None
    ) -> T:
        """``attempt`` on one replica after another until one answers (see the module)."""
        tried: set[int] = set()
        rounds = 0
        last: TeamError | None = None
        while True:
            now = time.monotonic()
            self._poll_metrics(now)
            order = self._rng.sample(range(len(self.replicas)), len(self.replicas))
            index = pick(
                [r.load(now) for r in self.replicas],
                exclude=frozenset(tried), affinity=affinity, order=order,
            )  # fmt: skip
            if index is None:
                assert last is not None
                rounds += 1
                if rounds > self._retries:
                    raise last
                await asyncio.sleep(retry_delay(rounds, last.retry_after, self._rng))
                tried.clear()
                continue
            tried.add(index)
            try:
                return await self._attempt(self.replicas[index], attempt)
            except TeamError as exc:
                if not exc.failover:
                    raise
                last = exc

    async def _attempt(self, replica: Replica, attempt: Callable[[Replica], Awaitable[T]]) -> T:
        started = time.monotonic()
        replica.in_flight += 1
        replica.requests += 1
        replica.sent_since_sample += 1
        try:
            result = await attempt(replica)
        except TeamError as exc:
            replica.failures += 1
            if exc.unavailable:
                self.mark_down(replica, str(exc))
            raise
        finally:
            replica.in_flight -= 1
        replica.latency_ms.append((time.monotonic() - started) * 1000)
        self._mark_up(replica)
        return result

    # -- health -------------------------------------------------------------------------

    def mark_down(self, replica: Replica, reason: str) -> None:
        if replica.healthy:
            log.warning("team replica %s is down (%s); probing it", replica.shown, reason)
        replica.healthy = False
        replica.reason = reason
        self._start_probe(replica)

    def _mark_up(self, replica: Replica) -> None:
        if not replica.healthy:
            log.info("team replica %s is back", replica.shown)
        replica.healthy = True
        replica.reason = ""

    def _start_probe(self, replica: Replica) -> None:
        if replica.url not in self._probing:
            self._probing.add(replica.url)
            self._spawn(self._probe(replica))

    async def _probe(self, replica: Replica) -> None:
        try:
            attempt = 0
            while not replica.healthy:
                await asyncio.sleep(PROBE_DELAYS_S[min(attempt, len(PROBE_DELAYS_S) - 1)])
                attempt += 1
                if await self.alive(replica):
                    self._mark_up(replica)
        finally:
            self._probing.discard(replica.url)

    async def alive(self, replica: Replica) -> bool:
        """Whether the replica serves again: /health not failing (vLLM: 503 while its engine
        is dead), then /v1/models answering. A replica that takes the connection but is slow
        to answer is busy, not down (llama.cpp's server answers /v1/models only between
        generations)."""
        try:
            health = await self._http.get(f"{replica.root}/health", timeout=PROBE_TIMEOUT_S)
            if health.status_code >= 500:
                return False
            models = await self._http.get(f"{replica.url}/models", timeout=PROBE_TIMEOUT_S)
        except (httpx.ReadTimeout, httpx.PoolTimeout):
            return True
        except Exception:  # refused, reset, or anything else: still down, probe again
            return False
        return models.status_code < 500

    # -- load ------------------------------------------------------------------------------

    def _poll_metrics(self, now: float) -> None:
        for replica in self.replicas:
            asked = replica.metrics_asked_at
            wait = METRICS_RETRY_S if replica.has_metrics is False else METRICS_INTERVAL_S
            if replica.url in self._polling or (asked is not None and now - asked < wait):
                continue
            replica.metrics_asked_at = now
            self._polling.add(replica.url)
            self._spawn(self._poll(replica))

    async def _poll(self, replica: Replica) -> None:
        try:
            response = await self._http.get(f"{replica.root}/metrics", timeout=PROBE_TIMEOUT_S)
            gauges = parse_metrics(response.text) if response.status_code == 200 else {}
        except (httpx.HTTPError, RuntimeError):
            return  # unreachable: requests and the probe tell
        finally:
            self._polling.discard(replica.url)
        if "vllm:num_requests_waiting" not in gauges:
            replica.has_metrics = False
            return
        replica.has_metrics = True
        replica.waiting = gauges["vllm:num_requests_waiting"]
        replica.running = gauges.get("vllm:num_requests_running", 0.0)
        replica.sampled_at = time.monotonic()
        replica.sent_since_sample = 0

    # -- tasks ------------------------------------------------------------------------------

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and (error := task.exception()) is not None:
            log.warning("team router background task failed: %r", error)

    def close(self) -> None:
        """Stop probing and polling (the replicas' state stays in the registry)."""
        for task in list(self._tasks):
            task.cancel()
