"""Inline completions and the completion fallback, from the real model over stdio."""

from __future__ import annotations

from lsprotocol import types
from pytest_lsp import LanguageClient

from .conftest import end_of, initialize, inline_at, open_document

ADD = "def add(a, b):\n    return "


async def test_advertises_inline_completion_and_incremental_sync(client: LanguageClient):
    result = await initialize(client)
    caps = result.capabilities
    assert caps.inline_completion_provider is not None
    assert caps.completion_provider is not None
    sync = caps.text_document_sync
    assert isinstance(sync, types.TextDocumentSyncOptions)
    assert sync.change == types.TextDocumentSyncKind.Incremental
    assert caps.position_encoding in (None, types.PositionEncodingKind.Utf16)
    # The VS Code extension waits for lspInfer/status only from a server of this name.
    assert result.server_info is not None and result.server_info.name == "lsp-infer"


async def test_inline_completion_completes_add(client: LanguageClient):
    await initialize(client)
    uri = "file:///tmp/lsp-infer-e2e/add.py"
    open_document(client, uri, ADD)
    result = await inline_at(client, uri, *end_of(ADD))
    assert len(result.items) == 1
    item = result.items[0]
    # Exactly: the space after "return" was typed already and must not be suggested again.
    assert item.insert_text == "a + b"
    assert item.range == types.Range(start=types.Position(1, 11), end=types.Position(1, 11))


async def test_completion_fallback_inserts_the_suggestion(client: LanguageClient):
    await initialize(client, inline=False)
    uri = "file:///tmp/lsp-infer-e2e/fallback.py"
    open_document(client, uri, ADD)
    line, character = end_of(ADD)
    result = await client.text_document_completion_async(
        types.CompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=line, character=character),
        )
    )
    assert isinstance(result, types.CompletionList)
    assert len(result.items) == 1
    edit = result.items[0].text_edit
    assert isinstance(edit, types.TextEdit)
    assert "a + b" in edit.new_text
    assert edit.range.start == types.Position(line, character)


async def test_incremental_edits_are_what_the_model_sees(client: LanguageClient):
    """The suggestion follows the edited text, not the text first opened."""
    await initialize(client)
    uri = "file:///tmp/lsp-infer-e2e/edit.py"
    open_document(client, uri, "def mul(x, y):\n    return 0\n")
    # Replace "mul(x, y)" with "add(a, b)" and delete the "0" after "return ".
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(start=types.Position(0, 4), end=types.Position(0, 13)),
                    text="add(a, b)",
                ),
                types.TextDocumentContentChangePartial(
                    range=types.Range(start=types.Position(1, 11), end=types.Position(1, 12)),
                    text="",
                ),
            ],
        )
    )
    result = await inline_at(client, uri, 1, 11)
    assert result.items and "a + b" in str(result.items[0].insert_text)


async def test_utf8_position_encoding_when_the_client_prefers_it(client: LanguageClient):
    result = await initialize(client, encodings=["utf-8", "utf-16"])
    assert result.capabilities.position_encoding == types.PositionEncodingKind.Utf8
    uri = "file:///tmp/lsp-infer-e2e/utf8.py"
    text = 'GREETING = "héllo 😀"\n\ndef add(a, b):\n    return '
    open_document(client, uri, text)
    result_list = await inline_at(client, uri, 3, len("    return "))
    assert result_list.items and "a + b" in str(result_list.items[0].insert_text)
