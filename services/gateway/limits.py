"""The gateway's request-body limit: a body larger than `MAX_MESSAGE_BYTES` is answered 413
`{"error": ...}` before it is parsed, whether it announces its size (`Content-Length`) or
streams it (chunked): what could not be published as one Kafka message is not read."""

from __future__ import annotations

import json

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
