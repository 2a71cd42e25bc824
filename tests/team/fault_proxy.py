"""A fault-injecting HTTP proxy in front of a real OpenAI-compatible server (tests only).

    python fault_proxy.py UPSTREAM_URL PORT LOG_FILE

``http://127.0.0.1:PORT/<mode>/v1/...`` forwards to ``UPSTREAM_URL/v1/...`` after injecting
the fault named by <mode>:
  ok         forward untouched
  500        HTTP 500 with a JSON error
  malformed  HTTP 200 whose body (or first event) is not JSON
  cut        forward, but break the connection after the first chunk of the answer
  slow       wait 5 s, then forward (for client timeouts shorter than that)
  hang       accept the request and never answer
  429once    HTTP 429 with Retry-After: 1 for the first request of each path, then forward
Every request body is appended to LOG_FILE, so tests can check what left the client.
"""

from __future__ import annotations

import asyncio
import sys

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

UPSTREAM, PORT, LOG_FILE = sys.argv[1].rstrip("/"), int(sys.argv[2]), sys.argv[3]
seen_429: set[str] = set()
upstream = httpx.AsyncClient(timeout=600)


async def proxy(request: Request) -> Response:
    mode, path = request.path_params["mode"], request.path_params["path"]
    body = await request.body()
    with open(LOG_FILE, "ab") as log:
        log.write(f"{mode} {request.method} /{path}\n".encode() + body + b"\n")
    if mode == "500":
        return JSONResponse({"error": {"message": "internal error (injected)"}}, status_code=500)
    if mode == "malformed":
        if b'"stream": true' in body or b'"stream":true' in body:
            return Response(b"data: {this is not json\n\n", media_type="text/event-stream")
        return Response(b"{this is not json", media_type="application/json")
    if mode == "hang":
        await asyncio.sleep(3600)
    if mode == "slow":
        await asyncio.sleep(5)
    if mode == "429once" and path not in seen_429:
        seen_429.add(path)
        return JSONResponse({"error": "busy"}, status_code=429, headers={"Retry-After": "1"})
    headers = {
        k: v for k, v in request.headers.items() if k.lower() in ("authorization", "content-type")
    }
    forwarded = upstream.build_request(
        request.method, f"{UPSTREAM}/v1/{path}", headers=headers, content=body
    )
    answer = await upstream.send(forwarded, stream=True)

    async def chunks():
        sent = 0
        async for chunk in answer.aiter_raw():
            yield chunk
            sent += 1
            if mode == "cut" and sent >= 1:
                await answer.aclose()
                raise ConnectionResetError("cut midway (injected)")
        await answer.aclose()

    media = answer.headers.get("content-type", "application/json")
    return StreamingResponse(chunks(), status_code=answer.status_code, media_type=media)


async def health(request: Request) -> Response:
    return Response(b"", status_code=200)


app = Starlette(routes=[
    Route("/{mode}/v1/{path:path}", proxy, methods=["GET", "POST"]),
    Route("/{mode}/health", health),
])  # fmt: skip

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
