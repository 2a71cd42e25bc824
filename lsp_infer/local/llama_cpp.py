"""The in-process llama.cpp backend (llama-cpp-python), run on the model lane.

One ``Llama`` context, one KV cache, touched only from the lane's thread. Each
request reuses the KV state of the longest token prefix it shares with the
previous one (so a keystroke evaluates only what changed), decodes greedily, and
checks its cancel token between tokens — and, through llama.cpp's abort callback,
inside prompt evaluation too.
"""

from __future__ import annotations

import asyncio
import codecs
import ctypes
import logging
import os
import time
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from lsp_infer.config import ModelSettings
from lsp_infer.core.backend import BackendUnavailable, CompletionJob, Generation, StopReason
from lsp_infer.core.cancel import Cancelled, CancelToken
from lsp_infer.core.prompts import (
    TEMPLATES,
    FimTemplate,
    Order,
    PrefixText,
    Prompt,
    Special,
    detect_template,
    with_repository,
)
from lsp_infer.core.window import fit_window
from lsp_infer.local.lane import ModelLane
from lsp_infer.models import ModelError, Progress, ResolvedModel, resolve_model

log = logging.getLogger(__name__)

# Room kept free in the context beyond prompt + max_tokens.
_CONTEXT_MARGIN = 8
# The prompt's prefix starts on a line number divisible by this, so it stays put (and its
# KV cache valid) for that many typed lines instead of sliding on every one. Measured with
# bench/keystrokes.py: see BENCHMARKS.md.
PREFIX_ANCHOR_LINES = 8
# A keep_cache job that would drop fewer cached tokens than this does not copy the cache first
# (nor does it switch to a parked cache that has fewer more of its tokens than this).
_KEEP_AT_LEAST = 32
# keep_cache jobs evaluate their prompt in batches this small: 3 % slower than 256 here (85 vs
# 88 tokens/s on 2 cores), but a stop loses at most one batch, under a second of work.
_BACKGROUND_BATCH = 64

LoadState = Literal["not loaded", "loading", "ready", "failed"]


def default_threads() -> int:
    try:
        available = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        available = os.cpu_count() or 1
    return max(1, min(available, 8))


@dataclass(frozen=True)
class LoadedModel:
    resolved: ResolvedModel
    name: str
    architecture: str
    template: FimTemplate
    order: Order
    n_ctx: int
    n_threads: int
    load_seconds: float


@dataclass(frozen=True)
class KvSnapshot:
    """The KV cache of the model's one sequence, copied out, and the tokens it holds."""

    tokens: list[int]
    data: Any  # ctypes byte array from llama_state_seq_get_data


def _common_prefix(a: Any, b: list[int]) -> int:
    n = min(len(a), len(b))
    if n == 0:
        return 0
    diff = np.flatnonzero(np.asarray(a[:n]) != np.asarray(b[:n]))
    return int(diff[0]) if diff.size else n


def _order(setting: str, template: FimTemplate) -> Order:
    for order in ("psm", "spm", "spmv"):
        if setting == order:
            return order
    return template.order


def align_to_typed_space(raw: str, typed: str) -> str:
    """The output without the whitespace the user already typed (left out of the prompt).

    The model's leading whitespace covers what was typed: drop that much. Less (or other)
    whitespace than was typed: keep the user's, drop the model's."""
    if not typed:
        return raw
    lead = len(raw) - len(raw.lstrip(" \t"))
    if raw[:lead].startswith(typed):
        return raw[len(typed) :]
    return raw[lead:]


class LlamaCppBackend:
    """Completions from a GGUF model in this process."""

    name = "llama.cpp"

    def __init__(self, lane: ModelLane) -> None:
        self.lane = lane
        self.state: LoadState = "not loaded"
        self.error: str | None = None
        self.loaded: LoadedModel | None = None
        self._settings: ModelSettings | None = None
        self._llm: Any = None
        self._vocab: Any = None
        self._stop_ids: frozenset[int] = frozenset()
        self._special_ids: dict[str, int] = {}
        # The request whose work is on the lane now; read by llama.cpp's abort callback.
        self._active: CancelToken | None = None
        self._abort_callback: Any = None  # keep a reference: llama.cpp holds a raw pointer
        self._pieces: list[bytes] | None = None  # each token's text, for token healing
        self._candidates: dict[bytes, np.ndarray[Any, np.dtype[np.int64]]] = {}
        # The part of a keep_cache job's prompt evaluated before it was stopped, to carry on
        # from when it runs again (at the next pause) instead of starting over.
        self._parked: KvSnapshot | None = None

    # -- loading (on the lane) ------------------------------------------------------

    def start_load(
        self, settings: ModelSettings, progress: Progress | None = None
    ) -> asyncio.Future[None]:
        """Queue a (re)load on the lane; requests queued after it wait for it."""
        return self.lane.submit(self.load_blocking, settings, progress)

    def load_blocking(self, settings: ModelSettings, progress: Progress | None = None) -> None:
        """(Re)load the model for these settings; no-op if they did not change."""
        if self.state == "ready" and settings == self._settings:
            return
        self.state, self.error = "loading", None
        self._close()
        try:
            self.loaded = self._load(settings, progress)
        except (ModelError, ValueError, RuntimeError, OSError) as exc:
            self.state, self.error = "failed", str(exc)
            self._settings = settings
            log.error("model not loaded: %s", exc)
            return
        self._settings = settings
        self.state = "ready"
        log.info(
            "model ready: %s (%s, template %s, n_ctx %d, %d threads) in %.2fs",
            self.loaded.name,
            self.loaded.resolved.path,
            self.loaded.template.name,
            self.loaded.n_ctx,
            self.loaded.n_threads,
            self.loaded.load_seconds,
        )

    def _load(self, settings: ModelSettings, progress: Progress | None) -> LoadedModel:
        from llama_cpp import Llama  # imported here: it loads a shared library

        started = time.monotonic()
        resolved = resolve_model(settings.path, settings.sha256, progress)
        threads = settings.n_threads or default_threads()
        llm = Llama(
            model_path=str(resolved.path),
            n_ctx=settings.n_ctx,
            n_batch=settings.n_batch,
            n_ubatch=settings.n_batch,
            n_threads=threads,
            n_threads_batch=threads,
            logits_all=False,
            verbose=False,
        )
        self._llm = llm
        import llama_cpp

        self._vocab = llama_cpp.llama_model_get_vocab(llm.model)
        metadata: dict[str, str] = dict(llm.metadata or {})
        name = metadata.get("general.name", resolved.path.name)
        template = self._choose_template(settings.fim_template, name)
        self._stop_ids = self._find_stop_ids(template)
        self._install_abort_callback()
        return LoadedModel(
            resolved=resolved,
            name=name,
            architecture=metadata.get("general.architecture", "?"),
            template=template,
            order=_order(settings.fim_order, template),
            n_ctx=llm.n_ctx(),
            n_threads=threads,
            load_seconds=time.monotonic() - started,
        )

    def _choose_template(self, setting: str, model_name: str) -> FimTemplate:
        if setting != "auto":
            template = TEMPLATES[setting]
            missing = [m for m in template.markers if not self._has_special(m)]
            if missing:
                raise ModelError(
                    f"model.fimTemplate is {setting!r} but the model has no {', '.join(missing)} "
                    'token(s); use "auto" or a template this model was trained with'
                )
            return template
        detected = detect_template(model_name, self._has_special)
        if detected is None:
            raise ModelError(
                f"{model_name} has no fill-in-the-middle tokens this server knows "
                "(Qwen2.5-Coder, StarCoder, CodeLlama, DeepSeek-Coder, Codestral, CodeGemma); "
                "use a code model with FIM support, or set model.fimTemplate"
            )
        return detected

    def _has_special(self, text: str) -> bool:
        return self._special_id(text) is not None

    def _special_id(self, text: str) -> int | None:
        if text in self._special_ids:
            return self._special_ids[text]
        ids = self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        if len(ids) != 1:
            return None
        if self._llm.detokenize(ids, special=True).decode("utf-8", "replace") != text:
            return None
        self._special_ids[text] = ids[0]
        return int(ids[0])

    def _find_stop_ids(self, template: FimTemplate) -> frozenset[int]:
        ids = {self._special_id(marker) for marker in (*template.stop, *template.markers)}
        return frozenset(i for i in ids if i is not None)

    def _install_abort_callback(self) -> None:
        import llama_cpp

        def should_abort(_data: Any) -> bool:
            token = self._active
            return token is not None and token.cancelled

        self._abort_callback = llama_cpp.ggml_abort_callback(should_abort)
        llama_cpp.llama_set_abort_callback(self._llm.ctx, self._abort_callback, None)

    def _close(self) -> None:
        if self._llm is not None:
            self._llm.close()
        self._llm = None
        self.loaded = None
        self._special_ids = {}
        self._pieces = None
        self._candidates = {}
        self._parked = None

    def close(self) -> None:
        self.lane.run_blocking(self._close)

    # -- tokens ---------------------------------------------------------------------

    def count_tokens(self, text: str) -> int:
        if not text:
            return 0
        return len(self._tokenize_text(text))

    def _tokenize_text(self, text: str) -> list[int]:
        # Plain text never parses special tokens: code cannot inject control tokens.
        data = text.replace("\x00", " ").encode("utf-8", "surrogatepass")
        return list(self._llm.tokenize(data, add_bos=False, special=False))

    def tokenize_prompt(self, prompt: Prompt, add_bos: bool) -> list[int]:
        tokens, _ = self.tokenize_healed(prompt, add_bos, heal=False)
        return tokens

    def tokenize_healed(self, prompt: Prompt, add_bos: bool, heal: bool) -> tuple[list[int], bytes]:
        """Prompt tokens, and the text of the prefix's last token when ``heal`` backs it up.

        Token healing: text before the cursor often ends mid-token ("imp", or "return " with
        its trailing space as a token of its own). Left in, the model must continue from an
        unusual token boundary (and writes " a" after "return ", doubling the space). Backed
        up, the first generated tokens are constrained to start with that text instead.
        """
        tokens: list[int] = []
        healed = b""
        if add_bos:
            tokens.append(int(self._llm.token_bos()))
        for segment in prompt:
            if isinstance(segment, Special):
                token = self._special_id(segment.text)
                if token is None:
                    raise ModelError(f"the model has no {segment.text} token")
                tokens.append(token)
                continue
            ids = self._tokenize_text(segment)
            if heal and isinstance(segment, PrefixText) and ids:
                piece = self._piece(ids[-1])
                if piece:
                    healed = piece
                    ids.pop()
            tokens.extend(ids)
        return tokens, healed

    def _piece(self, token: int) -> bytes:
        return bytes(self._llm.detokenize([token]))

    def _healing_candidates(self, healed: bytes) -> np.ndarray[Any, np.dtype[np.int64]]:
        """Token ids whose text starts with ``healed`` or is a start of it."""
        if healed not in self._candidates:
            if self._pieces is None:
                self._pieces = [self._piece(i) for i in range(self._llm.n_vocab())]
            ids = [
                i
                for i, piece in enumerate(self._pieces)
                if piece and (piece.startswith(healed) or healed.startswith(piece))
            ]
            if len(self._candidates) > 256:
                self._candidates.clear()
            self._candidates[healed] = np.array(ids, dtype=np.int64)
        return self._candidates[healed]

    # -- completion (on the lane) ---------------------------------------------------

    async def generate(self, job: CompletionJob, cancel: CancelToken) -> Generation:
        return await self.lane.run(self.generate_blocking, job, cancel)

    def generate_blocking(self, job: CompletionJob, cancel: CancelToken) -> Generation:
        cancel.raise_if_cancelled()  # superseded while it waited in the queue
        if self.state != "ready" or self.loaded is None:
            raise BackendUnavailable(self.error or f"the model is {self.state}")
        template = self.loaded.template
        room = self.loaded.n_ctx - job.max_tokens - _CONTEXT_MARGIN
        room -= job.extra_tokens if job.extra else 0
        # The anchored prefix may run a quarter over its budget (see fit_window): keep room.
        budget = min(job.budget_tokens, room * 4 // 5)
        window = fit_window(
            job.text,
            job.offset,
            budget,
            self.count_tokens,
            suffix_tokens=job.suffix_tokens,
            anchor_lines=PREFIX_ANCHOR_LINES,
            anchor_slack=budget // 4,
        )
        # Whitespace typed at the end of the prefix ("return ", or an indentation) is left out
        # of the prompt: the model tokenizes it together with the next word (" a",
        # "   " + ' """') and would write it again. The output is re-aligned to it instead.
        # Any other last token is backed up and healed (see tokenize_healed).
        prefix = window.prefix.rstrip(" \t")
        typed_space = window.prefix[len(prefix) :]
        prompt = template.build(prefix, window.suffix, self.loaded.order)
        if job.extra and job.extra_tokens > 0:
            files = self._fit_extra(job.extra, job.extra_tokens)
            prompt = with_repository(template, prompt, files, job.path or "file")
        tokens, healed = self.tokenize_healed(prompt, template.add_bos, heal=not typed_space)
        return self._generate(tokens, job, cancel, healed, typed_space)

    def _fit_extra(self, files: tuple[tuple[str, str], ...], budget: int) -> list[tuple[str, str]]:
        """The most useful files (the last ones) that fit the token budget, in their order."""
        kept: list[tuple[str, str]] = []
        used = 0
        for path, text in reversed(files):
            cost = self.count_tokens(f"{path}\n{text}\n") + 1
            if used + cost > budget:
                continue
            kept.append((path, text))
            used += cost
        return kept[::-1]

    def _generate(
        self,
        tokens: list[int],
        job: CompletionJob,
        cancel: CancelToken,
        healed: bytes = b"",
        typed_space: str = "",
    ) -> Generation:
        llm, progress = self._llm, job.progress
        progress.started_at = started = time.monotonic()
        kept = self._switch_for(tokens) if job.keep_cache else None
        reused = _common_prefix(llm.input_ids[: llm.n_tokens], tokens)
        if reused == len(tokens):
            reused -= 1  # re-evaluate the last token to get fresh logits
        llm.n_tokens = reused
        progress.prompt_tokens, progress.prompt_tokens_reused = len(tokens), reused
        max_tokens = min(job.max_tokens, llm.n_ctx() - len(tokens) - 1)
        self._active = cancel
        try:
            if job.keep_cache:
                # Small batches: a stop keeps all finished ones (parked), and an aborted
                # batch of n_batch tokens would be seconds of work lost on a small CPU.
                for start in range(reused, len(tokens), _BACKGROUND_BATCH):
                    self._eval(tokens[start : start + _BACKGROUND_BATCH], cancel)
            else:
                self._eval(tokens[reused:], cancel)
            progress.prompt_tokens_evaluated = len(tokens) - reused
            progress.prompt_done_at = prompt_done = time.monotonic()
            text, generated, reason = self._decode(
                job, max_tokens, cancel, prompt_done, healed, typed_space
            )
        except Cancelled:
            progress.stopped_at = time.monotonic()
            if not progress.prompt_tokens_evaluated:  # stopped inside prompt evaluation
                progress.prompt_tokens_evaluated = max(0, llm.n_tokens - reused)
                if kept is not None:
                    self._parked = self._snapshot()
                    self._restore(kept)
                    log.debug(
                        "background evaluation stopped at %d of %d prompt tokens; "
                        "cache put back in %.0f ms",
                        len(self._parked.tokens), len(tokens),
                        (time.monotonic() - progress.stopped_at) * 1000,
                    )  # fmt: skip
            raise
        finally:
            self._active = None
        return Generation(
            text=text,
            stop_reason=reason,
            prompt_tokens=len(tokens),
            prompt_tokens_reused=reused,
            generated_tokens=generated,
            prompt_seconds=prompt_done - started,
            decode_seconds=time.monotonic() - prompt_done,
        )

    # -- the KV cache of background work (keep_cache jobs) ---------------------------

    def _switch_for(self, tokens: list[int]) -> KvSnapshot | None:
        """Before a keep_cache job: a copy of the cache to put back if it is stopped inside
        its prompt (None when the job hardly changes it), and the cache switched to what an
        earlier stopped run of it left, when that shares more of its prompt."""
        llm = self._llm
        reused = _common_prefix(llm.input_ids[: llm.n_tokens], tokens)
        parked, self._parked = self._parked, None
        done = _common_prefix(parked.tokens, tokens) if parked is not None else 0
        resume = done >= reused + _KEEP_AT_LEAST
        if not resume and llm.n_tokens - reused < _KEEP_AT_LEAST:
            return None  # little to lose: the job only extends what is there
        kept = self._snapshot()
        if resume:
            assert parked is not None
            self._restore(parked)
            log.debug(
                "background evaluation resumed: %d of its %d prompt tokens were done",
                done, len(tokens),
            )  # fmt: skip
        return kept

    def _snapshot(self) -> KvSnapshot:
        import llama_cpp

        llm = self._llm
        # Drop anything past the counted tokens (an aborted batch) before copying.
        llama_cpp.llama_memory_seq_rm(llama_cpp.llama_get_memory(llm.ctx), 0, llm.n_tokens, -1)
        size = llama_cpp.llama_state_seq_get_size(llm.ctx, 0)
        data = (ctypes.c_uint8 * size)()
        llama_cpp.llama_state_seq_get_data(llm.ctx, data, size, 0)
        return KvSnapshot(llm.input_ids[: llm.n_tokens].tolist(), data)

    def _restore(self, snapshot: KvSnapshot) -> None:
        import llama_cpp

        llm = self._llm
        llama_cpp.llama_memory_seq_rm(llama_cpp.llama_get_memory(llm.ctx), 0, -1, -1)
        llm.n_tokens = 0
        if not snapshot.tokens:
            return
        if not llama_cpp.llama_state_seq_set_data(llm.ctx, snapshot.data, len(snapshot.data), 0):
            log.warning("could not restore the KV cache; the next prompt is evaluated whole")
            return
        llm.input_ids[: len(snapshot.tokens)] = snapshot.tokens
        llm.n_tokens = len(snapshot.tokens)

    def _eval(self, tokens: list[int], cancel: CancelToken) -> None:
        try:
            self._llm.eval(tokens)
        except RuntimeError:
            # llama_decode returned 2: aborted by our callback. llama.cpp dropped the
            # aborted batch from its KV cache and llm.n_tokens only counts batches
            # that finished, so the next request reuses exactly what is valid.
            cancel.raise_if_cancelled()
            raise

    def _decode(
        self,
        job: CompletionJob,
        max_tokens: int,
        cancel: CancelToken,
        start: float,
        healed: bytes,
        typed_space: str,
    ) -> tuple[str, int, StopReason]:
        import llama_cpp

        llm, vocab = self._llm, self._vocab
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        raw = text = ""
        deadline = start + job.decode_seconds
        for generated in range(max_tokens):
            cancel.raise_if_cancelled()
            if time.monotonic() > deadline:
                return text, generated, "deadline"
            logits = np.ctypeslib.as_array(
                llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(llm.n_vocab(),)
            )
            if healed:  # still inside the backed-up token: only tokens that match it
                candidates = self._healing_candidates(healed)
                token = int(candidates[np.argmax(logits[candidates])])
            else:
                token = int(np.argmax(logits))
            if (
                token in self._stop_ids
                or llama_cpp.llama_vocab_is_eog(vocab, token)
                or llama_cpp.llama_vocab_is_control(vocab, token)
            ):
                return text, generated, "end"
            piece = self._piece(token)
            if healed:  # the part the user already typed is not part of the suggestion
                consumed = min(len(healed), len(piece))
                piece, healed = piece[consumed:], healed[consumed:]
            raw += decoder.decode(piece)
            text = align_to_typed_space(raw, typed_space)
            job.progress.text, job.progress.generated_tokens = text, generated + 1
            if job.should_stop(text):
                return text, generated + 1, "stopped"
            if llm.n_tokens + 1 >= llm.n_ctx():
                return text, generated + 1, "context_full"
            self._eval([token], cancel)
        return text, max_tokens, "max_tokens"
