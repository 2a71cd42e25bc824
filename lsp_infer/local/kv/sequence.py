"""The llama.cpp context's one sequence: the only code that moves its token count.

llama-cpp-python keeps the tokens a context holds in ``Llama.input_ids[:n_tokens]`` and the
KV cache beside them in llama.cpp's memory; the two must always agree, or a later prompt
reuses keys and values computed for other tokens (a wrong suggestion, never an error). Every
change to either goes through this class: evaluating tokens, rewinding to an earlier length,
shifting runs into place (token_reuse.py), copying the sequence out and back in (states.py,
files.py). Runs on the model lane only.
"""

from __future__ import annotations

import ctypes
import logging
import mmap
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from lsp_infer.local.kv.states import KvState
from lsp_infer.local.kv.token_reuse import ReusePlan, common_prefix, plan_reuse

log = logging.getLogger(__name__)


class LlamaSequence:
    def __init__(self, llm: Any, model: Hashable) -> None:
        import llama_cpp

        self._llm = llm
        self.model = model  # the loaded model and its settings: states of another never fit
        self._can_shift = bool(llama_cpp.llama_memory_can_shift(self._memory()))

    def _memory(self) -> Any:
        import llama_cpp

        return llama_cpp.llama_get_memory(self._llm.ctx)

    @property
    def length(self) -> int:
        """How many tokens the cache holds."""
        return int(self._llm.n_tokens)

    @property
    def room(self) -> int:
        """The context's size in tokens."""
        return int(self._llm.n_ctx())

    def tokens(self) -> list[int]:
        llm = self._llm
        return [int(t) for t in llm.input_ids[: llm.n_tokens]]

    def evaluate(self, tokens: Sequence[int]) -> None:
        """Append ``tokens``. Raises RuntimeError when llama.cpp's abort callback stopped it:
        llama.cpp then dropped the aborted batch and ``length`` counts only the batches that
        finished, so the next prompt reuses exactly what is valid."""
        if tokens:
            self._llm.eval(list(tokens))

    def rewind(self, length: int) -> None:
        """Back to the first ``length`` tokens (what comes after is overwritten next)."""
        self._llm.n_tokens = min(length, self._llm.n_tokens)

    def plan(self, prompt: Sequence[int], cached: Sequence[int] | None = None) -> ReusePlan:
        """How much of ``prompt`` the cache (or ``cached``, a kept state's tokens) serves."""
        have = self.tokens() if cached is None else cached
        if self._can_shift:
            return plan_reuse(have, prompt)
        return ReusePlan(common_prefix(have, prompt))

    def apply(self, plan: ReusePlan) -> None:
        """Shift the plan's runs into place; the cache then holds ``plan.reused`` tokens."""
        import llama_cpp

        llm, memory = self._llm, self._memory()
        for move in plan.moves:
            llama_cpp.llama_memory_seq_rm(memory, 0, move.target, move.source)
            llama_cpp.llama_memory_seq_add(
                memory, 0, move.source, move.source + move.length, move.target - move.source
            )
            ids = llm.input_ids
            ids[move.target : move.target + move.length] = ids[
                move.source : move.source + move.length
            ].copy()
        llm.n_tokens = plan.reused

    def snapshot(self, make_room: Callable[[int], None]) -> KvState:
        """A copy of the sequence (just the tokens it counts); ``make_room(size)`` is called
        before the copy is made (the states' bound covers it)."""
        import llama_cpp

        llm = self._llm
        # Drop anything past the counted tokens (an aborted batch) before copying.
        llama_cpp.llama_memory_seq_rm(self._memory(), 0, llm.n_tokens, -1)
        size = llama_cpp.llama_state_seq_get_size(llm.ctx, 0)
        make_room(size)
        data = state_buffer(size)
        llama_cpp.llama_state_seq_get_data(llm.ctx, data, size, 0)
        return KvState(tuple(self.tokens()), data, self.model)

    def restore(self, state: KvState) -> bool:
        """Put a copy back; False (and an empty sequence) when llama.cpp refuses it."""
        import llama_cpp

        llm = self._llm
        self.clear()
        if not state.tokens:
            return True
        data = state.data
        if isinstance(data, bytes | bytearray):  # not from snapshot(): give llama.cpp a buffer
            data = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        if state.model != self.model or not llama_cpp.llama_state_seq_set_data(
            llm.ctx, data, len(data), 0
        ):
            log.warning("a kept KV state did not restore; the prompt is evaluated afresh")
            self.clear()
            return False
        llm.input_ids[: len(state.tokens)] = state.tokens
        llm.n_tokens = len(state.tokens)
        return True

    def clear(self) -> None:
        import llama_cpp

        llama_cpp.llama_memory_seq_rm(self._memory(), 0, -1, -1)
        self._llm.n_tokens = 0


def state_buffer(size: int) -> ctypes.Array[ctypes.c_uint8]:
    """A zeroed buffer for a KV state, in an anonymous mapping of its own, unmapped as soon as
    the state is dropped. States are megabytes each and come and go all day: from malloc,
    glibc raises its mmap threshold after the first such free and serves the next ones from
    the heap, which does not shrink (the hour-long 20-file soak: RSS 680 -> 1096 MB while the
    states held at most 170 MB; RELIABILITY.md)."""
    if size <= 0:
        return (ctypes.c_uint8 * 0)()
    # The array keeps the mapping alive (ctypes holds the buffer export) and releases it with
    # itself: the mapping goes when the last reference to the state does.
    return (ctypes.c_uint8 * size).from_buffer(mmap.mmap(-1, size))
