"""Completion quality along the server's real paths: `lsp-infer serve` over stdio, a real LSP
client, the holes of bench/holes.py (code nobody here wrote), each in a file of its own.

Paths (what the user did before the suggestion that is scored):
  invoked  the file is opened and a suggestion invoked at once (Alt+] in VS Code)
  opened   the file is opened and a suggestion asked for at once, as typing asks (Automatic):
           the prompt is cold, so a cold start's smaller window answers (completion.coldStartMs)
  typed    the file is opened without the line above the hole, which is then typed a key at a
           time (a request per key, 60 ms apart, the one before cancelled as VS Code does),
           then Enter with its indentation, and the request after it is scored: typing into a
           file the server has just seen
  warmed   the file is opened, the editor says the cursor rests there (lspInfer/warm), the
           server evaluates the whole window in the background, then an automatic request

On the opened and typed paths the client then rests, as both plugins do: it announces
lspInfer/suggestionReady, and when the server says the whole window's suggestion is ready
where it answered, asks again there (an automatic request). Those rows are reported again as
"PATH+rest": what is on screen once the server is idle, and the time until it was shown.

Configurations are named JSON settings (initializationOptions), compared in the same run:
by default the defaults, and the whole window always (completion.coldStartMs 0).

Reports per configuration, path and suite: exact match of the first line, edit similarity,
the share of requests that showed something, the share of those whose first line is right,
and the latency of the scored request (p50 / p95).

    python bench/paths.py --suite header,local --holes 30
    python bench/paths.py --configs 'strict={"completion":{"minConfidence":0.3}}'
    python bench/paths.py --suite header --holes 20 --seed 3 --paths invoked,opened --json p.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from holes import Hole, score, suites
from lsprotocol import types
from pygls.lsp.client import LanguageClient

from lsp_infer.threads import set_thread_waiting

set_thread_waiting()  # the server's own waiting, set before anything loads llama.cpp

PATHS = ("invoked", "opened", "typed", "warmed")
WHOLE = {"completion": {"coldStartMs": 0}}
KEY_SECONDS = 0.06
# Polls of 0.3 s with the lane empty that end a rest: longer than context.idleMs (1 s).
QUIET_POLLS = 7


def position(text: str, offset: int) -> types.Position:
    before = text[:offset]
    column = before[before.rfind("\n") + 1 :]
    return types.Position(before.count("\n"), len(column.encode("utf-16-le")) // 2)


@dataclass
class Scored:
    suggestion: str
    seconds: float
    # After the rest (opened, typed): what is on screen once the server is idle, and the
    # time from the scored request until it was shown (None: no rest on this path).
    rested: Scored | None = None
    again: bool = False  # the server said a suggestion was ready here, and it was asked again


class Editor:
    """A real LSP client driving `lsp-infer serve` as an editor would, one file at a time."""

    def __init__(self, client: LanguageClient, ready: dict[str, Any]) -> None:
        self.client = client
        self.versions: dict[str, int] = {}
        self.ready = ready  # lspInfer/suggestionReady params by uri, as they come

    def open(self, uri: str, text: str) -> None:
        self.versions[uri] = 1
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
            )
        )

    def close(self, uri: str) -> None:
        self.client.text_document_did_close(
            types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri=uri))
        )

    def insert(self, uri: str, text: str, offset: int, typed: str) -> None:
        self.versions[uri] += 1
        at = position(text, offset)
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
                [types.TextDocumentContentChangePartial(types.Range(at, at), typed)],
            )
        )

    def ask(
        self, uri: str, text: str, offset: int, invoked: bool = False, msg_id: str | None = None
    ) -> asyncio.Future[Any]:
        kind = types.InlineCompletionTriggerKind
        return self.client.protocol.send_request_async(
            types.TEXT_DOCUMENT_INLINE_COMPLETION,
            types.InlineCompletionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=position(text, offset),
                context=types.InlineCompletionContext(
                    trigger_kind=kind.Invoked if invoked else kind.Automatic
                ),
            ),
            msg_id=msg_id,
        )

    async def suggestion(self, uri: str, text: str, offset: int, invoked: bool = False) -> Scored:
        started = time.perf_counter()
        answer = await self.ask(uri, text, offset, invoked)
        seconds = time.perf_counter() - started
        items = answer.items if isinstance(answer, types.InlineCompletionList) else []
        return Scored(str(items[0].insert_text) if items else "", seconds)

    async def stats(self) -> Any:
        """lspInfer/stats, as pygls' client gives an untyped result (attributes)."""
        return await self.client.protocol.send_request_async("lspInfer/stats", {})

    async def rest(self, uri: str, text: str, offset: int, first: Scored, started: float) -> Scored:
        """The user rests after ``first``: each time the server says a suggestion is ready
        here, ask again, as the plugins do; until the model's lane has been empty for longer
        than the pause after which the server picks the extra context again (context.idleMs,
        1 s by default, and that pick's suggestion is offered too)."""
        shown = Scored(first.suggestion, first.seconds)
        deadline = time.monotonic() + 180
        self.ready.pop(uri, None)
        while time.monotonic() < deadline:
            quiet = 0
            while time.monotonic() < deadline and quiet < QUIET_POLLS and uri not in self.ready:
                await asyncio.sleep(0.3)
                quiet = quiet + 1 if (await self.stats()).queueDepth == 0 else 0
            ready = self.ready.pop(uri, None)
            if ready is None:
                return shown
            if ready.position.line == position(text, offset).line:
                again = await self.suggestion(uri, text, offset)
                shown = Scored(again.suggestion, time.perf_counter() - started, again=True)
        return shown

    async def idle(self, seconds: float = 120) -> None:
        """Wait until the model has not evaluated a prompt token for 0.6 s."""
        deadline = time.monotonic() + seconds
        last = -1
        while time.monotonic() < deadline:
            now = (await self.stats()).promptTokensEvaluated
            if now == last:
                return
            last = now
            await asyncio.sleep(0.6)


@asynccontextmanager
async def editor(options: dict[str, Any]) -> AsyncIterator[Editor]:
    client = LanguageClient("bench-paths", "0")
    ready: dict[str, Any] = {}

    @client.feature("lspInfer/status")
    def model_status(_params: object) -> None:  # the bench waits for its first answer
        pass

    @client.feature("lspInfer/suggestionReady")
    def suggestion_ready(params: Any) -> None:
        ready[params.textDocument.uri] = params

    await client.start_io(sys.executable, "-m", "lsp_infer", "serve", "--log-level", "warning")
    await client.initialize_async(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(
                experimental={"lspInfer": {"suggestionReady": True}}
            ),
            root_uri=Path.cwd().as_uri(),
            initialization_options=options,
        )
    )
    client.initialized(types.InitializedParams())
    driver = Editor(client, ready)
    warm_up = "file:///bench-paths/warm_up.py"
    driver.open(warm_up, "def add(a, b):\n    return ")
    await driver.suggestion(warm_up, "def add(a, b):\n    return ", 26)  # the model is loaded
    driver.close(warm_up)
    try:
        yield driver
    finally:
        await client.shutdown_async(None)
        client.exit(None)
        await client.stop()


async def run_path(driver: Editor, path: str, hole: Hole, uri: str) -> Scored:
    """Open the hole's file as ``path`` says, and the scored suggestion at the hole."""
    if path != "typed":
        driver.open(uri, hole.text)
        if path == "warmed":
            driver.client.protocol.notify(
                "lspInfer/warm",
                {"textDocument": {"uri": uri}, "position": position(hole.text, hole.offset)},
            )
            await asyncio.sleep(0.2)
            await driver.idle()
        started = time.perf_counter()
        first = await driver.suggestion(uri, hole.text, hole.offset, invoked=path == "invoked")
        if path == "opened":
            first.rested = await driver.rest(uri, hole.text, hole.offset, first, started)
        return first
    # Typed: the line above the hole typed a key at a time, then Enter and its indentation.
    line_start = hole.text.rfind("\n", 0, hole.offset) + 1
    above_start = hole.text.rfind("\n", 0, line_start - 1) + 1
    above = hole.text[above_start : line_start - 1]
    indent = len(above) - len(above.lstrip())
    code_at = above_start + indent
    text = hole.text[:code_at] + hole.text[line_start - 1 :]  # the line above: indentation only
    text = text[:code_at] + text[code_at + 1 + (hole.offset - line_start) :]  # no hole line
    driver.open(uri, text)
    asked: list[tuple[str, asyncio.Future[Any]]] = []
    offset = code_at
    for key in [*above[indent:], "\n" + hole.text[line_start : hole.offset]]:
        if asked and not asked[-1][1].done():  # as VS Code does: the last request cancelled
            driver.client.protocol.notify("$/cancelRequest", types.CancelParams(id=asked[-1][0]))
        driver.insert(uri, text, offset, key)
        text, offset = text[:offset] + key + text[offset:], offset + len(key)
        msg_id = f"typed-{uri}-{len(asked)}"
        asked.append((msg_id, driver.ask(uri, text, offset, msg_id=msg_id)))
        await asyncio.sleep(KEY_SECONDS)
    assert text == hole.text and offset == hole.offset, "typed into something else"
    started = time.perf_counter()
    answer = await asked.pop()[1]
    # Every request gets its answer: a suggestion, or the error of a cancelled one.
    await asyncio.gather(*(future for _id, future in asked), return_exceptions=True)
    items = answer.items if isinstance(answer, types.InlineCompletionList) else []
    first = Scored(str(items[0].insert_text) if items else "", time.perf_counter() - started)
    first.rested = await driver.rest(uri, text, offset, first, started)
    return first


async def run_config(
    options: dict[str, Any], paths: list[str], chosen: dict[str, list[Hole]]
) -> dict[str, dict[str, list[tuple[Hole, Scored]]]]:
    """Each path in a server of its own: the suggestion cache is keyed by the text around the
    cursor, so a hole asked on one path would be a cache hit on the next."""
    results: dict[str, dict[str, list[tuple[Hole, Scored]]]] = {}
    for path in paths:
        async with editor(options) as driver:
            for name, holes in chosen.items():
                scored = []
                for index, hole in enumerate(holes):
                    uri = f"file:///bench-paths/{path}/{name}/{index}/{hole.module}"
                    scored.append((hole, await run_path(driver, path, hole, uri)))
                    driver.close(uri)
                results.setdefault(path, {})[name] = scored
    return results


def summary(scored: list[tuple[Hole, Scored]]) -> dict[str, float]:
    hits = [score(s.suggestion, h.expected) for h, s in scored]
    shown = [(hit, s) for (hit, _), (_h, s) in zip(hits, scored, strict=True) if s.suggestion]
    seconds = sorted(s.seconds for _h, s in scored)
    return {
        "exact": 100 * statistics.mean(hit for hit, _ in hits),
        "similarity": 100 * statistics.mean(ratio for _, ratio in hits),
        "shown": 100 * len(shown) / len(scored),
        "right_of_shown": 100 * statistics.mean(hit for hit, _ in shown) if shown else 0.0,
        "p50": statistics.median(seconds),
        "p95": seconds[min(len(seconds) - 1, round(0.95 * (len(seconds) - 1)))],
    }


def record(config: str, path: str, suite: str, index: int, hole: Hole, s: Scored) -> dict[str, Any]:
    """One hole's outcome on one path, for reading hole by hole (--json)."""
    result: dict[str, Any] = {
        "config": config, "path": path, "suite": suite, "index": index, "module": hole.module,
        "expected": hole.expected, "suggestion": s.suggestion,
        "right": score(s.suggestion, hole.expected)[0], "seconds": round(s.seconds, 3),
    }  # fmt: skip
    if s.rested is not None:
        result["rested"] = s.rested.suggestion
        result["rested_right"] = score(s.rested.suggestion, hole.expected)[0]
        result["rested_seconds"] = round(s.rested.seconds, 3)
        result["asked_again"] = s.rested.again
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--suite", default="header,local", help="bench/holes.py suites")
    parser.add_argument("--holes", type=int, default=30, help="holes per suite")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--paths", default=",".join(PATHS))
    parser.add_argument(
        "--configs", default=f"default={{}};whole={json.dumps(WHOLE)}",
        help="NAME=JSON settings, separated by ';'",
    )  # fmt: skip
    parser.add_argument("--json", help="write every hole's record to this file")
    args = parser.parse_args()
    chosen = suites(args.suite, args.holes, args.seed)
    paths = args.paths.split(",")
    print(f"{', '.join(f'{n}: {len(h)} holes' for n, h in chosen.items())}; "
          f"paths {', '.join(paths)}; Python {sys.version.split()[0]}")  # fmt: skip
    header = f"{'config':10} {'path':11} {'suite':7} {'exact %':>8} {'edit sim %':>10} "
    print(header + f"{'shown %':>8} {'right of shown %':>17} {'p50 s':>6} {'p95 s':>6}")
    records: list[dict[str, Any]] = []
    for spec in args.configs.split(";"):
        name, _, options = spec.partition("=")
        results = asyncio.run(run_config(json.loads(options or "{}"), paths, chosen))
        for path, by_suite in results.items():
            for suite, scored in by_suite.items():
                records += [record(name, path, suite, index, h, s)
                            for index, (h, s) in enumerate(scored)]  # fmt: skip
                rested = [(h, s.rested) for h, s in scored if s.rested is not None]
                rows = [(path, scored)] + ([(f"{path}+rest", rested)] if rested else [])
                for label, row in rows:
                    s = summary(row)
                    print(f"{name:10} {label:11} {suite:7} {s['exact']:8.1f} "
                          f"{s['similarity']:10.1f} {s['shown']:8.1f} "
                          f"{s['right_of_shown']:17.1f} {s['p50']:6.2f} {s['p95']:6.2f}",
                          flush=True)  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1))


if __name__ == "__main__":
    main()
