"""The SDK's sealed paths (issue 31, `services.sdk.sealed_path`): a client given a sealer (the
gateway, holding the master key) publishes an event's envelope straight to its source topic,
sealed for the event's tenant, and the groups' sealer opens it; through the ingress it is
wrapped for the sealing group instead; other topics pass as they are; an envelope too long
for one message is refused before it is sent."""

from __future__ import annotations

import os

import pytest

from engine.adapters.memory.tenant_keys import InMemoryTenantKeys
from engine.sealing import EventSealer, envelope, is_sealed
from engine.upkeep.archive_seal import ArchiveKeys
from schemas import topics
from schemas.bodies import message_json
from schemas.events import MemoryRemembered
from schemas.remember_input import RememberInput
from schemas.scope import ScopeError
from schemas.sealing import IngressEvent
from services.sdk.sealed_path import routed
from services.sdk.transport import Transport

CANARY = "canary-51c0 the words to hide"


def remembered(content: str = CANARY, user: str = "alice") -> tuple[MemoryRemembered, bytes]:
    body = {"agentWallet": "0xEdge", "userAddress": user, "content": content}
    event = RememberInput.model_validate(body).remembered(None)
    return event, message_json(event, "the fact")


@pytest.fixture
def keys() -> tuple[EventSealer, EventSealer]:
    """The edge's sealer and a group's, on one key store and master key (two processes)."""
    store, master = InMemoryTenantKeys(), ArchiveKeys(os.urandom(32), [])
    return EventSealer(master, store), EventSealer(master, store)


async def test_an_edge_seals_to_the_source_topic_for_the_events_tenant(
    keys: tuple[EventSealer, EventSealer],
) -> None:
    edge, group = keys
    event, value = remembered()
    topic, sealed = await routed(topics.REMEMBER, "k", event, value, sealer=edge, ingress=False)
    assert topic == topics.REMEMBER  # one hop: no ingress
    assert is_sealed(sealed)
    assert CANARY.encode() not in sealed
    assert envelope(sealed).tenant == ("0xEdge", "alice")
    [opened] = await group.open_many([sealed])
    assert opened.plain == value
    assert opened.tenant == ("0xEdge", "alice")


async def test_through_the_ingress_an_event_is_wrapped_in_clear_for_the_sealing_group() -> None:
    event, value = remembered()
    topic, wrapped = await routed(topics.REMEMBER, "k", event, value, sealer=None, ingress=True)
    assert topic == topics.INGRESS
    ingress = IngressEvent.model_validate_json(wrapped)
    assert (ingress.topic, ingress.key, ingress.agent, ingress.user) == (
        topics.REMEMBER,
        "k",
        "0xEdge",
        "alice",
    )
    assert ingress.event.encode() == value


async def test_other_topics_and_a_client_without_either_pass_as_they_are(
    keys: tuple[EventSealer, EventSealer],
) -> None:
    event, value = remembered()
    for topic, sealer, ingress in (
        (topics.SEARCH, keys[0], False),
        (topics.SEARCH, None, True),
        (topics.REMEMBER, None, False),
    ):
        assert await routed(topic, "k", event, value, sealer=sealer, ingress=ingress) == (
            topic,
            value,
        )


async def test_an_envelope_longer_than_a_message_is_refused_before_it_is_sent(
    keys: tuple[EventSealer, EventSealer], monkeypatch: pytest.MonkeyPatch
) -> None:
    event, value = remembered()
    # the event fits in a message, its envelope (base64, a third longer) does not
    monkeypatch.setattr("services.sdk.sealed_path.MAX_MESSAGE_BYTES", len(value) + 1)
    with pytest.raises(
        ScopeError, match=rf"the fact is \d+ bytes sealed; at most {len(value) + 1}"
    ):
        await routed(topics.REMEMBER, "k", event, value, sealer=keys[0], ingress=False)


def test_a_client_takes_the_ingress_or_a_sealer_not_both(
    keys: tuple[EventSealer, EventSealer],
) -> None:
    with pytest.raises(ValueError, match="not both"):
        Transport("127.0.0.1:9", ingress=True, sealer=keys[0])
