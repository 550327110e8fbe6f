"""The MCP server (`mnemostream mcp`, issue 18 §1) as a subprocess on the real stack, driven
by the official `mcp` client over stdio and over streamable HTTP: the six tools are listed
with typed schemas naming no tenant, each works (remember then recall finds it, forget
removes it, the facts carry their validity and `as_of`), bad arguments come back as tool
errors with a message while the server keeps serving, and no call reaches another user's
memory — neither through the configuration of another server nor through a credential.

Before this change there was no `mcp` command: every test here fails at its first step."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from schemas import topics
from services.endpoints import Endpoints
from services.gateway.auth import JwtRules, mint_token
from services.runtime import Runtime
from services.sdk.client import MemoryClient
from tests.support.net import free_port
from tests.support.pipeline import drained

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ["remember", "record_turn", "recall", "search_memory", "forget", "list_facts"]
TENANT_WORDS = {"agent", "agentWallet", "user", "userAddress", "thread", "threadId", "tenant"}
JWT_SECRET = "mcp-test-secret-" + uuid.uuid4().hex
REMEMBERED = [("facts.remember", topics.REMEMBER), ("invalidation", topics.CHANGED)]
TURNED = [
    ("transcripts", topics.TURNS),
    ("extraction", topics.TURNS),
    ("facts", topics.FACTS),
    ("invalidation", topics.CHANGED),
]
CHANGED = [("invalidation", topics.CHANGED)]
LISBON = "I live in Lisbon, in the Alfama district."
WHERE = "Where do I live?"


def server_env(stack: Endpoints, **extra: str) -> dict[str, str]:
    """The environment of a server subprocess: this session's Kafka (and state dir), the
    worktree on the path, and `extra` (MNEMOSTREAM_* settings)."""
    return {
        **os.environ,
        "MNEMOSTREAM_KAFKA_BOOTSTRAP": stack.kafka_bootstrap,
        "PYTHONPATH": str(ROOT),
        **extra,
    }


def text_of(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def call(session: ClientSession, name: str, **arguments: Any) -> dict[str, Any]:
    """The tool's structured answer (the call must succeed)."""
    result = await session.call_tool(name, arguments)
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    answer: dict[str, Any] = result.structured_content
    return answer


async def refused(session: ClientSession, name: str, **arguments: Any) -> str:
    """The message of a tool call that must fail as a tool error (not a protocol error)."""
    result = await session.call_tool(name, arguments)
    assert result.is_error, result
    message = text_of(result)
    assert message.startswith(f"Error executing tool {name}: "), message
    return message


@asynccontextmanager
async def stdio_session(
    stack: Endpoints, errlog: Path, *args: str, **env: str
) -> AsyncIterator[ClientSession]:
    """`mnemostream mcp ARGS` over stdio, as a subprocess (stopped on exit by the client)."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "services", "mcp", *args],
        env=server_env(stack, **env),
        cwd=ROOT,
    )
    with errlog.open("a") as log:
        async with (
            stdio_client(params, errlog=log) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


@contextmanager
def http_server(stack: Endpoints, errlog: Path, *args: str, **env: str) -> Iterator[str]:
    """`mnemostream mcp --http PORT ARGS` as a subprocess; yields its MCP URL once the port
    accepts connections, and stops it (by its PID) afterwards."""
    port = free_port()
    with errlog.open("a") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "services", "mcp", "--http", str(port), *args],
            env=server_env(stack, **env),
            cwd=ROOT,
            stdout=log,
            stderr=log,
        )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, f"the MCP server exited: {errlog.read_text()}"
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the MCP server did not start listening"
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@asynccontextmanager
async def http_session(url: str, credential: str) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {credential}"}
    timeout = httpx2.Timeout(30, read=300)
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def listed(session: ClientSession) -> list[dict[str, Any]]:
    """The tools as the client sees them: name, description, argument schema."""
    tools = (await session.list_tools()).tools
    return [{"name": t.name, "description": t.description, "input": t.input_schema} for t in tools]


def check_listing(tools: list[dict[str, Any]]) -> None:
    assert [t["name"] for t in tools] == TOOLS
    for tool in tools:
        schema = tool["input"]
        assert len(tool["description"]) > 40, tool["name"]
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False, tool["name"]
        assert not (set(schema.get("properties", {})) & TENANT_WORDS), tool["name"]
    by_name = {t["name"]: t["input"] for t in tools}
    assert by_name["remember"]["required"] == ["content"]
    assert by_name["recall"]["properties"]["budget_chars"]["maximum"] == 50_000
    assert by_name["record_turn"]["required"] == ["user_message", "assistant_message"]


async def test_mcp_over_stdio_every_tool_its_errors_and_no_other_tenant(
    rules_pipeline: tuple[Runtime, MemoryClient], stack: Endpoints, tmp_path: Path
) -> None:
    rt, _ = rules_pipeline
    bootstrap, prefix = stack.kafka_bootstrap, rt.settings.group_prefix
    agent = f"0xMcp{os.getpid()}{time.monotonic_ns() % 10**6}"
    errlog = tmp_path / "stdio.log"
    before = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    async with (
        # remember answers once stored: the server waits on this pipeline's groups
        stdio_session(
            stack, errlog, "--agent", agent, "--user", "alice", MNEMOSTREAM_GROUP_PREFIX=prefix
        ) as alice,
        # the second server takes its user from the environment (MNEMOSTREAM_MCP_USER)
        stdio_session(
            stack,
            errlog,
            "--agent",
            agent,
            MNEMOSTREAM_MCP_USER="bob",
            MNEMOSTREAM_GROUP_PREFIX=prefix,
        ) as bob,
    ):
        check_listing(await listed(alice))

        kept = await call(alice, "remember", content=LISBON, type="identity")
        assert kept["id"].startswith("fact_")
        assert kept["type"] == "identity"
        note = await call(alice, "remember", content="Allergic to peanuts.", pinned=True)
        assert note["pinned"] is True
        await drained(bootstrap, prefix, REMEMBERED)

        recalled = await call(alice, "recall", query=WHERE, budget_chars=1_000)
        assert "Lisbon" in recalled["context"]
        assert recalled["characters"] <= 1_000
        assert any(i["id"] == kept["id"] for i in recalled["items"])

        found = await call(alice, "search_memory", query=WHERE)
        assert found["items"], found
        hit = next(i for i in found["items"] if i["id"] == kept["id"])
        assert hit["layer"] in ("graph", "vectors")
        assert 0 < hit["score"] <= 1
        scores = [i["score"] for i in found["items"] if i["score"] is not None]
        assert scores == sorted(scores, reverse=True)
        only_graph = await call(alice, "search_memory", query=WHERE, layers=["graph"], limit=1)
        assert {i["layer"] for i in only_graph["items"]} == {"graph"}
        assert only_graph["totals"]["graph"] <= 1

        facts = (await call(alice, "list_facts"))["facts"]
        lisbon = next(f for f in facts if f["id"] == kept["id"])
        assert (lisbon["text"], lisbon["current"], lisbon["valid_until"]) == (LISBON, True, None)
        assert datetime.fromisoformat(lisbon["valid_from"]) > datetime.fromisoformat(before)
        then = await call(alice, "list_facts", as_of=before)
        assert then["facts"] == []
        stated = datetime.fromisoformat(then["as_of"]) - datetime.fromisoformat(before)
        assert abs(stated) < timedelta(milliseconds=1)  # the time asked about, in ms

        turn = await call(
            alice,
            "record_turn",
            user_message="My sister Marta is visiting from Porto next week.",
            assistant_message="How nice, I hope you enjoy her visit!",
        )
        assert turn["turn_id"].startswith("turn_")
        assert turn["thread_id"] == "mcp"  # no thread configured: the default one
        await drained(bootstrap, prefix, TURNED)
        visit = await call(alice, "recall", query="Who is visiting next week?")
        assert "Marta" in visit["context"]

        # bad arguments: a tool error with a message, and the server goes on serving
        assert "content" in await refused(alice, "remember", content="")
        message = await refused(alice, "remember", content="I live in Oslo.", user="bob")
        assert "Extra inputs are not permitted" in message
        assert "\nuser\n" in message  # the field is named
        assert "I live in Oslo" not in message  # the rejected value is not echoed back
        assert "budget_chars" in await refused(alice, "recall", query=WHERE, budget_chars=10)
        assert "ISO-8601" in await refused(alice, "list_facts", as_of="last tuesday")
        assert "item_id" in await refused(alice, "forget")
        assert "item_id" in await refused(alice, "forget", item_id="x", everything=True)
        assert "no such memory item" in await refused(alice, "forget", item_id="fact_nope")
        assert "layers" in await refused(alice, "search_memory", query=WHERE, layers=["x"])
        unknown = await alice.call_tool("no_such_tool", {})
        assert unknown.is_error
        assert "Unknown tool" in text_of(unknown)

        # another user of the same agent reaches none of it, and cannot forget it
        assert "Lisbon" not in (await call(bob, "recall", query=WHERE))["context"]
        theirs = await call(bob, "search_memory", query=WHERE)
        assert all(i["id"] != kept["id"] for i in theirs["items"])
        assert (await call(bob, "list_facts"))["facts"] == []
        assert "no such memory item" in await refused(bob, "forget", item_id=kept["id"])
        erased_by_bob = await call(bob, "forget", everything=True)
        assert set(erased_by_bob["erased"].values()) == {0}
        assert any(f["id"] == kept["id"] for f in (await call(alice, "list_facts"))["facts"])

        # forget one item, then everything
        assert await call(alice, "forget", item_id=kept["id"]) == {
            "item_id": kept["id"],
            "hard": False,
            "erased": None,
        }
        await drained(bootstrap, prefix, CHANGED)
        assert all(f["id"] != kept["id"] for f in (await call(alice, "list_facts"))["facts"])
        assert "Lisbon" not in (await call(alice, "recall", query=WHERE))["context"]
        everything = await call(alice, "forget", everything=True)
        erased = everything["erased"]
        assert erased["memory"] >= 2  # the note, and what the turn left (its vector, facts)
        assert (erased["transcripts"], erased["working"]) == (1, 1)
        await drained(bootstrap, prefix, CHANGED)
        assert (await call(alice, "list_facts"))["facts"] == []
        assert (await call(alice, "recall", query="Who is visiting next week?"))["context"] == ""


async def test_mcp_over_http_takes_the_tenant_from_the_gateway_credential(
    rules_pipeline: tuple[Runtime, MemoryClient], stack: Endpoints, tmp_path: Path
) -> None:
    rt, _ = rules_pipeline
    bootstrap, prefix = stack.kafka_bootstrap, rt.settings.group_prefix
    agent = f"0xMcpHttp{os.getpid()}{time.monotonic_ns() % 10**6}"
    keys = [
        {"key": "key-alice", "agent": agent, "user": "alice"},
        {"key": "key-bob", "agent": agent, "user": "bob"},
        {"key": "key-other-agent", "agent": "0xSomeoneElse"},
    ]
    env = {
        "MNEMOSTREAM_GATEWAY_API_KEYS": json.dumps(keys),
        "MNEMOSTREAM_GATEWAY_OPERATOR_KEYS": "key-operator",
        "MNEMOSTREAM_GATEWAY_JWT_SECRET": JWT_SECRET,
        "MNEMOSTREAM_GROUP_PREFIX": prefix,  # remember waits on this pipeline's groups
    }
    alice_jwt = mint_token(JwtRules(JWT_SECRET), ttl_seconds=600, agent=agent, user="alice")
    errlog = tmp_path / "http.log"
    # no --agent: each credential brings its own tenant
    with http_server(stack, errlog, **env) as url:
        # without a valid credential the transport answers 401 before any tool runs
        hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
        accept = {"Accept": "application/json, text/event-stream"}
        for headers in ({}, {"Authorization": "Bearer not-a-key"}):
            answer = httpx.post(url, json=hello, headers={**accept, **headers}, timeout=10)
            assert answer.status_code == 401, answer.text

        async with http_session(url, "key-alice") as alice:
            check_listing(await listed(alice))
            kept = await call(alice, "remember", content=LISBON)
            await drained(bootstrap, prefix, REMEMBERED)
            assert "Lisbon" in (await call(alice, "recall", query=WHERE))["context"]
            assert "user" in await refused(alice, "recall", query=WHERE, user="bob")

        async with http_session(url, alice_jwt) as alice_by_token:
            facts = (await call(alice_by_token, "list_facts"))["facts"]
            assert [f["id"] for f in facts] == [kept["id"]]

        async with http_session(url, "key-bob") as bob:
            assert "Lisbon" not in (await call(bob, "recall", query=WHERE))["context"]
            assert "no such memory item" in await refused(bob, "forget", item_id=kept["id"])
            assert (await call(bob, "list_facts"))["facts"] == []

        async with http_session(url, "key-other-agent") as other:
            assert (await call(other, "list_facts"))["facts"] == []
            assert "no such memory item" in await refused(other, "forget", item_id=kept["id"])

        # an operator credential acts only for a configured tenant, and this server has none
        async with http_session(url, "key-operator") as operator:
            assert "no agent configured" in await refused(operator, "list_facts")

    # a server configured for alice: a credential for bob is refused, alice's is served
    with http_server(stack, errlog, "--agent", agent, "--user", "alice", **env) as url:
        async with http_session(url, "key-bob") as bob:
            assert "another userAddress" in await refused(bob, "list_facts")
        async with http_session(url, "key-operator") as operator:
            facts = (await call(operator, "list_facts"))["facts"]
            assert [f["id"] for f in facts] == [kept["id"]]
