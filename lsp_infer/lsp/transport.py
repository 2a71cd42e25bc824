"""The stdio transport's input, guarded against frames too large to hold.

pygls reads a frame's body with ``stdin.read(Content-Length)``, and CPython allocates that
many bytes up front: a header claiming gigabytes would exhaust memory before a byte arrives.
This reader refuses bodies over a limit: it reads and drops them in small pieces, logs the
refusal, and hands pygls a harmless notification in their place, so the stream stays in step.
"""

from __future__ import annotations

import logging
from typing import BinaryIO

log = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
_CHUNK = 1024 * 1024
# What pygls gets instead of an oversized body: a notification nobody handles.
REFUSED = b'{"jsonrpc": "2.0", "method": "$/lspInfer/refusedOversizedMessage"}'


class BoundedStdin:
    def __init__(self, stream: BinaryIO, limit: int = MAX_MESSAGE_BYTES) -> None:
        self._stream = stream
        self._limit = limit

    def readline(self) -> bytes:
        # Header lines are short; a line without an end in sight is cut at the limit.
        return self._stream.readline(self._limit)

    def read(self, size: int = -1) -> bytes:
        if 0 <= size <= self._limit:
            return self._stream.read(size)
        log.error(
            "refused a message of %d bytes (limit %d): dropped without reading it into memory",
            size,
            self._limit,
        )
        remaining = size
        while remaining > 0:
            chunk = self._stream.read(min(_CHUNK, remaining))
            if not chunk:
                return b""  # the client went away mid-frame
            remaining -= len(chunk)
        return REFUSED

    def close(self) -> None:
        self._stream.close()
