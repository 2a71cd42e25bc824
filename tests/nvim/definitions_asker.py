"""A stand-in for lsp-infer over stdio that only asks: for the Neovim plugin's answers to the
server's requests (lspInfer/definitions, lspInfer/references) through Neovim's real RPC path
(rpc.lua runs a server request's handler in a coroutine) without the model.

Usage: definitions_asker.py RECORD [--encoding utf-8|utf-16|utf-32]. It answers `initialize`
(full text sync, the position encoding given, utf-16 by default, and no features), records the
client's `experimental` capabilities and the document versions Neovim sends, and on the
notification `test/ask` {"method": ..., "params": ...} sends that request to the editor. Every
record is one JSON line appended to RECORD: `{"initialize": experimental}`,
`{"version": n, "uri": ...}` (didOpen, didChange) and
`{"method": ..., "answer": result, "error": error, "ms": elapsed}`.
"""

from __future__ import annotations

import argparse
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
    parser = argparse.ArgumentParser()
    parser.add_argument("record", type=Path)
    parser.add_argument("--encoding", default="utf-16", choices=["utf-8", "utf-16", "utf-32"])
    args = parser.parse_args()
    record: Path = args.record
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    asked: dict[int, tuple[str, float]] = {}  # request id -> its method, when it was sent
    next_id = 0

    def log(entry: dict[str, Any]) -> None:
        with record.open("a") as file:
            file.write(json.dumps(entry) + "\n")

    while (message := read_message(stdin)) is not None:
        method = message.get("method")
        if method == "initialize":
            experimental = message["params"].get("capabilities", {}).get("experimental")
            log({"initialize": experimental})
            capabilities = {"positionEncoding": args.encoding, "textDocumentSync": 1}
            write_message(
                stdout,
                {"jsonrpc": "2.0", "id": message["id"], "result": {"capabilities": capabilities}},
            )
        elif method == "shutdown":
            write_message(stdout, {"jsonrpc": "2.0", "id": message["id"], "result": None})
        elif method == "exit":
            return
        elif method in ("textDocument/didOpen", "textDocument/didChange"):
            document = message["params"]["textDocument"]
            log({"version": document["version"], "uri": document["uri"]})
        elif method == "test/ask":
            next_id += 1
            asked[next_id] = (message["params"]["method"], time.monotonic())
            write_message(
                stdout,
                {
                    "jsonrpc": "2.0",
                    "id": next_id,
                    "method": message["params"]["method"],
                    "params": message["params"]["params"],
                },
            )
        elif method is None and message.get("id") in asked:
            asked_method, started = asked.pop(message["id"])
            log(
                {
                    "method": asked_method,
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
