"""Warming with the real model (lspInfer/warm): the editor says where the cursor rests, the
server evaluates the whole window's prompt there in the background, and the first suggestion
there needs no cold start. Anything it cannot use is ignored, and the server goes on."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.e2e.conftest import initialize, inline_at, open_document
from tests.e2e.test_cold_start import settled
from tests.e2e.test_switching import change, first_lines, stats


def warm(client: LanguageClient, uri: Any, line: Any, character: Any) -> None:
    params = {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}
    client.protocol.notify("lspInfer/warm", params)


async def stats_until(client: LanguageClient, done: Callable[[dict[str, Any]], bool]) -> None:
    for _ in range(600):  # generous: two minutes on a busy machine
        if done(now := await stats(client)):
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"never: {now}")


async def reconfigure(client: LanguageClient, configuration: dict[str, Any]) -> None:
    """New settings, pulled by the server after didChangeConfiguration."""
    client.set_configuration(configuration, section="lspInfer")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await asyncio.sleep(1.0)  # the server asks for the settings


async def test_the_first_suggestion_at_a_warmed_place_uses_the_whole_window(
    client: LanguageClient,
):
    # 300 ms at the measured prompt speed is far less than the 512-token window: without the
    # warm, the first suggestion here would come from a smaller one (test_cold_start.py).
    await initialize(client, options={"completion": {"precompute": False, "coldStartMs": 300}})
    text = first_lines("difflib.py", 160)
    uri = "file:///tmp/lsp-infer-e2e/warm/difflib.py"
    open_document(client, uri, text)
    last = text.count("\n")
    warm(client, uri, last, 0)  # while the model loads, it waits for the model
    await stats_until(client, lambda now: now["warms"] == 1)
    warmed = await settled(client)
    assert warmed["promptTokensEvaluated"] > 400 and warmed["generations"] == 1, warmed

    # The user starts typing there: a new line, and its suggestion.
    client.text_document_did_change(change(uri, 2, last, "# the end\n"))
    await inline_at(client, uri, last + 1, 0)
    after = await settled(client)
    assert after["reducedWindows"] == 0, after  # no cold start
    reused = after["promptTokensReused"] - warmed["promptTokensReused"]
    evaluated = after["promptTokensEvaluated"] - warmed["promptTokensEvaluated"]
    assert reused > 300 and evaluated < 100, (reused, evaluated)


async def test_warms_that_cannot_be_used_are_ignored(client: LanguageClient):
    configuration: dict[str, Any] = {"exclude": ["secrets.py"], "context": {"enabled": False}}
    await initialize(client, configuration=configuration)
    text = first_lines("textwrap.py", 40)
    uri = "file:///tmp/lsp-infer-e2e/warm/textwrap.py"
    secret = "file:///tmp/lsp-infer-e2e/warm/secrets.py"
    open_document(client, uri, text)
    open_document(client, secret, text)
    await inline_at(client, uri, 3, 0)  # the model is loaded once this is answered
    before = await settled(client)
    warm(client, secret, 3, 0)  # an excluded file never enters a prompt
    warm(client, "file:///tmp/lsp-infer-e2e/warm/not-open.py", 0, 0)
    warm(client, uri, 4000, 0)  # past the end
    warm(client, uri, -1, 0)
    warm(client, 42, 0, 0)
    client.protocol.notify("lspInfer/warm", None)
    client.protocol.notify("lspInfer/warm", {"textDocument": {"uri": uri}})
    # Turned off by the user.
    await reconfigure(client, {**configuration, "completion": {"warm": False}})
    warm(client, uri, 20, 0)
    await asyncio.sleep(1.0)
    after = await stats(client)
    assert after["warms"] == 0 and after["generations"] == before["generations"], after

    # The same place, with warming on again, is warmed: the checks above could fail.
    await reconfigure(client, configuration)
    warm(client, uri, 20, 0)
    await stats_until(client, lambda now: now["warms"] == 1)
    assert (await inline_at(client, uri, 3, 0)) is not None  # still serving
