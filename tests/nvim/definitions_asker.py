"""A stand-in for lsp-infer over stdio that only asks: for the Neovim plugin's
lspInfer/definitions through Neovim's real RPC path (rpc.lua runs a server request's handler in
a coroutine) without the model.

It answers `initialize` (no features), records the client's `experimental` capabilities, and
on the notification `test/ask` (the params of an lspInfer/definitions request) sends that
request to the editor. Every record is one JSON line appended to the file named by argv[1]:
`{"initialize": experimental}` and `{"answer": result, "error": error, "ms": elapsed}`.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import IO, Any


def read_message(stream: IO[bytes]) -> dict[str, Any] | None:
    length = 0
    while True:
        line = stream.readline()
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode("ascii").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    message: dict[str, Any] = json.loads(stream.read(length))
    return message


def write_message(stream: IO[bytes], message: dict[str, Any]) -> None:
    body = json.dumps(message).encode()
    stream.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    stream.flush()


def main() -> None:
    record = Path(sys.argv[1])
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    asked: dict[int, float] = {}  # request id -> when it was sent
    next_id = 0

    def log(entry: dict[str, Any]) -> None:
        with record.open("a") as file:
            file.write(json.dumps(entry) + "\n")

    while (message := read_message(stdin)) is not None:
        method = message.get("method")
        if method == "initialize":
            experimental = message["params"].get("capabilities", {}).get("experimental")
            log({"initialize": experimental})
            write_message(
                stdout,
                {"jsonrpc": "2.0", "id": message["id"], "result": {"capabilities": {}}},
            )
        elif method == "shutdown":
            write_message(stdout, {"jsonrpc": "2.0", "id": message["id"], "result": None})
        elif method == "exit":
            return
        elif method == "test/ask":
            next_id += 1
            asked[next_id] = time.monotonic()
            write_message(
                stdout,
                {
                    "jsonrpc": "2.0",
                    "id": next_id,
                    "method": "lspInfer/definitions",
                    "params": message["params"],
                },
            )
        elif method is None and message.get("id") in asked:
            started = asked.pop(message["id"])
            log(
                {
                    "answer": message.get("result"),
                    "error": message.get("error"),
                    "ms": (time.monotonic() - started) * 1000,
                }
            )
        elif "id" in message and method is not None:  # another request: not supported
            write_message(
                stdout,
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "error": {"code": -32601, "message": f"{method} not supported"},
                },
            )


if __name__ == "__main__":
    main()
