"""Plain-text measures every tier shares: lines, and characters per token without a tokenizer.

Lines here end at "\n" only (a "\r" before it stays part of the line), so splitting and
joining round-trip any text exactly; LSP positions, which also count a lone "\r" as a line
end, are positions.py's business.
"""

from __future__ import annotations

from itertools import accumulate

# Three guesses of a token's length in characters, each for a different job:
#
# A token is rarely longer than this: an upper bound, used to pre-cut huge documents before
# anything is tokenized (cutting too little only costs tokenizing time).
MAX_CHARS_PER_TOKEN = 8
# Code averages 4.65 characters per token with Qwen2.5-Coder's tokenizer (median of 32-line
# stdlib chunks; 95 % above 3.9): for budgets picked without a tokenizer that may overshoot a
# little, because the backend re-fits them by tokens (extra context).
TYPICAL_CHARS_PER_TOKEN = 4
# For counting without a tokenizer where overshooting is an error (a prompt or an answer the
# team server would refuse as too long): assume short tokens.
SHORT_CHARS_PER_TOKEN = 3


def split_lines(text: str) -> list[str]:
    """Lines with their "\\n" kept (not str.splitlines, which also splits on form feeds)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    return [*lines, parts[-1]] if parts[-1] else lines


def line_offsets(text: str) -> list[int]:
    """The offset where each line of ``split_lines(text)`` starts, plus ``len(text)`` at the
    end: line ``i`` is ``text[offsets[i]:offsets[i + 1]]``."""
    return [0, *accumulate(len(line) for line in split_lines(text))]
