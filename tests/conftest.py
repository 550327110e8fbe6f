"""Shared fixtures: the real local infrastructure (one per test session) and unique names."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator

import pytest

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from services.infra import ENV_KAFKA, ENV_MONGO, ENV_REDIS, Endpoints, start_stack, stop_stack

# the scripted local HTTP server harness: `provider` and `client` fixtures
pytest_plugins = ["tests.support.http_server"]


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoints]:
    """Kafka, MongoDB and Redis endpoints for the whole session.

    Uses ``MNEMOSTREAM_KAFKA_BOOTSTRAP`` / ``MNEMOSTREAM_MONGO_URI`` / ``MNEMOSTREAM_REDIS_URL``
    when all three are set; otherwise starts real servers on free ports and stops them (by PID)
    at the end of the session.
    """
    kafka, mongo, redis = (os.environ.get(k) for k in (ENV_KAFKA, ENV_MONGO, ENV_REDIS))
    if kafka and mongo and redis:
        yield Endpoints(kafka_bootstrap=kafka, mongo_uri=mongo, redis_url=redis)
        return
    state_dir = tmp_path_factory.mktemp("infra")
    endpoints = start_stack(state_dir)
    try:
        yield endpoints
    finally:
        stop_stack(state_dir)


@pytest.fixture(scope="session")
def minilm() -> LocalMiniLMEmbedder:
    """The real local MiniLM embedder, loaded once per session (it keeps no per-test state)."""
    return LocalMiniLMEmbedder.load()


@pytest.fixture
def unique() -> Callable[[str], str]:
    """Make names unique per test (topics, consumer groups, databases, key prefixes)."""

    def make(prefix: str = "t") -> str:
        return f"{prefix}_{uuid.uuid4().hex[:12]}"

    return make
