"""Bad input gets a clear answer, and the server keeps serving."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pytest_lsp import LanguageClient

from .conftest import end_of, initialize, inline_at, open_document, raw_request

ADD = "def add(a, b):\n    return "


async def still_serves(client: LanguageClient) -> None:
    uri = "file:///tmp/lsp-infer-e2e/alive.py"
    open_document(client, uri, ADD)
    result = await inline_at(client, uri, *end_of(ADD))
    assert result.items and "a + b" in str(result.items[0].insert_text)


async def test_unknown_document_is_invalid_params(client: LanguageClient):
    await initialize(client)
    with pytest.raises(JsonRpcInvalidParams, match="not open"):
        await inline_at(client, "file:///nowhere/never-opened.py", 0, 0)
    await still_serves(client)


async def test_line_past_the_end_is_invalid_params(client: LanguageClient):
    await initialize(client)
    uri = "file:///tmp/lsp-infer-e2e/short.py"
    open_document(client, uri, "x = 1\n")
    with pytest.raises(JsonRpcInvalidParams, match="past the end"):
        await inline_at(client, uri, 40, 0)
    await still_serves(client)


async def test_character_past_the_line_end_is_clamped(client: LanguageClient):
    await initialize(client)
    uri = "file:///tmp/lsp-infer-e2e/clamp.py"
    open_document(client, uri, ADD + "\n\nprint(add(1, 2))\n")
    result = await inline_at(client, uri, 1, 500)
    assert result.items and "a + b" in str(result.items[0].insert_text)
    # The range names the real end of the line, not the requested column.
    assert result.items[0].range == types.Range(
        start=types.Position(1, 11), end=types.Position(1, 11)
    )


async def test_empty_document(client: LanguageClient):
    await initialize(client)
    uri = "file:///tmp/lsp-infer-e2e/empty.py"
    open_document(client, uri, "")
    result = await inline_at(client, uri, 0, 0)
    assert isinstance(result, types.InlineCompletionList)
    await still_serves(client)


async def test_megabyte_document(client: LanguageClient):
    await initialize(client)
    uri = "file:///tmp/lsp-infer-e2e/big.py"
    filler = "".join(
        f"value_{i} = {i} * 2  # filler line to make the file large\n" for i in range(20000)
    )
    text = filler + ADD
    assert len(text) > 1_000_000
    open_document(client, uri, text)
    result = await asyncio.wait_for(inline_at(client, uri, *end_of(text)), timeout=120)
    assert result.items and "a + b" in str(result.items[0].insert_text)


async def test_nul_bytes_and_emoji_with_utf16_positions(client: LanguageClient):
    await initialize(client)
    uri = "file:///tmp/lsp-infer-e2e/emoji.py"
    text = 'SMILE = "😀😀"  # \x00 nul\ndef add(a, b):  # 🎉\n    return '
    open_document(client, uri, text)
    line, character = end_of(text)
    result = await inline_at(client, uri, line, character)
    assert result.items and "a + b" in str(result.items[0].insert_text)
    # A position after the emoji on line 0 (utf-16: each emoji is 2 units).
    after_emoji = await inline_at(client, uri, 0, len('SMILE = "😀😀"'.encode("utf-16-le")) // 2)
    for item in after_emoji.items:
        assert item.range is not None
        assert item.range.start == types.Position(0, 13)
    await still_serves(client)


async def test_request_with_missing_params_gets_invalid_params(client: LanguageClient):
    """pygls alone never answers these; the client would wait forever."""
    await initialize(client)
    request = raw_request(
        client, "textDocument/inlineCompletion", {"textDocument": {"uri": "file:///x.py"}}
    )
    with pytest.raises(JsonRpcInvalidParams):
        await asyncio.wait_for(request, timeout=30)
    await still_serves(client)


async def test_invalid_settings_warn_once_and_use_defaults(client: LanguageClient):
    options = {"completion": {"maxTokens": "lots", "maxLines": 3}, "bogus": True}
    await initialize(client, options=options, configuration=options)
    await still_serves(client)
    warnings = [m for m in client.messages if m.type == types.MessageType.Warning]
    assert len(warnings) == 1, client.messages
    assert "completion.maxTokens" in warnings[0].message
    assert "bogus" in warnings[0].message


async def test_settings_pulled_with_workspace_configuration(client: LanguageClient):
    await initialize(client, configuration={"completion": {"enabled": False}})
    uri = "file:///tmp/lsp-infer-e2e/disabled.py"
    open_document(client, uri, ADD)
    await asyncio.sleep(0.5)  # let `initialized` pull the configuration
    result = await inline_at(client, uri, *end_of(ADD))
    assert result.items == ()
    # Turned back on by a pushed change.
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"lspInfer": {"completion": {"enabled": True}}})
    )
    await still_serves(client)
