"""How `MnemoSession` (`services.integrations.openai_agents`) says an Agents SDK item as a
mnemostream message, in plain Python (no SDK import: unit-testable alone).

Every item is one message: a readable `content` (`said`) and the item itself inside this
module's JSON envelope in the message's `raw` (`envelope` reads it back); a function call
answered among the same items is also a tool event (`tool_events`). `chunks` splits a long
list of items into turns a Kafka message can carry.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from schemas.limits import check_json_object

ENVELOPE = "openaiAgents"
"""The key of a message's `raw` JSON that marks it as this session's (its value: 1)."""
ITEMS_PER_TURN = 100
"""Items of one recorded turn at most (a turn holds at most 200 messages)."""
MAX_ITEM_CHARS = 32_000
"""Characters of one item as JSON (the most a message's `raw` holds)."""
TURN_CHARS = 400_000
"""Characters of raw and content text one recorded turn holds at most (a turn must fit in
one Kafka message of 1,000,000 bytes)."""
TOOL_RESULT_CHARS = 2_000


def text_of(content: object) -> str:
    """The text of a message's content: a string, or the text parts of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, Mapping)]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


def said(item: Mapping[str, Any]) -> tuple[str, str]:
    """(role, readable content) of an item as a mnemostream message."""
    kind, role = item.get("type"), item.get("role")
    if kind in (None, "message") and role in ("user", "assistant", "system", "developer"):
        text = text_of(item.get("content")).strip() or "(no text)"
        return ("system" if role == "developer" else str(role)), text
    if kind == "function_call":
        return "assistant", f"[tool call] {item.get('name')}({item.get('arguments') or ''})"
    if kind == "function_call_output":
        output = item.get("output")
        shown = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
        return "tool", f"[tool result] {shown}"
    return "assistant", f"[{kind or 'item'}]"


def arguments(text: object) -> dict[str, Any]:
    """A function call's arguments as a stored object, or {} when they are not one."""
    try:
        parsed = json.loads(text) if isinstance(text, str) else None
        if isinstance(parsed, dict):
            return check_json_object(parsed, "args", document=True)
    except ValueError:  # not JSON, or not storable as a document (json errors are ValueErrors)
        pass
    return {}


def calls_of(items: Sequence[Mapping[str, Any]]) -> dict[Any, Mapping[str, Any]]:
    """The function calls among `items`, by call id."""
    return {
        item.get("call_id"): item
        for item in items
        if item.get("type") == "function_call" and isinstance(item.get("name"), str)
    }


def answered(items: Sequence[Mapping[str, Any]]) -> dict[Any, Mapping[str, Any]]:
    """The function calls answered among `items` (their output is there too), by call id."""
    calls = calls_of(items)
    return {
        item.get("call_id"): calls[item.get("call_id")]
        for item in items
        if item.get("type") == "function_call_output" and item.get("call_id") in calls
    }


def tool_events(items: Sequence[Mapping[str, Any]], stamps: Sequence[int]) -> list[Any]:
    """Tool events of the function calls answered among `items`, at their output's time."""
    calls = answered(items)
    events: list[Any] = []
    for item, stamp in zip(items, stamps, strict=True):
        if item.get("type") != "function_call_output" or item.get("call_id") not in calls:
            continue
        call = calls[item.get("call_id")]
        _, shown = said(item)
        events.append(
            {
                "name": str(call["name"])[:200],
                "args": arguments(call.get("arguments")),
                "status": "completed",
                "result": shown.removeprefix("[tool result] ")[:TOOL_RESULT_CHARS],
                "timestamp": stamp,
            }
        )
    return events


def envelope(raw: object) -> dict[str, Any] | None:
    """A message's raw JSON when it is this session's envelope, else None."""
    if not isinstance(raw, str):
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    return data if isinstance(data, dict) and data.get(ENVELOPE) == 1 else None


def chunks(raws: list[str], contents: list[str]) -> list[range]:
    """Consecutive index ranges, each at most `ITEMS_PER_TURN` items and `TURN_CHARS`
    characters (an item alone may reach it)."""
    out: list[range] = []
    start, chars = 0, 0
    for i, (raw, content) in enumerate(zip(raws, contents, strict=True)):
        size = len(raw) + len(content)
        if i > start and (i - start >= ITEMS_PER_TURN or chars + size > TURN_CHARS):
            out.append(range(start, i))
            start, chars = i, 0
        chars += size
    if start < len(raws):
        out.append(range(start, len(raws)))
    return out
