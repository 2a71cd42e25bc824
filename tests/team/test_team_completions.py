"""Invoked completions from the team model (``team.completions``), through the real lsp-infer
server and a real OpenAI-compatible server behind the fault proxy.

Each test here failed on the code before issue 14: keystrokes and client cancels never
closed the request, a stale answer was shown, ``textDocument/completion`` with trigger kind
Invoked (sent for ordinary typing) went to the team, and one timeout switched the team off.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from tests.helpers import plain

from .conftest import TeamServer, cancel, change_file, marker, open_file, start, start_raw_request
from .test_concurrency import ended, sent, settings


def completing(team_server: TeamServer, mode: str, **team: Any) -> dict[str, Any]:
    return settings(team_server, mode, completions=True, **team)


def invoked(uri: str, line: int, character: int) -> dict[str, Any]:
    return {
        "textDocument": {"uri": uri},
        "position": {"line": line, "character": character},
        "context": {"triggerKind": 1},  # InlineCompletionTriggerKind.Invoked
    }


async def test_a_keystroke_closes_the_team_request_and_no_stale_answer_is_shown(
    client: LanguageClient, team_server: TeamServer, tmp_path: Path
) -> None:
    await start(client, tmp_path, completing(team_server, "slow", completionTimeoutMs=60000))
    name = marker()
    text = f"def {name}(x, y):\n    return "
    uri = open_file(client, tmp_path / "k.py", text)
    _, answer = start_raw_request(client, "textDocument/inlineCompletion", invoked(uri, 1, 11))
    await team_server.wait_for("the team request", sent(name))  # held 5 s by the proxy
    changed_at = time.monotonic()
    change_file(client, uri, text + "x", 2)
    result = plain(await asyncio.wait_for(answer, timeout=60))
    assert time.monotonic() - changed_at < 4, "the keystroke did not stop the team request"
    assert result["items"] == [], result  # an answer for version 1 is not shown on version 2
    await team_server.wait_for("the request to be closed", ended(name, "GONE"), timeout=10)


async def test_a_client_cancel_closes_the_team_request(
    client: LanguageClient, team_server: TeamServer, tmp_path: Path
) -> None:
    await start(client, tmp_path, completing(team_server, "slow", completionTimeoutMs=60000))
    name = marker()
    uri = open_file(client, tmp_path / "c.py", f"def {name}(x, y):\n    return ")
    msg_id, answer = start_raw_request(client, "textDocument/inlineCompletion", invoked(uri, 1, 11))
    await team_server.wait_for("the team request", sent(name))
    cancel(client, msg_id)
    with pytest.raises(JsonRpcException) as error:
        await asyncio.wait_for(answer, timeout=10)
    assert error.value.code == -32800
    await team_server.wait_for("the request to be closed", ended(name, "GONE"), timeout=10)


async def test_completion_requests_from_typing_stay_local(
    client: LanguageClient, team_server: TeamServer, tmp_path: Path
) -> None:
    """textDocument/completion's Invoked (1) is also what clients send for typing an
    identifier: it is no sign that the user asked."""
    await start(client, tmp_path, completing(team_server, "ok"))
    name = marker()
    uri = open_file(client, tmp_path / "t.py", f"def {name}(x, y):\n    return ")
    params = {
        "textDocument": {"uri": uri},
        "position": {"line": 1, "character": 11},
        "context": {"triggerKind": 1},
    }
    _, answer = start_raw_request(client, "textDocument/completion", params)
    await asyncio.wait_for(answer, timeout=60)
    await asyncio.sleep(0.5)
    assert team_server.with_marker(name) == []


async def test_one_timeout_does_not_switch_the_team_off(
    client: LanguageClient, team_server: TeamServer, tmp_path: Path
) -> None:
    # The proxy holds the first completion request 5 s: longer than completionTimeoutMs.
    await start(client, tmp_path, completing(team_server, "slowonce", completionTimeoutMs=2500))
    first, second = marker(), marker()
    uri = open_file(client, tmp_path / "first.py", f"def {first}(x, y):\n    return ")
    _, answer = start_raw_request(client, "textDocument/inlineCompletion", invoked(uri, 1, 11))
    await asyncio.wait_for(answer, timeout=60)  # the local model answered instead
    uri = open_file(client, tmp_path / "second.py", f"def {second}(x, y):\n    return ")
    _, answer = start_raw_request(client, "textDocument/inlineCompletion", invoked(uri, 1, 11))
    await asyncio.wait_for(answer, timeout=60)
    assert team_server.with_marker(second), "the next invoked completion never tried the team"
