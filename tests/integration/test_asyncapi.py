"""The committed AsyncAPI document is current, and lists the groups the app really registers."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from faststream.kafka import KafkaBroker

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from schemas import topics
from services.endpoints import Endpoints
from services.groups.app import GROUPS
from services.runtime import open_runtime
from services.stream.asyncapi import CHANNELS, render
from tests.support.settings import make_settings

pytestmark = pytest.mark.integration

DOC = Path(__file__).parents[2] / "docs" / "asyncapi.json"


def test_committed_document_is_what_the_code_generates() -> None:
    assert DOC.read_text() == render(), "regenerate: mnemostream asyncapi > docs/asyncapi.json"


def test_every_topic_is_a_channel_with_its_contract_schema() -> None:
    document = json.loads(DOC.read_text())
    assert {c.topic for c in CHANNELS} == set(topics.PARTITIONS)
    schemas = document["components"]["schemas"]
    for channel in CHANNELS:
        assert channel.payload.__name__ in schemas
        assert f"{channel.topic}:publish" in document["channels"]
        if channel.reply is not None:
            assert channel.reply.__name__ in schemas
    turn = schemas["TurnRecorded"]
    assert {"scope", "messages", "event_id", "occurred_at"} <= set(turn["properties"])


async def test_documented_consumer_groups_are_the_registered_ones(
    stack: Endpoints, minilm: LocalMiniLMEmbedder, unique: Callable[[str], str]
) -> None:
    settings = make_settings(stack, unique("asyncapi"), group_prefix="spec")
    broker = KafkaBroker(stack.kafka_bootstrap)
    async with open_runtime(settings, minilm) as rt:
        try:
            for build in GROUPS.values():
                broker.include_router(build(rt, None))
            registered = {
                (topic.name, str(sub.group_id).removeprefix("spec."))
                for sub in broker.subscribers
                for topic in sub.topics
            }
        finally:
            await rt.mongo.drop_database(settings.mongo.db)
    documented = {(c.topic, group) for c in CHANNELS for group in c.consumers}
    assert registered == documented
