"""Helpers shared by the LSP-level test suites."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from pytest_lsp import LanguageClient


async def raw_request(client: LanguageClient, method: str, params: Any) -> Any:
    """Send a request with untyped params and get the untyped result (pygls' typed client
    would refuse to build some requests, and lsprotocol mis-reads some results, e.g. a
    CodeAction that carries a command comes back as a Command)."""
    msg_id = f"raw-{uuid.uuid4()}"
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    client.protocol._request_futures[msg_id] = future
    client.protocol._send_data({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
    return plain(await future)


def plain(value: Any) -> Any:
    """pygls' client turns untyped JSON objects into namedtuples; turn them back into dicts."""
    if hasattr(value, "_asdict"):
        return {key: plain(item) for key, item in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    return value
