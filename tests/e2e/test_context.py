"""Extra context over stdio with the real model: another open file's code reaches the prompt."""

from __future__ import annotations

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
    result = await inline_at(client, uri, len(lines) - 1, len(lines[-1]))
    assert result.items and str(result.items[0].insert_text).startswith("QUUX_WOBBLE_LIMIT")


async def test_excluded_files_are_not_context(client: LanguageClient, tmp_path: Path):
    await initialize(client, workspace=tmp_path, extra_context=True)
    # The same definitions, but in a file the exclusion rules cover: the model never sees them.
    open_document(client, (tmp_path / ".env").as_uri(), SETTINGS.replace("37", "42"))
    uri = (tmp_path / "service.py").as_uri()
    open_document(client, uri, MAIN)
    lines = MAIN.split("\n")
    result = await inline_at(client, uri, len(lines) - 1, len(lines[-1]))
    assert all("QUUX_WOBBLE" not in str(item.insert_text) for item in result.items)
