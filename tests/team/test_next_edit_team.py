"""Next edits' like changes from the team's model (``nextEdit.team``), through the real
lsp-infer server and a real OpenAI-compatible server behind the fault proxy: asked over
/v1/completions with each token's log-probability and the stream closed once the line has
ended; the local model where the team cannot answer; never a file kept from the team."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.e2e.test_next_edit import AT, FIX, HASHES
from tests.helpers import plain

from .conftest import TeamServer, marker, open_file, start, start_raw_request, stats
from .test_concurrency import ended, sent, settings

LINE = 5  # md5's return, below the marker's comment line
# The like change the local 0.5B is sure of (tests/e2e/test_next_edit.py): sha256's call.
EXPECTED = [{
    "range": {"start": {"line": 9, "character": 27}, "end": {"line": 9, "character": 27}},
    "text": FIX,
}]  # fmt: skip


async def fix_md5(client: LanguageClient, path: Path, local: bool = False) -> dict[str, Any]:
    """Open the file (a marker in its first line, for the proxy's log), paste the fix into
    md5's call as one edit, and ask for the next edit after it. ``local``: once the local
    model has answered a completion there (it is loaded)."""
    uri = open_file(client, path, f"# {path.stem}\n{HASHES}")
    if local:
        kind = types.InlineCompletionTriggerKind.Automatic
        await client.text_document_inline_completion_async(
            types.InlineCompletionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=LINE, character=4),
                context=types.InlineCompletionContext(trigger_kind=kind),
            )
        )
    at = types.Position(line=LINE, character=AT)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangePartial(types.Range(at, at), FIX)],
        )
    )
    _, answer = start_raw_request(client, "lspInfer/nextEdit", {
        "textDocument": {"uri": uri, "version": 2},
        "position": {"line": LINE, "character": AT + len(FIX)},
    })  # fmt: skip
    return plain(await answer)


async def test_the_teams_model_offers_the_like_change(
    client: LanguageClient, team_server: TeamServer, tmp_path: Path
) -> None:
    # The stand-in shares two cores with the local model's load: no give-up in this test.
    team = settings(team_server, completionTimeoutMs=60000)
    await start(client, tmp_path, team, nextEdit={"team": True})
    name = marker()
    answer = await fix_md5(client, tmp_path / f"{name}.py")
    assert answer["kind"] == "analogy" and answer["edits"] == EXPECTED, answer
    asked = await team_server.wait_for("the team's answer", ended(name))
    request = next(entry for entry in asked if name in entry.body)
    assert request.path == "completions" and json.loads(request.body)["logprobs"] == 1
    # Closed once the line had ended: the server decodes no more than the line.
    assert request.end == "GONE", request
    counts = (await stats(client))["nextEdit"]["model"]
    assert counts["team"] == 1 and counts["asked"] == 1 and counts["unavailable"] == 0, counts


@pytest.mark.faults
async def test_the_local_model_answers_where_the_team_cannot(
    client: LanguageClient, team_server: TeamServer, tmp_path: Path
) -> None:
    await start(client, tmp_path, settings(team_server, "500"), nextEdit={"team": True})
    name = marker()
    answer = await fix_md5(client, tmp_path / f"{name}.py", local=True)
    assert answer["kind"] == "analogy" and answer["edits"] == EXPECTED, answer
    assert team_server.with_marker(name), "the team was not asked first"
    counts = (await stats(client))["nextEdit"]["model"]
    assert counts["asked"] == 2 and counts["team"] == 1 and counts["unavailable"] == 1, counts


async def test_a_file_kept_from_the_team_is_never_sent(
    client: LanguageClient, team_server: TeamServer, tmp_path: Path
) -> None:
    await start(client, tmp_path, settings(team_server), nextEdit={"team": True},
                exclude=["private_*.py"])  # fmt: skip
    name = marker()
    await fix_md5(client, tmp_path / f"private_{name}.py")
    kept = marker()  # a file that may go, asked after it: the proxy's log has it by then
    await fix_md5(client, tmp_path / f"{kept}.py")
    await team_server.wait_for("the allowed file's request", sent(kept))
    assert team_server.with_marker(name) == []


POINT = "class Point:\n    def __init__(self, x, y):\n        self.x = x\n        self.y = y\n"


@pytest.mark.faults
@pytest.mark.parametrize(
    ("mode", "team_format"), [("zeta", "zeta"), ("sweep", "sweep"), ("sweepstop", "sweep")]
)
async def test_a_trained_next_edit_model_rewrites_the_region_in_its_format(
    client: LanguageClient, team_server: TeamServer, tmp_path: Path, mode: str, team_format: str
) -> None:
    # The proxy answers as a Zeta or a Sweep model would (their weights cannot be fetched
    # here): the server's prompt, the stream, the region read back and the edit made of it are
    # the real ones. "sweepstop": the server stopped at Sweep's marker and left it out.
    await start(client, tmp_path, settings(team_server, mode),
                nextEdit={"team": True, "teamFormat": team_format})  # fmt: skip
    name = marker()
    uri = open_file(client, tmp_path / f"{name}.py", f"# {name}\n{POINT}")
    at = types.Position(line=2, character=POINT.split("\n")[1].index(", y)") + 3)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangePartial(types.Range(at, at), ", z")],
        )
    )
    _, answer = start_raw_request(client, "lspInfer/nextEdit", {
        "textDocument": {"uri": uri, "version": 2},
        "position": {"line": 2, "character": at.character + 3},
    })  # fmt: skip
    result = plain(await answer)
    assert result["kind"] == "region" and result["edits"] == [{
        "range": {"start": {"line": 5, "character": 0}, "end": {"line": 5, "character": 0}},
        "text": "        self.z = z\n",
    }], result  # fmt: skip
    request = next(entry for entry in team_server.with_marker(name))
    body = json.loads(request.body)
    prompt = body["prompt"]
    if team_format == "zeta":
        assert "<|editable_region_start|>" in prompt and 'User edited "' in prompt, prompt
        assert "y, z<|user_cursor_is_here|>):" in prompt
    else:  # the edit as a diff block, the window before it and now, the updated block open
        assert f"<|file_sep|>{name}.py.diff\noriginal:\n" in prompt, prompt
        assert "def __init__(self, x, y):" in prompt.split("<|file_sep|>original/")[1]
        assert "def __init__(self, x, y, z):" in prompt.split("<|file_sep|>current/")[1]
        assert prompt.endswith(f"<|file_sep|>updated/{name}.py\n"), prompt
        assert body["skip_special_tokens"] is False
