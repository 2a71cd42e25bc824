"""Team refactors at the protocol edge: commands, code action, progress, versioned edits.

``lspInfer.refactorFile {"uri", "instruction"}`` and ``lspInfer.refactorFiles {"uris",
"instruction"}`` queue jobs; jobs arriving within ``team.batchWindowMs`` go out as one batch
with one cancellable work-done progress. Each result is applied with ``workspace/applyEdit``
only to the exact document version it was computed from (for a file that is not open: only
if the file on disk is unchanged). The command answers with one outcome per file.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from lsp_infer.backends.openai_http import TeamCompletionBackend, TeamError
from lsp_infer.engine import CompletionEngine
from lsp_infer.positions import position_at
from lsp_infer.privacy import NotAllowed, Policy
from lsp_infer.refactor import (
    PRESET_INSTRUCTIONS,
    Outcome,
    Refactorer,
    RefactorJob,
    line_edits,
)
from lsp_infer.scheduling import CancelToken

if TYPE_CHECKING:
    from lsp_infer.server import LspInferServer

log = logging.getLogger(__name__)

REFACTOR_FILE = "lspInfer.refactorFile"
REFACTOR_FILES = "lspInfer.refactorFiles"
# Files read from disk for a batch are capped: a refactor rewrites whole files.
MAX_FILE_BYTES = 1_000_000


@dataclass
class _Pending:
    jobs: list[RefactorJob]
    answer: asyncio.Future[list[Outcome]] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class TeamCommands:
    def __init__(self, server: LspInferServer) -> None:
        self.server = server
        self.refactorer = Refactorer()
        self._pending: list[_Pending] = []
        self._flush_task: asyncio.Task[None] | None = None
        self._progress_cancel: dict[str, asyncio.Event] = {}
        self._team_unhealthy_until = 0.0

    # -- entry points -------------------------------------------------------------------

    async def refactor(self, uris: list[str], instruction: str | None) -> dict[str, Any]:
        team = self.server.settings.team
        if not team.url:
            message = (
                "lsp-infer: no team server is configured. Set team.url (or "
                "LSP_INFER_TEAM_URL) to the team's vLLM server, e.g. http://gpu-box:8000/v1"
            )
            self.server.show(message, types.MessageType.Error)
            return _answer([Outcome(uri, "refused", message) for uri in uris])
        instruction = (instruction or "").strip() or await self._ask_instruction()
        if not instruction:
            return _answer([Outcome(uri, "cancelled", "no instruction chosen") for uri in uris])
        jobs, refused = self._jobs(uris, instruction)
        for outcome in refused:
            self.server.show(
                f"lsp-infer: not refactored: {outcome.message}", types.MessageType.Warning
            )
        outcomes: list[Outcome] = []
        if jobs:
            pending = _Pending(jobs)
            self._pending.append(pending)
            if self._flush_task is None or self._flush_task.done():
                self._flush_task = asyncio.ensure_future(self._flush_after(team.batch_window_ms))
            outcomes = await pending.answer
        return _answer(refused + outcomes)

    def code_actions(self, uri: str) -> list[types.CodeAction]:
        action = types.CodeAction(
            title="Refactor file with team model…",
            kind=types.CodeActionKind.RefactorRewrite,
            command=types.Command(
                title="Refactor file with team model…",
                command=REFACTOR_FILE,
                arguments=[{"uri": uri, "instruction": None}],
            ),
        )
        if not self.server.settings.team.url:
            action.disabled = types.CodeActionDisabled(
                reason="no team server configured (team.url)"
            )
        elif not self.server.policy().allowed(uri):
            action.disabled = types.CodeActionDisabled(
                reason="this file is excluded from the team server (or outside the workspace)"
            )
        return [action]

    def document_changed(self, uri: str) -> None:
        self.refactorer.document_changed(uri)

    async def complete(self, uri: str, text: str, offset: int) -> str | None:
        """An explicitly invoked completion from the team model (team.completions), or None
        to fall back to the local model: not configured, excluded file, recently failing,
        too slow (team.completionTimeoutMs) or an error."""
        team = self.server.settings.team
        if not (team.completions and team.url) or time.monotonic() < self._team_unhealthy_until:
            return None
        if not self.server.policy().allowed(uri):
            return None  # excluded or outside the workspace: never sent
        backend = TeamCompletionBackend(self.refactorer.client(team), team.fim_template)
        job = CompletionEngine(backend).complete(
            text, offset, self.server.settings.completion, CancelToken()
        )
        try:
            suggestion = await asyncio.wait_for(job, timeout=team.completion_timeout_ms / 1000)
        except (TeamError, asyncio.TimeoutError) as exc:
            log.info("team completion unavailable, using the local model: %s", exc or "timeout")
            self._team_unhealthy_until = time.monotonic() + 60
            return None
        return suggestion.text or None

    def progress_cancelled(self, token: str) -> None:
        event = self._progress_cancel.get(token)
        if event is not None:
            event.set()

    # -- jobs -------------------------------------------------------------------------------

    def _jobs(self, uris: list[str], instruction: str) -> tuple[list[RefactorJob], list[Outcome]]:
        policy = self.server.policy()
        jobs: list[RefactorJob] = []
        refused: list[Outcome] = []
        for uri in uris:
            try:
                path = policy.check(uri)
            except NotAllowed as exc:
                refused.append(Outcome(uri, "refused", str(exc)))
                continue
            display = _display_path(path, policy)
            snapshot = self.server.documents.find(uri)
            if snapshot is not None:
                jobs.append(RefactorJob(uri, snapshot.version, display, snapshot.language_id,
                                        snapshot.text, instruction))  # fmt: skip
                continue
            try:
                if path.stat().st_size > MAX_FILE_BYTES:
                    raise NotAllowed(f"{display} is larger than {MAX_FILE_BYTES:,} bytes")
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError, NotAllowed) as exc:
                refused.append(Outcome(uri, "refused", f"cannot read {display}: {exc}"))
                continue
            jobs.append(RefactorJob(uri, None, display, "", text, instruction))
        return jobs, refused

    async def _ask_instruction(self) -> str | None:
        """No instruction given (e.g. the code action): offer the presets."""
        try:
            choice = await self.server.window_show_message_request_async(
                types.ShowMessageRequestParams(
                    type=types.MessageType.Info,
                    message="lsp-infer: how should the team model rewrite the file?",
                    actions=[types.MessageActionItem(title=title) for title in PRESET_INSTRUCTIONS],
                )
            )
        except JsonRpcException:
            return None
        return choice.title if choice else None

    # -- batches --------------------------------------------------------------------------

    async def _flush_after(self, window_ms: int) -> None:
        await asyncio.sleep(window_ms / 1000)
        batch, self._pending = self._pending, []
        jobs = [job for pending in batch for job in pending.jobs]
        try:
            outcomes = await self._run(jobs)
        except Exception as exc:  # one answer per caller, whatever happened
            log.exception("refactor batch failed")
            outcomes = [Outcome(job.uri, "failed", f"{job.path}: {exc}") for job in jobs]
        start = 0
        for pending in batch:
            pending.answer.set_result(outcomes[start : start + len(pending.jobs)])
            start += len(pending.jobs)

    async def _run(self, jobs: list[RefactorJob]) -> list[Outcome]:
        token, cancel = await self._begin_progress(len(jobs))

        def report(done: int, total: int, message: str) -> None:
            if token:
                self.server.work_done_progress.report(
                    token,
                    types.WorkDoneProgressReport(
                        message=message, percentage=done * 100 // max(total, 1)
                    ),
                )

        try:
            outcomes = await self.refactorer.run_batch(
                jobs, self.server.settings.team, report, cancel
            )
            outcomes = [
                await self._apply(job, outcome) for job, outcome in zip(jobs, outcomes, strict=True)
            ]
        finally:
            if token:
                self.server.work_done_progress.end(token, types.WorkDoneProgressEnd(message="done"))
                self._progress_cancel.pop(token, None)
                self.server.work_done_progress.tokens.pop(token, None)
        self._summarize(outcomes)
        return outcomes

    async def _begin_progress(self, count: int) -> tuple[str | None, asyncio.Event]:
        cancel = asyncio.Event()
        window = self.server.client_capabilities.window
        if not (window and window.work_done_progress):
            return None, cancel
        token = f"lsp-infer-refactor-{uuid.uuid4()}"
        try:
            await asyncio.wait_for(self.server.work_done_progress.create_async(token), timeout=5)
        except (asyncio.TimeoutError, JsonRpcException):
            return None, cancel
        self._progress_cancel[token] = cancel
        self.server.work_done_progress.begin(
            token,
            types.WorkDoneProgressBegin(
                title="Team refactor", message=f"{count} file(s)", cancellable=True, percentage=0
            ),
        )
        return token, cancel

    async def _apply(self, job: RefactorJob, outcome: Outcome) -> Outcome:
        """Apply an outcome to exactly the version it was computed from, or not at all."""
        if outcome.status != "applied" or outcome.new_text is None:
            return outcome
        encoding = self.server.encoding
        if job.version is not None:
            current = self.server.documents.find(job.uri)
            if current is None or current.version != job.version:
                return Outcome(
                    job.uri,
                    "stale",
                    f"{job.path}: changed while it was being refactored; nothing applied",
                )
        else:
            try:
                on_disk = Path(self.server.policy().check(job.uri)).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError, NotAllowed) as exc:
                return Outcome(
                    job.uri, "stale", f"{job.path}: cannot re-read it ({exc}); nothing applied"
                )
            if on_disk != job.text:
                return Outcome(
                    job.uri, "stale", f"{job.path}: changed on disk meanwhile; nothing applied"
                )
        edit = types.WorkspaceEdit(
            document_changes=[
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(
                        uri=job.uri, version=job.version
                    ),
                    edits=_text_edits(job.text, outcome.new_text, encoding),
                )
            ]
        )
        try:
            result = await self.server.workspace_apply_edit_async(
                types.ApplyWorkspaceEditParams(edit=edit, label=f"Team refactor: {job.instruction}")
            )
        except JsonRpcException as exc:
            return Outcome(
                job.uri, "failed", f"{job.path}: the editor did not apply the edit ({exc})"
            )
        if not result.applied:
            reason = result.failure_reason or "no reason given"
            return Outcome(job.uri, "failed", f"{job.path}: the editor refused the edit ({reason})")
        return outcome

    def _summarize(self, outcomes: list[Outcome]) -> None:
        applied = [o for o in outcomes if o.status in ("applied", "unchanged")]
        problems = [o for o in outcomes if o.status not in ("applied", "unchanged")]
        if not problems:
            self.server.show(
                f"lsp-infer: team refactor done: {len(applied)} file(s)", types.MessageType.Info
            )
            return
        details = "; ".join(o.message for o in problems[:5])
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        self.server.show(
            f"lsp-infer: team refactor: {len(applied)} done, {len(problems)} not applied: "
            f"{details}{more}",
            types.MessageType.Warning if applied else types.MessageType.Error,
        )


def _display_path(path: Path, policy: Policy) -> str:
    for root in policy.roots:
        if root in path.parents:
            return path.relative_to(root).as_posix()
    return path.name


def _text_edits(old: str, new: str, encoding: Any) -> list[types.TextEdit]:
    edits = []
    line_offsets = [0]
    for line in old.split("\n"):
        line_offsets.append(line_offsets[-1] + len(line) + 1)
    for edit in line_edits(old, new):
        start = min(line_offsets[edit.start], len(old))
        end = min(line_offsets[edit.end], len(old))
        start_pos = position_at(old, start, encoding)
        end_pos = position_at(old, end, encoding)
        edits.append(
            types.TextEdit(
                range=types.Range(
                    start=types.Position(line=start_pos[0], character=start_pos[1]),
                    end=types.Position(line=end_pos[0], character=end_pos[1]),
                ),
                new_text=edit.text,
            )
        )
    return edits


def _answer(outcomes: list[Outcome]) -> dict[str, Any]:
    return {
        "outcomes": [{"uri": o.uri, "status": o.status, "message": o.message} for o in outcomes]
    }


def command_arguments(arguments: Any, *, batch: bool) -> tuple[list[str], str | None]:
    """The (uris, instruction) of a refactor command's one argument, or InvalidParams."""
    if not isinstance(arguments, dict):
        raise JsonRpcInvalidParams(
            f'expected one argument {{"{"uris" if batch else "uri"}": ..., "instruction": ...}}'
        )
    instruction = arguments.get("instruction")
    if instruction is not None and not isinstance(instruction, str):
        raise JsonRpcInvalidParams("instruction must be a string")
    if batch:
        uris = arguments.get("uris")
        if not isinstance(uris, list) or not uris or not all(isinstance(u, str) for u in uris):
            raise JsonRpcInvalidParams("uris must be a non-empty list of strings")
        return list(dict.fromkeys(uris)), instruction
    uri = arguments.get("uri")
    if not isinstance(uri, str):
        raise JsonRpcInvalidParams("uri must be a string")
    return [uri], instruction
