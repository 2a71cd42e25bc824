"""What putting the KV cache back costs, beside what it saves.

A background evaluation of a new pick of extra context (a ``keep_cache`` job) copies the
model's cache out before it starts and, when a keystroke stops it, copies the part it did
out (parked) and the old cache back in. Without that, the next keystroke would evaluate
its whole prompt again. This script fills the cache with ``--tokens`` tokens of real code,
then times the copy out (snapshot), the copy back (restore), and evaluating those tokens
again — the same model, the same run.

    python bench/kv_snapshot.py [--tokens 1800] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import textwrap
import time
from pathlib import Path

from lsp_infer.config import ModelSettings
from lsp_infer.local.kv.sequence import LlamaSequence
from lsp_infer.local.lane import ModelLane
from lsp_infer.local.llama_cpp import LlamaCppBackend


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=1800)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    backend = LlamaCppBackend(ModelLane())
    backend.load_blocking(ModelSettings())
    llm = backend._llm
    cache = LlamaSequence(llm, "bench")  # the copies the prompt cache makes
    source = Path(textwrap.__file__).read_text(encoding="utf-8")
    tokens = llm.tokenize(source.encode(), add_bos=False)[: args.tokens]

    def evaluate() -> float:
        cache.clear()
        started = time.perf_counter()
        llm.eval(tokens)
        return time.perf_counter() - started

    evaluation = evaluate()  # also fills the cache for the copies below
    snapshots, restores = [], []
    for _ in range(args.runs):
        started = time.perf_counter()
        snapshot = cache.snapshot(lambda _size: None)
        snapshots.append(time.perf_counter() - started)
        cache.clear()
        started = time.perf_counter()
        cache.restore(snapshot)
        restores.append(time.perf_counter() - started)
        assert llm.n_tokens == len(tokens)
    size_mb = len(snapshot.data) / 1e6
    snapshot_ms = statistics.median(snapshots) * 1000
    restore_ms = statistics.median(restores) * 1000
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores")
    print(f"cache: {len(tokens)} tokens, {size_mb:.1f} MB")
    print(f"snapshot (copy out), median of {args.runs}: {snapshot_ms:.1f} ms")
    print(f"restore (copy back), median of {args.runs}: {restore_ms:.1f} ms")
    print(f"evaluating the same tokens again: {evaluation * 1000:.0f} ms")
    ratio = (snapshot_ms + restore_ms) / (evaluation * 1000)
    print(f"copy out + back vs evaluating again: {ratio:.4f}x")
    backend._close()


if __name__ == "__main__":
    main()
