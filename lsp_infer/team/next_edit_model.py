"""The team's model as next edits ask it (next_edit/service.py's ``LineModel`` and
``RegionModel``): the like-change prompt (next_edit/analogy.py) continued to the end of its
line, or the Zeta prompt (next_edit/zeta.py) until the region's end marker, over the
completions API with each token's log-probability, which the confidence gates need (vLLM
returns them; llama.cpp's server with ``logits_all``, its default).

The stream is closed as soon as the line (or the region) has ended, so the server decodes no
more than that (vLLM aborts a request whose client went away); a keystroke closes it too, as it does
a team completion. A server that sends no log-probabilities gets nothing shown: the gate
cannot tell how sure its model was (a warning says so once).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable, Sequence
from typing import ClassVar

from lsp_infer.core.backend import MAX_LINE_TOKENS, BackendUnavailable, Decoded, StopReason
from lsp_infer.core.cancel import CancelToken
from lsp_infer.team.http_client import TeamAnswer, TeamClient, TeamError
from lsp_infer.team.invoked_completions import INTERACTIVE_PRIORITY, POLL_S

log = logging.getLogger(__name__)

# Measured on both embedded models (core/profiles.py's next_edit_min_probability), not on the
# team's model: `python bench/next_edit.py --suite history --team-url URL` measures it there.
TEAM_MIN_PROBABILITY = 0.7


def decoded_line(answer: TeamAnswer) -> Decoded:
    """The answer as the local model's would be: the text up to and with its first newline,
    and the probabilities of the tokens that make it (decoded_text's, cut at the line's end)."""
    whole, text = decoded_text(answer), answer.text
    line_end = text.find("\n")
    reason: StopReason
    if line_end >= 0:
        text, reason = text[: line_end + 1], "stopped"
    elif answer.finish_reason == "stop":
        reason = "end"  # the model ended its output: the line is whole
    else:
        reason = "max_tokens"  # cut by the server's limit: no whole line
    starts = [0, *(end for end, _ in whole.probs)]
    probs = tuple((min(end, len(text)), chance)
                  for start, (end, chance) in zip(starts, whole.probs, strict=False)
                  if start < len(text))  # fmt: skip
    return Decoded(text, reason, probs)


def decoded_text(answer: TeamAnswer) -> Decoded:
    """The whole answer, with each token's end in it and its probability (a token without a
    log-probability ends the list: nothing after it is vouched for)."""
    probs, end = list[tuple[int, float]](), 0
    for token, logprob in answer.token_logprobs:
        if logprob is None:
            break
        end = min(len(answer.text), end + len(token))
        probs.append((end, math.exp(logprob)))
    return Decoded(answer.text, "end" if answer.finish_reason == "until" else "max_tokens",
                   tuple(probs))  # fmt: skip


class TeamNextEditModel:
    """The team's model as next edits ask it: a like line (``continue_line``, the
    service's ``LineModel``) or a region rewritten in Zeta's format (``rewrite``,
    ``RegionModel``)."""

    warned: ClassVar[bool] = False  # said once: a server without log-probabilities

    def __init__(self, client: TeamClient, affinity: str) -> None:
        self._client = client
        self._affinity = affinity  # the document: its replica has the file's prefix cached

    async def continue_line(self, prompt: str, seconds: float, cancel: CancelToken) -> Decoded:
        """``prompt`` continued to the end of its line; BackendUnavailable when the team
        cannot answer within ``seconds`` (team.completionTimeoutMs) or fails."""
        answer = await self._ask(prompt, MAX_LINE_TOKENS, lambda text: "\n" in text,
                                 seconds, cancel)  # fmt: skip
        return decoded_line(answer)

    async def rewrite(
        self,
        prompt: str,
        until: Sequence[str],
        max_tokens: int,
        seconds: float,
        cancel: CancelToken,
    ) -> Decoded:
        """``prompt`` continued until one of ``until`` has been written (then "end"; else
        "max_tokens"), as ``continue_line``. The server keeps special tokens in the text:
        Sweep's models end their answer with one (``<|file_sep|>``)."""
        answer = await self._ask(prompt, max_tokens,
                                 lambda text: any(marker in text for marker in until),
                                 seconds, cancel, keep_special_tokens=True)  # fmt: skip
        decoded = decoded_text(answer)
        if answer.finish_reason == "stop":
            # The server ended it: an end-of-generation token it keeps out of the text
            # (llama.cpp's server stops at Qwen's <|file_sep|> and writes nothing).
            return Decoded(decoded.text, "end", decoded.probs)
        return decoded

    async def _ask(
        self,
        prompt: str,
        max_tokens: int,
        until: Callable[[str], bool],
        seconds: float,
        cancel: CancelToken,
        keep_special_tokens: bool = False,
    ) -> TeamAnswer:
        async with self._client.lease():
            request = asyncio.ensure_future(
                self._client.completion(
                    prompt, max_tokens, priority=INTERACTIVE_PRIORITY,
                    affinity=self._affinity, logprobs=True, until=until,
                    keep_special_tokens=keep_special_tokens,
                )
            )  # fmt: skip
            given_up = time.monotonic() + seconds
            try:
                while not request.done():  # the cancel token is thread-safe, not awaitable
                    await asyncio.wait([request], timeout=POLL_S)
                    cancel.raise_if_cancelled()
                    if not request.done() and time.monotonic() > given_up:
                        raise BackendUnavailable(f"no answer within {seconds:.1f} s")
            finally:
                request.cancel()  # closes the HTTP request (vLLM aborts the generation)
            try:
                answer = request.result()
            except TeamError as exc:
                raise BackendUnavailable(str(exc)) from None
        if answer.text and not answer.token_logprobs and not TeamNextEditModel.warned:
            TeamNextEditModel.warned = True
            log.warning(
                "the team server sent no log-probabilities: its next edits are never shown "
                "(vLLM sends them; llama.cpp's server needs --logits_all True)"
            )
        return answer
