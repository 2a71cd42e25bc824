"""Refactors through the real lsp-infer server and a real OpenAI-compatible server process."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.helpers import raw_request

from .conftest import (
    API_KEY,
    TeamServer,
    apply_text_edits,
    free_port,
    message_shown,
    open_file,
    run_command,
    start,
)

SOURCE = "def add(a, b):\n    return a + b\n"
INSTRUCTION = "Add a one-line docstring to the function"


def outcome(result: dict, index: int = 0) -> dict:
    return result["outcomes"][index]


async def assert_local_completions_still_work(client: LanguageClient, workspace: Path) -> None:
    uri = open_file(client, workspace / "local.py", "def mul(x, y):\n    return ")
    result = await client.text_document_inline_completion_async(
        types.InlineCompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=1, character=11),
            context=types.InlineCompletionContext(
                trigger_kind=types.InlineCompletionTriggerKind.Invoked
            ),
        )
    )
    assert result and result.items and "x * y" in str(result.items[0].insert_text)


async def test_refactor_one_open_file(
    client: LanguageClient, team_server: TeamServer, tmp_path: Path
):
    await start(client, tmp_path, {"url": team_server.url, "apiKey": API_KEY})
    uri = open_file(client, tmp_path / "calc.py", SOURCE, version=7)
    result = await run_command(
        client, "lspInfer.refactorFile", {"uri": uri, "instruction": INSTRUCTION}
    )
    assert outcome(result)["status"] == "applied", result
    edits = client.editor.edits  # type: ignore[attr-defined]
    assert len(edits) == 1
    change = edits[0].edit.document_changes[0]
    assert change.text_document.uri == uri and change.text_document.version == 7
    new_text = apply_text_edits(SOURCE, change.edits)
    ast.parse(new_text)
    assert "def add(a, b):" in new_text and new_text != SOURCE
    # The key went in the Authorization header, never in a message.
    assert all(API_KEY not in m.message for m in client.messages)


async def test_refactor_a_batch_with_a_file_on_disk(
    client: LanguageClient, team_server: TeamServer, tmp_path: Path
):
    await start(client, tmp_path, {"url": team_server.mode("ok"), "apiKey": API_KEY})
    first = open_file(client, tmp_path / "one.py", SOURCE)
    (tmp_path / "two.py").write_text("def sub(a, b):\n    return a - b\n")  # not open
    second = (tmp_path / "two.py").as_uri()
    result = await run_command(
        client, "lspInfer.refactorFiles", {"uris": [first, second], "instruction": INSTRUCTION}
    )
    statuses = [o["status"] for o in result["outcomes"]]
    assert statuses == ["applied", "applied"], result
    versions = {
        e.edit.document_changes[0].text_document.uri: e.edit.document_changes[
            0
        ].text_document.version
        for e in client.editor.edits
    }  # type: ignore[attr-defined]
    assert versions == {first: 1, second: None}  # versioned for the open file
    # The progress had a cancel button and ended.
    reports = [v for values in client.progress_reports.values() for v in values]
    assert any(isinstance(v, types.WorkDoneProgressBegin) and v.cancellable for v in reports)
    assert any(isinstance(v, types.WorkDoneProgressEnd) for v in reports)


async def test_a_document_changed_meanwhile_is_not_touched(
    client: LanguageClient, team_server: TeamServer, tmp_path: Path
):
    await start(client, tmp_path, {"url": team_server.url, "apiKey": API_KEY})
    uri = open_file(client, tmp_path / "stale.py", SOURCE)
    command = asyncio.ensure_future(
        run_command(client, "lspInfer.refactorFile", {"uri": uri, "instruction": INSTRUCTION})
    )
    await asyncio.sleep(1.0)  # the request is in flight
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[
                types.TextDocumentContentChangeWholeDocument(text=SOURCE + "\n# edited\n")
            ],
        )
    )
    result = await asyncio.wait_for(command, timeout=120)
    assert outcome(result)["status"] in ("cancelled", "stale"), result
    assert client.editor.edits == []  # type: ignore[attr-defined]


async def test_excluded_files_never_leave_the_machine(
    client: LanguageClient, team_server: TeamServer, tmp_path: Path
):
    await start(client, tmp_path, {"url": team_server.mode("ok"), "apiKey": API_KEY})
    secret = "API_TOKEN=super-secret-value-123\n"
    env_uri = open_file(client, tmp_path / ".env", secret)
    (tmp_path / ".lspinferignore").write_text("private/\n")
    (tmp_path / "private").mkdir()
    private_uri = open_file(client, tmp_path / "private" / "notes.py", "PASSWORD = 'hunter2'\n")
    result = await run_command(
        client,
        "lspInfer.refactorFiles",
        {"uris": [env_uri, private_uri], "instruction": INSTRUCTION},
    )
    assert [o["status"] for o in result["outcomes"]] == ["refused", "refused"]
    logged = team_server.requests_logged()
    assert "super-secret-value-123" not in logged and "hunter2" not in logged
    outside = await run_command(
        client, "lspInfer.refactorFile", {"uri": "file:///etc/hostname", "instruction": "x"}
    )
    assert (
        outcome(outside)["status"] == "refused"
        and "outside the workspace" in outcome(outside)["message"]
    )


async def test_wrong_key(client: LanguageClient, team_server: TeamServer, tmp_path: Path):
    await start(client, tmp_path, {"url": team_server.url, "apiKey": "sk-wrong"})
    uri = open_file(client, tmp_path / "k.py", SOURCE)
    result = await run_command(
        client, "lspInfer.refactorFile", {"uri": uri, "instruction": INSTRUCTION}
    )
    assert outcome(result)["status"] == "failed" and "API key" in outcome(result)["message"]
    assert all("sk-wrong" not in m for m in await message_shown(client, "team.apiKey"))
    assert client.editor.edits == []  # type: ignore[attr-defined]
    await assert_local_completions_still_work(client, tmp_path)


@pytest.mark.faults
async def test_server_down(client: LanguageClient, tmp_path: Path):
    await start(client, tmp_path, {"url": f"http://127.0.0.1:{free_port()}/v1", "retries": 1})
    uri = open_file(client, tmp_path / "d.py", SOURCE)
    result = await run_command(
        client, "lspInfer.refactorFile", {"uri": uri, "instruction": INSTRUCTION}
    )
    assert outcome(result)["status"] == "failed" and "cannot connect" in outcome(result)["message"]
    assert client.editor.edits == []  # type: ignore[attr-defined]
    await assert_local_completions_still_work(client, tmp_path)


@pytest.mark.faults
async def test_not_configured(client: LanguageClient, tmp_path: Path):
    await start(client, tmp_path, {})
    uri = open_file(client, tmp_path / "n.py", SOURCE)
    result = await run_command(
        client, "lspInfer.refactorFile", {"uri": uri, "instruction": INSTRUCTION}
    )
    assert outcome(result)["status"] == "refused" and "team.url" in outcome(result)["message"]
    actions = await code_actions(client, uri)
    assert actions and "team.url" in actions[0]["disabled"]["reason"]


async def code_actions(client: LanguageClient, uri: str, only: list[str] | None = None) -> list:
    context: dict = {"diagnostics": []}
    if only:
        context["only"] = only
    span = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}
    params = {"textDocument": {"uri": uri}, "range": span, "context": context}
    return await raw_request(client, "textDocument/codeAction", params)


async def faulty(
    client: LanguageClient, team_server: TeamServer, tmp_path: Path, mode: str, **team
) -> dict:
    # team.model is set, so the fault hits the refactor request itself (not /v1/models).
    await start(
        client,
        tmp_path,
        {"url": team_server.mode(mode), "apiKey": API_KEY, "model": "coder", **team},
    )
    uri = open_file(client, tmp_path / f"{mode}.py", SOURCE)
    result = await run_command(
        client, "lspInfer.refactorFile", {"uri": uri, "instruction": INSTRUCTION}
    )
    assert client.editor.edits == []  # type: ignore[attr-defined]
    return outcome(result)


@pytest.mark.faults
async def test_http_500(client: LanguageClient, team_server: TeamServer, tmp_path: Path):
    result = await faulty(client, team_server, tmp_path, "500")
    assert result["status"] == "failed" and "HTTP 500" in result["message"]
    await assert_local_completions_still_work(client, tmp_path)


@pytest.mark.faults
async def test_malformed_json(client: LanguageClient, team_server: TeamServer, tmp_path: Path):
    result = await faulty(client, team_server, tmp_path, "malformed")
    assert result["status"] == "failed" and "JSON" in result["message"]


@pytest.mark.faults
async def test_stream_cut_midway(client: LanguageClient, team_server: TeamServer, tmp_path: Path):
    result = await faulty(client, team_server, tmp_path, "cut")
    assert result["status"] == "failed" and "mid-answer" in result["message"]


@pytest.mark.faults
async def test_timeout(client: LanguageClient, team_server: TeamServer, tmp_path: Path):
    result = await faulty(client, team_server, tmp_path, "slow", timeoutMs=1500)
    assert result["status"] == "failed" and "did not answer" in result["message"]


@pytest.mark.faults
async def test_server_that_never_answers(
    client: LanguageClient, team_server: TeamServer, tmp_path: Path
):
    result = await faulty(client, team_server, tmp_path, "hang", timeoutMs=1500)
    assert result["status"] == "failed" and "did not answer" in result["message"]
    await assert_local_completions_still_work(client, tmp_path)


async def test_429_is_retried(client: LanguageClient, team_server: TeamServer, tmp_path: Path):
    await start(client, tmp_path, {"url": team_server.mode("429once"), "apiKey": API_KEY})
    uri = open_file(client, tmp_path / "busy.py", SOURCE)
    result = await run_command(
        client, "lspInfer.refactorFile", {"uri": uri, "instruction": INSTRUCTION}
    )
    assert outcome(result)["status"] == "applied", result


async def test_code_action_asks_for_the_instruction(
    client: LanguageClient, team_server: TeamServer, tmp_path: Path
):
    await start(client, tmp_path, {"url": team_server.mode("ok"), "apiKey": API_KEY})
    uri = open_file(client, tmp_path / "action.py", SOURCE)
    actions = await code_actions(client, uri, only=["refactor.rewrite"])
    assert actions and actions[0]["kind"] == "refactor.rewrite" and "disabled" not in actions[0]
    command = actions[0]["command"]
    result = await run_command(client, command["command"], command["arguments"][0])
    assert outcome(result)["status"] in ("applied", "unchanged"), result
    # The client was asked, picked the second preset, and that instruction was sent.
    assert "Add docstrings to public functions and classes" in team_server.requests_logged()
