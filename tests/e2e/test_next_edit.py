"""Next-edit suggestions over stdio with the real server: a rename typed key by key is offered
at the name's other uses in its scope, and nothing is offered for a stale version, an
excluded file, with the setting off, or where the edits no longer apply; bad params get
InvalidParams."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pytest_lsp import LanguageClient

from .conftest import initialize, inline_at, open_document, raw_request

NEXT_EDIT = "lspInfer/nextEdit"
SOURCE = (
    "def area(wdth, height):\n"
    "    return wdth * height\n"
    "\n"
    "\n"
    "def double(wdth):\n"
    "    return wdth * 2\n"
)


class Document:
    """An open document edited as an editor does: one didChange per key, versions counted."""

    def __init__(
        self, client: LanguageClient, uri: str, text: str, language: str = "python"
    ) -> None:
        self.client, self.uri, self.text, self.version = client, uri, text, 1
        open_document(client, uri, text, language)

    def replace(self, line: int, start: int, end: int, new: str) -> None:
        self.version += 1
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(
                    uri=self.uri, version=self.version
                ),
                content_changes=[
                    types.TextDocumentContentChangePartial(
                        range=types.Range(
                            start=types.Position(line=line, character=start),
                            end=types.Position(line=line, character=end),
                        ),
                        text=new,
                    )
                ],
            )
        )
        lines = self.text.split("\n")
        lines[line] = lines[line][:start] + new + lines[line][end:]
        self.text = "\n".join(lines)

    def rename_by_keys(self, line: int, start: int, old: str, new: str) -> None:
        """Backspace over ``old`` (cursor after it), then type ``new``."""
        for count in range(len(old), 0, -1):
            self.replace(line, start + count - 1, start + count, "")
        for i, char in enumerate(new):
            self.replace(line, start + i, start + i, char)

    async def next_edit(self, line: int, character: int, version: int | None = None) -> Any:
        return await raw_request(self.client, NEXT_EDIT, {
            "textDocument": {"uri": self.uri, "version": version or self.version},
            "position": {"line": line, "character": character},
        })  # fmt: skip

    def apply(self, edits: list[dict[str, Any]]) -> str:
        lines = self.text.split("\n")
        for edit in sorted(
            edits,
            key=lambda e: (e["range"]["start"]["line"], e["range"]["start"]["character"]),
            reverse=True,
        ):
            start, end = edit["range"]["start"], edit["range"]["end"]
            assert start["line"] == end["line"]
            row = lines[start["line"]]
            lines[start["line"]] = (
                row[: start["character"]] + edit["text"] + row[end["character"] :]
            )
        return "\n".join(lines)


async def stats(client: LanguageClient) -> dict[str, Any]:
    return (await raw_request(client, "lspInfer/stats", {}))["nextEdit"]


async def test_a_renamed_parameter_is_offered_at_its_other_uses_only(client: LanguageClient):
    await initialize(client)
    doc = Document(client, "file:///tmp/lsp-infer-e2e/next/area.py", SOURCE)
    doc.rename_by_keys(0, 9, "wdth", "width")
    answer = await doc.next_edit(0, 14)
    assert answer["kind"] == "rename" and answer["version"] == doc.version
    assert answer["label"] == "rename wdth → width (1 more)"
    assert answer["edits"] == [{
        "range": {"start": {"line": 1, "character": 11}, "end": {"line": 1, "character": 15}},
        "text": "width",
    }]  # fmt: skip
    # Applied, the rename is complete in area() and double()'s own `wdth` is untouched.
    assert doc.apply(answer["edits"]) == SOURCE.replace("wdth", "width", 2)
    for method in ("lspInfer/didShowNextEdit", "lspInfer/didAcceptNextEdit"):
        client.protocol.notify(method, {"id": answer["id"]})
    client.protocol.notify("lspInfer/didRejectNextEdit", {"id": "ne-never-issued"})
    numbers = await stats(client)
    assert numbers["requests"] == 1 and numbers["predicted"] == 1
    assert numbers["shown"] == 1 and numbers["accepted"] == 1 and numbers["rejected"] == 0
    assert numbers["byKind"]["rename"]["accepted"] == 1


TS_SOURCE = (
    "/** @param wdth the width */\n"
    "export function area(wdth: number, height: number) {\n"
    "  const box = { wdth, height };\n"
    "  return wdth * height + box.height;\n"
    "}\n"
    "const double = (wdth: number) => wdth * 2;\n"
)


async def test_a_typescript_rename_keeps_shorthand_keys_and_the_jsdoc(client: LanguageClient):
    await initialize(client, options={"nextEdit": {"model": False}})
    doc = Document(client, "file:///tmp/lsp-infer-e2e/next/area.ts", TS_SOURCE, "typescript")
    doc.rename_by_keys(1, 21, "wdth", "width")
    answer = await doc.next_edit(1, 26)
    assert answer["kind"] == "rename" and answer["label"] == "rename wdth → width (3 more)"
    assert doc.apply(answer["edits"]) == (
        "/** @param width the width */\n"
        "export function area(width: number, height: number) {\n"
        "  const box = { wdth: width, height };\n"
        "  return width * height + box.height;\n"
        "}\n"
        "const double = (wdth: number) => wdth * 2;\n"
    )


async def test_nothing_is_offered_where_it_would_be_wrong(client: LanguageClient, tmp_path: Path):
    # The rules' refusals (the model's like changes are tested below, and off here: after the
    # uses are deleted it might, rightly or not, offer the like change on double()'s line).
    options = {"exclude": ["secret_*.py"], "nextEdit": {"model": False}}
    await initialize(client, options=options, workspace=tmp_path)
    doc = Document(client, (tmp_path / "area.py").as_uri(), SOURCE)
    doc.rename_by_keys(0, 9, "wdth", "width")
    renamed_at = doc.version
    # The user typed on since: that version's answer is empty (ask again).
    doc.replace(5, 15, 15, "0")
    stale = await doc.next_edit(0, 14, version=renamed_at)
    assert stale["edits"] == [] and stale["id"] is None and stale["version"] == renamed_at
    # The uses were deleted meanwhile: nothing left to rename, never an edit elsewhere.
    doc.replace(1, 4, 24, "pass")
    assert (await doc.next_edit(0, 14))["edits"] == []
    # An excluded file records no edits and gets no prediction.
    secret = Document(client, (tmp_path / "secret_keys.py").as_uri(), SOURCE)
    secret.rename_by_keys(0, 9, "wdth", "width")
    assert (await secret.next_edit(0, 14))["edits"] == []
    # A language whose scopes are not read here (Go): no rename offered.
    script = Document(client, (tmp_path / "area.go").as_uri(),
                      "func f(wdth int) int {\n\treturn wdth\n}\n", "go")  # fmt: skip
    script.rename_by_keys(0, 7, "wdth", "width")
    assert (await script.next_edit(0, 12))["edits"] == []


async def test_the_setting_turns_it_off(client: LanguageClient):
    await initialize(client, options={"nextEdit": {"enabled": False}})
    doc = Document(client, "file:///tmp/lsp-infer-e2e/next/off.py", SOURCE)
    doc.rename_by_keys(0, 9, "wdth", "width")
    assert (await doc.next_edit(0, 14))["edits"] == []


HASHES = (
    "import hashlib\n"
    "\n"
    "\n"
    "def md5(x):\n"
    "    return hashlib.md5(x).hexdigest()\n"
    "\n"
    "\n"
    "def sha256(x):\n"
    "    return hashlib.sha256(x).hexdigest()\n"
)
FIX = ", usedforsecurity=False"
AT = HASHES.split("\n")[4].index("(x)") + 2  # after md5's x


async def test_the_model_offers_a_like_change_on_a_line_like_the_edited_one(
    client: LanguageClient,
):
    await initialize(client)
    doc = Document(client, "file:///tmp/lsp-infer-e2e/next/hashes.py", HASHES)
    await inline_at(client, doc.uri, 4, 4)  # waits for the model to load
    doc.replace(4, AT, AT, FIX)  # pasted into md5's call
    answer = await doc.next_edit(4, AT + len(FIX))
    assert answer["kind"] == "analogy" and answer["label"] == "a like change at line 9"
    assert answer["edits"] == [{
        "range": {"start": {"line": 8, "character": 27}, "end": {"line": 8, "character": 27}},
        "text": FIX,
    }]  # fmt: skip
    assert doc.apply(answer["edits"]) == HASHES.replace("(x).", f"(x{FIX}).")
    numbers = await stats(client)
    assert numbers["model"]["asked"] == 1 and numbers["byKind"]["analogy"]["predicted"] == 1


async def test_typing_on_while_the_model_works_gets_an_empty_answer(client: LanguageClient):
    await initialize(client)
    doc = Document(client, "file:///tmp/lsp-infer-e2e/next/typed.py", HASHES)
    await inline_at(client, doc.uri, 4, 4)
    doc.replace(4, AT, AT, FIX)
    asked = asyncio.ensure_future(doc.next_edit(4, AT + len(FIX)))
    await asyncio.sleep(0.05)
    doc.replace(4, AT + len(FIX), AT + len(FIX), ")")  # the next key
    answer = await asked
    assert answer["edits"] == [] and answer["id"] is None
    # The model is free again: a suggestion comes, and the next request is answered.
    assert (await doc.next_edit(4, AT + 1 + len(FIX)))["version"] == doc.version
    assert await inline_at(client, doc.uri, 8, 4) is not None
    numbers = await stats(client)
    assert numbers["model"]["asked"] >= 1 and numbers["predicted"] == 0


async def test_the_model_setting_turns_the_like_changes_off(client: LanguageClient):
    await initialize(client, options={"nextEdit": {"model": False}})
    doc = Document(client, "file:///tmp/lsp-infer-e2e/next/nomodel.py", HASHES)
    await inline_at(client, doc.uri, 4, 4)
    doc.replace(4, AT, AT, FIX)
    assert (await doc.next_edit(4, AT + len(FIX)))["edits"] == []
    assert (await stats(client))["model"]["asked"] == 0


@pytest.mark.parametrize(
    "params",
    [
        {
            "textDocument": {"uri": "file:///tmp/lsp-infer-e2e/next/closed.py", "version": 1},
            "position": {"line": 0, "character": 0},
        },  # not open
        {
            "textDocument": {"uri": "file:///tmp/lsp-infer-e2e/next/bad.py", "version": 1},
            "position": {"line": 99, "character": 0},
        },  # past the end
        {
            "textDocument": {"uri": "file:///tmp/lsp-infer-e2e/next/bad.py"},
            "position": {"line": 0, "character": 0},
        },  # no version
        {"position": {"line": 0, "character": 0}},
        None,
    ],
)
async def test_bad_params_get_invalid_params(client: LanguageClient, params: Any):
    await initialize(client)
    open_document(client, "file:///tmp/lsp-infer-e2e/next/bad.py", SOURCE)
    with pytest.raises(JsonRpcInvalidParams):
        await raw_request(client, NEXT_EDIT, params)


# -- renames from the editor's references (lspInfer/references) ----------------------------

BOX = (
    "class Box:\n"
    "    def __init__(self, w):\n"
    "        self.wdth = w\n"
    "\n"
    "    def area(self, h):\n"
    "        return self.wdth * h\n"
)


def answer_references(client: LanguageClient, answer: Any = None) -> list[Any]:
    """The client answers lspInfer/references as a language server would for this file: the
    name's whole-word occurrences in the document (or ``answer``, when given). The list
    collects the params of every request; the editors' own clients ask their language
    servers (tests/nvim/test_references.py)."""
    asked: list[Any] = []

    @client.feature("lspInfer/references")
    def references(params: Any) -> Any:
        asked.append(params)
        if answer is not None:
            return answer
        lines = BOX.split("\n")
        line = lines[params.position.line]
        start = params.position.character
        while start > 0 and (line[start - 1].isalnum() or line[start - 1] == "_"):
            start -= 1
        name = re.match(r"\w+", line[start:])
        assert name is not None
        return {"references": [
            {"start": {"line": n, "character": m.start()}, "end": {"line": n, "character": m.end()}}
            for n, text in enumerate(lines) for m in re.finditer(rf"\b{name.group()}\b", text)
        ]}  # fmt: skip

    return asked


def warm(client: LanguageClient, uri: str, line: int, character: int) -> None:
    position = {"line": line, "character": character}
    client.protocol.notify("lspInfer/warm", {"textDocument": {"uri": uri}, "position": position})


async def references_counted(client: LanguageClient, what: str) -> dict[str, Any]:
    for _ in range(100):
        numbers = (await stats(client))["references"]
        if numbers[what]:
            return numbers
        await asyncio.sleep(0.1)
    raise AssertionError(f"no lspInfer/references {what}: {numbers}")


async def test_an_attribute_rename_from_the_editors_references(client: LanguageClient):
    asked = answer_references(client)
    await initialize(client, references=True)
    doc = Document(client, "file:///tmp/lsp-infer-e2e/next/box.py", BOX)
    warm(client, doc.uri, 2, 16)  # the cursor rests on `wdth` of `self.wdth = w`
    await references_counted(client, "answered")
    assert asked[0].textDocument.version == 1
    # Asked at the name's start.
    assert (asked[0].position.line, asked[0].position.character) == (2, 13)
    doc.rename_by_keys(2, 13, "wdth", "width")
    answer = await doc.next_edit(2, 18)
    assert answer["kind"] == "rename" and answer["label"] == "rename wdth → width (1 more)"
    assert doc.apply(answer["edits"]) == BOX.replace("wdth", "width")
    numbers = await stats(client)
    assert numbers["references"]["used"] == 1
    assert numbers["byKind"]["referenceRename"]["predicted"] == 1


@pytest.mark.parametrize("announce", [False, True])
async def test_without_references_an_attribute_rename_gets_nothing(
    client: LanguageClient, announce: bool
):
    # Not announced: never asked. Announced but the editor answers garbage: counted as
    # failed, and the scope rules (which refuse attributes) answer as before.
    asked = answer_references(client, answer={"references": "garbage"})
    await initialize(client, references=announce)
    doc = Document(client, "file:///tmp/lsp-infer-e2e/next/box.py", BOX)
    warm(client, doc.uri, 2, 16)
    if announce:
        await references_counted(client, "failed")
    else:
        await asyncio.sleep(0.5)
    assert len(asked) == announce
    doc.rename_by_keys(2, 13, "wdth", "width")
    answer = await doc.next_edit(2, 18)
    assert answer["edits"] == [] and answer["kind"] is None
