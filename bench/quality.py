"""Completion quality on holes cut from real code nobody here wrote (the standard library).

Each hole removes the code of one line inside a function body (keeping its indentation); the
cursor sits where the code starts and the model must write the line. Two suites:

  local  random lines from 25 modules
  cross  lines that use a name defined in another module of the same package and not in
         their own (json, unittest, logging, concurrent.futures, http, email, importlib, …):
         the answer needs another file

Configurations (same model, same holes, same run), ORDER[:SUFFIX_TOKENS][@CONTEXT_TOKENS]
[+ctx|+imports][+shift][+q4_0]:
  psm        the plain prefix/suffix/middle prompt of the model card (baseline)
  spmv       the current file only, in the server's layout (the SPM variant)
  spmv+ctx   plus extra context: the package's other modules are "open in the editor", and
             extra_context.select picks what fits completion budget (as the server does)
  spmv+imports  the file's own import lines, as an extra-context file (up to --extra-tokens
             tokens, dropped whole when over): what a small window might add from the top
             of the file instead of more lines near the cursor
  spmv@128   a window of 128 tokens instead of --context-tokens (a cold start's window: its
             suffix keeps the whole window's share, as the server's does)
  spmv+shift the window moved: the prompt for the text without the 8 lines above the
             cursor's line is evaluated first, and the hole's own prompt reuses its cache by
             shifting the lines both share (KV shift) instead of evaluating them again
  spmv+q4_0  the embedded model requantized to Q4_0 (the setting model.requantize)

--model FILE runs every configuration on another GGUF file instead of the embedded model.

Reports exact match (first suggested line == the removed line), edit similarity (difflib
ratio), and seconds per hole (a cold prompt each: no KV reuse between holes).

    python bench/quality.py --suite both --configs psm,spmv,spmv+ctx
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import difflib
import json
import random
import re
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from lsp_infer.config import CompletionSettings, ExtraContextSettings, ModelSettings
from lsp_infer.core.backend import JobOptions
from lsp_infer.core.cancel import CancelToken
from lsp_infer.core.engine import CompletionEngine
from lsp_infer.core.window import smaller_suffix_tokens
from lsp_infer.local.extra_context import OpenDocument, select
from lsp_infer.local.lane import ModelLane
from lsp_infer.local.llama_cpp import LlamaCppBackend
from lsp_infer.text import TYPICAL_CHARS_PER_TOKEN
from lsp_infer.threads import set_thread_waiting

# How the server's llama.cpp threads wait (threads.set_thread_waiting), set before llama.cpp
# loads (lsp_infer imports it lazily), so that the raw figures and the server's compare.
set_thread_waiting()

STDLIB = Path(json.__file__).parent.parent
MODULES = [
    "textwrap.py", "shlex.py", "difflib.py", "fractions.py", "calendar.py", "csv.py", "glob.py",
    "pprint.py", "string.py", "json/decoder.py", "json/encoder.py", "configparser.py",
    "heapq.py", "bisect.py", "statistics.py", "ipaddress.py", "gettext.py", "netrc.py",
    "colorsys.py", "dataclasses.py", "functools.py", "tokenize.py", "ast.py", "base64.py",
    "quopri.py",
]  # fmt: skip
PACKAGES = [
    "json", "unittest", "logging", "concurrent/futures", "http", "email", "importlib",
    "xml/etree", "multiprocessing", "asyncio", "urllib", "dbm", "sqlite3", "wsgiref",
]  # fmt: skip


@dataclass(frozen=True)
class Hole:
    module: str
    text: str  # the file with the line's code removed
    offset: int  # cursor: where the removed code started
    expected: str  # the removed code
    siblings: tuple[tuple[str, str], ...] = ()  # the package's other modules (path, text)


def _line_holes(module: str, source: str, keep) -> list[tuple[int, int, str]]:
    """(start, end, code) of candidate lines inside function bodies."""
    result = []
    lines = source.split("\n")
    offset = 0
    in_function = False
    for line in lines:
        stripped = line.strip()
        indent = len(line) - len(line.lstrip(" "))
        if stripped.startswith("def "):
            in_function = True
        if (
            in_function
            and indent >= 8
            and len(stripped) >= 12
            and not stripped.startswith(("#", '"', "'", "def ", "@", "import ", "from "))
            and not stripped.endswith(("\\", ","))
            and keep(stripped)
        ):
            result.append((offset + indent, offset + indent + len(stripped), stripped))
        offset += len(line) + 1
    return result


def _top_level_names(source: str) -> set[str]:
    names: set[str] = set()
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return names
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return {n for n in names if len(n) >= 5}


def local_holes(count: int, rng: random.Random) -> list[Hole]:
    candidates = []
    for module in MODULES:
        source = (STDLIB / module).read_text()
        package = (STDLIB / module).parent
        siblings = _siblings(package, module) if package != STDLIB else ()
        for start, end, code in _line_holes(module, source, lambda _code: True):
            candidates.append(Hole(module, source[:start] + source[end:], start, code, siblings))
    return _spread(candidates, count, rng)


def _siblings(package: Path, module: str) -> tuple[tuple[str, str], ...]:
    files = []
    for path in sorted(package.glob("*.py")):
        relative = path.relative_to(STDLIB).as_posix()
        if relative != module and path.stat().st_size < 200_000:
            files.append((relative, path.read_text(errors="replace")))
    return tuple(files)


def cross_holes(count: int, rng: random.Random) -> list[Hole]:
    candidates = []
    for package in PACKAGES:
        directory = STDLIB / package
        modules = sorted(directory.glob("*.py"))
        sources = {m.relative_to(STDLIB).as_posix(): m.read_text(errors="replace") for m in modules}
        for module, source in sources.items():
            own = _top_level_names(source)
            foreign = set()
            for other, other_source in sources.items():
                if other != module:
                    foreign |= _top_level_names(other_source) - own
            if not foreign:
                continue
            pattern = re.compile(r"\b(" + "|".join(map(re.escape, sorted(foreign))) + r")\b")
            siblings = tuple((p, t) for p, t in sources.items() if p != module)
            for start, end, code in _line_holes(module, source, pattern.search):
                candidates.append(
                    Hole(module, source[:start] + source[end:], start, code, siblings)
                )
    return _spread(candidates, count, rng)


def _spread(candidates: list[Hole], count: int, rng: random.Random) -> list[Hole]:
    """At most 3 holes per module, in a seeded random order."""
    rng.shuffle(candidates)
    per_module: dict[str, int] = {}
    chosen: list[Hole] = []
    for hole in candidates:
        if per_module.get(hole.module, 0) < 3:
            per_module[hole.module] = per_module.get(hole.module, 0) + 1
            chosen.append(hole)
        if len(chosen) == count:
            break
    return chosen


def score(suggestion: str, expected: str) -> tuple[bool, float]:
    first = suggestion.strip().split("\n")[0].strip() if suggestion.strip() else ""
    return first == expected, difflib.SequenceMatcher(None, first, expected).ratio()


def moved_window(hole: Hole, lines: int = 8) -> tuple[str, int]:
    """The hole's text without the ``lines`` lines above the cursor's line: its window starts
    that many lines earlier, with the same text after the cursor, as before those lines were
    typed. Evaluated first, it leaves a cache the hole's own prompt reuses by shifting."""
    line_start = hole.text.rfind("\n", 0, hole.offset) + 1
    cut = line_start
    for _ in range(lines):
        cut = hole.text.rfind("\n", 0, max(cut - 1, 0)) + 1
    return hole.text[:cut] + hole.text[line_start:], hole.offset - (line_start - cut)


def run_config(
    config: str,
    suites: dict[str, list[Hole]],
    context_tokens: int,
    extra_budget: int,
    model_path: str | None = None,
) -> dict[str, dict[str, float]]:
    """One configuration, ORDER[:SUFFIX_TOKENS][@CONTEXT_TOKENS][+ctx|+imports][+shift][+q4_0]."""
    spec, *flags = config.split("+")
    spec, _, budget = spec.partition("@")
    order, _, suffix = spec.partition(":")
    lane = ModelLane()
    backend = LlamaCppBackend(lane)
    lane.run_blocking(
        backend.load_blocking,
        ModelSettings(
            path=model_path, fim_order=order, requantize="q4_0" if "q4_0" in flags else "off"
        ),
        None,
    )
    assert backend.state == "ready", backend.error
    engine = CompletionEngine(backend)
    settings = CompletionSettings(
        max_tokens=48,
        max_lines=1,
        context_tokens=int(budget) if budget else context_tokens,
        timeout_ms=20000,
        # A smaller window without an explicit suffix is a cold start's: the suffix keeps
        # its share of the whole window, as the server gives it.
        suffix_tokens=int(suffix)
        if suffix
        else smaller_suffix_tokens(
            CompletionSettings().suffix_tokens, int(budget or context_tokens), context_tokens
        ),
    )
    extra_tokens = extra_budget if "ctx" in flags or "imports" in flags else 0
    extra_of = imports_of if "imports" in flags else extra_for
    results: dict[str, dict[str, float]] = {}

    async def one(hole: Hole) -> tuple[str, float]:
        options = JobOptions(extra=extra_of(hole, extra_tokens), extra_tokens=extra_tokens,
                             path=hole.module)  # fmt: skip
        # A fresh context per hole: no KV reuse between holes, same for every config.
        await lane.run(backend.cache.clear)  # type: ignore[union-attr]
        if "shift" in flags:  # the window moved since the cache was filled
            text, offset = moved_window(hole)
            await engine.complete(text, offset, settings, CancelToken(), None, options)
        started = time.perf_counter()
        suggestion = await engine.complete(
            hole.text, hole.offset, settings, CancelToken(), None, options
        )
        return suggestion.text, time.perf_counter() - started

    async def go() -> None:
        for name, holes in suites.items():
            exact, similarity, seconds = [], [], []
            for hole in holes:
                text, elapsed = await one(hole)
                hit, ratio = score(text, hole.expected)
                exact.append(hit)
                similarity.append(ratio)
                seconds.append(elapsed)
            results[name] = {
                "exact_match": 100 * sum(exact) / len(exact),
                "edit_similarity": 100 * statistics.mean(similarity),
                "seconds_per_hole": statistics.mean(seconds),
            }

    asyncio.run(go())
    cache = backend.cache
    if "shift" in flags and cache is not None:
        print(f"  ({config}: {cache.stats.shifts} shifts, {cache.stats.tokens_shifted} tokens "
              "shifted)")  # fmt: skip
    lane.run_blocking(backend._close)
    lane.shutdown()
    return results


def extra_for(hole: Hole, extra_tokens: int) -> tuple[tuple[str, str], ...]:
    """The package's other modules, "open in the editor", picked as the server picks."""
    if not extra_tokens:
        return ()
    documents = [OpenDocument(f"file:///{p}", p, t) for p, t in hole.siblings]
    chunks = select(f"file:///{hole.module}", hole.text, hole.offset, [], documents,
                    extra_tokens * TYPICAL_CHARS_PER_TOKEN, lambda _uri: False)  # fmt: skip
    return tuple((c.path, c.text) for c in chunks)


def imports_of(hole: Hole, extra_tokens: int) -> tuple[tuple[str, str], ...]:
    """The hole's own file's import lines, as one extra-context file."""
    lines = [line for line in hole.text.splitlines(keepends=True)
             if re.match(r"(import|from) \S", line)]  # fmt: skip
    return ((hole.module, "".join(lines)),) if lines and extra_tokens else ()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--holes", type=int, default=40, help="holes per suite")
    parser.add_argument("--suite", choices=["local", "cross", "both"], default="local")
    parser.add_argument(
        "--configs", default="psm,spmv",
        help="ORDER[:SUFFIX_TOKENS][@CONTEXT_TOKENS][+ctx|+imports][+shift][+q4_0],...",
    )  # fmt: skip
    parser.add_argument("--context-tokens", type=int, default=512)
    parser.add_argument("--extra-tokens", type=int, default=ExtraContextSettings().extra_tokens)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", help="a GGUF file instead of the embedded default model")
    args = parser.parse_args()
    suites: dict[str, list[Hole]] = {}
    if args.suite in ("local", "both"):
        suites["local"] = local_holes(args.holes, random.Random(args.seed))
    if args.suite in ("cross", "both"):
        suites["cross"] = cross_holes(args.holes, random.Random(args.seed))
    for name, holes in suites.items():
        print(f"{name}: {len(holes)} single-line holes from {len({h.module for h in holes})} "
              f"stdlib modules")  # fmt: skip
    print(f"context {args.context_tokens} tokens, extra context {args.extra_tokens} "
          f"tokens, Python {sys.version.split()[0]}")  # fmt: skip
    print(f"{'config':12} {'suite':6} {'exact match %':>14} {'edit sim %':>11} {'s/hole':>7}")
    for config in args.configs.split(","):
        results = run_config(config, suites, args.context_tokens, args.extra_tokens, args.model)
        for name, result in results.items():
            print(f"{config:12} {name:6} {result['exact_match']:14.1f} "
                  f"{result['edit_similarity']:11.1f} {result['seconds_per_hole']:7.2f}",
                  flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
