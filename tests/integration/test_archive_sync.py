"""`archives.sync` over Kafka (`memory.admin.v1`) against a local server speaking Pinata's
pinning API: an archive of the caller's agent is pinned encrypted (never in plaintext,
§16.6) and its CID stored; an archive pinned already answers its CID with `pinned: false`;
another agent's (or another user's, when a user is given) archive is "not found"; without
Pinata credentials and an encryption key the answer is a clear error."""

from __future__ import annotations

import base64
import os
import uuid
from collections.abc import Callable

import pytest

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from engine.records import ArchiveRecord, ScopeFields
from engine.upkeep.archives import decrypt_payload
from services.endpoints import Endpoints
from services.groups.jobs.archive_pins import NOT_CONFIGURED
from services.runtime import Runtime
from tests.support.http_server import Provider, Received, Reply, Responder
from tests.support.pipeline import groups_running

pytestmark = pytest.mark.integration


async def stored_archive(rt: Runtime, agent: str, user: str | None) -> ArchiveRecord:
    record = ArchiveRecord(
        archive_id=f"arc_{uuid.uuid4().hex}",
        scope=ScopeFields(agent, user, None, None, None),
        summary="Archive of balcony gardening notes",
        topics=["tomatoes"],
        entry_count=1,
        start=0,
        end=1_000,
        created_at=1_000,
        content=base64.b64encode(b"gzip-of-json").decode(),
    )
    assert await rt.archives.insert_if_absent(record)
    return record


async def test_sync_pins_encrypted_once_and_only_the_agents_own_archive(
    stack: Endpoints,
    minilm: LocalMiniLMEmbedder,
    provider: Callable[[Responder], Provider],
) -> None:
    def pinata(request: Received) -> Reply:
        return Reply(200, {"IpfsHash": f"bafy{len(pinata_server.received)}", "PinSize": 1})

    pinata_server = provider(pinata)
    key = os.urandom(32)
    async with groups_running(
        stack,
        minilm,
        "arcsync",
        ["admin"],
        pinata_jwt="jwt-test",
        pinata_base_url=pinata_server.url,
        archive_encryption_key=base64.b64encode(key).decode(),
    ) as (rt, client):
        agent = f"0xsync{uuid.uuid4().hex[:8]}"
        archive = await stored_archive(rt, agent, "ann")
        for outsider in (
            {"agentWallet": "0xsomeoneelse"},
            {"agentWallet": agent, "userAddress": "bob"},
        ):
            reply = await client.admin("archives.sync", outsider, id=archive.archive_id)
            assert reply.not_found, outsider
        assert pinata_server.received == []

        first = await client.admin("archives.sync", {"agentWallet": agent}, id=archive.archive_id)
        assert first.result == {"ipfsHash": "bafy1", "pinned": True}, first
        [pin] = pinata_server.received
        assert pin.path == "/pinning/pinJSONToIPFS"
        assert pin.headers["authorization"] == "Bearer jwt-test"
        sealed = base64.b64decode(pin.json()["pinataContent"]["payload"])
        assert archive.content is not None
        assert decrypt_payload(sealed, key, archive_id=archive.archive_id) == (
            archive.content.encode()
        )
        assert archive.content not in pin.body.decode()

        again = await client.admin(
            "archives.sync", {"agentWallet": agent, "userAddress": "ann"}, id=archive.archive_id
        )
        assert again.result == {"ipfsHash": "bafy1", "pinned": False}
        assert len(pinata_server.received) == 1
        stored = await rt.maintenance.archive_cid(archive.archive_id, agent, "ann", any_user=False)
        assert stored == ("bafy1",)
        missing = await client.admin("archives.sync", {"agentWallet": agent}, id="arc_missing")
        assert missing.not_found


async def test_sync_without_pinning_configured_is_a_clear_error(
    stack: Endpoints, minilm: LocalMiniLMEmbedder
) -> None:
    async with groups_running(stack, minilm, "arcsyncoff", ["admin"]) as (rt, client):
        agent = f"0xsync{uuid.uuid4().hex[:8]}"
        archive = await stored_archive(rt, agent, None)
        reply = await client.admin("archives.sync", {"agentWallet": agent}, id=archive.archive_id)
        assert reply.error == NOT_CONFIGURED
        assert not reply.not_found
