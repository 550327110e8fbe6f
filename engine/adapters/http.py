"""One JSON POST to a model or storage provider, with the failure rules every HTTP adapter
shares: a transport error, a timeout (a total deadline, not only httpx's per-phase ones), a
non-2xx status or a body that is not JSON raises `DependencyFailed` naming the provider."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import httpx

from engine.errors import DependencyFailed

ERROR_BODY_CHARS = 300
"""How much of an error reply's body goes into the exception message."""


async def post_json(
    client: httpx.AsyncClient,
    provider: str,
    url: str,
    body: Mapping[str, Any],
    headers: Mapping[str, str],
    deadline_s: float,
) -> Any:
    """POST `body` as JSON and return the decoded JSON reply, within `deadline_s` seconds."""
    try:
        async with asyncio.timeout(deadline_s):
            response = await client.post(url, json=body, headers=headers, timeout=deadline_s)
    except (TimeoutError, httpx.TimeoutException) as exc:
        raise DependencyFailed(f"{provider}: timed out after {deadline_s:g}s") from exc
    except httpx.HTTPError as exc:
        raise DependencyFailed(f"{provider}: {type(exc).__name__}: {exc}") from exc
    if not response.is_success:
        excerpt = response.text[:ERROR_BODY_CHARS]
        raise DependencyFailed(f"{provider}: HTTP {response.status_code}: {excerpt}")
    try:
        return response.json()
    except ValueError as exc:  # json.JSONDecodeError and UnicodeDecodeError
        raise DependencyFailed(f"{provider}: reply body is not JSON") from exc
