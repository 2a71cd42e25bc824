"""Documents' evaluated prompts, kept as llama.cpp sequence states in a RAM-bounded LRU.

The model has one KV cache. Without this, a suggestion in another file replaces it, and
coming back costs the whole prompt again (seconds on a small CPU). The prompt cache copies the
cache out under its document before another document's prompt replaces it, and copies a
document's state back in when a request for it shares more of its prompt than the live cache
does (as llama.cpp's own server does with --cache-ram). Each document has at most two entries:
its ``live`` prompt, and a ``parked`` one — the part of a background evaluation (a new pick of
extra context, or the full window after a cold start) that a keystroke stopped, to carry on
from at the next pause.

The bound covers every state copy the prompt cache holds, not just the entries: room is made
before a copy is made (``make_room``), and a copy kept outside the entries for a while (the
request's cache, set aside during background work) is counted as held aside.

An entry remembers the model it was made with; one from another model (a reload since) is
never restored. Pure bookkeeping: the bytes come from and go to the prompt cache, on the model
lane; the event loop only drops entries (a closed document) and reads the counters, hence the
lock.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Literal

from cachetools import LRUCache

Kind = Literal["live", "parked"]


@dataclass(frozen=True)
class KvState:
    """A copy of the model's one sequence: the tokens it holds and llama.cpp's bytes for it."""

    tokens: tuple[int, ...]
    data: Any  # a ctypes byte array (llama_state_seq_get_data), or bytes in tests
    model: Hashable  # the model (and its settings) it was made with
    from_disk: bool = False  # read from a file (files.py), not copied out of this cache

    @property
    def nbytes(self) -> int:
        return len(self.data)


@dataclass
class StateStats:
    restores: int = 0  # states copied back in for a request
    misses: int = 0  # requests for a document whose state was gone (evicted, or never kept)
    evictions: int = 0  # entries dropped for room
    saves: int = 0  # states copied out
    failures: int = 0  # states that would not restore (dropped; the prompt evaluated afresh)
    disk_restores: int = 0  # states restored as read from disk (files.py), not counted above


class KvStates:
    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.stats = StateStats()
        self._lock = threading.Lock()
        self._entries: LRUCache[tuple[str, Kind], KvState] = self._new_cache()
        self._aside = 0  # bytes of copies held outside the entries (hold_aside)

    def _new_cache(self) -> LRUCache[tuple[str, Kind], KvState]:
        states = self

        class _Cache(LRUCache[tuple[str, Kind], KvState]):
            def popitem(self) -> tuple[tuple[str, Kind], KvState]:
                item = super().popitem()
                states.stats.evictions += 1
                return item

        return _Cache(maxsize=max(self.max_bytes, 1), getsizeof=lambda state: state.nbytes)

    def resize(self, max_bytes: int) -> None:
        """A new bound; what no longer fits is evicted, least recently used first."""
        with self._lock:
            if max_bytes == self.max_bytes:
                return
            self.max_bytes = max_bytes
            old, self._entries = self._entries, self._new_cache()
            for key, state in old.items():
                if state.nbytes <= max_bytes:
                    self._entries[key] = state
                else:
                    self.stats.evictions += 1
            self._evict_for(0)

    @property
    def enabled(self) -> bool:
        return self.max_bytes > 0

    def _evict_for(self, nbytes: int) -> None:
        """Evict, least recently used first, until ``nbytes`` more fit beside what is held."""
        while self._entries and self._entries.currsize + self._aside + nbytes > self.max_bytes:
            self._entries.popitem()

    def make_room(self, nbytes: int) -> None:
        """Evict for a copy of ``nbytes`` about to be made, so that memory never holds more
        than the bound plus the one copy in the making."""
        with self._lock:
            self._evict_for(nbytes)

    def hold_aside(self, nbytes: int) -> None:
        """Count a copy the prompt cache keeps outside the cache against the bound until
        ``release_aside``."""
        with self._lock:
            self._aside += nbytes
            self._evict_for(0)

    def release_aside(self, nbytes: int) -> None:
        with self._lock:
            self._aside = max(0, self._aside - nbytes)

    def put(self, uri: str, kind: Kind, state: KvState, counted: bool = True) -> bool:
        """Keep ``state`` as the document's entry of that kind (replacing the old one);
        False when the cache is off or the state alone is larger than the bound.
        ``counted``: a save (a state read from disk is not)."""
        with self._lock:
            self._entries.pop((uri, kind), None)
            if not self.enabled or state.nbytes + self._aside > self.max_bytes:
                return False
            self._evict_for(state.nbytes)
            self._entries[(uri, kind)] = state
            self.stats.saves += counted
            return True

    def get(self, uri: str, kind: Kind, model: Hashable) -> KvState | None:
        """The document's entry, if it was made with this model (any other is dropped)."""
        with self._lock:
            state = self._entries.get((uri, kind))
            if state is not None and state.model != model:
                del self._entries[(uri, kind)]
                return None
            return state

    def take(self, uri: str, kind: Kind, model: Hashable) -> KvState | None:
        """The entry, removed from the cache."""
        state = self.get(uri, kind, model)
        if state is not None:
            self.drop(uri, kind)
        return state

    def drop(self, uri: str, kind: Kind | None = None) -> None:
        """Forget a document's entry (both kinds when ``kind`` is None)."""
        with self._lock:
            for each in ("live", "parked") if kind is None else (kind,):
                self._entries.pop((uri, each), None)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    @property
    def bytes_held(self) -> int:
        """The entries' bytes and the copies held aside."""
        with self._lock:
            return int(self._entries.currsize) + self._aside

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def as_json(self) -> dict[str, int]:
        with self._lock:
            return {
                "entries": len(self._entries),
                "bytesHeld": int(self._entries.currsize) + self._aside,
                "bytesAside": self._aside,
                "maxBytes": self.max_bytes,
                "restores": self.stats.restores,
                "misses": self.stats.misses,
                "evictions": self.stats.evictions,
                "saves": self.stats.saves,
                "failures": self.stats.failures,
                "diskRestores": self.stats.disk_restores,
            }
