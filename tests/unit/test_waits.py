"""What the SDK waits for after a write (`services.sdk.waits`): each stage names a consumer
group that really reads that topic (`services.stream.asyncapi.CHANNELS`), and a publisher
keys its follow-up events the way the waits look for them (`schemas.topics`)."""

from __future__ import annotations

import pytest

from schemas import topics
from schemas.inputs import memory_remembered, turn_recorded
from services.sdk.waits import (
    TURN_GROUPS,
    remember_paths,
    settled,
    turn_paths,
    visible_groups,
)
from services.stream.asyncapi import CHANNELS

READERS = {(channel.topic, consumer) for channel in CHANNELS for consumer in channel.consumers}
TURN = turn_recorded(
    {
        "agentWallet": "0xA",
        "userAddress": "ann",
        "threadId": "trip",
        "userMessage": "I moved to Porto.",
        "assistantMessage": "Noted.",
    }
)
REMEMBER = memory_remembered({"agentWallet": "0xA", "userAddress": "ann", "content": "x"})


@pytest.mark.parametrize("deferred", [True, False])
def test_every_stage_is_a_group_that_reads_its_topic(deferred: bool) -> None:
    stages = [
        *[s for path in turn_paths(TURN, TURN_GROUPS, deferred=deferred) for s in path],
        *[s for path in remember_paths(REMEMBER, deferred=deferred) for s in path],
        *settled(TURN.scope),
    ]
    assert stages
    for stage in stages:
        assert (stage.topic, stage.group) in READERS, stage


def test_a_path_starts_at_the_write_itself_and_then_follows_keys() -> None:
    for path in turn_paths(TURN, TURN_GROUPS, deferred=True):
        assert path[0].topic == topics.TURNS
        assert path[0].key is None
        assert all(stage.key is not None for stage in path[1:])
    [remember] = remember_paths(REMEMBER, deferred=True)
    assert (remember[0].topic, remember[0].key) == (topics.REMEMBER, None)


def test_the_follow_up_keys_are_the_publishers_keys() -> None:
    paths = dict(zip(TURN_GROUPS, turn_paths(TURN, TURN_GROUPS, deferred=True), strict=True))
    # transcripts → embeddings: the thread's EmbeddingRequested (services.groups.transcripts)
    assert paths["embeddings"][1].key == topics.thread_key("trip")
    # extraction → facts: keyed agent|user; facts → embeddings: keyed by the agent
    assert [s.key for s in paths["facts"][1:]] == [
        topics.tenant_key("0xA", "ann"),
        topics.agent_key("0xA"),
    ]
    # every writer's MemoryChanged: keyed by the agent (services.stream.consumers)
    assert [s.key for s in settled(TURN.scope)] == [topics.agent_key("0xA")]


def test_visible_means_the_embedding_stage_too_when_it_is_deferred() -> None:
    assert visible_groups(True) == ("transcripts", "embeddings")
    assert visible_groups(False) == ("transcripts",)
    without = turn_paths(TURN, ["facts"], deferred=False)
    assert [s.group for s in without[0]] == ["extraction", "facts"]


def test_an_unknown_group_is_refused_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown group 'search'.*transcripts, embeddings"):
        turn_paths(TURN, ["transcripts", "search"], deferred=True)
