"""Whitespace at the cursor, with the real model: a suggestion starts where the user's
indentation ends (core/postprocess.starts_at_typed_space), and tokens longer than 32 bytes
keep their text (Vocabulary.piece).

The two stdlib lines below are holes of bench/holes.py's header suite (seed 3) where the
default model, left to choose its own indentation, wrote a line one block deeper than the
user's cursor ("    if f.frozen:" after the dedented line's 12 spaces): mis-indented in
the editor. The bench scores first lines stripped, so it could not see that.
"""

from __future__ import annotations

import dataclasses
import enum
from pathlib import Path

import pytest

from lsp_infer.config import CompletionSettings
from lsp_infer.core.cancel import CancelToken
from lsp_infer.core.engine import CompletionEngine
from lsp_infer.local.llama_cpp import LlamaCppBackend


@pytest.fixture(scope="module")
def backend(loaded_backend: LlamaCppBackend) -> LlamaCppBackend:
    return loaded_backend


def test_long_tokens_keep_their_text(backend: LlamaCppBackend) -> None:
    """llama-cpp-python's detokenize gives b"" for a piece over 32 bytes (#2362)."""
    assert backend.prompts is not None
    vocabulary = backend.prompts.vocabulary
    for text in (" " * 40 + "x = 1", "# " + "-" * 64, "\t" * 3 + "pass"):
        tokens = vocabulary.tokenize_text(text)
        assert b"".join(vocabulary.piece(t) for t in tokens) == text.encode()


def test_typed_space_is_split_as_before_code(backend: LlamaCppBackend) -> None:
    assert backend.prompts is not None
    vocabulary = backend.prompts.vocabulary
    tokens, left = vocabulary.spacing_tokens(" " * 12)
    assert b"".join(vocabulary.piece(t) for t in tokens) == b" " * 11 and left == b" "
    assert vocabulary.spacing_tokens(" ") == ([], b" ")  # "return " + " x"


def stdlib_hole(path: str, line: str) -> tuple[str, int]:
    """The module's text without ``line``'s code, and the cursor where it was."""
    source = Path(path).read_text()
    if "\n" + line + "\n" not in source:
        pytest.skip(f"this Python's {Path(path).name} has no {line.strip()!r}")
    start = source.index("\n" + line) + 1
    code_at = start + len(line) - len(line.lstrip())
    end = source.index("\n", start)
    return source[:code_at] + source[end:], code_at


@pytest.mark.parametrize(
    ("path", "line"),
    [
        (dataclasses.__file__, "            if getattr(b, _PARAMS).frozen:"),
        (enum.__file__, "        if qualname is not None:"),
    ],
)
async def test_a_dedented_line_is_suggested_at_the_users_indentation(
    backend: LlamaCppBackend, path: str, line: str
) -> None:
    text, offset = stdlib_hole(path, line)
    engine = CompletionEngine(backend)
    settings = CompletionSettings(max_tokens=24, max_lines=1, timeout_ms=20000)
    suggestion = await engine.complete(text, offset, settings, CancelToken())
    generated = suggestion.generation.text
    assert generated.strip(), "the model wrote nothing to check"
    assert not generated[0].isspace(), repr(generated)
