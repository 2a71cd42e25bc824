"""Team tier: an 8-file batch vs the same files one by one, against a server with parallel slots.

The server is llama.cpp's own `llama-server -np 4` (four parallel slots, continuous batching),
built from the llama.cpp sources vendored in the llama-cpp-python sdist (the same version the
project pins), with the embedded default model — a CPU stand-in for vLLM. The client is the
project's Refactorer: the batch goes out with team.maxConcurrency = 4, the one-by-one run sends
each file after the previous answered. Also measured: the client's own overhead per file
(prompt, streaming parse, validation, diff) against an instant in-process server.

    python bench/team_batch.py                 # builds llama-server into bench/.build if needed
    python bench/team_batch.py --server PATH   # an existing llama-server binary
    python bench/team_batch.py --url URL --api-key KEY   # a running server, e.g. vLLM
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import httpx

from lsp_infer.config import TeamSettings
from lsp_infer.models import ensure_default_model
from lsp_infer.team.http_client import Clients, TeamClient
from lsp_infer.team.refactor import Refactorer, RefactorJob

BUILD = Path(__file__).parent / ".build"
STDLIB = Path(json.__file__).parent.parent
# Eight small functions from the standard library, each sent as its own file.
FUNCTIONS = [
    ("textwrap.py", "def indent("),
    ("shlex.py", "def quote("),
    ("fnmatch.py", "def filter("),
    ("glob.py", "def escape("),
    ("bisect.py", "def insort_right("),
    ("heapq.py", "def heappushpop("),
    ("colorsys.py", "def rgb_to_hsv("),
    ("base64.py", "def b64encode("),
]
INSTRUCTION = "Add type hints to the function signature"
API_KEY = "bench-key"


def files() -> list[tuple[str, str]]:
    result = []
    for module, signature in FUNCTIONS:
        source = (STDLIB / module).read_text()
        lines = source[source.index(signature) :].split("\n")
        kept = [lines[0]]
        for line in lines[1:]:  # the function: up to the next line that is not indented
            if line.strip() and not line.startswith((" ", "\t")):
                break
            kept.append(line)
        body = "\n".join(kept).rstrip() + "\n"
        result.append((f"{module.replace('.py', '')}_{signature[4:-1]}.py", body))
    return result


def build_llama_server() -> Path:
    binary = BUILD / "llama.cpp-build" / "bin" / "llama-server"
    if binary.exists():
        return binary
    BUILD.mkdir(exist_ok=True)
    version = "0.3.36"  # the version pyproject.toml pins
    sdist = BUILD / f"llama_cpp_python-{version}.tar.gz"
    if not sdist.exists():
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps",
             f"llama-cpp-python=={version}", "-d", str(BUILD)],
            check=True,
        )  # fmt: skip
    with tarfile.open(sdist) as tar:
        tar.extractall(BUILD, filter="data")
    source = BUILD / f"llama_cpp_python-{version}" / "vendor" / "llama.cpp"
    build = BUILD / "llama.cpp-build"
    flags = ["-DCMAKE_BUILD_TYPE=Release", "-DLLAMA_BUILD_SERVER=ON", "-DLLAMA_BUILD_TESTS=OFF",
             "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF"]  # fmt: skip
    subprocess.run(["cmake", "-S", str(source), "-B", str(build), *flags], check=True)
    parallel = str(os.cpu_count() or 2)
    subprocess.run(
        ["cmake", "--build", str(build), "--target", "llama-server", "-j", parallel], check=True
    )
    return binary


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(binary: Path, port: int, slots: int) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        [str(binary), "-m", str(ensure_default_model()), "--host", "127.0.0.1", "--port", str(port),
         "-np", str(slots), "-c", str(2048 * slots), "-t", str(os.cpu_count() or 2),
         "--api-key", API_KEY, "--alias", "coder"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return process
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    process.kill()
    raise RuntimeError("llama-server did not start")


def jobs(workspace: str) -> list[RefactorJob]:
    return [
        RefactorJob(f"file://{workspace}/{name}", 1, name, "python", text, INSTRUCTION)
        for name, text in files()
    ]


async def run(
    url: str, batch: bool, repeat: int, api_key: str = API_KEY, concurrency: int = 4
) -> tuple[list[float], list[str]]:
    settings = TeamSettings(
        url=url, api_key=api_key, model="coder", max_concurrency=concurrency, max_tokens=768
    )
    times, statuses = [], []
    for round_ in range(repeat):
        refactorer = Refactorer()
        work = jobs(f"/bench/round{round_}")
        started = time.perf_counter()
        if batch:
            outcomes = await refactorer.run_batch(work, settings)
        else:
            outcomes = []
            for job in work:
                outcomes += await refactorer.run_batch([job], settings)
        times.append(time.perf_counter() - started)
        statuses += [o.status for o in outcomes]
        await refactorer.aclose()
    return times, statuses


async def client_overhead(count: int = 200) -> float:
    """Milliseconds of client work per file, against a server that answers instantly."""
    work = jobs("/bench/overhead")

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method != "POST":  # the router's /metrics polls
            return httpx.Response(404)
        body = json.loads(request.content)
        code = body["messages"][1]["content"].split("```python\n", 1)[1].rsplit("```", 1)[0]
        events = "".join(
            f"data: {json.dumps({'choices': [{'index': 0, 'delta': {'content': piece}}]})}\n\n"
            for piece in ["```python\n", *code.splitlines(keepends=True), "```"]
        )
        done = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        events += f"data: {json.dumps(done)}\n\ndata: [DONE]\n\n"
        return httpx.Response(
            200, content=events.encode(), headers={"content-type": "text/event-stream"}
        )

    settings = TeamSettings(url="http://instant/v1", model="coder", max_concurrency=4)
    refactorer = Refactorer(
        Clients(lambda s: TeamClient(s, transport=httpx.MockTransport(handler)))
    )
    started = time.perf_counter()
    for _ in range(count // len(work)):
        await refactorer.run_batch(work, settings)
    elapsed = time.perf_counter() - started
    await refactorer.aclose()
    return elapsed * 1000 / (count // len(work) * len(work))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--server", type=Path, help="an existing llama-server binary")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--slots", type=int, default=4)
    parser.add_argument("--url", help="a running server's .../v1 (e.g. vLLM), served as 'coder'")
    parser.add_argument("--api-key", default=API_KEY, help="its key (with --url)")
    parser.add_argument(
        "--concurrency", type=int, help="team.maxConcurrency for the batch (default: --slots)"
    )
    args = parser.parse_args()
    concurrency = args.concurrency or args.slots
    server = None
    if args.url:
        url, served = args.url, f"the server at {args.url}"
    else:
        binary = args.server or (
            Path(shutil.which("llama-server")) if shutil.which("llama-server") else None
        )
        binary = binary or build_llama_server()
        port = free_port()
        server = start_server(binary, port, args.slots)
        url, served = f"http://127.0.0.1:{port}/v1", f"llama-server -np {args.slots}"
    try:
        asyncio.run(run(url, True, 1, args.api_key, concurrency))  # warm-up
        one_by_one, statuses_serial = asyncio.run(
            run(url, False, args.repeat, args.api_key, concurrency)
        )
        batched, statuses_batch = asyncio.run(
            run(url, True, args.repeat, args.api_key, concurrency)
        )
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
    overhead = asyncio.run(client_overhead())
    n = len(FUNCTIONS)
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores; {served}; batch with "
        f"team.maxConcurrency {concurrency}; {n} files; {args.repeat} rounds each"
    )
    print(f"{'mode':12} {'median s':>9} {'files/min':>10}  outcomes")
    for name, times, statuses in (("one by one", one_by_one, statuses_serial),
                                  ("batch", batched, statuses_batch)):  # fmt: skip
        median = statistics.median(times)
        counts = {s: statuses.count(s) for s in sorted(set(statuses))}
        print(f"{name:12} {median:9.1f} {60 * n / median:10.1f}  {counts}")
    ratio = statistics.median(one_by_one) / statistics.median(batched)
    print(f"throughput ratio (batch / one by one): {ratio:.2f}x")
    print(f"client overhead: {overhead:.2f} ms per file (prompt, stream parse, validation, diff)")


if __name__ == "__main__":
    main()
