"""The `archive_create` job on the real stack (MongoDB-wire server, a local Pinata stub):
the window ends at the job's own time, so re-running a job inserts nothing new and repairs a
pin that failed; every tenant scope (agent, user, mode, hai) gets its own archive, never
mixing users (§16.6)."""

from __future__ import annotations

import asyncio
import base64
import os
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import numpy as np
import pytest

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from engine.adapters.mongo import MongoMemoryStore
from engine.adapters.mongo.archives import archive_record
from engine.errors import DependencyFailed
from engine.records import MemoryRow, ScopeFields
from engine.upkeep.archive_seal import open_archive
from engine.upkeep.archives import decrypt_payload, read_archive
from engine.upkeep.jobs import run_job
from services.endpoints import Endpoints
from services.groups.jobs.functions import job_functions
from services.runtime import Runtime, open_runtime
from tests.support.http_server import Provider, Received, Reply, Responder
from tests.support.settings import make_settings

pytestmark = pytest.mark.integration

DAY = 86_400_000
AGENT = "0xArchiveJobs"
VEC = np.ones(384, dtype=np.float32) / np.sqrt(384)


class PinataStub:
    """Fails the first `failures` pins with HTTP 500, then answers with a CID."""

    def __init__(self, failures: int) -> None:
        self.failures = failures

    def __call__(self, request: Received) -> Reply:
        if self.failures > 0:
            self.failures -= 1
            return Reply(500, {"error": "pinning is down"})
        return Reply(200, {"IpfsHash": "bafy-repaired", "PinSize": 10})


@pytest.fixture
def at() -> int:
    """The job's time: now, in whole seconds (ms), read when the test starts."""
    return int(time.time() * 1000) // 1000 * 1000


@pytest.fixture
async def archiving(
    stack: Endpoints,
    minilm: LocalMiniLMEmbedder,
    unique: Callable[[str], str],
    provider: Callable[[Responder], Provider],
) -> AsyncIterator[tuple[Runtime, PinataStub, Provider, bytes]]:
    stub = PinataStub(failures=0)
    pinata = provider(stub)
    key = os.urandom(32)
    settings = make_settings(
        stack,
        unique("arcjobs"),
        extractor="none",
        pinata_jwt="jwt-test",
        pinata_base_url=pinata.url,
        archive_encryption_key=base64.b64encode(key).decode(),
    )
    async with open_runtime(settings, minilm) as rt:
        yield rt, stub, pinata, key
        await rt.mongo.drop_database(settings.mongo.db)


def row(
    vid: str,
    user: str | None,
    age_days: float,
    mode: str | None = None,
    hai: str | None = None,
    *,
    at: int,
) -> MemoryRow:
    return MemoryRow(
        vid,
        ScopeFields(AGENT, user, "thread-1", mode, hai),
        f"{user} planted tomatoes on the balcony, note {vid}.",
        VEC,
        "all-MiniLM-L6-v2-int8",
        "fact",
        int(at - age_days * DAY),
        {},
    )


async def seed(rt: Runtime, *rows: MemoryRow) -> None:
    store = MongoMemoryStore(rt.mongo[rt.settings.mongo.db])
    for r in rows:
        await store.insert_if_absent(r)


async def archive_docs(rt: Runtime) -> list[dict[str, Any]]:
    col = rt.mongo[rt.settings.mongo.db]["archives"]
    return await col.find({}).sort("_id", 1).to_list(length=None)


def stored_content(rt: Runtime, doc: dict[str, Any]) -> str:
    """The archive's payload as stored (base64 of gzip of JSON), opened with the runtime's
    archive keys: the document itself holds it sealed."""
    assert "content" not in doc
    assert doc["sealed"]["keyId"]
    content = open_archive(archive_record(doc), rt.archive_keys).content
    assert content is not None
    return content


async def test_rerunning_a_job_yields_the_same_archives_and_inserts_nothing_new(
    archiving: tuple[Runtime, PinataStub, Provider, bytes],
    at: int,
) -> None:
    rt, _, pinata, _ = archiving
    await seed(
        rt, row("a1", "ana", 1, at=at), row("a2", "ana", 2, at=at), row("b1", "ben", 3, at=at)
    )
    archive = job_functions(rt)["archive_create"]

    first = await archive({"agentWallet": AGENT, "windowDays": 7}, at)
    await asyncio.sleep(0.01)  # the clock moves on; the job's time does not
    again = await archive({"agentWallet": AGENT, "windowDays": 7}, at)

    assert len(first["archives"]) == 2  # one per user
    assert first["inserted"] == 2
    assert again["archives"] == first["archives"]  # the same ids: the same window
    assert again["inserted"] == 0
    assert again["pinned"] == 0  # already pinned: not pinned twice
    docs = await archive_docs(rt)
    assert sorted(d["_id"] for d in docs) == sorted(first["archives"])
    assert {d["dateRange"]["end"] for d in docs} == {at}
    assert len(pinata.received) == 2


async def test_a_pin_that_failed_is_repaired_when_the_job_is_retried(
    archiving: tuple[Runtime, PinataStub, Provider, bytes],
    at: int,
) -> None:
    rt, stub, pinata, key = archiving
    stub.failures = 1
    await seed(rt, row("a1", "ana", 1, at=at))

    record = await run_job(
        rt.jobs,
        job_functions(rt),
        job_id="weekly-archive:retry",
        job_type="archive_create",
        params={"agentWallet": AGENT, "windowDays": 7},
        at=at,
        now=lambda: int(time.time() * 1000),
        attempts=2,
        backoff_seconds=0.01,
    )

    assert record.status == "completed", record
    assert record.attempts == 2  # the first attempt inserted the archive, then its pin failed
    assert record.result is not None
    assert record.result["inserted"] == 0
    assert record.result["pinned"] == 1
    [doc] = await archive_docs(rt)  # one archive, not a second one of the same rows
    assert record.result["archives"] == [doc["_id"]]
    assert doc["ipfsCid"] == "bafy-repaired"
    assert len(pinata.received) == 2
    content = pinata.received[-1].json()["pinataContent"]
    blob = base64.b64decode(content["payload"])
    assert decrypt_payload(blob, key, archive_id=doc["_id"]).decode() == stored_content(rt, doc)


async def test_a_pin_failure_fails_the_attempt_not_the_archive(
    archiving: tuple[Runtime, PinataStub, Provider, bytes],
    at: int,
) -> None:
    rt, stub, _, _ = archiving
    stub.failures = 1
    await seed(rt, row("a1", "ana", 1, at=at))
    archive = job_functions(rt)["archive_create"]

    with pytest.raises(DependencyFailed):
        await archive({"agentWallet": AGENT}, at)
    [doc] = await archive_docs(rt)
    assert not doc.get("ipfsCid")
    repaired = await archive({"agentWallet": AGENT}, at)
    [doc] = await archive_docs(rt)
    assert repaired == {"archives": [doc["_id"]], "inserted": 0, "pinned": 1}
    assert doc["ipfsCid"] == "bafy-repaired"


async def test_rows_with_a_mode_or_hai_are_archived_per_tenant_scope_fixes_16_6(
    archiving: tuple[Runtime, PinataStub, Provider, bytes],
    at: int,
) -> None:
    rt, _, _, _ = archiving
    await seed(
        rt,
        row("ana-none", "ana", 1, at=at),
        row("ana-global", "ana", 1, mode="global", at=at),
        row("ana-global-2", "ana", 2, mode="global", at=at),
        row("ana-local", "ana", 1, mode="local", hai="hai-1", at=at),
        row("ana-local-other", "ana", 1, mode="local", hai="hai-2", at=at),
        row("ben-global", "ben", 1, mode="global", at=at),
        row("agent-global", None, 1, mode="global", at=at),
        row("ana-old", "ana", 30, mode="global", at=at),  # outside the window
    )

    result = await job_functions(rt)["archive_create"]({"agentWallet": AGENT}, at)

    docs = await archive_docs(rt)
    assert result["inserted"] == len(docs) == 6
    by_tenant = {
        (d["userAddress"], d.get("mode"), d.get("haiId")): sorted(
            e["vectorId"] for e in read_archive(stored_content(rt, d))["entries"]
        )
        for d in docs
    }
    assert by_tenant == {
        ("ana", None, None): ["ana-none"],
        ("ana", "global", None): ["ana-global", "ana-global-2"],
        ("ana", "local", "hai-1"): ["ana-local"],
        ("ana", "local", "hai-2"): ["ana-local-other"],
        ("ben", "global", None): ["ben-global"],  # never mixed with ana's
        (None, "global", None): ["agent-global"],
    }


async def test_a_date_range_picks_its_rows_and_sync_to_ipfs_false_pins_nothing(
    archiving: tuple[Runtime, PinataStub, Provider, bytes],
    at: int,
) -> None:
    rt, _, pinata, _ = archiving
    await seed(
        rt,
        row("new", "ana", 1, at=at),
        row("old", "ana", 10, at=at),
        row("older", "ana", 20, at=at),
    )
    archive = job_functions(rt)["archive_create"]
    span = {"start": at - 15 * DAY, "end": at - 5 * DAY}

    done = await archive({"agentWallet": AGENT, "dateRange": span, "syncToIpfs": False}, at)

    [doc] = await archive_docs(rt)
    assert done == {"archives": [doc["_id"]], "inserted": 1, "pinned": 0}
    assert doc["metadata"]["entryCount"] == 1  # "old" only: "new" and "older" are outside
    assert (doc["dateRange"]["start"], doc["dateRange"]["end"]) == (span["start"], span["end"])
    assert not doc.get("ipfsCid")
    assert pinata.received == []


async def test_a_parameter_the_job_would_ignore_fails_it_at_once_with_its_name(
    archiving: tuple[Runtime, PinataStub, Provider, bytes],
    at: int,
) -> None:
    rt, _, _, _ = archiving
    await seed(rt, row("a1", "ana", 1, at=at))
    record = await run_job(
        rt.jobs,
        job_functions(rt),
        job_id="archive:typo",
        job_type="archive_create",
        params={"agentWallet": AGENT, "windowdays": 3},
        at=at,
        now=lambda: int(time.time() * 1000),
        attempts=3,
        backoff_seconds=0.01,
    )
    assert (record.status, record.attempts) == ("failed", 1)  # not retried: it cannot help
    assert record.error is not None
    assert "does not take windowdays" in record.error
    assert await archive_docs(rt) == []
