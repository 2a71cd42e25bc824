"""The model's one KV cache: which document's prompt it holds, and moving prompts in and out.

Before a prompt is evaluated, ``prepare`` makes the cache hold as much of the prompt's start
as it can: the tokens it shares with what the cache holds, runs further on shifted into place
(kv_reuse.py), or — when one of the document's kept states (kv_states.py: its prompt as the
cache last held it, or the part a stopped background evaluation did) shares more — that
state, copied back in. When another document's prompt is about to replace the cache, the cache is
first copied out under the document it belongs to, so coming back to that file costs a copy
(milliseconds) instead of the whole prompt (seconds). Runs on the model lane only.
"""

from __future__ import annotations

import ctypes
import logging
import mmap
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from lsp_infer.local.kv_files import KvStateFiles, persistable
from lsp_infer.local.kv_reuse import ReusePlan, common_prefix, plan_reuse
from lsp_infer.local.kv_states import Kind, KvState, KvStates

log = logging.getLogger(__name__)

# Fewer tokens than this are not worth a copy (nor a switch to a kept state for).
KEEP_AT_LEAST = 32


@dataclass
class CacheStats:
    shifts: int = 0  # prompts that reused a run of the cache shifted into place
    tokens_shifted: int = 0


class KvCache:
    def __init__(
        self, llm: Any, states: KvStates, model: Hashable, files: KvStateFiles | None = None
    ) -> None:
        self._llm = llm
        self.states = states
        self.model = model  # the loaded model and its settings: states of another never fit
        self.files = files  # the live states on disk, across restarts (kv_files.py)
        self.owner: str | None = None  # the document whose prompt the cache holds
        self.stats = CacheStats()
        self._seen: set[str] = set()  # documents whose prompt the cache has held
        self._looked_on_disk: set[str] = set()  # documents whose file was looked for
        import llama_cpp

        self._can_shift = bool(llama_cpp.llama_memory_can_shift(self._memory()))

    def _memory(self) -> Any:
        import llama_cpp

        return llama_cpp.llama_get_memory(self._llm.ctx)

    def tokens(self) -> list[int]:
        llm = self._llm
        return [int(t) for t in llm.input_ids[: llm.n_tokens]]

    def _plan(self, cached: Sequence[int], prompt: Sequence[int]) -> ReusePlan:
        if self._can_shift:
            return plan_reuse(cached, prompt)
        return ReusePlan(common_prefix(cached, prompt))

    def _best_kept(
        self, document: str, prompt: Sequence[int], kinds: Sequence[Kind] = ("live", "parked")
    ) -> tuple[Kind, KvState, ReusePlan] | None:
        """The document's kept state that holds the most of ``prompt``: its prompt as the
        cache last held it, or the part a stopped background evaluation did (parked), which
        serves a request too (a warm stopped by the first suggestion's request)."""
        best: tuple[Kind, KvState, ReusePlan] | None = None
        if "live" in kinds and document:
            self._look_on_disk(document)
        for kind in kinds if document else ():
            kept = self.states.get(document, kind, self.model)
            if kept is not None:
                plan = self._plan(kept.tokens, prompt)
                if best is None or plan.reused > best[2].reused:
                    best = (kind, kept, plan)
        return best

    def _look_on_disk(self, document: str) -> None:
        """The first time a document is asked for: its state from disk (written by this server
        or an earlier one) becomes its live entry, unless it has one."""
        if self.files is None or document in self._looked_on_disk or not self.states.enabled:
            return
        self._looked_on_disk.add(document)
        if self.states.get(document, "live", self.model) is not None:
            return
        state = self.files.load(document, self.model, self._room_for)
        if state is not None:
            self.states.put(document, "live", state, counted=False)

    def _room_for(self, size: int) -> ctypes.Array[ctypes.c_uint8]:
        """A buffer for a state read from disk, made room for first (the bound covers it)."""
        self.states.make_room(size)
        return state_buffer(size)

    def reusable(
        self, document: str, prompt: Sequence[int], kinds: Sequence[Kind] = ("live", "parked")
    ) -> int:
        """How many of ``prompt``'s tokens ``prepare`` would find evaluated (changes nothing);
        ``kinds``: which of the document's kept states count."""
        live = self._plan(self.tokens(), prompt).reused
        best = self._best_kept(document, prompt, kinds)
        return max(live, best[2].reused if best else 0)

    def prepare(self, document: str, prompt: Sequence[int]) -> int:
        """Make the cache hold as much of ``prompt``'s start as it can; the tokens it holds.
        The cache then belongs to ``document``."""
        live_plan = self._plan(self.tokens(), prompt)
        best = self._best_kept(document, prompt)
        if self.owner != document:
            self._save_live(self._llm.n_tokens - live_plan.reused)
            has_live = self.states.get(document, "live", self.model) is not None
            if document in self._seen and not has_live and self.states.enabled:
                self.states.stats.misses += 1
        plan = live_plan
        if best is not None and best[2].reused >= live_plan.reused + KEEP_AT_LEAST:
            kind, kept, kept_plan = best
            if self.restore(kept):
                plan = kept_plan
                if kept.from_disk:
                    self.states.stats.disk_restores += 1
                else:
                    self.states.stats.restores += 1
                if kind == "parked":  # now the cache's own: kept again as live if need be
                    self.states.drop(document, "parked")
            else:  # never a wrong answer: the prompt is evaluated afresh
                plan = ReusePlan(0)
                self.states.drop(document, kind)
                self.states.stats.failures += 1
                if kind == "live" and self.files is not None:
                    self.files.drop(document)
        self._apply(plan)
        if document:
            self.owner = document
            self._seen.add(document)
        return plan.reused

    def hand_over(self) -> None:
        """Keep the owner's prompt under its document now (a switch would, in ``prepare``),
        because what the cache holds is about to be replaced by another document's state."""
        self._save_live(self._llm.n_tokens)
        self.owner = None

    def _save_live(self, lost: int) -> None:
        """Copy the cache out under its document before another document's prompt replaces
        it (when that would lose enough of it to matter)."""
        if self.owner and lost >= KEEP_AT_LEAST and self.states.enabled:
            # The old copy goes first: never two of one document's prompt at once.
            self.states.drop(self.owner, "live")
            try:
                state = self.snapshot()
            except MemoryError:  # memory pressure never fails a request: keep nothing
                self.states.drop(self.owner, "live")
                return
            self.states.put(self.owner, "live", state)
            if self.files is not None:  # written through: a server killed keeps it too
                self.files.save_later(self.owner, state)

    def _apply(self, plan: ReusePlan) -> None:
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
            self.stats.shifts += 1
            self.stats.tokens_shifted += move.length
        llm.n_tokens = plan.reused

    def snapshot(self) -> KvState:
        """A copy of the cache (just the tokens it counts)."""
        import llama_cpp

        llm = self._llm
        # Drop anything past the counted tokens (an aborted batch) before copying.
        llama_cpp.llama_memory_seq_rm(self._memory(), 0, llm.n_tokens, -1)
        size = llama_cpp.llama_state_seq_get_size(llm.ctx, 0)
        self.states.make_room(size)  # the states' bound covers this copy too
        data = state_buffer(size)
        llama_cpp.llama_state_seq_get_data(llm.ctx, data, size, 0)
        return KvState(tuple(self.tokens()), data, self.model)

    def restore(self, state: KvState) -> bool:
        """Put a copy back; False (and an empty cache) when llama.cpp refuses it."""
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

    def forget(self, document: str) -> None:
        """The document closed: its kept states go, and nothing is saved for it later (but on
        disk, where its prompt waits for the document to be opened again). An excluded
        document's file goes too (``KvStateFiles.withheld``)."""
        if self.owner == document:
            self.save_owner_to_disk()
        self.states.drop(document)
        self._seen.discard(document)
        self._looked_on_disk.discard(document)
        if self.owner == document:
            self.owner = None
        if self.files is not None and document in self.files.withheld:
            self.files.drop(document)

    def save_owner_to_disk(self) -> None:
        """Write what the cache holds under its document (closing it, or the server)."""
        files, owner = self.files, self.owner
        if files is None or files.max_bytes <= 0 or not owner or not persistable(owner):
            return  # checked before the copy: it is megabytes, and makes room in the bound
        if owner in files.withheld:
            return
        if self._llm.n_tokens < KEEP_AT_LEAST or not self.states.enabled:
            return
        try:
            state = self.snapshot()
        except MemoryError:
            return
        files.save_later(owner, state)


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
