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
import dataclasses
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from lsp_infer.config import ModelSettings
from lsp_infer.core.backend import (
    BackendUnavailable,
    CompletionJob,
    Decoded,
    Generation,
    StopReason,
    TokenProbs,
)
from lsp_infer.core.cancel import Cancelled, CancelToken
from lsp_infer.core.postprocess import complete_lines
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
from lsp_infer.core.window import (
    Window,
    fit_window,
    smaller_budgets,
    smaller_suffix_tokens,
)
from lsp_infer.local.devices import Device, describe_devices, gpu_layers_for
from lsp_infer.local.kv_cache import KEEP_AT_LEAST, KvCache
from lsp_infer.local.kv_files import KvStateFiles, default_directory
from lsp_infer.local.kv_reuse import common_prefix
from lsp_infer.local.kv_states import KvState, KvStates
from lsp_infer.local.lane import ModelLane
from lsp_infer.models import (
    ModelError,
    Progress,
    ResolvedModel,
    requantize_ignored,
    resolve_model,
)

log = logging.getLogger(__name__)

# Room kept free in the context beyond prompt + max_tokens.
_CONTEXT_MARGIN = 8
# The prompt's prefix starts on a line number divisible by this, so it stays put (and its
# KV cache valid) for that many typed lines instead of sliding on every one. Measured with
# bench/keystrokes.py: see BENCHMARKS.md.
PREFIX_ANCHOR_LINES = 8
# keep_cache jobs evaluate their prompt in batches this small, so a stop loses at most one
# batch (under a second of work). Raw speed on 2 cores: about 17 % slower than 256 and 10 %
# slower than 128, but 128 made no difference the multi-file benchmark could see (BENCHMARKS.md,
# "Background batch size").
_BACKGROUND_BATCH = 64
# A prompt with no more than this many tokens outside the cache counts as cached: what was
# typed since (a word, a new line's indentation) plus the FIM tokens.
_TYPED_TOKENS = 16
# A request whose whole window is partly evaluated (a background evaluation stopped by typing)
# takes it only when the rest costs at most this share of the cold-start budget, if a smaller
# window is held: the pause's time goes to decoding (about 1 s for a line here) rather than to
# finishing the whole window, which the background does after the answer. Taking up to the
# whole budget made same-file pauses of 2.1-2.7 s (BENCHMARKS.md, "Typing in four files").
_HELD_WINDOW_LEFTOVER = 1 / 3
# Alternatives (an invoked request's other choices) get this long in all, after the suggestion.
_CHOICES_SECONDS = 1.5
# What a soft cancel may still let background work finish.
_BACKGROUND_STABLE_SECONDS = 1.5
# Prompt speed is measured on evaluations of at least this many tokens.
_SPEED_SAMPLE_TOKENS = 32

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
    devices: tuple[Device, ...] = ()  # what this llama.cpp build computes on
    n_layers: int = 0
    gpu_layers: int = 0  # layers offloaded to a GPU

    @property
    def compute(self) -> str:
        """Where the model runs, in a few words (for status, stats and doctor)."""
        gpus = [d.name for d in self.devices if d.kind != "cpu"]
        if self.gpu_layers and gpus:
            layers = min(self.gpu_layers, self.n_layers)
            return f"{', '.join(gpus)}: {layers}/{self.n_layers} layers"
        return "CPU"


@dataclass(frozen=True)
class BuiltPrompt:
    tokens: list[int]
    healed: bytes  # the backed-up last token's text (token healing)
    typed_space: str  # whitespace typed at the cursor, left out of the prompt
    stable: int  # tokens that stay valid while the user types at the cursor
    budget: int  # the window's token budget
    reduced: bool = False  # a smaller window than asked for (a cold start)


@dataclass
class BackendStats:
    stable_finished: int = 0  # prompts finished up to the last word after a keystroke


def fit_any_window(
    text: str, offset: int, budget: int, count_tokens: Callable[[str], int], **options: Any
) -> Window:
    """``fit_window``; where choosing a structured window fails, the nearest lines' window:
    a bug there must cost a keystroke some quality, never its answer (it is logged)."""
    try:
        return fit_window(text, offset, budget, count_tokens, **options)
    except Exception:
        if not options.get("structured"):
            raise
        log.exception("structured window failed; using the nearest lines")
        return fit_window(text, offset, budget, count_tokens, **{**options, "structured": False})


def _order(setting: str, template: FimTemplate) -> Order:
    for order in ("psm", "spm", "spmv"):
        if setting == order:
            return order
    return template.order


def probability(
    logits: np.ndarray[Any, np.dtype[np.float32]],
    token: int,
    among: np.ndarray[Any, np.dtype[np.int64]] | None = None,
) -> float:
    """The probability of ``token`` under ``logits`` (a softmax; over the ids ``among`` only,
    when given): about 0.2 ms for the default model's 151,936 logits, against 40-50 ms to
    decode the token."""
    row = logits if among is None else logits[among]
    top = float(row.max())
    return float(np.exp(float(logits[token]) - top) / np.exp(row - top).sum())


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
        # Documents' evaluated prompts, kept across switches (model.stateCacheMb).
        self.states = KvStates(0)
        self.cache: KvCache | None = None  # the live KV cache, once a model is loaded
        # Documents the exclusion rules match: their states never go to disk (see withhold).
        self._withheld: frozenset[str] = frozenset()
        self.prompt_speed: float | None = None  # tokens per second, measured
        self.stats = BackendStats()
        # True while evaluating the part of a prompt a soft cancel lets finish.
        self._protecting = False
        self.warnings: list[str] = []  # for the user, once per load (e.g. no GPU here)
        # Smaller windows (a cold start's) chosen by structure; False: by distance only, as
        # the whole window is (bench/quality.py compares the two).
        self.structured_cold = True

    # -- loading (on the lane) ------------------------------------------------------

    def start_load(
        self, settings: ModelSettings, progress: Progress | None = None
    ) -> asyncio.Future[None]:
        """Queue a (re)load on the lane; requests queued after it wait for it."""
        return self.lane.submit(self.load_blocking, settings, progress)

    def load_blocking(self, settings: ModelSettings, progress: Progress | None = None) -> None:
        """(Re)load the model for these settings; no-op if they did not change (but for the
        state cache's bound, which applies at once)."""
        self.states.resize(settings.state_cache_mb * 2**20)
        if self.cache is not None and self.cache.files is not None:
            self.cache.files.max_bytes = settings.state_disk_mb * 2**20
        loaded = self._settings.load_key() if self._settings else None
        if self.state == "ready" and settings.load_key() == loaded:
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
        loaded = self.loaded
        log.info(
            "model ready: %s (%s, template %s, n_ctx %d, %d threads, %s) in %.2fs",
            loaded.name, loaded.resolved.path, loaded.template.name, loaded.n_ctx,
            loaded.n_threads, loaded.compute, loaded.load_seconds,
        )  # fmt: skip

    def _load(self, settings: ModelSettings, progress: Progress | None) -> LoadedModel:
        import llama_cpp
        from llama_cpp import Llama  # imported here: it loads a shared library

        started = time.monotonic()
        threads = settings.n_threads or default_threads()
        gpu_layers, warning = gpu_layers_for(
            settings.gpu_layers, bool(llama_cpp.llama_supports_gpu_offload())
        )
        ignored = requantize_ignored(settings.path, settings.requantize)
        self.warnings = [w for w in (warning, ignored) if w]
        try:
            resolved = resolve_model(
                settings.path, settings.sha256, progress,
                requantize=settings.requantize, threads=threads,
            )  # fmt: skip
        except ModelError as exc:
            if settings.path is not None or settings.requantize == "off":
                raise
            # A copy that cannot be made (a full or read-only cache) costs speed, not service.
            self.warnings.append(f"{exc}; the model runs as shipped")
            resolved = resolve_model(None, None, progress)
        llm = Llama(
            model_path=str(resolved.path),
            n_ctx=settings.n_ctx,
            n_batch=settings.n_batch,
            n_ubatch=settings.n_batch,
            n_threads=threads,
            n_threads_batch=threads,
            n_gpu_layers=gpu_layers,
            # llama.cpp copies Q4_0 weights into its repacked layout at load; mapped, the file's
            # pages would stay resident beside that copy (RSS 737 vs 550 MB; BENCHMARKS.md,
            # "Faster weights"). The shipped file is used in place, shared between processes.
            use_mmap=resolved.requantized is None,
            logits_all=False,
            verbose=False,
        )
        self._llm = llm
        self._vocab = llama_cpp.llama_model_get_vocab(llm.model)
        metadata: dict[str, str] = dict(llm.metadata or {})
        name = metadata.get("general.name", resolved.path.name)
        template = self._choose_template(settings.fim_template, name)
        self._stop_ids = self._find_stop_ids(template)
        self._install_abort_callback()
        n_layers = int(llama_cpp.llama_model_n_layer(llm.model))
        model_key = (str(resolved.path), settings.load_key())
        # Files also depend on this llama.cpp build: its state format.
        files = KvStateFiles(
            default_directory(), settings.state_disk_mb * 2**20, (llama_cpp.__version__, model_key)
        )
        files.withheld = self._withheld
        self.cache = KvCache(llm, self.states, model_key, files)
        self._warm_up()
        return LoadedModel(
            resolved=resolved, name=name,
            architecture=metadata.get("general.architecture", "?"), template=template,
            order=_order(settings.fim_order, template), n_ctx=llm.n_ctx(), n_threads=threads,
            load_seconds=time.monotonic() - started, devices=describe_devices(),
            n_layers=n_layers, gpu_layers=n_layers + 1 if gpu_layers < 0 else gpu_layers,
        )  # fmt: skip

    def _warm_up(self) -> None:
        """Evaluate a short prompt once: the model's pages come in from disk now rather than
        in the first suggestion, and the prompt speed is measured for cold starts."""
        tokens = self._tokenize_text("def warm_up(value):\n    return value\n" * 8)
        started = time.monotonic()
        self._llm.eval(tokens)
        self._measure_speed(len(tokens), time.monotonic() - started)
        assert self.cache is not None
        self.cache.clear()

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
            return token is not None and token.cancelled and not (self._protecting and token.soft)

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
        if self.cache is not None and self.cache.files is not None:
            self.cache.files.close()  # what is still queued is given up: a reload or exit
        self.cache = None
        self.states.clear()

    def close(self) -> None:
        self.lane.run_blocking(self._close)
        self.state = "not loaded"

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
        tokens, _healed, _stable = self._tokenize(prompt, add_bos, heal=False)
        return tokens

    def _tokenize(
        self, prompt: Prompt, add_bos: bool, heal: bool, tail_chars: int = 0
    ) -> tuple[list[int], bytes, int]:
        """Prompt tokens; the text of the prefix's last token when ``heal`` backs it up; and
        how many tokens come before the prefix's last ``tail_chars`` characters (the part
        typing changes).

        Token healing: text before the cursor often ends mid-token ("imp", or "return " with
        its trailing space as a token of its own). Left in, the model must continue from an
        unusual token boundary (and writes " a" after "return ", doubling the space). Backed
        up, the first generated tokens are constrained to start with that text instead.
        """
        tokens: list[int] = [int(self._llm.token_bos())] if add_bos else []
        healed, stable = b"", 0
        for segment in prompt:
            if isinstance(segment, Special):
                token = self._special_id(segment.text)
                if token is None:
                    raise ModelError(f"the model has no {segment.text} token")
                tokens.append(token)
                continue
            ids = self._tokenize_text(segment)
            if isinstance(segment, PrefixText):
                head = self._tokenize_text(segment[: max(0, len(segment) - tail_chars)])
                stable = len(tokens) + common_prefix(head, ids)
                if heal and ids and (piece := self._piece(ids[-1])):
                    healed = piece
                    ids.pop()
            tokens.extend(ids)
        return tokens, healed, min(stable, len(tokens))

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
        if self.state != "ready" or self.loaded is None or self.cache is None:
            raise BackendUnavailable(self.error or f"the model is {self.state}")
        built = self._build(job, job.budget_tokens)
        if job.cold_seconds is not None and self.prompt_speed:
            built = self._within(built, job, int(self.prompt_speed * job.cold_seconds))
        return self._generate(built, job, cancel)

    def _build(
        self, job: CompletionJob, budget_tokens: int, full_budget: int | None = None
    ) -> BuiltPrompt:
        """The job's prompt with a window of ``budget_tokens`` around the cursor; with
        ``full_budget``, a smaller window than that, whose suffix keeps its share."""
        assert self.loaded is not None
        template = self.loaded.template
        room = self.loaded.n_ctx - job.max_tokens - _CONTEXT_MARGIN
        room -= job.extra_tokens if job.extra else 0
        # The anchored prefix may run a quarter over its budget (see fit_window): keep room.
        budget = min(budget_tokens, room * 4 // 5)
        suffix_tokens = job.suffix_tokens
        if full_budget is not None:
            suffix_tokens = smaller_suffix_tokens(suffix_tokens, budget, full_budget)
        # A smaller window keeps what says what the code is for (the enclosing headers, the
        # names used) besides the nearest lines; the whole window is the nearest lines.
        window = fit_any_window(
            job.text, job.offset, budget, self.count_tokens, suffix_tokens=suffix_tokens,
            anchor_lines=PREFIX_ANCHOR_LINES, anchor_slack=budget // 4,
            structured=full_budget is not None and self.structured_cold,
        )  # fmt: skip
        # Whitespace typed at the end of the prefix ("return ", or an indentation) is left out
        # of the prompt: the model tokenizes it together with the next word (" a",
        # "   " + ' """') and would write it again. The output is re-aligned to it instead.
        # Any other last token is backed up and healed (see _tokenize).
        prefix = window.prefix.rstrip(" \t")
        typed_space = window.prefix[len(prefix) :]
        prompt = template.build(prefix, window.suffix, self.loaded.order)
        if job.extra and job.extra_tokens > 0:
            files = self._fit_extra(job.extra, job.extra_tokens)
            prompt = with_repository(template, prompt, files, job.path or "file")
        # The last word of the prefix (when the job was made) is what typing changes;
        # everything before it stays valid (JobOptions.stable_before).
        window_start = job.offset - len(window.prefix)
        stable_chars = min(max(job.stable_before - window_start, 0), len(prefix))
        tokens, healed, stable = self._tokenize(
            prompt, template.add_bos, heal=not typed_space, tail_chars=len(prefix) - stable_chars
        )
        return BuiltPrompt(tokens, healed, typed_space, stable, budget)

    def _within(self, built: BuiltPrompt, job: CompletionJob, affordable: int) -> BuiltPrompt:
        """``built``, or the prompt with a smaller window whose part the cache does not hold
        takes no more than ``affordable`` tokens to evaluate (a cold start).

        A window the cache already holds but for what was just typed wins over a larger one
        that fits: each keystroke of a cold file affords a little more, and a larger window
        starts elsewhere in the file, so it was evaluated anew keystroke after keystroke
        (bench/keystrokes.py: 184 then 211 tokens in one file) while the whole window waits
        for the background evaluation anyway. The whole window wins over a held smaller one
        only when what is left of it takes at most a share of the budget
        (_HELD_WINDOW_LEFTOVER): a held window answers a pause sooner."""
        assert self.cache is not None
        uncached = len(built.tokens) - self.cache.reusable(job.document, built.tokens)
        if uncached <= max(_TYPED_TOKENS, int(affordable * _HELD_WINDOW_LEFTOVER)):
            return built
        whole_fits = uncached <= affordable
        fitting: BuiltPrompt | None = None
        candidate = built
        for budget in smaller_budgets(built.budget):  # built only as far as the loop goes
            candidate = dataclasses.replace(self._build(job, budget, built.budget), reduced=True)
            uncached = len(candidate.tokens) - self.cache.reusable(job.document, candidate.tokens)
            if uncached <= _TYPED_TOKENS:
                return candidate  # held: answers at once
            if not whole_fits and fitting is None and uncached <= affordable:
                fitting = candidate
        if whole_fits:
            return built
        return fitting or candidate  # none fits: the smallest

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

    def _generate(self, built: BuiltPrompt, job: CompletionJob, cancel: CancelToken) -> Generation:
        llm, progress, tokens = self._llm, job.progress, built.tokens
        progress.started_at = started = time.monotonic()
        kept = self._before_background(job, tokens) if job.keep_cache else None
        assert self.cache is not None
        if kept is not None:  # it lives until this job is done: the states' bound counts it
            self.cache.states.hold_aside(kept.nbytes)
        reused = min(self.cache.prepare(job.document, tokens), len(tokens) - 1)
        llm.n_tokens = reused  # at least the last token is evaluated again: fresh logits
        progress.prompt_tokens, progress.prompt_tokens_reused = len(tokens), reused
        max_tokens = min(job.max_tokens, llm.n_ctx() - len(tokens) - 1)
        self._active = cancel
        try:
            self._evaluate(tokens, reused, built.stable, job, cancel)
            progress.prompt_tokens_evaluated = len(tokens) - reused
            progress.prompt_done_at = prompt_done = time.monotonic()
            self._measure_speed(len(tokens) - reused, prompt_done - started)
            first_logits = self._logits().copy() if job.choices > 1 else None
            text, generated, reason, probs = self._decode(
                job, max_tokens, cancel, prompt_done + job.decode_seconds, built.healed,
                built.typed_space,
            )  # fmt: skip
            alternatives = () if first_logits is None else self._alternatives(
                dataclasses.replace(job, max_tokens=max_tokens), len(tokens), first_logits,
                built.healed, built.typed_space, cancel,
            )  # fmt: skip
        except Cancelled:
            progress.stopped_at = time.monotonic()
            if not progress.prompt_tokens_evaluated:  # stopped inside prompt evaluation
                progress.prompt_tokens_evaluated = max(0, llm.n_tokens - reused)
                if kept is not None:
                    self._after_stopped_background(job, kept, len(tokens))
            raise
        finally:
            self._active = None
            if kept is not None:
                self.cache.states.release_aside(kept.nbytes)
                # A stopped job's exception keeps this frame alive in its traceback for as
                # long as the job's task is kept (a stopped pick waits as the candidate to
                # resume): the copy, megabytes, must not live on with it.
                kept = None
        return Generation(
            text=text, stop_reason=reason, prompt_tokens=len(tokens),
            prompt_tokens_reused=reused, generated_tokens=generated,
            prompt_seconds=prompt_done - started, decode_seconds=time.monotonic() - prompt_done,
            window_reduced=built.reduced, alternatives=alternatives, probs=probs,
        )  # fmt: skip

    def _evaluate(
        self, tokens: list[int], reused: int, stable: int, job: CompletionJob, cancel: CancelToken
    ) -> None:
        """Evaluate ``tokens[reused:]``. The first ``stable`` tokens are finished even after a
        soft cancel (the user typed at the cursor: the next request needs them too)."""
        progress = job.progress
        if job.keep_cache:
            # Small batches: a stop keeps all finished ones (parked), and an aborted batch of
            # n_batch tokens would be seconds of work lost on a small CPU.
            for start in range(reused, len(tokens), _BACKGROUND_BATCH):
                self._eval(tokens[start : start + _BACKGROUND_BATCH], cancel)
            return
        # Background work finishes its stable part only when that is short: a long one would
        # hold up the user's next request for seconds. A request's is what the user's next
        # keystrokes need anyway (their requests are superseded while they type).
        budget = (self.prompt_speed or 0) * _BACKGROUND_STABLE_SECONDS
        if job.background and stable - reused > budget:
            stable = reused
        if stable > reused:
            self._protecting = True
            try:
                self._eval(tokens[reused:stable], cancel)
            finally:
                self._protecting = False
            if cancel.soft:
                self.stats.stable_finished += 1
                progress.finished_stable = True
            cancel.raise_if_cancelled()
        self._eval(tokens[max(reused, stable) :], cancel)

    def _measure_speed(self, evaluated: int, seconds: float) -> None:
        """Prompt tokens per second, smoothed: what a cold start can afford."""
        if evaluated >= _SPEED_SAMPLE_TOKENS and seconds > 0:
            speed = evaluated / seconds
            previous = self.prompt_speed
            self.prompt_speed = speed if previous is None else 0.7 * previous + 0.3 * speed

    # -- the KV cache of background work (keep_cache jobs) ---------------------------

    def _before_background(self, job: CompletionJob, tokens: list[int]) -> KvState | None:
        """Before a keep_cache job: a copy of the cache to put back if it is stopped inside
        its prompt (None when the job hardly changes it, or when the cache holds another
        document's prompt, which is kept under that document instead), and the cache switched
        to what an earlier stopped run of it left (the document's parked state), when that
        shares more of its prompt."""
        assert self.cache is not None
        cache = self.cache
        reused = cache.reusable(job.document, tokens, kinds=("live",))
        parked = cache.states.take(job.document, "parked", cache.model)
        done = common_prefix(parked.tokens, tokens) if parked is not None else 0
        resume = done >= reused + KEEP_AT_LEAST
        live = cache.tokens()
        if not resume and len(live) - common_prefix(live, tokens) < KEEP_AT_LEAST:
            return None  # little to lose: the job only extends what is there
        kept = None
        if cache.owner in (job.document, None) or not cache.states.enabled:
            kept = cache.snapshot()
        else:
            # Another document's prompt (a warm after a switch): kept under that document, as
            # any switch keeps it, not copied aside as well; stopped, the part done stays.
            cache.hand_over()
        if resume and parked is not None:
            cache.restore(parked)
            log.debug(
                "background evaluation resumed: %d of its %d prompt tokens were done",
                done, len(tokens),
            )  # fmt: skip
        return kept

    def _after_stopped_background(self, job: CompletionJob, kept: KvState, total: int) -> None:
        """A keep_cache job stopped inside its prompt: park the part done (under its
        document), and put the cache back as it was."""
        assert self.cache is not None
        stopped = time.monotonic()
        parked = self.cache.snapshot()
        self.cache.states.put(job.document, "parked", parked)
        self.cache.restore(kept)
        log.debug(
            "background evaluation stopped at %d of %d prompt tokens; cache put back in %.0f ms",
            len(parked.tokens), total, (time.monotonic() - stopped) * 1000,
        )  # fmt: skip

    def save_states(self, timeout: float) -> None:
        """At shutdown: what the cache holds goes to disk with the states written before it
        (model.stateDiskMb), waiting up to ``timeout`` seconds for the writes."""
        if self.cache is not None and self.cache.files is not None:
            self.cache.save_owner_to_disk()
            self.cache.files.flush(timeout)

    def forget(self, document: str) -> None:
        """A document closed, or is excluded now: its kept states go (on the lane, after the
        work queued); an excluded one's file on disk too."""
        if self.cache is not None:
            self.cache.forget(document)

    def withhold(self, documents: frozenset[str]) -> None:
        """The documents the exclusion rules match now (from the event loop): their states
        are neither written to disk nor read from it, and their files are deleted where the
        cache would have written or read them (``forget`` deletes them at once)."""
        self._withheld = documents
        cache = self.cache
        if cache is not None and cache.files is not None:
            cache.files.withheld = documents

    def _eval(self, tokens: list[int], cancel: CancelToken) -> None:
        if not tokens:
            return
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
        deadline: float,
        healed: bytes,
        typed_space: str,
        first: tuple[int, float] | None = None,
    ) -> tuple[str, int, StopReason, TokenProbs]:
        """Greedy decoding from the evaluated prompt until a stop (``first``: the first token,
        and its probability, instead of the most likely one — a choice's branch, whose
        progress is not reported). Also each token's probability, where it ends in the text."""
        import llama_cpp

        llm, vocab = self._llm, self._vocab
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        raw = text = ""
        probs: list[tuple[int, float]] = []
        # The deadline cuts at whole lines, so it waits for the first one, but only up to half
        # as long again: a long first line (a regex, a long call) is cut there, so that it
        # cannot hold the pause for seconds (multifile benchmark: 44-token lines decoded for
        # 2 s made the slowest pauses in a file 2.6 s).
        last_resort = deadline + job.decode_seconds / 2
        for generated in range(max_tokens):
            cancel.raise_if_cancelled()
            now = time.monotonic()
            if now > deadline and complete_lines(text).strip():
                return text, generated, "deadline", tuple(probs)
            if now > last_resort:  # half a line beats nothing after all that work
                return text, generated, "line_cut", tuple(probs)
            token, probability = (
                first if generated == 0 and first is not None else self._next(healed)
            )
            if (
                token in self._stop_ids
                or llama_cpp.llama_vocab_is_eog(vocab, token)
                or llama_cpp.llama_vocab_is_control(vocab, token)
            ):
                return text, generated, "end", tuple(probs)
            piece = self._piece(token)
            if healed:  # the part the user already typed is not part of the suggestion
                consumed = min(len(healed), len(piece))
                piece, healed = piece[consumed:], healed[consumed:]
            raw += decoder.decode(piece)
            text = align_to_typed_space(raw, typed_space)
            probs.append((len(text), probability))
            if first is None:  # in-flight reuse reads the suggestion's progress
                job.progress.text, job.progress.generated_tokens = text, generated + 1
            if job.should_stop(text):
                return text, generated + 1, "stopped", tuple(probs)
            if llm.n_tokens + 1 >= llm.n_ctx():
                return text, generated + 1, "context_full", tuple(probs)
            self._eval([token], cancel)
        return text, max_tokens, "max_tokens", tuple(probs)

    def _logits(self) -> np.ndarray[Any, np.dtype[np.float32]]:
        import llama_cpp

        llm = self._llm
        return np.ctypeslib.as_array(
            llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(llm.n_vocab(),)
        )

    def _next(self, healed: bytes) -> tuple[int, float]:
        """The most likely next token (inside a backed-up token: one that matches it), and
        its probability (among the matching ones, inside a backed-up token)."""
        logits = self._logits()
        if healed:
            candidates = self._healing_candidates(healed)
            token = int(candidates[np.argmax(logits[candidates])])
            return token, probability(logits, token, candidates)
        token = int(np.argmax(logits))
        return token, probability(logits, token)

    def _first_tokens(self, logits: np.ndarray[Any, Any], healed: bytes, count: int) -> list[int]:
        """The ``count`` most likely first tokens, best first (matching a backed-up token)."""
        ids = self._healing_candidates(healed) if healed else np.arange(len(logits))
        best = ids[np.argsort(-logits[ids], kind="stable")[: count + len(self._stop_ids)]]
        return [int(t) for t in best if int(t) not in self._stop_ids][:count]

    def _alternatives(
        self, job: CompletionJob, prompt_length: int, logits: np.ndarray[Any, Any],
        healed: bytes, typed_space: str, cancel: CancelToken,
    ) -> tuple[Decoded, ...]:  # fmt: skip
        """Up to ``job.choices - 1`` other outputs: the same evaluated prompt, each continued
        from the next most likely first token, within _CHOICES_SECONDS in all."""
        llm = self._llm
        found: list[Decoded] = []
        deadline = time.monotonic() + min(job.decode_seconds, _CHOICES_SECONDS)
        among = self._healing_candidates(healed) if healed else None
        for first in self._first_tokens(logits, healed, job.choices + 2)[1:]:
            if len(found) == job.choices - 1 or time.monotonic() > deadline:
                break
            llm.n_tokens = prompt_length  # back to the prompt; the branch overwrites the rest
            text, _generated, reason, probs = self._decode(
                job, job.max_tokens, cancel, deadline, healed, typed_space,
                (first, probability(logits, first, among)),
            )  # fmt: skip
            if text.strip():
                found.append(Decoded(text, reason, probs))
        return tuple(found)
