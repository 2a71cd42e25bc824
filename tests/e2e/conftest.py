"""End-to-end fixtures: the real `lsp-infer serve` over stdio, a real LSP client (pytest-lsp).

Every test here runs the embedded default model. A test gets an uninitialized
client and calls :func:`initialize` with the capabilities and options it needs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from lsp_infer.config import ModelSettings
from lsp_infer.local.lane import ModelLane
from lsp_infer.local.llama_cpp import LlamaCppBackend
from tests.helpers import plain, raw_request  # noqa: F401  (re-exported for the tests)

SERVER_COMMAND = [sys.executable, "-m", "lsp_infer", "serve", "--log-level", "debug"]


def server_env(**overrides: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LSP_INFER_")}
    env.update(overrides)
    return env


def lsp_infer(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The command line, as a user runs it, with these LSP_INFER_* variables (and no others)."""
    return subprocess.run(
        [sys.executable, "-m", "lsp_infer", *args],
        capture_output=True, text=True, env=server_env(**env), timeout=300,
    )  # fmt: skip


@pytest.fixture
def backend() -> Iterator[LlamaCppBackend]:
    """The model backend in this process, on its own lane, not loaded yet."""
    backend = LlamaCppBackend(ModelLane())
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def loaded_backend() -> Iterator[LlamaCppBackend]:
    """The default model loaded in this process, on its own lane, shared by a module's tests."""
    backend = LlamaCppBackend(ModelLane())
    backend.lane.run_blocking(backend.load_blocking, ModelSettings())
    assert backend.state == "ready", backend.error
    yield backend
    backend.close()


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=SERVER_COMMAND, server_env=server_env())
)
async def client(lsp_client: LanguageClient):
    yield
    if lsp_client.capabilities is not None:
        await lsp_client.shutdown_session()


async def initialize(
    client: LanguageClient,
    *,
    encodings: list[str] | None = None,
    options: Any = None,
    configuration: Any = None,
    inline: bool = True,
    workspace: Path | None = None,
    extra_context: bool = False,
    definitions: bool = False,
    suggestion_ready: bool = False,
    references: bool = False,
) -> types.InitializeResult:
    """Initialize like an editor would; ``configuration`` answers workspace/configuration.

    Extra context (other open documents in the prompt) is off unless a test asks for it: the
    tests here open many small look-alike files, which would be each other's context.
    ``definitions``: announce lspInfer/definitions (the test answers it);
    ``suggestion_ready``: announce lspInfer/suggestionReady (the test listens for it);
    ``references``: announce lspInfer/references (the test answers it)."""
    if options is None or isinstance(options, dict):
        options = {"context": {"enabled": extra_context}, **(options or {})}
    general = (
        types.GeneralClientCapabilities(
            position_encodings=[types.PositionEncodingKind(e) for e in encodings]
        )
        if encodings
        else None
    )
    capabilities = types.ClientCapabilities(
        general=general,
        workspace=types.WorkspaceClientCapabilities(configuration=configuration is not None),
        window=types.WindowClientCapabilities(work_done_progress=True),
        text_document=types.TextDocumentClientCapabilities(
            inline_completion=types.InlineCompletionClientCapabilities() if inline else None,
            synchronization=types.TextDocumentSyncClientCapabilities(),
        ),
        # lspInfer/definitions: the client answers it; lspInfer/suggestionReady: it asks again
        # (docs/protocol.md).
        experimental=_announced(
            definitions=definitions, suggestionReady=suggestion_ready, references=references
        ),
    )
    if configuration is not None:
        client.set_configuration(configuration, section="lspInfer")
    root = (workspace or Path.cwd()).as_uri()
    return await client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities,
            initialization_options=options,
            root_uri=root,
            workspace_folders=[types.WorkspaceFolder(uri=root, name="ws")],
        )
    )


def _announced(**features: bool) -> Any:
    ours = {name: True for name, on in features.items() if on}
    return {"lspInfer": ours} if ours else None


def open_document(client: LanguageClient, uri: str, text: str, language: str = "python") -> None:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id=language, version=1, text=text
            )
        )
    )


async def inline_at(
    client: LanguageClient, uri: str, line: int, character: int, invoked: bool = False
) -> types.InlineCompletionList:
    """An inline completion request: made by typing (Automatic), or by the user (Invoked)."""
    kind = types.InlineCompletionTriggerKind
    result = await client.text_document_inline_completion_async(
        types.InlineCompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=line, character=character),
            context=types.InlineCompletionContext(
                trigger_kind=kind.Invoked if invoked else kind.Automatic
            ),
        )
    )
    assert isinstance(result, types.InlineCompletionList), result
    return result


def end_of(text: str) -> tuple[int, int]:
    """(line, utf-16 character) of the end of ``text``."""
    lines = text.split("\n")
    last = lines[-1]
    return len(lines) - 1, len(last.encode("utf-16-le")) // 2
