"""A cold start with the real model: the first suggestion in a file the server has not seen
comes from a smaller window (completion.coldStartMs), the whole window is evaluated in the
background right after, and the next suggestion uses it without a smaller window."""

from __future__ import annotations

import asyncio
from typing import Any

from pytest_lsp import LanguageClient

from tests.e2e.conftest import initialize, inline_at, open_document
from tests.e2e.test_switching import change, first_lines, stats


async def settled(client: LanguageClient) -> dict[str, Any]:
    """The stats once the lane is idle: nothing queued and no prompt tokens evaluated for a
    second (the background evaluation of the whole window is done)."""
    last: dict[str, Any] = await stats(client)
    for _ in range(600):  # generous: two minutes on a busy machine
        await asyncio.sleep(0.2)
        now = await stats(client)
        quiet = now["promptTokensEvaluated"] == last["promptTokensEvaluated"]
        if quiet and now["queueDepth"] == 0 and now["generations"] == last["generations"]:
            await asyncio.sleep(1.0)
            again = await stats(client)
            if again["promptTokensEvaluated"] == now["promptTokensEvaluated"]:
                return again
        last = now
    raise AssertionError(f"the lane never went idle: {last}")


async def test_a_cold_start_answers_from_a_smaller_window_then_uses_the_whole_one(
    client: LanguageClient,
):
    # 300 ms at the measured prompt speed (100-150 tokens/s here) is far less than the default
    # 512-token window: the first answer must come from a smaller one.
    await initialize(
        client,
        options={
            "completion": {"precompute": False, "coldStartMs": 300},
            "context": {"enabled": False},
        },
    )
    text = first_lines("difflib.py", 160)
    uri = "file:///tmp/lsp-infer-e2e/cold/difflib.py"
    open_document(client, uri, text)
    last = text.count("\n")
    await inline_at(client, uri, last, 0)
    cold = await settled(client)
    assert cold["reducedWindows"] == 1, cold
    # The background evaluation of the whole window ran after the answer: far more prompt
    # tokens were evaluated than the smaller window holds.
    assert cold["promptTokensEvaluated"] > 400, cold

    # A new line at the end: its prompt shares the whole window evaluated in the background.
    client.text_document_did_change(change(uri, 2, last, "# the end\n"))
    await inline_at(client, uri, last + 1, 0)
    warm = await settled(client)
    assert warm["generations"] > cold["generations"], warm
    assert warm["reducedWindows"] == 1, warm  # the whole window this time
    reused = warm["promptTokensReused"] - cold["promptTokensReused"]
    evaluated = warm["promptTokensEvaluated"] - cold["promptTokensEvaluated"]
    assert reused > 300 and evaluated < 100, (reused, evaluated)
