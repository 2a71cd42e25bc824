"""What can go wrong talking to the team's servers, and the small pure helpers around it.

Every failure is a :class:`TeamError` whose message says what happened and what to do, and
never contains the API key or a URL's credentials. ``failover`` says whether another replica
may be tried (nothing of the answer arrived); ``unavailable``, whether this replica should be
marked down and probed.
"""

from __future__ import annotations

import email.utils
import random
import time
from typing import Literal

ErrorKind = Literal[
    "not_configured",
    "unreachable",
    "unauthorized",
    "overloaded",
    "timeout",
    "server_error",
    "bad_response",
    "incomplete",
    "too_large",
]

RETRY_STATUSES = (429, 502, 503, 504)  # nothing was generated: try again, or elsewhere
DOWN_STATUSES = (502, 503, 504)  # the replica (or the engine behind it) is not serving
_MAX_RETRY_AFTER = 30.0


class TeamError(Exception):
    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        failover: bool = False,
        unavailable: bool = False,
        retry_after: str | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.failover = failover
        self.unavailable = unavailable
        self.retry_after = retry_after


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


def status_error(status: int, body: str, retry_after: str | None = None) -> TeamError:
    """The error for an HTTP status from the team server (``body`` shortened, as a hint)."""
    excerpt = " ".join(body.split())[:200]
    if status in (401, 403):
        return TeamError(
            "unauthorized",
            f"the team server refused the API key (HTTP {status}); set team.apiKey "
            "(or LSP_INFER_TEAM_API_KEY) to the server's key",
        )
    if status in RETRY_STATUSES:
        return TeamError(
            "overloaded",
            f"the team server is overloaded or unavailable (HTTP {status}); try again in a while",
            failover=True,
            unavailable=status in DOWN_STATUSES,
            retry_after=retry_after,
        )
    if status == 404:
        return TeamError(
            "server_error",
            f"HTTP 404 from the team server: check team.url (it should end in /v1) and "
            f"team.model ({excerpt})",
        )
    return TeamError("server_error", f"HTTP {status} from the team server: {excerpt}")
