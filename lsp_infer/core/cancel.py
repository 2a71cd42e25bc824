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
    # The user typed at the end of the cursor's line: the prompt up to that line's last word
    # is still what the next request needs, so the model finishes evaluating it before it
    # stops (a soft cancel).
    TYPED_ON_LINE = "the user typed on the same line"
    DOCUMENT_CLOSED = "the document was closed"
    SHUTDOWN = "the server is shutting down"

    @property
    def soft(self) -> bool:
        """Whether work may first finish the part of its prompt that stays valid."""
        return self is CancelReason.TYPED_ON_LINE


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
        """Cancel, or make a soft cancel hard (the first reason stays otherwise)."""
        if not self._event.is_set():
            self.reason = reason
            self.cancelled_at = time.monotonic()
            self._event.set()
        elif self.reason is not None and self.reason.soft and not reason.soft:
            self.reason = reason
            self.cancelled_at = time.monotonic()

    @property
    def soft(self) -> bool:
        """Cancelled softly: the work may finish the valid part of its prompt first."""
        return self.reason is not None and self.reason.soft

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def raise_if_cancelled(self) -> None:
        if self._event.is_set():
            assert self.reason is not None
            raise Cancelled(self.reason)
