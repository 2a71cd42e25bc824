"""How llama.cpp's OpenMP threads wait: set by ``lsp-infer`` before llama.cpp loads, shown by
``lsp-infer doctor``, and shared by the benchmarks so that they measure what the server runs."""

from __future__ import annotations

import os
from collections.abc import Mapping

# How many times an OpenMP thread of llama.cpp spins before it sleeps (libgomp's
# GOMP_SPINCOUNT; its default is 300000): a short wait, whose length depends on the CPU.
# See thread_waiting.
THREAD_SPIN_COUNT = "1000"
# What lsp-infer sets when the user set neither variable (see thread_waiting).
SERVER_WAITING = {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": THREAD_SPIN_COUNT}


def thread_waiting(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables that set how llama.cpp's OpenMP threads wait for each other and for
    work, to add to ``environ``: none when it sets either of them (the user's choice wins).

    They meet at a barrier after every operation of the model's graph, hundreds of times per
    token. Spinning long there (libgomp's default, about 300000 spins; ACTIVE: minutes) steals
    the cores that the editor and everything else on the machine need: with one core busy,
    decoding ran at 7.2 tokens/s (default) and 9.7 (ACTIVE) against 11.3 sleeping at once
    (PASSIVE). Sleeping at once pays a futex wake-up at every barrier instead: on a quiet
    machine, 11.8 tokens/s against 23.8 spinning. A short spin before sleeping gets both:
    23.2-23.6 quiet, 11.0-11.9 with one core busy (bench/omp_wait.py; bench/HISTORY.md, "OpenMP
    wait policy"). PASSIVE stays set for OpenMP runtimes other than libgomp, which do not read
    GOMP_SPINCOUNT; libgomp lets GOMP_SPINCOUNT override the policy's count."""
    if "OMP_WAIT_POLICY" in environ or "GOMP_SPINCOUNT" in environ:
        return {}
    return dict(SERVER_WAITING)


def describe_thread_waiting(environ: Mapping[str, str]) -> tuple[str, bool]:
    """How llama.cpp's threads wait, in words for `lsp-infer doctor`, and whether it is
    lsp-infer's own setting (False: the user set the variables)."""
    shown = ", ".join(f"{name}={environ.get(name, '(unset)')}" for name in SERVER_WAITING)
    if all(environ.get(name) == value for name, value in SERVER_WAITING.items()):
        return f"threads spin {THREAD_SPIN_COUNT} times, then sleep ({shown})", True
    return f"thread waiting set in the environment: {shown}", False


def set_thread_waiting() -> None:
    """thread_waiting for this process. Must run before llama.cpp loads (OpenMP reads the
    variables then)."""
    os.environ.update(thread_waiting(os.environ))
