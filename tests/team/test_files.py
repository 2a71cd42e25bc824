"""What a refactor reads, sends and edits: files opened meanwhile, CRLF line ends, sizes the
team server would refuse, and secrets deeper in the tree.

Each test here failed on the code before issue 14.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from pytest_lsp import LanguageClient

from .conftest import (
    TeamServer,
    apply_text_edits,
    change_file,
    marker,
    open_file,
    run_command,
    start,
)
from .test_concurrency import INSTRUCTION, REFACTOR_FILE, REFACTOR_FILES, ended, settings, source


def statuses(result: dict[str, Any]) -> list[str]:
    return [o["status"] for o in result["outcomes"]]


async def test_a_closed_file_opened_and_edited_meanwhile_is_not_edited(
    client: LanguageClient, team_server: TeamServer, tmp_path: Path
) -> None:
    await start(client, tmp_path, settings(team_server, mode="marked", maxConcurrency=2))
    quick, slow = marker(), marker()
    (tmp_path / "quick.py").write_text(source(quick))
    (tmp_path / "slow.py").write_text(source(slow) + "# SLOWMARK\n")
    uris = [(tmp_path / "quick.py").as_uri(), (tmp_path / "slow.py").as_uri()]
    command = asyncio.ensure_future(
        run_command(client, REFACTOR_FILES, {"uris": uris, "instruction": INSTRUCTION})
    )
    await team_server.wait_for("quick.py's answer", ended(quick, "DONE"))
    await asyncio.sleep(1)
    # The user opens quick.py (as it is on disk) and types in it while slow.py is running.
    text = (tmp_path / "quick.py").read_text()
    open_file(client, tmp_path / "quick.py", text, write=False)
    change_file(client, uris[0], text + "# mine\n", 2)
    result = await asyncio.wait_for(command, timeout=240)
    assert statuses(result)[1] == "applied", result
    events = client.editor.events  # type: ignore[attr-defined]
    opened = events.index(("open", uris[0], 1))
    assert not [e for e in events[opened:] if e[0] == "edit" and e[1] == uris[0]], events


async def test_crlf_files_open_and_closed_keep_their_line_ends(
    client: LanguageClient, team_server: TeamServer, tmp_path: Path
) -> None:
    await start(client, tmp_path, settings(team_server))
    open_text = source(marker()).replace("\n", "\r\n")
    closed_text = source(marker()).replace("\n", "\r\n")
    open_uri = open_file(client, tmp_path / "open.py", open_text)
    (tmp_path / "closed.py").write_bytes(closed_text.encode())
    closed_uri = (tmp_path / "closed.py").as_uri()
    result = await run_command(
        client, REFACTOR_FILES, {"uris": [open_uri, closed_uri], "instruction": INSTRUCTION}
    )
    assert statuses(result) == ["applied", "applied"], result
    editor = client.editor  # type: ignore[attr-defined]
    for uri, text in ((open_uri, open_text), (closed_uri, closed_text)):
        [change] = editor.edited(uri)
        for edit in change.edits:
            assert "\n" not in edit.new_text.replace("\r\n", ""), edit  # no bare LF inserted
        # Only the changed lines are touched: the def line stays outside every edit.
        assert all(edit.range.start.line > 0 for edit in change.edits), change.edits
        new_text = apply_text_edits(text, change.edits)
        assert "\n" not in new_text.replace("\r\n", "") and new_text != text


async def test_oversize_input_is_refused_before_upload(
    client: LanguageClient, team_server: TeamServer, tmp_path: Path
) -> None:
    await start(client, tmp_path, settings(team_server, maxModelLen=4096))
    big_name = marker()
    # About 30 KB: with its rewrite, far more than a 4096-token context.
    big = "".join(f"def {big_name}_{i}(a, b):\n    return a + b + {i}\n\n\n" for i in range(700))
    big_uri = open_file(client, tmp_path / "big.py", big)
    result = await run_command(client, REFACTOR_FILE, {"uri": big_uri, "instruction": "x"})
    [outcome] = result["outcomes"]
    assert outcome["status"] == "refused" and "context" in outcome["message"], outcome
    huge_uri = open_file(client, tmp_path / "huge.py", f"# {big_name}\n" + "x = 1\n" * 400_000)
    result = await run_command(client, REFACTOR_FILE, {"uri": huge_uri, "instruction": "x"})
    assert statuses(result) == ["refused"], result
    many = [(tmp_path / f"n{i}.py").as_uri() for i in range(1001)]
    result = await run_command(client, REFACTOR_FILES, {"uris": many, "instruction": "x"})
    assert set(statuses(result)) == {"refused"} and "at most" in result["outcomes"][0]["message"]
    await asyncio.sleep(0.5)
    assert team_server.with_marker(big_name) == []  # nothing of it left the machine


async def test_secrets_deeper_in_the_tree_and_in_other_cases_stay_home(
    client: LanguageClient, team_server: TeamServer, tmp_path: Path
) -> None:
    await start(client, tmp_path, settings(team_server))
    secret = marker()
    files = ["app/.kube/config", "svc/.docker/config.json", ".ENV", "deploy/Secrets.yaml"]
    uris = []
    for name in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        uris.append(open_file(client, tmp_path / name, f"token: {secret}\n"))
    result = await run_command(client, REFACTOR_FILES, {"uris": uris, "instruction": "x"})
    assert statuses(result) == ["refused"] * len(files), result
    await asyncio.sleep(0.5)
    assert secret not in team_server.requests_logged()
