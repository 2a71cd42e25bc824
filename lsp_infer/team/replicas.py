"""The team's replicas: what is known of each, and which one a request goes to. Pure.

A replica is one OpenAI-compatible server (a vLLM instance, or a gateway) serving the team's
model. Its state outlives settings changes (the registry keeps it by URL), so its health and
counters survive a change of, say, team.timeoutMs.

Which replica: the healthy one with the least load. Load is vLLM's own queue when its
/metrics are fresh (``vllm:num_requests_waiting`` weighs more than ``…_running``: a waiting
request means the engine is full, a running one only shares the batch), plus the requests
this editor sent there since that sample; without /metrics (llama.cpp, most gateways) it is
this editor's own requests in flight. Ties are broken at random, so that editors which each
know only their own requests spread over the replicas. Interactive work names an affinity
(its document), and keeps to the replica it hashes to while that one is within one request
of the least loaded: that replica has the document's prefix cached.
"""

from __future__ import annotations

import time
import zlib
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lsp_infer.config import shown_url
from lsp_infer.stats import percentile

WAITING_WEIGHT = 4.0  # a waiting request counts as this many running ones
AFFINITY_SLACK = 1.0  # keep to the affine replica while within this much load of the best
METRICS_FRESH_S = 10.0  # gauges older than this are not used


@dataclass(frozen=True)
class Load:
    """What the choice looks at, for one replica."""

    healthy: bool
    in_flight: int
    requests: int = 0
    waiting: float | None = None  # from fresh /metrics, else None
    running: float | None = None
    sent_since_sample: int = 0


def score(load: Load) -> float:
    """Lower is better."""
    if load.waiting is None:
        return float(load.in_flight)
    return load.waiting * WAITING_WEIGHT + (load.running or 0.0) + load.sent_since_sample


def affinity_index(key: str, count: int) -> int:
    """A stable replica index for ``key`` (a document): the same one every time."""
    return zlib.crc32(key.encode()) % count


def pick(
    loads: Sequence[Load],
    *,
    exclude: frozenset[int] = frozenset(),
    affinity: str | None = None,
    order: Sequence[int] | None = None,
) -> int | None:
    """The index of the replica for the next request; None when every replica was excluded
    (tried already). Healthy replicas first; when none is, the least loaded of the others
    (health may be out of date, and trying costs less than failing unasked). Among equally
    loaded replicas, the one first in ``order`` (the router passes a random order: editors
    that know only their own requests then spread over the replicas instead of all picking
    the same one)."""
    candidates = [i for i in range(len(loads)) if i not in exclude]
    if not candidates:
        return None
    rank = {index: position for position, index in enumerate(order or range(len(loads)))}
    healthy = [i for i in candidates if loads[i].healthy] or candidates
    best = min(healthy, key=lambda i: (score(loads[i]), rank.get(i, i)))
    if affinity is not None:
        preferred = affinity_index(affinity, len(loads))
        if preferred in healthy and score(loads[preferred]) <= score(loads[best]) + AFFINITY_SLACK:
            return preferred
    return best


@dataclass
class Replica:
    """One replica's state: health, vLLM's gauges, this editor's requests and their times."""

    url: str  # base URL, .../v1 (may hold credentials: never shown)
    healthy: bool = True
    reason: str = ""  # why it is down
    waiting: float | None = None
    running: float | None = None
    sampled_at: float | None = None  # monotonic time of the gauges
    has_metrics: bool | None = None  # None: not asked yet; False: no vLLM /metrics there
    metrics_asked_at: float | None = None
    sent_since_sample: int = 0
    in_flight: int = 0
    requests: int = 0
    failures: int = 0
    takes_priority: bool = True  # False once the server refused the `priority` field
    latency_ms: deque[float] = field(default_factory=lambda: deque(maxlen=1000))

    @property
    def shown(self) -> str:
        return shown_url(self.url)

    @property
    def root(self) -> str:
        """Where /health and /metrics live (beside /v1, not under it)."""
        return self.url[: -len("/v1")] if self.url.endswith("/v1") else self.url

    def load(self, now: float | None = None) -> Load:
        now = time.monotonic() if now is None else now
        fresh = self.sampled_at is not None and now - self.sampled_at < METRICS_FRESH_S
        return Load(
            self.healthy, self.in_flight, self.requests,
            self.waiting if fresh else None, self.running if fresh else None,
            self.sent_since_sample,
        )  # fmt: skip

    def as_json(self) -> dict[str, Any]:
        """The replica in ``lspInfer/stats`` (``waiting``/``running``: null without /metrics)."""
        latencies = list(self.latency_ms)
        return {
            "url": self.shown,
            "healthy": self.healthy,
            "waiting": self.waiting,
            "running": self.running,
            "inFlight": self.in_flight,
            "requests": self.requests,
            "failures": self.failures,
            # False once it refused the `priority` field (then sent without it)
            "acceptsPriority": self.takes_priority,
            "p50Ms": percentile(latencies, 0.50),
            "p95Ms": percentile(latencies, 0.95),
        }


class Registry:
    """Replicas by URL, kept across settings changes."""

    def __init__(self) -> None:
        self._by_url: dict[str, Replica] = {}

    def get(self, urls: Sequence[str]) -> list[Replica]:
        replicas = [self._by_url.setdefault(url, Replica(url)) for url in urls]
        for url in list(self._by_url):
            if url not in urls and self._by_url[url].in_flight == 0:
                del self._by_url[url]  # no longer configured
        return replicas
