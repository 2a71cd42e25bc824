"""The model lane: one dedicated thread that owns the model.

llama.cpp contexts are not thread-safe, and keeping the model off pygls' shared thread pool
means a busy model never delays reading the next message (e.g. a ``$/cancelRequest``). One
thread also means one OpenMP thread pool: llama.cpp work from a second thread starts another,
and with more OpenMP threads than cores libgomp cuts its spinning short (threads.thread_waiting):
decoding went from 43 to 76-84 ms a token in a two-core check, even back on the first thread.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


class ModelLane:
    """A single worker thread that owns the model."""

    def __init__(self, name: str = "lsp-infer-model") -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self.pending = 0  # jobs submitted and not finished (queue depth + the running one)

    def submit(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """Queue work now (not when the caller first awaits), so queue order is call order.
        Cancelling the returned future before the work starts takes it out of the queue."""
        loop = asyncio.get_running_loop()
        self.pending += 1
        work = self._executor.submit(fn, *args)
        work.add_done_callback(lambda _: self._finished(loop))
        return asyncio.wrap_future(work, loop=loop)

    def _finished(self, loop: asyncio.AbstractEventLoop) -> None:
        def count() -> None:
            self.pending -= 1

        with contextlib.suppress(RuntimeError):  # the loop closed: the server has exited
            loop.call_soon_threadsafe(count)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        return await self.submit(fn, *args)

    def run_blocking(self, fn: Callable[..., T], *args: Any) -> T:
        """For the CLI, which has no event loop."""
        return self._executor.submit(fn, *args).result()

    def shutdown(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
