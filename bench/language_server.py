"""A real language server as the editor's, for the benchmarks: what the editors' clients do
to answer lspInfer/definitions (editors/vscode/src/definitions.ts,
editors/nvim/lua/lsp_infer/definitions.lua), over a real server process.

    editor = await LanguageServerEditor.start(["jedi-language-server"], workspace)
    editor.open(uri, text, "python")
    found = await editor.definitions(uri, text, offsets)   # as the server's Editor facade

Each position is asked with textDocument/definition; the first location's file is read from
disk, from its line on (60 lines, 8,000 characters), as the clients read it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from lsp_infer.editor import (
    DEFINITION_ABOVE_LINES,
    Definition,
    cut_text,
    definition_text_bounds,
)
from lsp_infer.positions import position_at

# pygls logs every notification a bench client has no handler for (diagnostics): noise.
logging.getLogger("pygls").setLevel(logging.ERROR)

# One definition request waits at most this long (a language server indexing on its first
# request can take seconds; the server's own wait is bounded separately).
REQUEST_TIMEOUT_S = 30.0


class LanguageServerEditor:
    """An editor whose language server answers go-to-definition."""

    def __init__(self, client: LanguageClient) -> None:
        self.client = client
        self.versions: dict[str, int] = {}
        self.request_ms: list[float] = []

    @classmethod
    async def start(cls, command: Sequence[str], workspace: Path) -> LanguageServerEditor:
        client = LanguageClient("lsp-infer-bench", "1")
        await client.start_io(*command)
        root = workspace.resolve().as_uri()
        await client.initialize_async(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(
                    text_document=types.TextDocumentClientCapabilities(
                        definition=types.DefinitionClientCapabilities(link_support=True)
                    )
                ),
                root_uri=root,
                workspace_folders=[types.WorkspaceFolder(uri=root, name="bench")],
            )
        )
        client.initialized(types.InitializedParams())
        return cls(client)

    def open(self, uri: str, text: str, language: str) -> None:
        """The document as the editor holds it (open, or its text replaced)."""
        version = self.versions.get(uri, 0) + 1
        self.versions[uri] = version
        if version == 1:
            self.client.text_document_did_open(
                types.DidOpenTextDocumentParams(
                    types.TextDocumentItem(uri, language, version, text)
                )
            )
        else:
            self.client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    text_document=types.VersionedTextDocumentIdentifier(version=version, uri=uri),
                    content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
                )
            )

    def close(self, uri: str) -> None:
        if self.versions.pop(uri, None) is not None:
            self.client.text_document_did_close(
                types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri))
            )

    async def stop(self) -> None:
        try:
            await asyncio.wait_for(self.client.shutdown_async(None), 10)
            self.client.exit(None)
        finally:
            await self.client.stop()

    # -- the server's Editor facade (lsp_infer.editor.Editor), the part definitions use ------

    def definitions_supported(self) -> bool:
        return True

    async def definitions(
        self, uri: str, text: str, offsets: Sequence[int]
    ) -> list[Definition | None]:
        started = time.perf_counter()
        found = await asyncio.gather(*(self._one(uri, text, offset) for offset in offsets))
        self.request_ms.append((time.perf_counter() - started) * 1000)
        return list(found)

    async def _one(self, uri: str, text: str, offset: int) -> Definition | None:
        return await self._at(uri, *position_at(text, offset, "utf-16"))

    async def answer(self, uri: str, positions: list[dict[str, int]]) -> dict[str, Any]:
        """The answer to a lspInfer/definitions request, as the editors' clients give it."""
        found = await asyncio.gather(*(self._at(uri, p["line"], p["character"]) for p in positions))
        return {"definitions": [None if d is None else {
            "uri": d.uri, "text": d.text, "above": d.above,
            "range": {"start": {"line": d.line, "character": 0},
                      "end": {"line": d.line, "character": 0}},
        } for d in found]}  # fmt: skip

    async def _at(self, uri: str, line: int, character: int) -> Definition | None:
        params = types.DefinitionParams(
            types.TextDocumentIdentifier(uri), types.Position(line, character)
        )
        try:
            result = await asyncio.wait_for(
                self.client.text_document_definition_async(params), REQUEST_TIMEOUT_S
            )
        except Exception:  # the language server's trouble: no definition, as the clients do
            return None
        first = (result if isinstance(result, list) else [result])[0] if result else None
        if isinstance(first, types.LocationLink):
            target, start = first.target_uri, first.target_selection_range.start.line
        elif isinstance(first, types.Location):
            target, start = first.uri, first.range.start.line
        else:
            return None
        return Definition(target, start, *read_from(target, start))


def read_from(uri: str, line: int) -> tuple[str, str]:
    """The file's text from ``line`` on, and the lines above it, as the editors' clients
    send them."""
    try:
        lines = Path(unquote(urlparse(uri).path)).read_text(errors="replace").split("\n")
    except OSError:
        return "", ""
    text = cut_text("\n".join(lines[line:]), *definition_text_bounds(line))
    return text, "\n".join(lines[max(0, line - DEFINITION_ABOVE_LINES) : line])
