"""The thread layers (working, scene) rank a turn by its turn row's vector (issue 29): the
embedding stage writes a turn's vector once, on its row, and the transcript and working
buffer keep none of their own. A turn is found by its meaning once its row is filled, only
through the asking user's rows, and by its words before."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from engine.adapters.memory import InMemoryQueryCache
from engine.ports import InputType
from engine.retrieval.hits import Hit
from engine.scoping import TenantFilter
from schemas.inputs import turn_recorded
from schemas.scope import Scope
from tests.support.engine import InMemoryPorts

AGENT = "0xAgent"
DIM = 16
T0 = 1_780_000_000_000
QUERY = "zzz"  # shares no word with any turn: only a cosine can find one

Vec = npt.NDArray[np.float32]


def unit(seed: int) -> Vec:
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


class OneVector:
    """An embedder that embeds every query as `vector` (documents are never asked for: the
    recorder defers them to the embedding stage)."""

    model = "one-vector"
    dimension = DIM

    def __init__(self, vector: Vec) -> None:
        self.vector = vector

    async def embed(self, texts: Sequence[str], input_type: InputType) -> list[Vec]:
        assert input_type == "query"
        return [self.vector for _ in texts]


class World:
    def __init__(self) -> None:
        self.query = unit(1)
        self.embedder = OneVector(self.query)
        self.ports = InMemoryPorts(self.embedder)
        self.memory = self.ports.memory
        self.working = self.ports.working
        self.recorder = self.ports.recorder(deferred=True)

    async def turn(self, user: str, turn_id: str, said: str, at: int) -> str:
        body = {
            "agentWallet": AGENT,
            "userAddress": user,
            "threadId": "T1",
            "sessionId": f"s-{user}",
            "turnId": turn_id,
            "userMessage": said,
            "assistantMessage": "noted",
        }
        now = datetime.fromtimestamp(at / 1000, tz=UTC)
        stored = await self.recorder.record(turn_recorded(body, now=now))
        assert stored.pending
        return stored.vector_id

    async def hits(self, user: str) -> dict[str, list[Hit]]:
        # a fresh search each time: no query cache or tenant state carried over
        self.ports.cache = InMemoryQueryCache()
        search = self.ports.search()
        scope = Scope.parse({"agentWallet": AGENT, "userAddress": user, "threadId": "T1"})
        found = await search.search(scope, QUERY, ["scene", "working"], 5, T0 + 60_000)
        return found.hits


def ids(hits: list[Hit]) -> list[Any]:
    return [h.raw.get("turnId") or h.raw.get("sessionId") for h in hits]


async def test_a_turn_is_found_by_its_meaning_once_its_turn_row_has_a_vector() -> None:
    world = World()
    row = await world.turn("U1", "t1", "we adopted a greyhound", T0)
    await world.turn("U1", "t2", "the weather turned cold", T0 + 1)

    before = await world.hits("U1")
    assert before["scene"] == []
    assert before["working"] == []

    # the embedding stage's one write: the turn row's vector, nothing on the transcript
    assert await world.memory.fill_embeddings(world.embedder.model, {row: world.query}) == 1
    after = await world.hits("U1")

    [scene] = after["scene"]
    assert scene.raw["turnId"] == "t1"
    assert scene.score is not None
    assert scene.score > 0.5
    [working] = after["working"]
    assert working.score is not None
    assert working.score > 0.5
    [buffer] = await world.working.recent(TenantFilter(AGENT, "U1", thread_id="T1"), 5)
    assert len(buffer.turn_rows) == 2
    assert buffer.turn_rows[0] == row


async def test_the_turn_vectors_are_read_through_the_asking_users_rows_only() -> None:
    world = World()
    mine = await world.turn("U1", "t1", "we adopted a greyhound", T0)
    await world.turn("U2", "u1", "my cat sleeps all day", T0 + 1)
    await world.memory.fill_embeddings(world.embedder.model, {mine: world.query})

    theirs = await world.hits("U2")  # the same agent and thread id, another user

    assert theirs["scene"] == []
    assert theirs["working"] == []
    assert ids((await world.hits("U1"))["scene"]) == ["t1"]


async def test_a_deleted_turn_row_no_longer_ranks_its_turn_by_meaning() -> None:
    world = World()
    row = await world.turn("U1", "t1", "we adopted a greyhound", T0)
    await world.memory.fill_embeddings(world.embedder.model, {row: world.query})
    assert ids((await world.hits("U1"))["scene"]) == ["t1"]

    held = world.memory.row(row)
    assert held is not None
    world.memory.put(replace(held, metadata={**held.metadata, "status": "deleted"}))

    assert (await world.hits("U1"))["scene"] == []
