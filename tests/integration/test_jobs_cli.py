"""`mnemostream jobs run`: the job request it publishes carries every parameter given, JSON
values decoded (`--param dateRange={...}`); parameters are checked against the job's own
schema first (`schemas.jobs`), so one the job does not take or one out of its range is
refused by name and nothing is published."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from schemas import topics
from schemas.events import JobRequested
from services.endpoints import Endpoints
from services.stream.offsets import end_offsets
from services.stream.topics import create_topics

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
        (["consolidate"], "agentWallet or agentWallets are required"),
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
    assert message in " ".join(done.stderr.split()), done.stderr  # rich wraps long lines
    assert await end_offsets(stack.kafka_bootstrap, [topics.JOBS]) == before
