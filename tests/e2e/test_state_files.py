"""KV states on disk with the real model (model.stateDiskMb): a server restarted answers its
first request in a file it saw before from the state on disk, with the text a fresh evaluation
gives; an edited file, a damaged state file and an untitled buffer never give a wrong answer
or a file they should not."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tests.e2e.test_switching import COMPARABLE
from tests.fuzz.raw_server import RawServer

STDLIB = Path(json.__file__).parent.parent
URI = "file:///tmp/lsp-infer-e2e/state-files/a.py"


def text_of(lines: int, module: str = "textwrap.py") -> str:
    source = (STDLIB / module).read_text(encoding="utf-8")
    return "\n".join(source.split("\n")[:lines]) + "\n"


def server(directory: Path, disk_mb: int) -> RawServer:
    started = RawServer(env={"LSP_INFER_STATE_DIR": str(directory)})
    started.initialize(
        {
            "completion": COMPARABLE,
            "model": {"stateDiskMb": disk_mb},
            "context": {"enabled": False},
        }
    )
    return started


def suggest(directory: Path, text: str, disk_mb: int = 64, uri: str = URI) -> tuple[Any, Any]:
    """One server's answer at the end of ``text``, and its stats; the server is then shut
    down (which writes what its cache holds)."""
    running = server(directory, disk_mb)
    try:
        running.open(uri, text)
        answer = running.wait(running.inline(uri, text.count("\n"), 0), timeout=300)
        stats = running.wait(running.request("lspInfer/stats", {}))["result"]
    finally:
        running.close()
    return [item["insertText"] for item in answer["result"]["items"]], stats


def test_a_restarted_server_answers_from_the_state_on_disk(tmp_path: Path) -> None:
    text = text_of(60)
    first, before = suggest(tmp_path, text)
    assert first  # a suggestion to compare, not two empty answers
    assert before["stateCache"]["diskRestores"] == 0
    assert len(list(tmp_path.glob("*.kv"))) == 1  # written at shutdown
    again, after = suggest(tmp_path, text)
    assert again == first
    assert after["stateCache"]["diskRestores"] == 1
    assert after["stateCache"]["disk"]["loads"] == 1
    assert after["stateCache"]["restores"] == 0  # the RAM counters keep their meaning
    # The whole prompt came from disk: only its last token was evaluated again.
    assert after["promptTokensEvaluated"] <= 2 < before["promptTokensEvaluated"]
    # Off: nothing read (nor written), the prompt evaluated afresh, the same answer.
    fresh, off = suggest(tmp_path, text, disk_mb=0)
    assert fresh == first and off["stateCache"]["diskRestores"] == 0
    assert off["promptTokensEvaluated"] == before["promptTokensEvaluated"]


def test_an_edited_file_uses_only_what_it_still_shares(tmp_path: Path) -> None:
    text = text_of(60)
    suggest(tmp_path, text)
    lines = text.split("\n")
    lines[45] = "    # a line edited while the server was not running"
    edited = "\n".join(lines)
    restored, stats = suggest(tmp_path, edited)
    fresh, _ = suggest(tmp_path / "elsewhere", edited, disk_mb=0)
    assert restored == fresh and restored
    assert stats["stateCache"]["diskRestores"] == 1  # the part before the edit
    assert stats["promptTokensEvaluated"] > 2


def test_a_damaged_state_file_is_deleted_and_the_prompt_evaluated(tmp_path: Path) -> None:
    text = text_of(40)
    first, _ = suggest(tmp_path, text)
    (path,) = tmp_path.glob("*.kv")
    path.write_bytes(path.read_bytes()[:-1000])
    again, stats = suggest(tmp_path, text)
    assert again == first
    assert stats["stateCache"]["diskRestores"] == 0 and stats["stateCache"]["failures"] == 0
    # Written anew at the shutdown, whole.
    (path,) = tmp_path.glob("*.kv")
    assert suggest(tmp_path, text)[1]["stateCache"]["diskRestores"] == 1


def test_closing_a_file_writes_it_and_untitled_buffers_never(tmp_path: Path) -> None:
    text = text_of(40)
    running = server(tmp_path, 64)
    try:
        untitled, scratch = "untitled:Untitled-1", text_of(30)
        running.open(untitled, scratch)
        running.wait(running.inline(untitled, scratch.count("\n"), 0), timeout=300)
        running.notify("textDocument/didClose", {"textDocument": {"uri": untitled}})
        running.open(URI, text)
        running.wait(running.inline(URI, text.count("\n"), 0), timeout=300)
        running.notify("textDocument/didClose", {"textDocument": {"uri": URI}})
        deadline = time.monotonic() + 30
        while not list(tmp_path.glob("*.kv")) and time.monotonic() < deadline:
            time.sleep(0.1)
        # The file's state, written on closing it (the server still runs); the untitled
        # buffer's, whose prompt the cache held first and handed over, never.
        assert len(list(tmp_path.glob("*.kv"))) == 1
    finally:
        running.close()
    assert len(list(tmp_path.glob("*.kv"))) == 1


def test_a_file_excluded_since_loses_its_state_on_disk(tmp_path: Path) -> None:
    """The exclusion rules change while the server runs (the setting, .lspinferignore): an
    excluded file's state file is deleted, and none is written for it again."""
    workspace, states = tmp_path / "ws", tmp_path / "states"
    workspace.mkdir()
    a, b, c = ((workspace / name).as_uri() for name in ("a.py", "b.py", "c.py"))
    options = {
        "completion": COMPARABLE,
        "model": {"stateDiskMb": 64},
        "context": {"enabled": False},
    }
    running = RawServer(env={"LSP_INFER_STATE_DIR": str(states)}, root=workspace)
    texts = {a: text_of(40), b: text_of(40, "shlex.py"), c: text_of(40, "glob.py")}

    def state_files_become(count: int) -> bool:
        deadline = time.monotonic() + 30
        while len(list(states.glob("*.kv"))) != count and time.monotonic() < deadline:
            time.sleep(0.1)
        return len(list(states.glob("*.kv"))) == count

    try:
        running.initialize(options)
        for uri in (a, b):  # a's prompt is written when the cache moves on to b
            running.open(uri, texts[uri])
            answer = running.wait(running.inline(uri, 40, 0), timeout=300)
            assert answer["result"]["items"]
        assert state_files_become(1)
        # The exclude setting now names a.py: its file goes at once.
        settings = {"lspInfer": {**options, "exclude": ["a.py"]}}
        running.notify("workspace/didChangeConfiguration", {"settings": settings})
        assert state_files_become(0)
        # .lspinferignore names b.py: moving on to c must not write b's prompt.
        (workspace / ".lspinferignore").write_text("b.py\n", encoding="utf-8")
        running.open(c, texts[c])
        running.wait(running.inline(c, 40, 0), timeout=300)
        for uri in (a, b):
            running.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        stats = running.wait(running.request("lspInfer/stats", {}))["result"]
        assert stats["stateCache"]["disk"]["writes"] == 1  # a's, before it was excluded
    finally:
        running.close()
    # c's prompt, written at shutdown; neither a's nor b's.
    assert len(list(states.glob("*.kv"))) == 1
