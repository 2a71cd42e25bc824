"""The team tier's counters per request class, for ``lspInfer/stats`` and the log line."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from lsp_infer.config import camel
from lsp_infer.stats import percentile


def _ms(values: deque[float]) -> dict[str, float | None]:
    samples = list(values)
    return {"p50Ms": percentile(samples, 0.50), "p95Ms": percentile(samples, 0.95)}


@dataclass
class RefactorCounters:
    commands: int = 0  # refactor commands received
    files: int = 0  # files in them
    applied: int = 0
    unchanged: int = 0
    stale: int = 0  # the document changed before the edit could be applied
    cancelled: int = 0  # by an edit, the progress's cancel button or $/cancelRequest
    failed: int = 0
    refused: int = 0  # not sent: excluded, outside the workspace, too large, unreadable
    # From the command's arrival to each file's outcome, for files applied or unchanged.
    latency_ms: deque[float] = field(default_factory=lambda: deque(maxlen=2000))

    def count(self, status: str, latency_ms: float) -> None:
        setattr(self, status, getattr(self, status) + 1)
        if status in ("applied", "unchanged"):
            self.latency_ms.append(latency_ms)

    def as_json(self) -> dict[str, Any]:
        values = {camel(k): v for k, v in vars(self).items() if not isinstance(v, deque)}
        return {**values, **_ms(self.latency_ms)}


@dataclass
class CompletionCounters:
    requests: int = 0  # invoked completions offered to the team model
    answered: int = 0  # answered by the team model
    fallbacks: int = 0  # left to the local model: timeout, error, no replica up
    stale: int = 0  # a keystroke or a newer request made the answer useless: empty
    cancelled: int = 0  # $/cancelRequest
    latency_ms: deque[float] = field(default_factory=lambda: deque(maxlen=2000))

    def as_json(self) -> dict[str, Any]:
        values = {camel(k): v for k, v in vars(self).items() if not isinstance(v, deque)}
        return {**values, **_ms(self.latency_ms)}


@dataclass
class TeamCounters:
    refactors: RefactorCounters = field(default_factory=RefactorCounters)
    completions: CompletionCounters = field(default_factory=CompletionCounters)

    def activity(self) -> int:
        """Changes whenever anything was asked of the team tier."""
        return self.refactors.commands + self.completions.requests

    def line(self, replicas: list[dict[str, Any]]) -> str:
        r, c = self.refactors, self.completions
        rp = _ms(r.latency_ms)
        cp = _ms(c.latency_ms)

        def ms(value: float | None) -> str:
            return "-" if value is None else f"{value:.0f}ms"

        def replica(x: dict[str, Any]) -> str:
            waiting = "-" if x["waiting"] is None else f"{x['waiting']:.0f}"
            return (
                f"{x['url']} {'up' if x['healthy'] else 'DOWN'} in-flight {x['inFlight']} "
                f"waiting {waiting} requests {x['requests']} failures {x['failures']} "
                f"p95 {ms(x['p95Ms'])}"
            )

        shown = ", ".join(replica(x) for x in replicas)
        return (
            f"team refactors: {r.files} files in {r.commands} commands, {r.applied} applied, "
            f"{r.unchanged} unchanged, {r.stale} stale, {r.cancelled} cancelled, {r.failed} "
            f"failed, {r.refused} refused, p50 {ms(rp['p50Ms'])} p95 {ms(rp['p95Ms'])}; team "
            f"completions: {c.requests} asked, {c.answered} answered, {c.fallbacks} to local, "
            f"{c.stale} stale, p50 {ms(cp['p50Ms'])} p95 {ms(cp['p95Ms'])}; replicas: "
            f"{shown or 'none'}"
        )
