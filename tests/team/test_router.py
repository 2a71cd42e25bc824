"""team.url as a list of replicas: two real OpenAI-compatible server processes (queuing like
vLLM), one of them killed and started again, through the real lsp-infer server; and what
``lspInfer/stats`` tells of them."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pytest_lsp import LanguageClient

from tests.helpers import free_port, start_openai_server, stop

from .conftest import API_KEY, TEAM_SERVER, TeamServer, marker, open_file, run_command, start, stats
from .test_concurrency import INSTRUCTION, REFACTOR_FILES, source, statuses


@pytest.fixture(scope="module")
def replica() -> Iterator[str]:
    """A second stand-in server (one thread: the machine has two cores)."""
    port = free_port()
    process = start_openai_server(API_KEY, port, threads=1)
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        stop(process)


def team(urls: Any, **more: Any) -> dict[str, Any]:
    return {"url": urls, "apiKey": API_KEY, "model": "coder", **more}


async def refactor_some(client: LanguageClient, tmp_path: Path, count: int) -> dict[str, Any]:
    uris = [open_file(client, tmp_path / f"r{i}_{marker()}.py", source(marker()))
            for i in range(count)]  # fmt: skip
    return await run_command(client, REFACTOR_FILES, {"uris": uris, "instruction": INSTRUCTION})


async def test_a_list_of_replicas_shares_the_work_and_shows_in_stats(
    client: LanguageClient, team_server: TeamServer, replica: str, tmp_path: Path
) -> None:
    await start(client, tmp_path, team([team_server.url, replica], maxConcurrency=4))
    result = await refactor_some(client, tmp_path, 4)
    assert set(statuses(result)) <= {"applied", "unchanged"}, result
    numbers = await stats(client)
    assert "requests" in numbers and "latencyMs" in numbers  # the local tier's keys stay
    replicas = numbers["team"]["replicas"]
    assert [r["url"] for r in replicas] == [team_server.url, replica]
    for shown in replicas:
        assert shown["healthy"] is True and shown["inFlight"] == 0 and shown["failures"] == 0
        assert shown["requests"] >= 1 and shown["p50Ms"] > 0 and shown["p95Ms"] >= shown["p50Ms"]
    # vLLM's gauges come from its /metrics; llama_cpp.server has none.
    gauges = [(shown["waiting"], shown["running"]) for shown in replicas]
    if TEAM_SERVER == "vllm":
        assert all(isinstance(g, (int, float)) for g in gauges[0]), gauges
    elif TEAM_SERVER == "standin":
        assert gauges[0] == (None, None), gauges
    assert gauges[1] == (None, None), gauges  # the second replica is always a stand-in
    refactors = numbers["team"]["refactors"]
    assert refactors["commands"] == 1 and refactors["files"] == 4
    assert refactors["applied"] + refactors["unchanged"] == 4 and refactors["p95Ms"] > 0
    assert set(numbers["team"]["completions"]) >= {"requests", "answered", "p50Ms", "p95Ms"}


async def test_failover_past_a_dead_replica_and_a_503(
    client: LanguageClient, team_server: TeamServer, tmp_path: Path
) -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    await start(client, tmp_path, team([dead, team_server.mode("503"), team_server.url]))
    # Equally loaded replicas are tried in a random order, so a request may go straight to
    # the serving one: refactor until each failing replica has been tried (and passed over).
    for _ in range(12):
        result = await refactor_some(client, tmp_path, 1)
        assert statuses(result) == ["applied"], result  # every one served, whatever was tried
        down, unavailable, serving = (await stats(client))["team"]["replicas"]
        if down["failures"] and unavailable["failures"]:
            break
    assert down["healthy"] is False and down["failures"] >= 1
    assert unavailable["healthy"] is False and unavailable["failures"] >= 1
    assert serving["healthy"] is True and serving["requests"] >= 1


@pytest.mark.faults
async def test_a_killed_replica_is_routed_around_and_probed_back(
    client: LanguageClient, team_server: TeamServer, tmp_path: Path
) -> None:
    port = free_port()
    process: subprocess.Popen[bytes] | None = start_openai_server(API_KEY, port, threads=1)
    own = f"http://127.0.0.1:{port}/v1"
    try:
        await start(client, tmp_path, team([own, team_server.url]))
        assert process is not None
        stop(process)  # killed before the work arrives: connections are refused
        process = None
        result = await refactor_some(client, tmp_path, 2)
        assert set(statuses(result)) <= {"applied", "unchanged"}, result
        killed, other = (await stats(client))["team"]["replicas"]
        assert killed["healthy"] is False and other["healthy"] is True
        process = start_openai_server(API_KEY, port, threads=1)  # back, same address
        for _ in range(600):
            if (await stats(client))["team"]["replicas"][0]["healthy"]:
                break
            await asyncio.sleep(0.1)
        else:
            pytest.fail("the probe never brought the replica back")
    finally:
        if process is not None:
            stop(process)


async def test_replica_urls_in_stats_and_messages_have_no_credentials(
    client: LanguageClient, tmp_path: Path
) -> None:
    port = free_port()
    await start(client, tmp_path, team(f"http://bob:hunter2@127.0.0.1:{port}/v1", retries=0))
    result = await refactor_some(client, tmp_path, 1)
    assert statuses(result) == ["failed"] and "hunter2" not in str(result)
    [shown] = (await stats(client))["team"]["replicas"]
    assert shown["url"] == f"http://127.0.0.1:{port}/v1" and shown["healthy"] is False
    assert all("hunter2" not in m.message for m in client.messages)


async def test_a_bad_team_url_is_one_warning_and_the_default(
    client: LanguageClient, tmp_path: Path
) -> None:
    await start(client, tmp_path, team(["http://gpu:8000/v1", 5]))
    result = await refactor_some(client, tmp_path, 1)
    assert statuses(result) == ["refused"] and "team.url" in result["outcomes"][0]["message"]
    warnings = [m.message for m in client.messages if "not valid" in m.message]
    assert len(warnings) == 1 and "team.url" in warnings[0], client.messages
    assert (await stats(client))["team"]["replicas"] == []


def test_doctor_checks_every_replica_from_the_environment_and_a_settings_file(
    team_server: TeamServer, tmp_path: Path
) -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    settings = tmp_path / "settings.json"
    settings.write_text('{"team": {"model": "coder", "url": "http://ignored:1/v1"}}')
    env = {k: v for k, v in os.environ.items() if not k.startswith("LSP_INFER_")}
    env |= {"LSP_INFER_TEAM_URL": f"{team_server.url}, {dead}", "LSP_INFER_TEAM_API_KEY": API_KEY}
    done = subprocess.run(
        [sys.executable, "-m", "lsp_infer", "doctor", "--settings", str(settings)],
        capture_output=True, text=True, env=env, timeout=240,
    )  # fmt: skip
    out = done.stdout
    assert f"ok    settings from {settings}" in out
    assert f"ok    {team_server.url}: serving coder" in out  # the environment wins over the file
    if TEAM_SERVER == "vllm":  # which vLLM, and what it does with priorities
        assert f"ok    {team_server.url}: serving coder on vLLM 0.32.0; 0 running" in out
        assert "accepts request priorities" in out and "--scheduling-policy priority" in out
    assert f"FAIL  {dead}: cannot connect" in out and "ignored" not in out
    assert done.returncode == 1 and API_KEY not in out
