"""The editor facade: what the tiers may ask of the editor, in plain types.

The protocol edge implements it over LSP (lsp/lsp_editor.py); the tiers are handed it instead of
the server, so they can show a message, report progress, ask the user and apply an edit
without knowing pygls, lsprotocol or each other.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

Level = Literal["error", "warning", "info"]
ModelState = Literal["loading", "ready", "failed"]


@dataclass(frozen=True)
class Replacement:
    """Replace ``text[start:end]`` of the text an edit was computed on with ``new_text``."""

    start: int
    end: int
    new_text: str


# What an editor sends of one definition (docs/protocol.md, ``lspInfer/definitions``): the
# text from its line on, and the lines above it; more is cut off where the answer is read.
DEFINITION_TEXT_LINES = 60
DEFINITION_TEXT_CHARS = 8000
DEFINITION_ABOVE_LINES = 10
# A definition on a file's first line is most often the file itself (a module imported whole:
# ``errors`` in ``errors.HeaderParseError``): its text is sent whole, up to these, so that the
# module's outline reaches the names defined far down (half the cross suite's module.name holes:
# bench/HISTORY.md, "Definitions from the editor's language server").
MODULE_TEXT_LINES = 5000
MODULE_TEXT_CHARS = 200_000


def definition_text_bounds(line: int) -> tuple[int, int]:
    """The lines and characters an editor sends of a definition starting on ``line``."""
    if line == 0:
        return MODULE_TEXT_LINES, MODULE_TEXT_CHARS
    return DEFINITION_TEXT_LINES, DEFINITION_TEXT_CHARS


def cut_text(text: str, max_lines: int, max_chars: int) -> str:
    """At most ``max_lines`` lines of ``text``, and at most ``max_chars`` characters."""
    return "\n".join(text[:max_chars].split("\n")[:max_lines])


@dataclass(frozen=True)
class Definition:
    """Where the editor's language server says a name is defined, and the target's text
    from that line on (docs/protocol.md, ``lspInfer/definitions``)."""

    uri: str
    line: int
    text: str
    above: str = ""  # the lines just above ``line`` (a doc comment, decorators), if sent


class EditorRequestFailed(Exception):
    """A request to the editor got an error, or an answer that makes no sense."""


class EditNotApplied(Exception):
    """The editor did not apply an edit; the message says why."""


class Progress(Protocol):
    """A work-done progress shown by the editor."""

    # Set when the user cancels (cancellable progress only); never set otherwise.
    cancelled: asyncio.Event

    def report(self, percentage: int, message: str | None = None) -> None: ...

    def end(self, message: str) -> None: ...


@dataclass
class NoProgress:
    """For editors that show no progress: reports go nowhere and nobody can cancel."""

    cancelled: asyncio.Event = field(default_factory=asyncio.Event)

    def report(self, percentage: int, message: str | None = None) -> None:
        pass

    def end(self, message: str) -> None:
        pass


class Editor(Protocol):
    def show(self, message: str, level: Level) -> None:
        """A message for the user (also logged)."""

    def model_status(self, state: ModelState, message: str) -> None:
        """What the model is doing (the ``lspInfer/status`` notification)."""

    async def ask(self, message: str, choices: Sequence[str]) -> str | None:
        """The choice the user picked, or None (dismissed, or the editor cannot ask)."""

    async def progress(self, title: str, message: str, *, cancellable: bool = False) -> Progress:
        """A progress the editor shows until ``end`` (a NoProgress if it shows none)."""

    def definitions_supported(self) -> bool:
        """Whether the editor announced ``lspInfer/definitions``."""

    def references_supported(self) -> bool:
        """Whether the editor announced ``lspInfer/references``."""

    async def references(
        self, uri: str, version: int, text: str, offset: int
    ) -> list[tuple[int, int]] | None:
        """Where the name at ``offset`` of ``text`` (the document ``uri`` at ``version``) is
        used in that document, as ``text[start:end]`` spans, its declaration included (None:
        the editor could not tell). EditorRequestFailed on an error or an answer that cannot
        be read."""

    def suggestion_ready(self, uri: str, version: int, text: str, offset: int) -> bool:
        """Tell the editor that a better suggestion is ready at ``offset`` of ``text`` (the
        document at ``version``), so that it asks again if the cursor still rests there
        (``lspInfer/suggestionReady``). Whether it was told: only an editor that announced
        it is."""

    async def definitions(
        self, uri: str, text: str, offsets: Sequence[int]
    ) -> list[Definition | None]:
        """Where the names at these ``offsets`` of ``text`` (the document ``uri``) are
        defined, one entry per offset (None: the editor found nothing).
        EditorRequestFailed on an error or an answer that cannot be read."""

    async def apply_edit(
        self,
        uri: str,
        version: int | None,
        text: str,
        edits: Sequence[Replacement],
        label: str,
    ) -> None:
        """Apply ``edits`` (offsets into ``text``) to the document at ``version`` (None: a
        file that is not open). EditNotApplied if the editor did not."""
