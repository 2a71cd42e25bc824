"""A job's prompt as tokens: the window around the cursor, the FIM template, the extra
context, token healing — and, on a cold start, the smaller window that the time allows."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lsp_infer.core.backend import CompletionJob
from lsp_infer.core.postprocess import starts_at_typed_space
from lsp_infer.core.prompts import FimTemplate, Order, with_repository
from lsp_infer.core.window import Window, fit_window, smaller_budgets, smaller_suffix_tokens
from lsp_infer.local.vocabulary import Vocabulary

log = logging.getLogger(__name__)

# Room kept free in the context beyond prompt + max_tokens.
_CONTEXT_MARGIN = 8
# The prompt's prefix starts on a line number divisible by this, so it stays put (and its
# KV cache valid) for that many typed lines instead of sliding on every one. Measured with
# bench/keystrokes.py: see bench/HISTORY.md.
PREFIX_ANCHOR_LINES = 8
# A prompt with no more than this many tokens outside the cache counts as cached: what was
# typed since (a word, a new line's indentation) plus the FIM tokens.
_TYPED_TOKENS = 16
# A request whose whole window is partly evaluated (a background evaluation stopped by typing)
# takes it only when the rest costs at most this share of the cold-start budget, if a smaller
# window is held: the pause's time goes to decoding (about 1 s for a line here) rather than to
# finishing the whole window, which the background does after the answer. Taking up to the
# whole budget made same-file pauses of 2.1-2.7 s (bench/HISTORY.md, "Typing in four files").
_HELD_WINDOW_LEFTOVER = 1 / 3


@dataclass(frozen=True)
class BuiltPrompt:
    tokens: list[int]
    healed: bytes  # the backed-up last token's text (token healing)
    typed_space: str  # whitespace typed at the cursor, left out of the prompt
    stable: int  # tokens that stay valid while the user types at the cursor
    budget: int  # the window's token budget
    reduced: bool = False  # a smaller window than asked for (a cold start)
    # The output must start with ``typed_space`` exactly, then code (starts_at_typed_space).
    exact_space: bool = False


def fit_any_window(
    text: str, offset: int, budget: int, count_tokens: Callable[[str], int], **options: Any
) -> Window:
    """``fit_window``; where choosing a structured window fails, the nearest lines' window:
    a bug there must cost a keystroke some quality, never its answer (it is logged)."""
    try:
        return fit_window(text, offset, budget, count_tokens, **options)
    except Exception:
        if not options.get("structured"):
            raise
        log.exception("structured window failed; using the nearest lines")
        return fit_window(text, offset, budget, count_tokens, **{**options, "structured": False})


@dataclass
class PromptBuilder:
    vocabulary: Vocabulary
    template: FimTemplate
    order: Order
    n_ctx: int
    # Smaller windows (a cold start's) chosen by structure; False: by distance only, as the
    # whole window is (bench/quality.py compares the two).
    structured_cold: bool = True

    def build(
        self, job: CompletionJob, budget_tokens: int, full_budget: int | None = None
    ) -> BuiltPrompt:
        """The job's prompt with a window of ``budget_tokens`` around the cursor; with
        ``full_budget``, a smaller window than that, whose suffix keeps its share."""
        room = self.n_ctx - job.max_tokens - _CONTEXT_MARGIN
        room -= job.extra_tokens if job.extra else 0
        # The anchored prefix may run a quarter over its budget (see fit_window): keep room.
        budget = min(budget_tokens, room * 4 // 5)
        suffix_tokens = job.suffix_tokens
        if full_budget is not None:
            suffix_tokens = smaller_suffix_tokens(suffix_tokens, budget, full_budget)
        # A smaller window keeps what says what the code is for (the enclosing headers, the
        # names used) besides the nearest lines; the whole window is the nearest lines.
        window = fit_any_window(
            job.text, job.offset, budget, self.vocabulary.count, suffix_tokens=suffix_tokens,
            anchor_lines=PREFIX_ANCHOR_LINES, anchor_slack=budget // 4,
            structured=full_budget is not None and self.structured_cold,
        )  # fmt: skip
        # Whitespace typed at the end of the prefix ("return ", or an indentation) is left out
        # of the prompt: the model tokenizes it together with the next word (" a",
        # "   " + ' """') and would write it again. The output is re-aligned to it instead.
        # Any other last token is backed up and healed (vocabulary.py).
        prefix = window.prefix.rstrip(" \t")
        typed_space = window.prefix[len(prefix) :]
        prompt = self.template.build(prefix, window.suffix, self.order)
        if job.extra and job.extra_tokens > 0:
            files = self._fit_extra(job.extra, job.extra_tokens)
            prompt = with_repository(self.template, prompt, files, job.path or "file")
        # The last word of the prefix (when the job was made) is what typing changes;
        # everything before it stays valid (JobOptions.stable_before).
        window_start = job.offset - len(window.prefix)
        stable_chars = min(max(job.stable_before - window_start, 0), len(prefix))
        tokens, healed, stable = self.vocabulary.tokenize(
            prompt, self.template.add_bos, heal=not typed_space,
            tail_chars=len(prefix) - stable_chars,
        )  # fmt: skip
        exact_space = bool(typed_space) and starts_at_typed_space(window.prefix)
        return BuiltPrompt(tokens, healed, typed_space, stable, budget, exact_space=exact_space)

    def within(
        self,
        built: BuiltPrompt,
        job: CompletionJob,
        affordable: int,
        reusable: Callable[[list[int]], int],
    ) -> BuiltPrompt:
        """``built``, or the prompt with a smaller window whose part the cache does not hold
        (``reusable(tokens)``: the part it holds) takes no more than ``affordable`` tokens to
        evaluate (a cold start).

        A window the cache already holds but for what was just typed wins over a larger one
        that fits: each keystroke of a cold file affords a little more, and a larger window
        starts elsewhere in the file, so it was evaluated anew keystroke after keystroke
        (bench/keystrokes.py: 184 then 211 tokens in one file) while the whole window waits
        for the background evaluation anyway. The whole window wins over a held smaller one
        only when what is left of it takes at most a share of the budget
        (_HELD_WINDOW_LEFTOVER): a held window answers a pause sooner."""
        uncached = len(built.tokens) - reusable(built.tokens)
        if uncached <= max(_TYPED_TOKENS, int(affordable * _HELD_WINDOW_LEFTOVER)):
            return built
        whole_fits = uncached <= affordable
        fitting: BuiltPrompt | None = None
        candidate = built
        for budget in smaller_budgets(built.budget):  # built only as far as the loop goes
            candidate = dataclasses.replace(self.build(job, budget, built.budget), reduced=True)
            uncached = len(candidate.tokens) - reusable(candidate.tokens)
            if uncached <= _TYPED_TOKENS:
                return candidate  # held: answers at once
            if not whole_fits and fitting is None and uncached <= affordable:
                fitting = candidate
        if whole_fits:
            return built
        return fitting or candidate  # none fits: the smallest

    def _fit_extra(self, files: tuple[tuple[str, str], ...], budget: int) -> list[tuple[str, str]]:
        """The most useful files (the last ones) that fit the token budget, in their order."""
        kept: list[tuple[str, str]] = []
        used = 0
        for path, text in reversed(files):
            cost = self.vocabulary.count(f"{path}\n{text}\n") + 1
            if used + cost > budget:
                continue
            kept.append((path, text))
            used += cost
        return kept[::-1]
