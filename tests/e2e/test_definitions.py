"""lspInfer/definitions over stdio with the real model: the server asks the editor where the
names near the cursor are defined, in the pause after typing, and a definition from a file
that is not open reaches the prompt. The editor here is the test's client, which answers from
the file on disk (the editors' own clients ask their language servers: tests/nvim, the VS
Code e2e, bench/quality.py's +defs). Whatever the editor does wrong, every completion request
still gets its answer, and the server never waits past context.definitionsMs."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from pygls.exceptions import JsonRpcInternalError
from pytest_lsp import LanguageClient
from pytest_lsp.client import captured_exception_key

from tests.e2e.conftest import initialize, inline_at, open_document
from tests.e2e.test_switching import change, stats

# A helper whose parameter name no model could guess: only its definition tells it.
NETWORK = (
    '"""Talking to the service."""\n\n\n'
    "def fetch_with_retries(url, quux_wobble_limit=37, backoff=1.5):\n"
    '    """GET url, retrying up to quux_wobble_limit times."""\n'
    "    raise NotImplementedError\n"
)
MAIN = (
    "from network import fetch_with_retries\n\n\n"
    "def load(url):\n"
    "    return fetch_with_retries(url, "
)


def answer_from_disk(params: Any) -> dict[str, Any]:
    """What an editor's language server would say, found in the files on disk by name."""
    path = Path(unquote(urlparse(params.textDocument.uri).path))
    lines = path.read_text().split("\n")
    found: list[dict[str, Any] | None] = []
    for position in params.positions:
        line = lines[position.line]
        name = re.match(r"\w*", line[position.character :])
        found.append(find_definition(path.parent, name.group() if name else ""))
    return {"definitions": found}


def answer_definitions_from_disk(client: LanguageClient) -> list[Any]:
    """The client answers lspInfer/definitions from the files on disk; the list collects
    the params of every request it got."""
    asked: list[Any] = []

    @client.feature("lspInfer/definitions")
    def definitions(params: Any) -> dict[str, Any]:
        asked.append(params)
        return answer_from_disk(params)

    return asked


def find_definition(folder: Path, name: str) -> dict[str, Any] | None:
    for file in sorted(folder.glob("*.py")):
        lines = file.read_text().split("\n")
        for number, line in enumerate(lines):
            if name and re.match(rf"\s*(def|class)\s+{name}\b", line):
                start = {"line": number, "character": line.index(name)}
                return {"uri": file.as_uri(), "range": {"start": start, "end": start},
                        "text": "\n".join(lines[number : number + 60])}  # fmt: skip
    return None


async def definitions_stats(client: LanguageClient) -> dict[str, Any]:
    return (await stats(client))["definitions"]


async def until(client: LanguageClient, done: Any, what: str) -> dict[str, Any]:
    for _ in range(600):  # two minutes on a busy machine
        now = await stats(client)
        if done(now):
            return now
        await asyncio.sleep(0.2)
    raise AssertionError(f"never {what}: {now}")


async def test_a_definition_in_a_file_that_is_not_open(client: LanguageClient, tmp_path: Path):
    asked = answer_definitions_from_disk(client)
    (tmp_path / "network.py").write_text(NETWORK)
    (tmp_path / "main.py").write_text(MAIN)
    options = {"context": {"enabled": True, "idleMs": 200, "definitionsMs": 2000}}
    await initialize(client, options=options, workspace=tmp_path, definitions=True)
    uri = (tmp_path / "main.py").as_uri()
    open_document(client, uri, MAIN)  # network.py is never opened
    lines = MAIN.split("\n")
    line, character = len(lines) - 1, len(lines[-1])
    await inline_at(client, uri, line, character)  # typing: nothing asked on this path
    # The pause: the editor is asked, then the pick (with the definition) is evaluated.
    now = await until(client, lambda s: s["contextRefreshes"] >= 1, "a new pick")
    assert asked, "the server never asked for definitions"
    positions = asked[0].positions
    names = [re.match(r"\w*", lines[p.line][p.character :]).group() for p in positions]  # type: ignore[union-attr]
    assert names[0] == "fetch_with_retries" and "url" not in names, names
    assert now["definitions"]["supported"] and now["definitions"]["answered"] >= 1
    assert now["definitions"]["used"] >= 1 and now["definitions"]["p50Ms"] is not None
    again = await inline_at(client, uri, line, character, invoked=True)
    assert again.items and "quux_wobble_limit" in str(again.items[0].insert_text), again


async def test_a_client_that_does_not_announce_it_is_never_asked(
    client: LanguageClient, tmp_path: Path
):
    asked = answer_definitions_from_disk(client)
    (tmp_path / "network.py").write_text(NETWORK)
    options = {"context": {"enabled": True, "idleMs": 200}}
    await initialize(client, options=options, workspace=tmp_path, definitions=False)
    uri = (tmp_path / "main.py").as_uri()
    open_document(client, uri, MAIN)
    lines = MAIN.split("\n")
    await inline_at(client, uri, len(lines) - 1, len(lines[-1]))
    await asyncio.sleep(1.5)  # several pauses' worth
    now = await definitions_stats(client)
    assert asked == [] and now["supported"] is False and now["requests"] == 0, now


async def test_an_editor_that_answers_wrong_late_or_never(client: LanguageClient, tmp_path: Path):
    # Each round types a call of a new name, pauses, and the editor misbehaves another way.
    behaviours = ["error", "garbage", "outside", "huge", "late", "never", "ok"]
    behaviour: list[str] = []
    release = asyncio.Event()  # "never" answers only at the end, long after the server gave up

    @client.feature("lspInfer/definitions")
    async def definitions(params: Any) -> Any:
        what = behaviour[-1]
        if what == "error":
            raise JsonRpcInternalError("the language server crashed")
        if what == "garbage":
            return {"definitions": "nope"}
        if what in ("outside", "huge"):
            text = "def x():\n" + "    y = 1\n" * (200_000 if what == "huge" else 3)
            start = {"line": 0, "character": 4}
            uri = "file:///usr/lib/elsewhere.py" if what == "outside" else params.textDocument.uri
            entry = {"uri": uri, "range": {"start": start, "end": start}, "text": text}
            return {"definitions": [entry] * len(params.positions)}
        if what == "late":
            await asyncio.sleep(3)
        if what == "never":
            await release.wait()
        return answer_from_disk(params)

    (tmp_path / "network.py").write_text(NETWORK)
    options = {"context": {"enabled": True, "idleMs": 200, "definitionsMs": 100}}
    await initialize(client, options=options, workspace=tmp_path, definitions=True)
    uri = (tmp_path / "main.py").as_uri()
    text = "def load(url):\n    pass\n"
    open_document(client, uri, text)
    for round_number, what in enumerate(behaviours, start=2):
        behaviour.append(what)
        before = await definitions_stats(client)
        line = text.count("\n")
        typed = f"    helper_number_{round_number}(url)\n"
        client.text_document_did_change(change(uri, round_number, line, typed))
        text += typed
        (tmp_path / "main.py").write_text(text)  # what the editor's language server reads
        await inline_at(client, uri, line + 1, 0)  # answered (a list), whatever the editor does
        await until(client, lambda s, b=before: s["definitions"]["requests"] > b["requests"],
                    f"a request in round {what}")  # fmt: skip
        await asyncio.sleep(0.5)  # past the budget: a keystroke now would stop the wait itself
        if what == "error" and client._pytest_item is not None:
            # pytest-lsp fails a test whose client handler raised; here that is the point.
            client._pytest_item.stash[captured_exception_key] = None
    now = await definitions_stats(client)
    assert now["failed"] >= 2 and now["timedOut"] >= 2, now  # error, garbage; late, never
    assert now["requests"] == len(behaviours), now
    await inline_at(client, uri, text.count("\n"), 0, invoked=True)
    release.set()  # the answer the server stopped waiting for arrives: ignored
    await asyncio.sleep(0.5)
    await inline_at(client, uri, text.count("\n"), 0, invoked=True)
