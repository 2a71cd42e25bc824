"""A cold start with the real model: the first suggestion in a file the server has not seen
comes from a smaller window (completion.coldStartMs), the whole window is evaluated in the
background right after, and the next suggestion uses it without a smaller window."""

from __future__ import annotations

import asyncio
from typing import Any

from pytest_lsp import LanguageClient

from tests.e2e.conftest import initialize, inline_at, open_document, plain
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
            # The cold answer shown whatever the model's doubt: this test is about the window.
            "completion": {"precompute": False, "coldStartMs": 300, "coldStartConfidence": 0},
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


async def open_at_the_end(
    client: LanguageClient, name: str, announce: bool = False, **completion: object
) -> tuple[str, int]:
    """A server with these completion settings (no precompute, no extra context) and a cold
    160-line file open in it; its uri and the line at its end. ``announce``: the client
    announces lspInfer/suggestionReady."""
    options = {"completion": {"precompute": False, **completion}, "context": {"enabled": False}}
    await initialize(client, options=options, suggestion_ready=announce)
    text = first_lines("difflib.py", 160)
    uri = f"file:///tmp/lsp-infer-e2e/cold/{name}"
    open_document(client, uri, text)
    return uri, text.count("\n")


async def test_an_invoked_request_in_a_cold_file_gets_the_whole_window(client: LanguageClient):
    """The user pressed a key and waits: no cold start's smaller window, whatever
    completion.coldStartMs says; the choices come from the whole window too."""
    uri, line = await open_at_the_end(client, "invoked.py", coldStartMs=300, choices=2)
    result = await inline_at(client, uri, line, 0, invoked=True)
    assert result.items  # the whole window has something to say at the end of a class body
    after = await settled(client)
    assert after["reducedWindows"] == 0, after
    assert after["promptTokensEvaluated"] > 400, after  # the whole window, in the request
    assert after["generations"] == 1, after  # no background evaluation was needed after it


async def test_a_suggestion_the_model_doubts_is_an_empty_answer_that_counts(
    client: LanguageClient,
):
    """completion.minConfidence at its strictest: typing gets an empty answer, counted as
    hidden (with its confidence band); the same place invoked gets the suggestion."""
    uri, line = await open_at_the_end(client, "unsure.py", minConfidence=1.0, choices=1)
    typed = await inline_at(client, uri, line, 0)
    assert not typed.items
    numbers = await stats(client)
    assert numbers["hidden"] == 1 and numbers["suggested"] == 0, numbers
    assert numbers["suggestions"]["hidden"] == 1
    bands = numbers["suggestions"]["byConfidence"]
    assert sum(band["hidden"] for band in bands.values()) == 1
    assert bands["unknown"]["hidden"] == 0  # the model's probabilities were known
    invoked = await inline_at(client, uri, line, 0, invoked=True)
    assert invoked.items  # the user asked: shown, whatever the model's doubt


async def test_a_cold_starts_suggestion_is_held_to_the_stricter_threshold(
    client: LanguageClient,
):
    """completion.coldStartConfidence at its strictest: the cold start's suggestion is hidden,
    the whole window is evaluated right after, and at the same place its suggestion is shown
    (completion.minConfidence 0)."""
    uri, line = await open_at_the_end(client, "cold-unsure.py", coldStartMs=300,
                                      coldStartConfidence=1.0, minConfidence=0)  # fmt: skip
    cold = await inline_at(client, uri, line, 0)
    assert not cold.items
    after = await settled(client)
    assert after["reducedWindows"] == 1 and after["hidden"] == 1, after
    assert after["promptTokensEvaluated"] > 400, after  # the whole window, in the background
    whole = await inline_at(client, uri, line, 0)
    assert whole.items, "the whole window's suggestion is held to minConfidence only"


# The cold start's suggestion hidden (coldStartConfidence at its strictest), the whole
# window's shown (minConfidence 0).
HIDDEN_WHEN_COLD = {"coldStartMs": 300, "coldStartConfidence": 1.0, "minConfidence": 0}


def listen_for_ready(client: LanguageClient) -> list[Any]:
    """The lspInfer/suggestionReady notifications the server sends, as they come."""
    received: list[Any] = []

    @client.feature("lspInfer/suggestionReady")
    def ready(params: Any) -> None:
        received.append(params)

    return received


async def test_the_whole_windows_suggestion_is_offered_again_where_the_cold_one_was_hidden(
    client: LanguageClient,
):
    """Once the whole window's suggestion is known, an editor that announced
    lspInfer/suggestionReady is told where, and asking again there answers at once from the
    cache (no new generation)."""
    received = listen_for_ready(client)
    uri, line = await open_at_the_end(client, "offered.py", announce=True, **HIDDEN_WHEN_COLD)
    assert not (await inline_at(client, uri, line, 0)).items
    before = await settled(client)
    assert len(received) == 1, received
    assert plain(received[0]) == {
        "textDocument": {"uri": uri, "version": 1},
        "position": {"line": line, "character": 0},
    }
    assert before["offeredAgain"] == 1, before
    again = await inline_at(client, uri, line, 0)
    assert again.items, "asked again where the server said: the whole window's suggestion"
    after = await stats(client)
    assert after["generations"] == before["generations"], after  # from the cache
    assert after["cacheHits"] == before["cacheHits"] + 1, after


async def test_no_offer_once_the_user_typed_there(client: LanguageClient):
    """A keystroke after the cold answer: the whole window's suggestion is for a place the
    user left, so the editor is not told, though it announced lspInfer/suggestionReady."""
    received = listen_for_ready(client)
    uri, line = await open_at_the_end(client, "typed-on.py", announce=True, **HIDDEN_WHEN_COLD)
    assert not (await inline_at(client, uri, line, 0)).items
    client.text_document_did_change(change(uri, 2, line, "#"))
    quiet = await settled(client)
    assert quiet["reducedWindows"] == 1 and quiet["promptTokensEvaluated"] > 400, quiet
    assert quiet["offeredAgain"] == 0 and not received, (quiet, received)


async def test_an_editor_that_did_not_announce_it_is_not_told(client: LanguageClient):
    received = listen_for_ready(client)
    uri, line = await open_at_the_end(client, "not-announced.py", **HIDDEN_WHEN_COLD)
    assert not (await inline_at(client, uri, line, 0)).items
    done = await settled(client)
    assert done["reducedWindows"] == 1 and done["promptTokensEvaluated"] > 400, done
    assert done["offeredAgain"] == 0 and not received, (done, received)
