"""Open documents as immutable snapshots, and incremental edits applied to them.

Document state changes only on the event loop (from didOpen/didChange/didClose);
all other work reads a :class:`Snapshot`, which never changes under it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lsp_infer.positions import Encoding, line_starts, offset_at


@dataclass(frozen=True)
class Snapshot:
    """One version of one document."""

    uri: str
    version: int
    text: str
    language_id: str = ""
    # Computed lazily and cached: most snapshots are never asked for positions.
    _starts: list[int] | None = field(default=None, compare=False, repr=False)

    @property
    def starts(self) -> list[int]:
        if self._starts is None:
            object.__setattr__(self, "_starts", line_starts(self.text))
        assert self._starts is not None
        return self._starts

    def offset_at(self, line: int, character: int, encoding: Encoding) -> int:
        return offset_at(self.text, line, character, encoding, starts=self.starts)


@dataclass(frozen=True)
class TextChange:
    """An LSP content change: ``range`` None replaces the whole text.

    ``range`` is ((start_line, start_character), (end_line, end_character)) in the
    negotiated position encoding.
    """

    text: str
    range: tuple[tuple[int, int], tuple[int, int]] | None = None


@dataclass(frozen=True)
class Splice:
    """One change in offsets: ``text[start:end]`` of the text before it became ``new``."""

    start: int
    end: int
    new: str


def splice_of(text: str, change: TextChange, encoding: Encoding) -> Splice:
    """Where one content change falls in ``text`` (pure). A whole-text replacement is
    reduced to the span between the common prefix and suffix: what really changed."""
    if change.range is None:
        new = change.text
        limit = min(len(text), len(new))
        prefix = 0
        while prefix < limit and text[prefix] == new[prefix]:
            prefix += 1
        suffix = 0
        while suffix < limit - prefix and text[-1 - suffix] == new[-1 - suffix]:
            suffix += 1
        return Splice(prefix, len(text) - suffix, new[prefix : len(new) - suffix])
    (start_line, start_char), (end_line, end_char) = change.range
    starts = line_starts(text)
    start = offset_at(text, start_line, start_char, encoding, starts=starts, clamp_line=True)
    end = offset_at(text, end_line, end_char, encoding, starts=starts, clamp_line=True)
    if end < start:  # a reversed range: treat it as the same span
        start, end = end, start
    return Splice(start, end, change.text)


def apply_change(text: str, change: TextChange, encoding: Encoding) -> str:
    """The text after one content change (pure)."""
    if change.range is None:
        return change.text
    splice = splice_of(text, change, encoding)
    return text[: splice.start] + splice.new + text[splice.end :]


class DocumentNotOpen(KeyError):
    def __init__(self, uri: str) -> None:
        super().__init__(uri)
        self.uri = uri

    def __str__(self) -> str:
        return f"document is not open: {self.uri} (send textDocument/didOpen first)"


class DocumentStore:
    """The open documents, keyed by URI. Never reads anything from disk."""

    def __init__(self) -> None:
        self._docs: dict[str, Snapshot] = {}

    def open(self, uri: str, version: int, text: str, language_id: str = "") -> Snapshot:
        snapshot = Snapshot(uri=uri, version=version, text=text, language_id=language_id)
        self._docs[uri] = snapshot
        return snapshot

    def change(
        self, uri: str, version: int, changes: list[TextChange], encoding: Encoding
    ) -> Snapshot:
        return self.change_with_splices(uri, version, changes, encoding)[0]

    def change_with_splices(
        self, uri: str, version: int, changes: list[TextChange], encoding: Encoding
    ) -> tuple[Snapshot, list[Splice]]:
        """The new snapshot, and each change as a splice of the text just before it."""
        current = self.get(uri)
        text, splices = current.text, []
        for change in changes:
            splice = splice_of(text, change, encoding)
            text = text[: splice.start] + splice.new + text[splice.end :]
            splices.append(splice)
        snapshot = Snapshot(uri=uri, version=version, text=text, language_id=current.language_id)
        self._docs[uri] = snapshot
        return snapshot, splices

    def close(self, uri: str) -> None:
        self._docs.pop(uri, None)

    def get(self, uri: str) -> Snapshot:
        try:
            return self._docs[uri]
        except KeyError:
            raise DocumentNotOpen(uri) from None

    def find(self, uri: str) -> Snapshot | None:
        return self._docs.get(uri)

    def uris(self) -> list[str]:
        return list(self._docs)

    def snapshots(self) -> list[Snapshot]:
        """Every open document, in the order they were opened."""
        return list(self._docs.values())
