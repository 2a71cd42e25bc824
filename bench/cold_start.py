"""Cold start (spawn → first suggestion) and single-request latency, with a raw baseline.

Runs `lsp-infer serve` over stdio with a real LSP client and the embedded default
model, and, in the same run, the same model and prompts through llama-cpp-python
directly (the floor: nothing but the model). Figures are medians over --runs.

The server runs twice per run: with the current file only in the prompt (context.enabled
false: the floor's prompt) and with the default settings, where the other open files (the
earlier cases) may add up to context.extraTokens of extra context to a cold prompt.

Requests are automatic (as typing triggers them), so the server answers with one suggestion,
as the floor does; --invoked asks as a user's shortcut does, for which the server also decodes
the other choices (completion.choices) before answering. The server's cold prompt is a
cold-start window (completion.coldStartMs); the floor's is the whole window.

    python bench/cold_start.py --runs 5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from lsp_infer.threads import set_thread_waiting

# How the server's llama.cpp threads wait (threads.set_thread_waiting), set before llama.cpp
# loads (lsp_infer imports it lazily), so that the raw figures and the server's compare.
set_thread_waiting()

ADD = "def add(a, b):\n    return "

# Single-request cases: real code nobody here wrote (the standard library). One hole
# per module, so every request is a cold prompt (no KV state shared between them):
# the cursor right after "return " on the first return line past the middle of the file.
STDLIB = Path(json.__file__).parent.parent
MODULES = [
    "json/encoder.py",
    "textwrap.py",
    "shlex.py",
    "difflib.py",
    "fractions.py",
    "calendar.py",
    "csv.py",
    "glob.py",
    "pprint.py",
    "string.py",
]


def stdlib_cases(count: int) -> list[tuple[str, int]]:
    cases = []
    for name in MODULES[:count]:
        text = (STDLIB / name).read_text()
        found = text.find("return ", len(text) // 2)
        cases.append((text, found + len("return ")))
    return cases


def position_of(text: str, offset: int) -> types.Position:
    before = text[:offset]
    line = before.count("\n")
    column = len(before) - (before.rfind("\n") + 1)
    return types.Position(
        line=line, character=len(before[-column:].encode("utf-16-le")) // 2 if column else 0
    )


async def server_run(
    cases: list[tuple[str, int]],
    options: dict[str, object],
    trigger: types.InlineCompletionTriggerKind,
) -> dict[str, object]:
    client = LanguageClient("bench", "0")

    @client.feature("lspInfer/status")
    def model_status(params: object) -> None:  # the bench times answers, not this
        pass

    spawned = time.perf_counter()
    await client.start_io(sys.executable, "-m", "lsp_infer", "serve", "--log-level", "warning")
    await client.initialize_async(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            root_uri=Path.cwd().as_uri(),
            initialization_options=options,
        )
    )
    initialized = time.perf_counter()
    client.initialized(types.InitializedParams())
    uri = "file:///bench/add.py"
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=ADD)
        )
    )
    first = await client.text_document_inline_completion_async(
        types.InlineCompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=1, character=11),
            context=types.InlineCompletionContext(trigger_kind=trigger),
        )
    )
    first_at = time.perf_counter()
    assert first and first.items and "a + b" in str(first.items[0].insert_text), first

    latencies, suggestions = [], []
    for index, (text, offset) in enumerate(cases):
        case_uri = f"file:///bench/case{index}.py"
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=case_uri, language_id="python", version=1, text=text
                )
            )
        )
        started = time.perf_counter()
        answer = await client.text_document_inline_completion_async(
            types.InlineCompletionParams(
                text_document=types.TextDocumentIdentifier(uri=case_uri),
                position=position_of(text, offset),
                context=types.InlineCompletionContext(trigger_kind=trigger),
            )
        )
        latencies.append(time.perf_counter() - started)
        items = answer.items if isinstance(answer, types.InlineCompletionList) else []
        suggestions.append(str(items[0].insert_text) if items else "")
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return {
        "initialize_s": initialized - spawned,
        "first_suggestion_s": first_at - spawned,
        "latencies_s": latencies,
        "suggestions": suggestions,
    }


RAW_SCRIPT = r"""
import json, sys, time
spawned_wall = float(sys.argv[1])
t0 = time.perf_counter()
from llama_cpp import Llama
from lsp_infer.models import ensure_default_model
from lsp_infer.local.loaded_model import default_threads
from lsp_infer.local.prompt_builder import PREFIX_ANCHOR_LINES
from lsp_infer.core.window import fit_window
from lsp_infer.core.prompts import TEMPLATES
cases, suggestions = json.loads(sys.stdin.read())
llm = Llama(model_path=str(ensure_default_model()), n_ctx=4096, n_batch=256, n_ubatch=256,
            n_threads=default_threads(), n_threads_batch=default_threads(), verbose=False)
def count(text):
    return len(llm.tokenize(text.encode(), add_bos=False, special=False)) if text else 0
def complete(text, offset, n_tokens):
    w = fit_window(text, offset, 512, count, suffix_tokens=128, anchor_lines=PREFIX_ANCHOR_LINES,
                   anchor_slack=512 // 4)
    prompt = "<|fim_prefix|>" + w.prefix + "<|fim_suffix|>" + w.suffix + "<|fim_middle|>"
    llm.reset()  # a cold prompt each time, as the server sees for a newly opened file
    # Generate as many tokens as the server's suggestion had (+1 for its stop token).
    out = llm.create_completion(prompt, max_tokens=n_tokens, temperature=0.0)
    return out["choices"][0]["text"]
first = complete("def add(a, b):\n    return ", len("def add(a, b):\n    return "), 6)
first_at_wall = time.time()
lat = []
for (text, offset), suggestion in zip(cases, suggestions):
    n = count(suggestion) + 1
    s = time.perf_counter(); complete(text, offset, n); lat.append(time.perf_counter() - s)
print(json.dumps({"first_suggestion_s": first_at_wall - spawned_wall, "latencies_s": lat,
                  "first": first}))
"""


def raw_run(cases: list[tuple[str, int]], suggestions: list[str]) -> dict[str, float | list[float]]:
    out = subprocess.run(
        [sys.executable, "-c", RAW_SCRIPT, repr(time.time())],
        input=json.dumps([cases, suggestions]),
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float | list[float]] = json.loads(out.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cases", type=int, default=5)
    parser.add_argument("--invoked", action="store_true", help="invoked requests (choices)")
    parser.add_argument("--options", default="{}", help="more initializationOptions (JSON)")
    args = parser.parse_args()
    cases = stdlib_cases(args.cases)
    kinds = types.InlineCompletionTriggerKind
    trigger = kinds.Invoked if args.invoked else kinds.Automatic
    more = json.loads(args.options)
    server_first, raw_first, server_lat, raw_lat, init = [], [], [], [], []
    context_first, context_lat = [], []
    for _ in range(args.runs):
        s = asyncio.run(server_run(cases, {**more, "context": {"enabled": False}}, trigger))
        r = raw_run(cases, s["suggestions"])  # type: ignore[arg-type]
        c = asyncio.run(server_run(cases, more, trigger))
        context_first.append(c["first_suggestion_s"])
        context_lat += c["latencies_s"]  # type: ignore[operator]
        init.append(s["initialize_s"])
        server_first.append(s["first_suggestion_s"])
        raw_first.append(r["first_suggestion_s"])
        server_lat += s["latencies_s"]  # type: ignore[operator]
        raw_lat += r["latencies_s"]  # type: ignore[operator]
    med = statistics.median
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}"
    )
    print(f"runs: {args.runs}, single-request cases per run: {len(cases)} (one stdlib module each)")
    print(f"{'':34} {'lsp-infer':>10} {'raw floor':>10} {'ratio':>6}")
    print(f"{'spawn -> initialize response (s)':34} {med(init):10.3f} {'':>10} {'':>6}")
    print(
        f"{'spawn -> first suggestion (s)':34} {med(server_first):10.3f} {med(raw_first):10.3f} "
        f"{med(server_first) / med(raw_first):6.2f}"
    )
    print(
        f"{'single request, cold prompt (s)':34} {med(server_lat):10.3f} {med(raw_lat):10.3f} "
        f"{med(server_lat) / med(raw_lat):6.2f}"
    )
    print(
        f"{'  p95 (s)':34} {sorted(server_lat)[int(0.95 * (len(server_lat) - 1))]:10.3f} "
        f"{sorted(raw_lat)[int(0.95 * (len(raw_lat) - 1))]:10.3f}"
    )
    print("default settings (extra context from the other open files):")
    print(
        f"{'spawn -> first suggestion (s)':34} {med(context_first):10.3f} {med(raw_first):10.3f} "
        f"{med(context_first) / med(raw_first):6.2f}"
    )
    print(
        f"{'single request, cold prompt (s)':34} {med(context_lat):10.3f} {med(raw_lat):10.3f} "
        f"{med(context_lat) / med(raw_lat):6.2f}"
    )


if __name__ == "__main__":
    main()
