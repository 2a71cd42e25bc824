"""The loaded model's tokens: tokenizing text and prompts, special tokens, token healing.

Plain text never parses special tokens (code cannot inject control tokens); the FIM markers
are looked up once each. Token healing: text before the cursor often ends mid-token ("imp",
or "return " with its trailing space as a token of its own). Left in, the model must continue
from an unusual token boundary (and writes " a" after "return ", doubling the space). Backed
up, the first generated tokens are constrained to start with that text instead
(``healing_candidates``).
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
from cachetools import LRUCache

from lsp_infer.core.prompts import FimTemplate, PrefixText, Prompt, Special
from lsp_infer.local.kv import common_prefix
from lsp_infer.models import ModelError

TokenIds = np.ndarray[Any, np.dtype[np.int64]]
# What may not follow the typed whitespace at the start of a suggestion (keeps_to_space).
_SPACE = (b" ", b"\t", b"\n", b"\r")


def keeps_to_space(piece: bytes, owed: bytes) -> bool:
    """Whether a token's text keeps to the whitespace typed at the cursor, ``owed`` being
    what is still to write of it: a start of it, or all of it and then code (not more
    whitespace, not a line end)."""
    if not piece:
        return False
    return owed.startswith(piece) or (
        piece.startswith(owed) and piece[len(owed) :][:1] not in _SPACE
    )


class Vocabulary:
    def __init__(self, llm: Any) -> None:
        import llama_cpp

        self._llm = llm
        self._vocab = llama_cpp.llama_model_get_vocab(llm.model)
        self._special_ids: dict[str, int] = {}
        self._pieces: list[bytes] | None = None  # each token's text, for token healing
        # Candidates by the text they keep to; a few hundred distinct texts in a session.
        self._candidates: LRUCache[bytes, TokenIds] = LRUCache(256)
        self._spacing: LRUCache[bytes, TokenIds] = LRUCache(256)
        self._space_tokens: LRUCache[str, tuple[list[int], bytes]] = LRUCache(256)
        self.stop_ids: frozenset[int] = frozenset()  # the template's, once one is chosen

    @property
    def size(self) -> int:
        return int(self._llm.n_vocab())

    def use_template(self, template: FimTemplate) -> None:
        """Decoding stops at the template's stop tokens and markers."""
        ids = {self.special_id(marker) for marker in (*template.stop, *template.markers)}
        self.stop_ids = frozenset(i for i in ids if i is not None)

    def special_id(self, text: str) -> int | None:
        """The id of the special token spelled ``text``, or None when the model has none."""
        if text in self._special_ids:
            return self._special_ids[text]
        ids = self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        if len(ids) != 1:
            return None
        if self._llm.detokenize(ids, special=True).decode("utf-8", "replace") != text:
            return None
        self._special_ids[text] = ids[0]
        return int(ids[0])

    def has_special(self, text: str) -> bool:
        return self.special_id(text) is not None

    def ends_output(self, token: int) -> bool:
        """A stop token, or one the model marks as the end of generation or as control."""
        import llama_cpp

        return (
            token in self.stop_ids
            or llama_cpp.llama_vocab_is_eog(self._vocab, token)
            or llama_cpp.llama_vocab_is_control(self._vocab, token)
        )

    def count(self, text: str) -> int:
        return len(self.tokenize_text(text)) if text else 0

    def tokenize_text(self, text: str) -> list[int]:
        # Plain text never parses special tokens: code cannot inject control tokens.
        data = text.replace("\x00", " ").encode("utf-8", "surrogatepass")
        return list(self._llm.tokenize(data, add_bos=False, special=False))

    def tokenize(
        self, prompt: Prompt, add_bos: bool, heal: bool, tail_chars: int = 0
    ) -> tuple[list[int], bytes, int]:
        """Prompt tokens; the text of the prefix's last token when ``heal`` backs it up; and
        how many tokens come before the prefix's last ``tail_chars`` characters (the part
        typing changes)."""
        tokens: list[int] = [int(self._llm.token_bos())] if add_bos else []
        healed, stable = b"", 0
        for segment in prompt:
            if isinstance(segment, Special):
                token = self.special_id(segment.text)
                if token is None:
                    raise ModelError(f"the model has no {segment.text} token")
                tokens.append(token)
                continue
            ids = self.tokenize_text(segment)
            if isinstance(segment, PrefixText):
                head = self.tokenize_text(segment[: max(0, len(segment) - tail_chars)])
                stable = len(tokens) + common_prefix(head, ids)
                if heal and ids and (piece := self.piece(ids[-1])):
                    healed = piece
                    ids.pop()
            tokens.extend(ids)
        return tokens, healed, min(stable, len(tokens))

    def piece(self, token: int) -> bytes:
        """The token's text, as bytes (a token may end inside a UTF-8 character).

        Not llama-cpp-python's ``detokenize``: its 32-byte buffer turns a longer piece into
        b"" (abetlen/llama-cpp-python#2362): 240 of Qwen2.5's tokens, runs of 33 to 80 spaces
        (deep or aligned indentation) and lines of dashes or stars, were dropped from
        suggestions."""
        import llama_cpp

        size = 64
        while True:
            buffer = ctypes.create_string_buffer(size)
            length = llama_cpp.llama_token_to_piece(self._vocab, token, buffer, size, 0, False)
            if length >= 0:
                return buffer.raw[:length]
            size = -length  # too small: llama.cpp says how large it must be

    def _all_pieces(self) -> list[bytes]:
        if self._pieces is None:
            self._pieces = [self.piece(i) for i in range(self.size)]
        return self._pieces

    def spacing_candidates(self, owed: bytes) -> TokenIds:
        """Token ids that keep to the whitespace typed at the cursor, ``owed`` being what is
        still to write of it: a start of it, or all of it and then code (not more whitespace,
        not a line end)."""
        if owed not in self._spacing:
            ids = [i for i, piece in enumerate(self._all_pieces()) if keeps_to_space(piece, owed)]
            self._spacing[owed] = np.array(ids, dtype=np.int64)
        return self._spacing[owed]

    def spacing_tokens(self, typed: str) -> tuple[list[int], bytes]:
        """The tokens of the whitespace ``typed`` as the tokenizer splits it when code follows
        (Qwen2.5: a run of spaces, then the last space with the word), and what is left of it
        for the code's first token."""
        if typed not in self._space_tokens:
            tokens, left = [], typed.encode()
            for token in self.tokenize_text(typed + "x"):
                piece = self.piece(token)
                if not piece or not left.startswith(piece):
                    break
                tokens.append(token)
                left = left[len(piece) :]
            self._space_tokens[typed] = (tokens, left)
        return self._space_tokens[typed]

    def healing_candidates(self, healed: bytes) -> TokenIds:
        """Token ids whose text starts with ``healed`` or is a start of it."""
        if healed not in self._candidates:
            ids = [
                i
                for i, piece in enumerate(self._all_pieces())
                if piece and (piece.startswith(healed) or healed.startswith(piece))
            ]
            self._candidates[healed] = np.array(ids, dtype=np.int64)
        return self._candidates[healed]
