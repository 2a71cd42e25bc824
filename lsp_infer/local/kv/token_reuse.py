"""Which of a prompt's tokens the KV cache already holds (pure).

The common prefix is reused as it is. Past it, a run of the prompt that the cache holds
further on — the window's first lines dropped when the window moved down, say — can be reused
too: the tokens in between are removed from the cache and the run shifted into place
(``llama_memory_seq_rm`` / ``llama_memory_seq_add``; llama.cpp re-rotates the shifted keys),
as llama.cpp's server does with ``--cache-reuse``. A shifted run is an approximation: its keys
and values were computed while the removed tokens were there to attend to. Only long runs are
shifted, so a run is reused only where a whole stretch of code moved (bench/quality.py
measures what the shift costs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np

# A shorter run is not worth the approximation (a few common tokens match anywhere).
MIN_SHIFT_RUN = 64

Tokens: TypeAlias = "Sequence[int] | np.ndarray[Any, Any]"


@dataclass(frozen=True)
class Move:
    """Cache tokens [source, source + length) go to positions [target, target + length)."""

    source: int
    target: int
    length: int


@dataclass(frozen=True)
class ReusePlan:
    prefix: int  # tokens reused in place
    moves: tuple[Move, ...] = ()  # then these runs, shifted, in order

    @property
    def reused(self) -> int:
        """Prompt tokens the cache will hold once the plan is applied."""
        return self.moves[-1].target + self.moves[-1].length if self.moves else self.prefix


def common_prefix(a: Tokens, b: Tokens) -> int:
    n = min(len(a), len(b))
    if n == 0:
        return 0
    diff = np.flatnonzero(np.asarray(a[:n]) != np.asarray(b[:n]))
    return int(diff[0]) if diff.size else n


def plan_reuse(
    cached: Sequence[int], prompt: Sequence[int], min_run: int = MIN_SHIFT_RUN
) -> ReusePlan:
    """How to reuse ``cached`` for ``prompt``: the common prefix, then runs of at least
    ``min_run`` tokens found further on in the cache, each shifted down to where the prompt
    needs it (llama.cpp's server's cache-reuse walk: the cache is searched forward for the
    prompt's next token, and a run too short to keep is skipped)."""
    have, want = np.asarray(cached, dtype=np.int64), np.asarray(prompt, dtype=np.int64)
    prefix = common_prefix(have, want)
    moves: list[Move] = []
    source, target = prefix, prefix
    while source < len(have) and target < len(want):
        move = None
        for hit in np.flatnonzero(have[source:] == want[target]):
            start = source + int(hit)
            run = common_prefix(have[start:], want[target:])
            if run >= min_run:
                move = Move(start, target, run)
                break
        if move is None:
            break
        moves.append(move)
        source, target = move.source + move.length, move.target + move.length
    return ReusePlan(prefix, tuple(moves))
