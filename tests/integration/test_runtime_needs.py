"""`open_runtime` on the real servers builds only the parts it is asked for: a process of the
invalidation group connects and ensures the schema but loads no embedder, extractor or
search; a part used anyway is built on first use."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from threadpoolctl import threadpool_limits

from services.endpoints import Endpoints
from services.groups.app import needs_of
from services.runtime import NotPrepared, open_runtime
from services.runtime.threads import blas_threads, limit_blas_threads
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


async def test_a_runtime_keeps_numpys_blas_to_the_configured_threads(
    stack: Endpoints, unique: Callable[[str], str]
) -> None:
    # a spinning BLAS helper thread took a core from the search handlers (services/runtime/
    # threads.py): the composition root sizes the pool before any part is built
    with threadpool_limits(limits=2, user_api="blas"):
        assert set(blas_threads()) == {2}
        settings = make_settings(stack, unique("blas"), embedder="hashing", blas_threads=1)
        async with open_runtime(settings, needs=()) as rt:
            try:
                assert set(blas_threads()) == {1}
            finally:
                await rt.mongo.drop_database(settings.mongo.db)


def test_blas_threads_zero_leaves_the_librarys_own_pool() -> None:
    with threadpool_limits(limits=2, user_api="blas"):
        limit_blas_threads(0)
        assert set(blas_threads()) == {2}
        limit_blas_threads(1)
        assert set(blas_threads()) == {1}
