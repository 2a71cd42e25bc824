"""Extra context over stdio with the real model: another open file's code reaches the prompt."""

from __future__ import annotations

import asyncio
from pathlib import Path

from pytest_lsp import LanguageClient

from .conftest import initialize, inline_at, open_document

# A name no model could guess: only the other file tells it.
SETTINGS = (
    '"""Settings shared by the service."""\n\n'
    "DEFAULT_QUUX_WOBBLE_LIMIT = 37\n"
    "RETRY_BACKOFF_FACTOR = 1.5\n"
)
MAIN = (
    "import settings\n\n\ndef fetch(client, url):\n"
    "    return client.get(url, timeout=settings.DEFAULT_"
)


async def test_a_name_defined_in_another_open_file(client: LanguageClient, tmp_path: Path):
    await initialize(client, workspace=tmp_path, extra_context=True)
    open_document(client, (tmp_path / "settings.py").as_uri(), SETTINGS)
    uri = (tmp_path / "service.py").as_uri()
    open_document(client, uri, MAIN)
    lines = MAIN.split("\n")
    # Asked for by the user: the extra context is picked for this very request.
    result = await inline_at(client, uri, len(lines) - 1, len(lines[-1]), invoked=True)
    assert result.items and str(result.items[0].insert_text).startswith("QUUX_WOBBLE_LIMIT")


async def test_while_typing_extra_context_comes_after_a_pause(
    client: LanguageClient, tmp_path: Path
):
    options = {"context": {"enabled": True, "idleMs": 200}}
    await initialize(client, options=options, workspace=tmp_path)
    open_document(client, (tmp_path / "settings.py").as_uri(), SETTINGS)
    uri = (tmp_path / "service.py").as_uri()
    open_document(client, uri, MAIN)
    line, character = len(MAIN.split("\n")) - 1, len(MAIN.split("\n")[-1])
    # The first request made by typing does not wait for other files' code to be evaluated.
    first = await inline_at(client, uri, line, character)
    assert all("QUUX_WOBBLE" not in str(item.insert_text) for item in first.items)
    stats = await client.protocol.send_request_async("lspInfer/stats", {})
    assert stats.generationsWithExtra == 0
    # After the pause the pick is made and evaluated in the background; the next request
    # at the same place is answered from that.
    for _ in range(300):
        stats = await client.protocol.send_request_async("lspInfer/stats", {})
        if stats.contextRefreshes:
            break
        await asyncio.sleep(0.1)
    assert stats.contextRefreshes == 1
    again = await inline_at(client, uri, line, character)
    assert again.items and str(again.items[0].insert_text).startswith("QUUX_WOBBLE_LIMIT")
    stats = await client.protocol.send_request_async("lspInfer/stats", {})
    # The second answer came from the prefetch (done, or still running), not a new run.
    assert stats.cacheHits + stats.inFlightHits + stats.precomputeHits == 1
    assert stats.generationsWithExtra >= 1


async def test_excluded_files_are_not_context(client: LanguageClient, tmp_path: Path):
    await initialize(client, workspace=tmp_path, extra_context=True)
    # The same definitions, but in a file the exclusion rules cover: the model never sees them.
    open_document(client, (tmp_path / ".env").as_uri(), SETTINGS.replace("37", "42"))
    uri = (tmp_path / "service.py").as_uri()
    open_document(client, uri, MAIN)
    lines = MAIN.split("\n")
    result = await inline_at(client, uri, len(lines) - 1, len(lines[-1]), invoked=True)
    assert all("QUUX_WOBBLE" not in str(item.insert_text) for item in result.items)
