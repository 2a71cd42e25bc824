"""A missing or broken model: one clear message, empty answers, no crash."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from .conftest import end_of, initialize, inline_at, open_document, server_env

ADD = "def add(a, b):\n    return "


@pytest_lsp.fixture(
    config=ClientServerConfig(
        server_command=[sys.executable, "-m", "lsp_infer", "serve"],
        server_env=server_env(LSP_INFER_MODEL="/nonexistent/model.gguf"),
    )
)
async def missing_model_client(lsp_client: LanguageClient):
    yield
    await lsp_client.shutdown_session()


async def test_missing_model_file_reports_once(missing_model_client: LanguageClient):
    client = missing_model_client
    await initialize(client)
    uri = "file:///tmp/lsp-infer-e2e/missing.py"
    open_document(client, uri, ADD)
    for _ in range(3):
        result = await inline_at(client, uri, *end_of(ADD))
        assert result.items == ()
    errors = [m for m in client.messages if m.type == types.MessageType.Error]
    assert len(errors) == 1, client.messages
    assert "model file not found" in errors[0].message


async def test_not_a_gguf_file_is_refused(client: LanguageClient, tmp_path: Path):
    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"this is not a model" * 100)
    await initialize(client, options={"model": {"path": str(fake)}})
    uri = "file:///tmp/lsp-infer-e2e/fake.py"
    open_document(client, uri, ADD)
    result = await inline_at(client, uri, *end_of(ADD))
    assert result.items == ()
    errors = [m for m in client.messages if m.type == types.MessageType.Error]
    assert len(errors) == 1 and "not a GGUF model file" in errors[0].message


async def test_hash_mismatch_is_refused(client: LanguageClient):
    from lsp_infer.models import default_model_path

    # The real model file, but a configured SHA-256 it does not have.
    await initialize(
        client, options={"model": {"path": str(default_model_path()), "sha256": "0" * 64}}
    )
    uri = "file:///tmp/lsp-infer-e2e/mismatch.py"
    open_document(client, uri, ADD)
    result = await inline_at(client, uri, *end_of(ADD))
    assert result.items == ()
    errors = [m for m in client.messages if m.type == types.MessageType.Error]
    assert len(errors) == 1 and "refusing to load" in errors[0].message
