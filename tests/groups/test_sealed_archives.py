"""Archives sealed at rest through the in-memory runtime (issue 17 §3): with
`MNEMOSTREAM_ARCHIVE_ENCRYPTION_KEY` the `archive_create` job stores only the sealed form, the
archives layer still answers a question about the archive's content, and its packed line
counts "entities" (not "entitys"); after a rotation (a new key, the old one previous) the
archive still answers, and without the old key the layer fails instead of answering."""

from __future__ import annotations

import base64
import os
from dataclasses import asdict, replace

import numpy as np

from engine.adapters.memory import InMemoryArchiveStore, InMemoryQueryCache
from engine.records import MemoryRow, ScopeFields
from schemas.requests import ContextRequest
from schemas.scope import Scope
from services.groups.jobs.functions import job_functions
from services.runtime import Stores
from services.runtime.memory import memory_runtime, memory_stores
from services.settings import Settings

CANARY = "swordfish-42"
AGENT = "0xSealedRuntime"
DAY = 86_400_000
AT = 1_767_225_600_000  # the job's time (ms): 2026-01-01T00:00:00Z
QUESTION = "What is the code of the vault?"


def memories() -> list[MemoryRow]:
    texts = [
        ("fact", f"The user's vault code is {CANARY}."),
        ("fact", "The user keeps the vault in the cellar."),
        ("entity", "Vault (object): the user's cellar vault"),
        ("entity", "Cellar (place): where the user keeps the vault"),
    ]
    return [
        MemoryRow(
            f"m{i}",
            ScopeFields(AGENT, "ana", "T1", None, None),
            text,
            np.full(384, 1 / np.sqrt(384), dtype=np.float32),
            "hashing",
            source,
            AT - (i + 1) * DAY,
            {"confidence": 0.9} if source == "fact" else {},
        )
        for i, (source, text) in enumerate(texts)
    ]


def key_text(key: bytes) -> str:
    return base64.b64encode(key).decode()


def fresh_cache(stores: Stores) -> Stores:
    """The same stored rows and archives, with an empty query cache (no cached answer from
    another runtime)."""
    return replace(stores, cache=InMemoryQueryCache())


async def answer(settings: Settings, stores: Stores) -> tuple[str, dict[str, int]]:
    async with memory_runtime(settings, stores=fresh_cache(stores)) as rt:
        scope = Scope.parse({"agentWallet": AGENT, "userAddress": "ana", "threadId": "T2"})
        reply = await rt.search.context(
            ContextRequest(scope=scope, query=QUESTION, layers=["archives"]), AT
        )
    return reply.prompt or "", reply.totals


async def test_a_sealed_archive_answers_and_rotation_keeps_it_readable() -> None:
    key_a, key_b = os.urandom(32), os.urandom(32)
    stores = memory_stores()
    inner = stores.archives
    assert isinstance(inner, InMemoryArchiveStore)
    with_a = Settings(archive_encryption_key=key_text(key_a))
    async with memory_runtime(with_a, stores=stores) as rt:
        for row in memories():
            assert await rt.memory.insert_if_absent(row)
        done = await job_functions(rt)["archive_create"]({"agentWallet": AGENT}, AT)
    assert done["inserted"] == 1

    [stored] = inner.records()
    assert stored.seal is not None
    assert CANARY not in repr(asdict(stored))  # nothing readable at rest
    assert "vault" not in repr(asdict(stored)).lower()

    prompt, _ = await answer(with_a, stores)
    assert CANARY in prompt  # the archives layer opened and found it
    assert "(entities 2, facts 2)" in prompt  # fixes the "entitys" plural
    assert "entitys" not in prompt

    rotated = Settings(
        archive_encryption_key=key_text(key_b), archive_previous_encryption_keys=key_text(key_a)
    )
    prompt, _ = await answer(rotated, stores)
    assert CANARY in prompt

    prompt, totals = await answer(Settings(archive_encryption_key=key_text(key_b)), stores)
    assert CANARY not in prompt
    assert "archives" not in totals  # the layer failed (key id not configured), said in the log
