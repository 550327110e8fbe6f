"""`open_runtime` on the real servers builds only the parts it is asked for: a process of the
invalidation group connects and ensures the schema but loads no embedder, extractor or
search; a part used anyway is built on first use."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from services.endpoints import Endpoints
from services.groups.app import needs_of
from services.runtime import NotPrepared, open_runtime
from tests.support.settings import make_settings

pytestmark = pytest.mark.integration


async def test_an_invalidation_process_builds_no_heavy_part(
    stack: Endpoints, unique: Callable[[str], str]
) -> None:
    # an LLM extractor without its URL would fail to build: it is never asked for here
    settings = make_settings(stack, unique("needs"), embedder="hashing", extractor="llm")
    async with open_runtime(settings, needs=needs_of(["invalidation"])) as rt:
        try:
            assert rt.built() == frozenset()
            with pytest.raises(NotPrepared):
                _ = rt.search
            assert rt.embedder.dimension > 0  # built on first use
            assert rt.built() == {"embedder"}
        finally:
            await rt.mongo.drop_database(settings.mongo.db)
