"""A scripted `Model` for the OpenAI Agents SDK (canned responses, no network) and a fixture
that keeps the SDK from exporting traces: the Agents adapter's tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from agents import ModelResponse, Usage, set_tracing_disabled
from agents.models.interface import Model
from openai.types.responses import ResponseOutputMessage, ResponseOutputText


def said(text: str, item_id: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id=item_id,
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )


class ScriptedModel(Model):
    """The SDK's `Model` interface answering canned outputs, one list per call, and keeping
    what each call was given (its instructions and input)."""

    def __init__(self, script: list[list[Any]]) -> None:
        self.script = list(script)
        self.calls: list[dict[str, Any]] = []

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[Any],
        model_settings: Any,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: Any,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: Any,
    ) -> ModelResponse:
        self.calls.append({"instructions": system_instructions, "input": input})
        return ModelResponse(output=self.script.pop(0), usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the scripted model does not stream")


@pytest.fixture
def no_trace_export() -> Iterator[None]:
    """The SDK exports traces to OpenAI when a key is set: never from a test (no network)."""
    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


def texts(items: list[Any]) -> list[str]:
    """The text of each message item (user strings and assistant output parts)."""
    out = []
    for item in items:
        content = item.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out.append("".join(p.get("text", "") for p in content))
    return out
