"""A fault-injecting HTTP proxy in front of a real OpenAI-compatible server (tests only).

    python fault_proxy.py UPSTREAM_URL PORT LOG_FILE

``http://127.0.0.1:PORT/<mode>/v1/...`` forwards to ``UPSTREAM_URL/v1/...`` after injecting
the fault named by <mode>:
  ok         forward untouched
  500        HTTP 500 with a JSON error
  503        HTTP 503 (a replica that is up but not serving: failover material)
  malformed  HTTP 200 whose body (or first event) is not JSON
  cut        forward, but break the connection after the first chunk of the answer
  slow       wait 5 s, then forward (for client timeouts shorter than that)
  slowonce   like slow for the first request of each path, then forward at once
  hang       accept the request and never answer
  429once    HTTP 429 with Retry-After: 1 for the first request of each path, then forward
  marked     wait 6 s before forwarding a request whose body contains SLOWMARK, else forward
  zeta       answer a completions request as a trained Zeta next-edit model would (no such
             model's weights can be fetched here): its prompt's editable region written out
             again with ``self.z = z`` after a ``self.y = y`` line, streamed with logprobs
  sweep      the same as a trained Sweep next-edit model would: the prompt's current window
             written out again with that line, ended by ``<|file_sep|>`` (its special token,
             in the text as vLLM writes it with skip_special_tokens false)
  sweepstop  the same without the marker, the stream ended ("stop"), as a server that stops
             at ``<|file_sep|>`` as an end-of-generation token and leaves it out (llama.cpp's)
Every request is appended to LOG_FILE as ``#<n> <mode> <METHOD> /<path>`` and its body, so
tests can check what left the client. So is its end: ``DONE #<n>`` when the whole answer
went out (for a stream: once its ``data: [DONE]`` did), ``GONE #<n>`` when the client
closed the request first (the proxy then closes its
upstream request too, as a client disconnect reaches vLLM).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator

import anyio
import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

UPSTREAM, PORT, LOG_FILE = sys.argv[1].rstrip("/"), int(sys.argv[2]), sys.argv[3]
seen_once: set[tuple[str, str]] = set()
upstream = httpx.AsyncClient(timeout=600)
numbers = iter(range(1, 10**9))


def log(line: bytes) -> None:
    with open(LOG_FILE, "ab") as file:
        file.write(line)


async def disconnected(request: Request) -> None:
    """Returns when the client goes away (the body has been read already)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


def first_time(mode: str, path: str) -> bool:
    if (mode, path) in seen_once:
        return False
    seen_once.add((mode, path))
    return True


async def delay_for(mode: str, path: str, body: bytes) -> float:
    if mode == "hang":
        return 3600.0
    if mode == "slow" or (mode == "slowonce" and first_time(mode, path)):
        return 5.0
    if mode == "marked" and b"SLOWMARK" in body:
        return 6.0
    return 0.0


async def proxy(request: Request) -> Response:
    mode, path = request.path_params["mode"], request.path_params["path"]
    body = await request.body()
    number = next(numbers)
    log(f"#{number} {mode} {request.method} /{path}\n".encode() + body + b"\n")
    if mode == "500":
        return JSONResponse({"error": {"message": "internal error (injected)"}}, status_code=500)
    if mode == "503":
        return JSONResponse({"error": {"message": "unavailable (injected)"}}, status_code=503)
    if mode == "malformed":
        if b'"stream": true' in body or b'"stream":true' in body:
            return Response(b"data: {this is not json\n\n", media_type="text/event-stream")
        return Response(b"{this is not json", media_type="application/json")
    if mode == "zeta":
        return zeta_answer(json.loads(body)["prompt"])
    if mode in ("sweep", "sweepstop"):
        return sweep_answer(json.loads(body)["prompt"], marker=mode == "sweep")
    if mode == "429once" and first_time(mode, path):
        return JSONResponse({"error": "busy"}, status_code=429, headers={"Retry-After": "1"})
    headers = {
        k: v for k, v in request.headers.items() if k.lower() in ("authorization", "content-type")
    }
    forwarded = upstream.build_request(
        request.method, f"{UPSTREAM}/v1/{path}", headers=headers, content=body
    )

    async def answer() -> httpx.Response:
        await asyncio.sleep(await delay_for(mode, path, body))
        return await upstream.send(forwarded, stream=True)

    # Until the answer's headers arrive, a client that goes away cancels the upstream request.
    sending = asyncio.ensure_future(answer())
    gone = asyncio.ensure_future(disconnected(request))
    await asyncio.wait([sending, gone], return_when=asyncio.FIRST_COMPLETED)
    if not sending.done():
        sending.cancel()
        log(f"GONE #{number}\n".encode())
        return Response(b"", status_code=499)
    gone.cancel()
    upstream_answer = sending.result()

    async def chunks() -> AsyncIterator[bytes]:
        sent, finished = 0, False
        try:
            async for chunk in upstream_answer.aiter_raw():
                # A client may hang up as soon as it has the end of the stream.
                finished = finished or b"data: [DONE]" in chunk
                yield chunk
                sent += 1
                if mode == "cut" and sent >= 1:
                    raise ConnectionResetError("cut midway (injected)")
            finished = True
        finally:
            log(f"{'DONE' if finished else 'GONE'} #{number}\n".encode())
            with anyio.CancelScope(shield=True):  # close upstream even when cancelled
                await upstream_answer.aclose()

    media = upstream_answer.headers.get("content-type", "application/json")
    return StreamingResponse(chunks(), status_code=upstream_answer.status_code, media_type=media)


def zeta_answer(prompt: str) -> Response:
    """A Zeta model's answer to ``prompt`` (next_edit/zeta.py), as a completions stream."""
    start, end = "<|editable_region_start|>\n", "\n<|editable_region_end|>"
    region = prompt[prompt.index(start) + len(start) : prompt.index(end)]
    region = region.replace("<|user_cursor_is_here|>", "")
    region = region.replace("self.y = y\n", "self.y = y\n        self.z = z\n")
    return streamed(f"```{start}{region}{end}\n```")


def sweep_answer(prompt: str, marker: bool) -> Response:
    """A Sweep model's answer to ``prompt`` (next_edit/sweep.py), as a completions stream
    ended by its marker, or (not ``marker``) by the server without it."""
    current = prompt.index("\n", prompt.index("<|file_sep|>current/")) + 1
    window = prompt[current : prompt.index("<|file_sep|>updated/")]
    return streamed(window.replace("self.y = y\n", "self.y = y\n        self.z = z\n")
                    + ("<|file_sep|>" if marker else ""))  # fmt: skip


def streamed(text: str) -> Response:
    """``text`` as a completions stream of 16-character pieces, each token sure."""
    pieces = [text[at : at + 16] for at in range(0, len(text), 16)]

    def event(piece: str, finish: str | None) -> bytes:
        logprobs = {"tokens": [piece], "token_logprobs": [-0.01]} if piece else None
        choice = {"index": 0, "text": piece, "logprobs": logprobs, "finish_reason": finish}
        return f"data: {json.dumps({'choices': [choice]})}\n\n".encode()

    events = [event(piece, None) for piece in pieces] + [event("", "stop"), b"data: [DONE]\n\n"]
    return Response(b"".join(events), media_type="text/event-stream")


async def health(request: Request) -> Response:
    return Response(b"", status_code=200)


app = Starlette(routes=[
    Route("/{mode}/v1/{path:path}", proxy, methods=["GET", "POST"]),
    Route("/{mode}/health", health),
])  # fmt: skip

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
