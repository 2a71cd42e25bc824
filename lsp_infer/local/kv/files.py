"""Documents' evaluated prompts kept on disk, so that they outlive the server
(``model.stateDiskMb``; off by default).

An editor restarts its language servers many times a day (a window reloaded, the editor
quit). Without this, the first suggestion in every file afterwards is a cold start: a small
window at first, the whole prompt evaluated again behind it (seconds on a small CPU). With it,
a document's prompt as the server last kept it (states.py's ``live`` entry) is written to a
file of its own, and read back the first time a request for that document comes, in a later
server as in this one; the KV cache then restores it like any kept state, when it shares
enough of the request's prompt. A document whose text changed since costs nothing wrong: only
the tokens the prompt still shares are used (prompt_cache.py).

Only ``file:`` documents are written (an untitled buffer's text is not on disk, and should not
come to be because of us), and never one the exclusion rules match (privacy.py): the tier names
those it sees excluded (``PromptCache.withhold``), and their files are deleted instead of
written or read.
Files are named by a hash of the model key and the document's URI, readable by the user only,
written whole under a temporary name and renamed (two servers may share the directory), and
pruned, oldest used first, to the bound. A file that does not read back as written (truncated,
another model, another llama.cpp) is deleted. Writes happen on a thread of their own, never on
the model lane: a state is megabytes.
"""

from __future__ import annotations

import array
import contextlib
import hashlib
import json
import logging
import os
import tempfile
import threading
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, BinaryIO

import platformdirs

from lsp_infer.local.kv.states import KvState

log = logging.getLogger(__name__)

_MAGIC = b"lsp-infer kv state 1\n"
_SUFFIX = ".kv"
_TOKEN = "i"  # array type code of a token id (4 bytes)


def default_directory() -> Path:
    """Where the files go: ``LSP_INFER_STATE_DIR``, else the user cache's ``kv-states``."""
    configured = os.environ.get("LSP_INFER_STATE_DIR")
    if configured:
        return Path(configured)
    return Path(platformdirs.user_cache_dir("lsp-infer", appauthor=False)) / "kv-states"


def state_files(directory: Path) -> list[tuple[float, int, Path]]:
    """The state files in ``directory``: (last used, size, path)."""
    found = []
    for path in directory.glob("*" + _SUFFIX):
        try:
            status = path.stat()
        except OSError:  # pruned by another server meanwhile
            continue
        found.append((status.st_mtime, status.st_size, path))
    return found


def persistable(uri: str) -> bool:
    return uri.startswith("file:")


class KvStateFiles:
    def __init__(
        self,
        directory: Path,
        max_bytes: int,
        key: Hashable,
        withheld: Callable[[], frozenset[str]] = frozenset,
    ) -> None:
        self.directory = directory
        self.max_bytes = max_bytes
        # What a state depends on besides the document: the model, its settings and this
        # llama.cpp build (its state format); written into each file and compared on reading.
        self.key = repr(key)
        self.loads = 0  # states read back
        self.writes = 0  # states written
        self.bytes_on_disk = 0  # after the latest write's pruning
        self._lock = threading.Lock()
        self._pending: dict[str, KvState] = {}  # the newest state of each document to write
        # What each document's file holds, as a hash of its tokens: the same state is not
        # written again (switching between files without typing in them saves them each time).
        self._on_disk: dict[str, int] = {}
        self._writing: set[str] = set()  # the document whose file is being written
        self._drop_after_write: set[str] = set()  # dropped while its file was being written
        # The documents the exclusion rules match, as the prompt cache holds them (replaced
        # whole from the event loop, read here on other threads): never written or read,
        # their files deleted.
        self._withheld = withheld
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kv-files")

    def _path(self, uri: str) -> Path:
        name = hashlib.sha256(f"{self.key}\0{uri}".encode()).hexdigest()
        return self.directory / (name + _SUFFIX)

    # -- writing (on the writer thread) ------------------------------------------------

    def save_later(self, uri: str, state: KvState) -> None:
        """Write ``state`` as the document's file soon; a newer one queued for the same
        document before it is written replaces it."""
        if not persistable(uri) or not state.tokens or self.max_bytes <= 0:
            return
        if uri in self._withheld():  # excluded since its prompt was evaluated
            self.drop(uri)
            return
        with self._lock:
            written = uri not in self._writing and self._on_disk.get(uri) == hash(state.tokens)
            if written:
                self._pending.pop(uri, None)  # an older one queued must not replace it
                return
            self._pending[uri] = state
        try:
            self._writer.submit(self._write_pending, uri)
        except RuntimeError:  # closed (the model reloading): the state is not written
            with self._lock:
                self._pending.pop(uri, None)

    def _write_pending(self, uri: str) -> None:
        with self._lock:
            state = self._pending.pop(uri, None)
            if state is None:  # a newer state's task wrote it already
                return
            self._writing.add(uri)
            self._on_disk.pop(uri, None)  # the file is about to change
        try:
            self._write(uri, state)
            self.writes += 1
            with self._lock:
                self._on_disk[uri] = hash(state.tokens)
            self._prune()
        except OSError as exc:  # a full or read-only disk costs the speed-up, nothing else
            log.warning("could not keep a KV state on disk: %s", exc)
        finally:
            with self._lock:
                self._writing.discard(uri)
                dropped = uri in self._drop_after_write
                self._drop_after_write.discard(uri)
                if dropped:
                    self._on_disk.pop(uri, None)
            if dropped:  # the file renamed into place after drop() deleted the old one
                _delete(self._path(uri))

    def _write(self, uri: str, state: KvState) -> None:
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        header = json.dumps(
            {"key": self.key, "tokens": len(state.tokens), "bytes": state.nbytes}
        ).encode()
        fd, temporary = tempfile.mkstemp(dir=self.directory, prefix=".", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as file:  # mkstemp: readable by the user only
                file.write(_MAGIC + header + b"\n")
                file.write(array.array(_TOKEN, state.tokens).tobytes())
                file.write(memoryview(state.data).cast("B"))
            os.replace(temporary, self._path(uri))
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def _prune(self) -> None:
        """Delete the least recently used files until the rest fit the bound."""
        files = sorted(state_files(self.directory))
        total = sum(size for _, size, _ in files)
        with self._lock:
            ours = {self._path(uri): uri for uri in self._on_disk}
        for _, size, path in files:
            if total <= self.max_bytes:
                break
            _delete(path)
            total -= size
            if path in ours:  # gone: the same state is worth writing again
                with self._lock:
                    self._on_disk.pop(ours[path], None)
        self.bytes_on_disk = total

    def flush(self, timeout: float) -> bool:
        """Wait (up to ``timeout`` seconds) until what was queued is written."""
        try:
            done: Future[None] = self._writer.submit(lambda: None)
            done.result(timeout)
        except (TimeoutError, RuntimeError):  # RuntimeError: closed
            return False
        return True

    def close(self) -> None:
        self._writer.shutdown(wait=False, cancel_futures=True)

    # -- reading (on the model lane) ---------------------------------------------------

    def load(
        self, uri: str, model: Hashable, buffer: Callable[[int], Any] | None = None
    ) -> KvState | None:
        """The document's state as last written, or None (none, or not readable as written:
        then the file is deleted). ``buffer(size)`` makes the bytes' buffer (sequence.py's
        state_buffer); bytes when None."""
        if not persistable(uri) or self.max_bytes <= 0:
            return None
        if uri in self._withheld():
            self.drop(uri)
            return None
        path = self._path(uri)
        try:
            with path.open("rb") as file:
                state = self._read(file, model, buffer)
        except FileNotFoundError:
            state = None
        except (OSError, ValueError) as exc:
            state = None
            log.debug("a kept KV state file did not read back (%s): deleted", exc)
        if state is None:
            with self._lock:
                self._on_disk.pop(uri, None)  # not there (any more): worth writing again
            _delete(path)
            return None
        with contextlib.suppress(OSError):  # used: the last to be pruned
            os.utime(path)
        self.loads += 1
        with self._lock:
            self._on_disk[uri] = hash(state.tokens)
        return state

    def _read(
        self, file: BinaryIO, model: Hashable, buffer: Callable[[int], Any] | None
    ) -> KvState | None:
        if file.readline() != _MAGIC:
            return None
        header = json.loads(file.readline())
        if not isinstance(header, dict) or header.get("key") != self.key:
            return None
        count, size = header.get("tokens"), header.get("bytes")
        if not isinstance(count, int) or not isinstance(size, int) or min(count, size) < 0:
            return None
        tokens = array.array(_TOKEN)
        # The sizes must add up to the file's before anything is read by them.
        if file.tell() + count * tokens.itemsize + size != os.fstat(file.fileno()).st_size:
            return None
        raw = file.read(count * tokens.itemsize)
        if len(raw) != count * tokens.itemsize:
            return None
        tokens.frombytes(raw)
        data = file.read(size + 1)
        if len(data) != size:  # truncated, or longer than written
            return None
        if buffer is not None:
            copy = buffer(size)
            memoryview(copy).cast("B")[:] = data
            return KvState(tuple(tokens), copy, model, from_disk=True)
        return KvState(tuple(tokens), data, model, from_disk=True)

    def drop(self, uri: str) -> None:
        """Delete the document's file (its state did not restore, or the document is
        excluded), and any state of it not yet written."""
        with self._lock:
            self._pending.pop(uri, None)
            self._on_disk.pop(uri, None)
            if uri in self._writing:
                self._drop_after_write.add(uri)
        _delete(self._path(uri))

    def as_json(self) -> dict[str, int]:
        return {
            "maxBytes": self.max_bytes,
            "loads": self.loads,
            "writes": self.writes,
            "bytesOnDisk": self.bytes_on_disk,
        }


def _delete(path: Path) -> None:
    # Not there after all, or not ours to delete: nothing to do about it.
    with contextlib.suppress(OSError):
        path.unlink(missing_ok=True)
