"""The stdio reader refuses frames too large to hold, without holding them."""

from __future__ import annotations

import io

from lsp_infer.lsp.transport import REFUSED, BoundedStdin


class CountingStream(io.BytesIO):
    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.largest_read = 0

    def read(self, size: int | None = -1) -> bytes:  # type: ignore[override]
        self.largest_read = max(self.largest_read, size if size is not None else -1)
        return super().read(size)


def test_small_frames_pass_through() -> None:
    stream = BoundedStdin(io.BytesIO(b"Content-Length: 2\r\n\r\n{}"), limit=100)
    assert stream.readline() == b"Content-Length: 2\r\n"
    assert stream.readline() == b"\r\n"
    assert stream.read(2) == b"{}"


def test_an_oversized_body_is_dropped_in_pieces_and_replaced() -> None:
    body = b"x" * 5000
    raw = CountingStream(body + b"next")
    stream = BoundedStdin(raw, limit=1000)
    assert stream.read(len(body)) == REFUSED
    assert raw.largest_read <= 1024 * 1024  # never one allocation of the claimed size
    assert stream.read(4) == b"next"  # the stream is still in step


def test_a_client_that_vanishes_mid_frame() -> None:
    stream = BoundedStdin(io.BytesIO(b"short"), limit=2)
    assert stream.read(10**9) == b""
