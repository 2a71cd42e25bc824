"""Would speculative decoding make suggestions faster here? Prompt-lookup drafts, measured.

On 2 cores a suggestion's time is mostly decoding (one token at a time, about 40 ms each), so
the obvious lever is speculation: guess the next K tokens, evaluate them in one batch, and
keep the ones the model agrees with. Greedy decoding keeps its output in principle. The draft
comes from the text itself (llama-cpp-python's LlamaPromptLookupDecoding: the tokens that
followed the last 1-3 tokens where they occur earlier in the prompt), so there is no second
model to run. It pays only if a batch of K+1 tokens costs little more than one token.

Two measurements, with the model loaded as the server loads it (lsp_infer's backend: same
threads, batch size and context):
  batch    milliseconds to evaluate 1, 2, 3, 4 and 8 tokens after a 512-token prompt
  decode   for each hole of bench/quality.py's suites (the server's prompt, whole window): the
           same DECODE tokens decoded one at a time (the server's way) and speculatively with
           each K, interleaved on the same prompt; total time as a ratio to one at a time,
           tokens kept per batch, and how many holes gave a different output (a batch's sums
           are not bit-identical to one token's, so greedy picks can differ on near ties)

    python bench/speculation.py --holes 40 --ks 1,3,8
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
from typing import Any

import numpy as np
from quality import Hole, cross_holes, local_holes

from lsp_infer.config import CompletionSettings, ModelSettings
from lsp_infer.core.cancel import CancelToken
from lsp_infer.core.engine import CompletionEngine
from lsp_infer.local.lane import ModelLane
from lsp_infer.local.llama_cpp import LlamaCppBackend
from lsp_infer.threads import set_thread_waiting

# How the server's llama.cpp threads wait (threads.set_thread_waiting), set before llama.cpp
# loads (lsp_infer imports it lazily), so that the raw figures and the server's compare.
set_thread_waiting()

DECODE = 24  # tokens: about what the server's 1 s decoding budget yields here
NGRAM = 3  # the longest run of tokens the draft looks up


class Decoder:
    """Greedy decoding on the backend's loaded llama.cpp context, one token at a time or
    speculatively."""

    def __init__(self, llm: Any) -> None:
        import llama_cpp

        self.llm, self.vocab_size = llm, llm.n_vocab()
        self.is_end = lambda token: bool(
            llama_cpp.llama_vocab_is_eog(llm._model.vocab, token)
            or llama_cpp.llama_vocab_is_control(llm._model.vocab, token)
        )

    def argmax(self, index: int) -> int:
        import llama_cpp

        row = llama_cpp.llama_get_logits_ith(self.llm.ctx, index)
        return int(np.argmax(np.ctypeslib.as_array(row, shape=(self.vocab_size,))))

    def evaluate(self, tokens: list[int]) -> list[int]:
        """Evaluate ``tokens`` in one batch; the model's next token after each of them."""
        llm = self.llm
        llm._ctx.kv_cache_seq_rm(-1, llm.n_tokens, -1)
        llm._batch.set_batch(batch=tokens, n_past=llm.n_tokens, logits_all=True)
        llm._ctx.decode(llm._batch)
        llm.input_ids[llm.n_tokens : llm.n_tokens + len(tokens)] = tokens
        llm.n_tokens += len(tokens)
        return [self.argmax(i) for i in range(len(tokens))]

    def start(self, prompt: list[int], first: int) -> None:
        """Decode after ``prompt``, evaluated but for its last token (each way starts by
        evaluating that again); ``first`` is the first output token (the server's, which may
        be a healed one)."""
        self.prompt, self.first = prompt, first

    def one_at_a_time(self) -> tuple[list[int], float, int]:
        self.llm.n_tokens = len(self.prompt) - 1
        started = time.perf_counter()
        self.evaluate(self.prompt[-1:])
        out, token = [], self.first
        while len(out) < DECODE and not self.is_end(token):
            out.append(token)
            token = self.evaluate([token])[0]
        return out, time.perf_counter() - started, len(out)

    def speculative(self, k: int) -> tuple[list[int], float, int]:
        from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

        find = LlamaPromptLookupDecoding.find_candidate_pred_tokens
        self.llm.n_tokens = len(self.prompt) - 1
        started = time.perf_counter()
        self.evaluate(self.prompt[-1:])
        out, token, batches = [], self.first, 0
        while len(out) < DECODE and not self.is_end(token):
            out.append(token)
            seen = np.array(self.prompt + out, dtype=np.intc)
            draft = [int(t) for t in find(seen, NGRAM, k)][:k]
            predicted = self.evaluate([token, *draft])
            batches += 1
            kept = 0
            for guess, model in zip(draft, predicted, strict=False):  # one more prediction
                if guess != model or self.is_end(guess) or len(out) == DECODE:
                    break
                out.append(guess)
                kept += 1
            token = predicted[kept]
            self.llm.n_tokens -= len(draft) - kept  # the rejected guesses leave the cache
        return out, time.perf_counter() - started, batches


def batch_costs(decoder: Decoder, prompt: list[int], runs: int = 7) -> dict[int, float]:
    decoder.llm.n_tokens = 0
    decoder.llm.eval(prompt[:512])  # in the server's batches (256)
    costs = {}
    for size in (1, 2, 3, 4, 8):
        times = []
        for _ in range(runs):
            decoder.llm.n_tokens = 512
            started = time.perf_counter()
            decoder.evaluate(prompt[512 : 512 + size])
            times.append(time.perf_counter() - started)
        costs[size] = 1000 * statistics.median(times)
    return costs


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--holes", type=int, default=40, help="holes per suite")
    parser.add_argument("--ks", default="1,3,8", help="draft lengths to try")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    ks = [int(k) for k in args.ks.split(",")]
    holes: list[Hole] = local_holes(args.holes, random.Random(args.seed))
    holes += cross_holes(args.holes, random.Random(args.seed))

    lane = ModelLane()
    backend = LlamaCppBackend(lane)
    lane.run_blocking(backend.load_blocking, ModelSettings(), None)
    assert backend.state == "ready", backend.error
    engine = CompletionEngine(backend)
    settings = CompletionSettings(max_tokens=1, timeout_ms=20000)
    decoder = Decoder(backend._llm)  # the server's own loaded context

    long_text = holes[0].text + "\n".join(h.text for h in holes[1:4])
    # All model work on the lane's thread, as in the server: llama.cpp work from a second
    # thread starts a second OpenMP pool, and with more threads than cores libgomp cuts the
    # spinning short (decoding here went from 43 to 78 ms a token).
    tokens = decoder.llm.tokenize(long_text.encode(), add_bos=False)
    costs = lane.run_blocking(batch_costs, decoder, tokens)
    print("batch of N tokens after a 512-token prompt (median ms; ratio to one token)")
    for size, ms in costs.items():
        print(f"  {size}: {ms:6.1f} ms  {ms / costs[1]:.2f}x")

    plain_seconds, plain_tokens = 0.0, 0
    spec_seconds = {k: 0.0 for k in ks}
    spec_batches = {k: 0 for k in ks}
    differing = {k: 0 for k in ks}

    async def prompt_of(hole: Hole) -> tuple[list[int], int]:
        """The server's prompt for the hole (a cold one: whole window) and its first token."""
        await lane.run(backend.cache.clear)
        suggestion = await engine.complete(hole.text, hole.offset, settings, CancelToken())
        assert suggestion.generation is not None
        length = suggestion.generation.prompt_tokens
        ids = [int(t) for t in decoder.llm.input_ids[: length + 1]]
        return ids[:length], ids[length] if decoder.llm.n_tokens > length else decoder.argmax(-1)

    for hole in holes:
        prompt, first = asyncio.run(prompt_of(hole))
        decoder.start(prompt, first)
        reference, seconds, count = lane.run_blocking(decoder.one_at_a_time)
        plain_seconds += seconds
        plain_tokens += count
        for k in ks:
            out, seconds, batches = lane.run_blocking(decoder.speculative, k)
            spec_seconds[k] += seconds
            spec_batches[k] += batches
            differing[k] += out != reference
    lane.run_blocking(backend._close)
    lane.shutdown()

    print(f"{len(holes)} holes, {DECODE} tokens each at most ({plain_tokens} decoded in all)")
    print(f"{'decoding':16} {'ms/token':>9} {'vs one at a time':>17} {'tokens/batch':>13} "
          f"{'outputs differ':>15}")  # fmt: skip
    per_token = 1000 * plain_seconds / plain_tokens
    print(f"{'one at a time':16} {per_token:9.1f} {1:17.2f} {1:13.2f} {'':>15}")
    for k in ks:
        ms = 1000 * spec_seconds[k] / plain_tokens
        print(f"{'speculative K=' + str(k):16} {ms:9.1f} {spec_seconds[k] / plain_seconds:17.2f} "
              f"{plain_tokens / max(spec_batches[k], 1):13.2f} "
              f"{differing[k]:>8} of {len(holes)}")  # fmt: skip


if __name__ == "__main__":
    main()
