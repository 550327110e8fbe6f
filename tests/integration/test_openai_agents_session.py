"""`MnemoSession` and `memory_instructions` (issue 18 §3) on the real stack: the Agents SDK
`Session` protocol kept as mnemostream turns, and `Runner` driven by a scripted `Model`
(canned responses, no network) whose history and instructions come from mnemostream."""

from __future__ import annotations

import json
from typing import Any

import pytest
from agents import Agent, Runner, function_tool
from agents.memory import Session
from openai.types.responses import (
    ResponseFunctionToolCall,
)

from schemas.scope import ScopeError
from services.integrations.openai_agents import MnemoSession, memory_instructions
from services.runtime import Runtime
from services.sdk.client import MemoryClient
from services.stream.offsets import wait_processed
from tests.support.agents import ScriptedModel, no_trace_export, said, texts  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("no_trace_export")]


async def test_the_session_protocol_round_trips_items_exactly(
    rules_pipeline: tuple[Runtime, MemoryClient], unique: Any
) -> None:
    _, client = rules_pipeline
    agent = unique("0xAgents")
    session = MnemoSession(client, "chat-1", agent=agent, user="alice")
    assert isinstance(session, Session)
    assert await session.get_items() == []
    assert await session.pop_item() is None

    first: list[Any] = [
        {"role": "user", "content": "What's the weather in Oslo?"},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "weather",
            "arguments": '{"city": "Oslo"}',
            "id": "fc_1",
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "Snow, -3 °C"},
        {
            "type": "message",
            "role": "assistant",
            "id": "msg_1",
            "status": "completed",
            "content": [{"type": "output_text", "text": "It snows in Oslo.", "annotations": []}],
        },
    ]
    await session.add_items(first)
    assert await session.get_items() == first  # readable at once, exactly as given
    assert await session.get_items(limit=2) == first[2:]
    second: list[Any] = [{"role": "user", "content": "Thanks!"}]
    await session.add_items(second)
    assert await session.get_items() == first + second

    # a new session object on the same thread reads the same history (nothing is cached)
    same = MnemoSession(client, "chat-1", agent=agent, user="alice")
    assert await same.get_items() == first + second
    # another user's, another agent's, or another thread's session sees none of it
    for other in (
        MnemoSession(client, "chat-1", agent=agent, user="bob"),
        MnemoSession(client, "chat-1", agent=unique("0xOther"), user="alice"),
        MnemoSession(client, "chat-2", agent=agent, user="alice"),
    ):
        assert await other.get_items() == []

    assert await same.pop_item() == second[0]
    assert await session.get_items() == first
    assert await session.pop_item() == first[-1]
    await session.add_items(second)
    assert await session.get_items() == [*first[:-1], *second]

    await session.clear_session()
    assert await session.get_items() == []
    await session.add_items(second)
    assert await same.get_items() == second

    # the turns are mnemostream's transcript: the items' texts, readable in order
    reply = await client.transcript(session.transcript_id, session.scope)
    assert reply.transcript is not None
    contents = [m["content"] for m in reply.transcript["messages"]]
    assert '[tool call] weather({"city": "Oslo"})' in contents
    assert "It snows in Oslo." in contents


async def test_bad_items_and_scopes_get_clear_errors(
    rules_pipeline: tuple[Runtime, MemoryClient], unique: Any
) -> None:
    _, client = rules_pipeline
    session = MnemoSession(client, "chat-big", agent=unique("0xBig"), user="alice")
    with pytest.raises(ValueError, match="at most 32000"):
        await session.add_items([{"role": "user", "content": "x" * 40_000}])
    assert await session.get_items() == []
    with pytest.raises(ScopeError):
        MnemoSession(client, " padded ", agent="0xA")
    with pytest.raises(ScopeError):
        MnemoSession(client, "chat", agent="")


async def test_runner_keeps_its_history_in_mnemostream_and_recalls_memory(
    rules_pipeline: tuple[Runtime, MemoryClient], unique: Any
) -> None:
    """Two runs of one session: the first calls a tool and answers; the second's model
    input holds the first run's whole conversation (read back from mnemostream), and its
    instructions carry pre_turn's context of what the user said."""
    _, client = rules_pipeline
    agent_id = unique("0xRunner")
    session = MnemoSession(client, "run-1", agent=agent_id, user="carol")
    calls: list[str] = []

    @function_tool
    def lookup_flight(code: str) -> str:
        """Look a flight up by its code."""
        calls.append(code)
        return f"{code} leaves at 09:40 from gate B7"

    model = ScriptedModel(
        [
            [
                ResponseFunctionToolCall(
                    type="function_call",
                    call_id="call_f1",
                    name="lookup_flight",
                    arguments=json.dumps({"code": "TP1234"}),
                    id="fc_f1",
                )
            ],
            [said("Your flight TP1234 leaves at 09:40 from gate B7.", "msg_a1")],
            [said("You told me you fly to Lisbon on TP1234.", "msg_a2")],
        ]
    )
    assistant = Agent(
        name="travel",
        model=model,
        tools=[lookup_flight],
        instructions=session.instructions("You are Carol's travel assistant."),
    )
    first = await Runner.run(
        assistant, "I fly to Lisbon on flight TP1234. When does it leave?", session=session
    )
    assert first.final_output == "Your flight TP1234 leaves at 09:40 from gate B7."
    assert calls == ["TP1234"]
    history = await session.get_items()
    assert [i.get("type") for i in history] == [
        None,
        "function_call",
        "function_call_output",
        "message",
    ]
    assert history[2]["output"] == "TP1234 leaves at 09:40 from gate B7"

    second = await Runner.run(assistant, "Which flight am I on?", session=session)
    assert second.final_output == "You told me you fly to Lisbon on TP1234."
    given = model.calls[-1]
    assert texts(given["input"]) == [
        "I fly to Lisbon on flight TP1234. When does it leave?",
        "Your flight TP1234 leaves at 09:40 from gate B7.",
        "Which flight am I on?",
    ]
    assert any(i.get("type") == "function_call_output" for i in given["input"])
    instructions = given["instructions"]
    assert instructions.startswith("You are Carol's travel assistant.")
    assert "TP1234" in instructions.split("You are Carol's travel assistant.", 1)[1]
    assert len(await session.get_items()) == 6


async def test_memory_instructions_reads_the_user_from_the_run_context(
    rules_pipeline: tuple[Runtime, MemoryClient], unique: Any
) -> None:
    """A scope callable picks the tenant per run; another user's memory never shows."""
    rt, client = rules_pipeline
    agent_id = unique("0xCtx")
    await client.remember(
        {"agentWallet": agent_id, "userAddress": "dora", "content": "Dora's cat is named Miso."}
    )
    pos = client.last_position
    assert pos is not None
    await wait_processed(
        rt.endpoints.kafka_bootstrap,
        rt.group_id("facts.remember"),
        pos.topic,
        pos.partition,
        pos.offset,
        timeout=60,
    )

    model = ScriptedModel([[said("ok", "m1")], [said("ok", "m2")]])
    assistant: Agent[dict[str, str]] = Agent(
        name="pets",
        model=model,
        instructions=memory_instructions(
            client,
            lambda ctx, agent: f"Help {ctx.context['user']}.",
            scope=lambda ctx: {"agentWallet": agent_id, "userAddress": ctx.context["user"]},
        ),
    )
    await Runner.run(assistant, "What is my cat called?", context={"user": "dora"})
    await Runner.run(assistant, "What is my cat called?", context={"user": "eve"})
    dora, eve = (call["instructions"] for call in model.calls)
    assert dora.startswith("Help dora.")
    assert "Miso" in dora
    assert eve == "Help eve."
