"""Why `lsp-infer serve` sets the OpenMP waiting it does (threads.thread_waiting): llama.cpp's speed
with spinning, passive and briefly spinning OpenMP threads, on a quiet machine and with one core
busy (an editor's machine always is).

Each measurement runs in a fresh process (the policy is read when llama.cpp loads): the default
model with one thread per core evaluates 64 tokens to warm up, then (timed) a 400-token prompt
from `difflib.py`, then decodes 80 single tokens. "one core busy" runs a pure-Python busy loop
in another process meanwhile. Policies are interleaved run by run.

    python bench/omp_wait.py            # 3 runs per cell, median; "serve" is the server's own
    python bench/omp_wait.py --policies ACTIVE,PASSIVE,default,spin=10000,spin=30000
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

from lsp_infer.threads import thread_waiting

MEASURE = r"""
import difflib, json, os, time
from llama_cpp import Llama
from lsp_infer.models import ensure_default_model
threads = len(os.sched_getaffinity(0))
llm = Llama(model_path=str(ensure_default_model()), n_ctx=2048, n_batch=256, n_ubatch=256,
            n_threads=threads, n_threads_batch=threads, verbose=False)
tokens = llm.tokenize(open(difflib.__file__).read()[:20000].encode(), add_bos=False)[:480]
llm.eval(tokens[:64])  # warm-up: the mapped weights are paged in, the threads started
llm.reset()
started = time.perf_counter(); llm.eval(tokens[:400]); prompt = time.perf_counter() - started
started = time.perf_counter()
for token in tokens[400:480]:
    llm.eval([token])
decode = time.perf_counter() - started
print(json.dumps({"prompt": 400 / prompt, "decode": 80 / decode}))
"""


def busy_loop(stop_at: float) -> None:
    while time.time() < stop_at:
        pass


def environment(policy: str) -> dict[str, str]:
    """The process environment for a policy cell, parts joined by "+": ACTIVE or PASSIVE
    (OMP_WAIT_POLICY), spin=N (GOMP_SPINCOUNT=N: libgomp spins N times at a barrier or
    between jobs, then sleeps; it overrides the policy's count), or "default" (neither
    variable set: libgomp spins about 300000 times, then sleeps), or "serve" (what
    `lsp-infer serve` sets when the user set neither)."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    for part in policy.split("+"):
        if part == "serve":
            env.update(thread_waiting({}))
        elif part.startswith("spin="):
            env["GOMP_SPINCOUNT"] = part.removeprefix("spin=")
        elif part != "default":
            env["OMP_WAIT_POLICY"] = part
    return env


def measure(policy: str) -> dict[str, float]:
    env = environment(policy)
    done = subprocess.run(
        [sys.executable, "-c", MEASURE], env=env, capture_output=True, text=True, check=True
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--policies",
        default="ACTIVE,PASSIVE,default,serve",
        help="of ACTIVE, PASSIVE, default, spin=N, serve, or parts joined by +",
    )
    args = parser.parse_args()
    print(f"cores: {len(os.sched_getaffinity(0))}, runs per cell: {args.runs} (median)")
    print(f"{'machine':<15}{'policy':<12}{'prompt tok/s':>14}{'decode tok/s':>14}")
    policies = args.policies.split(",")
    for load in ("quiet", "one core busy"):
        # Interleaved, run by run, so that the machine's drift hits every policy alike.
        runs: dict[str, list[dict[str, float]]] = {policy: [] for policy in policies}
        for _ in range(args.runs):
            for policy in policies:
                busy = None
                if load != "quiet":
                    busy = multiprocessing.Process(target=busy_loop, args=(time.time() + 120,))
                    busy.start()
                try:
                    runs[policy].append(measure(policy))
                finally:
                    if busy is not None:
                        busy.terminate()
                        busy.join()
        for policy in policies:
            prompt = statistics.median(r["prompt"] for r in runs[policy])
            decode = statistics.median(r["decode"] for r in runs[policy])
            print(f"{load:<15}{policy:<12}{prompt:>14.1f}{decode:>14.1f}", flush=True)


if __name__ == "__main__":
    main()
