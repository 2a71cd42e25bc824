"""Choices with the real model: an invoked request gets several distinct suggestions, the same
ones in the same order when asked again (editors ask again to cycle); typing gets one."""

from __future__ import annotations

from pytest_lsp import LanguageClient

from tests.e2e.conftest import initialize, inline_at, open_document

SOURCE = "def area(shape):\n    if shape.kind == 'circle':\n        return "


async def test_an_invoked_request_gets_distinct_choices(client: LanguageClient):
    # Whole windows (no cold-start window), so the typed and the invoked answer compare.
    options = {"completion": {"precompute": False, "choices": 3, "coldStartMs": 0}}
    await initialize(client, options=options)
    uri = "file:///tmp/lsp-infer-e2e/choices.py"
    open_document(client, uri, SOURCE)
    line, character = 2, len("        return ")
    typed = await inline_at(client, uri, line, character)
    assert len(typed.items) == 1
    invoked = await inline_at(client, uri, line, character, invoked=True)
    texts = [item.insert_text for item in invoked.items]
    assert 2 <= len(texts) <= 3 and len(set(texts)) == len(texts), texts
    assert texts[0] == typed.items[0].insert_text  # the first choice is the suggestion itself
    again = await inline_at(client, uri, line, character, invoked=True)
    assert [item.insert_text for item in again.items] == texts
    # Each item carries its own id for the suggestion lifecycle.
    ids = [item.command.arguments[0]["id"] for item in invoked.items if item.command]
    assert len(set(ids)) == len(texts)
