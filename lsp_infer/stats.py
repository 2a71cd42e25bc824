"""Counters and latency percentiles for ``lspInfer/stats`` and the periodic log line."""

from __future__ import annotations

import math
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from lsp_infer.config import camel


def percentile(samples: list[float], fraction: float) -> float | None:
    """Nearest-rank percentile; None without samples."""
    if not samples:
        return None
    ordered = sorted(samples)
    rank = math.ceil(fraction * len(ordered))
    return ordered[min(len(ordered), max(1, rank)) - 1]


def _summary(samples: deque[float]) -> dict[str, float | None]:
    values = list(samples)
    return {
        "p50": percentile(values, 0.50),
        "p95": percentile(values, 0.95),
        "p99": percentile(values, 0.99),
        "max": max(values) if values else None,
        "count": float(len(values)),
    }


class ByMinute:
    """Samples grouped by the wall-clock minute they were taken in, for the last ``minutes``
    minutes: a time series of percentiles that an editor can draw ("latency over time").
    Bounded: at most ``per_minute`` samples a minute (the latest) and ``minutes`` minutes."""

    SECONDS = 60

    def __init__(self, minutes: int = 60, per_minute: int = 600) -> None:
        self.minutes = minutes
        self.per_minute = per_minute
        self._buckets: OrderedDict[int, deque[float]] = OrderedDict()

    def add(self, value: float, now: float) -> None:
        minute = int(now // self.SECONDS)
        bucket = self._buckets.get(minute)
        if bucket is None:
            bucket = self._buckets[minute] = deque(maxlen=self.per_minute)
        bucket.append(value)
        self._trim(minute)

    def _trim(self, minute: int) -> None:
        # Minutes older than the window go, and so does any minute from a clock set back.
        for old in list(self._buckets):
            if old <= minute - self.minutes or old > minute:
                del self._buckets[old]

    def as_json(self) -> dict[str, Any]:
        """``{"bucketSeconds": 60, "points": [{"t": start (Unix seconds), "count", "p50",
        "p95"}, ...]}``, oldest first, only minutes with samples."""
        points = []
        for minute, bucket in sorted(self._buckets.items()):
            values = list(bucket)
            points.append({
                "t": minute * self.SECONDS,
                "count": len(values),
                "p50": percentile(values, 0.50),
                "p95": percentile(values, 0.95),
            })  # fmt: skip
        return {"bucketSeconds": self.SECONDS, "points": points}


class TimedSamples(deque[float]):
    """The latest samples (a bounded deque, as before) that also land in a per-minute series.

    The keystroke path appends each request's latency to ``Stats.latency_ms``; making that
    deque keep the time series too gives "latency over time" without another call at every
    place that records a latency."""

    def __init__(
        self,
        iterable: Iterable[float] = (),
        maxlen: int | None = None,
        *,
        clock: Callable[[], float] = time.time,
        minutes: int = 60,
    ) -> None:
        # deque's signature, so that copy.copy (type(self)(self, maxlen)) works; a copy's
        # samples are not stamped again.
        super().__init__(iterable, maxlen)
        self.clock = clock
        self.by_minute = ByMinute(minutes)

    def append(self, value: float) -> None:
        super().append(value)
        self.by_minute.add(value, self.clock())

    def extend(self, values: Iterable[float]) -> None:
        for value in values:
            self.append(value)


@dataclass
class Stats:
    requests: int = 0  # completion requests received
    answered: int = 0  # answered with a result (a suggestion or an empty list)
    suggested: int = 0  # answered with a non-empty suggestion
    cancelled: int = 0  # cancelled by the client ($/cancelRequest)
    superseded: int = 0  # answered empty: a newer request or an edit made it stale
    cache_hits: int = 0
    type_ahead_hits: int = 0
    in_flight_hits: int = 0  # answered from a generation started for an earlier keystroke
    precompute_hits: int = 0  # answered from an idle precompute
    warms: int = 0  # background evaluations where the editor said the cursor rests
    keystrokes: int = 0  # didChange notifications
    generations: int = 0  # model runs started
    generations_with_extra: int = 0  # ... with other files' code in the prompt
    context_refreshes: int = 0  # background evaluations of a new pick of extra context
    context_switches: int = 0  # new picks put in use (their prompt evaluated in full)
    reduced_windows: int = 0  # generations answered from a smaller window (cold starts)
    hidden: int = 0  # answered empty: the model doubted the first line (the confidence settings)
    # The editor told to ask again (lspInfer/suggestionReady): after a cold start's answer, the
    # whole window's suggestion was ready, and not the one answered.
    offered_again: int = 0
    prompt_tokens_evaluated: int = 0
    prompt_tokens_reused: int = 0
    tokens_generated: int = 0
    tokens_wasted: int = 0  # generated by runs whose result no request received
    tokens_precomputed: int = 0  # generated speculatively by idle precompute
    queue_depth_max: int = 0
    latency_ms: deque[float] = field(default_factory=lambda: TimedSamples(maxlen=2000))
    type_ahead_ms: deque[float] = field(default_factory=lambda: deque(maxlen=2000))
    cancel_to_stop_ms: deque[float] = field(default_factory=lambda: deque(maxlen=2000))

    def answer(self, answer: str, source: str, elapsed_ms: float, hidden: bool) -> None:
        """A request answered (``answer`` empty for none) from ``source``."""
        self.answered += 1
        self.latency_ms.append(elapsed_ms)
        if source == "type-ahead":
            self.type_ahead_ms.append(elapsed_ms)
        self.suggested += bool(answer)
        self.hidden += hidden

    def as_json(self, queue_depth: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for name, value in vars(self).items():
            result[camel(name)] = _summary(value) if isinstance(value, deque) else value
        result["queueDepth"] = queue_depth
        if isinstance(self.latency_ms, TimedSamples):
            result["latencyByMinute"] = self.latency_ms.by_minute.as_json()
        return result

    def log_line(self) -> str:
        latency = _summary(self.latency_ms)
        stop = _summary(self.cancel_to_stop_ms)

        def ms(value: float | None) -> str:
            return "-" if value is None else f"{value:.0f}ms"

        return (
            f"requests {self.requests}, answered {self.answered} ({self.suggested} with text), "
            f"cancelled {self.cancelled}, superseded {self.superseded}, hits: cache "
            f"{self.cache_hits} type-ahead {self.type_ahead_hits} in-flight {self.in_flight_hits} "
            f"precompute {self.precompute_hits}; latency p50 {ms(latency['p50'])} p95 "
            f"{ms(latency['p95'])}; cancel→stop p95 {ms(stop['p95'])}; prompt tokens "
            f"{self.prompt_tokens_evaluated} evaluated / {self.prompt_tokens_reused} reused; "
            f"tokens {self.tokens_generated} generated / {self.tokens_wasted} wasted"
        )
