"""`mnemostream demo`: the whole pipeline on the embedded default, end to end.

Starts the local stack if nothing is configured or running, runs every consumer group in this
process, publishes a short conversation over two threads and two users, then prints the
packed Memory context that pre_turn returns for each user. Turn ids are fixed, so running it
again stores nothing new (idempotency you can watch).
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from pydantic import SecretStr
from rich.console import Console
from rich.panel import Panel

from schemas import topics
from schemas.requests import ContextReply
from services.endpoints import Endpoints, NotConfigured, read_endpoints
from services.groups.app import running_groups
from services.ops.stack import start_stack, stop_stack
from services.runtime import endpoints
from services.sdk.client import MemoryClient
from services.settings import Settings
from services.stream.offsets import wait_processed
from services.stream.security import kafka_options

AGENT = "0xDemoAgent"
CONVERSATION: list[dict[str, Any]] = [
    {
        "userAddress": "alice",
        "threadId": "trip",
        "turnId": "demo-alice-trip-1",
        "userMessage": "I'm planning a trip to Lisbon in May with my partner.",
        "assistantMessage": "Lovely! May is a great time for Lisbon. Any must-sees?",
    },
    {
        "userAddress": "alice",
        "threadId": "trip",
        "turnId": "demo-alice-trip-2",
        "userMessage": "We love seafood and want a quiet hotel near Alfama.",
        "assistantMessage": "Noted: seafood, and a quiet hotel close to Alfama.",
    },
    {
        "userAddress": "alice",
        "threadId": "work",
        "turnId": "demo-alice-work-1",
        "userMessage": "Remind me that the quarterly report is due on Friday.",
        "assistantMessage": "Sure, the quarterly report is due Friday.",
    },
    {
        "userAddress": "bob",
        "threadId": "garden",
        "turnId": "demo-bob-garden-1",
        "userMessage": "My tomato plants have yellow leaves, what should I do?",
        "assistantMessage": "Check watering first; yellow lower leaves often mean overwatering.",
    },
]
QUESTIONS: list[tuple[dict[str, str], str, bool]] = [
    # (scope, question, whether this user has memory about it)
    (
        {"userAddress": "alice", "threadId": "trip"},
        "Which hotel area did we pick for Lisbon?",
        True,
    ),
    ({"userAddress": "bob", "threadId": "garden"}, "Why are my tomato leaves yellow?", True),
    (
        {"userAddress": "bob", "threadId": "garden"},
        "Which hotel area did we pick for Lisbon?",
        False,
    ),
]


@asynccontextmanager
async def stack_for(settings: Settings, console: Console) -> AsyncIterator[Endpoints]:
    """Configured or running servers if any, else a temporary local stack."""
    try:
        yield endpoints(settings)
        return
    except NotConfigured:
        pass
    state = Path(tempfile.mkdtemp(prefix="mnemostream-demo-"))
    console.print("[dim]starting the local stack (Tansu, SecantusDB, Redis)…[/dim]")
    started = await asyncio.to_thread(start_stack, state)
    try:
        yield started
    finally:
        await asyncio.to_thread(stop_stack, state)
        console.print("[dim]local stack stopped[/dim]")


async def _ask(
    client: MemoryClient, scope: dict[str, Any], query: str, *, expect: bool
) -> ContextReply:
    """Ask; when memory is expected, poll until the turns have been processed (≤ 30 s)."""
    deadline = time.monotonic() + 30
    while True:
        reply = await client.context(query, scope, timeout=10)
        if reply.items or not expect or time.monotonic() > deadline:
            return reply
        await asyncio.sleep(0.1)


async def run_demo(settings: Settings, console: Console) -> None:
    async with stack_for(settings, console) as ends:
        local = Settings(
            kafka_bootstrap=ends.kafka_bootstrap,
            mongo_uri=SecretStr(ends.mongo_uri),
            redis_url=SecretStr(ends.redis_url),
            mongo_db=settings.mongo.db + "_demo",
            group_prefix="mnemostream-demo",
            session_timeout_ms=2000,
            heartbeat_interval_ms=500,
            embedder=settings.embedding.provider,
        )
        async with (
            running_groups(local, ["all"], broker_logs=False),
            MemoryClient(
                ends.kafka_bootstrap,
                timeout=settings.request_timeout_seconds,
                kafka_options=kafka_options(local),
            ) as client,
        ):
            now = int(time.time() * 1000) - 60_000
            last: dict[int, int] = {}
            for i, turn in enumerate(CONVERSATION):
                await client.record_turn({"agentWallet": AGENT, **turn, "occurredAt": now + i})
                if client.last_position is not None:
                    pos = client.last_position
                    last[pos.partition] = max(pos.offset, last.get(pos.partition, -1))
            console.print(f"published {len(CONVERSATION)} turns (2 users, 3 threads)")
            # until the transcripts and extraction groups have read them all
            for group in ("transcripts", "extraction"):
                for partition, offset in last.items():
                    await wait_processed(
                        ends.kafka_bootstrap,
                        f"{local.group_prefix}.{group}",
                        topics.TURNS,
                        partition,
                        offset,
                        timeout=60,
                        kafka_options=kafka_options(local),
                    )
            for scope, question, expect in QUESTIONS:
                scoped = {"agentWallet": AGENT, **scope}
                reply = await _ask(client, scoped, question, expect=expect)
                usage = reply.context_usage
                title = f"{scope['userAddress']} asks: {question}"
                body = reply.prompt or "(no memory for this user)"
                console.print(Panel(body, title=title, expand=False))
                if usage:
                    console.print(
                        f"[dim]totals={reply.totals} chars={usage.characters} "
                        f"raw={usage.raw_characters} cached={reply.cached}[/dim]"
                    )


def main(settings: Settings) -> None:
    console = Console()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run_demo(settings, console))


__all__ = ["main", "read_endpoints"]
