"""The suggestion lifecycle over stdio with the real model: an item's id and accept command,
the editor's shown / partly accepted / dismissed notifications, and lspInfer/stats."""

from __future__ import annotations

from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pytest_lsp import LanguageClient

from .conftest import end_of, initialize, inline_at, open_document, raw_request
from .test_keystrokes import stats, type_text

ADD = "def add(a, b):\n    return "
SUB = "def sub(a, b):\n    return "
ACCEPT = "lspInfer.acceptSuggestion"


def item_id(item: types.InlineCompletionItem) -> str:
    command = item.command
    assert command is not None and command.command == ACCEPT, item
    assert command.arguments is not None and len(command.arguments) == 1
    argument: Any = command.arguments[0]
    value = argument["id"] if isinstance(argument, dict) else argument.id
    assert isinstance(value, str) and value
    return value


def notify(client: LanguageClient, method: str, **params: Any) -> None:
    client.protocol.notify(f"lspInfer/{method}", params)


async def accept(client: LanguageClient, identifier: str) -> Any:
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=ACCEPT, arguments=[{"id": identifier}])
    )


async def test_the_accept_command_is_advertised_and_on_every_item(client: LanguageClient):
    result = await initialize(client, options={"completion": {"precompute": False}})
    provider = result.capabilities.execute_command_provider
    assert provider is not None and ACCEPT in provider.commands
    uri = "file:///tmp/lsp-infer-e2e/lifecycle-items.py"
    open_document(client, uri, ADD)
    first = await inline_at(client, uri, *end_of(ADD))
    again = await inline_at(client, uri, *end_of(ADD))  # the same answer: the same item
    assert first.items and item_id(first.items[0]) == item_id(again.items[0])
    numbers = (await stats(client))["suggestions"]
    assert numbers["issued"] == 1 and numbers["shown"] == 0  # answered is not shown


async def test_show_accept_partly_accept_dismiss_and_the_stats(client: LanguageClient):
    await initialize(client, options={"completion": {"precompute": False}})
    add, sub = (
        "file:///tmp/lsp-infer-e2e/lifecycle-add.py",
        "file:///tmp/lsp-infer-e2e/lifecycle-sub.py",
    )
    open_document(client, add, ADD)
    open_document(client, sub, SUB)

    # Shown, then accepted whole with Tab (the item's command).
    shown = await inline_at(client, add, *end_of(ADD))
    first = item_id(shown.items[0])
    notify(client, "didShowSuggestion", id=first)
    assert await accept(client, first) is None
    suggestion = str(shown.items[0].insert_text)

    # Shown, one word accepted (2 characters), its rest shown after the edit, then dismissed.
    shown = await inline_at(client, sub, *end_of(SUB))
    second = item_id(shown.items[0])
    notify(client, "didShowSuggestion", id=second)
    notify(client, "didPartiallyAcceptSuggestion", id=second, acceptedLength=2)
    text = str(shown.items[0].insert_text)
    type_text(client, sub, 2, 1, 11, text[:2])
    rest = await inline_at(client, sub, 1, 13)
    assert rest.items and rest.items[0].insert_text == text[2:], rest  # type-ahead: the rest
    third = item_id(rest.items[0])
    assert third != second
    notify(client, "didShowSuggestion", id=third)
    notify(client, "didDismissSuggestion", id=second)  # superseded by its rest: ignored
    notify(client, "didDismissSuggestion", id=third)
    # Reports for ids the server never gave, or without one, change nothing and get no answer.
    notify(client, "didShowSuggestion", id="no-such-id")
    notify(client, "didDismissSuggestion")
    notify(client, "didPartiallyAcceptSuggestion", id=first, acceptedLength="two")

    numbers = await stats(client)
    assert numbers["requests"] == 3  # the existing keys are still there
    counts = numbers["suggestions"]
    assert counts["issued"] == 2 and counts["shown"] == 2
    assert counts["accepted"] == 1 and counts["partlyAccepted"] == 1 and counts["dismissed"] == 0
    assert counts["pending"] == 0 and counts["acceptanceRate"] == 0.5
    assert counts["charactersAccepted"] == len(suggestion) + 2
    assert counts["shownToAcceptedMs"]["count"] == 1
    assert counts["shownToAcceptedMs"]["p50"] >= 0
    assert counts["byExtraContext"]["without"]["shown"] == 2
    assert counts["bySource"]["model"]["accepted"] == 1
    assert sum(group["shown"] for group in counts["byLength"].values()) == 2
    assert sum(point["shown"] for point in counts["byMinute"]["points"]) == 2
    assert sum(point["count"] for point in numbers["latencyByMinute"]["points"]) == 3


async def test_a_dismissed_suggestion(client: LanguageClient):
    await initialize(client, options={"completion": {"precompute": False}})
    uri = "file:///tmp/lsp-infer-e2e/lifecycle-dismiss.py"
    open_document(client, uri, ADD)
    shown = await inline_at(client, uri, *end_of(ADD))
    identifier = item_id(shown.items[0])
    notify(client, "didShowSuggestion", id=identifier)
    notify(client, "didDismissSuggestion", id=identifier)
    counts = (await stats(client))["suggestions"]
    assert (counts["shown"], counts["dismissed"], counts["accepted"]) == (1, 1, 0)
    assert counts["acceptanceRate"] == 0.0


async def test_the_accept_command_needs_an_id(client: LanguageClient):
    await initialize(client)
    with pytest.raises(JsonRpcInvalidParams):
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=ACCEPT, arguments=[{"nope": 1}])
        )
    # An id the server does not know (from before a restart) is answered, and not counted.
    assert await accept(client, "s999") is None
    result = await raw_request(
        client, "workspace/executeCommand", {"command": ACCEPT, "arguments": [{"id": "s998"}]}
    )
    assert result is None
    assert (await stats(client))["suggestions"]["accepted"] == 0
