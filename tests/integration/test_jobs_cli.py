"""`mnemostream jobs run|status|list` on the real stack: the job request `run` publishes
carries every parameter given, JSON values decoded (`--param dateRange={...}`); parameters are
checked against the job's own schema first (`schemas.jobs`), so one the job does not take or
one out of its range is refused by name, in one line, and nothing is published; `status` and
`list` show the records through a running admin group (issue 17). The refusals without a
server: tests/unit/test_jobs_refusals.py."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from engine.upkeep.jobs import JobRecord
from schemas import topics
from schemas.events import JobRequested
from services.endpoints import Endpoints
from services.runtime import Runtime
from services.sdk.client import MemoryClient
from services.stream.offsets import end_offsets
from services.stream.topics import create_topics
from tests.support.pipeline import groups_running

pytestmark = pytest.mark.integration


async def test_the_published_job_carries_every_parameter(stack: Endpoints) -> None:
    await create_topics(stack.kafka_bootstrap, {topics.JOBS: topics.PARTITIONS[topics.JOBS]})
    before = await end_offsets(stack.kafka_bootstrap, [topics.JOBS])
    assert before, "the jobs topic has partitions"
    done = subprocess.run(
        [
            sys.executable,
            *("-m", "services", "jobs", "run", "archive_create", "--agent", "0xCli"),
            *("--param", "syncToIpfs=false", "--param", "execution=inline"),
            *("--param", 'dateRange={"start": 1000, "end": 2000}'),
        ],
        env={**os.environ, **stack.to_env()},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    job_id = done.stdout.split("published job ", 1)[1].split()[0]

    consumer = AIOKafkaConsumer(bootstrap_servers=stack.kafka_bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        consumer.assign([TopicPartition(t, p) for t, p in before])
        for (t, p), offset in before.items():
            consumer.seek(TopicPartition(t, p), offset)
        found: JobRequested | None = None
        while found is None:
            batch = await consumer.getmany(timeout_ms=5000)
            assert batch, "the job request was not published"
            for records in batch.values():
                for record in records:
                    event = JobRequested.model_validate_json(record.value or b"")
                    found = event if event.job_id == job_id else found
    finally:
        await consumer.stop()
    assert found.type == "archive_create"
    assert found.params == {
        "agentWallets": ["0xCli"],
        "syncToIpfs": False,
        "execution": "inline",
        "dateRange": {"start": 1000, "end": 2000},
    }


def test_a_parameter_without_a_value_is_refused(stack: Endpoints) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "services", "jobs", "run", "cleanup", "--param", "olderThanDays"],
        env={**os.environ, **stack.to_env()},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "NAME=VALUE" in done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["archive_create", "--agent", "0xCli", "--param", "note=weekly"], "does not take note"),
        (["patterns_extract", "--agent", "0xCli", "--window-days", "-1"], "windowDays"),
        (["consolidate", "--agent", "0xCli", "--param", "batchSize=0"], "batchSize"),
        (["cleanup", "--param", "olderThanDays=1e9"], "olderThanDays"),
        (["consolidate"], "consolidate runs for an agent: give --agent"),
    ],
)
async def test_bad_parameters_are_refused_before_anything_is_published(
    stack: Endpoints, args: list[str], message: str
) -> None:
    await create_topics(stack.kafka_bootstrap, {topics.JOBS: topics.PARTITIONS[topics.JOBS]})
    before = await end_offsets(stack.kafka_bootstrap, [topics.JOBS])
    done = subprocess.run(
        [sys.executable, "-m", "services", "jobs", "run", *args],
        env={**os.environ, **stack.to_env()},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    [line] = done.stderr.splitlines()  # one line, no traceback, no usage box
    assert message in line, done.stderr
    assert await end_offsets(stack.kafka_bootstrap, [topics.JOBS]) == before


async def cli(stack: Endpoints, *args: str) -> tuple[int, str, str]:
    """Run `mnemostream jobs ARGS` without blocking the loop the admin group answers in:
    (exit code, stdout, stderr)."""
    proc = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "services", "jobs", *args),
        env={**os.environ, **stack.to_env()},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


@pytest.fixture
async def admin(stack: Endpoints) -> AsyncIterator[tuple[Runtime, MemoryClient]]:
    async with groups_running(
        stack, None, "jobscli", ["jobs", "admin"], embedder="hashing"
    ) as pair:
        yield pair


async def test_status_and_list_show_the_job_records(
    stack: Endpoints, admin: tuple[Runtime, MemoryClient]
) -> None:
    rt, _ = admin
    wallet, other = f"0xCli{uuid.uuid4().hex[:8]}", f"0xCli{uuid.uuid4().hex[:8]}"
    code, out, err = await cli(stack, "run", "decay_update", "--agent", wallet)
    assert code == 0, err
    job_id = out.split("published job ", 1)[1].split()[0]
    deadline = time.monotonic() + 60
    while (record := await rt.jobs.get(job_id)) is None or record.status == "running":
        assert time.monotonic() < deadline, "the decay job did not end"
        await asyncio.sleep(0.1)
    failed = JobRecord(
        "memjob_failed_" + uuid.uuid4().hex[:6],
        "consolidate",
        "failed",
        record.created_at + 1,  # newer than the decay job
        {"agentWallets": [other, wallet]},
        record.created_at + 2,
        3,
        error="the store went away\nmid-job",
        error_type="DependencyFailed",
    )
    await rt.jobs.finish(failed)

    code, out, err = await cli(stack, "status", job_id)
    assert code == 0, err
    lines = dict(line.split(None, 1) for line in out.splitlines())
    assert (lines["job"], lines["type"], lines["status"]) == (job_id, "decay_update", "completed")
    assert (lines["agents"], lines["attempts"]) == (wallet, "1")
    assert json.loads(lines["result"])["updated"] == 0  # the agent has no rows yet
    code, out, err = await cli(stack, "status", job_id, "--json")
    assert code == 0, err
    assert json.loads(out)["params"] == {"agentWallets": [wallet]}

    code, out, err = await cli(stack, "list", "--agent", wallet)
    assert code == 0, err
    [newest, oldest] = out.splitlines()
    assert newest.startswith(f"{failed.job_id}  consolidate  failed  ")
    assert newest.endswith(f"{other}, {wallet}  DependencyFailed: the store went away mid-job")
    assert oldest.startswith(f"{job_id}  decay_update  completed  ")
    code, out, err = await cli(stack, "list", "--agent", other, "--status", "completed")
    assert (code, out) == (0, "no jobs\n"), err
    code, out, err = await cli(stack, "list", "--status", "failed", "--limit", "1", "--json")
    assert code == 0, err
    assert [r["jobId"] for r in json.loads(out)] == [failed.job_id]

    code, out, err = await cli(stack, "status", job_id, "--agent", other)
    assert (code, out, err) == (1, "", f"error: no job {job_id} naming agent {other}\n")
    code, out, err = await cli(stack, "status", "memjob_never")
    assert (code, out, err) == (1, "", "error: no job memjob_never\n")


async def test_without_an_admin_group_the_readers_say_so(stack: Endpoints) -> None:
    # no admin group runs in this test: the request is not answered
    code, out, err = await cli(stack, "list", "--timeout", "1")
    assert (code, out) == (1, "")
    assert err.startswith("error: the admin group did not answer in time")
    assert len(err.splitlines()) == 1
