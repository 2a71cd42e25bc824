"""The short version of bench/load_soak.py's burst, in CI: many requests, none lost."""

from __future__ import annotations

from bench.load_soak import burst

from .raw_server import RawServer


def test_burst_of_requests_across_documents() -> None:
    server = RawServer()
    try:
        server.initialize({"context": {"enabled": False}})  # five look-alike files
        result = burst(server, requests=200, rate=50.0)
        assert result["answered_exactly_once"] == 200, result
        assert result["latest_correct"] == "5/5", result
        # Superseded requests are dropped from the model's queue, not left to pile up there.
        assert result["queue_depth_max"] <= 10, result
        assert server.process.poll() is None and not server.stray
    finally:
        server.close()
