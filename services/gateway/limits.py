"""The gateway's request-body limits.

* A body larger than `MAX_MESSAGE_BYTES` is answered 413 `{"error": ...}` before it is
  parsed, whether it announces its size (`Content-Length`) or streams it (chunked): what
  could not be published as one Kafka message is not read (`BodyLimit`).
* A JSON body holding `NaN`, `Infinity` or `-Infinity` (not JSON, but Python's parser takes
  them) or a number too large for a float (`1e999`) is answered 422 naming where it is
  (`metadata.a: ...`), before any route sees it (`StrictJsonRoute`, the route class of every
  router): no number of a request is NaN or infinite.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from schemas.limits import MAX_MESSAGE_BYTES
from services.gateway.errors import ApiError

TOO_LARGE = f"request body too large: at most {MAX_MESSAGE_BYTES} bytes are accepted"


async def _reject(send: Send, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class BodyLimit:
    """ASGI middleware: 413 for a body over `max_bytes`, 400 for a malformed Content-Length.

    A streamed body is counted as it arrives; crossing the limit raises `ApiError(413)` from
    `receive`, which FastAPI passes on to the gateway's error handler (`{"error": ...}`)."""

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_MESSAGE_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = [v for k, v in scope.get("headers", ()) if k.lower() == b"content-length"]
        if declared:
            text = declared[0].decode("latin-1").strip()
            if not text.isdigit():
                await _reject(send, 400, "Content-Length must be a non-negative integer")
                return
            if int(text) > self.max_bytes:
                await _reject(send, 413, TOO_LARGE)
                return
        received = 0

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise ApiError(413, TOO_LARGE)
            return message

        await self.app(scope, limited, send)


def non_finite_path(value: object) -> str | None:
    """Where the first NaN or infinite number of a parsed JSON value is (`metadata.a`,
    `documents[0].score`; `body` for the value itself), None when it has none. Walks
    iteratively: no recursion."""
    stack: list[tuple[object, str]] = [(value, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            return path or "body"
        if isinstance(node, dict):
            dotted = f"{path}." if path else ""
            stack.extend((v, f"{dotted}{k}") for k, v in reversed(node.items()))
        elif isinstance(node, list):
            stack.extend((v, f"{path}[{i}]") for i, v in reversed(list(enumerate(node))))
    return None


class StrictJsonRequest(Request):
    """A request whose JSON body has finite numbers only (see `non_finite_path`)."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            parsed = json.loads(await self.body())
            where = non_finite_path(parsed)
            if where is not None:
                raise ApiError(
                    422, f"{where}: numbers must be finite (NaN and Infinity are not JSON)"
                )
            self._json = parsed
        return self._json


class StrictJsonRoute(APIRoute):
    """The route class of every gateway router: its handler reads `StrictJsonRequest`s."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict(request: Request) -> Response:
            return await handler(StrictJsonRequest(request.scope, request.receive))

        return strict
