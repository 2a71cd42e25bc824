"""What the user just did to a document: its recent edits, coalesced as a user's words are.

Every content change arrives as a splice of the text before it (documents.Splice). A splice
that touches the latest edit's region (typing on, deleting back, selecting a word and typing
over it) grows that edit; one elsewhere starts a new edit. So renaming ``wdth`` to ``width``
letter by letter is one edit, ``"wdth" → "width"``, whatever keys did it. Older edits keep
their places as text before them is spliced; one that a later splice overlaps is dropped (it
no longer says what the text there was). Pure: no LSP types, no clock.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from lsp_infer.documents import Splice

HISTORY_LENGTH = 16  # edits kept per document
MAX_EDIT_CHARS = 4000  # a region grown past this (a paste, a long burst) is not grown further


@dataclass(frozen=True)
class Edit:
    """One coalesced edit, in the document as it is now: ``text[start:end]`` is ``new``;
    before the edit it was ``old``."""

    start: int
    old: str
    new: str

    @property
    def end(self) -> int:
        return self.start + len(self.new)

    def undone(self, text: str) -> str:
        """``text`` (the document now) as it was before this edit."""
        return text[: self.start] + self.old + text[self.end :]

    def grown(self, text: str, splice: Splice) -> Edit | None:
        """This edit with ``splice`` (of ``text``, the document now) folded in, or None when
        the splice does not touch it. The parts of the merged region outside this edit are
        unchanged since before it, so they belong to ``old`` as they are."""
        if splice.start > self.end or splice.end < self.start:
            return None
        start, end = min(self.start, splice.start), max(self.end, splice.end)
        old = text[start : self.start] + self.old + text[self.end : end]
        new = text[start : splice.start] + splice.new + text[splice.end : end]
        return Edit(start, old, new)

    def shifted(self, splice: Splice) -> Edit | None:
        """This (older) edit after ``splice`` elsewhere; None when the splice overlaps it."""
        if splice.end <= self.start:
            return Edit(self.start + len(splice.new) - (splice.end - splice.start),
                        self.old, self.new)  # fmt: skip
        if splice.start >= self.end:
            return self
        return None


class EditHistory:
    """One document's recent edits, oldest first."""

    def __init__(self, limit: int = HISTORY_LENGTH) -> None:
        self._edits: deque[Edit] = deque(maxlen=limit)

    @property
    def edits(self) -> list[Edit]:
        return list(self._edits)

    @property
    def latest(self) -> Edit | None:
        return self._edits[-1] if self._edits else None

    def record(self, text: str, splice: Splice) -> None:
        """``splice`` was applied to ``text`` (the document just before it)."""
        if splice.start == splice.end and not splice.new:
            return  # an empty change: nothing happened
        kept: list[Edit] = []
        latest = self._edits.pop() if self._edits else None
        for edit in self._edits:
            if (moved := edit.shifted(splice)) is not None:
                kept.append(moved)
        grown = latest.grown(text, splice) if latest is not None else None
        if grown is not None and len(grown.old) + len(grown.new) <= MAX_EDIT_CHARS:
            kept.append(grown)
        else:
            if latest is not None and (moved := latest.shifted(splice)) is not None:
                kept.append(moved)
            kept.append(Edit(splice.start, text[splice.start : splice.end], splice.new))
        self._edits.clear()
        self._edits.extend(kept)
        if self._edits and self._edits[-1].old == self._edits[-1].new:
            self._edits.pop()  # typed and deleted again: no edit at all


class EditHistories:
    """The recent edits of every open document that may be recorded (never an excluded
    file's: the caller does not record those)."""

    def __init__(self) -> None:
        self._by_uri: dict[str, EditHistory] = {}

    def record(self, uri: str, text: str, splices: list[Splice]) -> None:
        """The splices of one didChange, in order; ``text``: the document before them."""
        history = self._by_uri.setdefault(uri, EditHistory())
        for splice in splices:
            history.record(text, splice)
            text = text[: splice.start] + splice.new + text[splice.end :]

    def get(self, uri: str) -> EditHistory | None:
        return self._by_uri.get(uri)

    def forget(self, uri: str) -> None:
        self._by_uri.pop(uri, None)
