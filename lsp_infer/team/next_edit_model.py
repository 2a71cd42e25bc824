"""The team's model as next edits ask it (next_edit/service.py's ``LineModel``): the like-change
prompt (next_edit/analogy.py) continued to the end of its line over the completions API, with
each token's log-probability, which the confidence gate needs (vLLM returns them; llama.cpp's
server with ``logits_all``, its default).

The stream is closed as soon as the line has ended, so the server decodes no more than the
line (vLLM aborts a request whose client went away); a keystroke closes it too, as it does
a team completion. A server that sends no log-probabilities gets nothing shown: the gate
cannot tell how sure its model was (a warning says so once).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
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
    and each token's end in it with its probability (a token without a log-probability ends
    the list: nothing after it is vouched for)."""
    text, probs, end = answer.text, list[tuple[int, float]](), 0
    line_end = text.find("\n")
    reason: StopReason
    if line_end >= 0:
        text, reason = text[: line_end + 1], "stopped"
    elif answer.finish_reason == "stop":
        reason = "end"  # the model ended its output: the line is whole
    else:
        reason = "max_tokens"  # cut by the server's limit: no whole line
    for token, logprob in answer.token_logprobs:
        if logprob is None or end >= len(text):
            break
        end = min(len(text), end + len(token))
        probs.append((end, math.exp(logprob)))
    return Decoded(text, reason, tuple(probs))


class TeamLineModel:
    warned: ClassVar[bool] = False  # said once: a server without log-probabilities

    def __init__(self, client: TeamClient, affinity: str) -> None:
        self._client = client
        self._affinity = affinity  # the document: its replica has the file's prefix cached

    async def continue_line(self, prompt: str, seconds: float, cancel: CancelToken) -> Decoded:
        """``prompt`` continued to the end of its line; BackendUnavailable when the team
        cannot answer within ``seconds`` (team.completionTimeoutMs) or fails."""
        async with self._client.lease():
            request = asyncio.ensure_future(
                self._client.completion(
                    prompt, MAX_LINE_TOKENS, priority=INTERACTIVE_PRIORITY,
                    affinity=self._affinity, logprobs=True, until=lambda text: "\n" in text,
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
        if answer.text and not answer.token_logprobs and not TeamLineModel.warned:
            TeamLineModel.warned = True
            log.warning(
                "the team server sent no log-probabilities: its like changes are never shown "
                "(vLLM sends them; llama.cpp's server needs --logits_all True)"
            )
        return decoded_line(answer)
