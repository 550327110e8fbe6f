"""The SDK's shape: it imports `schemas` and the Kafka client but never `engine`, its public
methods are typed (no `**kwargs`), its modules stay small, its import paths all work, and its
typed keywords build the requests the reference's bodies build (the request-reply seam
`_exchange` is replaced, no driver is mocked)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from schemas import topics
from schemas.inputs import context_request
from schemas.requests import (
    MAX_WAIT_SECONDS,
    AdminReply,
    AdminRequest,
    ContextReply,
    ItemReply,
    ItemRequest,
    SessionReply,
    SessionRequest,
)
from schemas.scope import Scope
from services.sdk import MemoryClient, RequestFailed

SDK = Path(__file__).resolve().parents[2] / "services" / "sdk"


class Recording(MemoryClient):
    """Answers every request with `answer` (or an empty reply) and keeps what was sent."""

    def __init__(self, answer: BaseModel | None = None) -> None:
        super().__init__("unused:9092")
        self.sent: list[tuple[str, BaseModel, str]] = []
        self.answer = answer

    async def _exchange(  # type: ignore[override]
        self, topic: str, request: BaseModel, key: str, reply: type[Any], timeout: float | None
    ) -> Any:
        self.sent.append((topic, request, key))
        return self.answer if self.answer is not None else reply()


def test_the_sdk_never_imports_the_engine() -> None:
    for path in sorted(SDK.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            assert not [n for n in names if n.split(".")[0] == "engine"], path.name


def test_sdk_modules_stay_under_400_lines() -> None:
    for path in SDK.glob("*.py"):
        assert len(path.read_text().splitlines()) < 400, path.name


def test_public_methods_list_their_parameters() -> None:
    for name, method in inspect.getmembers(MemoryClient, inspect.iscoroutinefunction):
        if name.startswith("_"):
            continue
        kinds = {p.kind for p in inspect.signature(method).parameters.values()}
        assert inspect.Parameter.VAR_KEYWORD not in kinds, name
        assert inspect.Parameter.VAR_POSITIONAL not in kinds, name


def test_every_import_path_names_the_same_client() -> None:
    import importlib
    import sys

    sys.modules.pop("services.client", None)
    with pytest.warns(DeprecationWarning, match="import MemoryClient from services.sdk"):
        compat = importlib.import_module("services.client").MemoryClient
    from services.sdk.client import MemoryClient as full

    assert compat is full is MemoryClient


async def test_context_keywords_build_the_reference_request() -> None:
    client = Recording()
    scope = {"agentWallet": "0xA", "user_id": "alice", "threadId": "t1"}
    await client.context(
        "what food?",
        scope,
        layers=["graph", "working"],
        limit=30,
        max_items=6,
        max_item_chars=900,
        budget_chars=1200,
        include_raw=True,
        as_of="2024-05-01T00:00:00+00:00",
    )
    body = {
        **scope,
        "query": "what food?",
        "layers": ["graph", "working"],
        "limit": 30,
        "maxItems": 6,
        "maxItemChars": 900,
        "budget": {"maxCharacters": 1200},
        "includeRaw": True,
        "asOf": "2024-05-01T00:00:00+00:00",
    }
    [(topic, request, key)] = client.sent
    assert (topic, key) == (topics.SEARCH, "0xA")
    assert request.model_dump_json() == context_request(body).model_dump_json()


async def test_context_defaults_and_a_scope_model() -> None:
    client = Recording()
    await client.context("q", Scope.parse({"agentWallet": "0xA"}))
    [(_, request, _)] = client.sent
    wanted = context_request({"agentWallet": "0xA", "query": "q"})
    assert request.model_dump_json() == wanted.model_dump_json()


async def test_a_reply_with_an_error_raises() -> None:
    client = Recording(ContextReply(error="filters: key '$where' is an operator"))
    with pytest.raises(RequestFailed, match="operator"):
        await client.context("q", {"agentWallet": "0xA", "filters": {"$where": "1"}})


async def test_item_session_and_admin_keywords_build_their_contracts() -> None:
    client = Recording()
    scope = {"agentWallet": "0xA", "userAddress": "bob"}
    assert isinstance(
        await client.item("resolve", "m1", scope, resolution="keep", reason="dup"), ItemReply
    )
    await client.session("update", "s1", scope, context=["user: hi"], replace=True)
    await client.admin("patterns.list", scope, limit=5, min_success_rate=0.5)
    await client.admin("jobs.get", None, id="job-1")
    parsed = Scope.parse(scope)
    assert [(t, r.model_dump_json(), k) for t, r, k in client.sent] == [
        (
            topics.ITEMS,
            ItemRequest.model_validate(
                {
                    "scope": parsed,
                    "op": "resolve",
                    "id": "m1",
                    "resolution": "keep",
                    "reason": "dup",
                    "actor": client.actor,
                }
            ).model_dump_json(),
            "0xA",
        ),
        (
            topics.SESSIONS,
            SessionRequest.model_validate(
                {
                    "scope": parsed,
                    "op": "update",
                    "session_id": "s1",
                    "context": ["user: hi"],
                    "replace": True,
                }
            ).model_dump_json(),
            "0xA",
        ),
        (
            topics.ADMIN,
            AdminRequest.model_validate(
                {"op": "patterns.list", "scope": parsed, "limit": 5, "min_success_rate": 0.5}
            ).model_dump_json(),
            "0xA",
        ),
        (
            topics.ADMIN,
            AdminRequest.model_validate({"op": "jobs.get", "id": "job-1"}).model_dump_json(),
            "jobs.get",
        ),
    ]
    assert SessionReply().not_found is False
    assert AdminReply().result is None


async def test_writes_validate_before_anything_is_published() -> None:
    from schemas.scope import ScopeError

    client = Recording()  # not started: publishing would raise RuntimeError
    with pytest.raises(ScopeError, match="agentWallet is required"):
        await client.remember({"content": "x"})
    with pytest.raises(RuntimeError, match="not started"):
        await client.remember({"agentWallet": "0xA", "content": "x"})


async def test_values_are_validated_by_the_contract_not_coerced() -> None:
    from pydantic import ValidationError

    client = Recording()
    with pytest.raises(ValidationError):
        await client.session("update", "s1", {"agentWallet": "0xA"}, context="one line")  # type: ignore[arg-type]
    assert client.sent == []


async def test_read_arguments_out_of_range_raise_the_sdks_input_error() -> None:
    # issue 17: `reliability(last=0)` raised a raw pydantic ValidationError
    from services.sdk import ScopeError, ValueOutOfRange

    client = Recording()
    scope = {"agentWallet": "0xFlow"}
    for last, bound in ((0, "greater than or equal to 1"), (501, "less than or equal to 500")):
        with pytest.raises(ValueOutOfRange, match=f"^last: Input should be {bound}$"):
            await client.reliability("planner", scope, last=last)
    with pytest.raises(ScopeError, match=r"^agent: ") as refused:
        await client.reliability("", scope)
    assert not isinstance(refused.value, ValueOutOfRange)
    with pytest.raises(ValueOutOfRange, match=r"^limit: "):
        await client.search_layers("q", scope, limit=0)
    assert client.sent == []  # refused before anything was published
    await client.reliability("planner", scope, last=500)
    assert [topic for topic, _, _ in client.sent] == [topics.RELIABILITY]


async def test_admin_lists_jobs_by_status() -> None:
    client = Recording()
    await client.admin("jobs.list", {"agentWallet": "0xA"}, status="failed", limit=5)
    [(topic, request, key)] = client.sent
    assert (topic, key) == (topics.ADMIN, "0xA")
    assert isinstance(request, AdminRequest)
    assert (request.op, request.status, request.limit) == ("jobs.list", "failed", 5)


async def test_history_and_restore_build_their_requests_with_the_actor() -> None:
    client = Recording()
    client.actor = "sdk:tester"
    scope = {"agentWallet": "0xA", "userAddress": "bob"}
    await client.history("fact_1", scope, limit=20)
    await client.item("restore", "fact_1", scope)
    await client.item("delete", "fact_1", scope, actor="someone-else")
    [(t1, history, k1), (_, restore, _), (_, delete, _)] = client.sent
    assert (t1, k1) == (topics.ITEMS, "0xA")
    assert isinstance(history, ItemRequest)
    assert (history.op, history.id, history.limit) == ("history", "fact_1", 20)
    assert isinstance(restore, ItemRequest)
    assert isinstance(delete, ItemRequest)
    assert (restore.op, restore.actor) == ("restore", "sdk:tester")
    assert delete.actor == "someone-else"


async def test_waiting_for_a_turn_this_client_did_not_publish_is_refused() -> None:
    client = Recording()
    with pytest.raises(ValueError, match="not published by this client"):
        await client.wait_processed("turn-never-seen", ["facts"])


def test_a_blank_group_prefix_or_a_wait_timeout_below_zero_is_refused() -> None:
    with pytest.raises(ValueError, match="group_prefix"):
        MemoryClient("unused:9092", group_prefix=" ")
    with pytest.raises(ValueError, match="wait_timeout"):
        MemoryClient("unused:9092", wait_timeout=0)


@pytest.mark.parametrize("timeout", [0, -1.0, float("nan"), float("inf"), 1e9, 300.5])
def test_a_wait_timeout_outside_the_gateways_bounds_is_refused(timeout: float) -> None:
    """Issue 33: above the gateway's cap (300 s) too; `inf` waited forever on a stopped group."""
    with pytest.raises(ValueError, match="timeout must be a positive number of seconds, at most"):
        MemoryClient("unused:9092")._wait_seconds(timeout)
    with pytest.raises(ValueError, match="wait_timeout"):
        MemoryClient("unused:9092", wait_timeout=timeout)


def test_the_longest_wait_is_the_gateways() -> None:
    assert MemoryClient("unused:9092")._wait_seconds(MAX_WAIT_SECONDS) == MAX_WAIT_SECONDS
    assert MemoryClient("unused:9092", wait_timeout=MAX_WAIT_SECONDS).wait_timeout == 300


async def test_a_bad_wait_timeout_publishes_nothing() -> None:
    client = MemoryClient("unused:9092")  # never started: a publish would raise RuntimeError
    body = {"agentWallet": "0xA", "threadId": "t", "userMessage": "a", "assistantMessage": "b"}
    with pytest.raises(ValueError, match="timeout"):
        await client.record_turn(body, wait=True, timeout=0)
    with pytest.raises(ValueError, match="timeout"):
        await client.remember({"agentWallet": "0xA", "content": "x"}, wait=True, timeout=-2)
