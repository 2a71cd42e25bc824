"""Why `lsp-infer serve` sets OMP_WAIT_POLICY=PASSIVE: llama.cpp's speed with spinning vs passive
OpenMP threads, on a quiet machine and with one core busy (an editor's machine always is).

Each measurement runs in a fresh process (the policy is read when llama.cpp loads): the default
model with one thread per core evaluates a 400-token prompt from `difflib.py`, then decodes 30
single tokens. "one core busy" runs a pure-Python busy loop in another process meanwhile.

    python bench/omp_wait.py            # 3 runs per cell, median
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import time

MEASURE = r"""
import difflib, json, os, time
from llama_cpp import Llama
from lsp_infer.models import ensure_default_model
threads = len(os.sched_getaffinity(0))
llm = Llama(model_path=str(ensure_default_model()), n_ctx=2048, n_batch=256, n_ubatch=256,
            n_threads=threads, n_threads_batch=threads, verbose=False)
tokens = llm.tokenize(open(difflib.__file__).read()[:20000].encode(), add_bos=False)[:400]
started = time.perf_counter(); llm.eval(tokens); prompt = time.perf_counter() - started
started = time.perf_counter()
for token in tokens[:30]:
    llm.eval([token])
decode = time.perf_counter() - started
print(json.dumps({"prompt": len(tokens) / prompt, "decode": 30 / decode}))
"""


def busy_loop(stop_at: float) -> None:
    while time.time() < stop_at:
        pass


def measure(policy: str) -> dict[str, float]:
    env = dict(os.environ, OMP_WAIT_POLICY=policy)
    done = subprocess.run(
        [sys.executable, "-c", MEASURE], env=env, capture_output=True, text=True, check=True
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(f"cores: {len(os.sched_getaffinity(0))}, runs per cell: {args.runs} (median)")
    print(f"{'machine':<15}{'policy':<10}{'prompt tok/s':>14}{'decode tok/s':>14}")
    for load in ("quiet", "one core busy"):
        for policy in ("ACTIVE", "PASSIVE"):
            runs = []
            for _ in range(args.runs):
                busy = None
                if load != "quiet":
                    busy = multiprocessing.Process(target=busy_loop, args=(time.time() + 120,))
                    busy.start()
                try:
                    runs.append(measure(policy))
                finally:
                    if busy is not None:
                        busy.terminate()
                        busy.join()
            prompt = statistics.median(r["prompt"] for r in runs)
            decode = statistics.median(r["decode"] for r in runs)
            print(f"{load:<15}{policy:<10}{prompt:>14.1f}{decode:>14.1f}", flush=True)


if __name__ == "__main__":
    main()
