"""Stream throughput (issue 15): publish, store, embed, visibility, replay and start-up rates.

    python -m benchmarks.throughput --turns 20000 --json     # from the repo root; own stack
    python -m benchmarks.throughput --turns 2000 --seconds 4 --processes 2

Starts its own stack (Kafka-protocol broker, MongoDB-wire server, Redis; or the servers named
by MNEMOSTREAM_KAFKA_BOOTSTRAP / _MONGO_URI / _REDIS_URL) and runs every consumer group as
separate `mnemostream run <group>` processes on a fresh database: `--processes` each of the
writer groups (`transcripts`, and `embeddings` where it exists), one `search` and one
`invalidation`. Then, in order:

1. `ready_all_s`, `ready_one_s`: `mnemostream run all` (then `run transcripts`) started until
   its `/readyz` answers 200 (topics already created, a fresh database), then stopped.
2. `embedder_raw_per_s`: turns/s of the local MiniLM in this process on what the stage
   embeds for a turn (`embed_units`: its text, each message), batches of 32, groups idle.
3. `publish_per_s`: `--turns` turns (user + assistant, 200-400 characters, seeded) over
   `--agents` × `--users` threads, published with the SDK by `--concurrency` tasks, until
   every one is acknowledged; `stored_per_s`: from the first publish until every turn is in
   its transcript, working buffer and `session` memory row; `embedded_per_s`: until every
   turn row has its vector (without an `embeddings` group, vectors are computed while
   storing: the same as `stored_per_s`, with a note).
4. `visible_p50_ms` / `_p95_ms`: `--rate` turns/s offered for `--seconds`; every 20th turn
   carries a unique word, and pre_turn is polled (one request in flight per marker) until
   its packed context shows it; `visible_poll_p50_ms` / `_p95_ms`: each poll's own time.
5. `replay_per_s`: the groups stopped, `services.ops.replay` rebuilds the log into a fresh
   database (records/s, group joins included), then `services.ops.verify.compare`.
6. `store_ceiling_per_s`: `benchmarks.store_ceiling`'s `record_turns` on the same server at
   the groups' batch size (12,000 turns of the same text, no broker); `stored_vs_ceiling`.
7. `sealing`: stored turns/s without and with an event key, `--sealing-rounds` rounds of each
   (`benchmarks.sealing.compare`, `--sealing-turns` turns a round, `--sealing-path`; 0 rounds:
   skipped).

One JSON object on stdout with `--json`, else readable lines (progress on stderr). Group
logs: `$TMPDIR/mnemostream-throughput-<tag>-<group>-<n>.log`.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import platform
import sys
import time
import uuid
from collections.abc import Sequence
from typing import Any

from pymongo import AsyncMongoClient

from benchmarks import sealing
from benchmarks.pipeline import endpoints
from benchmarks.throughput_procs import cli, group_env, group_processes, time_to_ready, turns_lag
from benchmarks.throughput_store import Store
from benchmarks.throughput_text import Scope, scopes, turn_bodies, turn_texts
from benchmarks.throughput_visible import visibility
from engine.adapters.local_embedder import LocalMiniLMEmbedder
from engine.ingest.turns import embed_units
from engine.ports import InputType
from engine.records import Vector
from schemas import topics
from schemas.inputs import turn_recorded
from services.endpoints import Endpoints
from services.sdk.client import MemoryClient
from services.settings import Settings
from services.stream.offsets import end_offsets, wait_caught_up

BATCH = 32


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--turns", type=int, default=20000, help="turns of the throughput phase")
    p.add_argument("--processes", type=int, default=1, help="processes of each writer group")
    p.add_argument("--rate", type=float, default=500, help="offered turns/s, visibility phase")
    p.add_argument("--seconds", type=float, default=10, help="length of the visibility phase")
    p.add_argument("--agents", type=int, default=5)
    p.add_argument("--users", type=int, default=10, help="users (one thread each) per agent")
    p.add_argument("--concurrency", type=int, default=64, help="publishes in flight")
    p.add_argument("--sample", type=int, default=2000, help="turns for the raw embedder rate")
    p.add_argument("--seed", type=int, default=15)
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument("--skip-replay", action="store_true")
    p.add_argument("--skip-ready", action="store_true")
    sealing.add_arguments(p)
    return p


def note(message: str) -> None:
    print(f"[throughput] {message}", file=sys.stderr, flush=True)


def pct(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


class CountingEmbedder:
    """The model, counting its calls and texts (the replay's model calls)."""

    def __init__(self, inner: LocalMiniLMEmbedder) -> None:
        self._inner = inner
        self.calls = 0
        self.texts = 0

    @property
    def model(self) -> str:
        return self._inner.model

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    async def embed(self, texts: Sequence[str], input_type: InputType) -> list[Vector]:
        self.calls += 1
        self.texts += len(texts)
        return await self._inner.embed(texts, input_type)


async def embedder_raw(model: LocalMiniLMEmbedder, sample: list[str]) -> float:
    """Turns/s of `embed_units(model, batch)` (the stage's call), after one warm batch."""
    await embed_units(model, sample[:BATCH])
    began = time.monotonic()
    for i in range(0, len(sample), BATCH):
        await embed_units(model, sample[i : i + BATCH])
    return len(sample) / (time.monotonic() - began)


async def publish_all(
    client: MemoryClient, bodies: list[tuple[Scope, dict[str, Any]]], concurrency: int
) -> tuple[float, list[str]]:
    """(seconds until every turn is acknowledged, the last turn id of each thread)."""
    last: dict[Scope, tuple[int, str]] = {}
    sem = asyncio.Semaphore(concurrency)

    async def one(scope: Scope, body: dict[str, Any]) -> None:
        async with sem:
            event = turn_recorded(body)  # what MemoryClient.record_turn does, keeping the offset
            pos = await client.publish_turn(event)
        if pos.offset > last.get(scope, (-1, ""))[0]:
            last[scope] = (pos.offset, event.turn_id)

    began = time.monotonic()
    await asyncio.gather(*(one(scope, body) for scope, body in bodies))
    return time.monotonic() - began, [turn for _, turn in last.values()]


async def warm_up(client: MemoryClient, tag: str) -> None:
    """Until a turn is stored and pre_turn shows it (the models are loaded, the groups run)."""
    scope = {"agentWallet": f"0xwarm{tag}", "userAddress": "warm", "threadId": "warm"}
    await client.record_turn({**scope, "userMessage": "warm up zqwarm", "assistantMessage": "ok"})
    deadline = time.monotonic() + 120
    while "zqwarm" not in ((await client.context("warm up zqwarm", scope)).prompt or ""):
        if time.monotonic() > deadline:
            raise SystemExit("the pipeline did not answer within 120 s")
        await asyncio.sleep(0.2)


async def live(
    args: argparse.Namespace, ends: Endpoints, tag: str, out: dict[str, Any]
) -> LocalMiniLMEmbedder:
    """Phases 2-4 against the group processes (stopped on return). Returns the loaded model."""
    db, prefix = f"bench_tp_{tag}", f"bench-tp-{tag}"
    env = group_env(ends, db, prefix)
    cli(env, "db", "init")
    writers = [("transcripts", args.processes), ("embeddings", args.processes)]
    phases: dict[str, float] = out["phase_seconds"]
    began = time.monotonic()
    with group_processes(env, tag, [*writers, ("search", 1), ("invalidation", 1)]) as running:
        phases["groups_ready"] = time.monotonic() - began
        embedding_stage = "embeddings" not in running.missing
        out["groups"] = sorted({p.group for p in running.procs})
        store = Store(ends.mongo_uri, db)
        try:
            async with MemoryClient(ends.kafka_bootstrap, timeout=30) as client:
                began = time.monotonic()
                await warm_up(client, tag)
                phases["warm_up"] = time.monotonic() - began

                note(f"raw embedder on {min(args.sample, args.turns)} turns")
                began = time.monotonic()
                model = LocalMiniLMEmbedder.load()
                texts = turn_texts(args.seed, min(args.sample, args.turns))
                out["embedder_raw_per_s"] = round(await embedder_raw(model, texts), 1)
                phases["embedder_raw"] = time.monotonic() - began

                note(f"publishing {args.turns} turns")
                threads = scopes(f"tp{tag}", args.agents, args.users)
                agents = sorted({s.agent for s in threads})
                bodies = turn_bodies(threads, args.turns, args.seed)
                began = time.monotonic()
                seconds, last = await publish_all(client, bodies, args.concurrency)
                running.check()
                out["publish_per_s"] = round(args.turns / seconds, 1)
                phases["publish"] = seconds
                limit = 120 + args.turns / 5
                # a group commits a batch after its writes are durable: caught up = stored
                # (committed offsets are read, not the database, which polling would load)
                turn_ends = await end_offsets(ends.kafka_bootstrap, [topics.TURNS])
                await wait_caught_up(
                    ends.kafka_bootstrap, f"{prefix}.transcripts", turn_ends, timeout=limit
                )
                stored_s = time.monotonic() - began
                out["stored_per_s"] = round(args.turns / stored_s, 1)
                phases["stored"] = stored_s
                note(f"stored in {stored_s:.1f} s")
                if embedding_stage:
                    vector_ends = await end_offsets(ends.kafka_bootstrap, [topics.EMBEDDINGS])
                    await wait_caught_up(
                        ends.kafka_bootstrap, f"{prefix}.embeddings", vector_ends, timeout=limit
                    )
                    embedded_s = time.monotonic() - began
                    out["embedded_per_s"] = round(args.turns / embedded_s, 1)
                    phases["embedded"] = embedded_s
                    note(f"embedded in {embedded_s:.1f} s")
                else:
                    out["embedded_per_s"] = out["stored_per_s"]
                    out["embedded_note"] = (
                        "no `embeddings` group in this version: vectors are computed while "
                        "storing, so embedded_per_s = stored_per_s"
                    )
                found = await store.durable(agents, last)  # once: the offsets told the truth
                out["stored_check"] = {
                    "transcript_turns": found.transcript_turns,
                    "turn_rows": found.turn_rows,
                    "embedded_rows": found.embedded_rows,
                    "threads_with_last_turn": found.working_threads,
                    "threads": len(last),
                }

                note(f"visibility: {args.rate:g} turns/s for {args.seconds:g} s")
                running.check()
                vis_threads = scopes(f"tpv{tag}", args.agents, args.users)
                lag = functools.partial(turns_lag, ends.kafka_bootstrap, f"{prefix}.transcripts")
                began = time.monotonic()
                vis = await visibility(
                    client, vis_threads, args.rate, args.seconds, args.seed + 1, lag
                )
                phases["visibility"] = time.monotonic() - began
                out.update(
                    visible_p50_ms=_round(pct(vis.visible_ms, 50)),
                    visible_p95_ms=_round(pct(vis.visible_ms, 95)),
                    visible_markers=len(vis.visible_ms),
                    visible_missed=vis.missed,
                    visible_polls=vis.polls,
                    visible_poll_errors=vis.errors,
                    visible_poll_p50_ms=_round(pct(vis.poll_ms, 50)),
                    visible_poll_p95_ms=_round(pct(vis.poll_ms, 95)),
                    offered_per_s=round(vis.offered / vis.publish_seconds, 1),
                    lag_after_visibility_publish=vis.lag_after_publish,
                )
                began = time.monotonic()
                drain = await end_offsets(ends.kafka_bootstrap, [topics.TURNS])
                await wait_caught_up(
                    ends.kafka_bootstrap,
                    f"{prefix}.transcripts",
                    drain,
                    timeout=120 + vis.offered / 5,
                )
                if embedding_stage and not args.skip_replay:  # replay compares fully embedded
                    drain = await end_offsets(ends.kafka_bootstrap, [topics.EMBEDDINGS])
                    await wait_caught_up(
                        ends.kafka_bootstrap, f"{prefix}.embeddings", drain, timeout=limit
                    )
                phases["visibility_drain"] = time.monotonic() - began
                out["lag_end"] = await lag()
        finally:
            await store.close()
    return model


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


async def rebuild(
    ends: Endpoints, tag: str, model: LocalMiniLMEmbedder, out: dict[str, Any]
) -> None:
    """Phase 5: replay the log into a fresh database, then verify it."""
    from services.ops.replay import replay
    from services.ops.verify import compare

    settings = Settings(
        kafka_bootstrap=ends.kafka_bootstrap,
        mongo_uri=ends.mongo_uri,
        redis_url=ends.redis_url,
        mongo_db=f"bench_tp_{tag}",
        group_prefix=f"bench-tp-{tag}",
        session_timeout_ms=2000,
        heartbeat_interval_ms=500,
    )
    counting = CountingEmbedder(model)
    note("replay")
    # the log holds turns only (warm-up, throughput and visibility phases): its length is
    # the turns replayed
    log_turns = sum((await end_offsets(ends.kafka_bootstrap, [topics.TURNS])).values())
    report = await replay(settings, f"bench_tp_rebuilt_{tag}", embedder=counting)
    began = time.monotonic()
    checked = await compare(settings, settings.mongo.db, report.target_db)
    out["phase_seconds"].update(replay=report.seconds, verify=time.monotonic() - began)
    out.update(
        replay_per_s=round(log_turns / report.seconds, 1),
        replay_turns=log_turns,
        replay_records=report.records,
        verify_equal=checked.equal,
        replay_model_calls=counting.calls,
        replay_model_texts=counting.texts,
    )
    if not checked.equal:
        out["verify_differences"] = {
            c.name: {"missing": len(c.missing), "extra": len(c.extra), "changed": len(c.changed)}
            for c in checked.collections
            if not c.equal
        }


def readiness(ends: Endpoints, tag: str, out: dict[str, Any]) -> None:
    """Phase 1: time to /readyz of `run all` and of `run transcripts`, each on a fresh database."""
    for group, key in (("all", "ready_all_s"), ("transcripts", "ready_one_s")):
        note(f"time to ready: run {group}")
        env = group_env(ends, f"bench_ready_{group}_{tag}", f"bench-ready-{group}-{tag}")
        out[key] = round(time_to_ready(env, group, f"ready{tag}"), 2)


async def ceiling(ends: Endpoints, tag: str, out: dict[str, Any]) -> None:
    """Phase 6: the store's ceiling on the same server build, with the same texts
    (`benchmarks.store_ceiling`) at the groups' batch size, next to what the groups stored."""
    from benchmarks.store_ceiling import record_turns

    note("store ceiling")
    batch = Settings().kafka.batch_max_records
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(ends.mongo_uri)
    try:
        got = await record_turns(client[f"bench_tp_ceiling_{tag}"], 12_000, batch, seed=15)
    finally:
        await client.drop_database(f"bench_tp_ceiling_{tag}")
        await client.close()
    out["store_ceiling_per_s"] = got["turns_per_s"]
    out["store_ceiling_batch"] = batch
    if "stored_per_s" in out:
        out["stored_vs_ceiling"] = round(out["stored_per_s"] / got["turns_per_s"], 2)


async def run(args: argparse.Namespace, ends: Endpoints, tag: str, out: dict[str, Any]) -> None:
    model = await live(args, ends, tag, out)
    if not args.skip_replay:
        await rebuild(ends, tag, model, out)
    await ceiling(ends, tag, out)
    if args.sealing_rounds > 0:  # phase 7, the groups stopped
        began = time.monotonic()
        out["sealing"] = await sealing.compare_args(ends, args, "throughput")
        out["phase_seconds"]["sealing"] = time.monotonic() - began


def main(argv: Sequence[str] | None = None) -> None:
    args = parser().parse_args(argv)
    tag = uuid.uuid4().hex[:8]
    out: dict[str, Any] = {
        "turns": args.turns,
        "processes": args.processes,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "rate": args.rate,
        "seconds": args.seconds,
        "threads": args.agents * args.users,
        "phase_seconds": {},
    }
    began = time.monotonic()
    with endpoints() as ends:
        cli(group_env(ends, f"bench_tp_{tag}", f"bench-tp-{tag}"), "topics", "create")
        if not args.skip_ready:
            readiness(ends, tag, out)
        asyncio.run(run(args, ends, tag, out))
    out["phase_seconds"] = {k: round(v, 2) for k, v in out["phase_seconds"].items()}
    out["total_seconds"] = round(time.monotonic() - began, 1)
    if args.json:
        print(json.dumps(out))
        return
    for key, value in out.items():
        print(f"{key:<30} {value}")


if __name__ == "__main__":
    main()
