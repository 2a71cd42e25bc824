"""Renames from the editor's language server: where a name is used, as it said before the user
touched the name, followed through the edits since. Pure: no LSP types, no clock.

Once a declaration is renamed its old uses resolve to nothing, so a language server asked
afterwards has nothing to give: the server asks when the cursor rests on a name
(docs/protocol.md, ``lspInfer/references``) and keeps the answer's spans here, moved by every
splice after it. A splice that touches a span marks it touched and grows it over what was
typed, so that a name the user typed over is still found where it was.

When the latest edit renamed the name at one of the spans, the others that still read the old
name are the rename's next edit, in any language: the language server knows attributes,
methods and fields, which the scope rules (python_scopes.py, js_scopes.py) refuse. Never
offered: a new name already in the document as a word (it may name something else, which the
rename would capture), a span in an import or an export by name, the renamed one included
(``import {a}`` renamed imports another name), a name a JSDoc type uses (no reference names
it there), a rename typed at a shorthand ``{name}``, a span that reads neither name any more
(the user changed the code there), a
member's rename (a span after a ``.``) that leaves a member of the old name (the language
server did not follow every use of an attribute: jedi where ``self``'s class is unknown), a
result that does not parse where a parser can tell.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from lsp_infer.documents import Splice
from lsp_infer.next_edit import js_scopes, python_scopes
from lsp_infer.next_edit.edits import Prediction, TextEdit, applied, rename_of, word_around
from lsp_infer.next_edit.history import Edit
from lsp_infer.next_edit.syntax import Syntax, is_name_char, parses

MAX_SPANS = 2000  # an answer with more (a name used all over a generated file) is not kept

# Lines that import or export by name, in languages without a parser here (Go, Rust, Java, C):
# a name there names another module's, which a rename in this file does not change.
_IMPORT_LINE = re.compile(r"\s*(import|from|export|use|pub\s+use|package|#\s*include)\b")


@dataclass
class Span:
    """Where the name stood (``text[start:end]`` of the document now); ``touched``: an edit
    changed or touched it since, so it may read something else."""

    start: int
    end: int
    touched: bool = False

    def spliced(self, splice: Splice) -> Span:
        growth = len(splice.new) - (splice.end - splice.start)
        if splice.end < self.start:
            return Span(self.start + growth, self.end + growth, self.touched)
        if splice.start > self.end:
            return self
        # Touching or overlapping: the span grows over the splice (as history.Edit.grown).
        start = min(self.start, splice.start)
        return Span(start, max(self.end, splice.end) + growth, touched=True)


@dataclass
class References:
    """One name's uses in one document, as the editor's language server gave them."""

    name: str
    spans: list[Span] = field(default_factory=list)

    def splice(self, splice: Splice) -> None:
        self.spans = [span.spliced(splice) for span in self.spans]

    def covers(self, offset: int) -> bool:
        """Whether ``offset`` is on one of the spans, untouched (asking again would tell
        nothing new)."""
        return any(not s.touched and s.start <= offset <= s.end for s in self.spans)


def references_in(text: str, name: str, spans: list[tuple[int, int]]) -> References | None:
    """The spans of an answer that read ``name`` in ``text`` (the document it was given for),
    or None when none do or there are too many."""
    kept = sorted({(s, e) for s, e in spans if 0 <= s < e <= len(text) and text[s:e] == name})
    if not kept or len(kept) > MAX_SPANS:
        return None
    return References(name, [Span(s, e) for s, e in kept])


def rename_from_references(
    text: str, latest: Edit, references: References, syntax: Syntax | None
) -> Prediction | None:
    """The rename ``latest`` made, carried to the other spans of ``references``; None when
    ``latest`` renamed no span of them or a gate says no (the module's docstring)."""
    rename = rename_of(text, latest, syntax)
    if rename is None or rename.old != references.name:
        return None
    renamed: tuple[int, int] | None = None
    planned: list[Span] = []
    done = 0
    for span in references.spans:
        at = span.start  # a span grown over what was typed may start before the name
        while at < span.end and not is_name_char(text[at], syntax):
            at += 1
        start, end = word_around(text, at, at, syntax)
        word = text[start:end]
        if not span.touched and (start, end) == (span.start, span.end) and word == rename.old:
            planned.append(span)
        elif span.touched and start <= rename.start <= end and word == rename.new:
            renamed = (start, end)  # the one just renamed
        elif span.touched and word == rename.new:
            done += 1  # one the user renamed by hand before
        elif span.touched and word == rename.old:
            planned.append(Span(start, end, touched=True))
        else:
            return None  # the text no longer says what the language server saw: never guess
    if renamed is None or not planned:
        return None
    kinds = _span_kinds(text, [renamed, *((s.start, s.end) for s in planned)], syntax)
    if kinds is None or kinds[0] != "name" or "import" in kinds:
        # `{wdth}` typed over: the key changed too, or only the variable? `import {a}` typed
        # over: another name imported, or this one under another name (`a as b`)? One to
        # rename in an import or export by name: it would import or export another name.
        return None
    if syntax in ("javascript", "typescript", "tsx") and js_scopes.in_jsdoc_type(
        text, rename.old, syntax
    ):
        return None  # a JSDoc type names it too (`{String|Buffer}`), which no reference does
    if _words(text, rename.new, syntax) != 1 + done:
        return None  # the new name is in the document already: it may mean something else
    edits = [TextEdit(s.end, s.end, f": {rename.new}") if kind == "shorthand"  # keeps its key
             else TextEdit(s.start, s.end, rename.new)
             for s, kind in zip(planned, kinds[1:], strict=True)]  # fmt: skip
    after = applied(text, edits)
    members = [s for s in [Span(*renamed), *planned] if text[: s.start].rstrip().endswith(".")]
    if members:
        # A member's rename must leave no member of the old name: a language server may not
        # follow every use of an attribute (its type unknown where it is read). The check
        # parses the result, and says so when it does not parse.
        if _member_left(after, rename.old, syntax):
            return None
    elif syntax is not None and not parses(after, syntax):
        return None
    more = f"{len(edits)} more" if len(edits) > 1 else "1 more"
    label = f"rename {rename.old} → {rename.new} ({more})"
    return Prediction("rename", tuple(edits), label, from_references=True)


def renames_one_of(text: str, latest: Edit, references: References, syntax: Syntax | None
                   ) -> bool:  # fmt: skip
    """Whether ``latest`` renamed the name at one of the spans of ``references`` (whatever the
    gates said of carrying it on): a name in the code, as the language server knows it."""
    rename = rename_of(text, latest, syntax)
    return (
        rename is not None
        and rename.old == references.name
        and any(
            span.touched
            and span.start <= rename.start + len(rename.new)
            and rename.start <= span.end
            for span in references.spans
        )
    )


def _words(text: str, word: str, syntax: Syntax | None) -> int:
    """How often ``word`` stands in ``text`` as a whole name."""
    name_chars = r"\w" if syntax in (None, "python") else r"\w$"
    return len(re.findall(rf"(?<![{name_chars}]){re.escape(word)}(?![{name_chars}])", text))


def _span_kinds(text: str, spans: list[tuple[int, int]], syntax: Syntax | None) -> list[str] | None:
    """Each span's kind: "import" (imported or exported by name), "shorthand" (JavaScript's
    ``{name}``) or "name"; None when the text does not parse."""
    if syntax == "python":
        return python_scopes.reference_kinds(text, spans)
    if syntax is not None:
        return js_scopes.reference_kinds(text, spans, syntax)
    lines = text.split("\n")
    return ["import" if _IMPORT_LINE.match(lines[text.count("\n", 0, start)]) else "name"
            for start, _ in spans]  # fmt: skip


def _member_left(text: str, name: str, syntax: Syntax | None) -> bool:
    """Whether ``name`` is still a member in ``text`` (an attribute, a class's field or method),
    or ``text`` does not parse; without a parser here, whether the name is still there."""
    if syntax == "python":
        return python_scopes.member_named(text, name)
    if syntax is not None:
        return js_scopes.member_named(text, name, syntax)
    return _words(text, name, syntax) > 0
