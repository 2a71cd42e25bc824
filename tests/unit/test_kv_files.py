"""KV states on disk (local/kv/files.py): what is written reads back as it was, and anything else —
another model, a truncated file, an untitled buffer, a full bound — is never read back."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest

from lsp_infer.local.kv.files import KvStateFiles, default_directory
from lsp_infer.local.kv.states import KvState

URI = "file:///work/a.py"
MODEL = ("model.gguf", (4096, 2))


def state(tokens: tuple[int, ...] = (1, 2, 3), data: bytes = b"kv-bytes" * 4) -> KvState:
    return KvState(tokens, data, MODEL)


def files(directory: Path, max_bytes: int = 2**20, key: object = ("0.3.36", MODEL)) -> KvStateFiles:
    return KvStateFiles(directory, max_bytes, key)


def written(store: KvStateFiles) -> None:
    assert store.flush(10)


def test_a_state_reads_back_as_written(tmp_path: Path) -> None:
    store = files(tmp_path)
    store.save_later(URI, state((7, 8, 151643), b"\x00\x01abc"))
    written(store)
    loaded = store.load(URI, MODEL)
    assert loaded is not None
    assert loaded.tokens == (7, 8, 151643) and bytes(loaded.data) == b"\x00\x01abc"
    assert loaded.model == MODEL and loaded.from_disk
    assert (store.writes, store.loads) == (1, 1)
    # Into a buffer of the caller's making (the backend's own mappings).
    into = store.load(URI, MODEL, lambda size: bytearray(size))
    assert into is not None and isinstance(into.data, bytearray)
    assert bytes(into.data) == b"\x00\x01abc"


def test_a_later_server_reads_it(tmp_path: Path) -> None:
    first = files(tmp_path)
    first.save_later(URI, state((4, 5)))
    written(first)
    assert (loaded := files(tmp_path).load(URI, MODEL)) is not None and loaded.tokens == (4, 5)


def test_files_are_the_users_alone(tmp_path: Path) -> None:
    store = files(tmp_path / "kv")
    store.save_later(URI, state())
    written(store)
    (path,) = (tmp_path / "kv").glob("*.kv")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "kv").stat().st_mode) == 0o700
    assert "a.py" not in path.name  # named by a hash, not the document's path


@pytest.mark.parametrize(
    "uri", ["untitled:Untitled-1", "vscode-notebook-cell:/a.ipynb#x", "inmemory://model/1"]
)
def test_only_file_documents_are_written(tmp_path: Path, uri: str) -> None:
    store = files(tmp_path)
    store.save_later(uri, state())
    written(store)
    assert list(tmp_path.iterdir()) == [] and store.load(uri, MODEL) is None


def test_off_writes_and_reads_nothing(tmp_path: Path) -> None:
    store = files(tmp_path)
    store.save_later(URI, state())
    written(store)
    store.max_bytes = 0  # model.stateDiskMb set to 0 while running
    assert store.load(URI, MODEL) is None
    store.save_later("file:///work/b.py", state())
    written(store)
    assert len(list(tmp_path.glob("*.kv"))) == 1


def test_another_model_or_build_never_reads_it(tmp_path: Path) -> None:
    store = files(tmp_path, key=("0.3.36", MODEL))
    store.save_later(URI, state())
    written(store)
    assert files(tmp_path, key=("0.3.37", MODEL)).load(URI, MODEL) is None
    assert files(tmp_path, key=("0.3.36", ("other.gguf", (4096, 2)))).load(URI, MODEL) is None
    assert store.load(URI, MODEL) is not None  # still there for its own model


def test_a_file_that_does_not_read_back_is_deleted(tmp_path: Path) -> None:
    store = files(tmp_path)
    store.save_later(URI, state(data=b"x" * 100))
    written(store)
    (path,) = tmp_path.glob("*.kv")
    path.write_bytes(path.read_bytes()[:-10])  # truncated (a crash while copying it, say)
    assert store.load(URI, MODEL) is None and not path.exists()
    store.save_later(URI, state(data=b"x" * 100))
    written(store)
    path.write_bytes(path.read_bytes() + b"more")  # longer than written
    assert store.load(URI, MODEL) is None and not path.exists()
    path.write_bytes(b"not a state at all\n")
    assert store.load(URI, MODEL) is None and not path.exists()
    path.write_bytes(b"lsp-infer kv state 1\n{not json\n")
    assert store.load(URI, MODEL) is None and not path.exists()
    key = json.dumps(store.key)
    for header in (
        "[1, 2]",  # JSON, but not a header
        f'{{"key": {key}}}',  # no sizes
        f'{{"key": {key}, "tokens": "3", "bytes": 4}}',
        f'{{"key": {key}, "tokens": -1, "bytes": 4}}',
        f'{{"key": {key}, "tokens": 1, "bytes": 1000000000000}}',  # read nothing by it
    ):
        path.write_bytes(b"lsp-infer kv state 1\n" + header.encode() + b"\n" + b"\0" * 8)
        assert store.load(URI, MODEL) is None and not path.exists(), header


def test_the_newest_state_of_a_document_wins(tmp_path: Path) -> None:
    store = files(tmp_path)
    for last in range(20):
        store.save_later(URI, state((1, 2, last)))
    written(store)
    assert (loaded := store.load(URI, MODEL)) is not None and loaded.tokens == (1, 2, 19)
    assert len(list(tmp_path.glob("*.kv"))) == 1 and not list(tmp_path.glob(".*.tmp"))


def test_the_least_recently_used_go_first_past_the_bound(tmp_path: Path) -> None:
    store = files(tmp_path)
    uris = [f"file:///work/{n}.py" for n in range(3)]
    store.save_later(uris[0], state())
    written(store)
    store.max_bytes = 3 * store._path(uris[0]).stat().st_size  # room for three files
    for index, uri in enumerate(uris):
        store.save_later(uri, state())
        written(store)
        path = store._path(uri)
        os.utime(path, (1000 + index, 1000 + index))  # written in this order, seconds apart
    assert store.load(uris[0], MODEL) is not None  # used now: the newest
    store.save_later("file:///work/new.py", state())
    written(store)
    assert store.load(uris[1], MODEL) is None  # the least recently used went
    assert all(store.load(u, MODEL) is not None for u in (uris[0], uris[2], "file:///work/new.py"))
    assert store.bytes_on_disk <= store.max_bytes


def test_a_directory_that_cannot_be_written_costs_nothing_but_the_file(tmp_path: Path) -> None:
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("")
    store = files(blocker / "kv")
    store.save_later(URI, state())
    written(store)
    assert store.writes == 0 and store.load(URI, MODEL) is None


def test_drop_deletes_the_file(tmp_path: Path) -> None:
    store = files(tmp_path)
    store.save_later(URI, state())
    written(store)
    store.drop(URI)
    assert store.load(URI, MODEL) is None and list(tmp_path.glob("*.kv")) == []


def test_the_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LSP_INFER_STATE_DIR", str(tmp_path))
    assert default_directory() == tmp_path
    monkeypatch.delenv("LSP_INFER_STATE_DIR")
    assert default_directory().name == "kv-states"


def test_a_closed_store_writes_nothing_and_raises_nothing(tmp_path: Path) -> None:
    store = files(tmp_path)
    store.close()
    store.save_later(URI, state())
    assert not store.flush(1) and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("cache_mb", "disk_mb", "files_there", "said", "problems"),
    [
        (256, 0, 0, ["up to 256 MB of RAM", "not kept on disk (model.stateDiskMb is 0)"], 0),
        # Files an earlier setting left are still worth a mention (and where they are).
        (256, 0, 2, ["not kept on disk (model.stateDiskMb is 0); 2 files"], 0),
        (256, 64, 2, ["up to 64 MB on disk (model.stateDiskMb): 2 files, "], 0),
        (0, 0, 0, ["note  not kept: model.stateCacheMb is 0"], 0),
        (0, 64, 0, ["FAIL  model.stateDiskMb is 64, but nothing is kept to write"], 1),
    ],
)
def test_doctor_says_where_states_are_kept(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    cache_mb: int,
    disk_mb: int,
    files_there: int,
    said: list[str],
    problems: int,
) -> None:
    from lsp_infer.config import ModelSettings
    from lsp_infer.doctor import Checks, _check_states

    monkeypatch.setenv("LSP_INFER_STATE_DIR", str(tmp_path))
    for index in range(files_there):
        (tmp_path / f"{index}.kv").write_bytes(b"x" * 2**19)
    lines: list[str] = []
    checks = Checks(lines.append)
    _check_states(checks, ModelSettings(state_cache_mb=cache_mb, state_disk_mb=disk_mb))
    output = "\n".join(lines)
    assert all(part in output for part in said), output
    assert checks.problems == problems
    if files_there:
        assert f"1.0 MB, in {tmp_path}" in output


def test_the_same_state_is_not_written_again(tmp_path: Path) -> None:
    store = files(tmp_path)
    store.save_later(URI, state((1, 2, 3)))
    written(store)
    store.save_later(URI, state((1, 2, 3)))  # switching away again without typing
    written(store)
    assert store.writes == 1
    store.save_later(URI, state((1, 2, 3, 4)))  # typed since: written
    written(store)
    store.save_later(URI, state((1, 2, 3)))  # back to what was there before: written too
    written(store)
    assert store.writes == 3
    assert (loaded := store.load(URI, MODEL)) is not None and loaded.tokens == (1, 2, 3)
    # Read back by a later server: leaving the file unchanged writes nothing either.
    later = files(tmp_path)
    assert later.load(URI, MODEL) is not None
    later.save_later(URI, state((1, 2, 3)))
    written(later)
    assert later.writes == 0
    # A file deleted (pruned, or by hand through drop) is written again.
    later.drop(URI)
    later.save_later(URI, state((1, 2, 3)))
    written(later)
    assert later.writes == 1 and later.load(URI, MODEL) is not None


def test_a_state_pruned_is_written_again(tmp_path: Path) -> None:
    store = files(tmp_path)
    store.save_later(URI, state())
    written(store)
    store.max_bytes = store._path(URI).stat().st_size  # room for one file
    store.save_later("file:///work/b.py", state())
    written(store)
    assert store.load(URI, MODEL) is None  # pruned for b.py
    store.save_later(URI, state())
    written(store)
    assert store.load(URI, MODEL) is not None


def test_an_excluded_document_is_never_written_nor_read(tmp_path: Path) -> None:
    other = "file:///work/b.py"
    withheld: frozenset[str] = frozenset()
    store = KvStateFiles(tmp_path, 2**20, ("0.3.36", MODEL), lambda: withheld)
    store.save_later(URI, state((1, 2)))
    store.save_later(other, state((3, 4)))
    written(store)
    # Excluded since (the tier names it): its file goes, whether it is read or written next.
    withheld = frozenset({URI})
    assert store.load(URI, MODEL) is None
    assert len(list(tmp_path.glob("*.kv"))) == 1
    store.save_later(URI, state((1, 2, 5)))
    written(store)
    assert len(list(tmp_path.glob("*.kv"))) == 1 and store.writes == 2
    # The other document is untouched; and once no longer excluded, written again.
    assert (kept := store.load(other, MODEL)) is not None and kept.tokens == (3, 4)
    withheld = frozenset()
    store.save_later(URI, state((1, 2, 6)))
    written(store)
    assert (back := store.load(URI, MODEL)) is not None and back.tokens == (1, 2, 6)


def test_a_document_dropped_while_its_file_is_written_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = files(tmp_path)
    writing, go_on = threading.Event(), threading.Event()
    write = store._write

    def slow_write(uri: str, kept: KvState) -> None:
        writing.set()
        assert go_on.wait(10)
        write(uri, kept)

    monkeypatch.setattr(store, "_write", slow_write)
    store.save_later(URI, state())
    assert writing.wait(10)
    store.drop(URI)  # the file is not there yet: the write in progress must not bring it back
    go_on.set()
    written(store)
    assert not list(tmp_path.glob("*.kv"))
    assert store.load(URI, MODEL) is None
