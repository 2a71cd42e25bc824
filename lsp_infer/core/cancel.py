"""Cancel tokens: how a keystroke, a newer request or a client cancel reaches running work.

A token is set on the event loop and read wherever the work runs (the model lane's thread,
llama.cpp's abort callback, an HTTP stream), so it is thread-safe and one-way.
"""

from __future__ import annotations

import threading
import time
from enum import Enum


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
