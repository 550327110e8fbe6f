"""What sealing costs a replay (issue 31): replay turns/s of a sealed log against a plain one,
measured on `benchmarks.sealing`'s rounds (`ReplayRate`, an `Extra` of `sealing.compare`).

Before a round publishes, a replay's consumer groups are committed at the log's end (the
group prefix recorded in a fresh target database, as `services.ops.replay` records its own),
so the replay after the round reads exactly that round's turns: the warm-up turn and
`--turns` turns, in clear (plain) or sealed under the tenant's key (sealed; the replay's
transcripts and patterns groups open each record with the keys of the round's database, as
a replay of a sealed deployment does). Once the round's groups have stored the turns and
stopped, `services.ops.replay.replay` rebuilds them into the target database in this
process, with the `hashing` embedder (vectors are computed inline by a replay; the model's
time would hide what opening costs), and the rebuilt turns are counted (all must be there).

Two rates a replay, from the offsets both groups of the turns topic committed (polled every
0.1 s; not the end offsets, which the local broker may give short): `per_s` = turns
replayed after the groups joined ÷ seconds from then until both committed every turn, and
`with_joins` = all turns ÷ seconds from the call of `replay`, start-up and joins included
(small runs are mostly start-up, which flattens that ratio towards 1).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from pymongo import AsyncMongoClient

from benchmarks.sealing import Round, summary
from schemas import topics
from services.ops.replay import SOURCES, STATE, Progress, replay
from services.settings import Settings
from services.stream.offsets import start_at_end


class ReplayRate:
    """Replays each round's log (see the module): its rates by mode."""

    def __init__(self) -> None:
        self.per_s: dict[str, list[float]] = {"plain": [], "sealed": []}
        self.with_joins_per_s: dict[str, list[float]] = {"plain": [], "sealed": []}

    @staticmethod
    def target(r: Round) -> str:
        return f"bench_rebuilt_{r.tag}"

    async def before(self, r: Round) -> None:
        prefix = f"{r.prefix}-replay-{uuid.uuid4().hex[:8]}"
        mongo: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
            r.ends.mongo_uri, retryWrites=False
        )
        try:
            await mongo[self.target(r)][STATE].insert_one({"_id": "replay", "groupPrefix": prefix})
        finally:
            await mongo.close()
        await start_at_end(
            r.ends.kafka_bootstrap, [(f"{prefix}.{group}", topic) for group, topic in SOURCES]
        )

    async def after(self, r: Round, turns: int) -> str:
        settings = Settings(
            kafka_bootstrap=r.ends.kafka_bootstrap,
            mongo_uri=r.ends.mongo_uri,
            redis_url=r.ends.redis_url,
            mongo_db=r.db,
            group_prefix=r.prefix,
            event_encryption_key=r.key,
            embedder="hashing",
            extractor="none",
            session_timeout_ms=2000,
            heartbeat_interval_ms=500,
        )
        marks: list[tuple[float, int]] = []  # (when, turns both groups committed)

        def seen(progress: Progress) -> None:
            # the first call: every group has joined; then until both groups are done
            if not marks or marks[-1][1] < turns:
                marks.append((time.monotonic(), replayed(progress)))

        began = time.monotonic()
        await replay(settings, self.target(r), embedder=None, on_progress=seen, poll_seconds=0.1)
        (at, done), (ended, last) = marks[0], marks[-1]
        if last < turns:
            ended = time.monotonic()
        mongo: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
            r.ends.mongo_uri, retryWrites=False
        )
        try:
            rebuilt = await mongo[self.target(r)]["transcript_turns"].count_documents(
                {"agentWallet": r.agent}
            )
            await mongo.drop_database(self.target(r))
        finally:
            await mongo.close()
        if rebuilt != turns:
            raise RuntimeError(f"the replay rebuilt {rebuilt} of {turns} turns")
        mode = "sealed" if r.sealed else "plain"
        if done < turns and ended > at:
            self.per_s[mode].append((turns - done) / (ended - at))
        self.with_joins_per_s[mode].append(turns / (ended - began))
        return (
            f"replayed {turns} turns in {ended - began:.2f} s, start-up and joins included; "
            f"{turns - done} after the groups joined, in {ended - at:.2f} s"
        )

    def result(self) -> dict[str, Any]:
        """`summary` of the rates after the joins (None when a round was done at its joins:
        use more turns), and of the rates with them."""
        complete = all(len(self.per_s[m]) == len(self.with_joins_per_s[m]) for m in self.per_s)
        return {
            **(
                summary(self.per_s["plain"], self.per_s["sealed"])
                if complete
                else {"plain_per_s": None, "sealed_per_s": None, "sealed_vs_plain": None}
            ),
            "with_joins": summary(self.with_joins_per_s["plain"], self.with_joins_per_s["sealed"]),
        }


def replayed(progress: Progress) -> int:
    """Turns both replay groups of the turns topic have committed: counted from the offsets
    they committed, not capped at the end offsets the replay read (the local broker's end
    offsets are not reliable, docs/operations.md#local-servers: they may be short)."""
    return min(
        sum(p.current - p.start for p in progress.positions if p.group.endswith(f".{group}"))
        for group, topic in SOURCES
        if topic == topics.TURNS
    )
