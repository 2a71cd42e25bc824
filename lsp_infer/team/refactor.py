"""Whole-file refactors on the team server: prompts, sizes, validation, minimal edits.

A refactor is computed for one exact version of a file and is only ever applied to that
version (refactor_batches.py applies it). Before anything is sent, the file must fit: at most
MAX_FILE_BYTES, and with its rewrite within the model's context (team.maxModelLen, or the
server's max_model_len). Results are validated before anything is applied: a whole file (not
cut off by max_tokens), code fences stripped, and, for Python, code that parses.

Line ends: the model sees and writes "\n"; a file whose lines end in "\r\n" gets them back
on the answer, so only the lines the model changed differ.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import difflib
import logging
import re
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Literal

from lsp_infer.config import TeamSettings
from lsp_infer.editor import Replacement
from lsp_infer.team.http_client import Clients, TeamAnswer, TeamClient, TeamError
from lsp_infer.text import (
    SHORT_CHARS_PER_TOKEN,
    TYPICAL_CHARS_PER_TOKEN,
    line_offsets,
    split_lines,
)

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


# A refactor rewrites whole files: larger ones are refused before anything is sent.
MAX_FILE_BYTES = 1_000_000
# Chat templates add a few tokens around the messages.
TEMPLATE_TOKENS = 32


@dataclass(frozen=True)
class RefactorJob:
    uri: str
    version: int | None  # None: a file that is not open (read from disk)
    path: str  # workspace-relative, for the prompt and messages
    language_id: str
    text: str  # exactly as in the editor or on disk, line ends included
    instruction: str

    @property
    def key(self) -> tuple[str, int | None, str, str]:
        """Identical jobs (same file version, same instruction) share one request."""
        return (self.uri, self.version, self.instruction, self.text if self.version is None else "")

    @property
    def line_end(self) -> str:
        return line_end(self.text)

    @property
    def model_text(self) -> str:
        """The text as the model sees it: "\n" line ends."""
        return self.text.replace("\r\n", "\n")


def line_end(text: str) -> str:
    """ "\r\n" when most of the text's lines end so, else "\n"."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf * 2 >= text.count("\n") else "\n"


class TooLarge(Exception):
    """The file cannot be refactored on the team server; the message says why."""


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
            f"{job.model_text}\n```",
        },
    ]


def completion_prompt(job: RefactorJob) -> str:
    """A plain prompt for /v1/completions (no chat template): same order, same prefix."""
    fence = _fence_language(job.language_id, job.path)
    return (
        f"{SYSTEM_PROMPT}\n\nInstruction: {job.instruction}\n\nFile: {job.path}\n```{fence}\n"
        f"{job.model_text}\n```\n\nRewritten file:\n```{fence}\n"
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
    """The new file text, with the file's own line ends, or InvalidResult saying why it must
    not be applied."""
    if answer.finish_reason == "length":
        raise InvalidResult(
            "the answer was cut off at team.maxTokens before the file ended; raise team.maxTokens"
        )
    code = extract_code(answer.text.replace("\r\n", "\n"), opened=opened)
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
    return code.replace("\n", job.line_end) if job.line_end != "\n" else code


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
    grown_chars = len(job.model_text) * 3 // 2
    return min(settings.max_tokens, grown_chars // SHORT_CHARS_PER_TOKEN + 256)


def fit(job: RefactorJob, prompt_chars: int, settings: TeamSettings, limit: int | None) -> int:
    """max_tokens for ``job`` within the model's context ``limit`` (None: unknown), or
    TooLarge when the prompt and a rewrite as long as the file cannot both fit.

    Without a tokenizer the counts are guesses: the refusal uses typical token lengths (a
    file is refused only when it surely does not fit), max_tokens the short ones (so prompt
    plus max_tokens stays within the context, which vLLM checks), unless that leaves less
    room than the file needs."""
    budget = answer_budget(job, settings)
    if len(job.text.encode("utf-8", "surrogatepass")) > MAX_FILE_BYTES:
        raise TooLarge(f"{job.path} is larger than {MAX_FILE_BYTES:,} bytes")
    if limit is None:
        return budget
    prompt = prompt_chars // TYPICAL_CHARS_PER_TOKEN + TEMPLATE_TOKENS
    rewrite = len(job.model_text) // TYPICAL_CHARS_PER_TOKEN + TEMPLATE_TOKENS
    if prompt + rewrite > limit:
        raise TooLarge(
            f"{job.path} is too large for the team model's context: the file and its rewrite "
            f"need about {prompt + rewrite:,} tokens, the server allows {limit:,} "
            "(max_model_len); split the file, or serve the model with a longer context"
        )
    safe_room = limit - prompt_chars // SHORT_CHARS_PER_TOKEN - TEMPLATE_TOKENS
    return max(1, min(budget, safe_room if safe_room >= rewrite else limit - prompt))


# -- running jobs --------------------------------------------------------------------------


class Slots:
    """At most ``limit`` holders at once (the limit may change from one call to the next)."""

    def __init__(self) -> None:
        self.active = 0
        self._waiting: deque[asyncio.Future[None]] = deque()

    @contextlib.asynccontextmanager
    async def take(self, limit: int) -> AsyncIterator[None]:
        while self.active >= limit:
            turn = asyncio.get_running_loop().create_future()
            self._waiting.append(turn)
            try:
                await turn
            except asyncio.CancelledError:
                if turn in self._waiting:
                    self._waiting.remove(turn)
                elif turn.done() and not turn.cancelled():
                    self._wake()  # woken, but leaving: pass the turn on
                raise
        self.active += 1
        try:
            yield
        finally:
            self.active -= 1
            self._wake()

    def _wake(self) -> None:
        while self._waiting:
            turn = self._waiting.popleft()
            if not turn.done():
                turn.set_result(None)
                return


class Refactorer:
    """Computes refactors on the team server: size check, request, validation.

    Never changes a document: applying is the caller's business (it knows the editor's
    versions). At most team.maxConcurrency refactor requests are in flight at once, across
    batches; cancelling a job's task closes its request (vLLM aborts the generation).
    """

    def __init__(self, clients: Clients | None = None) -> None:
        self.clients = clients or Clients()
        self.slots = Slots()

    async def compute(self, job: RefactorJob, settings: TeamSettings) -> Outcome:
        """The job's outcome: ``applied`` (with the new text, not yet applied), ``unchanged``,
        ``refused`` (too large) or ``failed`` (the message says why)."""
        started = time.monotonic()
        async with self.slots.take(settings.max_concurrency):
            try:
                client = self.clients.get(settings)
            except TeamError as exc:
                return Outcome(job.uri, "failed", f"{job.path}: {exc}")
            async with client.lease():
                try:
                    new_text = await self._ask(client, job, settings)
                except TooLarge as exc:
                    return Outcome(job.uri, "refused", str(exc))
                except (TeamError, InvalidResult) as exc:
                    return Outcome(job.uri, "failed", f"{job.path}: {exc}")
                except Exception as exc:  # one file's surprise must not fail the others
                    log.exception("refactor of %s failed", job.path)
                    return Outcome(
                        job.uri, "failed", f"{job.path}: unexpected error ({type(exc).__name__})"
                    )
        return _result(job, new_text, time.monotonic() - started)

    async def _ask(self, client: TeamClient, job: RefactorJob, settings: TeamSettings) -> str:
        if settings.api == "chat":
            messages = chat_messages(job)
            chars = sum(len(m["content"]) for m in messages)
            max_tokens = fit(job, chars, settings, await client.context_limit())
            return validate(job, await client.chat(messages, max_tokens, priority=10))
        prompt = completion_prompt(job)
        max_tokens = fit(job, len(prompt), settings, await client.context_limit())
        answer = await client.completion(prompt, max_tokens, priority=10)
        return validate(job, answer, opened=True)

    async def run_batch(self, jobs: list[RefactorJob], settings: TeamSettings) -> list[Outcome]:
        """Every job's outcome, in order (identical jobs share one request)."""
        unique = {job.key: job for job in jobs}
        results = await asyncio.gather(*(self.compute(job, settings) for job in unique.values()))
        by_key = dict(zip(unique, results, strict=True))
        return [by_key[job.key] for job in jobs]

    async def aclose(self) -> None:
        await self.clients.aclose()


def _result(job: RefactorJob, new_text: str, seconds: float) -> Outcome:
    if new_text == job.text:
        return Outcome(job.uri, "unchanged", f"{job.path}: no changes needed", seconds=seconds)
    return Outcome(job.uri, "applied", f"{job.path}: rewritten", new_text=new_text, seconds=seconds)
