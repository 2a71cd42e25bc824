"""The seed's thesis, measured: llama.cpp wins for one user, vLLM under concurrency.

N editors (the levels, e.g. 1, 2, 4, 8, 16) start together; each asks for an invoked
completion (a fill-in-the-middle prompt cut from a standard-library function, up to 24 tokens),
waits for it, then for a refactor of that function (a chat request with the instruction, up to
160 tokens), as the team tier sends them. The same requests go to:

  inproc    each editor's own in-process llama.cpp: a process per editor with the embedded
            model (lsp-infer's threads and their waiting), all on this machine;
  llamacpp  one llama_cpp.server (the team tests' stand-in; it runs one request at a time);
  vllm      one vLLM at --vllm-url (e.g. `lsp-infer team-server --run --model embedded`).

Per level: the wall time until the last editor is done, tokens generated per second over it
(throughput), and the p50/p95 latency of the completions and of the refactors.

    python bench/thesis.py --backends inproc,llamacpp --levels 1,2,4,8,16
    python bench/thesis.py --backends vllm --vllm-url http://127.0.0.1:8000/v1 --api-key KEY
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).parents[1]))
from bench.team_batch import files
from lsp_infer.models import ensure_default_model
from lsp_infer.threads import thread_waiting

API_KEY = "bench-key"
COMPLETION_TOKENS, REFACTOR_TOKENS = 24, 160
INSTRUCTION = "Add type hints to the function signature. Answer with the whole function."


def requests_for(editor: int) -> list[tuple[str, dict[str, Any]]]:
    """The editor's two requests: ("completion", body) then ("refactor", body)."""
    _, text = files()[editor % len(files())]
    lines = text.split("\n")
    cut = max(1, len(lines) // 2)  # the hole: the start of the function's middle line
    prefix, suffix = "\n".join(lines[:cut]) + "\n", "\n".join(lines[cut:])
    # Qwen2.5-Coder's fill-in-the-middle tokens, as the local tier's prompt uses them.
    fim = f"<|fim_prefix|>{prefix}<|fim_suffix|>{suffix}<|fim_middle|>"
    completion = {"prompt": fim, "max_tokens": COMPLETION_TOKENS, "temperature": 0}
    messages = [
        {"role": "system", "content": "You edit code. Answer with the code only."},
        {"role": "user", "content": f"{INSTRUCTION}\n\n```python\n{text}\n```"},
    ]
    refactor = {"messages": messages, "max_tokens": REFACTOR_TOKENS, "temperature": 0}
    return [("completion", completion), ("refactor", refactor)]


@dataclass
class Result:
    latencies: dict[str, list[float]] = field(
        default_factory=lambda: {"completion": [], "refactor": []}
    )
    tokens: int = 0
    wall: float = 0.0


# -- one server for everyone ----------------------------------------------------------------


async def server_editor(http: httpx.AsyncClient, url: str, editor: int, result: Result) -> None:
    for kind, body in requests_for(editor):
        path = "/completions" if kind == "completion" else "/chat/completions"
        started = time.perf_counter()
        response = await http.post(f"{url}{path}", json={"model": "coder", **body})
        response.raise_for_status()
        result.latencies[kind].append(time.perf_counter() - started)
        result.tokens += int(response.json()["usage"]["completion_tokens"])


async def server_level(url: str, api_key: str, editors: int) -> Result:
    result = Result()
    headers = {"Authorization": f"Bearer {api_key}"}
    limits = httpx.Limits(max_connections=64)
    async with httpx.AsyncClient(timeout=1800, headers=headers, limits=limits) as http:
        started = time.perf_counter()
        await asyncio.gather(*(server_editor(http, url, e, result) for e in range(editors)))
        result.wall = time.perf_counter() - started
    return result


# -- a model in every editor ----------------------------------------------------------------


def inproc_editor(editor: int, threads: int, ready: Any, go: Any, out: Any) -> None:
    os.environ.update(thread_waiting(os.environ))
    import llama_cpp

    llm = llama_cpp.Llama(str(ensure_default_model()), n_ctx=2048, n_threads=threads, verbose=False)
    ready.wait()  # every editor has loaded its model
    go.wait()
    latencies, tokens = [], 0
    for kind, body in requests_for(editor):
        started = time.perf_counter()
        if kind == "completion":
            answer: Any = llm.create_completion(**body)
        else:
            answer = llm.create_chat_completion(**body)
        latencies.append((kind, time.perf_counter() - started))
        tokens += int(answer["usage"]["completion_tokens"])
    out.put((latencies, tokens))


def inproc_level(editors: int, threads: int) -> Result:
    context = multiprocessing.get_context("spawn")
    ready, go, out = context.Barrier(editors + 1), context.Barrier(editors + 1), context.Queue()
    processes = [
        context.Process(target=inproc_editor, args=(e, threads, ready, go, out))
        for e in range(editors)
    ]
    for process in processes:
        process.start()
    ready.wait()
    started = time.perf_counter()
    go.wait()
    result = Result()
    for _ in range(editors):
        latencies, tokens = out.get()
        for kind, seconds in latencies:
            result.latencies[kind].append(seconds)
        result.tokens += tokens
    result.wall = time.perf_counter() - started
    for process in processes:
        process.join()
    return result


# -- the stand-in ---------------------------------------------------------------------------


def start_llamacpp_server(threads: int) -> tuple[Any, str]:
    from tests.helpers import free_port, start_openai_server

    port = free_port()
    return start_openai_server(API_KEY, port, threads), f"http://127.0.0.1:{port}/v1"


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def report(backend: str, editors: int, result: Result) -> dict[str, Any]:
    row = {
        "backend": backend, "editors": editors, "wall_s": round(result.wall, 2),
        "tokens": result.tokens, "tokens_per_s": round(result.tokens / result.wall, 2),
    }  # fmt: skip
    for kind, values in result.latencies.items():
        row[f"{kind}_p50_s"] = round(statistics.median(values), 2)
        row[f"{kind}_p95_s"] = round(p(values, 0.95), 2)
    print(
        f"{backend:9} {editors:3d} {row['wall_s']:8.1f} {row['tokens']:6d} "
        f"{row['tokens_per_s']:7.1f}  {row['completion_p50_s']:6.1f} {row['completion_p95_s']:6.1f}"
        f"  {row['refactor_p50_s']:6.1f} {row['refactor_p95_s']:6.1f}",
        flush=True,
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backends", default="inproc,llamacpp")
    parser.add_argument("--levels", default="1,2,4,8,16")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--vllm-url", help="a running vLLM's .../v1")
    parser.add_argument("--api-key", default=API_KEY, help="the vLLM server's key")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    levels = [int(n) for n in args.levels.split(",")]
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores; threads {args.threads}")
    print(f"{'backend':9} {'N':>3} {'wall s':>8} {'tokens':>6} {'tok/s':>7}  "
          f"{'cmp p50':>6} {'p95':>6}  {'ref p50':>6} {'p95':>6}")  # fmt: skip
    rows = []
    for backend in args.backends.split(","):
        if backend == "inproc":
            rows += [report(backend, n, inproc_level(n, args.threads)) for n in levels]
        elif backend == "llamacpp":
            process, url = start_llamacpp_server(args.threads)
            try:
                asyncio.run(server_level(url, API_KEY, 1))  # warm-up
                rows += [report(backend, n, asyncio.run(server_level(url, API_KEY, n)))
                         for n in levels]  # fmt: skip
            finally:
                process.terminate()
                process.wait(timeout=30)
        elif backend == "vllm":
            if not args.vllm_url:
                parser.error("--backends vllm needs --vllm-url")
            asyncio.run(server_level(args.vllm_url, args.api_key, 1))  # warm-up
            rows += [report(backend, n, asyncio.run(server_level(args.vllm_url, args.api_key, n)))
                     for n in levels]  # fmt: skip
        else:
            parser.error(f"unknown backend {backend!r}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
