"""The in-process llama.cpp backend (llama-cpp-python), run on the model lane.

One ``Llama`` context, one KV cache, touched only from the lane's thread. A job goes down
and back in one pass (ARCHITECTURE.md, "A keystroke's call path"): its prompt is built
(prompt_builder.py; a smaller window on a cold start), the prompt cache (kv/) finds how much
of it is evaluated already, the rest is evaluated, and the decoder (decoder.py) decodes
greedily. The job's cancel token is checked between tokens — and, through llama.cpp's abort
callback, inside prompt evaluation too.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from dataclasses import dataclass
from typing import Any, Literal

from lsp_infer.config import ModelSettings
from lsp_infer.core.backend import BackendUnavailable, CompletionJob, Generation
from lsp_infer.core.cancel import Cancelled, CancelToken
from lsp_infer.core.profiles import profile_for
from lsp_infer.local import model_choice
from lsp_infer.local.decoder import Decoder, Start
from lsp_infer.local.devices import describe_devices, gpu_layers_for
from lsp_infer.local.kv import PromptCache
from lsp_infer.local.lane import ModelLane
from lsp_infer.local.loaded_model import (
    LoadedModel,
    choose_order,
    choose_template,
    default_threads,
)
from lsp_infer.local.prompt_builder import BuiltPrompt, PromptBuilder
from lsp_infer.local.vocabulary import Vocabulary
from lsp_infer.models import (
    DEFAULT_MODEL,
    LARGER_MODEL,
    EmbeddedModel,
    ModelError,
    Progress,
    ResolvedModel,
    embedded_model,
    parts_installed,
    requantize_ignored,
    resolve_model,
)

log = logging.getLogger(__name__)

# keep_cache jobs evaluate their prompt in batches this small, so a stop loses at most one
# batch (under a second of work). Raw speed on 2 cores: about 17 % slower than 256 and 10 %
# slower than 128, but 128 made no difference the multi-file benchmark could see (bench/HISTORY.md,
# "Background batch size").
_BACKGROUND_BATCH = 64
# What a soft cancel may still let background work finish.
_BACKGROUND_STABLE_SECONDS = 1.5
# Prompt speed is measured on evaluations of at least this many tokens.
_SPEED_SAMPLE_TOKENS = 32

LoadState = Literal["not loaded", "loading", "ready", "failed"]


@dataclass
class BackendStats:
    stable_finished: int = 0  # prompts finished up to the last word after a keystroke


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
        # Documents' evaluated prompts, kept across switches and restarts; the one owner of
        # the llama sequence (kv/).
        self.cache = PromptCache()
        self.vocabulary: Vocabulary | None = None  # these three once a model is loaded
        self.prompts: PromptBuilder | None = None
        self._decoder: Decoder | None = None
        # The request whose work is on the lane now; read by llama.cpp's abort callback.
        self._active: CancelToken | None = None
        self._abort_callback: Any = None  # keep a reference: llama.cpp holds a raw pointer
        # True while evaluating the part of a prompt a soft cancel lets finish.
        self._protecting = False
        self.prompt_speed: float | None = None  # tokens per second, measured
        self.stats = BackendStats()
        self.warnings: list[str] = []  # for the user, once per load (e.g. no GPU here)
        # Smaller windows (a cold start's) chosen by structure (prompt_builder.py).
        self.structured_cold = True

    # -- loading (on the lane) ------------------------------------------------------

    def start_load(
        self, settings: ModelSettings, progress: Progress | None = None
    ) -> asyncio.Future[None]:
        """Queue a (re)load on the lane; requests queued after it wait for it."""
        return self.lane.submit(self.load_blocking, settings, progress)

    def load_blocking(self, settings: ModelSettings, progress: Progress | None = None) -> None:
        """(Re)load the model for these settings; no-op if they did not change (but for the
        state cache's bounds, which apply at once)."""
        self.cache.configure(settings.state_cache_mb * 2**20, settings.state_disk_mb * 2**20)
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
        """Load the model these settings name; for model.name "auto", the embedded model
        chosen for this machine (model_choice.py): measured the first time by loading the
        1.5B, kept when it is fast enough here."""
        import llama_cpp

        threads = settings.n_threads or default_threads()
        if settings.path is not None or settings.name != "auto":
            name = DEFAULT_MODEL.name if settings.path is not None else settings.name
            return self._load_model(settings, embedded_model(name), progress, threads)
        key = model_choice.machine_key(threads, settings.gpu_layers, llama_cpp.__version__)
        choice = model_choice.remembered(key)
        if choice is None and not parts_installed(LARGER_MODEL):
            choice = model_choice.NOT_INSTALLED  # not remembered: it may be installed later
        if choice is not None:
            return self._load_model(settings, choice.model, progress, threads, choice.why)
        loaded = self._load_model(settings, LARGER_MODEL, progress, threads)
        choice = model_choice.judge_speed(self.prompt_speed)
        model_choice.remember(key, choice)
        log.info("%s", choice.why)
        if choice.model is LARGER_MODEL:
            return dataclasses.replace(loaded, chosen_because=choice.why)
        self._close()
        return self._load_model(settings, choice.model, progress, threads, choice.why)

    def _load_model(
        self,
        settings: ModelSettings,
        model: EmbeddedModel,
        progress: Progress | None,
        threads: int,
        chosen_because: str | None = None,
    ) -> LoadedModel:
        """Load model.path, else the embedded ``model``."""
        import llama_cpp
        from llama_cpp import Llama  # imported here: it loads a shared library

        started = time.monotonic()
        self.prompt_speed = None  # another model, another speed: measured at its warm-up
        gpu_layers, warning = gpu_layers_for(
            settings.gpu_layers, bool(llama_cpp.llama_supports_gpu_offload())
        )
        resolved = self._resolve(settings, model, progress, threads, warning)
        self._llm = llm = Llama(
            model_path=str(resolved.path), n_ctx=settings.n_ctx, n_batch=settings.n_batch,
            n_ubatch=settings.n_batch, n_threads=threads, n_threads_batch=threads,
            n_gpu_layers=gpu_layers,
            # llama.cpp copies Q4_0 weights into its repacked layout at load; mapped, the file's
            # pages would stay resident beside that copy (RSS 737 vs 550 MB; bench/HISTORY.md,
            # "Faster weights"). The shipped file is used in place, shared between processes.
            use_mmap=resolved.requantized is None, logits_all=False, verbose=False,
        )  # fmt: skip
        metadata: dict[str, str] = dict(llm.metadata or {})
        name = metadata.get("general.name", resolved.path.name)
        profile = profile_for(metadata)
        if not profile.measured:
            self.warnings.append(f"{name}: {profile.basis}")
        self.vocabulary = vocabulary = Vocabulary(llm)
        template = choose_template(settings.fim_template, name, vocabulary.has_special)
        vocabulary.use_template(template)
        self._install_abort_callback()
        self.cache.attach(llm, (str(resolved.path), settings.load_key()), llama_cpp.__version__)
        order = choose_order(profile.order(settings), template)
        self.prompts = PromptBuilder(vocabulary, template, order, llm.n_ctx(), self.structured_cold)
        self._decoder = Decoder(llm, vocabulary, self.cache)
        self._warm_up()
        n_layers = int(llama_cpp.llama_model_n_layer(llm.model))
        return LoadedModel(
            resolved=resolved, name=name,
            architecture=metadata.get("general.architecture", "?"), template=template,
            order=order, n_ctx=llm.n_ctx(), n_threads=threads,
            load_seconds=time.monotonic() - started, devices=describe_devices(),
            n_layers=n_layers, gpu_layers=n_layers + 1 if gpu_layers < 0 else gpu_layers,
            profile=profile, chosen_because=chosen_because,
        )  # fmt: skip

    def _resolve(
        self,
        settings: ModelSettings,
        model: EmbeddedModel,
        progress: Progress | None,
        threads: int,
        warning: str | None,
    ) -> ResolvedModel:
        """The model file to load (requantized as asked, where it can be); what the user
        should know about it goes to ``warnings``."""
        ignored = requantize_ignored(settings.path, settings.requantize)
        self.warnings = [w for w in (warning, ignored) if w]
        try:
            return resolve_model(
                settings.path, settings.sha256, progress,
                requantize=settings.requantize, threads=threads, model=model,
            )  # fmt: skip
        except ModelError as exc:
            if settings.path is not None or settings.requantize == "off":
                raise
            # A copy that cannot be made (a full or read-only cache) costs speed, not service.
            self.warnings.append(f"{exc}; the model runs as shipped")
            return resolve_model(None, None, progress, model=model)

    def _warm_up(self) -> None:
        """Evaluate a short prompt once: the model's pages come in from disk now rather than
        in the first suggestion, and the prompt speed is measured for cold starts."""
        assert self.vocabulary is not None
        tokens = self.vocabulary.tokenize_text("def warm_up(value):\n    return value\n" * 8)
        started = time.monotonic()
        self.cache.evaluate(tokens, CancelToken())
        self._measure_speed(len(tokens), time.monotonic() - started)
        self.cache.clear()

    def _install_abort_callback(self) -> None:
        import llama_cpp

        def should_abort(_data: Any) -> bool:
            token = self._active
            return token is not None and token.cancelled and not (self._protecting and token.soft)

        self._abort_callback = llama_cpp.ggml_abort_callback(should_abort)
        llama_cpp.llama_set_abort_callback(self._llm.ctx, self._abort_callback, None)

    def _close(self) -> None:
        self.cache.detach()  # what is still queued for disk is given up: a reload or exit
        if self._llm is not None:
            self._llm.close()
        self._llm = self.loaded = self.vocabulary = self.prompts = self._decoder = None

    def close(self) -> None:
        self.lane.run_blocking(self._close)
        self.state = "not loaded"

    # -- completion (on the lane) ---------------------------------------------------

    async def generate(self, job: CompletionJob, cancel: CancelToken) -> Generation:
        return await self.lane.run(self.generate_blocking, job, cancel)

    def generate_blocking(self, job: CompletionJob, cancel: CancelToken) -> Generation:
        cancel.raise_if_cancelled()  # superseded while it waited in the queue
        prompts = self.prompts
        if self.state != "ready" or prompts is None:
            raise BackendUnavailable(self.error or f"the model is {self.state}")
        if job.plain and self.vocabulary is not None:  # the text is the prompt, as it is
            tokens = self.vocabulary.tokenize_text(job.text)
            return self._generate(BuiltPrompt(tokens, b"", "", 0, len(tokens)), job, cancel)
        built = prompts.build(job, job.budget_tokens)
        if job.cold_seconds is not None and self.prompt_speed:
            affordable = int(self.prompt_speed * job.cold_seconds)
            built = prompts.within(
                built, job, affordable, lambda tokens: self.cache.reusable(job.document, tokens)
            )
        return self._generate(built, job, cancel)

    def _generate(self, built: BuiltPrompt, job: CompletionJob, cancel: CancelToken) -> Generation:
        cache, progress, tokens = self.cache, job.progress, built.tokens
        progress.started_at = time.monotonic()
        # Background work that may replace what the cache holds is undone if stopped early.
        aside = cache.background(job.document, tokens) if job.keep_cache else None
        self._active = cancel
        try:
            with aside or contextlib.nullcontext():
                reused = cache.prepare(job.document, tokens)
                progress.prompt_tokens, progress.prompt_tokens_reused = len(tokens), reused
                try:
                    return self._answer(built, job, cancel)
                except Cancelled:
                    progress.stopped_at = time.monotonic()
                    if not progress.prompt_tokens_evaluated:  # stopped inside the prompt
                        progress.prompt_tokens_evaluated = max(0, cache.length - reused)
                    raise
        finally:
            self._active = None

    def _answer(self, built: BuiltPrompt, job: CompletionJob, cancel: CancelToken) -> Generation:
        """Evaluate the rest of the prompt the cache was prepared for, and decode."""
        assert self._decoder is not None and self.loaded is not None
        decoder, progress, tokens = self._decoder, job.progress, built.tokens
        reused, started = progress.prompt_tokens_reused, progress.started_at or time.monotonic()
        self._evaluate(tokens, reused, built.stable, job, cancel)
        progress.prompt_tokens_evaluated = len(tokens) - reused
        progress.prompt_done_at = prompt_done = time.monotonic()
        self._measure_speed(len(tokens) - reused, prompt_done - started)
        start = Start(built.healed, built.typed_space, exact_space=built.exact_space)
        start = decoder.write_typed_space(start, cancel)
        branch_at = self.cache.length  # the prompt and the typed space written
        first_logits = decoder.logits().copy() if job.choices > 1 else None
        job = dataclasses.replace(
            job, max_tokens=min(job.max_tokens, self.loaded.n_ctx - branch_at - 1)
        )
        text, generated, reason, probs = decoder.decode(
            job, cancel, prompt_done + job.decode_seconds, start
        )
        alternatives = () if first_logits is None else decoder.alternatives(
            job, branch_at, first_logits, start, cancel
        )  # fmt: skip
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
        evaluate = self.cache.evaluate
        if job.keep_cache:
            # Small batches: a stop keeps all finished ones (parked), and an aborted batch of
            # n_batch tokens would be seconds of work lost on a small CPU.
            for start in range(reused, len(tokens), _BACKGROUND_BATCH):
                evaluate(tokens[start : start + _BACKGROUND_BATCH], cancel)
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
                evaluate(tokens[reused:stable], cancel)
            finally:
                self._protecting = False
            if cancel.soft:
                self.stats.stable_finished += 1
                job.progress.finished_stable = True
            cancel.raise_if_cancelled()
        evaluate(tokens[max(reused, stable) :], cancel)

    def _measure_speed(self, evaluated: int, seconds: float) -> None:
        """Prompt tokens per second, smoothed: what a cold start can afford."""
        if evaluated >= _SPEED_SAMPLE_TOKENS and seconds > 0:
            speed = evaluated / seconds
            previous = self.prompt_speed
            self.prompt_speed = speed if previous is None else 0.7 * previous + 0.3 * speed

    # -- documents' kept prompts ------------------------------------------------------

    def save_states(self, timeout: float) -> None:
        """At shutdown (on the lane): what the cache holds goes to disk with the states
        written before it (model.stateDiskMb), waiting up to ``timeout`` seconds."""
        self.cache.save_to_disk(timeout)

    def forget(self, document: str) -> None:
        """A document closed, or is excluded now (on the lane, after the work queued): its
        kept states go; an excluded one's file on disk too."""
        if self._llm is not None:
            self.cache.forget(document)

    def withhold(self, documents: frozenset[str]) -> None:
        """The documents the exclusion rules match now (from the event loop): their prompts
        never go to disk (``PromptCache.withhold``)."""
        self.cache.withhold(documents)

    def stats_json(self) -> dict[str, Any]:
        """The prompt cache's and the backend's counters, for ``lspInfer/stats``."""
        return {
            **self.cache.as_json(),
            "stableFinished": self.stats.stable_finished,
            "promptTokensPerSecond": round(self.prompt_speed or 0, 1),
        }
