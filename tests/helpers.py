"""Helpers shared by the LSP-level test suites."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import httpx
from pytest_lsp import LanguageClient

from lsp_infer.threads import thread_waiting


def start_raw_request(
    client: LanguageClient, method: str, params: Any
) -> tuple[str, asyncio.Future[Any]]:
    """Send a request with untyped params and an id of our own (to cancel it by); the future
    gets the untyped result."""
    msg_id = f"raw-{uuid.uuid4()}"
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    client.protocol._request_futures[msg_id] = future
    client.protocol._send_data({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
    return msg_id, future


async def raw_request(client: LanguageClient, method: str, params: Any) -> Any:
    """Send a request with untyped params and get the untyped result (pygls' typed client
    would refuse to build some requests, and lsprotocol mis-reads some results, e.g. a
    CodeAction that carries a command comes back as a Command)."""
    _, future = start_raw_request(client, method, params)
    return plain(await future)


def plain(value: Any) -> Any:
    """pygls' client turns untyped JSON objects into namedtuples; turn them back into dicts."""
    if hasattr(value, "_asdict"):
        return {key: plain(item) for key, item in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    return value


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until_up(
    url: str,
    process: subprocess.Popen[bytes],
    what: str,
    headers: dict[str, str] | None = None,
    timeout: float = 180,
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode}")
        try:
            if httpx.get(url, headers=headers or {}, timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            time.sleep(0.3)
    process.kill()
    raise RuntimeError(f"{what} did not start")


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()


def openai_server_command(api_key: str, port: int, threads: int = 2) -> list[str]:
    """llama-cpp-python's OpenAI-compatible server with the default model (served as "coder"),
    queuing concurrent requests the way vLLM does: without ``--interrupt_requests False`` a
    new request would interrupt the one streaming (vLLM never does that)."""
    from lsp_infer.models import ensure_default_model

    return [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(ensure_default_model()), "--model_alias", "coder",
        "--api_key", api_key, "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", "4096", "--n_threads", str(threads), "--interrupt_requests", "False",
    ]  # fmt: skip


def start_openai_server(api_key: str, port: int, threads: int = 2) -> subprocess.Popen[bytes]:
    """Start the stand-in server on ``port`` and wait until it answers /v1/models."""
    # OpenMP threads that spin long while waiting crawl when the machine is busy with
    # anything else (bench/HISTORY.md, "OpenMP wait policy"): the same waiting as lsp-infer's.
    env = {**os.environ, **thread_waiting(os.environ)}
    process = subprocess.Popen(
        openai_server_command(api_key, port, threads),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    wait_until_up(
        f"http://127.0.0.1:{port}/v1/models", process, "llama_cpp.server",
        {"Authorization": f"Bearer {api_key}"},
    )  # fmt: skip
    return process


# vLLM's CPU build: its venv (`make team-vllm` makes it beside .venv), the served name and
# context the team tests ask for. Its start compiles the model first: minutes on two cores.
VLLM_VENV = Path(
    os.environ.get("LSP_INFER_TEST_VLLM_VENV", Path(__file__).parents[1] / ".venv-vllm")
)
VLLM_START_TIMEOUT_S = 900


@contextmanager
def vllm_server(api_key: str, log: Path) -> Iterator[str]:
    """vLLM serving the embedded model on a free loopback port, started the way a team starts
    it (`lsp-infer team-server --run --model embedded`, from vLLM's venv). Yields .../v1."""
    lsp_infer = VLLM_VENV / "bin" / "lsp-infer"
    if not lsp_infer.exists():
        raise RuntimeError(f"no vLLM venv at {VLLM_VENV}: make team-vllm makes it")
    port = free_port()
    command = [
        str(lsp_infer), "team-server", "--run", "--model", "embedded", "--served-name", "coder",
        "--port", str(port), "--max-model-len", "4096",
    ]  # fmt: skip
    with log.open("wb") as output:
        process = subprocess.Popen(
            command, stdout=output, stderr=subprocess.STDOUT, start_new_session=True,
            env={**os.environ, "VLLM_API_KEY": api_key},
        )  # fmt: skip
    try:
        wait_until_up(
            f"http://127.0.0.1:{port}/v1/models", process, f"vLLM (its log: {log})",
            {"Authorization": f"Bearer {api_key}"}, timeout=VLLM_START_TIMEOUT_S,
        )  # fmt: skip
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        stop_group(process)


def stop_group(process: subprocess.Popen[bytes]) -> None:
    """Stop a process and everything it started (vLLM's engine runs in a child process)."""
    os.killpg(process.pid, signal.SIGTERM)
    with suppress(subprocess.TimeoutExpired):
        process.wait(timeout=60)
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


@contextmanager
def openai_server(api_key: str, threads: int = 2) -> Iterator[str]:
    """The stand-in for the team's vLLM server on a free loopback port. Yields .../v1."""
    port = free_port()
    process = start_openai_server(api_key, port, threads)
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        stop(process)
