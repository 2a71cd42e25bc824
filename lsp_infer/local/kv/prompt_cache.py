"""The prompt cache: the model's one KV cache, the documents' prompts kept beside it in RAM
and on disk, and which document's prompt the cache holds. The backend's one way in.

Before a prompt is evaluated, ``prepare`` makes the cache hold as much of the prompt's start
as it can: the tokens it shares with what the cache holds, runs further on shifted into place
(token_reuse.py), or — when one of the document's kept states (states.py: its prompt as the cache
last held it, or the part a stopped background evaluation did) shares more — that state,
copied back in (from disk the first time a document is asked for: files.py). When another
document's prompt is about to replace the cache, the cache is first copied out under the
document it belongs to, so coming back to that file costs a copy (milliseconds) instead of
the whole prompt (seconds).

Background work whose prompt differs from what the cache holds (a new pick of extra context,
a cold start's whole window) runs inside ``background``: the cache is set aside first, and if
a keystroke stops the work inside its prompt, the part done is parked under its document and
the cache put back as the keystroke's request left it.

Runs on the model lane, but for ``withhold``, ``configure`` and ``as_json`` (the event loop).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from lsp_infer.core.cancel import Cancelled, CancelToken
from lsp_infer.local.kv.files import KvStateFiles, default_directory, persistable
from lsp_infer.local.kv.sequence import LlamaSequence, state_buffer
from lsp_infer.local.kv.states import Kind, KvState, KvStates
from lsp_infer.local.kv.token_reuse import ReusePlan, common_prefix

log = logging.getLogger(__name__)

# Fewer tokens than this are not worth a copy (nor a switch to a kept state for).
KEEP_AT_LEAST = 32


@dataclass
class ShiftStats:
    shifts: int = 0  # runs of the cache shifted into place for a prompt
    tokens_shifted: int = 0


class PromptCache:
    def __init__(self) -> None:
        self._states = KvStates(0)  # kept across model loads, emptied at each
        self._files: KvStateFiles | None = None  # the live states on disk, across restarts
        self._disk_bytes = 0
        self._sequence: LlamaSequence | None = None  # while a model is loaded
        self.model: Hashable = None  # the loaded model and its settings
        self.owner: str | None = None  # the document whose prompt the cache holds
        self._seen: set[str] = set()  # documents whose prompt the cache has held
        self._looked_on_disk: set[str] = set()  # documents whose file was looked for
        # Documents the exclusion rules match: their states never go to disk nor come from it.
        self._withheld: frozenset[str] = frozenset()
        self.stats = ShiftStats()

    # -- the model's context ----------------------------------------------------------

    def configure(self, ram_bytes: int, disk_bytes: int) -> None:
        """The bounds (model.stateCacheMb, model.stateDiskMb), applied at once."""
        self._states.resize(ram_bytes)
        self._disk_bytes = disk_bytes
        if self._files is not None:
            self._files.max_bytes = disk_bytes

    def attach(self, llm: Any, model: Hashable, build: str) -> None:
        """A model was loaded into ``llm``; ``model`` names it and its settings (a state made
        with another is never restored), ``build`` the llama.cpp build (files depend on its
        state format)."""
        self._sequence = LlamaSequence(llm, model)
        self.model = model
        self._files = KvStateFiles(
            default_directory(), self._disk_bytes, (build, model), lambda: self._withheld
        )
        self.owner, self._seen, self._looked_on_disk = None, set(), set()
        self.stats = ShiftStats()

    def detach(self) -> None:
        """The model goes (a reload, or exit): what is kept goes with it, and the disk writes
        still queued are given up."""
        if self._files is not None:
            self._files.close()
        self._files, self._sequence, self.owner = None, None, None
        self._states.clear()

    def withhold(self, documents: frozenset[str]) -> None:
        """The documents the exclusion rules match now (from the event loop): their states
        are neither written to disk nor read from it, and their files are deleted where the
        cache would have written or read them (``forget`` deletes them at once)."""
        self._withheld = documents

    @property
    def _live(self) -> LlamaSequence:
        assert self._sequence is not None, "no model loaded"
        return self._sequence

    # -- the sequence -------------------------------------------------------------------

    @property
    def length(self) -> int:
        """How many tokens the cache holds."""
        return self._live.length

    def evaluate(self, tokens: Sequence[int], cancel: CancelToken) -> None:
        """Append ``tokens`` to the cache; Cancelled when the abort callback stopped it."""
        try:
            self._live.evaluate(tokens)
        except RuntimeError:  # llama_decode returned 2: aborted by the backend's callback
            cancel.raise_if_cancelled()
            raise

    def rewind(self, length: int) -> None:
        """Back to the first ``length`` tokens (a choice's branch starts from the prompt)."""
        self._live.rewind(length)

    def clear(self) -> None:
        self._live.clear()

    # -- prompts ------------------------------------------------------------------------

    def reusable(
        self, document: str, prompt: Sequence[int], kinds: Sequence[Kind] = ("live", "parked")
    ) -> int:
        """How many of ``prompt``'s tokens ``prepare`` would find evaluated (changes nothing);
        ``kinds``: which of the document's kept states count."""
        live = self._live.plan(prompt).reused
        best = self._best_kept(document, prompt, kinds)
        return max(live, best[2].reused if best else 0)

    def prepare(self, document: str, prompt: Sequence[int]) -> int:
        """Make the cache hold as much of ``prompt``'s start as it can, but never all of it
        (the last token is evaluated again, for fresh logits); the tokens it holds. The cache
        then belongs to ``document``."""
        sequence = self._live
        live_plan = sequence.plan(prompt)
        best = self._best_kept(document, prompt)
        if self.owner != document:
            self._save_live(sequence.length - live_plan.reused)
            has_live = self._states.get(document, "live", self.model) is not None
            if document in self._seen and not has_live and self._states.enabled:
                self._states.stats.misses += 1
        plan = live_plan
        if best is not None and best[2].reused >= live_plan.reused + KEEP_AT_LEAST:
            kind, kept, kept_plan = best
            plan = kept_plan if sequence.restore(kept) else ReusePlan(0)
            _count_restore(
                self._states, self._files, document, kind, kept, restored=plan is kept_plan
            )
        sequence.apply(plan)
        self.stats.shifts += len(plan.moves)
        self.stats.tokens_shifted += sum(move.length for move in plan.moves)
        if document:
            self.owner = document
            self._seen.add(document)
        sequence.rewind(max(0, len(prompt) - 1))
        return sequence.length

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
            kept = self._states.get(document, kind, self.model)
            if kept is not None:
                plan = self._live.plan(prompt, kept.tokens)
                if best is None or plan.reused > best[2].reused:
                    best = (kind, kept, plan)
        return best

    def _look_on_disk(self, document: str) -> None:
        """The first time a document is asked for: its state from disk (written by this server
        or an earlier one) becomes its live entry, unless it has one."""
        states = self._states
        if self._files is None or document in self._looked_on_disk or not states.enabled:
            return
        self._looked_on_disk.add(document)
        if states.get(document, "live", self.model) is not None:
            return

        def room_for(size: int) -> Any:  # made room for first: the bound covers it
            states.make_room(size)
            return state_buffer(size)

        state = self._files.load(document, self.model, room_for)
        if state is not None:
            states.put(document, "live", state, counted=False)

    def _save_live(self, lost: int) -> None:
        """Copy the cache out under its document before another document's prompt replaces
        it (when that would lose enough of it to matter)."""
        owner, states = self.owner, self._states
        if owner and lost >= KEEP_AT_LEAST and states.enabled:
            # The old copy goes first: never two of one document's prompt at once.
            states.drop(owner, "live")
            try:
                state = self._live.snapshot(states.make_room)
            except MemoryError:  # memory pressure never fails a request: keep nothing
                return
            states.put(owner, "live", state)
            if self._files is not None:  # written through: a server killed keeps it too
                self._files.save_later(owner, state)

    # -- background work ----------------------------------------------------------------

    @contextlib.contextmanager
    def background(self, document: str, prompt: Sequence[int]) -> Iterator[None]:
        """Around background work whose prompt may replace what the cache holds: stopped
        (Cancelled) inside its prompt, the part done is parked under ``document`` and the
        cache put back as it was; stopped later, or done, the cache keeps its work."""
        kept = self._set_aside(document, prompt)
        if kept is not None:  # it lives until the work is done: the states' bound counts it
            self._states.hold_aside(kept.nbytes)
        try:
            yield
        except Cancelled:
            if kept is not None and self.length < len(prompt):
                # No state in this frame's locals: the exception's traceback keeps them.
                stopped, done = time.monotonic(), self.length
                self._states.put(document, "parked", self._live.snapshot(self._states.make_room))
                self._live.restore(kept)
                log.debug(
                    "background evaluation stopped at %d of %d prompt tokens; cache put back "
                    "in %.0f ms", done, len(prompt), (time.monotonic() - stopped) * 1000,
                )  # fmt: skip
            raise
        finally:
            if kept is not None:
                self._states.release_aside(kept.nbytes)
            # A stopped job's exception keeps this frame alive in its traceback for as long
            # as the job's task is kept (a stopped pick waits as the candidate to resume):
            # the copy, megabytes, must not live on with it.
            kept = None

    def _set_aside(self, document: str, prompt: Sequence[int]) -> KvState | None:
        """Before background work: a copy of the cache to put back if it is stopped inside
        its prompt (None when the work hardly changes it, or when the cache holds another
        document's prompt, which is kept under that document instead), and the cache switched
        to what an earlier stopped run of it left (the document's parked state), when that
        shares more of its prompt."""
        sequence, states = self._live, self._states
        reused = self.reusable(document, prompt, kinds=("live",))
        parked = states.take(document, "parked", self.model)
        done = common_prefix(parked.tokens, prompt) if parked is not None else 0
        resume = done >= reused + KEEP_AT_LEAST
        live = sequence.tokens()
        if not resume and len(live) - common_prefix(live, prompt) < KEEP_AT_LEAST:
            return None  # little to lose: the work only extends what is there
        kept = None
        if self.owner in (document, None) or not states.enabled:
            kept = sequence.snapshot(states.make_room)
        else:
            # Another document's prompt (a warm after a switch): kept under that document, as
            # any switch keeps it, not copied aside as well; stopped, the part done stays.
            self._save_live(sequence.length)
            self.owner = None
        if resume and parked is not None:
            sequence.restore(parked)
            log.debug(
                "background evaluation resumed: %d of its %d prompt tokens were done",
                done, len(prompt),
            )  # fmt: skip
        return kept

    # -- documents ----------------------------------------------------------------------

    def forget(self, document: str) -> None:
        """The document closed: its kept states go, and nothing is saved for it later (but on
        disk, where its prompt waits for the document to be opened again). An excluded
        document's file goes too."""
        if self.owner == document:
            self.save_to_disk()
        self._states.drop(document)
        self._seen.discard(document)
        self._looked_on_disk.discard(document)
        if self.owner == document:
            self.owner = None
        if self._files is not None and document in self._withheld:
            self._files.drop(document)

    def save_to_disk(self, timeout: float | None = None) -> None:
        """Write what the cache holds under its document (closing it, or the server); with
        ``timeout``, wait that long for this and the writes queued before it."""
        files, owner = self._files, self.owner
        if files is None or self._sequence is None:
            return
        # Checked before the copy: it is megabytes, and makes room in the bound.
        worth = files.max_bytes > 0 and self._states.enabled
        if worth and owner and persistable(owner) and owner not in self._withheld:
            with contextlib.suppress(MemoryError):
                if self._sequence.length >= KEEP_AT_LEAST:
                    files.save_later(owner, self._sequence.snapshot(self._states.make_room))
        if timeout is not None:
            files.flush(timeout)

    def as_json(self) -> dict[str, Any]:
        """For ``lspInfer/stats``: the kept states, the files and the shifts."""
        states: dict[str, Any] = dict(self._states.as_json())
        states["disk"] = self._files.as_json() if self._files is not None else None
        return {
            "stateCache": states,
            "kvShifts": self.stats.shifts,
            "tokensShifted": self.stats.tokens_shifted,
        }


def _count_restore(
    states: KvStates, files: KvStateFiles | None, document: str, kind: Kind, kept: KvState,
    restored: bool,
) -> None:  # fmt: skip
    """The books after a kept state was copied back in (or refused: then it goes)."""
    if not restored:  # never a wrong answer: the prompt is evaluated afresh
        states.drop(document, kind)
        states.stats.failures += 1
        if kind == "live" and files is not None:
            files.drop(document)
    elif kept.from_disk:
        states.stats.disk_restores += 1
    else:
        states.stats.restores += 1
    if restored and kind == "parked":  # now the cache's own: kept again as live if need be
        states.drop(document, "parked")
