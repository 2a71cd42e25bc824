"""Property-based protocol tests over the real server and model (hypothesis).

Random documents and incremental edits in utf-16 positions (emoji and other astral
characters, CRLF and lone CR, tabs, deletions across lines), completion requests at valid and
invalid positions, cancels at random moments, unknown methods and malformed frames. After
every example: the process is alive, every request got exactly one answer, and the server's
copy of the document equals a reference model of the edits (the `debug` setting exposes it).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .raw_server import RawServer

# Reference model of LSP positions, written independently of lsp_infer.positions.
_BREAK = re.compile(r"\r\n|\r|\n")


def reference_position(text: str, offset: int) -> dict[str, int]:
    line_start = 0
    line = 0
    for match in _BREAK.finditer(text):
        if match.end() > offset:
            break
        line_start, line = match.end(), line + 1
    return {"line": line, "character": len(text[line_start:offset].encode("utf-16-le")) // 2}


ALPHABET = st.sampled_from(
    ["a", "b", "x", " ", "\t", "(", ")", ":", "é", "😀", "𝄞", "\n", "\r\n", "\r"]
)
TEXT = st.lists(ALPHABET, max_size=40).map("".join)
# Real code to open documents with: prompts long enough to be worth a saved KV state.
_STDLIB = Path(os.__file__).parent
CODE = [
    "\n".join((_STDLIB / name).read_text(encoding="utf-8").split("\n")[:50]) + "\n"
    for name in ("textwrap.py", "shlex.py", "glob.py", "fnmatch.py")
]


@st.composite
def edit(draw: st.DrawFn, text: str) -> tuple[int, int, str]:
    # Offsets never split a surrogate pair (Python strings have none) or a \r\n.
    cuts = [
        i
        for i in range(len(text) + 1)
        if not (0 < i < len(text) and text[i - 1] == "\r" and text[i] == "\n")
    ]
    start = draw(st.sampled_from(cuts))
    end = draw(st.sampled_from([c for c in cuts if c >= start]))
    return start, end, draw(TEXT)


@st.composite
def session(draw: st.DrawFn) -> tuple[str, list[tuple[str, object]]]:
    text = draw(TEXT)
    steps: list[tuple[str, object]] = []
    current = text
    for _ in range(draw(st.integers(1, 12))):
        kind = draw(
            st.sampled_from(["edit", "edit", "edit", "complete", "complete", "bad", "cancel"])
        )
        if kind == "edit":
            start, end, inserted = draw(edit(current))
            steps.append(("edit", (start, end, inserted, current)))
            current = current[:start] + inserted + current[end:]
        elif kind == "complete":
            line = draw(st.integers(0, current.count("\n") + 3))
            character = draw(st.integers(0, 60))
            steps.append(("complete", (line, character)))
        elif kind == "bad":
            steps.append(
                (
                    "bad",
                    draw(st.sampled_from(["json", "params", "unknown", "notification", "type"])),
                )
            )
        else:
            steps.append(("cancel", None))
    return text, steps


@pytest.fixture(scope="module")
def server() -> Iterator[RawServer]:
    raw = RawServer()
    # A tiny prompt and output keep the real model fast enough for many examples.
    raw.initialize(
        {"debug": True, "completion": {"maxTokens": 4, "contextTokens": 64, "precompute": False}}
    )
    yield raw
    assert raw.stray == [], f"non-LSP output on stdout: {raw.stray[:3]}"
    raw.close()


counter = iter(range(10**9))
# CI runs a small campaign; LSP_INFER_FUZZ_EXAMPLES=2000 runs the one RELIABILITY.md records.
EXAMPLES = int(os.environ.get("LSP_INFER_FUZZ_EXAMPLES", "40"))
# pytest-timeout's 300 s is per test, and a campaign is one test: a few seconds per example.
CAMPAIGN_TIMEOUT = pytest.mark.timeout(max(300, EXAMPLES * 5))


@CAMPAIGN_TIMEOUT
@settings(
    max_examples=EXAMPLES, deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)  # fmt: skip
@given(example=session())
def test_random_sessions(server: RawServer, example: tuple[str, list[tuple[str, object]]]) -> None:
    text, steps = example
    uri = f"file:///fuzz/doc{next(counter)}.py"
    version = 1
    server.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}},
    )
    sent: list[int] = []
    reference = text
    for kind, data in steps:
        if kind == "edit":
            start, end, inserted, before = data  # type: ignore[misc]
            version += 1
            span = {
                "start": reference_position(before, start),
                "end": reference_position(before, end),
            }
            server.notify(
                "textDocument/didChange",
                {
                    "textDocument": {"uri": uri, "version": version},
                    "contentChanges": [{"range": span, "text": inserted}],
                },
            )
            reference = before[:start] + inserted + before[end:]
        elif kind == "complete":
            line, character = data  # type: ignore[misc]
            sent.append(server.inline(uri, line, character))
        elif kind == "cancel" and sent:
            server.notify("$/cancelRequest", {"id": sent[-1]})
        elif data == "json":
            server.send_raw(b'{"jsonrpc": "2.0", "id": 99999999, "method": "textDocument/inline')
        elif data == "params":
            sent.append(server.request("textDocument/inlineCompletion", {"textDocument": 5}))
        elif data == "unknown":
            sent.append(server.request("lspInfer/noSuchMethod", {}))
        elif data == "notification":
            server.notify(
                "textDocument/didChange",
                {"textDocument": {"uri": uri}, "contentChanges": "garbage"},
            )
        else:
            sent.append(server.request("textDocument/completion", {"textDocument": {"uri": uri}}))
    for msg_id in sent:
        server.wait(msg_id)
    document = server.wait(server.request("lspInfer/debug/document", {"uri": uri}))
    assert document["result"]["text"] == reference
    assert document["result"]["version"] == version
    counts = server.answer_counts()
    assert all(counts[msg_id] == 1 for msg_id in sent), {i: counts[i] for i in sent}
    assert server.process.poll() is None
    server.notify("textDocument/didClose", {"textDocument": {"uri": uri}})


def test_oversized_frame_is_refused_and_the_server_goes_on(server: RawServer) -> None:
    # A header claiming 200 MB (over the 64 MB limit) followed by far fewer bytes, which the
    # server drops; then a normal request on a fresh frame must still be answered. The body
    # is sent in full so that the stream stays in step.
    claimed = 200 * 1024 * 1024
    server.send_raw(b" " * claimed, length=claimed)
    answer = server.wait(server.request("lspInfer/stats", {}), timeout=120)
    assert "result" in answer and server.process.poll() is None


# -- several documents: switches, closes and state-cache evictions -------------------------


@st.composite
def multi_session(draw: st.DrawFn) -> list[tuple[str, int, object]]:
    """Steps over documents 0-2: (kind, document, data). A document is opened by its first
    step (real code, then random text) and may be closed and opened again, and warmed
    (lspInfer/warm) at any place, one past its end included; every switch
    between documents moves the model's cache to another document's prompt (saving,
    restoring, evicting states). A pause waits for the last request's answer, as a user
    reading the suggestion does: without pauses every request is superseded by the next."""
    steps: list[tuple[str, int, object]] = []
    texts: dict[int, str] = {}
    for _ in range(draw(st.integers(2, 24))):
        doc = draw(st.integers(0, 2))
        if doc not in texts:
            texts[doc] = draw(st.sampled_from(CODE)) + draw(TEXT)
            steps.append(("open", doc, texts[doc]))
            continue
        kind = draw(
            st.sampled_from(
                ["edit", "edit", "complete", "complete", "pause", "close", "cancel", "warm"]
            )
        )
        if draw(st.integers(0, 19)) == 0:  # rare, as settings changes are: it drops states
            kind = "exclude"
        if kind == "edit":
            start, end, inserted = draw(edit(texts[doc]))
            steps.append(("edit", doc, (start, end, inserted, texts[doc])))
            texts[doc] = texts[doc][:start] + inserted + texts[doc][end:]
        elif kind == "complete":
            lines = texts[doc].count("\n")
            # Mostly at the end, where the previous prompt of the document is reusable.
            line = draw(st.one_of(st.just(lines), st.integers(0, lines + 1)))
            # Half of them wait for the answer (a pause): the model runs for this document.
            steps.append(("complete", doc, (line, draw(st.integers(0, 40)), draw(st.booleans()))))
        elif kind == "warm":  # the cursor rests (lspInfer/warm), anywhere, past the end too
            lines = texts[doc].count("\n")
            steps.append(("warm", doc, (draw(st.integers(0, lines + 1)), draw(st.integers(0, 40)))))
        elif kind == "pause":
            steps.append(("pause", doc, None))
        elif kind == "close":
            steps.append(("close", doc, None))
            del texts[doc]
        elif kind == "exclude":  # the exclude setting now names this document alone
            steps.append(("exclude", doc, None))
        else:
            steps.append(("cancel", doc, None))
    return steps


exclusions_pushed = [0]  # for the campaign's record
SWITCHING_OPTIONS: dict[str, Any] = {
    "debug": True, "model": {"stateCacheMb": 2, "stateDiskMb": 4},
    "completion": {"maxTokens": 4, "contextTokens": 128, "precompute": False},
}  # fmt: skip


@pytest.fixture(scope="module")
def switching_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawServer]:
    states = tmp_path_factory.mktemp("kv-states")
    raw = RawServer(env={"LSP_INFER_STATE_DIR": str(states)})
    # A state cache of 2 MB holds one of these prompts (about 140 tokens, 12 KB each): a
    # switch back restores it, one to a third document evicts it. The states also go to disk
    # (4 MB: a couple of them, pruned all the time), and a document closed and opened again
    # reads its own back.
    raw.initialize(SWITCHING_OPTIONS)
    yield raw
    assert raw.stray == [], f"non-LSP output on stdout: {raw.stray[:3]}"
    stats = raw.wait(raw.request("lspInfer/stats", {}))["result"]
    raw.close()
    on_disk = sum(path.stat().st_size for path in states.glob("*.kv"))
    assert on_disk <= 4 * 2**20, on_disk  # the bound held
    # A campaign: the cache was exercised, not just present (restores are rare: a few in
    # 2000 sessions, so a smaller run may have none).
    if EXAMPLES >= 1000:
        cache = stats["stateCache"]
        # RELIABILITY.md
        sys.stderr.write(
            f"state cache after the campaign: {cache}; warms {stats['warms']}; "
            f"exclude settings pushed {exclusions_pushed[0]}\n"
        )
        assert cache["restores"] > 0 and cache["evictions"] > 0, cache
        assert cache["disk"]["writes"] > 0 and cache["disk"]["loads"] > 0, cache


@CAMPAIGN_TIMEOUT
@settings(
    max_examples=EXAMPLES, deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)  # fmt: skip
@given(steps=multi_session())
def test_random_sessions_across_documents(
    switching_server: RawServer, steps: list[tuple[str, int, object]]
) -> None:
    server = switching_server
    session_id = next(counter)
    uris = {doc: f"file:///fuzz/s{session_id}_{doc}.py" for doc in range(3)}
    reference: dict[int, str] = {}
    versions: dict[int, int] = {}
    sent: list[int] = []
    for kind, doc, data in steps:
        uri = uris[doc]
        if kind == "open":
            reference[doc], versions[doc] = str(data), 1
            server.open(uri, reference[doc])
        elif kind == "edit":
            start, end, inserted, before = data  # type: ignore[misc]
            versions[doc] += 1
            at, to = reference_position(before, start), reference_position(before, end)
            server.change(uri, versions[doc], at, to, inserted)
            reference[doc] = before[:start] + inserted + before[end:]
        elif kind == "complete":
            line, character, pause = data  # type: ignore[misc]
            sent.append(server.inline(uri, line, character))
            if pause:
                server.wait(sent[-1])
        elif kind == "warm":
            line, character = data  # type: ignore[misc]
            position = {"line": line, "character": character}
            server.notify("lspInfer/warm", {"textDocument": {"uri": uri}, "position": position})
        elif kind == "close":
            server.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
            del reference[doc]
        elif kind == "exclude":  # its states go, in RAM and on disk; no more suggestions
            pushed = {**SWITCHING_OPTIONS, "exclude": [uri.rsplit("/", 1)[-1]]}
            server.notify("workspace/didChangeConfiguration", {"settings": {"lspInfer": pushed}})
            exclusions_pushed[0] += 1
        elif kind == "pause":
            if sent:
                server.wait(sent[-1])
        elif sent:
            server.notify("$/cancelRequest", {"id": sent[-1]})
    for msg_id in sent:
        server.wait(msg_id)
    counts = server.answer_counts()
    assert all(counts[msg_id] == 1 for msg_id in sent), {i: counts[i] for i in sent}
    for doc, text in reference.items():
        document = server.wait(server.request("lspInfer/debug/document", {"uri": uris[doc]}))
        assert document["result"]["text"] == text
        assert document["result"]["version"] == versions[doc]
        server.notify("textDocument/didClose", {"textDocument": {"uri": uris[doc]}})
    assert server.process.poll() is None
