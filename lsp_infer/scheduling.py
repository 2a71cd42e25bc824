"""Cancel tokens and the model lane.

The model lane is one dedicated thread: llama.cpp contexts are not thread-safe,
and keeping the model off pygls' shared thread pool means a busy model never
delays reading the next message (e.g. a ``$/cancelRequest``).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from enum import Enum
from typing import Any, TypeVar

T = TypeVar("T")


class CancelReason(str, Enum):
    CLIENT = "cancelled by the client"  # $/cancelRequest
    SUPERSEDED = "superseded by a newer request"
    DOCUMENT_CHANGED = "the document changed"
    DOCUMENT_CLOSED = "the document was closed"
    SHUTDOWN = "the server is shutting down"


class Cancelled(Exception):
    """Raised inside model work when its token is cancelled."""

    def __init__(self, reason: CancelReason) -> None:
        super().__init__(reason.value)
        self.reason = reason


class CancelToken:
    """Thread-safe, one-way cancel flag, checked by model work between steps.

    ``cancelled_at`` records when cancel() was called, so the time from a cancel
    to the model actually stopping can be measured.
    """

    __slots__ = ("_event", "cancelled_at", "reason")

    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason: CancelReason | None = None
        self.cancelled_at: float | None = None

    def cancel(self, reason: CancelReason) -> None:
        if not self._event.is_set():
            self.reason = reason
            self.cancelled_at = time.monotonic()
            self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def raise_if_cancelled(self) -> None:
        if self._event.is_set():
            assert self.reason is not None
            raise Cancelled(self.reason)


class ModelLane:
    """A single worker thread that owns the model."""

    def __init__(self, name: str = "lsp-infer-model") -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._thread_ident: int | None = None
        self.pending = 0  # jobs submitted and not finished (queue depth + the running one)

    def submit(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """Queue work now (not when the caller first awaits), so queue order is call order.
        Cancelling the returned future before the work starts takes it out of the queue."""
        loop = asyncio.get_running_loop()
        self.pending += 1
        work = self._executor.submit(self._call, fn, args)
        work.add_done_callback(lambda _: loop.call_soon_threadsafe(self._finished))
        return asyncio.wrap_future(work, loop=loop)

    def _finished(self) -> None:
        self.pending -= 1

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        return await self.submit(fn, *args)

    def run_blocking(self, fn: Callable[..., T], *args: Any) -> T:
        """For the CLI, which has no event loop."""
        return self._executor.submit(self._call, fn, args).result()

    def _call(self, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        self._thread_ident = threading.get_ident()
        return fn(*args)

    def on_lane(self) -> bool:
        return threading.get_ident() == self._thread_ident

    def shutdown(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
