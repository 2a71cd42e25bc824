"""Decoding from an evaluated prompt: greedy, token by token, with each token's probability,
cut at the job's deadline on a line boundary; and an invoked request's other choices, each
branching from another of the most likely first tokens."""

from __future__ import annotations

import codecs
import dataclasses
import time
from typing import Any

import numpy as np

from lsp_infer.core.backend import CompletionJob, Decoded, StopReason, TokenProbs
from lsp_infer.core.cancel import CancelToken
from lsp_infer.core.postprocess import complete_lines
from lsp_infer.local.kv import PromptCache
from lsp_infer.local.vocabulary import TokenIds, Vocabulary

# Alternatives (an invoked request's other choices) get this long in all, after the suggestion.
_CHOICES_SECONDS = 1.5

Logits = np.ndarray[Any, np.dtype[np.float32]]


def probability(logits: Logits, token: int, among: TokenIds | None = None) -> float:
    """The probability of ``token`` under ``logits`` (a softmax; over the ids ``among`` only,
    when given): about 0.2 ms for the default model's 151,936 logits, against 40-50 ms to
    decode the token."""
    row = logits if among is None else logits[among]
    top = float(row.max())
    return float(np.exp(float(logits[token]) - top) / np.exp(row - top).sum())


def align_to_typed_space(raw: str, typed: str) -> str:
    """The output without the whitespace the user already typed (left out of the prompt).

    The model's leading whitespace covers what was typed: drop that much. Less (or other)
    whitespace than was typed: keep the user's, drop the model's."""
    if not typed:
        return raw
    lead = len(raw) - len(raw.lstrip(" \t"))
    if raw[:lead].startswith(typed):
        return raw[len(typed) :]
    return raw[lead:]


@dataclasses.dataclass(frozen=True)
class Start:
    """Where decoding starts: the backed-up token's text (token healing), the whitespace typed
    at the cursor (with ``exact_space``, the output must start with it and then code:
    core/postprocess.starts_at_typed_space), and a branch's first token with its probability
    (None: the most likely)."""

    healed: bytes
    typed_space: str
    first: tuple[int, float] | None = None
    exact_space: bool = False

    def owed_space(self) -> bytes | None:
        """The typed whitespace the output must still write before its code (None: no such
        constraint)."""
        return self.typed_space.encode() if self.exact_space else None


def still_owed(owed: bytes, piece: bytes) -> bytes | None:
    """What is left to write of the typed whitespace ``owed`` after ``piece`` (None: the
    code has begun; spacing_candidates allows only pieces that keep to it)."""
    return owed[len(piece) :] if owed.startswith(piece) else None


class Decoder:
    def __init__(self, llm: Any, vocabulary: Vocabulary, cache: PromptCache) -> None:
        self._llm = llm
        self._vocabulary = vocabulary
        self._cache = cache

    def logits(self) -> Logits:
        """The logits after the last evaluated token (a view: copy to keep)."""
        import llama_cpp

        llm = self._llm
        return np.ctypeslib.as_array(
            llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(llm.n_vocab(),)
        )

    def decode(
        self, job: CompletionJob, cancel: CancelToken, deadline: float, start: Start
    ) -> tuple[str, int, StopReason, TokenProbs]:
        """Greedy decoding from the evaluated prompt until a stop; also each token's
        probability, where it ends in the text. A branch (``start.first``) does not report its
        progress."""
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        raw = text = ""
        healed, owed, probs = start.healed, start.owed_space(), list[tuple[int, float]]()
        # The deadline cuts at whole lines, so it waits for the first one, but only up to half
        # as long again: a long first line (a regex, a long call) is cut there, so that it
        # cannot hold the pause for seconds (multifile benchmark: 44-token lines decoded for
        # 2 s made the slowest pauses in a file 2.6 s).
        last_resort = deadline + job.decode_seconds / 2
        for generated in range(job.max_tokens):
            cancel.raise_if_cancelled()
            now = time.monotonic()
            if now > deadline and complete_lines(text).strip():
                return text, generated, "deadline", tuple(probs)
            if now > last_resort:  # half a line beats nothing after all that work
                return text, generated, "line_cut", tuple(probs)
            token, chance = (
                start.first if generated == 0 and start.first else self._next(healed, owed)
            )
            if self._vocabulary.ends_output(token):
                return text, generated, "end", tuple(probs)
            piece = self._vocabulary.piece(token)
            if owed is not None:
                owed = still_owed(owed, piece)
            if healed:  # the part the user already typed is not part of the suggestion
                consumed = min(len(healed), len(piece))
                piece, healed = piece[consumed:], healed[consumed:]
            raw += decoder.decode(piece)
            text = align_to_typed_space(raw, start.typed_space)
            probs.append((len(text), chance))
            if start.first is None:  # in-flight reuse reads the suggestion's progress
                job.progress.text, job.progress.generated_tokens = text, generated + 1
            if job.should_stop(text):
                return text, generated + 1, "stopped", tuple(probs)
            if self._cache.length + 1 >= self._llm.n_ctx():
                return text, generated + 1, "context_full", tuple(probs)
            self._cache.evaluate([token], cancel)
        return text, job.max_tokens, "max_tokens", tuple(probs)

    def write_typed_space(self, start: Start, cancel: CancelToken) -> Start:
        """Where an exact typed space is owed (``start.owed_space()``), evaluate its tokens
        as the tokenizer splits it before code (12 spaces: 11, then " if" carries the last
        one), so that decoding, and an invoked request's branches, start at the code's first
        token; the Start for what is still owed. The layout is the user's: the model is not
        asked about it (left to choose, it picks a split that no training text had, and
        then writes digits, which follow a whole run of spaces)."""
        owed = start.owed_space()
        if not owed:
            return start
        tokens, left = self._vocabulary.spacing_tokens(start.typed_space)
        if not tokens:
            return start
        self._cache.evaluate(tokens, cancel)
        return dataclasses.replace(start, typed_space=left.decode())

    def _next(self, healed: bytes, owed: bytes | None = None) -> tuple[int, float]:
        """The most likely next token (inside a backed-up token: one that matches it; while
        typed whitespace is ``owed``: one that keeps to it, unless the model ends the output),
        and its probability (among those that match or keep to it)."""
        logits = self.logits()
        candidates: TokenIds | None = None
        if healed:
            candidates = self._vocabulary.healing_candidates(healed)
        elif owed is not None:
            best = int(np.argmax(logits))
            if not self._vocabulary.ends_output(best):
                candidates = self._vocabulary.spacing_candidates(owed)
        if candidates is not None and len(candidates):
            token = int(candidates[np.argmax(logits[candidates])])
            return token, probability(logits, token, candidates)
        token = int(np.argmax(logits))
        return token, probability(logits, token)

    def alternatives(
        self, job: CompletionJob, prompt_length: int, logits: Logits, start: Start,
        cancel: CancelToken,
    ) -> tuple[Decoded, ...]:  # fmt: skip
        """Up to ``job.choices - 1`` other outputs: the same evaluated prompt (``logits``
        after it), each continued from the next most likely first token, within
        _CHOICES_SECONDS in all."""
        found: list[Decoded] = []
        deadline = time.monotonic() + min(job.decode_seconds, _CHOICES_SECONDS)
        healed, owed, stops = start.healed, start.owed_space(), self._vocabulary.stop_ids
        ids = self._vocabulary.healing_candidates(healed) if healed else None
        if ids is None and owed is not None:
            ids = self._vocabulary.spacing_candidates(owed)
        ranked = np.arange(len(logits)) if ids is None else ids
        best = ranked[np.argsort(-logits[ranked], kind="stable")[: job.choices + 2 + len(stops)]]
        firsts = [int(t) for t in best if int(t) not in stops][: job.choices + 2]
        for first in firsts[1:]:
            if len(found) == job.choices - 1 or time.monotonic() > deadline:
                break
            self._cache.rewind(prompt_length)  # back to the prompt; the branch overwrites the rest
            branch = dataclasses.replace(start, first=(first, probability(logits, first, ids)))
            text, _generated, reason, probs = self.decode(job, cancel, deadline, branch)
            if text.strip():
                found.append(Decoded(text, reason, probs))
        return tuple(found)
