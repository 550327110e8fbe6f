"""What sealing events costs (issue 31): stored turns/s without and with an event key, in the
same run, rounds alternating (plain, sealed, plain, sealed, …) on a shared, noisy machine.

    python -m benchmarks.sealing                         # from the repo root; own stack
    python -m benchmarks.sealing --turns 2000 --rounds 3 --json

Each round starts fresh consumer groups, each in its own `mnemostream run` process as a
deployment runs them, on a fresh database (their start-up and one warm-up turn are not
timed), publishes `--turns` turns (user + assistant, ~200 characters each) over
`--threads` threads with the SDK, `--concurrency` publishes in flight, and stops the clock
when the `transcripts` group has committed every turn (transcript, working buffer and
turn row stored; embedding deferred, as `benchmarks.throughput`'s `stored_per_s`).

* **plain**: no event key; the SDK publishes to `memory.turns.v1`; groups: transcripts.
* **sealed**: `MNEMOSTREAM_EVENT_ENCRYPTION_KEY` set on the groups, by one of two paths
  (`--path`, `services.sdk.sealed_path`):
  * `edge` (the default): the publisher holds the key, as a gateway given it does
    (`MemoryClient(sealer=...)`), seals each turn under its tenant's key and publishes it
    to `memory.turns.v1`; the transcripts group opens it;
  * `ingress`: the SDK publishes through `memory.ingress.v1` (`ingress=True`, a runtime
    holding no key), the `sealing` group seals each turn into `memory.turns.v1`, and the
    transcripts group opens it (the sealing and transcripts groups in two processes).

Reports each round's turns/s, the median of each mode and `sealed_vs_plain` (median ratio;
the goal is ≥ 0.90), and the CPU a stored turn cost the benchmark's own process tree (the
groups, the servers, the client) with `sealed_vs_plain_cpu` (plain ÷ sealed): on a shared
machine the rates move with what else runs, the CPU a turn far less. With `--json`,
exactly one JSON object on stdout.

`compare` is the same alternation for other benchmarks (`benchmarks.throughput` and
`benchmarks.replay` run it with `--sealing-rounds N`); an `Extra` measures more on each
round's log before its database is dropped (`benchmarks.sealing_replay`: the replay rate).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import platform
import statistics
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pydantic import SecretStr
from pymongo import AsyncMongoClient

from benchmarks.pipeline import endpoints, groups_process, tree_cpu_seconds
from engine.sealing import EventSealer
from schemas import topics
from services.endpoints import Endpoints
from services.runtime.edge import edge_sealer as gateway_sealer
from services.sdk.client import MemoryClient
from services.settings import Settings
from services.stream.offsets import end_offsets, start_at_end, wait_caught_up

WORDS = [
    "museum",
    "river",
    "walk",
    "dinner",
    "train",
    "ticket",
    "hotel",
    "breakfast",
    "garden",
    "market",
]


def body(agent: str, n: int, threads: int) -> dict[str, Any]:
    said = " ".join(WORDS[(n + i) % len(WORDS)] for i in range(16))
    return {
        "agentWallet": agent,
        "userAddress": f"user{n % threads}",
        "threadId": f"thread{n % threads}",
        "userMessage": f"Day {n}: please plan {said}.",
        "assistantMessage": f"Planned day {n}: {said}.",
    }


@dataclass(frozen=True, slots=True)
class Round:
    """One round's deployment: its groups' database and prefix, its agent, its event key."""

    ends: Endpoints
    tag: str
    path: str
    """"plain", or the sealed path: "edge" or "ingress"."""
    key: str | None
    """`MNEMOSTREAM_EVENT_ENCRYPTION_KEY` of the round's groups (sealed rounds only)."""

    @property
    def sealed(self) -> bool:
        return self.path != "plain"

    @property
    def db(self) -> str:
        return f"bench_{self.tag}"

    @property
    def prefix(self) -> str:
        return f"bench-{self.tag}"

    @property
    def agent(self) -> str:
        return f"0xseal{self.tag}"


class Extra(Protocol):
    """More to measure on each round: `before` runs before its first publish, `after` once
    its turns are stored and its groups stopped, before its database is dropped (a line of
    detail for the round's report)."""

    async def before(self, r: Round) -> None: ...

    async def after(self, r: Round, turns: int) -> str: ...


async def one_round(
    ends: Endpoints, path: str, args: argparse.Namespace, extra: Extra | None = None
) -> tuple[Rate, str]:
    """(stored turns/s, a line of detail) of one round (`path`: "plain", "edge" or
    "ingress"): each group in its own `mnemostream run` process."""
    key = base64.b64encode(os.urandom(32)).decode() if path != "plain" else None
    r = Round(ends, uuid.uuid4().hex[:8], path, key)
    ingress = path == "ingress"
    processes = [["sealing"], ["transcripts"]] if ingress else [["transcripts"]]
    env = {"MNEMOSTREAM_EXTRACTOR": "none", "MNEMOSTREAM_EMBEDDING_DEFERRED": "true"}
    if key is not None:
        env["MNEMOSTREAM_EVENT_ENCRYPTION_KEY"] = key
    await start_at_end(
        ends.kafka_bootstrap,
        [
            (f"{r.prefix}.{g[0]}", t)
            for g, t in zip(processes, STAGES[-len(processes) :], strict=True)
        ],
    )
    if extra is not None:
        await extra.before(r)
    with contextlib.ExitStack() as running:
        procs = [running.enter_context(groups_process(ends, r.tag, n, env)) for n in processes]
        async with (
            edge_sealer(r) as sealer,
            MemoryClient(
                ends.kafka_bootstrap, timeout=30, ingress=ingress, sealer=sealer
            ) as client,
        ):
            await client.record_turn(body(r.agent, -1, args.threads))  # the groups have joined
            await caught_up(ends, r.prefix, ingress, timeout=180)
            queue = iter(range(args.turns))

            async def publisher() -> None:
                for n in queue:
                    await client.record_turn(body(r.agent, n, args.threads))

            began, cpu = time.monotonic(), [cpu_seconds(p.pid) for p in procs]
            stack = tree_cpu_seconds()
            await asyncio.gather(*(publisher() for _ in range(args.concurrency)))
            published = time.monotonic() - began
            await caught_up(ends, r.prefix, ingress, timeout=900)
            seconds = time.monotonic() - began
            used = [cpu_seconds(p.pid) - c for p, c in zip(procs, cpu, strict=True)]
            stack = tree_cpu_seconds() - stack
    groups = ", ".join(f"{n[0]} {u:.1f}" for n, u in zip(processes, used, strict=True))
    per_turn = stack * 1000 / args.turns
    detail = (
        f"published in {published:.2f} s, stored in {seconds:.2f} s; "
        f"CPU seconds of the groups: {groups}; of the whole stack {stack:.1f} "
        f"({per_turn:.2f} ms a turn)"
    )
    mongo: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(ends.mongo_uri, retryWrites=False)
    try:
        stored = await mongo[r.db]["transcript_turns"].count_documents({"agentWallet": r.agent})
        if stored != args.turns + 1:
            raise RuntimeError(f"{stored} of {args.turns + 1} turns stored")
        if extra is not None:
            detail += "\n  " + await extra.after(r, args.turns + 1)
    finally:
        await mongo.drop_database(r.db)
        await mongo.close()
    return Rate(args.turns / seconds, per_turn), detail


def edge_sealer(r: Round) -> contextlib.AbstractAsyncContextManager[EventSealer | None]:
    """The publisher's sealer on an "edge" round, built as `mnemostream gateway` builds it
    from the round's key (`services.runtime.edge`: the tenant keys in the round's database,
    which its groups read them from); None on the other rounds."""
    if r.path != "edge" or r.key is None:
        return contextlib.nullcontext(None)
    settings = Settings(
        mongo_uri=SecretStr(r.ends.mongo_uri),
        mongo_db=r.db,
        event_encryption_key=SecretStr(r.key),
    )
    return gateway_sealer(settings)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


STAGES = ((topics.INGRESS), (topics.TURNS))
"""The topic each process's group reads (the sealing group's, then the transcripts')."""


async def caught_up(ends: Endpoints, prefix: str, ingress: bool, timeout: float) -> None:
    """Until the groups have committed everything published so far, in order."""
    for group, topic in zip(("sealing", "transcripts"), STAGES, strict=True):
        if group == "sealing" and not ingress:
            continue
        done = await end_offsets(ends.kafka_bootstrap, [topic])
        await wait_caught_up(ends.kafka_bootstrap, f"{prefix}.{group}", done, timeout=timeout)


@dataclass(frozen=True)
class Rate:
    """One round: stored turns a second, and the CPU a stored turn cost the benchmark's whole
    process tree (the groups, the servers, the publishing client: `tree_cpu_seconds`)."""

    per_s: float
    cpu_ms: float


def summary(plain: Sequence[float], sealed: Sequence[float]) -> dict[str, Any]:
    """Each mode's median rate, its rounds, and `sealed_vs_plain` (median ÷ median)."""
    p, s = statistics.median(plain), statistics.median(sealed)
    return {
        "plain_per_s": round(p, 1),
        "sealed_per_s": round(s, 1),
        "sealed_vs_plain": round(s / p, 3),
        "plain_rounds_per_s": [round(x, 1) for x in plain],
        "sealed_rounds_per_s": [round(x, 1) for x in sealed],
    }


def cpu_summary(plain: Sequence[float], sealed: Sequence[float]) -> dict[str, Any]:
    """Each mode's median CPU a stored turn (ms), its rounds, and `sealed_vs_plain_cpu`
    (plain ÷ sealed: the share of its plain rate a CPU-bound machine keeps when sealing),
    which moves far less with what else the machine runs than the rates do."""
    p, s = statistics.median(plain), statistics.median(sealed)
    return {
        "plain_cpu_ms_per_turn": round(p, 3),
        "sealed_cpu_ms_per_turn": round(s, 3),
        "sealed_vs_plain_cpu": round(p / s, 3) if s else None,
        "plain_rounds_cpu_ms": [round(x, 3) for x in plain],
        "sealed_rounds_cpu_ms": [round(x, 3) for x in sealed],
    }


async def compare(
    ends: Endpoints,
    *,
    turns: int,
    rounds: int,
    threads: int = 50,
    concurrency: int = 64,
    extra: Extra | None = None,
    label: str = "sealing",
    path: str = "edge",
) -> dict[str, Any]:
    """`rounds` rounds of each mode, alternating (plain first; sealed by `path`): `summary`
    of the stored turns/s, with `turns`, `rounds`, `path` and `load_average` (1 min, at the
    start and the end)."""
    args = argparse.Namespace(turns=turns, threads=threads, concurrency=concurrency)
    rates: dict[str, list[Rate]] = {"plain": [], "sealed": []}
    load = [round(os.getloadavg()[0], 2)]
    for n in range(rounds * 2):
        mode = "plain" if n % 2 == 0 else "sealed"
        shown = mode if mode == "plain" else f"sealed ({path})"
        print(f"[{label}] round {n + 1}: {shown}", file=sys.stderr, flush=True)
        rate, detail = await one_round(ends, "plain" if mode == "plain" else path, args, extra)
        rates[mode].append(rate)
        print(f"  {rate.per_s:8.1f} stored turns/s; {detail}", file=sys.stderr, flush=True)
    load.append(round(os.getloadavg()[0], 2))
    return {
        "turns": turns,
        "rounds": rounds,
        "path": path,
        **summary([r.per_s for r in rates["plain"]], [r.per_s for r in rates["sealed"]]),
        **cpu_summary([r.cpu_ms for r in rates["plain"]], [r.cpu_ms for r in rates["sealed"]]),
        "load_average": load,
    }


PATHS = ("edge", "ingress")
PATH_HELP = (
    "how sealed turns are published: sealed by the publisher (a gateway given the key) or "
    "through the ingress and the sealing group (a runtime holding no key)"
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The sealing rounds' options of the benchmarks that run them (`throughput`, `replay`)."""
    p.add_argument("--sealing-rounds", type=int, default=2, help="of each mode; 0: none")
    p.add_argument("--sealing-turns", type=int, default=2000, help="turns a sealing round")
    p.add_argument("--sealing-path", choices=PATHS, default="edge", help=PATH_HELP)


async def compare_args(
    ends: Endpoints, args: argparse.Namespace, label: str, extra: Extra | None = None
) -> dict[str, Any]:
    """`compare` with the options `add_arguments` added."""
    return await compare(
        ends,
        turns=args.sealing_turns,
        rounds=args.sealing_rounds,
        extra=extra,
        label=label,
        path=args.sealing_path,
    )


async def main(args: argparse.Namespace) -> dict[str, Any]:
    with endpoints() as ends:
        found = await compare(
            ends,
            turns=args.turns,
            rounds=args.rounds,
            threads=args.threads,
            concurrency=args.concurrency,
            path=args.path,
        )
    return {
        **found,
        "concurrency": args.concurrency,
        "machine": f"{platform.machine()} {platform.system()}, {os.cpu_count()} cpus",
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each mode")
    parser.add_argument("--threads", type=int, default=50)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--path", choices=PATHS, default="edge", help=PATH_HELP)
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args()
    result = asyncio.run(main(args))
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:22} {value}")
