"""`PinataPinner` against a real local HTTP server (reference §10.2, fixing §16.6): what
leaves the process is sealed, opens only with the key, and failures are `DependencyFailed`."""

from __future__ import annotations

import base64
import os
from collections.abc import Callable
from datetime import UTC, datetime

import httpx
import numpy as np
import pytest

from engine.adapters.pinata import PinataPinner
from engine.errors import DependencyFailed, InputRejected
from engine.records import MemoryRow, ScopeFields
from engine.upkeep.archives import ArchivePayload, build_archive, decrypt_payload, encrypt_payload
from engine.upkeep.archives import read_archive as open_content
from tests.support.http_server import Provider, Received, Reply, Responder, closed_port

START = int(datetime(2026, 3, 1, tzinfo=UTC).timestamp() * 1000)
END = START + 7 * 86_400_000
SCOPE = ScopeFields("0xAgentWallet", "0xUserAddress", thread_id=None, mode=None, hai_id=None)
CID = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy"
KEY_PAIR = ("key-1", "secret-1")
"""A made-up Pinata API key and secret."""
CONTENTS = (
    "The user's passport number is X1234567.",
    "The user is recovering from knee surgery.",
    "Discussed the user's divorce settlement.",
)

Start = Callable[[Responder], Provider]


def pinned(received: Received) -> Reply:
    return Reply(200, {"IpfsHash": CID, "PinSize": 1234, "Timestamp": "2026-03-08T00:00:00Z"})


def archive() -> ArchivePayload:
    rows = [
        MemoryRow(
            vector_id=f"v{i}",
            scope=SCOPE,
            content=text,
            embedding=np.ones(4, dtype=np.float32),
            embedding_model="m",
            source="fact",
            created_at=START + i,
        )
        for i, text in enumerate(CONTENTS)
    ]
    payload = build_archive(rows, scope=SCOPE, start=START, end=END, created_at=END)
    assert payload is not None
    return payload


def sealed(payload: ArchivePayload, key: bytes) -> bytes:
    return encrypt_payload(payload.content.encode(), key, archive_id=payload.archive_id)


async def test_the_pinned_body_is_sealed_and_opens_only_with_the_key_fixes_16_6(
    provider: Start, client: httpx.AsyncClient
) -> None:
    server = provider(pinned)
    payload, key = archive(), os.urandom(32)
    pinner = PinataPinner(client, jwt="jwt-token", base_url=server.url)

    cid = await pinner.pin_archive(payload.archive_id, sealed(payload, key))

    assert cid == CID
    [request] = server.received
    assert request.path == "/pinning/pinJSONToIPFS"
    body = request.json()
    assert body["pinataMetadata"] == {"name": f"mnemostream-archive-{payload.archive_id}"}
    assert body["pinataOptions"] == {"cidVersion": 1}
    content = body["pinataContent"]
    assert set(content) == {"archiveId", "encryption", "payload"}
    assert content["archiveId"] == payload.archive_id
    assert content["encryption"] == "AES-256-GCM"
    text = request.body.decode()
    tenant = ("0xAgentWallet", "0xUserAddress")
    for secret in (*CONTENTS, "passport", "X1234567", "surgery", *tenant, payload.content):
        assert secret not in text

    blob = base64.b64decode(content["payload"])
    opened = decrypt_payload(blob, key, archive_id=content["archiveId"])
    document = open_content(opened.decode())
    assert [e["content"] for e in document["entries"]] == list(CONTENTS)
    assert document == open_content(payload.content)
    with pytest.raises(InputRejected):
        decrypt_payload(blob, os.urandom(32), archive_id=content["archiveId"])


async def test_jwt_is_sent_as_a_bearer_token(provider: Start, client: httpx.AsyncClient) -> None:
    server = provider(pinned)

    await PinataPinner(client, jwt="jwt-token", base_url=server.url + "/").pin_archive(
        "arc_1", b"blob"
    )

    headers = server.received[0].headers
    assert headers["authorization"] == "Bearer jwt-token"
    assert "pinata_api_key" not in headers
    assert server.received[0].path == "/pinning/pinJSONToIPFS"  # no doubled slash


async def test_key_and_secret_are_sent_as_pinata_headers(
    provider: Start, client: httpx.AsyncClient
) -> None:
    server = provider(pinned)
    pinner = PinataPinner(client, api_key=KEY_PAIR[0], api_secret=KEY_PAIR[1], base_url=server.url)

    await pinner.pin_archive("arc_1", b"blob")

    headers = server.received[0].headers
    assert (headers["pinata_api_key"], headers["pinata_secret_api_key"]) == KEY_PAIR
    assert "authorization" not in headers


@pytest.mark.parametrize(
    "credentials",
    [{}, {"jwt": ""}, {"api_key": "key-1"}, {"api_secret": "secret-1"}, {"api_key": ""}],
)
async def test_missing_credentials_are_rejected_at_construction(
    client: httpx.AsyncClient, credentials: dict[str, str]
) -> None:
    with pytest.raises(InputRejected, match="JWT"):
        PinataPinner(client, **credentials)


@pytest.mark.parametrize(
    "reply",
    [
        Reply(500, {"error": "internal"}),
        Reply(401, {"error": {"reason": "INVALID_CREDENTIALS"}}),
        Reply(200, {"PinSize": 10}),
        Reply(200, {"IpfsHash": ""}),
        Reply(200, [CID]),
        Reply(200, b"<html>not json</html>"),
    ],
)
async def test_failed_pins_raise_dependency_failed(
    provider: Start, client: httpx.AsyncClient, reply: Reply
) -> None:
    server = provider(lambda _: reply)
    pinner = PinataPinner(client, jwt="jwt-token", base_url=server.url)

    with pytest.raises(DependencyFailed, match="pinata"):
        await pinner.pin_archive("arc_1", b"blob")


async def test_a_slow_server_times_out(provider: Start, client: httpx.AsyncClient) -> None:
    server = provider(lambda r: Reply(200, {"IpfsHash": CID}, delay_s=1.0))
    pinner = PinataPinner(client, jwt="jwt-token", base_url=server.url, timeout=0.2)

    with pytest.raises(DependencyFailed, match="timed out"):
        await pinner.pin_archive("arc_1", b"blob")


async def test_an_unreachable_server_is_a_dependency_failure(client: httpx.AsyncClient) -> None:
    pinner = PinataPinner(client, jwt="jwt-token", base_url=f"http://127.0.0.1:{closed_port()}")

    with pytest.raises(DependencyFailed, match="ConnectError"):
        await pinner.pin_archive("arc_1", b"blob")
