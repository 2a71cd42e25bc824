"""A team's day, scaled down: 20 editors against the team tier, one replica killed mid-run.

Each simulated developer is a real `lsp-infer serve` process driven over stdio (its local
model switched off, so the two cores go to the team servers), with three small Python files
open. At random (exponential) intervals each one

* asks for an invoked completion (inlineCompletion, trigger kind Invoked; team.completions
  on), about every --completion-every seconds;
* refactors one of its files (lspInfer.refactorFile, "add a docstring"), about every
  --refactor-every seconds;
* types a line into one of its files, about every --type-every seconds (a refactor of that
  file in flight must then not be applied);
* applies the refactors' edits as an editor would (workspace/applyEdit: the new text, a new
  version, didChange), after checking the edit names the document's current version.

The team servers are llama-cpp-python's OpenAI-compatible server with the embedded model
(`--interrupt_requests False`, so concurrent requests queue as with vLLM; one thread each).
Two runs, same workload, same machine:

baseline  team.url = one replica (what lsp-infer allowed before issue 14);
router    team.url = two replicas; the second is killed (SIGKILL) at 1/3 of the run and
          started again at 2/3.

Reported per run and request class: count, outcomes, P50/P95 latency (seen by the editor);
every request answered exactly once; edits that landed on a changed document (must be 0);
requests in flight per replica over time (summed over the 20 editors' lspInfer/stats); and
for the router run the failover: the longest time without any successful answer after the
kill (against the longest one before it), how fast the editors marked the replica down, and
how long the probe took to bring it back.

    python bench/team_load.py                      # 2 x 6 minutes, 20 editors
    python bench/team_load.py --minutes 2 --clients 6   # a quick look
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import random
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lsp_infer.stats import percentile
from tests.helpers import free_port, start_openai_server, stop

API_KEY = "bench-key"
INSTRUCTION = "Add a one-line docstring to every function"


def module_text(client: int, index: int) -> str:
    return (
        f"def scale_{client}_{index}(values, factor):\n"
        f"    return [v * factor for v in values]\n\n\n"
        f"def total_{client}_{index}(values):\n"
        f"    return sum(values)\n"
    )


@dataclass
class Record:
    kind: str  # "refactor" | "completion"
    sent: float
    done: float = 0.0
    outcome: str = ""  # refactor: status; completion: team | empty | error
    message: str = ""


@dataclass
class Document:
    uri: str
    text: str
    version: int = 1


@dataclass
class Editor:
    """One simulated developer: an lsp-infer process and its open documents."""

    index: int
    root: Path
    process: asyncio.subprocess.Process | None = None
    docs: dict[str, Document] = field(default_factory=dict)
    futures: dict[int, asyncio.Future[dict[str, Any]]] = field(default_factory=dict)
    sent: dict[int, tuple[str, float]] = field(default_factory=dict)  # id → (method, when)
    answers: Counter[int] = field(default_factory=Counter)
    next_id: int = 0
    bad_edits: int = 0  # edits for a version the document no longer had
    edits: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    reader: asyncio.Future[None] | None = None

    @property
    def modules(self) -> list[str]:
        return [uri for uri in self.docs if uri != self.scratch]

    @property
    def scratch(self) -> str:
        return (self.root / "scratch.py").as_uri()

    async def start(self, env: dict[str, str]) -> None:
        log = open(self.root.parent / f"dev{self.index}.log", "wb")  # noqa: SIM115
        self.process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "lsp_infer", "serve", "--log-level", "info",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=log, env=env, limit=64 * 1024 * 1024,
        )  # fmt: skip
        self.reader = asyncio.ensure_future(self._read())

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        assert self.process is not None and self.process.stdin is not None
        self.process.stdin.write(f"Content-Length: {len(body)}\r\n\r\n".encode() + body)

    def request(self, method: str, params: Any) -> asyncio.Future[dict[str, Any]]:
        self.next_id += 1
        future = asyncio.get_running_loop().create_future()
        self.futures[self.next_id] = future
        self.sent[self.next_id] = (method, time.monotonic())
        self._send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return future

    def notify(self, method: str, params: Any) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def _read(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        stream = self.process.stdout
        while True:
            header = await stream.readline()
            if not header:
                return
            if not header.startswith(b"Content-Length:"):
                continue
            length = int(header.split(b":")[1])
            while (await stream.readline()) not in (b"\r\n", b""):
                pass
            message = json.loads(await stream.readexactly(length))
            if "method" in message and "id" in message:
                result = await self._server_request(message)
                self._send({"jsonrpc": "2.0", "id": message["id"], "result": result})
            elif "id" in message:
                self.answers[message["id"]] += 1
                future = self.futures.get(message["id"])
                if future is not None and not future.done():
                    future.set_result(message)

    async def _server_request(self, message: dict[str, Any]) -> Any:
        method = message["method"]
        if method == "workspace/configuration":
            return [None for _ in message["params"]["items"]]
        if method == "workspace/applyEdit":
            return await self._apply(message["params"]["edit"])
        return None

    async def _apply(self, edit: dict[str, Any]) -> dict[str, Any]:
        """Apply an edit as an editor does, after checking it is for the current version."""
        async with self.lock:
            for change in edit.get("documentChanges", []):
                uri, version = change["textDocument"]["uri"], change["textDocument"]["version"]
                doc = self.docs[uri]
                if version != doc.version:
                    self.bad_edits += 1
                    return {"applied": False, "failureReason": "version mismatch"}
                doc.text = apply_edits(doc.text, change["edits"])
                doc.version += 1
                self.edits += 1
                self.notify("textDocument/didChange", {
                    "textDocument": {"uri": uri, "version": doc.version},
                    "contentChanges": [{"text": doc.text}],
                })  # fmt: skip
        return {"applied": True}

    async def initialize(self, options: dict[str, Any]) -> None:
        root = self.root.as_uri()
        await self.request("initialize", {
            "processId": os.getpid(), "rootUri": root,
            "capabilities": {
                "workspace": {"applyEdit": True, "workspaceEdit": {"documentChanges": True}},
            },
            "initializationOptions": options,
            "workspaceFolders": [{"uri": root, "name": "ws"}],
        })  # fmt: skip
        self.notify("initialized", {})
        for index in range(4):  # three modules, and a scratch file for completions
            path = self.root / (f"mod{index}.py" if index < 3 else "scratch.py")
            text = module_text(self.index, index)
            path.write_text(text)
            doc = self.docs[path.as_uri()] = Document(path.as_uri(), text)
            self.notify("textDocument/didOpen", {"textDocument": {
                "uri": doc.uri, "languageId": "python", "version": 1, "text": text}})  # fmt: skip

    async def type_line(self, rng: random.Random) -> None:
        async with self.lock:
            doc = self.docs[rng.choice(self.modules)]
            doc.text += f"# note {rng.randrange(1000)}\n"
            doc.version += 1
            self.notify("textDocument/didChange", {
                "textDocument": {"uri": doc.uri, "version": doc.version},
                "contentChanges": [{"text": doc.text}],
            })  # fmt: skip

    async def complete(self, rng: random.Random) -> Record:
        """Start a new function in the scratch file and ask for its body."""
        async with self.lock:
            doc = self.docs[self.scratch]
            base = rng.choice([d for uri, d in self.docs.items() if uri != self.scratch])
            doc.text = base.text + f"\n\ndef mean_{rng.randrange(10**6)}(values):\n    return "
            doc.version += 1
            self.notify("textDocument/didChange", {
                "textDocument": {"uri": doc.uri, "version": doc.version},
                "contentChanges": [{"text": doc.text}],
            })  # fmt: skip
            lines = doc.text.split("\n")
            at = {"line": len(lines) - 1, "character": len(lines[-1])}
        record = Record("completion", time.monotonic())
        answer = await self.request("textDocument/inlineCompletion", {
            "textDocument": {"uri": doc.uri}, "position": at, "context": {"triggerKind": 1},
        })  # fmt: skip
        record.done = time.monotonic()
        items = (answer.get("result") or {}).get("items") if "result" in answer else None
        record.outcome = "error" if items is None else "team" if items else "empty"
        return record

    async def refactor(self, rng: random.Random) -> Record:
        uri = rng.choice(self.modules)
        record = Record("refactor", time.monotonic())
        answer = await self.request("workspace/executeCommand", {
            "command": "lspInfer.refactorFile",
            "arguments": [{"uri": uri, "instruction": INSTRUCTION}],
        })  # fmt: skip
        record.done = time.monotonic()
        outcomes = (answer.get("result") or {}).get("outcomes") or [{"status": "error"}]
        record.outcome = outcomes[0]["status"]
        record.message = outcomes[0].get("message", str(answer.get("error", "")))
        return record

    async def stats(self) -> dict[str, Any]:
        answer = await asyncio.wait_for(self.request("lspInfer/stats", {}), timeout=10)
        return dict(answer["result"]["team"])

    async def counters(self) -> dict[str, Counter[str]]:
        team = await self.stats()
        return {kind: Counter({k: v for k, v in team[kind].items() if isinstance(v, int)})
                for kind in ("refactors", "completions")}  # fmt: skip

    async def close(self) -> None:
        try:
            await asyncio.wait_for(self.request("shutdown", None), timeout=20)
            self.notify("exit", None)
            assert self.process is not None
            await asyncio.wait_for(self.process.wait(), timeout=20)
        except (asyncio.TimeoutError, AssertionError, ConnectionError):
            if self.process is not None and self.process.returncode is None:
                self.process.kill()


def apply_edits(text: str, edits: list[dict[str, Any]]) -> str:
    """LSP text edits (ASCII text: utf-16 positions are characters) applied to ``text``."""
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)

    def offset(position: dict[str, int]) -> int:
        line = min(position["line"], len(lines))
        return min(starts[line] + position["character"], len(text))

    for edit in sorted(edits, key=lambda e: offset(e["range"]["start"]), reverse=True):
        start, end = offset(edit["range"]["start"]), offset(edit["range"]["end"])
        text = text[:start] + edit["newText"] + text[end:]
    return text


async def developer(
    editor: Editor, rng: random.Random, until: float, args: argparse.Namespace,
    records: list[Record],
) -> None:  # fmt: skip
    """One developer's day: three independent streams of work."""

    async def stream(every: float, work: Any) -> None:
        await asyncio.sleep(min(rng.uniform(0, every), max(0.0, until - time.monotonic())))
        while time.monotonic() < until:
            result = await work(rng)
            if isinstance(result, Record):
                records.append(result)
            pause = rng.expovariate(1 / every)
            await asyncio.sleep(min(pause, max(0.0, until - time.monotonic())))

    await asyncio.gather(
        stream(args.completion_every, editor.complete),
        stream(args.refactor_every, editor.refactor),
        stream(args.type_every, editor.type_line),
    )


async def sample_queues(
    editors: list[Editor], until: float, every: float, samples: list[dict[str, Any]]
) -> None:
    """Every ``every`` seconds: requests in flight per replica, over all editors."""
    started = time.monotonic()
    while time.monotonic() < until:
        results = await asyncio.gather(*(e.stats() for e in editors), return_exceptions=True)
        in_flight: Counter[str] = Counter()
        down: Counter[str] = Counter()
        failures: Counter[str] = Counter()
        for team in results:
            if isinstance(team, BaseException):
                continue
            for replica in team["replicas"]:
                in_flight[replica["url"]] += replica["inFlight"]
                down[replica["url"]] += not replica["healthy"]
                failures[replica["url"]] += replica["failures"]
        samples.append({"t": time.monotonic() - started, "inFlight": dict(in_flight),
                        "down": dict(down), "failures": dict(failures)})  # fmt: skip
        await asyncio.sleep(every)


async def run(
    name: str, urls: list[str], args: argparse.Namespace, kill: Any = None
) -> dict[str, Any]:
    seconds = args.minutes * 60
    options = {
        "team": {
            "url": urls, "apiKey": API_KEY, "model": "coder", "completions": True,
            "completionTimeoutMs": 60_000, "maxTokens": 400, "timeoutMs": 600_000,
            "batchWindowMs": 100,
            # The stand-in's context (its /v1/models reports none, and answers only between
            # generations: asking it would time the stand-in, not lsp-infer).
            "maxModelLen": 4096,
        },
        "completion": {"maxTokens": 24, "maxLines": 2},
        "context": {"enabled": False},
    }  # fmt: skip
    base = {k: v for k, v in os.environ.items() if not k.startswith("LSP_INFER_")}
    env = {**base, "LSP_INFER_MODEL": "/nonexistent/local-model-off.gguf"}
    workdir = Path(tempfile.mkdtemp(prefix=f"team-load-{name.split(':')[0]}-"))
    editors = [Editor(i, workdir / f"dev{i}") for i in range(args.clients)]
    for editor in editors:
        editor.root.mkdir()
        await editor.start(env)
    await asyncio.gather(*(e.initialize(options) for e in editors))
    records: list[Record] = []
    samples: list[dict[str, Any]] = []
    started = time.monotonic()
    until = started + seconds
    events: dict[str, float] = {}
    rng = random.Random(args.seed)
    work = [developer(e, random.Random(rng.random()), until, args, records) for e in editors]
    work.append(sample_queues(editors, until, 2.0, samples))
    if kill is not None:
        work.append(kill(started, seconds, events))
    tasks = [asyncio.ensure_future(w) for w in work]
    # Every request must be answered; one that is not within the drain limit is reported
    # (with its method and age) instead of hanging the benchmark.
    _, stuck = await asyncio.wait(tasks, timeout=seconds + args.drain_limit)
    for task in stuck:
        task.cancel()
    drained = time.monotonic()
    await asyncio.sleep(2)  # late or double answers would arrive now
    answered = all(count == 1 for e in editors for count in e.answers.values())
    unanswered = sum(1 for e in editors for f in e.futures.values() if not f.done())
    now = time.monotonic()
    waiting = [
        f"dev{e.index} #{i} {e.sent[i][0]} for {now - e.sent[i][1]:.0f} s"
        for e in editors for i, f in e.futures.items() if not f.done()
    ]  # fmt: skip
    result = summarize(name, records, samples, started, events)
    totals: dict[str, Counter[str]] = {"refactors": Counter(), "completions": Counter()}
    for counters in await asyncio.gather(*(e.counters() for e in editors)):
        for kind, counts in counters.items():
            totals[kind].update(counts)
    result["lsp-infer counters (all editors)"] = {k: dict(v) for k, v in totals.items()}
    result |= {
        "every request answered exactly once": answered and unanswered == 0,
        "requests": sum(len(e.answers) for e in editors), "unanswered": unanswered,
        "unanswered requests": waiting, "workdir": str(workdir),
        "edits applied": sum(e.edits for e in editors),
        "edits for a changed document": sum(e.bad_edits for e in editors),
        "drain s": round(drained - until, 1),
    }  # fmt: skip
    await asyncio.gather(*(e.close() for e in editors))
    return result


GOOD = {"refactor": {"applied", "unchanged"}, "completion": {"team"}}


def latency(records: list[Record], kind: str) -> dict[str, Any]:
    mine = [r for r in records if r.kind == kind]
    served = [(r.done - r.sent) * 1000 for r in mine if r.outcome in GOOD[kind]]
    return {
        "count": len(mine),
        "outcomes": dict(Counter(r.outcome for r in mine)),
        "p50 ms": percentile(served, 0.5),
        "p95 ms": percentile(served, 0.95),
    }


def summarize(
    name: str, records: list[Record], samples: list[dict[str, Any]], started: float,
    events: dict[str, float],
) -> dict[str, Any]:  # fmt: skip
    result: dict[str, Any] = {"run": name}
    for kind in GOOD:
        result[kind] = latency(records, kind)
    failures = Counter(
        r.message.split(": ", 1)[-1][:90] for r in records if r.outcome in ("failed", "error")
    )
    result["failure messages"] = dict(failures.most_common(8))
    if "killed" in events:
        phases = {"before the kill": (started, events["killed"]),
                  "one replica down": (events["killed"], events["restarted"]),
                  "after the restart": (events["restarted"], float("inf"))}  # fmt: skip
        result["phases"] = {
            phase: {kind: latency([r for r in records if low <= r.sent < high], kind)
                    for kind in GOOD}
            for phase, (low, high) in phases.items()
        }  # fmt: skip
    urls = dict.fromkeys(url for s in samples for url in s["inFlight"])
    result["in flight per replica (max over 2 s samples)"] = {
        url: max(s["inFlight"].get(url, 0) for s in samples) for url in urls
    }
    result["samples"] = samples
    if "killed" in events:
        result["failover"] = failover(records, samples, started, events)
    return result


def longest_gap(times: list[float], start: float, end: float) -> float:
    points = [start, *sorted(t for t in times if start <= t <= end), end]
    return max(b - a for a, b in itertools.pairwise(points))


def failover(
    records: list[Record], samples: list[dict[str, Any]], started: float, events: dict[str, float]
) -> dict[str, Any]:
    killed, restarted = events["killed"], events["restarted"]
    ok = [r.done for r in records if r.outcome in ("applied", "unchanged", "team")]
    after = [t for t in ok if t > killed]
    window = 60.0
    down_at = [s["t"] for s in samples if any(s["down"].values()) and s["t"] + started >= killed]
    back_at = [
        s["t"] for s in samples if s["t"] + started > restarted and not any(s["down"].values())
    ]
    failed_mid = [r for r in records if r.outcome == "failed" and r.sent <= killed <= r.done]
    return {
        "first success after the kill s": round(min(after) - killed, 2) if after else None,
        "longest gap without a success, 60 s after the kill s": round(
            longest_gap(ok, killed, killed + window), 2),
        "longest gap without a success, 60 s before the kill s": round(
            longest_gap(ok, killed - window, killed), 2),
        "first editor marked it down after s": round(down_at[0] + started - killed, 1)
        if down_at else None,
        "every editor saw it healthy again after the restart s": round(
            back_at[0] + started - restarted, 1) if back_at else None,
        "requests cut mid-answer by the kill": len(failed_mid),
        "failed attempts on each replica (all editors, at the end)": samples[-1]["failures"]
        if samples else {},
    }  # fmt: skip


def killer(process_box: list[Any], port: int):  # type: ignore[no-untyped-def]
    async def kill(started: float, seconds: float, events: dict[str, float]) -> None:
        await asyncio.sleep(max(0.0, started + seconds / 3 - time.monotonic()))
        process_box[0].kill()  # a crash: SIGKILL, no goodbye
        events["killed"] = time.monotonic()
        await asyncio.sleep(max(0.0, started + 2 * seconds / 3 - time.monotonic()))
        process_box[0] = await asyncio.to_thread(start_openai_server, API_KEY, port, 1)
        events["restarted"] = time.monotonic()

    return kill


def show(result: dict[str, Any]) -> None:
    print(f"\n== {result['run']}")
    for kind in ("refactor", "completion"):
        r = result[kind]
        p50 = "-" if r["p50 ms"] is None else f"{r['p50 ms'] / 1000:.1f} s"
        p95 = "-" if r["p95 ms"] is None else f"{r['p95 ms'] / 1000:.1f} s"
        print(f"{kind:10} n={r['count']:4}  p50 {p50:>7}  p95 {p95:>7}  {r['outcomes']}")
    for phase, kinds in result.get("phases", {}).items():
        for kind, r in kinds.items():
            p50 = "-" if r["p50 ms"] is None else f"{r['p50 ms'] / 1000:.1f} s"
            p95 = "-" if r["p95 ms"] is None else f"{r['p95 ms'] / 1000:.1f} s"
            print(f"  {phase:18} {kind:10} n={r['count']:3} p50 {p50:>7} p95 {p95:>7} "
                  f"{r['outcomes']}")  # fmt: skip
    for key in ("every request answered exactly once", "requests", "unanswered",
                "unanswered requests", "edits applied", "edits for a changed document",
                "drain s", "failure messages", "lsp-infer counters (all editors)",
                "workdir"):  # fmt: skip
        print(f"{key}: {result[key]}")
    print(f"in flight per replica, max: {result['in flight per replica (max over 2 s samples)']}")
    series = result["samples"]
    for sample in series[:: max(1, len(series) // 24)]:
        shown = " ".join(f"{v:3}" for v in sample["inFlight"].values())
        print(f"  t={sample['t']:6.0f}s in flight: {shown}  down: {sample['down']}")
    for key, value in result.get("failover", {}).items():
        print(f"failover: {key}: {value}")


async def main_async(args: argparse.Namespace) -> None:
    ports = [free_port(), free_port()]
    first = start_openai_server(API_KEY, ports[0], 1)
    second = [start_openai_server(API_KEY, ports[1], 1)]  # the killer replaces it
    urls = [f"http://127.0.0.1:{port}/v1" for port in ports]
    try:
        results = [await run("baseline: one replica", urls[:1], args)]
        name = "router: two replicas, one killed at 1/3, back at 2/3"
        results.append(await run(name, urls, args, killer(second, ports[1])))
    finally:
        stop(first)
        stop(second[0])
    print(
        f"machine: {os.cpu_count()} cores; {args.clients} editors; {args.minutes} min per run;"
        f" a completion every ~{args.completion_every:.0f} s, a refactor every "
        f"~{args.refactor_every:.0f} s, a typed line every ~{args.type_every:.0f} s per editor"
    )
    for result in results:
        show(result)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--minutes", type=float, default=6.0, help="per run")
    parser.add_argument("--completion-every", type=float, default=120.0, help="seconds")
    parser.add_argument("--refactor-every", type=float, default=360.0, help="seconds")
    parser.add_argument("--type-every", type=float, default=60.0, help="seconds")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument(
        "--drain-limit", type=float, default=600.0,
        help="seconds after the run to wait for answers before reporting the rest",
    )  # fmt: skip
    parser.add_argument("--json", metavar="PATH", help="also write the figures here")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
