"""The topic contract as an AsyncAPI 3.0 document, generated from the code.

    mnemostream asyncapi > docs/asyncapi.json

Each channel is a topic from `schemas.topics` with the pydantic contract it carries (the JSON
schema comes from the contract class itself), the reply contract of request-reply topics, and
the consumer groups that read it. The subscribers of the running app decode messages themselves
(behind the dead-letter guard), so their signatures do not show the payload; this module builds
a specification-only broker that does. `tests/integration/test_asyncapi.py` checks that the
groups listed here are the ones the app registers, and that `docs/asyncapi.json` is current.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from faststream.kafka import KafkaBroker
from faststream.specification import AsyncAPI
from pydantic import BaseModel

from schemas import topics
from schemas.dead_letters import DeadLetter
from schemas.events import (
    EmbeddingRequested,
    FactsExtracted,
    JobRequested,
    KnowledgeSubmitted,
    MemoryChanged,
    MemoryRemembered,
    TurnRecorded,
    WorkflowCheckpointRecorded,
)
from schemas.requests import (
    AdminReply,
    AdminRequest,
    ContextReply,
    ContextRequest,
    ItemReply,
    ItemRequest,
    LayerSearchReply,
    LayerSearchRequest,
    ReliabilityReply,
    ReliabilityRequest,
    RerankReply,
    RerankRequest,
    SessionReply,
    SessionRequest,
)
from schemas.sealing import IngressEvent
from services.stream.readers import READERS

VERSION = "1.0.0"


@dataclass(frozen=True, slots=True)
class Channel:
    topic: str
    payload: type[BaseModel]
    consumers: tuple[str, ...]
    """Consumer group names (`<prefix>.<name>` at run time)."""
    reply: type[BaseModel] | None = None
    """Request-reply: the contract sent to the request's `reply_to` topic."""


_PAYLOADS: tuple[tuple[str, type[BaseModel], type[BaseModel] | None], ...] = (
    (topics.TURNS, TurnRecorded, None),
    (topics.REMEMBER, MemoryRemembered, None),
    (topics.FACTS, FactsExtracted, None),
    (topics.CHANGED, MemoryChanged, None),
    (topics.SEARCH, ContextRequest, ContextReply),
    (topics.LAYER_SEARCH, LayerSearchRequest, LayerSearchReply),
    (topics.RERANK, RerankRequest, RerankReply),
    (topics.ITEMS, ItemRequest, ItemReply),
    (topics.SESSIONS, SessionRequest, SessionReply),
    (topics.ADMIN, AdminRequest, AdminReply),
    (topics.KNOWLEDGE, KnowledgeSubmitted, None),
    (topics.WORKFLOWS, WorkflowCheckpointRecorded, None),
    (topics.RELIABILITY, ReliabilityRequest, ReliabilityReply),
    (topics.JOBS, JobRequested, None),
    (topics.EMBEDDINGS, EmbeddingRequested, None),
    (topics.DLQ, DeadLetter, None),
    (topics.INGRESS, IngressEvent, None),
)

CHANNELS: tuple[Channel, ...] = tuple(
    Channel(topic, payload, READERS[topic], reply) for topic, payload, reply in _PAYLOADS
)
"""Every topic, its contract, the groups reading it (`services.stream.readers`) and its
reply contract."""


def _describe(channel: Channel) -> str:
    parts = [f"{channel.payload.__name__}: {(channel.payload.__doc__ or '').strip()}"]
    if channel.reply is not None:
        parts.append(
            f"Request-reply: the answer ({channel.reply.__name__}) goes to the request's "
            "`reply_to` topic with its `correlation_id`."
        )
    partitions = topics.PARTITIONS.get(channel.topic)
    if partitions:
        parts.append(f"{partitions} partitions.")
    if channel.consumers:
        parts.append(f"Consumer groups: {', '.join(channel.consumers)}.")
    return " ".join(parts)


def _typed(payload: type[BaseModel], reply: type[BaseModel] | None) -> Any:
    async def handler(body: Any) -> Any:
        return None

    handler.__annotations__ = {"body": payload, "return": reply or None}
    return handler


def specification() -> dict[str, Any]:
    """The AsyncAPI 3.0 document as a JSON-able dict."""
    broker = KafkaBroker("localhost:9092")
    for channel in CHANNELS:
        broker.publisher(
            channel.topic,
            title=f"{channel.topic}:publish",
            description=_describe(channel),
            schema=channel.payload,
        )
        if channel.reply is not None:
            broker.publisher(
                topics.reply_topic("{clientId}"),
                title=f"{channel.topic}:reply",
                description=f"{channel.reply.__name__}: the answer to a {channel.payload.__name__}"
                ", on the requesting client's own reply topic.",
                schema=channel.reply,
            )
        for group in channel.consumers:
            broker.subscriber(
                channel.topic,
                group_id=group,
                title=f"{channel.topic}:{group}",
                description=f"Consumer group `{group}`.",
            )(_typed(channel.payload, channel.reply))
    spec = AsyncAPI(
        broker,
        title="mnemostream",
        version=VERSION,
        description="Memory for AI agents as a Kafka stream processor: the topics, their "
        "contracts and the consumer groups that read them.",
    )
    document: dict[str, Any] = json.loads(spec.to_specification().to_json())
    return document


def render() -> str:
    """The document as stable, indented JSON (what `docs/asyncapi.json` holds)."""
    return json.dumps(specification(), indent=2, sort_keys=True) + "\n"
