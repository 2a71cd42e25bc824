"""The protocol edge forgets a notification's future once its handler is done.

pygls 2.1 keeps every asynchronous handler's future in ``_request_futures`` and only
answering a request removes it, so without LspInferProtocol's fix each didChange (one per
keystroke) left a future, its lock and a uuid behind for good (RELIABILITY.md, the hour-long
switching soak). In process, without a model: notifications only.
"""

from __future__ import annotations

import asyncio
import io
from typing import Any

from pygls.io_ import StdoutWriter

from lsp_infer.lsp.server import create_server

URI = "file:///t.py"


def test_notifications_leave_no_futures_behind() -> None:
    async def run() -> tuple[int, int]:
        server = create_server({})
        protocol = server.protocol
        protocol.set_writer(StdoutWriter(io.BytesIO()))

        def send(message: dict[str, Any]) -> None:
            protocol.handle_message(protocol.structure_message({"jsonrpc": "2.0", **message}))

        send({"id": 1, "method": "initialize", "params": {"capabilities": {}}})
        send({"method": "initialized", "params": {}})
        document = {"uri": URI, "languageId": "python", "version": 1, "text": "x = 1\n"}
        send({"method": "textDocument/didOpen", "params": {"textDocument": document}})

        async def type_keys(first: int, count: int) -> int:
            for version in range(first, first + count):
                send({"method": "textDocument/didChange", "params": {
                    "textDocument": {"uri": URI, "version": version},
                    "contentChanges": [{"text": f"x = {version}\n"}]}})  # fmt: skip
            await asyncio.sleep(0.3)  # the handlers finish
            return len(protocol._request_futures)

        after_ten = await type_keys(2, 10)
        after_two_hundred_more = await type_keys(12, 200)
        return after_ten, after_two_hundred_more

    after_ten, after_more = asyncio.run(run())
    assert after_more == after_ten <= 2, (after_ten, after_more)
