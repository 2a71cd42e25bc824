"""Typing in several files: pause latency per kind of pause, with the per-document KV state
cache off and on, in the same run.

Two parts, each run against a fresh `lsp-infer serve` per configuration (the same typing for
every configuration):

typing   A typist retypes function bodies from the standard library into their real files
         (the body removed), VS Code-style: a didChange and a request per keystroke, the
         previous request cancelled ($/cancelRequest); --key-ms a key; Enter inserts the new
         line with its indentation (auto-indent) and the typist waits for the suggestion there,
         at least --pause-ms after the last key; every --read-every lines a reading pause of
         --read-ms. With --switch-every N the typist moves to the next file every N lines
         (round robin, all files open as tabs); 0 types each file to the end in turn.
         On coming into a file the typist looks for --look-ms before the first key; a
         warming client (config "warm") sends lspInfer/warm for its cursor as it arrives,
         as the editor plugins do on a switch.
         Each pause is timed from the last keystroke to the answer, and counted as the first
         in its file, the first after switching back into a file, or one in the same file.
switch   The issue's round trip, three times at new places: a suggestion in file A, one in
         file B, back in A a new line (Enter at the first place) and a suggestion there; and,
         as the control, the same new line in a third file without a switch in between.

Prompt tokens evaluated per keystroke come from lspInfer/stats; the server's resident memory
(RSS) is sampled at every pause; "small w." is how many generations used a cold start's
smaller window (completion.coldStartMs), of all generations.

    python bench/multifile.py                              # both parts, cache off and on
    python bench/multifile.py --switch-every 0 --parts typing --configs on   # one file at a time
    python bench/multifile.py --configs on,q4_0   # as shipped vs model.requantize q4_0
    python bench/multifile.py --parts typing --configs on,warm --look-ms 2000  # lspInfer/warm
    python bench/multifile.py --parts typing --configs on,disk   # states also written to disk
    python bench/multifile.py --switch-every 0 --parts typing --configs nocontext,defs
                              # no extra context vs. definitions from jedi-language-server
    python bench/multifile.py --parts typing --configs 0.5b,1.5b   # the embedded models
    python bench/multifile.py --switch-every 0 --parts typing --configs 0.5b,ready
                              # a client that asks again at lspInfer/suggestionReady, or not

"right" counts the pauses whose suggestion's first line is the line the typist types next.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import atexit
import concurrent.futures
import json
import os
import platform
import queue
import shutil
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from language_server import LanguageServerEditor

from lsp_infer.stats import percentile
from tests.fuzz.raw_server import RawServer

STDLIB = Path(json.__file__).parent.parent
# (module, function): the body is typed into the file where it was removed.
FUNCTIONS = [
    ("textwrap.py", "_wrap_chunks"),
    ("shlex.py", "read_token"),
    ("glob.py", "_iglob"),
    ("csv.py", "_guess_quote_and_delimiter"),
]
CONFIGS = {
    "off": {"model": {"stateCacheMb": 0}},
    "on": {},
    "q4_0": {"model": {"requantize": "q4_0"}},  # the cache on, the model requantized
    "warm": {},  # the cache on, and the client sends lspInfer/warm on a switch
    "disk": {"model": {"stateDiskMb": 512}},  # the cache on, and its states written to disk
    "nocontext": {"context": {"enabled": False}},  # no extra context at all
    # Extra context with definitions: the client answers lspInfer/definitions from a real
    # jedi-language-server (DefinitionsAnswerer).
    "defs": {},
    # One embedded model each (model.name), the cache on: the per-model figures of BENCHMARKS.
    "0.5b": {"model": {"name": "qwen2.5-coder-0.5b"}},
    "1.5b": {"model": {"name": "qwen2.5-coder-1.5b"}},
    # The 0.5B, and a client that announces lspInfer/suggestionReady and asks again where the
    # cursor still rests, as both editor plugins do (beside "0.5b": what the re-asks cost).
    "ready": {"model": {"name": "qwen2.5-coder-0.5b"}},
}
WARMING = {"warm"}  # the configurations whose client warms
DEFINING = {"defs"}  # the configurations whose client answers lspInfer/definitions
READYING = {"ready"}  # the configurations whose client asks again at lspInfer/suggestionReady


@dataclass
class File:
    uri: str
    text: str  # the document as the typist has left it
    offset: int  # the cursor
    lines: list[str]  # body lines still to type (without their "\n")
    version: int = 1
    visited: bool = False


def load_file(module: str, function: str, index: int, max_lines: int) -> File:
    """The module with the function's code removed (its docstring kept), the cursor where the
    code was, and the code lines (no blank or comment lines) to type back."""
    source = (STDLIB / module).read_text(encoding="utf-8")
    node = next(
        n for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == function
    )  # fmt: skip
    body = node.body[1:] if ast.get_docstring(node) else node.body
    lines = source.split("\n")
    start, end = body[0].lineno - 1, node.end_lineno or body[-1].lineno
    code = [line for line in lines[start:end] if line.strip() and not line.strip().startswith("#")]
    indent = code[0][: len(code[0]) - len(code[0].lstrip())]
    before = "\n".join(lines[:start]) + "\n" + indent
    text = before + "\n" + "\n".join(lines[end:])
    uri = f"file:///bench/{index}_{module.replace('/', '_')}"
    return File(uri, text, len(before), code[:max_lines])


@dataclass
class Typist:
    server: RawServer
    key_seconds: float
    reasks: bool = False  # asks again at lspInfer/suggestionReady (the "ready" client)
    pending: int | None = None
    last_key: float = 0.0
    keystrokes: int = 0
    answer: dict[str, Any] = field(default_factory=dict)
    reasked: int = 0  # requests sent at lspInfer/suggestionReady
    file: File | None = None  # the file the cursor is in

    def position(self, file: File) -> dict[str, int]:
        """The cursor, as an LSP position."""
        return self._position(file, file.offset)

    def _position(self, file: File, offset: int) -> dict[str, int]:
        before = file.text[:offset]
        line = before.count("\n")
        column = len(before[before.rfind("\n") + 1 :].encode("utf-16-le")) // 2
        return {"line": line, "character": column}

    def insert(self, file: File, text: str) -> None:
        """One keystroke (or an auto-indented Enter): the edit, then a request for the new
        cursor, cancelling the previous request."""
        at = self._position(file, file.offset)
        file.version += 1
        file.text = file.text[: file.offset] + text + file.text[file.offset :]
        file.offset += len(text)
        self.file = file
        self.server.change(file.uri, file.version, at, at, text)
        if self.pending is not None and not self.server.responses.get(self.pending):
            self.server.notify("$/cancelRequest", {"id": self.pending})
        cursor = self._position(file, file.offset)
        self.pending = self.server.inline(file.uri, cursor["line"], cursor["character"])
        self.last_key = time.perf_counter()
        self.keystrokes += 1

    def pause(self, at_least: float) -> float:
        """Wait for the answer to the latest request; milliseconds from the last key."""
        assert self.pending is not None
        self.answer = self.server.wait(self.pending, timeout=300)
        elapsed = time.perf_counter() - self.last_key
        self.rest(max(0.0, at_least - elapsed))
        return elapsed * 1000

    def rest(self, seconds: float) -> None:
        """The cursor rests: a re-asking client asks again where lspInfer/suggestionReady
        says a suggestion is ready, if that is still the cursor and the document's version."""
        until = time.perf_counter() + seconds
        while (left := until - time.perf_counter()) > 0:
            try:
                message = self.server.notifications.get(timeout=min(left, 0.05))
            except queue.Empty:
                continue
            file = self.file
            if not self.reasks or message.get("method") != "lspInfer/suggestionReady" or not file:
                continue
            params = message["params"]
            here = params["textDocument"] == {"uri": file.uri, "version": file.version}
            if here and params["position"] == self.position(file):
                cursor = params["position"]
                self.pending = self.server.inline(file.uri, cursor["line"], cursor["character"])
                self.reasked += 1

    def suggested_first_line(self) -> str:
        """The first line of the last answer's suggestion ("" for none)."""
        result = self.answer.get("result")
        items = result.get("items", []) if isinstance(result, dict) else result or []
        text = str(items[0].get("insertText", "")) if items else ""
        return text.strip().split("\n")[0].strip() if text.strip() else ""

    def type_line(self, file: File, line: str) -> None:
        """The line's code, character by character, then Enter with the next indentation."""
        for char in line.lstrip():
            time.sleep(self.key_seconds)
            self.insert(file, char)
        next_indent = file.lines[0][: len(file.lines[0]) - len(file.lines[0].lstrip())] if (
            file.lines) else line[: len(line) - len(line.lstrip())]  # fmt: skip
        # Enter: the editor inserts the new line and removes the indentation the line had.
        time.sleep(self.key_seconds)
        self.insert(file, "\n" + next_indent)


@dataclass
class Run:
    pauses: dict[str, list[float]] = field(default_factory=dict)  # kind → ms
    rss_mb: list[float] = field(default_factory=list)
    keystrokes: int = 0
    reasked: int = 0  # requests the "ready" client sent at lspInfer/suggestionReady
    # Pauses before a line still to type, and those whose suggestion's first line was it.
    asked: int = 0
    right: int = 0
    stats: dict[str, Any] = field(default_factory=dict)
    switch: dict[str, list[float]] = field(default_factory=dict)


def rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    return int(next(line.split()[1] for line in status if line.startswith("VmRSS"))) / 1024


def start(
    options: dict[str, Any], answerer: DefinitionsAnswerer | None = None, ready: bool = False
) -> RawServer:
    log_file = os.environ.get("MULTIFILE_SERVER_LOG", "")
    # States on disk (the disk configuration) go to a directory of this server's own: a run
    # never starts from what an earlier one left.
    states = tempfile.mkdtemp(prefix="lsp-infer-multifile-")
    atexit.register(shutil.rmtree, states, ignore_errors=True)
    server = RawServer(root=Path("/bench"), log_file=log_file, env={"LSP_INFER_STATE_DIR": states})
    if answerer:
        server.handlers["lspInfer/definitions"] = answerer.handle
    announced = {"definitions": True} if answerer else {}
    announced |= {"suggestionReady": True} if ready else {}
    server.initialize(options, {"lspInfer": announced} if announced else None)
    server.wait(server.request("lspInfer/stats", {}), timeout=120)  # the model is loading
    return server


class DefinitionsAnswerer:
    """For the "defs" configuration: the client announces lspInfer/definitions and answers it
    as the editors' clients do, from a real jedi-language-server that has the typed files
    (written to a workspace on disk) open with their current text. It answers from its own
    thread and event loop: the reader of the server's messages never waits for it."""

    def __init__(self, files: list[File]) -> None:
        self.workspace = Path(tempfile.mkdtemp(prefix="lsp-infer-multifile-defs-"))
        atexit.register(shutil.rmtree, self.workspace, ignore_errors=True)
        for file in files:  # real files: the language server reads their neighbours
            path = self.workspace / file.uri.rsplit("/", 1)[-1]
            path.write_text(file.text)
            file.uri = path.as_uri()
        self.files = {file.uri: file for file in files}
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        command = [str(Path(sys.executable).parent / "jedi-language-server")]
        self.editor = self._run(LanguageServerEditor.start(command, self.workspace)).result(60)

    def _run(self, coroutine: Any) -> concurrent.futures.Future[Any]:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    def handle(self, params: Any, reply: Any) -> None:
        """lspInfer/definitions from the server; the reply comes when jedi has answered."""
        file = self.files.get(params["textDocument"]["uri"])
        if file is None:
            reply({"definitions": []})
            return
        try:  # never in the way of the reader of the server's messages
            self.editor.open(file.uri, file.text, "python")  # the text as typed so far
        except Exception:
            reply(None)
            return
        future = self._run(self.editor.answer(file.uri, params["positions"]))
        future.add_done_callback(
            lambda done: reply(done.result() if not done.exception() else None)
        )

    def stop(self) -> None:
        self._run(self.editor.stop()).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)


def typing(
    args: argparse.Namespace,
    options: dict[str, Any],
    warming: bool = False,
    defs: bool = False,
    ready: bool = False,
) -> Run:
    files = [
        load_file(module, signature, index, args.lines)
        for index, (module, signature) in enumerate(FUNCTIONS[: args.files])
    ]
    answerer = DefinitionsAnswerer(files) if defs else None
    server = start(options, answerer, ready)
    run = Run()
    typist = Typist(server, args.key_ms / 1000, reasks=ready)
    for file in files:
        server.open(file.uri, file.text)
    typed_lines = 0
    current = 0
    previous: File | None = None
    while any(file.lines for file in files):
        file = files[current]
        if not file.lines:
            current = (current + 1) % len(files)
            continue
        kind = "first" if not file.visited else "return" if file is not previous else "same"
        if file is not previous:  # coming into the file: the cursor rests while the user looks
            if warming:
                server.notify("lspInfer/warm", {"textDocument": {"uri": file.uri},
                                                "position": typist.position(file)})  # fmt: skip
            time.sleep(args.look_ms / 1000)
        file.visited, previous = True, file
        burst = args.switch_every or len(file.lines)
        for _ in range(min(burst, len(file.lines))):
            line = file.lines.pop(0)
            typist.type_line(file, line)
            run.pauses.setdefault(kind, []).append(typist.pause(args.pause_ms / 1000))
            if file.lines:  # the line the typist types next is the one to suggest
                run.asked += 1
                run.right += typist.suggested_first_line() == file.lines[0].strip()
            run.rss_mb.append(rss_mb(server.process.pid))
            kind = "same"
            typed_lines += 1
            if args.read_every and typed_lines % args.read_every == 0:
                typist.rest(args.read_ms / 1000)
        current = (current + 1) % len(files)
    run.keystrokes = typist.keystrokes
    run.reasked = typist.reasked
    run.stats = server.wait(server.request("lspInfer/stats", {}))["result"]
    server.close()
    if answerer:
        answerer.stop()
    return run


def switch(args: argparse.Namespace, options: dict[str, Any]) -> dict[str, list[float]]:
    """A cold, B cold, back in A a new line; the control: a new line without a switch."""
    a, b, c = (load_file(m, s, i, 10_000) for i, (m, s) in enumerate(FUNCTIONS[:3]))
    server = start(options)
    typist = Typist(server, args.key_ms / 1000)
    for file in (a, b, c):
        server.open(file.uri, file.text)
    times: dict[str, list[float]] = {}

    def ask(file: File, kind: str) -> None:
        """A suggestion after typing the next line's code (whose last key is the request)."""
        typist.type_line(file, file.lines.pop(0))
        times.setdefault(kind, []).append(typist.pause(0.0))

    def new_line(file: File, kind: str) -> None:
        time.sleep(typist.key_seconds)
        typist.insert(file, "\n" + file.text[: file.offset].rsplit("\n", 1)[-1])
        times.setdefault(kind, []).append(typist.pause(0.0))

    for _round in range(args.rounds):
        for file in (a, b, c):  # move on to a new place: what was cached there is stale
            for _ in range(args.skip):
                if file.lines:
                    line = file.lines.pop(0)
                    file.text = file.text[: file.offset] + line.lstrip() + "\n" + file.text[
                        file.offset :]  # fmt: skip
                    file.offset += len(line.lstrip()) + 1
                    file.version += 1
                    server.notify("textDocument/didChange", {
                        "textDocument": {"uri": file.uri, "version": file.version},
                        "contentChanges": [{"text": file.text}]})  # fmt: skip
        ask(a, "cold")
        ask(b, "cold")
        new_line(a, "return")
        ask(c, "cold")
        new_line(c, "no switch")
    server.close()
    return times


def ms(values: list[float], fraction: float) -> str:
    value = percentile(values, fraction)
    return "-" if value is None else f"{value:.0f}"


def report_typing(runs: dict[str, Run]) -> None:
    print(f"\n{'cache':6} {'pauses':>6} {'p50 ms':>7} {'p95 ms':>7} | {'first':>13} "
          f"{'return':>13} {'same file':>13} | {'tok/key':>7} {'RSS MB':>7} "
          f"{'small w.':>8} {'warms':>5} {'right':>9}")  # fmt: skip
    print(f"{'':6} {'':>6} {'':>7} {'':>7} | {'p50/p95':>13} {'p50/p95':>13} {'p50/p95':>13} |")
    for name, run in runs.items():
        every = [p for kind in run.pauses.values() for p in kind]
        kinds = " ".join(
            f"{ms(run.pauses.get(k, []), 0.5):>6}/{ms(run.pauses.get(k, []), 0.95):<6}"
            for k in ("first", "return", "same")
        )
        per_key = run.stats["promptTokensEvaluated"] / max(run.keystrokes, 1)
        print(f"{name:6} {len(every):6} {ms(every, 0.5):>7} {ms(every, 0.95):>7} | {kinds} | "
              f"{per_key:7.1f} {max(run.rss_mb):7.0f} "
              f"{run.stats['reducedWindows']:4}/{run.stats['generations']:<4} "
              f"{run.stats.get('warms', 0):5} {run.right:4}/{run.asked:<4}")  # fmt: skip
        model = run.stats.get("model", {})
        print(f"{'':6} model {model.get('name')} (profile {model.get('profile')}, order "
              f"{model.get('order')})" + (f"; asked again at suggestionReady {run.reasked}"
                                          if name in READYING else ""))  # fmt: skip
    if {"off", "on"} <= runs.keys():
        off = [p for kind in runs["off"].pauses.values() for p in kind]
        on = [p for kind in runs["on"].pauses.values() for p in kind]
        off95, on95 = percentile(off, 0.95), percentile(on, 0.95)
        if off95 and on95:
            print(f"p95 off / on: {off95 / on95:.2f}x")
        # What a cache of earlier prompts can act on: every pause but each file's first.
        off_later, on_later = (
            [p for kind in ("return", "same") for p in runs[name].pauses.get(kind, [])]
            for name in ("off", "on")
        )
        off95, on95 = percentile(off_later, 0.95), percentile(on_later, 0.95)
        if off95 and on95:
            print(f"p95 after each file's first suggestion, off / on: {off95 / on95:.2f}x "
                  f"({off95:.0f} / {on95:.0f} ms)")  # fmt: skip
    print_ratios(runs, "1.5b", "0.5b", "1.5b / 0.5b")
    print_ratios(runs, "ready", "0.5b", "asking again at suggestionReady / not")
    print_ratios(runs, "defs", "nocontext", "with definitions / without extra context")
    for name, run in runs.items():
        if run.stats.get("definitions", {}).get("supported"):
            print(
                f"{name}: definitions {json.dumps(run.stats['definitions'])}, "
                f"generations with extra context {run.stats['generationsWithExtra']}"
            )
        state = run.stats.get("stateCache")
        if state:
            print(f"{name}: state cache {json.dumps(state)}")
        print(f"{name}: pauses ms " + json.dumps({k: [round(p) for p in v]
                                                   for k, v in run.pauses.items()}))  # fmt: skip


def print_ratios(runs: dict[str, Run], name: str, baseline: str, label: str) -> None:
    """p50 and p95 of every pause of configuration ``name`` over ``baseline``'s, when both ran."""
    if {name, baseline} <= runs.keys():
        pauses, base = ([p for kind in runs[n].pauses.values() for p in kind]
                        for n in (name, baseline))  # fmt: skip
        for fraction in (0.5, 0.95):
            a, b = percentile(pauses, fraction), percentile(base, fraction)
            if a and b:
                print(f"p{round(fraction * 100)} {label}: {a / b:.2f}x ({a:.0f} / {b:.0f} ms)")


def report_switch(results: dict[str, dict[str, list[float]]]) -> None:
    print(f"\n{'cache':6} {'cold (median)':>14} {'return':>8} {'no switch':>10} "
          f"{'return/cold':>12} {'return/no switch':>17}")  # fmt: skip
    for name, times in results.items():
        cold = statistics.median(times["cold"])
        back = statistics.median(times["return"])
        control = statistics.median(times["no switch"])
        print(f"{name:6} {cold:14.0f} {back:8.0f} {control:10.0f} {back / cold:12.2f} "
              f"{back / control:17.2f}")  # fmt: skip
    for name, times in results.items():
        print(f"{name}: " + json.dumps({k: [round(t) for t in v] for k, v in times.items()}))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--parts", default="typing,switch")
    parser.add_argument("--configs", default="off,on", help=f"of {', '.join(CONFIGS)}")
    parser.add_argument("--options", default="{}", help="more initializationOptions (JSON)")
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--lines", type=int, default=8, help="lines typed per file")
    parser.add_argument("--switch-every", type=int, default=2, help="lines; 0: no switching")
    parser.add_argument("--key-ms", type=int, default=90)
    parser.add_argument("--pause-ms", type=int, default=1500)
    parser.add_argument("--read-every", type=int, default=4)
    parser.add_argument("--read-ms", type=int, default=3000)
    parser.add_argument("--look-ms", type=int, default=0, help="a look on coming into a file")
    parser.add_argument("--rounds", type=int, default=3, help="switch part: round trips")
    parser.add_argument("--skip", type=int, default=3, help="switch part: lines between rounds")
    args = parser.parse_args()
    extra = json.loads(args.options)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}")  # fmt: skip
    print(f"typing: {args.files} files, {args.lines} lines each, switch every "
          f"{args.switch_every} lines, {args.key_ms} ms a key, pauses {args.pause_ms} ms, "
          f"reading {args.read_ms} ms every {args.read_every} lines, a look of "
          f"{args.look_ms} ms on coming into a file; options {extra}")  # fmt: skip
    parts = args.parts.split(",")
    typing_runs: dict[str, Run] = {}
    switch_runs: dict[str, dict[str, list[float]]] = {}
    for name in args.configs.split(","):
        options = {**extra, **CONFIGS[name]}
        if "model" in extra and "model" in CONFIGS[name]:
            options["model"] = {**extra["model"], **CONFIGS[name]["model"]}
        started = time.perf_counter()
        if "typing" in parts:
            typing_runs[name] = typing(
                args, options, name in WARMING, name in DEFINING, name in READYING
            )
        if "switch" in parts:
            switch_runs[name] = switch(args, options)
        print(f"  {name}: {time.perf_counter() - started:.0f}s", file=sys.stderr, flush=True)
    if typing_runs:
        report_typing(typing_runs)
    if switch_runs:
        report_switch(switch_runs)


if __name__ == "__main__":
    main()
