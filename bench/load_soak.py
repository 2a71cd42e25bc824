"""Load and soak: a burst of completion requests, then a long typing session.

burst  1,000 inline-completion requests at ~50/s spread over 5 documents, each request
       preceded by a one-character edit, never cancelled (the way Neovim sends them). Checks:
       every request answered exactly once, the last request per document gets the same
       suggestion as a fresh request at that position afterwards, and the model's queue stays
       bounded (stats.queueDepthMax).
switch (--switch-files N) typing in N real stdlib files in turn, two lines each, a suggestion
       waited for at every line end, for --soak-minutes; RSS and the per-document KV state
       cache (bytes held, entries, evictions) every minute, against --state-cache-mb.
soak   typing (VS Code-style: a request per keystroke, the previous one cancelled) for
       --soak-minutes on a fresh server with the default settings (extra context on), moving
       to a new document (closing the old one) every 600 characters; RSS, threads and open
       file descriptors of the server process after a warm-up minute, every minute, and at
       the end.

    python bench/load_soak.py                       # burst + 10-minute soak
    python bench/load_soak.py --requests 200 --soak-minutes 1    # the short version
    python bench/load_soak.py --switch-files 20 --soak-minutes 60   # an hour in 20 files
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fuzz.raw_server import RawServer

DOCS = 5
BODY = "def add(a, b):\n    return "


def process_figures(pid: int) -> dict[str, float]:
    status = Path(f"/proc/{pid}/status").read_text()
    rss_kb = int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS")))
    threads = int(
        next(line.split()[1] for line in status.splitlines() if line.startswith("Threads"))
    )
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    return {"rss_mb": rss_kb / 1024, "threads": threads, "fds": fds}


def resident_mb(pid: int) -> dict[str, float]:
    """Resident memory by kind (Linux smaps, MiB): the model file's mapping, the KV states
    (each an anonymous shared mapping of its own, listed as /dev/zero), the other anonymous
    memory (llama.cpp's KV cache and compute buffers, Python's arenas) and the heap."""
    kinds = dict.fromkeys(("model", "states", "anonymous", "heap", "other"), 0.0)
    kind = "other"
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        fields = line.split(None, 5)
        if fields and "-" in fields[0] and not fields[0].endswith(":"):
            name = fields[5] if len(fields) > 5 else ""
            kind = ("model" if name.endswith(".gguf") else "states" if name.startswith(
                "/dev/zero") else "anonymous" if not name else "heap" if name == "[heap]"
                else "other")  # fmt: skip
        elif fields and fields[0] == "Rss:":
            kinds[kind] += int(fields[1]) / 1024
    return kinds


def end_of(text: str) -> dict[str, int]:
    lines = text.split("\n")
    return {"line": len(lines) - 1, "character": len(lines[-1].encode("utf-16-le")) // 2}


def burst(server: RawServer, requests: int, rate: float) -> dict[str, object]:
    uris = [f"file:///load/doc{i}.py" for i in range(DOCS)]
    texts = {uri: f"# document {i}\n" + BODY for i, uri in enumerate(uris)}
    versions = dict.fromkeys(uris, 1)
    for uri in uris:
        server.open(uri, texts[uri])
    sent: list[int] = []
    last: dict[str, int] = {}
    started = time.monotonic()
    for n in range(requests):
        uri = uris[n % DOCS]
        # Type one more character of a comment on the first line, then ask at the end.
        line0 = texts[uri].split("\n", 1)[0]
        versions[uri] += 1
        at = {"line": 0, "character": len(line0)}
        server.change(uri, versions[uri], at, at, "x")
        texts[uri] = line0 + "x\n" + texts[uri].split("\n", 1)[1]
        last[uri] = server.inline(uri, 2, len("    return "))
        sent.append(last[uri])
        time.sleep(max(0.0, started + (n + 1) / rate - time.monotonic()))
    sending = time.monotonic() - started
    for msg_id in sent:
        server.wait(msg_id, timeout=600)
    drained = time.monotonic() - started
    counts = server.answer_counts()
    latest_ok = 0
    for uri in uris:
        final = server.wait(last[uri])["result"]["items"]
        fresh = server.wait(server.inline(uri, 2, len("    return ")))["result"]["items"]
        latest_ok += bool(final) and final == fresh
    stats = server.wait(server.request("lspInfer/stats", {}))["result"]
    return {
        "requests": requests,
        "send_seconds": round(sending, 1),
        "all_answered_by_seconds": round(drained, 1),
        "answered_exactly_once": sum(counts[i] == 1 for i in sent),
        "latest_correct": f"{latest_ok}/{DOCS}",
        "queue_depth_max": stats["queueDepthMax"],
        "superseded": stats["superseded"],
        "generations": stats["generations"],
    }


def soak(server: RawServer, minutes: float) -> dict[str, object]:
    uri = "file:///soak/typing.py"
    text = BODY
    server.open(uri, text)
    source = (Path(os.__file__).parent / "textwrap.py").read_text()
    version, pending, typed = 1, None, 0
    started = time.monotonic()
    warm = None
    end = started + minutes * 60
    position = 0
    samples: list[dict[str, float]] = []
    next_sample = started + min(60, minutes * 30)
    while time.monotonic() < end:
        if time.monotonic() >= next_sample:
            samples.append(process_figures(server.process.pid))
            warm = warm or samples[0]
            next_sample += 60
        char = source[position % len(source)]
        position += 1
        at = end_of(text)
        version += 1
        server.change(uri, version, at, at, char)
        text += char
        typed += 1
        if pending is not None:
            server.notify("$/cancelRequest", {"id": pending})
        cursor = end_of(text)
        pending = server.inline(uri, cursor["line"], cursor["character"])
        time.sleep(0.15)
        if len(text) > len(BODY) + 600:  # on to another file, as a working day does
            server.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
            uri = f"file:///soak/typing{version}.py"
            text = BODY
            server.open(uri, text, version)
    if pending is not None:
        server.wait(pending)
    time.sleep(2)
    final = process_figures(server.process.pid)
    warm = warm or final
    return {
        "minutes": minutes,
        "keystrokes": typed,
        "rss_mb_start": round(warm["rss_mb"], 1),
        "rss_mb_end": round(final["rss_mb"], 1),
        "rss_growth_percent": round(100 * (final["rss_mb"] / warm["rss_mb"] - 1), 2),
        "threads_start_end": (warm["threads"], final["threads"]),
        "fds_start_end": (warm["fds"], final["fds"]),
        "per_minute_rss_mb_threads_fds": [
            (round(x["rss_mb"], 1), int(x["threads"]), int(x["fds"])) for x in [*samples, final]
        ],
    }


SWITCH_MODULES = [
    "textwrap.py", "shlex.py", "glob.py", "csv.py", "difflib.py", "fractions.py", "calendar.py",
    "pprint.py", "string.py", "configparser.py", "heapq.py", "bisect.py", "statistics.py",
    "ipaddress.py", "gettext.py", "netrc.py", "dataclasses.py", "functools.py", "tokenize.py",
    "base64.py",
]  # fmt: skip


def switch_soak(
    server: RawServer, minutes: float, files: int, state_cache_mb: int
) -> dict[str, object]:
    """Typing in ``files`` real files in turn (a few lines each, then the next file), a
    suggestion waited for at every line end; RSS and the state cache every minute."""
    stdlib = Path(os.__file__).parent
    texts = {f"file:///soak/{m}": (stdlib / m).read_text() for m in SWITCH_MODULES[:files]}
    versions = dict.fromkeys(texts, 1)
    # Typing goes in at the start of a line in the middle of each file.
    cursors = {uri: text.index("\n", len(text) // 2) + 1 for uri, text in texts.items()}
    for uri, text in texts.items():
        server.open(uri, text)
    # The model loads on the first request: measure the baseline once it has answered.
    first = next(iter(texts))
    end = end_of(texts[first][: cursors[first]])
    server.wait(server.inline(first, end["line"], end["character"]), timeout=600)
    loaded = process_figures(server.process.pid)
    loaded_resident = resident_mb(server.process.pid)
    started, samples, switches, pauses = time.monotonic(), [], 0, 0
    next_sample = started + 60
    line = "    value = compute(value, limit)  # typed\n"
    while time.monotonic() < started + minutes * 60:
        for uri in texts:
            if time.monotonic() >= started + minutes * 60:
                break
            switches += 1
            for _ in range(2):  # two lines, each with the suggestion at its end
                pending = None
                for char in line:
                    cut = cursors[uri]
                    at = end_of(texts[uri][:cut])
                    versions[uri] += 1
                    server.change(uri, versions[uri], at, at, char)
                    texts[uri] = texts[uri][:cut] + char + texts[uri][cut:]
                    cursors[uri] = cut + 1
                    if pending is not None:
                        server.notify("$/cancelRequest", {"id": pending})
                    cursor = end_of(texts[uri][: cut + 1])
                    pending = server.inline(uri, cursor["line"], cursor["character"])
                    time.sleep(0.09)
                server.wait(pending, timeout=300)
                pauses += 1
            if time.monotonic() >= next_sample:
                figures = process_figures(server.process.pid)
                resident = resident_mb(server.process.pid)
                state = server.wait(server.request("lspInfer/stats", {}))["result"]["stateCache"]
                samples.append((round(figures["rss_mb"]), round(state["bytesHeld"] / 2**20, 1),
                                round(resident["states"], 1), round(resident["anonymous"]),
                                state["entries"], state["evictions"]))  # fmt: skip
                next_sample += 60
    final = server.wait(server.request("lspInfer/stats", {}))["result"]
    return {
        "minutes": minutes, "files": files, "switches": switches, "pauses": pauses,
        "rss_mb_after_load": round(loaded["rss_mb"]),
        "resident_mb_after_load": {k: round(v) for k, v in loaded_resident.items()},
        "rss_mb_max": max([s[0] for s in samples] + [round(loaded["rss_mb"])]),
        # The bound: the loaded server plus model.stateCacheMb of saved KV states.
        "rss_mb_bound": round(loaded["rss_mb"]) + state_cache_mb,
        # The states' real memory (their mappings) against the bound, and the rest of RSS:
        # flat once warm unless something else grows.
        "states_resident_mb_max": max([s[2] for s in samples], default=0),
        "rss_minus_states_mb_first_last": [
            round(samples[i][0] - samples[i][2]) for i in (0, -1)] if samples else [],
        "state_cache": final["stateCache"],
        "per_minute_rss_mb_state_mb_resident_state_mb_anonymous_mb_entries_evictions": samples,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=50.0)
    parser.add_argument("--soak-minutes", type=float, default=10.0)
    parser.add_argument(
        "--switch-files", type=int, default=0,
        help="instead: a soak that types in this many files in turn (at most 20)",
    )  # fmt: skip
    parser.add_argument("--state-cache-mb", type=int, default=256)
    args = parser.parse_args()
    if args.switch_files:
        server = RawServer()
        server.initialize({"model": {"stateCacheMb": args.state_cache_mb}})
        try:
            result = switch_soak(server, args.soak_minutes, args.switch_files, args.state_cache_mb)
            print("switch soak:", result, flush=True)
            assert server.process.poll() is None, "the server died"
        finally:
            server.close()
        return
    server = RawServer()
    # Five look-alike documents would be each other's extra context: off for the burst.
    server.initialize({"context": {"enabled": False}})
    try:
        print("burst:", burst(server, args.requests, args.rate), flush=True)
        assert server.process.poll() is None, "the server died"
        assert not server.stray, f"non-LSP output on stdout: {server.stray[:3]}"
    finally:
        server.close()
    server = RawServer()
    server.initialize({})
    try:
        print("soak:", soak(server, args.soak_minutes), flush=True)
        assert server.process.poll() is None, "the server died"
        assert not server.stray, f"non-LSP output on stdout: {server.stray[:3]}"
    finally:
        server.close()


if __name__ == "__main__":
    main()
