"""Typing benchmark: replay typing of real code through the real server, side by side with
a serial baseline and the raw floor, in the same run.

A "typist" types function bodies from the standard library (code nobody here wrote) one
character at a time at a human pace (60–350 ms between keys, seeded), pausing at the end of
every line and now and then mid-line. At each pause we measure pause → suggestion: from the
last keystroke until the answer for the text as it now stands arrives.

Clients:
  vscode     lsp-infer serve; a request on every keystroke, the previous one cancelled
             ($/cancelRequest), as VS Code does.
  neovim     lsp-infer serve; a request 200 ms after the last keystroke (debounce), never
             cancelled, as Neovim 0.12's native inline completion does.
  serial     llama-cpp-python's own OpenAI-compatible server (python -m llama_cpp.server, same
             model and threads) with a client sending one prefix-first FIM completion per
             keystroke and waiting for none, as simple editor plugins do.
  floor      only the prompts at the pauses, run one after another through llama-cpp-python in
             this process (the same code path as the server's model lane), nothing else.
  vscode+next, neovim+next
             the same, asking lspInfer/nextEdit after each edit (VS Code style 300 ms after
             the last edit, as both plugins do; Neovim style 150 ms, twice as often as the
             plugin, a harder case): the typing cost of next edits, side
             by side with the client without them.

    python bench/keystrokes.py            # all four, default workload
    python bench/keystrokes.py --quick    # a shorter workload
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import random
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from lsprotocol import types
from pygls.lsp.client import LanguageClient

from lsp_infer.config import CompletionSettings, ModelSettings
from lsp_infer.core.cancel import CancelToken
from lsp_infer.core.engine import CompletionEngine
from lsp_infer.core.prompts import TEMPLATES
from lsp_infer.core.window import fit_window
from lsp_infer.local.lane import ModelLane
from lsp_infer.local.llama_cpp import LlamaCppBackend
from lsp_infer.local.loaded_model import default_threads
from lsp_infer.models import ensure_default_model
from lsp_infer.stats import percentile
from lsp_infer.threads import set_thread_waiting

# How the server's llama.cpp threads wait (threads.set_thread_waiting), set before llama.cpp
# loads (lsp_infer imports it lazily), so that the raw figures and the server's compare.
set_thread_waiting()

STDLIB = Path(json.__file__).parent.parent
# The pause after an edit before asking lspInfer/nextEdit: the plugins' 300 ms (editors/vscode/
# src/nextEdit.ts NEXT_EDIT_PAUSE_MS, the Neovim plugin's next_edit.debounce_ms); the
# Neovim-style client asks after 150 ms, more often than its plugin, a harder case.
NEXT_EDIT_PAUSE_MS = {"vscode": 300, "neovim": 150}
# (module, function): the body of each function is typed, the rest of the file is there.
FUNCTIONS = [
    ("textwrap.py", "def indent("),
    ("shlex.py", "def quote("),
    ("glob.py", "def _iglob("),
    ("fnmatch.py", "def filter("),
]


@dataclass(frozen=True)
class Workload:
    name: str
    before: str  # file text up to the body
    body: str  # what gets typed
    after: str  # file text after the body


def workloads(max_chars: int) -> list[Workload]:
    result = []
    for module, signature in FUNCTIONS:
        source = (STDLIB / module).read_text()
        start = source.index(signature)
        body_start = source.index(":\n", start) + 2
        # skip a docstring: the typist starts at the first code line
        lines = source[body_start:].split("\n")
        index = 0
        if lines[0].strip().startswith(('"""', "'''")):
            quote = lines[0].strip()[:3]
            index = (
                1
                if lines[0].strip().count(quote) >= 2
                else next(i for i in range(1, len(lines)) if quote in lines[i]) + 1
            )
        body_start += sum(len(x) + 1 for x in lines[:index])
        end = body_start
        for line in source[body_start:].split("\n"):
            if line.strip() and not line.startswith(" "):
                break
            end += len(line) + 1
        body = source[body_start:end].rstrip() + "\n"
        body = body[:max_chars]
        body = body[: body.rfind("\n") + 1] or body
        result.append(
            Workload(f"{module}:{signature[4:-1]}", source[:body_start], body, source[end:])
        )
    return result


@dataclass
class Event:
    kind: str  # "key" or "pause"
    text: str = ""  # the character typed
    delay: float = 0.0  # seconds before this key
    reading: bool = False  # a pause where the typist stops to read (--read-ms)


def script(body: str, rng: random.Random) -> list[Event]:
    events: list[Event] = []
    at_line_start = True
    lines = 0
    for char in body:
        if char == "\n" and not at_line_start:
            lines += 1
            events.append(Event("pause", reading=lines % 4 == 0))
        events.append(Event("key", char, min(0.35, max(0.06, rng.gauss(0.15, 0.05)))))
        at_line_start = char == "\n"
        if char in "(=," and rng.random() < 0.3:
            events.append(Event("pause"))
    return events


@dataclass
class Result:
    pauses_ms: list[float] = field(default_factory=list)
    keystrokes: int = 0
    next_edits: int = 0  # lspInfer/nextEdit requests sent
    stats: dict[str, Any] = field(default_factory=dict)


def plain(value: Any) -> Any:
    """pygls' client returns untyped results as namedtuples; make them dicts again."""
    if hasattr(value, "_asdict"):
        return {key: plain(item) for key, item in value._asdict().items()}
    return value


def position_of(text: str, offset: int) -> types.Position:
    line = text.count("\n", 0, offset)
    start = text.rfind("\n", 0, offset) + 1
    return types.Position(line=line, character=len(text[start:offset].encode("utf-16-le")) // 2)


# -- lsp-infer over stdio ------------------------------------------------------------------


async def run_server(
    mode: str,
    loads: list[Workload],
    rng: random.Random,
    options: dict[str, Any],
    tabs: bool = False,
    read_ms: int = 0,
    server_log: str | None = None,
    next_edit_ms: int | None = None,
) -> Result:
    """``next_edit_ms``: ask lspInfer/nextEdit this long after the last edit, as the
    plugins do (None: never)."""
    client = LanguageClient("typing-bench", "0")

    @client.feature("lspInfer/status")
    def model_status(params: Any) -> None:  # the bench waits on answers, not on this
        pass

    level = "debug" if server_log else "warning"
    server = [sys.executable, "-m", "lsp_infer", "serve", "--log-level", level]
    if server_log:  # debug lines go to the file; stderr (a pipe nobody reads) gets none
        server = ["/bin/sh", "-c", 'exec "$@" 2>/dev/null', "sh", *server, "--log-file", server_log]
    await client.start_io(*server)
    await client.initialize_async(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            root_uri=Path.cwd().as_uri(),
            initialization_options=options,
        )
    )
    client.initialized(types.InitializedParams())
    result = Result()
    uris = [f"file:///bench/{i}_{Path(w.name.split(':')[0]).name}" for i, w in enumerate(loads)]

    def open_document(uri: str, text: str) -> None:
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri, language_id="python", version=1, text=text
                )
            )
        )

    def close_document(uri: str) -> None:
        client.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )

    if tabs:  # every file is open from the start, as editor tabs
        for uri, load in zip(uris, loads, strict=True):
            open_document(uri, load.before + load.after)
    for uri, load in zip(uris, loads, strict=True):
        text = load.before + load.after
        offset = len(load.before)
        version = 1
        if not tabs:
            open_document(uri, text)
        pending: asyncio.Future[Any] | None = None
        pending_id: str | None = None
        debounce: asyncio.TimerHandle | None = None
        next_edit_timer: asyncio.TimerHandle | None = None
        last_key = time.perf_counter()
        request_for: dict[int, asyncio.Future[Any]] = {}

        def request(
            ver: int, at: types.Position, uri: str = uri, request_for: dict[int, Any] = request_for
        ) -> tuple[str, asyncio.Future[Any]]:
            msg_id = f"r{uri}-{ver}-{time.perf_counter_ns()}"
            future = client.protocol.send_request_async(
                types.TEXT_DOCUMENT_INLINE_COMPLETION,
                types.InlineCompletionParams(
                    text_document=types.TextDocumentIdentifier(uri=uri),
                    position=at,
                    context=types.InlineCompletionContext(
                        trigger_kind=types.InlineCompletionTriggerKind.Automatic
                    ),
                ),
                msg_id=msg_id,
            )
            future.add_done_callback(lambda f: f.cancelled() or f.exception())  # retrieved
            request_for[ver] = future
            return msg_id, future

        def ask_next_edit(ver: int, at: types.Position, uri: str = uri) -> None:
            params = {"textDocument": {"uri": uri, "version": ver},
                      "position": {"line": at.line, "character": at.character}}  # fmt: skip
            future = client.protocol.send_request_async("lspInfer/nextEdit", params)
            future.add_done_callback(lambda f: f.cancelled() or f.exception())
            result.next_edits += 1

        for event in script(load.body, rng):
            if event.kind == "pause":
                # Wait for the answer for the text as it stands now.
                if mode == "neovim" and debounce is not None:
                    await asyncio.sleep(max(0.0, 0.2 - (time.perf_counter() - last_key)) + 0.001)
                future = request_for.get(version)
                if future is None:  # nothing typed since the last pause
                    continue
                with contextlib.suppress(Exception):  # cancelled or failed: still an answer
                    await asyncio.wait_for(asyncio.shield(future), timeout=120)
                result.pauses_ms.append((time.perf_counter() - last_key) * 1000)
                await asyncio.sleep(0.3 + (read_ms / 1000 if event.reading else 0))
                continue
            await asyncio.sleep(event.delay)
            text = text[:offset] + event.text + text[offset:]
            at = position_of(text, offset)
            offset += len(event.text)
            version += 1
            result.keystrokes += 1
            client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                    content_changes=[
                        types.TextDocumentContentChangePartial(
                            range=types.Range(start=at, end=at), text=event.text
                        )
                    ],
                )
            )
            last_key = time.perf_counter()
            cursor = position_of(text, offset)
            if next_edit_ms is not None:
                if next_edit_timer is not None:
                    next_edit_timer.cancel()
                next_edit_timer = asyncio.get_running_loop().call_later(
                    next_edit_ms / 1000, lambda v=version, c=cursor: ask_next_edit(v, c)
                )
            if mode == "vscode":
                if pending is not None and not pending.done() and pending_id is not None:
                    client.protocol.notify("$/cancelRequest", types.CancelParams(id=pending_id))
                pending_id, pending = request(version, cursor)
            else:
                if debounce is not None:
                    debounce.cancel()
                debounce = asyncio.get_running_loop().call_later(
                    0.2, lambda v=version, c=cursor, send=request: send(v, c)
                )
        if debounce is not None:
            debounce.cancel()
        if next_edit_timer is not None:
            next_edit_timer.cancel()
        if not tabs:
            close_document(uri)
    if tabs:
        for uri in uris:
            close_document(uri)
    result.stats = plain(await client.protocol.send_request_async("lspInfer/stats", {}))
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return result


# -- the serial baseline: llama_cpp.server -------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_llama_server(port: int) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(ensure_default_model()), "--host", "127.0.0.1", "--port", str(port),
            "--n_ctx", "4096", "--n_threads", str(default_threads()),
            "--n_threads_batch", str(default_threads()), "--n_batch", "256",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=1).status_code == 200:
                return process
        except httpx.HTTPError:
            time.sleep(0.3)
    process.kill()
    raise RuntimeError("llama_cpp.server did not start")


def approx_tokens(text: str) -> int:
    return len(text) // 3 + 1


def naive_prompt(text: str, offset: int, budget: int) -> str:
    window = fit_window(text, offset, budget, approx_tokens)
    return "<|fim_prefix|>" + window.prefix + "<|fim_suffix|>" + window.suffix + "<|fim_middle|>"


async def run_serial(
    loads: list[Workload], rng: random.Random, budget: int, max_tokens: int
) -> Result:
    port = free_port()
    server = start_llama_server(port)
    result = Result()
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=600) as http:
            for load in loads:
                text, offset = load.before + load.after, len(load.before)
                latest: asyncio.Task[Any] | None = None
                last_key = time.perf_counter()
                for event in script(load.body, rng):
                    if event.kind == "pause":
                        if latest is None:
                            continue
                        await latest
                        result.pauses_ms.append((time.perf_counter() - last_key) * 1000)
                        latest = None
                        await asyncio.sleep(0.3)
                        continue
                    await asyncio.sleep(event.delay)
                    text = text[:offset] + event.text + text[offset:]
                    offset += len(event.text)
                    result.keystrokes += 1
                    last_key = time.perf_counter()
                    body = {
                        "prompt": naive_prompt(text, offset, budget),
                        "max_tokens": max_tokens,
                        "temperature": 0,
                        "stop": ["<|endoftext|>", "<|file_sep|>", "\n\n"],
                    }
                    latest = asyncio.create_task(http.post("/v1/completions", json=body))
                if latest is not None:
                    await latest
    finally:
        server.terminate()
        server.wait(timeout=30)
    return result


# -- the raw floor ---------------------------------------------------------------------------


def pause_states(loads: list[Workload], rng: random.Random) -> list[tuple[str, int]]:
    """(text, offset) at every pause, as the typist leaves it."""
    states = []
    for load in loads:
        text, offset = load.before + load.after, len(load.before)
        typed_since_pause = False
        for event in script(load.body, rng):
            if event.kind == "pause":
                if typed_since_pause:
                    states.append((text, offset))
                typed_since_pause = False
                continue
            text = text[:offset] + event.text + text[offset:]
            offset += len(event.text)
            typed_since_pause = True
    return states


def run_floor(states: list[tuple[str, int]], settings: CompletionSettings, order: str) -> Result:
    lane = ModelLane()
    backend = LlamaCppBackend(lane)
    lane.run_blocking(backend.load_blocking, ModelSettings(fim_order=order), None)
    engine = CompletionEngine(backend)
    result = Result()

    async def go() -> None:
        for text, offset in states:
            started = time.perf_counter()
            await engine.complete(text, offset, settings, CancelToken())
            result.pauses_ms.append((time.perf_counter() - started) * 1000)

    asyncio.run(go())
    lane.run_blocking(backend._close)
    lane.shutdown()
    return result


def naive_prompt_tokens_per_keystroke(
    loads: list[Workload], rng: random.Random, budget: int
) -> float:
    """Prompt tokens a prefix-first (PSM) server evaluates per keystroke with llama.cpp's own
    longest-common-prefix KV reuse: the baseline the keystroke core is measured against."""
    lane = ModelLane()
    backend = LlamaCppBackend(lane)
    lane.run_blocking(backend.load_blocking, ModelSettings(), None)
    template, vocabulary = TEMPLATES["qwen"], backend.vocabulary
    assert vocabulary is not None
    evaluated, keys = 0, 0
    previous: list[int] = []
    for load in loads:
        text, offset = load.before + load.after, len(load.before)
        for event in script(load.body, rng):
            if event.kind == "pause":
                continue
            text = text[:offset] + event.text + text[offset:]
            offset += len(event.text)
            window = lane.run_blocking(fit_window, text, offset, budget, vocabulary.count)
            prompt = template.build(window.prefix, window.suffix, "psm")
            tokens, _healed, _stable = lane.run_blocking(vocabulary.tokenize, prompt, False, False)
            common = 0
            for a, b in zip(previous, tokens, strict=False):
                if a != b:
                    break
                common += 1
            evaluated += len(tokens) - common
            keys += 1
            previous = tokens
    lane.run_blocking(backend._close)
    lane.shutdown()
    return evaluated / max(keys, 1)


def pct(values: list[float], fraction: float) -> float:
    value = percentile(values, fraction)
    assert value is not None
    return value


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--chars", type=int, default=90, help="characters typed per function")
    parser.add_argument("--quick", action="store_true", help="two functions, 60 characters each")
    parser.add_argument("--clients", default="vscode,neovim,serial,floor")
    parser.add_argument("--order", default="auto", help="model.fimOrder for the server")
    parser.add_argument(
        "--options", default="{}", help="more initializationOptions for the server (JSON)"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--tabs", action="store_true", help="open every typed file from the start (editor tabs)"
    )
    parser.add_argument(
        "--read-ms", type=int, default=0,
        help="after every fourth line the typist stops to read this long (0: never)",
    )  # fmt: skip
    parser.add_argument("--server-log", help="the server's debug log goes to this file")
    args = parser.parse_args()
    loads = workloads(60 if args.quick else args.chars)[: 2 if args.quick else None]
    settings = CompletionSettings()
    options = {"model": {"fimOrder": args.order}, **json.loads(args.options)}
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(f"server options: {json.dumps(options)}")
    print(f"tabs: {args.tabs}, reading pauses: {args.read_ms} ms after every fourth line")
    print("typed: " + ", ".join(f"{w.name} ({len(w.body)} chars)" for w in loads))
    results: dict[str, Result] = {}
    for client in args.clients.split(","):
        rng = random.Random(args.seed)  # the same typing for every client
        started = time.perf_counter()
        if client in ("vscode", "neovim", "vscode+next", "neovim+next"):
            mode = client.removesuffix("+next")
            next_edit_ms = NEXT_EDIT_PAUSE_MS[mode] if client.endswith("+next") else None
            results[client] = asyncio.run(
                run_server(mode, loads, rng, options, args.tabs, args.read_ms, args.server_log,
                           next_edit_ms)
            )  # fmt: skip
        elif client == "serial":
            results[client] = asyncio.run(
                run_serial(loads, rng, settings.context_tokens, settings.max_tokens)
            )
        elif client == "floor":
            results[client] = run_floor(pause_states(loads, rng), settings, args.order)
        print(f"  {client}: {time.perf_counter() - started:.0f}s", file=sys.stderr, flush=True)
    naive = naive_prompt_tokens_per_keystroke(
        loads, random.Random(args.seed), settings.context_tokens
    )

    print(
        f"\n{'client':8} {'pauses':>6} {'p50 ms':>8} {'p95 ms':>8} {'prompt tok/key':>14} "
        f"{'wasted %':>8} {'answered':>8} {'cancelled':>9} {'superseded':>10}"
    )
    for name, result in results.items():
        s = result.stats
        per_key = (
            f"{s['promptTokensEvaluated'] / max(result.keystrokes, 1):14.1f}" if s else f"{'':>14}"
        )
        wasted = (
            f"{100 * s['tokensWasted'] / max(s['tokensGenerated'], 1):8.1f}" if s else f"{'':>8}"
        )
        counts = f"{s['answered']:8} {s['cancelled']:9} {s['superseded']:10}" if s else ""
        print(
            f"{name:8} {len(result.pauses_ms):6} {statistics.median(result.pauses_ms):8.0f} "
            f"{pct(result.pauses_ms, 0.95):8.0f} {per_key} {wasted} {counts}"
        )
        if result.next_edits:
            ne = s["nextEdit"]
            print(f"{'':8} next edits asked {result.next_edits}, answered in p50 "
                  f"{ne['p50Ms']:.2f} / p95 {ne['p95Ms']:.2f} ms, "
                  f"predicted {ne['predicted']}, the model asked {ne['model']['asked']} "
                  f"(stopped {ne['model']['stopped']})")  # fmt: skip
    print(f"\nprefix-first (PSM) prompt tokens per keystroke, llama.cpp prefix reuse: {naive:.1f}")
    for name in ("vscode", "neovim"):
        if name not in results:
            continue
        s = results[name].stats
        print(
            f"{name}: cancel→stop p95 {s['cancelToStopMs']['p95']} ms "
            f"(n={s['cancelToStopMs']['count']:.0f}), "
            f"type-ahead p95 {s['typeAheadMs']['p95']} ms (n={s['typeAheadMs']['count']:.0f}), "
            f"hits: type-ahead {s['typeAheadHits']}, cache {s['cacheHits']}, "
            f"in-flight {s['inFlightHits']}, precompute {s['precomputeHits']}"
        )
        print(
            f"  tokens generated {s['tokensGenerated']}: {s['tokensWasted']} for superseded "
            f"requests, {s['tokensPrecomputed']} by idle precompute; "
            f"prompt tokens evaluated {s['promptTokensEvaluated']}, "
            f"reused {s['promptTokensReused']}"
        )
        print(
            f"  extra context: in {s['generationsWithExtra']} of {s['generations']} "
            f"generations, {s['contextRefreshes']} background evaluations of a new pick, "
            f"{s['contextSwitches']} put in use"
        )
        for other in ("serial", "floor"):
            if other in results:
                ratio = pct(results[name].pauses_ms, 0.95) / pct(results[other].pauses_ms, 0.95)
                print(f"  p95 pause→suggestion vs {other}: {ratio:.2f}x")
    print(
        "\nraw: "
        + json.dumps(
            {
                k: {"pauses_ms": [round(x) for x in v.pauses_ms], "keystrokes": v.keystrokes}
                for k, v in results.items()
            }
        )
    )


if __name__ == "__main__":
    main()
