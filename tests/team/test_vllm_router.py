"""vLLM's own router (`vllm-router`, PyPI) in front of the vLLM test server: the way a team
grows past one box (docs/team-server.md, "Scale-out"). team.url points at the router alone:
refactors and invoked completions pass through it, a cancel reaches vLLM through it (its
running-requests gauge falls back to zero), and the stats show one replica, the router.

Runs with the real vLLM only (`make team-vllm`: LSP_INFER_TEST_TEAM_SERVER=vllm), whose venv
holds the router (or a vLLM already running, given by its URL)."""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from lsp_infer.team.errors import parse_metrics
from lsp_infer.team.http_client import takes_priority
from lsp_infer.team.replicas import Replica
from tests.helpers import VLLM_VENV, free_port, plain, stop, wait_until_up

from .conftest import (
    API_KEY,
    TEAM_SERVER,
    TeamServer,
    cancel,
    marker,
    message_shown,
    open_file,
    run_command,
    start,
    start_command,
    start_raw_request,
    stats,
)
from .test_concurrency import DONE, INSTRUCTION, REFACTOR_FILE, source, statuses
from .test_team_completions import invoked

ROUTER = VLLM_VENV / "bin" / "vllm-router"
# With the vLLM that make team-vllm starts, the router must be there (its venv has it); with a
# vLLM given by its URL, the router is used if that venv has it.
pytestmark = pytest.mark.skipif(
    TEAM_SERVER == "standin" or (TEAM_SERVER != "vllm" and not ROUTER.exists()),
    reason="needs a real vLLM, and vllm-router in the vLLM venv (make team-vllm)",
)


@pytest.fixture(scope="module")
def router(team_server: TeamServer) -> Iterator[str]:
    """vllm-router on a free loopback port, cache-aware, in front of the one vLLM."""
    port = free_port()
    process = subprocess.Popen(
        [str(ROUTER), "--worker-urls", team_server.url[: -len("/v1")],
         "--policy", "cache_aware", "--host", "127.0.0.1", "--port", str(port),
         # its own Prometheus exporter listens on a port of its own (29000 unless told)
         "--prometheus-host", "127.0.0.1", "--prometheus-port", str(free_port())],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_until_up(f"http://127.0.0.1:{port}/health", process, "vllm-router")
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        stop(process)


def running(team_server: TeamServer) -> float:
    metrics = httpx.get(f"{team_server.url[: -len('/v1')]}/metrics", timeout=10).text
    return parse_metrics(metrics).get("vllm:num_requests_running", -1.0)


async def test_refactors_and_invoked_completions_pass_through_the_router(
    client: LanguageClient, team_server: TeamServer, router: str, tmp_path: Path
) -> None:
    team = {"url": router, "apiKey": API_KEY, "model": "coder", "completions": True,
            "completionTimeoutMs": 60000}  # fmt: skip
    await start(client, tmp_path, team)
    uri = open_file(client, tmp_path / "r.py", source(marker()))
    result = await run_command(client, REFACTOR_FILE, {"uri": uri, "instruction": INSTRUCTION})
    assert statuses(result)[0] in DONE, result
    name = marker()
    uri = open_file(client, tmp_path / "c.py", f"def {name}(x, y):\n    return ")
    _, answer = start_raw_request(client, "textDocument/inlineCompletion", invoked(uri, 1, 11))
    assert plain(await asyncio.wait_for(answer, timeout=120))["items"], "no suggestion"
    numbers = await stats(client)
    [replica] = numbers["team"]["replicas"]
    assert replica["url"] == router and replica["healthy"] is True and replica["failures"] == 0
    assert replica["requests"] >= 2
    assert numbers["team"]["completions"]["answered"] >= 1, numbers["team"]["completions"]


async def test_a_cancel_reaches_vllm_through_the_router(
    client: LanguageClient, team_server: TeamServer, router: str, tmp_path: Path
) -> None:
    team = {"url": router, "apiKey": API_KEY, "model": "coder", "maxTokens": 2048}
    await start(client, tmp_path, team)
    uri = open_file(client, tmp_path / "long.py", source(marker()))
    instruction = "Rewrite this as a long module: fifty functions, each with a long docstring"
    msg_id, answer = start_command(client, REFACTOR_FILE, {"uri": uri, "instruction": instruction})
    deadline = time.monotonic() + 120
    while running(team_server) < 1:  # the request reached vLLM through the router
        assert time.monotonic() < deadline, "the refactor never reached vLLM"
        await asyncio.sleep(0.2)
    cancel(client, msg_id)
    try:
        outcome = plain(await asyncio.wait_for(answer, timeout=30))
        assert statuses(outcome) == ["cancelled"], outcome
    except JsonRpcException as exc:
        assert exc.code == -32800  # RequestCancelled
    deadline = time.monotonic() + 15
    while running(team_server) > 0:  # the router closed its upstream request: vLLM aborted
        assert time.monotonic() < deadline, "vLLM still generates for a cancelled refactor"
        await asyncio.sleep(0.2)
    assert client.editor.edited(uri) == []  # type: ignore[attr-defined]


async def test_priorities_and_the_api_key_pass_through_the_router(
    client: LanguageClient, team_server: TeamServer, router: str, tmp_path: Path
) -> None:
    """vLLM (started with --scheduling-policy priority) accepts the `priority` field through the
    router, as doctor asks it; with team.priority on, a refactor and an invoked completion
    carry it and are answered, and the replica is not marked as refusing it."""
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {API_KEY}"}) as http:
        assert await takes_priority(http, Replica(router), "coder") is True
    team = {"url": router, "apiKey": API_KEY, "model": "coder", "completions": True,
            "priority": True, "completionTimeoutMs": 60000}  # fmt: skip
    await start(client, tmp_path, team)
    uri = open_file(client, tmp_path / "p.py", source(marker()))
    result = await run_command(client, REFACTOR_FILE, {"uri": uri, "instruction": INSTRUCTION})
    assert statuses(result)[0] in DONE, result
    uri = open_file(client, tmp_path / "q.py", f"def {marker()}(x, y):\n    return ")
    _, answer = start_raw_request(client, "textDocument/inlineCompletion", invoked(uri, 1, 11))
    assert plain(await asyncio.wait_for(answer, timeout=120))["items"], "no suggestion"
    numbers = await stats(client)
    [replica] = numbers["team"]["replicas"]
    assert replica["acceptsPriority"] is True and replica["failures"] == 0, replica


async def test_a_wrong_key_is_refused_behind_the_router(
    client: LanguageClient, router: str, tmp_path: Path
) -> None:
    """vLLM behind the router refuses a wrong key; the editor is told which setting to fix,
    without the key, and no document changes."""
    await start(client, tmp_path, {"url": router, "apiKey": "sk-wrong", "model": "coder"})
    uri = open_file(client, tmp_path / "k.py", source(marker()))
    result = await run_command(client, REFACTOR_FILE, {"uri": uri, "instruction": INSTRUCTION})
    assert statuses(result) == ["failed"], result
    assert all("sk-wrong" not in m for m in await message_shown(client, "team.apiKey"))
    assert client.editor.edited(uri) == []  # type: ignore[attr-defined]
