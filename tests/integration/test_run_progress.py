"""`mnemostream run all` says how its start-up goes (issue 17: it printed nothing until it was
ready): one line per step on stdout — the groups starting, the database schema, each heavy
part, the topics, each group as it has joined — and then `ready`."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
from pymongo import AsyncMongoClient

from services.endpoints import Endpoints
from services.groups.app import GROUPS, needs_of
from services.stream.offsets import start_at_end
from tests.support.pipeline import subscriptions

pytestmark = pytest.mark.integration

STEP = re.compile(r"^\[ *\d+\.\d s\] (.+)$")


async def test_run_all_prints_its_progress_until_ready(
    stack: Endpoints, unique: Callable[[str], str]
) -> None:
    prefix = unique("progress")
    # the topics are shared by the session's tests: the new groups start at their ends
    subscribed = subscriptions(prefix, ["all"])
    await start_at_end(stack.kafka_bootstrap, subscribed)
    env = {
        **os.environ,
        **stack.to_env(),
        "MNEMOSTREAM_MONGO_DB": prefix,
        "MNEMOSTREAM_GROUP_PREFIX": prefix,
        "MNEMOSTREAM_SESSION_TIMEOUT_MS": "2000",
        "MNEMOSTREAM_HEARTBEAT_INTERVAL_MS": "500",
        "MNEMOSTREAM_EMBEDDER": "hashing",
        "MNEMOSTREAM_EXTRACTOR": "rules",  # every group consumes
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "services", "run", "all", "--http-port", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    steps: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # the lines come while it starts, not all at the end
            if line.startswith("ready"):
                break
            found = STEP.match(line.rstrip("\n"))
            if found:  # FastStream's own log lines go to stdout too
                steps.append(found.group(1))
        else:
            pytest.fail(f"`run all` exited ({proc.wait()}) before it was ready: {steps}")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        mongo: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(stack.mongo_uri)
        await mongo.drop_database(prefix)
        await mongo.close()

    assert steps[0] == f"starting {len(GROUPS)} groups: {', '.join(GROUPS)}"
    assert steps[1] == f"connecting; ensuring the database schema of {prefix}"
    parts = sorted(needs_of(list(GROUPS)) - {"search"})
    assert steps[2 : 2 + len(parts)] == [f"building the {part}" for part in parts]
    rest = steps[2 + len(parts) :]
    assert rest[:2] == ["building the search (and its vector index)", "creating the topics"]
    consumer_groups = len({group_id for group_id, _ in subscribed})
    assert rest[2].startswith(f"joining {consumer_groups} Kafka consumer groups")
    ready = [re.fullmatch(r"group (\w+) ready \((\d+)/(\d+)\)", step) for step in rest[3:]]
    assert all(ready), rest[3:]
    assert sorted(m.group(1) for m in ready if m) == sorted(GROUPS)
    assert [int(m.group(2)) for m in ready if m] == list(range(1, len(GROUPS) + 1))
