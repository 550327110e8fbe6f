"""Archives (reference §10.1): one tenant per archive (§16.6), no empty archives (§16.30),
no embeddings in the payload, deterministic ids, findable summaries, AES-256-GCM sealing."""

from __future__ import annotations

import base64
import gzip
import json
import os
import random
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from engine.adapters.memory import (
    HashingEmbedder,
    InMemoryArchiveStore,
    InMemoryMemoryStore,
    InMemoryPatternStore,
    InMemoryQueryCache,
    InMemoryTranscriptStore,
    InMemoryWorkingStore,
)
from engine.errors import InputRejected
from engine.records import MemoryRow, ScopeFields
from engine.retrieval.search import MemorySearch
from engine.retrieval.vector_index import ExactVectorIndex
from engine.upkeep.archives import (
    MAX_ARCHIVE_BYTES,
    build_archive,
    decrypt_payload,
    embed_archive,
    encrypt_payload,
    read_archive,
)
from schemas.scope import Scope

AGENT = "0xAgent"
DAY_MS = 86_400_000
START = int(datetime(2026, 3, 1, tzinfo=UTC).timestamp() * 1000)
END = int(datetime(2026, 4, 1, tzinfo=UTC).timestamp() * 1000)
CREATED = END + 5
SCOPE = ScopeFields(AGENT, "U1", thread_id=None, mode=None, hai_id=None)


def row(
    vid: str,
    content: str,
    *,
    day: int = 0,
    source: str = "fact",
    user: str | None = "U1",
    agent: str = AGENT,
    thread: str | None = "T1",
    **metadata: Any,
) -> MemoryRow:
    return MemoryRow(
        vector_id=vid,
        scope=ScopeFields(agent, user, thread_id=thread, mode=None, hai_id=None),
        content=content,
        embedding=np.full(4, 0.5, dtype=np.float32),
        embedding_model="m",
        source=source,
        created_at=START + day * DAY_MS + 1,
        metadata=metadata,
    )


def lisbon_rows() -> list[MemoryRow]:
    return [
        row("f1", "The user moved to a Lisbon apartment.", day=1, confidence=0.9, type="t"),
        row("f2", "The user signed a two-year lease in Lisbon.", day=2, confidence=0.95),
        row("f3", "The user's apartment has a balcony facing the river.", day=3, confidence=0.6),
        row("f4", "The user works remotely as a translator.", day=4, confidence=0.8, slot="job"),
        row("f5", "The user lived in Porto.", day=0, confidence=0.99, status="superseded"),
        row("s1", "We compared Lisbon apartment listings and the lease terms.", source="session"),
        row("s2", "Talked about furniture for the Lisbon apartment.", day=5, source="session"),
        row("s3", "Drafted an email to the landlord about the lease.", day=6, source="session"),
    ]


def build(rows: list[MemoryRow], **kw: Any) -> Any:
    return build_archive(rows, scope=SCOPE, start=START, end=END, created_at=CREATED, **kw)


# --- build / read ------------------------------------------------------------------------------


def test_round_trip_keeps_ids_and_contents_and_no_embeddings() -> None:
    rows = lisbon_rows()
    payload = build(rows)

    document = read_archive(payload.content)

    assert document["archiveId"] == payload.archive_id
    assert document["agentWallet"] == AGENT
    assert document["userAddress"] == "U1"
    assert document["dateRange"] == {"start": START, "end": END}
    got = {e["vectorId"]: e["content"] for e in document["entries"]}
    assert got == {r.vector_id: r.content for r in rows}
    assert [e["createdAt"] for e in document["entries"]] == sorted(r.created_at for r in rows)
    assert "embedding" not in json.dumps(document).lower()
    f4 = next(e for e in document["entries"] if e["vectorId"] == "f4")
    assert f4["metadata"] == {"slot": "job"}  # confidence is not in the kept subset
    assert f4["source"] == "fact"
    f1 = next(e for e in document["entries"] if e["vectorId"] == "f1")
    assert f1["metadata"] == {"type": "t"}


def test_record_describes_the_archive() -> None:
    payload = build(lisbon_rows())
    record = payload.record

    assert record.archive_id == payload.archive_id
    assert record.entry_count == payload.entry_count == 8
    assert (record.start, record.end, record.created_at) == (START, END, CREATED)
    assert record.scope == SCOPE  # an archive spans threads: its record names none
    assert record.embedding is None
    assert record.metadata["originalSize"] == payload.original_size
    assert record.metadata["compressedSize"] == payload.compressed_size


def test_sizes_are_bytes_of_the_json_and_of_the_stored_content() -> None:
    payload = build(lisbon_rows())

    raw = gzip.decompress(base64.b64decode(payload.content))
    assert payload.original_size == len(raw)
    assert payload.compressed_size == len(payload.content.encode())
    assert json.loads(raw) == read_archive(payload.content)


def test_no_rows_no_archive_fixes_16_30() -> None:
    assert build([]) is None


def test_deleted_rows_are_not_archived() -> None:
    gone = row("d1", "The user's bank PIN is 1234.", status="deleted")

    assert build([gone]) is None
    payload = build([*lisbon_rows(), gone])
    assert "d1" not in {e["vectorId"] for e in read_archive(payload.content)["entries"]}
    assert payload.entry_count == 8


@pytest.mark.parametrize(
    ("intruder", "field"),
    [
        (row("x", "Another user's secret.", user="U2"), "user"),
        (row("x", "Agent-wide knowledge.", user=None), "user"),
        (row("x", "Another agent's row.", agent="0xOther"), "agent"),
        (replace(row("x", "A local-mode row."), scope=replace(SCOPE, mode="local")), "mode"),
    ],
)
def test_rows_of_another_tenant_are_refused_fixes_16_6(intruder: MemoryRow, field: str) -> None:
    with pytest.raises(InputRejected, match=f"another {field}"):
        build([*lisbon_rows(), intruder])


def test_rows_outside_the_window_and_empty_windows_are_refused() -> None:
    late = replace(row("late", "Too late."), created_at=END)
    with pytest.raises(InputRejected, match="outside the window"):
        build([late])
    with pytest.raises(InputRejected, match="window"):
        build_archive(lisbon_rows(), scope=SCOPE, start=END, end=START, created_at=CREATED)


def test_archive_id_is_deterministic_and_reveals_no_tenant() -> None:
    rows = lisbon_rows()
    shuffled = rows[:]
    random.Random(7).shuffle(shuffled)

    first, again = build(rows), build([*shuffled, rows[0]])  # order and duplicates ignored

    assert first.archive_id == again.archive_id
    assert first.content == again.content  # byte-identical re-run
    assert build(rows[:-1]).archive_id != first.archive_id
    other_user = [replace(r, scope=replace(r.scope, user_address="U2")) for r in rows]
    u2 = build_archive(
        other_user,
        scope=replace(SCOPE, user_address="U2"),
        start=START,
        end=END,
        created_at=CREATED,
    )
    assert u2.archive_id != first.archive_id
    assert first.archive_id.startswith("arc_")
    assert AGENT[2:].lower() not in first.archive_id.lower()


async def test_rerunning_the_job_inserts_once() -> None:
    store = InMemoryArchiveStore()

    assert await store.insert_if_absent(build(lisbon_rows()).record)
    assert not await store.insert_if_absent(build(lisbon_rows()).record)


# --- summary and topics ------------------------------------------------------------------------


def test_topics_are_the_most_widespread_content_terms() -> None:
    topics = build(lisbon_rows()).record.topics

    # lisbon and apartment are in 4 rows each (ties: more mentions, then alphabetical)
    assert topics[:3] == ["apartment", "lisbon", "lease"]
    assert len(topics) <= 8
    assert "user" not in topics
    assert not set(topics) & {"the", "and", "about", "a", "to"}


def test_summary_names_counts_dates_topics_and_key_facts_fixes_16_30() -> None:
    summary = build(lisbon_rows()).record.summary

    assert summary.startswith(
        "Archive of 8 memories (facts 5, sessions 3) from 2026-03-01 to 2026-03-31 about: "
        "apartment, lisbon, lease, "
    )
    key = summary.split("Key facts: ", 1)[1]
    # highest confidence first; the superseded Porto fact (0.99) is history, not key
    assert key == (
        "The user signed a two-year lease in Lisbon; The user moved to a Lisbon apartment; "
        "The user works remotely as a translator."
    )
    assert "Porto" not in key


def test_summary_of_a_single_session() -> None:
    payload = build([row("s1", "Planning a hiking trip to Madeira.", source="session")])

    assert payload.record.summary == (
        "Archive of 1 memory (session 1) from 2026-03-01 to 2026-03-31 "
        "about: hiking, madeira, planning, trip."
    )


def test_summary_counts_entities_not_entitys() -> None:
    payload = build(
        [
            row("e1", "Lisbon (place): where the user lives", source="entity"),
            row("e2", "Porto (place): where the user lived", source="entity"),
            row("a1", "Planned the week.", source="agent_loop"),
            row("a2", "Planned the month.", source="agent_loop"),
        ]
    )

    assert "(agent_loops 2, entities 2)" in payload.record.summary
    assert "entitys" not in payload.record.summary


async def test_an_archive_is_found_by_what_it_is_about() -> None:
    embedder = HashingEmbedder()
    payload = await embed_archive(build(lisbon_rows()), embedder)
    assert payload.record.embedding_model == embedder.model
    archives = InMemoryArchiveStore()
    assert await archives.insert_if_absent(payload.record)
    search = MemorySearch(
        transcripts=InMemoryTranscriptStore(),
        working=InMemoryWorkingStore(),
        patterns=InMemoryPatternStore(),
        archives=archives,
        index=ExactVectorIndex(InMemoryMemoryStore()),
        embedder=embedder,
        cache=InMemoryQueryCache(),
    )

    async def found(user: str, query: str) -> list[str]:
        scope = Scope.parse({"agentWallet": AGENT, "userAddress": user, "threadId": "T9"})
        reply = await search.search(scope, query, ["archives"], 5, CREATED)
        return [h.id for h in reply.hits["archives"]]

    assert await found("U1", "what was the lease on the Lisbon apartment?") == [payload.archive_id]
    assert await found("U2", "what was the lease on the Lisbon apartment?") == []


def test_embed_summary_embeds_the_searched_text() -> None:
    seen: list[str] = []

    def embed(text: str) -> tuple[Any, str]:
        seen.append(text)
        return np.ones(3, dtype=np.float32), "sync-model"

    record = build(lisbon_rows(), embed_summary=embed).record

    assert record.embedding_model == "sync-model"
    assert seen == [f"{record.summary} Topics: {', '.join(record.topics)}."]


# --- read_archive on bad input -----------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        "not base64!",
        base64.b64encode(b"plain, not gzip").decode(),
        base64.b64encode(gzip.compress(b"not json")).decode(),
        base64.b64encode(gzip.compress(b"[1, 2]")).decode(),
        base64.b64encode(gzip.compress(b'{"a": 1}')[:-8]).decode(),
    ],
)
def test_malformed_content_is_rejected(content: str) -> None:
    with pytest.raises(InputRejected):
        read_archive(content)


def test_a_gzip_bomb_is_rejected() -> None:
    bomb = base64.b64encode(gzip.compress(b"0" * (MAX_ARCHIVE_BYTES + 10))).decode()

    with pytest.raises(InputRejected, match="inflates"):
        read_archive(bomb)


# --- encryption --------------------------------------------------------------------------------


def test_encryption_round_trips_and_uses_a_fresh_nonce() -> None:
    payload = build(lisbon_rows())
    key = os.urandom(32)
    plain = payload.content.encode()

    one = encrypt_payload(plain, key, archive_id=payload.archive_id)
    two = encrypt_payload(plain, key, archive_id=payload.archive_id)

    assert one[:12] != two[:12]  # a fresh nonce per sealing
    assert len(one) == 12 + len(plain) + 16
    opened = decrypt_payload(one, key, archive_id=payload.archive_id)
    assert read_archive(opened.decode()) == read_archive(payload.content)
    assert b"Lisbon" not in one


def test_wrong_key_wrong_id_or_tampering_fail() -> None:
    key = os.urandom(32)
    blob = encrypt_payload(b"secret archive", key, archive_id="arc_1")
    tampered = bytearray(blob)
    tampered[20] ^= 0x01

    for bad_blob, bad_key, archive_id in (
        (blob, os.urandom(32), "arc_1"),
        (blob, key, "arc_2"),
        (bytes(tampered), key, "arc_1"),
        (blob[:20], key, "arc_1"),
    ):
        with pytest.raises(InputRejected):
            decrypt_payload(bad_blob, bad_key, archive_id=archive_id)


@pytest.mark.parametrize("size", [0, 16, 24, 31, 33])
def test_only_256_bit_keys_are_accepted(size: int) -> None:
    with pytest.raises(InputRejected, match="32 bytes"):
        encrypt_payload(b"x", b"k" * size, archive_id="arc_1")
