"""Team refactors for the editor: commands, the code action's offer, progress, versioned edits.

``lspInfer.refactorFile {"uri", "instruction"}`` and ``lspInfer.refactorFiles {"uris",
"instruction"}`` answer with one outcome per file. How the commands of a team editor's day
meet:

* **Batches.** A command waits ``team.batchWindowMs`` for company; the commands that arrived
  in that window form a batch with one cancellable progress. The next command opens the next
  window, whether or not a batch is still running.
* **Works.** Each file of a batch is a work: its request, its validation and its edit. A work
  is shared by every command that asked for the same file version with the same instruction,
  in this batch or another, and applied once.
* **Cancels.** ``$/cancelRequest`` of a command detaches only that command from its works
  (the client gets RequestCancelled); the progress's cancel button detaches every command of
  its batch, which are answered "cancelled". A work nobody waits for any more is cancelled:
  its HTTP request is closed, so vLLM stops. An edit of the document cancels the file's works
  for everyone. An edit already sent to the editor is not taken back.
* **Edits** go only to the exact document version the refactor was computed from; for a file
  read from disk, only while it is unchanged on disk and, if the user opened it meanwhile,
  unchanged in the editor (the edit then names that version).

No LSP types: the editor facade does the talking.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsp_infer.config import TeamSettings
from lsp_infer.editor import EditNotApplied, Editor, Level
from lsp_infer.privacy import NotAllowed
from lsp_infer.session import Session
from lsp_infer.team.counters import RefactorCounters
from lsp_infer.team.refactor import (
    MAX_FILE_BYTES,
    PRESET_INSTRUCTIONS,
    Outcome,
    Refactorer,
    RefactorJob,
    replacements,
)

log = logging.getLogger(__name__)

MAX_FILES = 200  # per command: a refactor rewrites whole files
OFFER_TITLE = "Refactor file with team model…"


@dataclass(frozen=True)
class RefactorOffer:
    """The "refactor this file" code action: its title, the refactorFile command's argument,
    and why it is disabled (None: enabled)."""

    title: str
    arguments: dict[str, Any]
    disabled: str | None = None


class _Caller:
    """One command waiting for its files' outcomes."""

    def __init__(self, jobs: list[RefactorJob], on_outcome: Callable[[], None]) -> None:
        self.jobs = jobs
        self.outcomes: list[Outcome | None] = [None] * len(jobs)
        self.answer: asyncio.Future[list[Outcome]] = asyncio.get_running_loop().create_future()
        self.works: list[_Work] = []
        self.started = time.monotonic()
        self.on_outcome = on_outcome

    def deliver(self, index: int, outcome: Outcome) -> None:
        if self.answer.done() or self.outcomes[index] is not None:
            return
        self.outcomes[index] = outcome
        self.on_outcome()
        if all(o is not None for o in self.outcomes):
            self.answer.set_result([o for o in self.outcomes if o is not None])

    def leave(self, why: str) -> None:
        """Stop waiting: the files still pending are answered ``cancelled``."""
        for work in self.works:
            work.detach(self)
        for index, job in enumerate(self.jobs):
            message = f"{job.path}: cancelled ({why}); nothing was applied"
            self.deliver(index, Outcome(job.uri, "cancelled", message))


class _Work:
    """One file's request, validation and edit, shared by the callers that asked for it."""

    def __init__(self, job: RefactorJob, run: Callable[[_Work], Awaitable[Outcome]]) -> None:
        self.job = job
        self.callers: dict[_Caller, list[int]] = {}
        self.applying = False  # the edit went to the editor: no cancel takes it back
        self.ending = False  # cancelled: a new caller needs a new work
        self.why = "nobody waits for it any more"
        self.task = asyncio.ensure_future(run(self))
        self.task.add_done_callback(self._finished)

    def attach(self, caller: _Caller, index: int) -> None:
        self.callers.setdefault(caller, []).append(index)
        caller.works.append(self)

    def detach(self, caller: _Caller) -> None:
        self.callers.pop(caller, None)
        if not self.callers and not self.applying:
            self.ending = True
            self.task.cancel()

    def stop(self, why: str) -> None:
        if not self.applying:
            self.why = why
            self.ending = True
            self.task.cancel()

    def _finished(self, task: asyncio.Task[Outcome]) -> None:
        job = self.job
        if task.cancelled():
            outcome = Outcome(job.uri, "cancelled", f"{job.path}: cancelled ({self.why}); "
                              "nothing was applied")  # fmt: skip
        elif (error := task.exception()) is not None:
            log.error("refactor of %s failed", job.path, exc_info=error)
            outcome = Outcome(job.uri, "failed", f"{job.path}: unexpected error ({error!r})")
        else:
            outcome = task.result()
        for caller, indices in list(self.callers.items()):
            for index in indices:
                caller.deliver(index, outcome)


class TeamCommands:
    def __init__(
        self,
        session: Session,
        editor: Editor,
        refactorer: Refactorer,
        counters: RefactorCounters,
    ) -> None:
        self._session = session
        self._editor = editor
        self.refactorer = refactorer
        self.counters = counters
        self.settings = TeamSettings()
        self._window: list[_Caller] | None = None
        self._works: dict[tuple[str, int | None, str, str], _Work] = {}
        self._batches: set[asyncio.Task[None]] = set()

    # -- entry points -------------------------------------------------------------------

    async def refactor(self, uris: list[str], instruction: str | None) -> dict[str, Any]:
        """Refactor ``uris`` as instructed (asking the user when there is no instruction);
        one outcome per file, in the order of ``uris``."""
        team = self.settings
        self.counters.commands += 1
        self.counters.files += len(uris)
        started = time.monotonic()
        if not team.urls():
            message = (
                "lsp-infer: no team server is configured. Set team.url (or "
                "LSP_INFER_TEAM_URL) to the team's vLLM server, e.g. http://gpu-box:8000/v1"
            )
            self._editor.show(message, "error")
            return self._answer(uris, [Outcome(uri, "refused", message) for uri in uris], started)
        if len(uris) > MAX_FILES:
            message = f"{len(uris)} files in one command; at most {MAX_FILES}: split the list"
            return self._answer(uris, [Outcome(uri, "refused", message) for uri in uris], started)
        instruction = (instruction or "").strip() or await self._editor.ask(
            "lsp-infer: how should the team model rewrite the file?", PRESET_INSTRUCTIONS
        )
        if not instruction:
            return self._answer(
                uris, [Outcome(uri, "cancelled", "no instruction chosen") for uri in uris], started
            )
        jobs, refused = self._jobs(uris, instruction)
        for outcome in refused:
            self._editor.show(f"lsp-infer: not refactored: {outcome.message}", "warning")
        outcomes = refused + (await self._wait_for(jobs) if jobs else [])
        return self._answer(uris, outcomes, started)

    def offer(self, uri: str) -> RefactorOffer:
        """The code action for ``uri`` (disabled, with the reason, when it cannot work)."""
        disabled = None
        if not self.settings.urls():
            disabled = "no team server configured (team.url)"
        elif not self._session.policy().allowed(uri):
            disabled = "this file is excluded from the team server (or outside the workspace)"
        return RefactorOffer(OFFER_TITLE, {"uri": uri, "instruction": None}, disabled)

    def document_changed(self, uri: str) -> None:
        """The document moved on: its refactors in flight are stale. Close their requests."""
        for work in [w for w in self._works.values() if w.job.uri == uri]:
            work.stop("the document changed")

    async def shutdown(self) -> None:
        for task in list(self._batches):
            task.cancel()
        for work in list(self._works.values()):
            work.stop("the server is shutting down")

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
                text = _read(path, display)
            except (OSError, UnicodeDecodeError, NotAllowed) as exc:
                refused.append(Outcome(uri, "refused", f"cannot read {display}: {exc}"))
                continue
            jobs.append(RefactorJob(uri, None, display, "", text, instruction))
        return jobs, refused

    def _answer(self, uris: list[str], outcomes: list[Outcome], started: float) -> dict[str, Any]:
        by_uri = {o.uri: o for o in outcomes}
        ordered = [by_uri[uri] for uri in uris if uri in by_uri]
        elapsed_ms = (time.monotonic() - started) * 1000
        for outcome in ordered:
            self.counters.count(outcome.status, elapsed_ms)
        return answer(ordered)

    # -- batches --------------------------------------------------------------------------

    async def _wait_for(self, jobs: list[RefactorJob]) -> list[Outcome]:
        """Join the open batch window and wait for the files' outcomes. A cancel of this
        command ($/cancelRequest) leaves its works, and no other command's."""
        caller = _Caller(jobs, on_outcome=lambda: None)
        if self._window is None:
            self._window = []
            delay = self.settings.batch_window_ms / 1000
            asyncio.get_running_loop().call_later(delay, self._close_window)
        self._window.append(caller)
        try:
            return await asyncio.shield(caller.answer)
        except asyncio.CancelledError:
            if self._window is not None and caller in self._window:
                self._window.remove(caller)
            caller.leave("you cancelled it")
            self.counters.cancelled += len(jobs)
            raise

    def _close_window(self) -> None:
        callers, self._window = self._window or [], None
        callers = [c for c in callers if not c.answer.done()]
        if callers:
            task = asyncio.ensure_future(self._run_batch(callers))
            self._batches.add(task)
            task.add_done_callback(self._batches.discard)

    async def _run_batch(self, callers: list[_Caller]) -> None:
        changed = asyncio.Event()
        for caller in callers:
            caller.on_outcome = changed.set
            for index, job in enumerate(caller.jobs):
                self._work_for(job).attach(caller, index)
        total = sum(len(c.jobs) for c in callers)
        progress = await self._editor.progress(
            "Team refactor", f"{total} file(s)", cancellable=True
        )
        try:
            while not all(c.answer.done() for c in callers):
                if progress.cancelled.is_set():
                    for caller in callers:
                        caller.leave("you cancelled the batch")
                    break
                done = sum(o is not None for c in callers for o in c.outcomes)
                progress.report(done * 100 // max(total, 1), f"{done}/{total} files")
                changed.clear()
                await _first(changed.wait(), progress.cancelled.wait())
        finally:
            progress.end("done")
        self._summarize([o for c in callers if c.answer.done() for o in c.answer.result()])

    def _work_for(self, job: RefactorJob) -> _Work:
        """The running work for this job, or a new one (identical jobs share one)."""
        work = self._works.get(job.key)
        if work is None or work.task.done() or work.ending:
            work = self._works[job.key] = _Work(job, self._run_work)
            work.task.add_done_callback(lambda _: self._forget(work))
        return work

    def _forget(self, work: _Work) -> None:
        if self._works.get(work.job.key) is work:
            del self._works[work.job.key]

    async def _run_work(self, work: _Work) -> Outcome:
        job = work.job
        outcome = await self.refactorer.compute(job, self.settings)
        if outcome.status != "applied" or outcome.new_text is None:
            return outcome
        if not work.callers:
            raise asyncio.CancelledError  # everyone left while it was being computed
        work.applying = True
        return await self._apply(job, outcome)

    # -- edits ------------------------------------------------------------------------------

    async def _apply(self, job: RefactorJob, outcome: Outcome) -> Outcome:
        """Apply an outcome to exactly the text it was computed from, or not at all."""
        assert outcome.new_text is not None
        version, stale = self._target(job)
        if stale is not None:
            return Outcome(job.uri, "stale", f"{job.path}: {stale}; nothing applied")
        try:
            await self._editor.apply_edit(
                job.uri, version, job.text, replacements(job.text, outcome.new_text),
                f"Team refactor: {job.instruction}",
            )  # fmt: skip
        except EditNotApplied as exc:
            return Outcome(job.uri, "failed", f"{job.path}: {exc}")
        return outcome

    def _target(self, job: RefactorJob) -> tuple[int | None, str | None]:
        """The document version to edit (None: the file, not open), or why the document is no
        longer what the job was computed from."""
        snapshot = self._session.documents.find(job.uri)
        if job.version is not None:
            if snapshot is None or snapshot.version != job.version:
                return None, "changed (or closed) while it was being refactored"
            return job.version, None
        if snapshot is not None:  # read from disk, opened by the user meanwhile
            if snapshot.text != job.text:
                return None, "opened and edited in the editor while it was being refactored"
            return snapshot.version, None
        try:
            on_disk = _read(self._session.policy().check(job.uri), job.path)
        except (OSError, UnicodeDecodeError, NotAllowed) as exc:
            return None, f"cannot re-read it ({exc})"
        return None, ("changed on disk meanwhile" if on_disk != job.text else None)

    def _summarize(self, outcomes: list[Outcome]) -> None:
        if not outcomes:
            return
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


def _read(path: Path, display: str) -> str:
    """A file's text exactly as on disk (line ends kept), within the size limit."""
    if path.stat().st_size > MAX_FILE_BYTES:
        raise NotAllowed(f"{display} is larger than {MAX_FILE_BYTES:,} bytes")
    with open(path, encoding="utf-8", newline="") as file:
        return file.read()


async def _first(*waits: Awaitable[Any]) -> None:
    """Wait until the first of ``waits`` is done; cancel the others."""
    tasks = [asyncio.ensure_future(w) for w in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()


def answer(outcomes: list[Outcome]) -> dict[str, Any]:
    """A refactor command's result: one outcome per file."""
    return {
        "outcomes": [{"uri": o.uri, "status": o.status, "message": o.message} for o in outcomes]
    }
