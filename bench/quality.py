"""Completion quality on holes cut from real code nobody here wrote (the standard library).

Each hole removes the code of one line inside a function body (keeping its indentation); the
cursor sits where the code starts, and the model must write the line. Reports exact match
(first suggested line == the removed line) and edit similarity (difflib ratio) for each
configuration, same model, same holes, same run.

    python bench/quality.py --holes 40 --configs psm,spm
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import json
import os
import random
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

# The same thread-wait policy as `lsp-infer serve` (cli.prefer_passive_threads), set before
# llama.cpp loads, so the raw figures and the server's are comparable.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from lsp_infer.backends.llama_cpp import LlamaCppBackend
from lsp_infer.config import CompletionSettings, ModelSettings
from lsp_infer.engine import CompletionEngine
from lsp_infer.scheduling import CancelToken, ModelLane

STDLIB = Path(json.__file__).parent.parent
MODULES = [
    "textwrap.py",
    "shlex.py",
    "difflib.py",
    "fractions.py",
    "calendar.py",
    "csv.py",
    "glob.py",
    "pprint.py",
    "string.py",
    "json/decoder.py",
    "json/encoder.py",
    "configparser.py",
    "heapq.py",
    "bisect.py",
    "statistics.py",
    "ipaddress.py",
    "gettext.py",
    "netrc.py",
    "colorsys.py",
    "dataclasses.py",
    "functools.py",
    "tokenize.py",
    "ast.py",
    "base64.py",
    "quopri.py",
]


@dataclass(frozen=True)
class Hole:
    module: str
    text: str  # the file with the line's code removed
    offset: int  # cursor: where the removed code started
    expected: str  # the removed code


def cut_holes(count: int, seed: int = 0) -> list[Hole]:
    rng = random.Random(seed)
    candidates: list[Hole] = []
    for module in MODULES:
        source = (STDLIB / module).read_text()
        lines = source.split("\n")
        in_function = False
        for index, line in enumerate(lines):
            stripped = line.strip()
            if stripped.startswith("def "):
                in_function = True
            indent = len(line) - len(line.lstrip(" "))
            if (
                not in_function
                or indent < 8
                or len(stripped) < 12
                or stripped.startswith(("#", '"', "'", "def ", "@"))
                or stripped.endswith(("\\", ","))
            ):
                continue
            start = sum(len(x) + 1 for x in lines[:index]) + indent
            end = start + len(stripped)
            candidates.append(Hole(module, source[:start] + source[end:], start, stripped))
    rng.shuffle(candidates)
    per_module: dict[str, int] = {}
    chosen: list[Hole] = []
    for hole in candidates:  # spread over modules: at most 3 holes each
        if per_module.get(hole.module, 0) < 3:
            per_module[hole.module] = per_module.get(hole.module, 0) + 1
            chosen.append(hole)
        if len(chosen) == count:
            break
    return chosen


def score(suggestion: str, expected: str) -> tuple[bool, float]:
    first = suggestion.strip().split("\n")[0].strip() if suggestion.strip() else ""
    return first == expected, difflib.SequenceMatcher(None, first, expected).ratio()


def run_config(config: str, holes: list[Hole], context_tokens: int) -> dict[str, float]:
    """``config`` is ORDER or ORDER:SUFFIX_TOKENS, e.g. "psm:32"."""
    order, _, suffix = config.partition(":")
    lane = ModelLane()
    backend = LlamaCppBackend(lane)
    lane.run_blocking(backend.load_blocking, ModelSettings(fim_order=order), None)
    assert backend.state == "ready", backend.error
    engine = CompletionEngine(backend)
    settings = CompletionSettings(
        max_tokens=48,
        max_lines=1,
        context_tokens=context_tokens,
        timeout_ms=20000,
        suffix_tokens=int(suffix) if suffix else CompletionSettings().suffix_tokens,
    )
    exact, similarity, seconds = [], [], []

    async def go() -> None:
        for hole in holes:
            started = time.perf_counter()
            # A fresh context per hole: no KV reuse between holes, same for every config.
            await lane.run(lambda: backend._llm.reset())
            suggestion = await engine.complete(hole.text, hole.offset, settings, CancelToken())
            seconds.append(time.perf_counter() - started)
            hit, ratio = score(suggestion.text, hole.expected)
            exact.append(hit)
            similarity.append(ratio)

    asyncio.run(go())
    lane.run_blocking(backend._close)
    lane.shutdown()
    return {
        "exact_match": 100 * sum(exact) / len(exact),
        "edit_similarity": 100 * statistics.mean(similarity),
        "seconds_per_hole": statistics.mean(seconds),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--holes", type=int, default=40)
    parser.add_argument(
        "--configs", default="psm,spm", help="ORDER[:SUFFIX_TOKENS],... (orders: psm, spm, spmv)"
    )
    parser.add_argument("--context-tokens", type=int, default=512)
    args = parser.parse_args()
    holes = cut_holes(args.holes)
    print(
        f"{len(holes)} single-line holes from {len({h.module for h in holes})} stdlib modules, "
        f"context {args.context_tokens} tokens, Python {sys.version.split()[0]}"
    )
    print(f"{'config':8} {'exact match %':>14} {'edit sim %':>11} {'s/hole':>7}")
    for order in args.configs.split(","):
        result = run_config(order, holes, args.context_tokens)
        print(
            f"{order:8} {result['exact_match']:14.1f} {result['edit_similarity']:11.1f} "
            f"{result['seconds_per_hole']:7.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
