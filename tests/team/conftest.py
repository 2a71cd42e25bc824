"""The team tier against a real OpenAI-compatible server process on loopback.

vLLM needs a GPU; llama-cpp-python's own server (``python -m llama_cpp.server``, the same
default model, with an API key) stands in for it. A fault-injecting proxy in front of it
produces the failures (500, malformed JSON, a stream cut midway, slow or silent servers).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.helpers import free_port, openai_server, plain, stop, wait_until_up

API_KEY = "sk-lsp-infer-test-key"


@dataclass(frozen=True)
class TeamServer:
    url: str  # the real server, .../v1
    proxy: str  # the fault proxy root: f"{proxy}/{mode}/v1"
    log: Path  # every request body that reached the proxy

    def mode(self, mode: str) -> str:
        return f"{self.proxy}/{mode}/v1"

    def requests_logged(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


@pytest.fixture(scope="session")
def team_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TeamServer]:
    proxy_port = free_port()
    log = tmp_path_factory.mktemp("team") / "requests.log"
    with openai_server(API_KEY) as url:
        proxy = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("fault_proxy.py")),
             url.removesuffix("/v1"), str(proxy_port), str(log)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            wait_until_up(f"http://127.0.0.1:{proxy_port}/ok/health", proxy, "fault proxy")
            yield TeamServer(url, f"http://127.0.0.1:{proxy_port}", log)
        finally:
            stop(proxy)


class EditorState:
    """What the test client saw: applied edits and messages."""

    def __init__(self) -> None:
        self.edits: list[types.ApplyWorkspaceEditParams] = []
        self.refuse_edits = False


@pytest_lsp.fixture(
    config=ClientServerConfig(
        server_command=[sys.executable, "-m", "lsp_infer", "serve", "--log-level", "debug"],
        server_env={k: v for k, v in os.environ.items() if not k.startswith("LSP_INFER_")},
    )
)
async def client(lsp_client: LanguageClient):
    state = EditorState()
    lsp_client.editor = state  # type: ignore[attr-defined]

    @lsp_client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        state.edits.append(params)
        return types.ApplyWorkspaceEditResult(applied=not state.refuse_edits)

    @lsp_client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def choose(params: types.ShowMessageRequestParams) -> types.MessageActionItem | None:
        return params.actions[1] if params.actions else None  # "Add docstrings…"

    yield
    if lsp_client.capabilities is not None:
        await lsp_client.shutdown_session()


async def start(client: LanguageClient, workspace: Path, team: dict[str, Any]) -> None:
    root = workspace.as_uri()
    await client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(
                window=types.WindowClientCapabilities(work_done_progress=True),
                workspace=types.WorkspaceClientCapabilities(
                    apply_edit=True,
                    workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=True),
                ),
            ),
            root_uri=root,
            workspace_folders=[types.WorkspaceFolder(uri=root, name="ws")],
            # llama_cpp.server interrupts a running stream when the next request arrives, so
            # the stand-in gets one request at a time (vLLM batches concurrent ones).
            initialization_options={
                "team": {"maxTokens": 512, "timeoutMs": 120000, "maxConcurrency": 1, **team}
            },
        )
    )


def open_file(client: LanguageClient, path: Path, text: str, version: int = 1) -> str:
    path.write_text(text)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=path.as_uri(), language_id="python", version=version, text=text
            )
        )
    )
    return path.as_uri()


async def run_command(
    client: LanguageClient, command: str, argument: dict[str, Any]
) -> dict[str, Any]:
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=command, arguments=[argument])
    )
    return plain(result)


def apply_text_edits(text: str, edits: list[types.TextEdit]) -> str:
    """Apply LSP edits (utf-16 positions, ASCII test files) the way an editor would."""
    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)

    def offset(position: types.Position) -> int:
        return min(offsets[min(position.line, len(lines))] + position.character, len(text))

    for edit in sorted(
        edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True
    ):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end) :]
    return text
