"""Answering without the model: cursor views, type-ahead, the suggestion LRU (pure).

A suggestion depends only on the text the prompt can see, and the prompt never sees more than
``reach`` characters on either side of the cursor. So a :class:`CursorView` (bounded text
before and after the cursor) is a complete cache key, and comparing two of them is cheap even
in a megabyte file.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

from cachetools import LRUCache

V = TypeVar("V")


@dataclass(frozen=True)
class CursorView:
    before: str  # up to ``reach`` characters before the cursor
    after: str  # up to ``reach`` characters after the cursor
    offset: int  # the cursor, as an offset into the document

    @classmethod
    def at(cls, text: str, offset: int, reach: int) -> CursorView:
        return cls(text[max(0, offset - reach) : offset], text[offset : offset + reach], offset)


def typed_since(old: CursorView, text: str, offset: int, reach: int) -> str | None:
    """The text typed at ``old``'s cursor that turned it into (text, offset), or None.

    None unless the only nearby change is an insertion at the old cursor with the new cursor
    at its end: the text before the old cursor and after the new one must be unchanged (as
    far as ``reach`` — the most a prompt can see).
    """
    if offset < old.offset or offset - old.offset > reach:
        return None
    if text[max(0, old.offset - reach) : old.offset] != old.before:
        return None
    if text[offset : offset + reach] != old.after:
        return None
    return text[old.offset : offset]


def settled_length(line: str) -> int:
    """How much of ``line`` (the cursor's line, up to the cursor) keeps its tokens whatever is
    typed after it: everything before the whitespace in front of its last word.

    BPE tokenizers split text into words before merging, and a word starts at the whitespace
    in front of it (" foo", " (r'"), so typing at the end of the line can change only its
    last word and the whitespace before it. After a space the last word is complete. A line
    still on its first word settles nothing.
    """
    words = line.rstrip(" \t")
    if len(words) < len(line):
        return len(words) if words.strip() else 0
    end = max(words.rfind(" "), words.rfind("\t"))
    while end > 0 and words[end - 1] in " \t":
        end -= 1
    return max(end, 0)


def edited_on_cursor_line(view: CursorView, length: int, text: str, settled: int = 0) -> bool:
    """Whether ``text`` differs from the document ``view`` was taken from (``length``
    characters long) only between the start of the cursor's line (plus its first ``settled``
    characters) and the cursor: the text before that point and the text after the cursor
    are unchanged (as far as ``view`` reaches). Such an edit — typing, deleting or pressing
    Enter on the line — leaves the prompt up to that point as it was."""
    line_start = view.offset - len(view.before) + view.before.rfind("\n") + 1 + settled
    head = view.before[: line_start - (view.offset - len(view.before))]
    head_start = line_start - len(head)
    tail_start = len(text) - (length - view.offset)
    return (
        tail_start >= line_start
        and text[head_start:line_start] == head
        and text[tail_start : tail_start + len(view.after)] == view.after
    )


def rest_after_typing(suggestion: str, typed: str) -> str | None:
    """What is left of a suggestion once ``typed`` was typed into it (None: it diverged or
    nothing is left)."""
    if suggestion.startswith(typed) and len(suggestion) > len(typed):
        return suggestion[len(typed) :]
    return None


@dataclass(frozen=True)
class Shown:
    """The suggestion last shown for a document, and where."""

    context: CursorView
    text: str
    # From the whole window (False: a cold start's smaller one, which an invoked request does
    # not answer from).
    whole: bool = True


def type_ahead(shown: Shown | None, text: str, offset: int, reach: int) -> str | None:
    """The rest of the shown suggestion if the user has been typing it, else None."""
    if shown is None:
        return None
    typed = typed_since(shown.context, text, offset, reach)
    if not typed:
        return None
    return rest_after_typing(shown.text, typed)


class SuggestionCache(Generic[V]):
    """Finished suggestions (or a request's several choices) keyed by their cursor view and
    the settings that shape them."""

    def __init__(self, size: int = 512) -> None:
        self._entries: LRUCache[Hashable, V] = LRUCache(maxsize=size)

    @staticmethod
    def key(context: CursorView, settings_key: Hashable) -> Hashable:
        return (context.before, context.after, settings_key)

    def get(self, context: CursorView, settings_key: Hashable) -> V | None:
        return self._entries.get(self.key(context, settings_key))

    def put(self, context: CursorView, settings_key: Hashable, suggestion: V) -> None:
        self._entries[self.key(context, settings_key)] = suggestion

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
