"""The first suggestion in each file after the server restarts, with KV states kept on disk
(model.stateDiskMb) and without (the default), in the same run.

Each round: a first server opens four standard-library files (bench/multifile.py's, each with
a function body removed), asks for a suggestion where the body was, waits --settle-ms for the
whole window to be evaluated behind it, and moves on to the next file; then it shuts down,
which writes what it keeps (the first server always keeps states on disk, in a fresh
directory). Then two more servers, one after the other, each as an editor opened again: one
with the states on disk (`disk`) and one without (`off`), each opening the four files and
asking at the same places, once its model is loaded. Reported per configuration: the time
from request to answer (median and max over rounds and files), the prompt tokens evaluated
per answer, and how many answers came from a cold start's smaller window. Each request
(Automatic) is answered before the next is sent; extra context off, default settings
otherwise.

    python bench/restart.py            # 3 rounds, about 4 minutes
"""

from __future__ import annotations

import argparse
import queue
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.multifile import FUNCTIONS, File, load_file
from tests.fuzz.raw_server import RawServer

DISK_MB = 512


def position(file: File) -> tuple[int, int]:
    before = file.text[: file.offset]
    return before.count("\n"), len(before.rsplit("\n", 1)[-1])


def wait_ready(server: RawServer, timeout: float = 120) -> None:
    """Until the server says the model is ready (lspInfer/status)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            message = server.notifications.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            break
        if message["method"] == "lspInfer/status":
            state = message["params"]["state"]
            if state == "failed":
                raise SystemExit(f"the model did not load: {message['params']}")
            if state == "ready":
                return
    raise SystemExit("the model did not load in time")


def session(files: list[File], directory: Path, disk_mb: int, settle: float) -> dict[str, Any]:
    """One server: each file opened and asked once (then ``settle`` seconds idle); the
    latencies, and the stats at the end. Shut down at the end (writing its states)."""
    server = RawServer(env={"LSP_INFER_STATE_DIR": str(directory)}, root=Path("/bench"))
    server.initialize({"model": {"stateDiskMb": disk_mb}, "context": {"enabled": False}})
    wait_ready(server)  # the first request does not wait for the model to load (1-2 s)
    latencies = []
    try:
        for file in files:
            server.open(file.uri, file.text)
            line, character = position(file)
            started = time.monotonic()
            answer = server.wait(server.inline(file.uri, line, character), timeout=120)
            latencies.append((time.monotonic() - started) * 1000)
            assert "result" in answer, answer
            time.sleep(settle)
        stats = server.wait(server.request("lspInfer/stats", {}))["result"]
    finally:
        server.close()
    generations = max(1, stats["requests"])
    return {
        "latencies": latencies,
        "evaluated": stats["promptTokensEvaluated"] / generations,
        "small": stats["reducedWindows"],
        "disk_restores": stats["stateCache"]["diskRestores"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--settle-ms", type=float, default=8000, help="idle after each ask")
    args = parser.parse_args()
    files = [load_file(module, name, index, 1) for index, (module, name) in enumerate(FUNCTIONS)]
    results: dict[str, list[dict[str, Any]]] = {"disk": [], "off": []}
    for round_ in range(args.rounds):
        with tempfile.TemporaryDirectory(prefix="lsp-infer-restart-") as scratch:
            directory = Path(scratch)
            first = session(files, directory, DISK_MB, args.settle_ms / 1000)
            written = sorted(p.stat().st_size for p in directory.glob("*.kv"))
            print(f"round {round_ + 1}: first server {[round(x) for x in first['latencies']]} "
                  f"ms; {len(written)} states on disk, {sum(written) / 2**20:.1f} MB")  # fmt: skip
            for name, disk_mb in (("disk", DISK_MB), ("off", 0)):
                result = session(files, directory, disk_mb, 0.5)
                results[name].append(result)
                print(f"  {name}: {[round(x) for x in result['latencies']]} ms, "
                      f"{result['evaluated']:.0f} prompt tokens evaluated per request, "
                      f"{result['small']} small windows, "
                      f"{result['disk_restores']} disk restores")  # fmt: skip
    print(f"\n{'config':6} {'first p50 ms':>13} {'max ms':>7} {'tok/request':>12} "
          f"{'small w.':>9} {'disk restores':>14}")  # fmt: skip
    medians = {}
    for name, runs in results.items():
        latencies = [x for run in runs for x in run["latencies"]]
        medians[name] = statistics.median(latencies)
        small = sum(r["small"] for r in runs)
        restores = sum(r["disk_restores"] for r in runs)
        print(f"{name:6} {medians[name]:13.0f} {max(latencies):7.0f} "
              f"{statistics.mean(r['evaluated'] for r in runs):12.0f} "
              f"{small:9d} {restores:14d}")  # fmt: skip
    print(f"disk / off (median): {medians['disk'] / medians['off']:.2f}")


if __name__ == "__main__":
    main()
