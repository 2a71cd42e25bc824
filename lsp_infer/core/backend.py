"""The one interface every completion backend implements.

A backend turns a :class:`CompletionJob` (document text, cursor, budgets, a stop
predicate) into a :class:`Generation`. The in-process llama.cpp backend (local tier) runs it
on the model lane; the team tier's FIM backend sends it over HTTP.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from lsp_infer.core.cancel import CancelToken

# "deadline": decoding ran past completion.timeoutMs (whole lines are kept); "line_cut": the
# first line was still unfinished at 1.5 times that (it is kept as far as it got).
StopReason = Literal["end", "max_tokens", "stopped", "deadline", "line_cut", "context_full"]


class BackendUnavailable(Exception):
    """The backend cannot serve requests now (model missing, still loading, failed)."""


@dataclass
class JobProgress:
    """What a job has done so far, written by the backend as it goes (read by the scheduler:
    in-flight reuse needs the text so far; stats need the work done by cancelled jobs)."""

    text: str = ""
    prompt_tokens: int = 0
    prompt_tokens_reused: int = 0
    prompt_tokens_evaluated: int = 0
    generated_tokens: int = 0
    started_at: float | None = None  # monotonic time the backend started the job
    prompt_done_at: float | None = None  # monotonic time the whole prompt was evaluated
    stopped_at: float | None = None  # monotonic time the backend stopped for a cancel
    # A soft cancel came while the prompt was evaluated, and the backend finished the part of
    # it that stays valid before stopping (so its stop is late on purpose).
    finished_stable: bool = False


@dataclass(frozen=True, kw_only=True)
class JobOptions:
    """What the scheduler adds to a job besides the text and the settings."""

    # The document the job is for: whose KV state the backend keeps and restores.
    document: str = ""
    # Other files' code to put before the file (path, text), least useful first, and its own
    # token budget; the current file's path names it in repository-format prompts.
    extra: tuple[tuple[str, str], ...] = ()
    extra_tokens: int = 0
    path: str = ""
    # Background work whose prompt differs from what the cache holds (a new pick of extra
    # context): if it is stopped before its prompt is evaluated, the backend puts its cache
    # back as it was, so the next keystroke does not pay for the half-evaluated prompt.
    keep_cache: bool = False
    # The prompt up to this offset of the text (the start of the last word on the cursor's
    # line when the job was made) stays valid while the user types there: a soft cancel
    # (CancelReason.TYPED_ON_LINE) lets the backend finish evaluating it first, so the next
    # keystroke's request starts from there instead of from scratch.
    stable_before: int = 0
    # At most this long (at the measured prompt speed) for the part of the prompt the cache
    # does not hold: a longer one is answered from a smaller window (a cold start), and the
    # whole window is evaluated afterwards in the background. None: never cut (background).
    cold_seconds: float | None = None
    # Speculative work (a precompute, a background evaluation), not a request someone waits for.
    background: bool = False
    # Besides the suggestion, up to this many - 1 others (explicitly invoked requests): each
    # starts with another of the most likely first tokens, from the same evaluated prompt.
    choices: int = 1
    # The user asked for this suggestion (an invoked request; the scheduler gives it the
    # whole window and never hides it for low confidence).
    invoked: bool = False
    # The text is the whole prompt, as it is (no FIM markers, no window, special tokens never
    # parsed), and ``offset`` its end: a next edit's question (next_edit/analogy.py). The
    # local backend only.
    plain: bool = False


@dataclass(frozen=True, kw_only=True)
class CompletionJob(JobOptions):
    """One completion for a backend: the text and cursor, the budgets from the settings, and
    the scheduler's options (JobOptions)."""

    text: str  # the whole document snapshot
    offset: int  # cursor, as an index into text
    budget_tokens: int  # prompt budget for the text around the cursor
    suffix_tokens: int  # the most of it that goes to the text after the cursor
    max_tokens: int
    # Decoding stops once this much time (seconds) has passed after the prompt was
    # evaluated; the lines completed by then are kept.
    decode_seconds: float
    # Called with the text so far after each token; True ends generation early.
    should_stop: Callable[[str], bool] = field(default=lambda _text: False)
    progress: JobProgress = field(default_factory=JobProgress)


# The most a next edit's line model decodes (one line of code; next_edit/service.py LineModel).
MAX_LINE_TOKENS = 96

# (end offset in the output text, the probability the model gave the token) per decoded token.
TokenProbs = tuple[tuple[int, float], ...]


@dataclass(frozen=True)
class Decoded:
    """One decoded output besides the suggestion (another choice): its text, why it stopped
    and its tokens' probabilities."""

    text: str
    stop_reason: StopReason
    probs: TokenProbs = ()


@dataclass(frozen=True)
class Generation:
    text: str
    stop_reason: StopReason
    prompt_tokens: int = 0
    # Prompt tokens whose KV state was reused from the previous request.
    prompt_tokens_reused: int = 0
    generated_tokens: int = 0
    prompt_seconds: float = 0.0
    decode_seconds: float = 0.0
    # Answered from a smaller window than the settings ask for, to keep a cold start short
    # (JobOptions.cold_seconds); the whole window is still to be evaluated.
    window_reduced: bool = False
    # Other raw outputs, each from another first token (JobOptions.choices), best first.
    alternatives: tuple[Decoded, ...] = ()
    # The probability of each token of ``text`` (core/confidence.py); () from a backend that
    # does not report them (the team's).
    probs: TokenProbs = ()


class Backend(Protocol):
    name: str

    async def generate(self, job: CompletionJob, cancel: CancelToken) -> Generation: ...
