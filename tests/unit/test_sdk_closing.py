"""`ClosingHooks`: what a client runs before it closes (an adapter's buffered writes)."""

from __future__ import annotations

import logging

import pytest

from services.sdk.closing import ClosingHooks


class Closed:
    def __init__(self) -> None:
        self.calls: list[str] = []

    async def close(self) -> None:
        self.calls.append("closed")


class Client(ClosingHooks, Closed):
    pass


async def test_hooks_run_in_order_before_the_client_closes_and_once() -> None:
    client = Client()

    async def hook(name: str) -> None:
        client.calls.append(name)

    client.before_close(lambda: hook("first"))
    client.before_close(lambda: hook("second"))
    await client.close()
    await client.close()  # closed again: the hooks ran already
    assert client.calls == ["first", "second", "closed", "closed"]


async def test_a_failing_hook_is_logged_and_the_others_and_the_close_still_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    client = Client()

    async def broken() -> None:
        raise RuntimeError("broker gone")

    async def fine() -> None:
        client.calls.append("fine")

    client.before_close(broken)
    client.before_close(fine)
    with caplog.at_level(logging.ERROR, logger="services.sdk.closing"):
        await client.close()
    assert client.calls == ["fine", "closed"]
    assert "broker gone" in caplog.text
