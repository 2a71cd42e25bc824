"""Whole-file refactors on the team server: prompts, batching, validation, minimal edits.

A refactor is computed for one exact version of a file and is only ever applied to that
version. If the document changes while its refactor is in flight, the HTTP request is closed
(vLLM then aborts the generation) and nothing is applied. Results are validated before
anything is applied: a whole file (not cut off by max_tokens), code fences stripped, and, for
Python, code that parses.
"""

from __future__ import annotations

import ast
import asyncio
import difflib
import logging
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from lsp_infer.config import TeamSettings
from lsp_infer.editor import Replacement
from lsp_infer.team.client import TeamAnswer, TeamClient, TeamError
from lsp_infer.text import SHORT_CHARS_PER_TOKEN, line_offsets, split_lines

log = logging.getLogger(__name__)

# The shared prefix of every refactor prompt: first, so the server's prefix cache hits for
# every file in a batch (the instruction comes next, the file last).
SYSTEM_PROMPT = (
    "You are a careful senior engineer. You rewrite one source file as instructed. "
    "Answer with the complete rewritten file in one fenced code block and nothing else. "
    "Keep everything the instruction does not ask to change exactly as it is."
)

PRESET_INSTRUCTIONS = (
    "Add type hints to every function",
    "Add docstrings to public functions and classes",
    "Modernize the syntax for the current language version",
    "Fix obvious bugs without changing behaviour otherwise",
)

Status = Literal["applied", "unchanged", "stale", "cancelled", "failed", "refused"]


@dataclass(frozen=True)
class RefactorJob:
    uri: str
    version: int | None  # None: a file that is not open (read from disk)
    path: str  # workspace-relative, for the prompt and messages
    language_id: str
    text: str
    instruction: str

    @property
    def key(self) -> tuple[str, int | None, str, str]:
        """Identical jobs (same file version, same instruction) share one request."""
        return (self.uri, self.version, self.instruction, self.text if self.version is None else "")


@dataclass
class Outcome:
    uri: str
    status: Status
    message: str
    new_text: str | None = None
    seconds: float = 0.0


class InvalidResult(Exception):
    pass


# -- prompts (pure) ----------------------------------------------------------------------


def _fence_language(language_id: str, path: str) -> str:
    if language_id:
        return language_id
    return path.rsplit(".", 1)[-1] if "." in path else ""


def chat_messages(job: RefactorJob) -> list[dict[str, str]]:
    fence = _fence_language(job.language_id, job.path)
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {
            "role": "user",
            "content": f"Instruction: {job.instruction}\n\nFile: {job.path}\n```{fence}\n"
            f"{job.text}\n```",
        },
    ]


def completion_prompt(job: RefactorJob) -> str:
    """A plain prompt for /v1/completions (no chat template): same order, same prefix."""
    fence = _fence_language(job.language_id, job.path)
    return (
        f"{SYSTEM_PROMPT}\n\nInstruction: {job.instruction}\n\nFile: {job.path}\n```{fence}\n"
        f"{job.text}\n```\n\nRewritten file:\n```{fence}\n"
    )


# -- validation (pure) -------------------------------------------------------------------

_FENCE = re.compile(r"^```[^\n`]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)


def extract_code(answer: str, *, opened: bool = False) -> str:
    """The file inside the answer's code fence (the longest one, if several).

    ``opened``: the prompt already opened the fence (completions API), so the answer is the
    code up to the closing fence.
    """
    if opened:
        code, _, _ = answer.partition("\n```")
        return code if code.endswith("\n") or not code else code + "\n"
    blocks: list[str] = _FENCE.findall(answer)
    if blocks:
        return max(blocks, key=len)
    if answer.lstrip().startswith("```"):
        raise InvalidResult("the answer opens a code block but never closes it (cut short?)")
    return answer


def validate(job: RefactorJob, answer: TeamAnswer, *, opened: bool = False) -> str:
    """The new file text, or InvalidResult saying why it must not be applied."""
    if answer.finish_reason == "length":
        raise InvalidResult(
            "the answer was cut off at team.maxTokens before the file ended; raise team.maxTokens"
        )
    code = extract_code(answer.text, opened=opened)
    if not code.strip():
        raise InvalidResult("the answer contains no code")
    if job.text.endswith("\n") and not code.endswith("\n"):
        code += "\n"
    if job.language_id == "python" or job.path.endswith(".py"):
        try:
            ast.parse(code)
        except SyntaxError as exc:
            raise InvalidResult(
                f"the rewritten file is not valid Python (line {exc.lineno}: {exc.msg})"
            ) from None
    return code


# -- edits (pure) ------------------------------------------------------------------------


@dataclass(frozen=True)
class LineEdit:
    """Replace lines [start, end) of the old text with ``text``."""

    start: int
    end: int
    text: str


def line_edits(old: str, new: str) -> list[LineEdit]:
    """Minimal line-range edits turning ``old`` into ``new`` (so editors keep folds, marks and
    cursors outside the changed lines)."""
    old_lines = split_lines(old)
    new_lines = split_lines(new)
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    return [
        LineEdit(i1, i2, "".join(new_lines[j1:j2]))
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


def replacements(old: str, new: str) -> list[Replacement]:
    """The minimal line edits turning ``old`` into ``new``, as offsets into ``old``."""
    offsets = line_offsets(old)
    return [
        Replacement(offsets[edit.start], offsets[edit.end], edit.text)
        for edit in line_edits(old, new)
    ]


def apply_line_edits(old: str, edits: list[LineEdit]) -> str:
    lines = split_lines(old)
    for edit in sorted(edits, key=lambda e: e.start, reverse=True):
        lines[edit.start : edit.end] = [edit.text] if edit.text else []
    return "".join(lines)


def answer_budget(job: RefactorJob, settings: TeamSettings) -> int:
    """max_tokens for a rewrite: room for the file to grow by half (counted in short tokens,
    so a long file is not cut off), within team.maxTokens — asking for more than the
    server's context allows is an error."""
    grown_chars = len(job.text) * 3 // 2
    return min(settings.max_tokens, grown_chars // SHORT_CHARS_PER_TOKEN + 256)


# -- running jobs --------------------------------------------------------------------------

Progress = Callable[[int, int, str], None]  # (done, total, message)

# Prompts per /v1/completions request on the completions API (vLLM batches them inside).
LIST_CHUNK = 16


class Refactorer:
    """Sends refactor jobs to the team server and validates the answers.

    Never changes a document: applying is the caller's business (it knows the editor's
    versions). ``document_changed`` cancels that document's job in flight.
    """

    def __init__(self, client_factory: Callable[[TeamSettings], TeamClient] = TeamClient) -> None:
        self._client_factory = client_factory
        self._client: TeamClient | None = None
        self._client_settings: TeamSettings | None = None
        self._closing: asyncio.Future[None] | None = None
        self._running: dict[tuple[str, int | None, str, str], asyncio.Task[Outcome]] = {}
        self._by_uri: dict[str, set[asyncio.Task[Outcome]]] = {}

    def client(self, settings: TeamSettings) -> TeamClient:
        """One client (one connection pool) per team settings."""
        if self._client is None or self._client_settings != settings:
            if self._client is not None:
                self._closing = asyncio.ensure_future(self._client.aclose())
            self._client = self._client_factory(settings)
            self._client_settings = settings
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def run_batch(
        self,
        jobs: list[RefactorJob],
        settings: TeamSettings,
        progress: Progress | None = None,
        cancel: asyncio.Event | None = None,
    ) -> list[Outcome]:
        """One outcome per job, in order. Jobs run concurrently (at most team.maxConcurrency
        requests); identical jobs, also ones already running for another batch, share one
        request. Setting ``cancel`` closes every request of the batch."""
        client = self.client(settings)
        report = progress or (lambda _done, _total, _message: None)
        if settings.api == "completions" and len(jobs) > 1:
            tasks = self._list_prompt_tasks(client, jobs, settings)
        else:
            semaphore = asyncio.Semaphore(settings.max_concurrency)
            tasks = [self._task(job, self._one(client, job, settings, semaphore)) for job in jobs]
        stopper = asyncio.ensure_future(_cancel_when(cancel, tasks)) if cancel else None
        outcomes: list[Outcome] = []
        report(0, len(jobs), f"0/{len(jobs)} files")
        try:
            for job, task in zip(jobs, tasks, strict=True):
                try:
                    outcome = await asyncio.shield(task)
                except asyncio.CancelledError:
                    if not task.cancelled():
                        raise  # this batch itself was cancelled (e.g. shutdown)
                    outcome = Outcome(
                        job.uri, "cancelled",
                        f"{job.path}: cancelled (the document changed, or you cancelled); "
                        "nothing was applied",
                    )  # fmt: skip
                outcomes.append(outcome)
                report(len(outcomes), len(jobs), f"{len(outcomes)}/{len(jobs)} files")
        except asyncio.CancelledError:
            for task in tasks:
                task.cancel()
            raise
        finally:
            if stopper:
                stopper.cancel()
        return outcomes

    def _task(self, job: RefactorJob, work: Awaitable[Outcome]) -> asyncio.Task[Outcome]:
        existing = self._running.get(job.key)
        if existing is not None and not existing.done():
            asyncio.ensure_future(work).cancel()  # not needed: an identical job is running
            return existing
        task = asyncio.ensure_future(work)
        self._running[job.key] = task
        self._by_uri.setdefault(job.uri, set()).add(task)

        def forget(done: asyncio.Task[Outcome]) -> None:
            if self._running.get(job.key) is done:
                del self._running[job.key]
            self._by_uri.get(job.uri, set()).discard(done)

        task.add_done_callback(forget)
        return task

    async def _one(
        self,
        client: TeamClient,
        job: RefactorJob,
        settings: TeamSettings,
        semaphore: asyncio.Semaphore,
    ) -> Outcome:
        async with semaphore:
            started = time.monotonic()
            max_tokens = answer_budget(job, settings)
            try:
                if settings.api == "chat":
                    answer = await client.chat(chat_messages(job), max_tokens, priority=10)
                    new_text = validate(job, answer)
                else:
                    prompt = completion_prompt(job)
                    answer = await client.completion(prompt, max_tokens, priority=10)
                    new_text = validate(job, answer, opened=True)
            except (TeamError, InvalidResult) as exc:
                return Outcome(job.uri, "failed", f"{job.path}: {exc}")
            return _result(job, new_text, time.monotonic() - started)

    def _list_prompt_tasks(
        self, client: TeamClient, jobs: list[RefactorJob], settings: TeamSettings
    ) -> list[asyncio.Task[Outcome]]:
        """Completions API: the batch's prompts go in lists of up to LIST_CHUNK per request."""
        unique = list({job.key: job for job in jobs}.values())
        requests: dict[tuple[str, int | None, str, str], asyncio.Future[list[TeamAnswer]]] = {}
        for start in range(0, len(unique), LIST_CHUNK):
            chunk = unique[start : start + LIST_CHUNK]
            prompts = [completion_prompt(job) for job in chunk]
            budget = max(answer_budget(job, settings) for job in chunk)
            shared = asyncio.ensure_future(client.completion_batch(prompts, budget, priority=10))
            shared.add_done_callback(_retrieve)
            for job in chunk:
                requests[job.key] = shared
        started = time.monotonic()

        async def outcome_of(job: RefactorJob) -> Outcome:
            shared = requests[job.key]
            chunk_keys = [key for key, fut in requests.items() if fut is shared]
            try:
                answers = await asyncio.shield(shared)
                new_text = validate(job, answers[chunk_keys.index(job.key)], opened=True)
            except (TeamError, InvalidResult) as exc:
                return Outcome(job.uri, "failed", f"{job.path}: {exc}")
            return _result(job, new_text, time.monotonic() - started)

        return [self._task(job, outcome_of(job)) for job in jobs]

    def document_changed(self, uri: str) -> None:
        """The document moved on: its refactor in flight is stale. Close the request."""
        for task in list(self._by_uri.get(uri, ())):
            task.cancel()


async def _cancel_when(event: asyncio.Event, tasks: list[asyncio.Task[Outcome]]) -> None:
    await event.wait()
    for task in tasks:
        task.cancel()


def _retrieve(future: asyncio.Future[list[TeamAnswer]]) -> None:
    if not future.cancelled():
        future.exception()  # retrieved: every job that needed it reports it


def _result(job: RefactorJob, new_text: str, seconds: float) -> Outcome:
    if new_text == job.text:
        return Outcome(job.uri, "unchanged", f"{job.path}: no changes needed", seconds=seconds)
    return Outcome(job.uri, "applied", f"{job.path}: rewritten", new_text=new_text, seconds=seconds)
