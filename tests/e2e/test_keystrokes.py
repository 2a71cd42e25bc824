"""The keystroke path over stdio with the real model: cancel, supersede, type-ahead, stats."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcRequestCancelled
from pytest_lsp import LanguageClient

from tests.helpers import start_raw_request

from .conftest import end_of, initialize, inline_at, open_document, plain

ADD = "def add(a, b):\n    return "
STATS = "lspInfer/stats"


def inline_params(uri: str, line: int, character: int) -> dict[str, Any]:
    return {
        "textDocument": {"uri": uri},
        "position": {"line": line, "character": character},
        "context": {"triggerKind": 2},
    }


def type_text(
    client: LanguageClient, uri: str, version: int, line: int, character: int, text: str
) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(
                        start=types.Position(line, character), end=types.Position(line, character)
                    ),
                    text=text,
                )
            ],
        )
    )


async def stats(client: LanguageClient) -> dict[str, Any]:
    _, future = start_raw_request(client, STATS, {})
    return plain(await future)


async def test_cancel_during_prompt_evaluation_stops_the_model(client: LanguageClient):
    # A big window so that prompt evaluation alone takes many seconds (and no cold-start
    # window, which would answer first from a small one).
    options = {"completion": {"contextTokens": 2500, "precompute": False, "coldStartMs": 0}}
    await initialize(client, options=options)
    source = (Path(json.__file__).parent.parent / "difflib.py").read_text()
    uri = "file:///tmp/lsp-infer-e2e/difflib.py"
    open_document(client, uri, source)
    cursor = source.index("return ", len(source) // 2) + len("return ")
    line = source[:cursor].count("\n")
    character = cursor - (source.rfind("\n", 0, cursor) + 1)
    warm = "file:///tmp/lsp-infer-e2e/warm.py"
    open_document(client, warm, ADD)
    await inline_at(client, warm, 1, 11)  # the model is loaded before the clock starts

    msg_id, future = start_raw_request(
        client, "textDocument/inlineCompletion", inline_params(uri, line, character)
    )
    await asyncio.sleep(1.5)  # well inside prompt evaluation (~2500 tokens at ~90/s)
    cancelled_at = time.monotonic()
    client.protocol.notify("$/cancelRequest", types.CancelParams(id=msg_id))
    with pytest.raises(JsonRpcRequestCancelled):
        await asyncio.wait_for(future, timeout=10)
    assert time.monotonic() - cancelled_at < 5

    # The model stopped (measured server-side), and the next request is served at once:
    # if the cancelled evaluation had kept running it would wait ~25 s behind it.
    fresh = "file:///tmp/lsp-infer-e2e/fresh.py"
    open_document(client, fresh, "def multiply(x, y):\n    return ")
    started = time.monotonic()
    result = await inline_at(client, fresh, 1, 11)
    assert result.items and "x * y" in str(result.items[0].insert_text)
    assert time.monotonic() - started < 15
    numbers = await stats(client)
    assert numbers["cancelled"] == 1
    assert numbers["cancelToStopMs"]["count"] >= 1
    assert numbers["cancelToStopMs"]["max"] < 1000


async def test_a_keystroke_supersedes_the_request_in_flight(client: LanguageClient):
    """Neovim-style: no cancel; the older request is answered (empty), the newer one served."""
    await initialize(client, options={"completion": {"precompute": False}})
    uri = "file:///tmp/lsp-infer-e2e/supersede.py"
    text = "def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return "
    open_document(client, uri, text)
    _, first = start_raw_request(client, "textDocument/inlineCompletion", inline_params(uri, 4, 11))
    await asyncio.sleep(0.3)
    type_text(client, uri, 2, 0, 0, "import math\n")  # an edit above: the first answer is stale
    second = await inline_at(client, uri, 5, 11)
    first_result = plain(await asyncio.wait_for(first, timeout=60))
    assert first_result["items"] == []  # one answer each: empty for the stale request
    assert second.items, "the newer request gets a suggestion"
    numbers = await stats(client)
    assert numbers["requests"] == 2 and numbers["superseded"] == 1 and numbers["answered"] == 1


async def test_type_ahead_returns_exactly_the_rest(client: LanguageClient):
    await initialize(client, options={"completion": {"precompute": False}})
    uri = "file:///tmp/lsp-infer-e2e/typeahead.py"
    open_document(client, uri, ADD)
    shown = await inline_at(client, uri, *end_of(ADD))
    suggestion = str(shown.items[0].insert_text)
    assert suggestion.startswith("a + b")
    before = await stats(client)
    type_text(client, uri, 2, 1, 11, "a +")
    rest = await inline_at(client, uri, 1, 14)
    assert rest.items and rest.items[0].insert_text == suggestion[3:]
    assert rest.items[0].range == types.Range(
        start=types.Position(1, 14), end=types.Position(1, 14)
    )
    after = await stats(client)
    assert after["typeAheadHits"] == before["typeAheadHits"] + 1
    assert after["generations"] == before["generations"]  # the model was not asked again


async def test_stats_reflect_what_happened(client: LanguageClient):
    await initialize(client, options={"completion": {"precompute": False}})
    uri = "file:///tmp/lsp-infer-e2e/stats.py"
    open_document(client, uri, ADD)
    await inline_at(client, uri, *end_of(ADD))
    await inline_at(client, uri, *end_of(ADD))  # same context again: the cache
    numbers = await stats(client)
    assert numbers["requests"] == 2 and numbers["answered"] == 2 and numbers["suggested"] == 2
    assert numbers["cacheHits"] == 1 and numbers["generations"] == 1
    assert numbers["promptTokensEvaluated"] > 0 and numbers["tokensGenerated"] > 0
    assert numbers["latencyMs"]["count"] == 2 and numbers["queueDepth"] == 0
