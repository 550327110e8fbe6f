"""The MCP server reads its own writes and answers within its published schema (issue 30), on
the real stack over stdio:

* `forget(id)` right after `remember` forgets that item. Before, `remember` answered once its
  event was on the log and the forget, reaching the items group first, said "no such memory
  item"; now `remember` answers once the fact is stored.
* `remember` without a `type` answers the type the fact is stored with, `context` (what
  `list_facts` shows), a value of its own output schema's enum. Before, it answered
  `"explicit_save"`, outside that enum.

No wait for the pipeline between the calls: each call follows the previous answer at once."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from mcp.types import Tool

from services.endpoints import Endpoints
from services.runtime import Runtime
from services.sdk.client import MemoryClient
from tests.integration.test_mcp import call, stdio_session

pytestmark = pytest.mark.integration


async def test_remember_then_at_once_list_facts_and_forget_and_one_type(
    rules_pipeline: tuple[Runtime, MemoryClient], stack: Endpoints, tmp_path: Path
) -> None:
    rt, _ = rules_pipeline
    agent = f"0xMcpRyw{uuid.uuid4().hex[:8]}"
    args = ("--agent", agent, "--user", "alice")
    prefix = rt.settings.group_prefix
    errlog = tmp_path / "stdio.log"
    async with stdio_session(stack, errlog, *args, MNEMOSTREAM_GROUP_PREFIX=prefix) as alice:
        tools: list[Tool] = (await alice.list_tools()).tools
        remember = next(t for t in tools if t.name == "remember")
        assert remember.output_schema is not None
        allowed = remember.output_schema["properties"]["type"]["enum"]

        note = await call(alice, "remember", content="Alice keeps bees on her balcony.")
        assert note["type"] in allowed
        assert note["type"] == "context"
        listed = {f["id"]: f for f in (await call(alice, "list_facts"))["facts"]}
        assert listed[note["id"]]["type"] == note["type"]

        typed = await call(alice, "remember", content="Alice is a beekeeper.", type="identity")
        assert typed["type"] == "identity"
        assert await call(alice, "forget", item_id=typed["id"]) == {
            "item_id": typed["id"],
            "hard": False,
            "erased": None,
        }
        assert await call(alice, "forget", item_id=note["id"], hard=True) == {
            "item_id": note["id"],
            "hard": True,
            "erased": None,
        }
