"""Completion quality on holes cut from real code nobody here wrote (the standard library).

The holes and their suites (local, cross, header) are bench/holes.py's: each removes the code
of one line inside a function body, and the model must write it.

Configurations (same model, same holes, same run), ORDER[:SUFFIX_TOKENS][@CONTEXT_TOKENS]
[+ctx][+defs|+imports|+outline][+nearest][+shift][+q4_0][+choicesN]:
  plain      the baseline a user gets from the model without this server: the model card's
             prefix/suffix/middle prompt as one string (the window's text as it is, the
             indentation typed before the cursor included), llama-cpp-python's own
             create_completion, greedy, its first line; the same window of whole lines as
             spmv (--context-tokens, 128 of them for the suffix). Qwen's markers only.
  psm        the prefix/suffix/middle order through the server's engine (its window,
             token healing, postprocessing)
  spmv       the current file only, in the server's layout (the SPM variant): the whole window
  spmv+ctx   plus extra context: the package's other modules are "open in the editor", and
             extra_context.select picks what fits completion budget (as the server does)
  spmv+defs  extra context from definitions only, the other files closed: a real language
             server (jedi-language-server; typescript-language-server for --suite ts, from
             bench/typescript) is the editor's, and answers lspInfer/definitions for the names
             the server asks for in one pause (local/definitions.py)
  spmv+ctx+defs  both: the other files open, and the definitions
  spmv+defs3 as +defs, after three pauses in the file (each asks the next 8 names)
  spmv+oracle  an upper bound for +defs: the extra context holds the definitions (their
             excerpt, as the server cuts one) of the names the missing line itself uses, found
             in the package's other modules: what no mechanism that cannot see the answer
             could beat with the same budget
  spmv+imports  the file's own import lines, as an extra-context file (up to --extra-tokens
             tokens, dropped whole when over)
  spmv@162   a cold start's smaller window of 162 tokens, built as the server builds one
             (chosen by structure: the enclosing headers, the names used, the nearest lines;
             its suffix keeps the whole window's share); the server sizes it by the measured
             prompt speed (completion.coldStartMs), this fixes the size
  spmv@162+nearest  the same window by distance only (the nearest lines), as before
  spmv:40@162  a window of 162 tokens with a 40-token suffix, nearest lines, not a cold one
  spmv+shift the window moved: the prompt for the text without the 8 lines above the
             cursor's line is evaluated first, and the hole's own prompt reuses its cache by
             shifting the lines both share (KV shift) instead of evaluating them again
  spmv+q4_0  the embedded model requantized to Q4_0 (the setting model.requantize)
  spmv+choices5  also an invoked request's other choices (completion.choices: each from
             another of the 5 most likely first tokens), unhurried, in each hole's record;
             prints how many holes some choice gets right, and what picking the most probable
             first line among them would score (a rerank) beside the greedy suggestion
  spmv+outline  an experiment, not the server's: the file's own outline outside the window
             (its top-level definitions' first lines, the enclosing class's method lines), as
             an extra file of up to --extra-tokens

--model FILE runs every configuration on another GGUF file instead of the embedded model.

Reports exact match (first suggested line == the removed line), edit similarity (difflib
ratio), and seconds per hole (a cold prompt each: no KV reuse between holes). --curve adds,
for each configuration, what completion.minConfidence would do at several thresholds: the
share of suggestions shown, the share of the shown whose first line is right, and the share
of the right ones still shown (for each measure of a line's confidence: the product of its
tokens' probabilities, the whole line's probability, the server's; the lowest of them; their
geometric mean; the first token's).

    python bench/quality.py --suite local,header --configs psm,spmv,spmv@162 --curve
    python bench/quality.py --suite local,header --seed 3 --configs spmv --curve --json q3.json
    python bench/quality.py --curve-of q2.json q3.json q4.json q5.json  # pooled, no model
    python bench/quality.py --suite cross --configs spmv,spmv+defs,spmv+ctx,spmv+ctx+defs
    (cd bench/typescript && npm ci) && python bench/quality.py --suite ts --configs spmv,spmv+defs
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import math
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from holes import Hole, score, suites
from language_server import LanguageServerEditor

from lsp_infer.config import CompletionSettings, ExtraContextSettings, ModelSettings
from lsp_infer.core.backend import CompletionJob, JobOptions
from lsp_infer.core.cancel import CancelToken
from lsp_infer.core.confidence import line_confidences
from lsp_infer.core.engine import CompletionEngine
from lsp_infer.local import decoder
from lsp_infer.local.definitions import EditorDefinitions, excerpt
from lsp_infer.local.extra_context import _OUTLINE, Chunk, OpenDocument, select, trimmed
from lsp_infer.local.lane import ModelLane
from lsp_infer.local.llama_cpp import LlamaCppBackend
from lsp_infer.local.prompt_builder import BuiltPrompt, PromptBuilder
from lsp_infer.stats import percentile
from lsp_infer.text import TYPICAL_CHARS_PER_TOKEN
from lsp_infer.threads import set_thread_waiting

# How the server's llama.cpp threads wait (threads.set_thread_waiting), set before llama.cpp
# loads (lsp_infer imports it lazily), so that the raw figures and the server's compare.
set_thread_waiting()


def moved_window(hole: Hole, lines: int = 8) -> tuple[str, int]:
    """The hole's text without the ``lines`` lines above the cursor's line: its window starts
    that many lines earlier, with the same text after the cursor, as before those lines were
    typed. Evaluated first, it leaves a cache the hole's own prompt reuses by shifting."""
    line_start = hole.text.rfind("\n", 0, hole.offset) + 1
    cut = line_start
    for _ in range(lines):
        cut = hole.text.rfind("\n", 0, max(cut - 1, 0)) + 1
    return hole.text[:cut] + hole.text[line_start:], hole.offset - (line_start - cut)


@dataclasses.dataclass
class ColdWindowPrompts(PromptBuilder):
    """Prompts from a cold start's smaller window of a fixed size: every prompt is built as a
    window of ``job.budget_tokens`` out of a whole one of ``full_budget`` (the server picks
    the size by the measured prompt speed instead)."""

    full_budget: int = 0

    def build(
        self, job: CompletionJob, budget_tokens: int, full_budget: int | None = None
    ) -> BuiltPrompt:
        return super().build(job, budget_tokens, full_budget or self.full_budget)


class HoleDefinitions:
    """For +defs: each hole's project written to a workspace on disk, the hole's file opened
    in a real language server (the editor's), and the definitions the server would get in
    one pause (lspInfer/definitions: local/definitions.py asks, bench/language_server.py
    answers as the editors' clients do)."""

    def __init__(self, pauses: int = 1) -> None:
        self.pauses = pauses  # each pause asks for the next names not asked yet
        self.workspace = Path(tempfile.mkdtemp(prefix="lsp-infer-defs-"))
        self.editors: dict[str, LanguageServerEditor] = {}
        self.used: list[int] = []  # definitions in each hole's extra context

    async def chunks(self, hole: Hole) -> list[Chunk]:
        language = "typescript" if hole.module.endswith(".ts") else "python"
        for path, text in hole.project or hole.siblings:
            target = self.workspace / path
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text)
        own = self.workspace / hole.module
        own.parent.mkdir(parents=True, exist_ok=True)
        own.write_text(hole.text)
        editor = await self._editor(language)
        uri = own.as_uri()
        editor.open(uri, hole.text, language)
        # The file has been open a moment before the user's first pause: a language server
        # loading its project answers nothing until then (tsserver: [] on the first request).
        await asyncio.sleep(OPEN_SECONDS)
        definitions = EditorDefinitions(editor, lambda _uri: False)  # type: ignore[arg-type]
        for _ in range(self.pauses):
            await definitions.refresh(uri, hole.text, hole.offset, budget_ms=60_000)
        editor.close(uri)
        found = definitions.chunks(uri, hole.text, hole.offset)
        return [Chunk(c.uri, self._path(c.uri), c.line, c.text) for c in found]

    def _path(self, uri: str) -> str:
        """As the server shows it: workspace-relative, else the whole path."""
        path = Path(unquote(urlparse(uri).path))
        inside = path.is_relative_to(self.workspace)
        return path.relative_to(self.workspace).as_posix() if inside else str(path)

    async def _editor(self, language: str) -> LanguageServerEditor:
        if language not in self.editors:
            command = LANGUAGE_SERVERS[language]
            self.editors[language] = await LanguageServerEditor.start(command, self.workspace)
        return self.editors[language]

    async def stop(self) -> None:
        for editor in self.editors.values():
            await editor.stop()
        shutil.rmtree(self.workspace, ignore_errors=True)

    def report(self, config: str) -> None:
        times = [t for e in self.editors.values() for t in e.request_ms]
        with_any = sum(1 for n in self.used if n)
        p50, p95 = percentile(times, 0.5) or 0, percentile(times, 0.95) or 0
        print(f"  ({config}: the language server answered {len(times)} requests, p50 "
              f"{p50:.0f} ms, p95 {p95:.0f} ms; {with_any} of {len(self.used)} holes had a "
              "definition in their prompt)")  # fmt: skip


OPEN_SECONDS = 2.0
LANGUAGE_SERVERS = {
    "python": [str(Path(sys.executable).parent / "jedi-language-server")],
    "typescript": [
        str(Path(__file__).resolve().parent / "typescript" / "node_modules" / ".bin"
            / "typescript-language-server"), "--stdio",
    ],
}  # fmt: skip


def run_config(
    config: str,
    suites: dict[str, list[Hole]],
    context_tokens: int,
    extra_budget: int,
    model_path: str | None = None,
) -> dict[str, dict[str, Any]]:
    """One configuration (see the module doc); per suite the scores and each hole's record."""
    spec, *flags = config.split("+")
    spec, _, budget = spec.partition("@")
    order, _, suffix = spec.partition(":")
    lane = ModelLane()
    cold = bool(budget) and not suffix
    backend = LlamaCppBackend(lane)
    backend.structured_cold = "nearest" not in flags
    lane.run_blocking(
        backend.load_blocking,
        ModelSettings(
            path=model_path, fim_order=order, requantize="q4_0" if "q4_0" in flags else "off"
        ),
        None,
    )
    assert backend.state == "ready" and backend.prompts is not None, backend.error
    if cold:
        fields = {
            f.name: getattr(backend.prompts, f.name) for f in dataclasses.fields(backend.prompts)
        }
        backend.prompts = ColdWindowPrompts(**fields, full_budget=context_tokens)
    engine = CompletionEngine(backend)
    settings = CompletionSettings(
        max_tokens=48,
        max_lines=1,
        context_tokens=int(budget) if budget else context_tokens,
        timeout_ms=20000,
        suffix_tokens=int(suffix) if suffix else CompletionSettings().suffix_tokens,
    )
    extra_tokens = (
        extra_budget if {"ctx", "imports", "defs", "defs3", "oracle", "outline"} & set(flags) else 0
    )
    results: dict[str, dict[str, Any]] = {}
    asking = {"defs", "defs3"} & set(flags)
    choices = next((int(f[7:]) for f in flags if f.startswith("choices")), 1)
    if choices > 1:  # every branch, not the server's 1.5 s of them: what they can hold
        decoder._CHOICES_SECONDS = 60.0
    definitions = HoleDefinitions(3 if "defs3" in flags else 1) if asking else None

    async def one(hole: Hole) -> tuple[Any, float, tuple[tuple[str, str], ...]]:
        if "imports" in flags:
            extra = imports_of(hole, extra_tokens)
        elif "outline" in flags:
            extra = own_outline(hole, extra_tokens, settings.context_tokens)
        elif "oracle" in flags:
            extra = extra_for(hole, extra_tokens, answer_definitions(hole), open_files=False)
        else:
            found = await definitions.chunks(hole) if definitions else []
            extra = extra_for(hole, extra_tokens, found, open_files="ctx" in flags)
            if definitions:
                paths = {c.path for c in found}
                definitions.used.append(sum(1 for path, _text in extra if path in paths))
        options = JobOptions(
            extra=extra, extra_tokens=extra_tokens, path=hole.module, choices=choices
        )
        # A fresh context per hole: no KV reuse between holes, same for every config.
        await lane.run(backend.cache.clear)
        if "shift" in flags:  # the window moved since the cache was filled
            text, offset = moved_window(hole)
            await engine.complete(text, offset, settings, CancelToken(), None, options)
        started = time.perf_counter()
        suggestion = await engine.complete(
            hole.text, hole.offset, settings, CancelToken(), None, options
        )
        return suggestion, time.perf_counter() - started, extra

    async def go() -> None:
        for name, holes in suites.items():
            records = []
            for hole in holes:
                suggestion, elapsed, extra = await one(hole)
                hit, ratio = score(suggestion.text, hole.expected)
                generation = suggestion.generation
                records.append({
                    "module": hole.module, "expected": hole.expected, "hit": hit,
                    "similarity": ratio, "seconds": elapsed, "text": suggestion.text,
                    "raw": generation.text, "probs": generation.probs,
                    "extra": [list(pair) for pair in extra],
                    **first_line_measures(generation.text, generation.probs),
                    "alternatives": [
                        {"raw": d.text, "probs": d.probs, "stop": d.stop_reason}
                        for d in generation.alternatives
                    ],
                })  # fmt: skip
            results[name] = {
                "exact_match": 100 * statistics.mean(r["hit"] for r in records),
                "edit_similarity": 100 * statistics.mean(r["similarity"] for r in records),
                "seconds_per_hole": statistics.mean(r["seconds"] for r in records),
                "records": records,
            }

    async def go_and_stop() -> None:
        try:
            await go()
        finally:
            if definitions:
                await definitions.stop()

    asyncio.run(go_and_stop())
    if definitions:
        definitions.report(config)
    if choices > 1:
        report_choices(config, results)
    cache = backend.cache
    if "shift" in flags:
        print(f"  ({config}: {cache.stats.shifts} shifts, {cache.stats.tokens_shifted} tokens "
              "shifted)")  # fmt: skip
    lane.run_blocking(backend._close)
    lane.shutdown()
    return results


def report_choices(config: str, results: dict[str, dict[str, Any]]) -> None:
    """For +choicesN: per suite, the holes the suggestion gets right, those some choice gets
    right, and those the choice with the most probable first line gets right."""
    for name, result in results.items():
        greedy = some = ranked = 0
        for record in result["records"]:
            branches = [{"raw": record["raw"], "probs": record["probs"]},
                        *record["alternatives"]]  # fmt: skip
            scored = [
                (first_line_measures(b["raw"], tuple(map(tuple, b["probs"])))["product"],
                 score(b["raw"], record["expected"])[0])
                for b in branches
            ]  # fmt: skip
            greedy += record["hit"]
            some += any(hit for _p, hit in scored)
            ranked += max(scored, key=lambda pair: pair[0])[1]
        print(f"  ({config} {name}: the suggestion right in {greedy} of "
              f"{len(result['records'])}, some choice in {some}, the most probable first "
              f"line in {ranked})")  # fmt: skip


def run_plain(
    suites: dict[str, list[Hole]], context_tokens: int, model_path: str | None = None
) -> dict[str, dict[str, Any]]:
    """The plain configuration (see the module doc): no server code but the window's cut."""
    import llama_cpp

    from lsp_infer.core.window import fit_window
    from lsp_infer.local.loaded_model import default_threads
    from lsp_infer.models import ensure_default_model

    path = model_path or str(ensure_default_model())
    threads = default_threads()
    llm = llama_cpp.Llama(path, n_ctx=2048, n_batch=256, n_threads=threads,
                          n_threads_batch=threads, verbose=False)  # fmt: skip

    def count(text: str) -> int:
        return len(llm.tokenize(text.encode(), add_bos=False, special=False))

    results: dict[str, dict[str, Any]] = {}
    for name, holes in suites.items():
        records = []
        for hole in holes:
            window = fit_window(hole.text, hole.offset, context_tokens, count,
                                suffix_tokens=CompletionSettings().suffix_tokens)  # fmt: skip
            prompt = f"<|fim_prefix|>{window.prefix}<|fim_suffix|>{window.suffix}<|fim_middle|>"
            tokens = llm.tokenize(prompt.encode(), add_bos=False, special=True)
            llm.reset()
            started = time.perf_counter()
            out = llm.create_completion(tokens, max_tokens=48, temperature=0.0, top_k=1,
                                        stop=["\n", "<|endoftext|>", "<|file_sep|>"])  # fmt: skip
            elapsed = time.perf_counter() - started
            text = str(out["choices"][0]["text"]).split("\n")[0]  # type: ignore[index]
            hit, ratio = score(text, hole.expected)
            records.append({"module": hole.module, "expected": hole.expected, "hit": hit,
                            "similarity": ratio, "seconds": elapsed, "text": text, "raw": text,
                            "probs": [], "extra": [],
                            **first_line_measures("", ())})  # fmt: skip
        results[name] = {
            "exact_match": 100 * statistics.mean(r["hit"] for r in records),
            "edit_similarity": 100 * statistics.mean(r["similarity"] for r in records),
            "seconds_per_hole": statistics.mean(r["seconds"] for r in records),
            "records": records,
        }
    llm.close()
    return results


def first_line_measures(text: str, probs: tuple[tuple[int, float], ...]) -> dict[str, float]:
    """Four measures of how sure the model was of the output's first line with code: the
    product of its tokens' probabilities (the line's probability: the server's,
    core/confidence.py), the lowest of them, their geometric mean (JetBrains' mean
    log-probability), the first token's."""
    lines = line_confidences(text, probs)
    if not lines or not probs:
        return {"min": 0.0, "mean": 0.0, "product": 0.0, "first": 0.0}
    start, end, product = lines[0]
    inside, previous = [], 0
    for token_end, probability in probs:
        if start <= previous < end:
            inside.append(probability)
        previous = token_end
    inside = inside or [probs[0][1]]
    logs = [math.log(max(p, 1e-12)) for p in inside]
    return {"min": min(inside), "mean": math.exp(statistics.mean(logs)),
            "product": product or 0.0, "first": probs[0][1]}  # fmt: skip


THRESHOLDS = (0.0, 0.05, 0.08, 0.1, 0.12, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6)


def print_curve(config: str, records: list[dict[str, Any]]) -> None:
    """What each minConfidence threshold would do to these suggestions (first lines): the
    share of holes with a suggestion shown, the share of those right, the share of the
    right ones still shown. An empty suggestion is never shown."""
    right = sum(r["hit"] for r in records) or 1
    for measure in ("product", "min", "mean", "first"):
        cells = []
        for threshold in THRESHOLDS:
            shown = [r for r in records if r["text"].strip() and r[measure] >= threshold]
            hits = sum(r["hit"] for r in shown)
            precision = 100 * hits / len(shown) if shown else 0.0
            cells.append(f"{threshold:.2f}: {100 * len(shown) / len(records):3.0f}/"
                         f"{precision:4.1f}/{100 * hits / right:3.0f}")  # fmt: skip
        print(f"  {config} {measure:5} shown/right-of-shown/right-kept %  " + "  ".join(cells))


def extra_for(
    hole: Hole, extra_tokens: int, definitions: list[Chunk] | None = None, open_files: bool = True
) -> tuple[tuple[str, str], ...]:
    """The package's other modules, "open in the editor" (``open_files``), and the
    ``definitions`` the editor's language server found, picked as the server picks."""
    if not extra_tokens:
        return ()
    siblings = hole.siblings if open_files else ()
    documents = [OpenDocument(f"file:///{p}", p, t) for p, t in siblings]
    chunks = select(f"file:///{hole.module}", hole.text, hole.offset, [], documents,
                    extra_tokens * TYPICAL_CHARS_PER_TOKEN, lambda _uri: False,
                    definitions or ())  # fmt: skip
    return tuple((c.path, c.text) for c in chunks)


_METHOD = re.compile(r"^    (?:async )?def ")


def own_outline(hole: Hole, extra_tokens: int, window_tokens: int) -> tuple[tuple[str, str], ...]:
    """An experiment (+outline): the file's own outline outside the window — its top-level
    definitions' first lines, as the server outlines another module (extra_context's
    _OUTLINE), and the enclosing class's method lines — as an extra file."""
    reach = window_tokens * TYPICAL_CHARS_PER_TOKEN
    lines, offset, chosen = hole.text.split("\n"), 0, []
    cursor_line = hole.text.count("\n", 0, hole.offset)
    enclosing = max((i for i in range(cursor_line) if lines[i].startswith("class ")), default=-1)
    nearest = 0
    for number, line in enumerate(lines):
        inside = hole.offset - reach <= offset <= hole.offset + reach // 4
        method = enclosing >= 0 and number > enclosing and _METHOD.match(line)
        if not inside and (_OUTLINE.match(line) or method) and len(line) < 200:
            if number < cursor_line:
                nearest = len(chosen)
            chosen.append(line)
        offset += len(line) + 1
    if not chosen:
        return ()
    chunk = trimmed(Chunk("", hole.module, 0, "\n".join(chosen), nearest),
                    extra_tokens * TYPICAL_CHARS_PER_TOKEN)  # fmt: skip
    return ((hole.module, chunk.text),) if chunk else ()


def answer_definitions(hole: Hole) -> list[Chunk]:
    """The definitions, in the package's other modules, of the names the missing line uses
    (``X`` of ``module.X``, and bare names), each cut as the server cuts a definition."""
    found: list[Chunk] = []
    for name in dict.fromkeys(re.findall(r"[A-Za-z_]\w{2,}", hole.expected)):
        definition = re.compile(
            rf"^(?:async\s+)?(?:def|class)\s+{name}\b|^{name}\s*(?::[^=\n]*)?=", re.M
        )
        for path, text in hole.project or hole.siblings:
            match = definition.search(text)
            if match:
                cut = excerpt(text[match.start() :], text[: match.start()])
                line = text.count("\n", 0, match.start())
                found.append(Chunk(f"file:///{path}", path, line, cut))
                break
    return found


def imports_of(hole: Hole, extra_tokens: int) -> tuple[tuple[str, str], ...]:
    """The hole's own file's import lines, as one extra-context file."""
    lines = [line for line in hole.text.splitlines(keepends=True)
             if re.match(r"(import|from) \S", line)]  # fmt: skip
    return ((hole.module, "".join(lines)),) if lines and extra_tokens else ()


def pooled_curves(paths: list[str]) -> None:
    """print_curve for each configuration, over every record of every file and suite."""
    pooled: dict[str, list[dict[str, Any]]] = {}
    for path in paths:
        with open(path) as source:
            for config, results in json.load(source).items():
                for result in results.values():
                    pooled.setdefault(config, []).extend(result["records"])
    for config, records in pooled.items():
        right = sum(r["hit"] for r in records)
        print(f"{config}: {len(records)} holes from {len(paths)} files, {right} right")
        print_curve(config, records)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--holes", type=int, default=40, help="holes per suite")
    parser.add_argument(
        "--suite",
        default="local",
        help="local, cross, header, ts, a comma-separated list, or both (local,cross)",
    )
    parser.add_argument(
        "--configs", default="psm,spmv",
        help="ORDER[:SUFFIX_TOKENS][@CONTEXT_TOKENS][+ctx][+defs|+imports|+outline][+nearest]"
    "[+shift][+q4_0][+choicesN],...",
    )  # fmt: skip
    parser.add_argument("--context-tokens", type=int, default=512)
    parser.add_argument("--extra-tokens", type=int, default=ExtraContextSettings().extra_tokens)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", help="a GGUF file instead of the embedded default model")
    parser.add_argument("--curve", action="store_true", help="minConfidence's curve per config")
    parser.add_argument("--json", help="write every hole's record to this file")
    parser.add_argument(
        "--curve-of", nargs="+", metavar="JSON",
        help="runs nothing: the curve of each config over the records of earlier --json files, "
        "pooled (several seeds' holes: one curve with more right answers in it)",
    )  # fmt: skip
    args = parser.parse_args()
    if args.curve_of:
        pooled_curves(args.curve_of)
        return
    chosen = suites(args.suite, args.holes, args.seed)
    for name, holes in chosen.items():
        print(f"{name}: {len(holes)} single-line holes from {len({h.module for h in holes})} "
              "modules")  # fmt: skip
    print(f"context {args.context_tokens} tokens, extra context {args.extra_tokens} "
          f"tokens, Python {sys.version.split()[0]}")  # fmt: skip
    print(f"{'config':20} {'suite':6} {'exact match %':>14} {'edit sim %':>11} {'s/hole':>7}")
    everything: dict[str, Any] = {}
    for config in args.configs.split(","):
        if config == "plain":
            results = run_plain(chosen, args.context_tokens, args.model)
        else:
            results = run_config(config, chosen, args.context_tokens, args.extra_tokens, args.model)
        everything[config] = results
        for name, result in results.items():
            print(f"{config:20} {name:6} {result['exact_match']:14.1f} "
                  f"{result['edit_similarity']:11.1f} {result['seconds_per_hole']:7.2f}",
                  flush=True)  # fmt: skip
        if args.curve:
            print_curve(config, [r for result in results.values() for r in result["records"]])
    if args.json:
        with open(args.json, "w") as out:
            json.dump(everything, out, indent=1)


if __name__ == "__main__":
    main()
