"""Team refactors for the editor: commands, the code action's offer, progress, versioned edits.

``lspInfer.refactorFile {"uri", "instruction"}`` and ``lspInfer.refactorFiles {"uris",
"instruction"}`` queue jobs; jobs arriving within ``team.batchWindowMs`` go out as one batch
with one cancellable progress. Each result is applied only to the exact document version it
was computed from (for a file that is not open: only if the file on disk is unchanged). The
command answers with one outcome per file. No LSP types: the editor facade does the talking.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsp_infer.config import TeamSettings
from lsp_infer.editor import EditNotApplied, Editor, Level
from lsp_infer.privacy import NotAllowed
from lsp_infer.session import Session
from lsp_infer.team.refactor import (
    PRESET_INSTRUCTIONS,
    Outcome,
    Refactorer,
    RefactorJob,
    replacements,
)

log = logging.getLogger(__name__)

# Files read from disk for a batch are capped: a refactor rewrites whole files.
MAX_FILE_BYTES = 1_000_000
OFFER_TITLE = "Refactor file with team model…"


@dataclass(frozen=True)
class RefactorOffer:
    """The "refactor this file" code action: its title, the refactorFile command's argument,
    and why it is disabled (None: enabled)."""

    title: str
    arguments: dict[str, Any]
    disabled: str | None = None


@dataclass
class _Pending:
    jobs: list[RefactorJob]
    answer: asyncio.Future[list[Outcome]] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class TeamCommands:
    def __init__(self, session: Session, editor: Editor) -> None:
        self._session = session
        self._editor = editor
        self.settings = TeamSettings()
        self.refactorer = Refactorer()
        self._pending: list[_Pending] = []
        self._flush_task: asyncio.Task[None] | None = None

    # -- entry points -------------------------------------------------------------------

    async def refactor(self, uris: list[str], instruction: str | None) -> dict[str, Any]:
        """Refactor ``uris`` as instructed (asking the user when there is no instruction);
        one outcome per file."""
        team = self.settings
        if not team.url:
            message = (
                "lsp-infer: no team server is configured. Set team.url (or "
                "LSP_INFER_TEAM_URL) to the team's vLLM server, e.g. http://gpu-box:8000/v1"
            )
            self._editor.show(message, "error")
            return answer([Outcome(uri, "refused", message) for uri in uris])
        instruction = (instruction or "").strip() or await self._editor.ask(
            "lsp-infer: how should the team model rewrite the file?", PRESET_INSTRUCTIONS
        )
        if not instruction:
            return answer([Outcome(uri, "cancelled", "no instruction chosen") for uri in uris])
        jobs, refused = self._jobs(uris, instruction)
        for outcome in refused:
            self._editor.show(f"lsp-infer: not refactored: {outcome.message}", "warning")
        outcomes: list[Outcome] = []
        if jobs:
            pending = _Pending(jobs)
            self._pending.append(pending)
            if self._flush_task is None or self._flush_task.done():
                self._flush_task = asyncio.ensure_future(self._flush_after(team.batch_window_ms))
            outcomes = await pending.answer
        return answer(refused + outcomes)

    def offer(self, uri: str) -> RefactorOffer:
        """The code action for ``uri`` (disabled, with the reason, when it cannot work)."""
        disabled = None
        if not self.settings.url:
            disabled = "no team server configured (team.url)"
        elif not self._session.policy().allowed(uri):
            disabled = "this file is excluded from the team server (or outside the workspace)"
        return RefactorOffer(OFFER_TITLE, {"uri": uri, "instruction": None}, disabled)

    def document_changed(self, uri: str) -> None:
        self.refactorer.document_changed(uri)

    # -- jobs -------------------------------------------------------------------------------

    def _jobs(self, uris: list[str], instruction: str) -> tuple[list[RefactorJob], list[Outcome]]:
        policy = self._session.policy()
        jobs: list[RefactorJob] = []
        refused: list[Outcome] = []
        for uri in uris:
            try:
                path = policy.check(uri)
            except NotAllowed as exc:
                refused.append(Outcome(uri, "refused", str(exc)))
                continue
            display = policy.display_path(path)
            snapshot = self._session.documents.find(uri)
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
        progress = await self._editor.progress(
            "Team refactor", f"{len(jobs)} file(s)", cancellable=True
        )

        def report(done: int, total: int, message: str) -> None:
            progress.report(done * 100 // max(total, 1), message)

        try:
            outcomes = await self.refactorer.run_batch(
                jobs, self.settings, report, progress.cancelled
            )
            outcomes = [
                await self._apply(job, outcome) for job, outcome in zip(jobs, outcomes, strict=True)
            ]
        finally:
            progress.end("done")
        self._summarize(outcomes)
        return outcomes

    async def _apply(self, job: RefactorJob, outcome: Outcome) -> Outcome:
        """Apply an outcome to exactly the version it was computed from, or not at all."""
        if outcome.status != "applied" or outcome.new_text is None:
            return outcome
        stale = self._staleness(job)
        if stale is not None:
            return Outcome(job.uri, "stale", f"{job.path}: {stale}; nothing applied")
        try:
            await self._editor.apply_edit(
                job.uri, job.version, job.text, replacements(job.text, outcome.new_text),
                f"Team refactor: {job.instruction}",
            )  # fmt: skip
        except EditNotApplied as exc:
            return Outcome(job.uri, "failed", f"{job.path}: {exc}")
        return outcome

    def _staleness(self, job: RefactorJob) -> str | None:
        """Why the document is no longer what the job was computed from (None: it is)."""
        if job.version is not None:
            if not self._session.is_current(job.uri, job.version):
                return "changed while it was being refactored"
            return None
        try:
            on_disk = Path(self._session.policy().check(job.uri)).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError, NotAllowed) as exc:
            return f"cannot re-read it ({exc})"
        return "changed on disk meanwhile" if on_disk != job.text else None

    def _summarize(self, outcomes: list[Outcome]) -> None:
        applied = [o for o in outcomes if o.status in ("applied", "unchanged")]
        problems = [o for o in outcomes if o.status not in ("applied", "unchanged")]
        if not problems:
            self._editor.show(f"lsp-infer: team refactor done: {len(applied)} file(s)", "info")
            return
        details = "; ".join(o.message for o in problems[:5])
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        level: Level = "warning" if applied else "error"
        self._editor.show(
            f"lsp-infer: team refactor: {len(applied)} done, {len(problems)} not applied: "
            f"{details}{more}",
            level,
        )


def answer(outcomes: list[Outcome]) -> dict[str, Any]:
    """A refactor command's result: one outcome per file."""
    return {
        "outcomes": [{"uri": o.uri, "status": o.status, "message": o.message} for o in outcomes]
    }
