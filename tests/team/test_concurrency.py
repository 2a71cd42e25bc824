"""Refactor commands under concurrency, through the real lsp-infer server and a real
OpenAI-compatible server process (queuing like vLLM) behind the fault proxy.

Each test here failed on the code before issue 14 (see the issue's defect list): overlapping
commands, a cancel inside a batch, the completions API's cancel and concurrency, a batch's
cancel reaching another batch's shared job, and a settings change in the middle of a batch.
"""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from tests.helpers import plain

from .conftest import (
    API_KEY,
    Logged,
    TeamServer,
    cancel,
    change_file,
    marker,
    open_file,
    run_command,
    start,
    start_command,
    start_raw_request,
)

INSTRUCTION = "Add a one-line docstring to the function"
REFACTOR_FILE = "lspInfer.refactorFile"
REFACTOR_FILES = "lspInfer.refactorFiles"
DONE = ("applied", "unchanged")


def source(name: str) -> str:
    return f"def {name}(a, b):\n    return a + b\n"


def settings(team_server: TeamServer, mode: str = "ok", **team: Any) -> dict[str, Any]:
    # team.model is set: no /v1/models request, so the proxy's log holds only the work.
    return {"url": team_server.mode(mode), "apiKey": API_KEY, "model": "coder", **team}


def sent(name: str) -> Any:
    """A predicate on the proxy's log: a generation request carrying ``name`` arrived."""

    def ready(entries: list[Logged]) -> bool:
        return any(name in e.body and e.path.endswith("completions") for e in entries)

    return ready


def ended(name: str, how: str | None = None) -> Any:
    def ready(entries: list[Logged]) -> bool:
        return any(name in e.body and e.end is not None and how in (None, e.end) for e in entries)

    return ready


def statuses(result: dict[str, Any]) -> list[str]:
    return [o["status"] for o in result["outcomes"]]


async def test_a_command_sent_while_a_batch_runs_is_answered(
    client: LanguageClient, team_server: TeamServer, tmp_path: Path
) -> None:
    await start(client, tmp_path, settings(team_server))
    first_name, second_name = marker(), marker()
    first = open_file(client, tmp_path / "first.py", source(first_name))
    second = open_file(client, tmp_path / "second.py", source(second_name))
    one = asyncio.ensure_future(
        run_command(client, REFACTOR_FILE, {"uri": first, "instruction": INSTRUCTION})
    )
    await team_server.wait_for("the first batch's request", sent(first_name))
    two = asyncio.ensure_future(
        run_command(client, REFACTOR_FILE, {"uri": second, "instruction": INSTRUCTION})
    )
    results = await asyncio.wait_for(asyncio.gather(one, two), timeout=240)
    assert [statuses(r) for r in results] == [["applied"], ["applied"]], results


async def test_a_cancel_inside_a_batch_cancels_only_that_command(
    client: LanguageClient, team_server: TeamServer, tmp_path: Path
) -> None:
    await start(client, tmp_path, settings(team_server, batchWindowMs=1000, maxConcurrency=1))
    name_a, name_b = marker(), marker()
    uri_a = open_file(client, tmp_path / "a.py", source(name_a))
    uri_b = open_file(client, tmp_path / "b.py", source(name_b))
    id_a, answer_a = start_command(
        client, REFACTOR_FILE, {"uri": uri_a, "instruction": INSTRUCTION}
    )
    id_b, answer_b = start_command(
        client, REFACTOR_FILE, {"uri": uri_b, "instruction": INSTRUCTION}
    )
    await team_server.wait_for("a's request", sent(name_a))  # one batch, a first
    cancel(client, id_a)
    try:
        result_a = plain(await asyncio.wait_for(answer_a, timeout=60))
        assert statuses(result_a) == ["cancelled"], result_a
    except JsonRpcException as exc:
        assert exc.code == -32800  # RequestCancelled
    result_b = plain(await asyncio.wait_for(answer_b, timeout=240))
    assert statuses(result_b) == ["applied"], result_b
    # a's request was closed (vLLM aborts it), a was never edited, b was.
    await team_server.wait_for("a's request to be closed", ended(name_a, "GONE"), timeout=10)
    await asyncio.sleep(1)  # room for a second, wrong answer
    editor = client.editor  # type: ignore[attr-defined]
    assert editor.answers[id_a] == 1 and editor.answers[id_b] == 1
    assert editor.edited(uri_a) == [] and len(editor.edited(uri_b)) == 1


async def test_completions_api_a_keystroke_closes_the_shared_request(
    client: LanguageClient, team_server: TeamServer, tmp_path: Path
) -> None:
    await start(client, tmp_path, settings(team_server, api="completions", batchWindowMs=1000))
    name = marker()
    text = source(name)
    uri = open_file(client, tmp_path / "shared.py", text)
    # Two commands for the same file and instruction in one batch: one shared request.
    argument = {"uri": uri, "instruction": INSTRUCTION}
    one = asyncio.ensure_future(run_command(client, REFACTOR_FILE, argument))
    two = asyncio.ensure_future(run_command(client, REFACTOR_FILE, argument))
    await team_server.wait_for("the shared request", sent(name))
    change_file(client, uri, text + "# edited\n", 2)
    results = await asyncio.wait_for(asyncio.gather(one, two), timeout=60)
    assert all(statuses(r)[0] in ("cancelled", "stale") for r in results), results
    entries = await team_server.wait_for("the request to end", ended(name), timeout=60)
    assert [e.end for e in entries if name in e.body] == ["GONE"]
    assert client.editor.edited(uri) == []  # type: ignore[attr-defined]


async def test_completions_api_keeps_to_max_concurrency(
    client: LanguageClient, team_server: TeamServer, tmp_path: Path
) -> None:
    await start(client, tmp_path, settings(team_server, api="completions", maxConcurrency=1))
    names = [marker() for _ in range(3)]
    uris = [open_file(client, tmp_path / f"f{i}.py", source(n)) for i, n in enumerate(names)]
    result = await run_command(client, REFACTOR_FILES, {"uris": uris, "instruction": INSTRUCTION})
    assert set(statuses(result)) <= set(DONE), result
    # One request per file, each one over before the next one started.
    log = team_server.requests_logged()
    requests = [e for e in team_server.logged() if any(n in e.body for n in names)]
    assert len(requests) == 3, requests
    for earlier, later in itertools.pairwise(requests):
        assert log.index(f"DONE #{earlier.number}\n") < log.index(f"#{later.number} ")


async def test_a_batch_cancel_leaves_another_batch_sharing_its_job(
    client: LanguageClient, team_server: TeamServer, tmp_path: Path
) -> None:
    await start(client, tmp_path, settings(team_server, mode="marked"))
    name = marker()
    uri = open_file(client, tmp_path / "shared.py", source(name) + "# SLOWMARK\n")
    argument = {"uri": uri, "instruction": INSTRUCTION}
    first = asyncio.ensure_future(run_command(client, REFACTOR_FILE, argument))
    await team_server.wait_for("the first batch's request", sent(name))
    second = asyncio.ensure_future(run_command(client, REFACTOR_FILE, argument))
    tokens = await team_progress(client, 2)
    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=tokens[0]))
    result_first = await asyncio.wait_for(first, timeout=60)
    assert statuses(result_first) == ["cancelled"], result_first
    result_second = await asyncio.wait_for(second, timeout=240)
    assert statuses(result_second) == ["applied"], result_second
    assert len(client.editor.edited(uri)) == 1  # type: ignore[attr-defined]
    assert len(team_server.with_marker(name)) == 1  # the second batch reused the request


async def test_a_settings_change_mid_batch_does_not_fail_it(
    client: LanguageClient, team_server: TeamServer, tmp_path: Path
) -> None:
    """New settings make a new HTTP client; the one a batch is using must stay open until the
    batch is done (an invoked team completion with the new settings used to close it)."""
    team = settings(team_server, maxConcurrency=1, completions=True)
    await start(client, tmp_path, team)
    names = [marker(), marker()]
    uris = [open_file(client, tmp_path / f"s{i}.py", source(n)) for i, n in enumerate(names)]
    command = asyncio.ensure_future(
        run_command(client, REFACTOR_FILES, {"uris": uris, "instruction": INSTRUCTION})
    )
    await team_server.wait_for("the first request", sent(names[0]))
    changed = {**team, "maxTokens": 512, "timeoutMs": 120001}
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"lspInfer": {"team": changed}})
    )
    other = open_file(client, tmp_path / "other.py", "def mul(x, y):\n    return ")
    _, completion = start_raw_request(client, "textDocument/inlineCompletion", {
        "textDocument": {"uri": other}, "position": {"line": 1, "character": 11},
        "context": {"triggerKind": 1},
    })  # fmt: skip
    await asyncio.wait_for(completion, timeout=240)
    result = await asyncio.wait_for(command, timeout=240)
    assert statuses(result) == ["applied", "applied"], result


async def team_progress(client: LanguageClient, count: int) -> list[Any]:
    """The tokens of the first ``count`` "Team refactor" progresses, in creation order."""
    for _ in range(300):
        tokens = [
            token
            for token, reports in client.progress_reports.items()
            if any(
                isinstance(r, types.WorkDoneProgressBegin) and r.title == "Team refactor"
                for r in reports
            )
        ]
        if len(tokens) >= count:
            return tokens
        await asyncio.sleep(0.1)
    pytest.fail(f"fewer than {count} team progresses: {client.progress_reports}")
