"""The languages whose scopes and syntax the next-edit rules can read, and one face for each:
Python through its own parser (python_scopes.py), JavaScript and TypeScript through
tree-sitter's grammars (js_scopes.py). Any other language gets the rules that need no parser.
"""

from __future__ import annotations

import keyword
from typing import Literal

from lsp_infer.next_edit import js_scopes, python_scopes
from lsp_infer.next_edit.bindings import Binding

Syntax = Literal["python", "javascript", "typescript", "tsx"]

# The editors' language ids (VS Code's; Neovim's filetypes are the same words).
_BY_LANGUAGE_ID: dict[str, Syntax] = {
    "python": "python",
    "javascript": "javascript",
    "javascriptreact": "javascript",  # tree-sitter-javascript reads JSX
    "typescript": "typescript",
    "typescriptreact": "tsx",
}
_BY_SUFFIX: dict[str, Syntax] = {
    ".py": "python", ".pyi": "python", ".pyw": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
}  # fmt: skip


def syntax_of(uri: str, language_id: str) -> Syntax | None:
    """The syntax of a document: its language id says, or (none given) its file's suffix."""
    if language_id:
        return _BY_LANGUAGE_ID.get(language_id)
    path = uri.split("?", 1)[0]
    dot = path.rfind(".")
    return _BY_SUFFIX.get(path[dot:]) if dot > path.rfind("/") else None


def is_name_char(char: str, syntax: Syntax | None) -> bool:
    return char.isalnum() or char == "_" or (char == "$" and syntax not in (None, "python"))


def is_name(word: str, syntax: Syntax | None) -> bool:
    """Whether ``word`` can name a variable (not a keyword) in ``syntax``; without a parser
    here (None), any identifier (C's `in` and `def` are names, Python's keywords or not)."""
    if syntax is None:
        return word.isidentifier()
    if syntax == "python":
        return word.isidentifier() and not keyword.iskeyword(word)
    return word.replace("$", "_").isidentifier() and word not in js_scopes.RESERVED


def parses(text: str, syntax: Syntax) -> bool:
    if syntax == "python":
        return python_scopes.parses(text)
    return js_scopes.parses(text, syntax)


def same_binding(text: str, offset: int, syntax: Syntax) -> Binding | None:
    if syntax == "python":
        return python_scopes.same_binding(text, offset)
    return js_scopes.same_binding(text, offset, syntax)


def is_code_name(text: str, offset: int, syntax: Syntax) -> bool:
    if syntax == "python":
        return python_scopes.is_code_name(text, offset)
    return js_scopes.is_code_name(text, offset, syntax)
