"""Switching files with the real model: the per-document KV state is restored, the answer is
what a fresh evaluation gives, and closing a document frees its state."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.e2e.conftest import initialize, inline_at, open_document, raw_request
from tests.fuzz.raw_server import RawServer
from tests.helpers import plain

STDLIB = Path(json.__file__).parent.parent
# Whole windows, no deadline, and every suggestion as decoded (no confidence threshold hides
# one the model doubts): answers to compare, whatever the machine and the defaults.
COMPARABLE = {"precompute": False, "coldStartMs": 0, "timeoutMs": 60_000, "minConfidence": 0}


def first_lines(module: str, lines: int) -> str:
    return "\n".join((STDLIB / module).read_text(encoding="utf-8").split("\n")[:lines]) + "\n"


async def stats(client: LanguageClient) -> dict[str, Any]:
    return plain(await raw_request(client, "lspInfer/stats", {}))


async def test_switching_away_and_back_restores_the_prompt(client: LanguageClient):
    # Whole windows only (no cold-start window) and no decoding deadline, so every answer is
    # comparable whatever the machine's speed (a deadline cuts where the time runs out).
    await initialize(client, options={"completion": COMPARABLE})
    a_text, b_text = first_lines("textwrap.py", 60), first_lines("shlex.py", 60)
    a, b, c = (f"file:///tmp/lsp-infer-e2e/switch/{n}.py" for n in "abc")
    open_document(client, a, a_text)
    open_document(client, b, b_text)
    last = a_text.count("\n")
    await inline_at(client, a, last, 0)
    await inline_at(client, b, b_text.count("\n"), 0)
    # Back in A: a new line (Enter) at the end, and a suggestion there.
    edited = a_text + "\n"
    client.text_document_did_change(change(a, 2, last, edited[len(a_text) :]))
    back = await inline_at(client, a, last + 1, 0)
    numbers = await stats(client)
    assert numbers["stateCache"]["restores"] >= 1, numbers["stateCache"]
    # A fresh evaluation of the same prompt: another server, nothing cached.
    fresh = RawServer()
    try:
        fresh.initialize({"completion": COMPARABLE, "context": {"enabled": False}})
        fresh.open(c, edited)
        answer = fresh.wait(fresh.inline(c, last + 1, 0), timeout=300)["result"]["items"]
    finally:
        fresh.close()
    assert [i.insert_text for i in back.items] == [item["insertText"] for item in answer]
    assert back.items  # a suggestion to compare, not two empty answers
    # Closing a document frees its entry.
    entries = (await stats(client))["stateCache"]["entries"]
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=a))
    )
    for _ in range(50):  # the entry goes on the model lane, behind work already queued
        after = (await stats(client))["stateCache"]
        if after["entries"] < entries:
            break
        await asyncio.sleep(0.1)
    assert after["entries"] < entries, after


def change(uri: str, version: int, line: int, text: str) -> types.DidChangeTextDocumentParams:
    at = types.Position(line=line, character=0)
    return types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[
            types.TextDocumentContentChangePartial(range=types.Range(start=at, end=at), text=text)
        ],
    )
