"""`lsp-infer serve` driven over raw stdio frames, for tests that must send what a well-behaved
client never would (malformed JSON, wrong params, cancels at any moment) and count answers."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any


class RawServer:
    def __init__(
        self, env: dict[str, str] | None = None, root: Path | None = None, log_file: str = ""
    ) -> None:
        base = {k: v for k, v in os.environ.items() if not k.startswith("LSP_INFER_")}
        logging = ["--log-level", "debug", "--log-file", log_file] if log_file else []
        self.process = subprocess.Popen(
            [sys.executable, "-m", "lsp_infer", "serve", "--log-level", "warning", *logging],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**base, **(env or {})},
        )
        self.responses: dict[Any, list[dict[str, Any]]] = {}
        self.notifications: queue.Queue[dict[str, Any]] = queue.Queue()
        self.stray: list[bytes] = []  # anything on stdout that is not a frame
        self._next_id = 0
        self._lock = threading.Lock()
        # Requests from the server answered by the caller: method -> handler(params, reply);
        # reply(result) may be called later, from any thread.
        self.handlers: dict[str, Callable[[Any, Callable[[Any], None]], None]] = {}
        self._write_lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.root = root or Path.cwd()

    # -- wire ------------------------------------------------------------------------

    def send_raw(self, body: bytes, length: int | None = None) -> None:
        header = f"Content-Length: {len(body) if length is None else length}\r\n\r\n".encode()
        assert self.process.stdin is not None
        with self._write_lock:
            self.process.stdin.write(header + body)
            self.process.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.send_raw(json.dumps(message).encode())

    def request(self, method: str, params: Any) -> int:
        with self._lock:
            self._next_id += 1
            msg_id = self._next_id
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return msg_id

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        while True:
            line = stream.readline()
            if not line:
                return
            if not line.startswith(b"Content-Length:"):
                self.stray.append(line)
                continue
            length = int(line.split(b":")[1])
            while stream.readline() not in (b"\r\n", b""):
                pass
            message = json.loads(stream.read(length))
            if "method" in message and "id" in message:  # a request from the server
                reply = self._reply_to(message["id"])
                handler = self.handlers.get(message["method"])
                if handler is not None:
                    handler(message.get("params"), reply)
                else:
                    reply(self._answer(message))
            elif "method" in message:
                self.notifications.put(message)
            else:
                with self._lock:
                    self.responses.setdefault(message.get("id"), []).append(message)

    def _reply_to(self, msg_id: Any) -> Callable[[Any], None]:
        def reply(result: Any) -> None:
            self.send({"jsonrpc": "2.0", "id": msg_id, "result": result})

        return reply

    def _answer(self, request: dict[str, Any]) -> Any:
        if request["method"] == "workspace/configuration":
            return [None for _ in request["params"]["items"]]
        if request["method"] == "workspace/applyEdit":
            return {"applied": False}
        return None

    # -- helpers ---------------------------------------------------------------------

    def open(self, uri: str, text: str, version: int = 1) -> None:
        self.notify(
            "textDocument/didOpen",
            {
                "textDocument": {
                    "uri": uri,
                    "languageId": "python",
                    "version": version,
                    "text": text,
                }
            },
        )

    def change(
        self, uri: str, version: int, start: dict[str, int], end: dict[str, int], text: str
    ) -> None:
        self.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [{"range": {"start": start, "end": end}, "text": text}],
            },
        )

    def inline(self, uri: str, line: int, character: int) -> int:
        return self.request(
            "textDocument/inlineCompletion",
            {
                "textDocument": {"uri": uri},
                "position": {"line": line, "character": character},
                "context": {"triggerKind": 2},
            },
        )

    def wait(self, msg_id: int, timeout: float = 120) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if self.responses.get(msg_id):
                    return self.responses[msg_id][0]
            if self.process.poll() is not None:
                raise AssertionError(f"the server died (exit {self.process.returncode})")
            time.sleep(0.01)
        raise AssertionError(f"no response to request {msg_id} within {timeout} s")

    def answer_counts(self) -> Counter[Any]:
        with self._lock:
            return Counter({key: len(value) for key, value in self.responses.items()})

    def initialize(
        self, options: dict[str, Any], experimental: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        root = self.root.as_uri()
        result = self.wait(
            self.request(
                "initialize",
                {
                    "processId": os.getpid(),
                    "rootUri": root,
                    "capabilities": {
                        "general": {"positionEncodings": ["utf-16"]},
                        "experimental": experimental,
                    },
                    "initializationOptions": options,
                    "workspaceFolders": [{"uri": root, "name": "ws"}],
                },
            )
        )
        self.notify("initialized", {})
        return result

    def close(self) -> None:
        try:
            self.wait(self.request("shutdown", None), timeout=30)
            self.notify("exit", None)
            self.process.wait(timeout=30)
        except Exception:
            self.process.kill()
            self.process.wait()
