"""The load benchmark's simulated agents: conversation material, one simulated turn, the
tally of what was sent, and the agent loop (pre_turn, post_turn, think)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pymongo import AsyncMongoClient

from benchmarks.load_stats import StoredCheck, check_stored, error_kind
from benchmarks.pipeline import stop_all
from engine.adapters.mongo import MEMORY, TRANSCRIPT_TURNS, TRANSCRIPTS
from engine.adapters.mongo.transcripts import THREADS_PER_READ
from schemas.inputs import turn_recorded
from services.endpoints import Endpoints
from services.sdk.client import MemoryClient

CITIES = ("Porto", "Lisbon", "Madrid", "Oslo", "Tallinn", "Riga", "Ghent", "Kyoto", "Lima")
FOODS = ("sourdough", "ramen", "lentil soup", "tacos", "pad thai", "risotto")
PROJECTS = ("billing migration", "Q3 roadmap", "mobile release", "data warehouse", "offsite")
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "weekend")
TOOLS = ("search_flights", "book_hotel", "calendar_lookup", "web_search", "send_email")
ASKS = (
    "Can you find me a flight to {city} next {day}?",
    "What should I cook tonight? I have {food} ingredients at home.",
    "Remind me what we decided about the {project} deadline.",
    "Summarise my notes from {day} about the {project}.",
    "Is it worth visiting {city} in the rainy season?",
    "Draft a short email to the team about the {project} status.",
    "What did I say I wanted to eat on {day}?",
)
REPLIES = (
    "Here is what I found: three options, the cheapest leaves early on {day}.",
    "Based on what you told me before, I would suggest {food} with a simple salad.",
    "We agreed to move the {project} deadline by one week and review it on {day}.",
    "Done. I kept it short and mentioned the open questions about the {project}.",
    "Yes, {city} is quieter then; pack a rain jacket.",
)
FACTS = ("I live in {city}.", "I just moved to {city}.", "My favourite food is {food}.")


def simulated_turn(rng: random.Random, tool_share: float, fact_share: float) -> dict[str, Any]:
    """A user message, the assistant's reply and maybe tool events (no scope)."""
    words = {
        "city": rng.choice(CITIES),
        "food": rng.choice(FOODS),
        "project": rng.choice(PROJECTS),
        "day": rng.choice(DAYS),
    }
    user = rng.choice(ASKS).format(**words)
    if rng.random() < fact_share:
        user = f"{rng.choice(FACTS).format(**words)} {user}"
    body: dict[str, Any] = {
        "userMessage": user,
        "assistantMessage": rng.choice(REPLIES).format(**words),
    }
    if rng.random() < tool_share:  # stamped at publish time (`now_ms + i`) by turn_recorded
        body["toolEvents"] = [
            {
                "name": tool,
                "args": {"query": words["city"]},
                "status": "success" if rng.random() < 0.9 else "error",
            }
            for tool in rng.sample(TOOLS, rng.randint(1, 2))
        ]
    return body


@dataclass(slots=True)
class Tally:
    pre_turn_ms: list[float] = field(default_factory=list)
    pre_turn_errors: Counter[str] = field(default_factory=Counter)
    pre_turn_cached: int = 0
    ack_ms: list[float] = field(default_factory=list)
    ack_errors: Counter[str] = field(default_factory=Counter)
    published: dict[str, int] = field(default_factory=dict)
    """Acknowledged turn id → messages it stores (user, assistant, tool events)."""
    uncertain: set[str] = field(default_factory=set)
    collisions: int = 0
    facts: int = 0
    cpu_busy_s: float = 0.0
    """CPU seconds the benchmark's processes used over the run (`tree_cpu_seconds`)."""


async def agent(
    client: MemoryClient,
    wallet: str,
    rng: random.Random,
    args: argparse.Namespace,
    deadline: float,
    tally: Tally,
) -> None:
    n = 0
    while time.monotonic() < deadline:
        user = rng.randrange(args.users_per_agent)
        # a user comes back to a thread for a while, then starts another one
        thread = f"u{user}-t{n // (4 * args.users_per_agent) + rng.randrange(2)}"
        scope = {"agentWallet": wallet, "userAddress": f"user{user}", "threadId": thread}
        turn = simulated_turn(rng, args.tool_share, args.fact_share)
        start = time.perf_counter()
        try:
            reply = await client.context(turn["userMessage"], scope, timeout=args.timeout)
        except Exception as exc:  # noqa: BLE001 - every failure is counted, the agent goes on
            tally.pre_turn_errors[error_kind(exc)] += 1
        else:
            tally.pre_turn_ms.append((time.perf_counter() - start) * 1000)
            tally.pre_turn_cached += reply.cached
        event = turn_recorded({**scope, **turn})
        start = time.perf_counter()
        try:
            async with asyncio.timeout(args.timeout):
                await client.publish_turn(event)
        except Exception as exc:  # noqa: BLE001
            tally.ack_errors[error_kind(exc)] += 1
            tally.uncertain.add(event.turn_id)
        else:
            tally.ack_ms.append((time.perf_counter() - start) * 1000)
            if event.turn_id in tally.published:
                tally.collisions += 1
            tally.published[event.turn_id] = len(event.messages) + len(event.tool_events)
            tally.facts += turn["userMessage"].startswith(("I live", "I just moved", "My fav"))
        n += 1
        if args.think_ms:
            await asyncio.sleep(args.think_ms / 1000)


# --- consumer groups and their lag -----------------------------------------------------------


async def stored_turns(uri: str, db: str, wallets: list[str], tally: Tally) -> StoredCheck:
    mongo: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(uri)
    try:
        where = {"agentWallet": {"$in": wallets}}
        heads = await mongo[db][TRANSCRIPTS].find(where, {"_id": 1}).to_list(length=None)
        threads = [h["_id"] for h in heads]
        turns = [
            doc
            for i in range(0, len(threads), THREADS_PER_READ)  # the turns' index is by thread
            for doc in await mongo[db][TRANSCRIPT_TURNS]
            .find(
                {"thread": {"$in": threads[i : i + THREADS_PER_READ]}},
                {"turnId": 1, "messages.turnId": 1},
            )
            .to_list(length=None)
        ]
        rows = (
            await mongo[db][MEMORY]
            .find({**where, "source": "session"}, {"metadata.turnId": 1})
            .to_list(length=None)
        )
    finally:
        await mongo.close()
    return check_stored(
        tally.published,
        tally.uncertain,
        [str(doc["turnId"]) for doc in turns],
        [m.get("turnId", "") for doc in turns for m in doc.get("messages", [])],
        [(row.get("metadata") or {}).get("turnId", "") for row in rows],
    )


RUN_OPTIONS = ("--log-level", "warning", "--http-port")
"""Then the port: that of /metrics for the process that runs `search`, else 0 (none)."""


@contextlib.contextmanager
def group_processes(
    ends: Endpoints,
    db: str,
    prefix: str,
    batches: Sequence[Sequence[str]],
    search_port: int | None = None,
) -> Iterator[list[subprocess.Popen[bytes]]]:
    """Each batch of groups in its own `python -m services run` process (stopped by PID);
    the one that runs `search` serves /metrics on `search_port`."""
    env = {
        **os.environ,
        **ends.to_env(),
        "MNEMOSTREAM_MONGO_DB": db,
        "MNEMOSTREAM_GROUP_PREFIX": prefix,
        "MNEMOSTREAM_SESSION_TIMEOUT_MS": "2000",
        "MNEMOSTREAM_HEARTBEAT_INTERVAL_MS": "500",
    }
    subprocess.run(
        [sys.executable, "-m", "services", "db", "init"], env=env, check=True, capture_output=True
    )
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for batch in batches:
            log_path = Path(tempfile.gettempdir()) / f"{prefix}-{'-'.join(batch)}.log"
            with log_path.open("wb") as log:
                port = str(search_port) if search_port and "search" in batch else "0"
                procs.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "services", "run", *batch, *RUN_OPTIONS, port],
                        env=env,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                    )
                )
        yield procs
    finally:
        stop_all(procs)
