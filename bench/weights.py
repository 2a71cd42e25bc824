"""Model speed with the embedded weights as shipped and requantized (model.requantize).

Loads each file with the server's batch size (256), threads (one per core) and mapping (the
shipped file mapped, the requantized one read), in a 2048-token context, and measures, in
the same run and interleaved so that the machine's noise hits both alike:
  prompt   tokens/s evaluating a 512-token prompt of standard-library code, from an empty cache
  decode   tokens/s evaluating one token at a time after it (what a suggestion's decoding does)
Figures are medians over --runs; the ratio is requantized / as shipped. Then each file is
loaded alone in a fresh process, mapped and read, and its resident memory read from
/proc (VmRSS, and its anonymous and file-backed parts) after a short prompt. Quality is measured
separately: python bench/quality.py --suite both --holes 80 --configs spmv,spmv+q4_0

    python bench/weights.py --runs 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from lsp_infer import models
from lsp_infer.local.loaded_model import default_threads
from lsp_infer.threads import set_thread_waiting

# How the server's llama.cpp threads wait (threads.set_thread_waiting), set before llama.cpp
# loads (lsp_infer imports it lazily), so that the raw figures and the server's compare.
set_thread_waiting()

PROMPT_TOKENS = 512
DECODE_TOKENS = 64
SOURCE = Path(json.__file__).parent.parent / "difflib.py"


def load(path: Path, mapped: bool) -> Any:
    from llama_cpp import Llama

    threads = default_threads()
    return Llama(
        model_path=str(path), n_ctx=2048, n_batch=256, n_ubatch=256, n_threads=threads,
        n_threads_batch=threads, use_mmap=mapped, logits_all=False, verbose=False,
    )  # fmt: skip


def measure(llm: Any, tokens: list[int]) -> tuple[float, float]:
    """(prompt tokens/s, decode tokens/s) from an empty KV cache."""
    import llama_cpp

    llm.reset()
    llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(llm.ctx), True)
    started = time.perf_counter()
    llm.eval(tokens[:PROMPT_TOKENS])
    prompt = PROMPT_TOKENS / (time.perf_counter() - started)
    started = time.perf_counter()
    for token in tokens[PROMPT_TOKENS : PROMPT_TOKENS + DECODE_TOKENS]:
        llm.eval([token])
    decode = DECODE_TOKENS / (time.perf_counter() - started)
    return prompt, decode


def resident_memory(path: Path, mapped: bool) -> dict[str, float]:
    """MB resident in a fresh process that loaded only this file and evaluated a prompt."""
    done = subprocess.run(
        [sys.executable, __file__, "--rss-of", str(path), "--mapped", str(int(mapped))],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return dict(json.loads(done.stdout.splitlines()[-1]))


def report_own_memory(path: Path, mapped: bool) -> None:
    llm = load(path, mapped)
    llm.eval(llm.tokenize(SOURCE.read_text()[:2000].encode(), add_bos=False))
    with open(f"/proc/{os.getpid()}/status") as status:
        fields = dict(line.split(":", 1) for line in status)
    print(
        json.dumps({k: int(fields[k].split()[0]) / 1024 for k in ("VmRSS", "RssAnon", "RssFile")})
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--requantize", default="q4_0", choices=sorted(models.REQUANTIZE_TYPES))
    parser.add_argument("--rss-of", help=argparse.SUPPRESS)  # the child process's part
    parser.add_argument("--mapped", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rss_of:
        report_own_memory(Path(args.rss_of), bool(args.mapped))
        return
    started = time.perf_counter()
    derived = models.ensure_requantized(args.requantize, threads=default_threads())
    print(f"{args.requantize} file ready in {time.perf_counter() - started:.1f} s: {derived}")
    files = {"as shipped": models.ensure_default_model(), args.requantize: derived}
    # As the server loads them: the shipped file mapped, the requantized one read.
    loaded = {name: load(path, mapped=name == "as shipped") for name, path in files.items()}
    text = SOURCE.read_text()
    tokens = next(iter(loaded.values())).tokenize(text.encode(), add_bos=False)
    assert len(tokens) >= PROMPT_TOKENS + DECODE_TOKENS
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in loaded}
    for _ in range(args.runs):
        for name, llm in loaded.items():
            results[name].append(measure(llm, tokens))
    print(f"{default_threads()} threads, {args.runs} runs, medians (tokens/s)")
    print(f"{'weights':12} {'size MB':>8} {'prompt':>8} {'decode':>8}")
    medians = {}
    for name, runs in results.items():
        prompt = statistics.median(r[0] for r in runs)
        decode = statistics.median(r[1] for r in runs)
        medians[name] = (prompt, decode)
        size = files[name].stat().st_size / 1e6
        print(f"{name:12} {size:8.0f} {prompt:8.1f} {decode:8.1f}")
    base, fast = medians["as shipped"], medians[args.requantize]
    print(f"{'ratio':12} {'':8} {fast[0] / base[0]:8.2f} {fast[1] / base[1]:8.2f}")
    print("resident memory, each file alone in a fresh process (MB)")
    print(f"{'weights':12} {'mapped':>7} {'VmRSS':>7} {'RssAnon':>8} {'RssFile':>8}")
    for name, path in files.items():
        for mapped in (True, False):
            rss = resident_memory(path, mapped)
            served = " (served)" if mapped == (name == "as shipped") else ""
            print(f"{name:12} {mapped!s:>7} {rss['VmRSS']:7.0f} {rss['RssAnon']:8.0f} "
                  f"{rss['RssFile']:8.0f}{served}")  # fmt: skip


if __name__ == "__main__":
    main()
