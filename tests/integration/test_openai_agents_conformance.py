"""`MnemoSession` against the Agents SDK's documented `Session` contract (issue 30), on the
real stack, written from the SDK's docs and its own sessions' behaviour (no upstream code):

* `session_settings` is a constructor argument, a `SessionSettings` or its dict (an unknown
  field is a `TypeError`), `SessionSettings()` when not given; `get_items()` takes its
  `limit`, an explicit `limit` wins, `limit=0` is no item.
* a closed session refuses every call with a `RuntimeError`;
* the SDK's automatic compaction (`OpenAIResponsesCompactionSession` over this session)
  replaces the exchange it compacted by the compaction's output even when the session's
  `limit` hides older history, which stays: the backend hook the SDK's own stores have.

Before this change the first and last failed (no `session_settings` argument; compaction
skipped for a limited session) and a closed session went on serving."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from agents import Agent, Runner
from agents.memory import OpenAIResponsesCompactionSession, SessionSettings
from agents.testing import ScriptedModel as ResponsesModel

from services.integrations.openai_agents import MnemoSession
from services.runtime import Runtime
from services.sdk.client import MemoryClient
from tests.support.agents import no_trace_export, said, texts  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("no_trace_export")]


class Responses:
    """The one call of the OpenAI client that compaction makes, answering `output`."""

    def __init__(self, output: list[Any]) -> None:
        self.output = output
        self.inputs: list[Any] = []

    async def compact(self, **kwargs: Any) -> Any:
        self.inputs.append(kwargs.get("input"))
        return SimpleNamespace(output=self.output)


async def test_session_settings_are_a_constructor_argument(
    rules_pipeline: tuple[Runtime, MemoryClient], unique: Any
) -> None:
    _, client = rules_pipeline
    agent = unique("0xSettings")
    assert MnemoSession(client, "s", agent=agent).session_settings == SessionSettings()
    with pytest.raises(TypeError, match="limitt"):
        MnemoSession(client, "s", agent=agent, session_settings={"limitt": 1})

    typed = MnemoSession(client, "s", agent=agent, session_settings=SessionSettings(limit=3))
    await typed.add_items([{"role": "user", "content": f"message {n}"} for n in range(5)])
    as_dict = MnemoSession(client, "s", agent=agent, session_settings={"limit": 2})

    assert texts(await typed.get_items()) == ["message 2", "message 3", "message 4"]
    assert texts(await as_dict.get_items()) == ["message 3", "message 4"]
    assert texts(await as_dict.get_items(limit=4)) == [f"message {n}" for n in range(1, 5)]
    assert await typed.get_items(limit=0) == []


async def test_a_closed_session_refuses_calls(
    rules_pipeline: tuple[Runtime, MemoryClient], unique: Any
) -> None:
    _, client = rules_pipeline
    session = MnemoSession(client, "closing", agent=unique("0xClosed"))
    await session.add_items([{"role": "user", "content": "before"}])
    session.close()

    for call in (
        session.get_items(),
        session.add_items([]),
        session.pop_item(),
        session.clear_session(),
    ):
        with pytest.raises(RuntimeError, match="closed"):
            await call
    # the shared client stays open: another session of it reads what was written
    assert texts(
        await MnemoSession(client, "closing", agent=session.scope.agent_wallet).get_items()
    ) == ["before"]


async def test_automatic_compaction_replaces_the_exchange_and_keeps_older_history(
    rules_pipeline: tuple[Runtime, MemoryClient], unique: Any
) -> None:
    _, client = rules_pipeline
    backend = MnemoSession(
        client, "compacted", agent=unique("0xCompact"), session_settings={"limit": 1}
    )
    summary = {"type": "compaction", "id": "cmp_1", "encrypted_content": "a summary"}
    responses = Responses([summary])
    session = OpenAIResponsesCompactionSession(
        "compacted",
        backend,
        client=SimpleNamespace(responses=responses),  # type: ignore[arg-type]
        compaction_mode="input",
        should_trigger_compaction=lambda _: True,
    )
    older = {"role": "user", "content": "an older message the limit hides"}
    await session.add_items([older, {"role": "user", "content": "the visible tail"}])
    # the SDK's own scripted model: compaction follows a Responses-style model exchange
    model = ResponsesModel(steps=[[said("ok", "msg_ok")]])

    await Runner.run(Agent(name="compacting", model=model), "a question", session=session)

    assert texts(list(model.calls[0].input)) == ["the visible tail", "a question"]
    assert len(responses.inputs) == 1
    assert "older message" not in str(responses.inputs[0])
    assert "a question" in str(responses.inputs[0])
    assert await backend.get_items(limit=100) == [older, summary]
