"""The source events of an exported tenant (issue 31's import): what the target's log must
hold so that its groups, and a later `replay` there, rebuild the tenant.

* **Turns.** Each exported transcript turn becomes the `TurnRecorded` that stores it again:
  its scope, session, thread and turn ids, the stored messages (a tool event is stored as a
  `tool` message with its call and is published as one), summary, token count, model and
  context window from the turn, the caller's metadata and context id from the turn's
  `session` row, and `occurred_at` = the turn's time. Its event id is derived from the
  turn's `_id` (`turn_event_id`): the same export publishes the same events.
* **Remembered facts** (rows of `source: "fact"` with `metadata.extractor: "explicit"`)
  become their `MemoryRemembered`, with the event id the row recorded (`metadata.eventId`):
  the original event's. The text is the one first remembered (the item history's
  `created` change), since the row's id is a hash of it; a row later edited by request and
  whose history lost that text (an erasure silenced it) has no such event, and the row is
  restored as it is (`tenant_import`). Nor has a fact deleted by request (`GONE`): remembering
  it again would bring it back.

Tool outcomes (the patterns group's input) are not stored apart from the transcript's
`tool` messages, so a turn published again carries them as messages: the patterns are
restored as rows, not recounted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from engine.ingest.remember import SYSTEM_KEYS, fact_hash
from engine.ingest.turns import SYSTEM_METADATA_KEYS
from engine.records import turn_row_id
from schemas.events import MemoryRemembered, Message, ToolCall, TurnRecorded
from schemas.ids import from_ms, h32
from schemas.scope import Scope

Doc = dict[str, Any]
_SCOPE_KEYS = ("agentWallet", "userAddress", "mode", "haiId")
GONE = frozenset({"deleted", "purged"})
"""Statuses of an item deleted by request: its remember is not published (a remember after
a delete brings the fact back), the row is restored deleted."""


def turn_event_id(turn_key: str) -> str:
    """The stable event id of an imported turn (its document's `_id`)."""
    return "imp_" + h32(f"turn|{turn_key}")


def _scope(doc: Mapping[str, Any], thread: str | None = None) -> Scope:
    fields = {k: doc[k] for k in _SCOPE_KEYS if doc.get(k) is not None}
    if thread is not None:
        fields["threadId"] = thread
    return Scope.model_validate(fields)


def _message(m: Mapping[str, Any]) -> Message:
    calls = m.get("toolCalls")
    return Message(
        role=m["role"],
        content=m["content"],
        timestamp=int(m["timestamp"]),
        name=m.get("name"),
        tool_calls=[ToolCall(name=c["name"], args=dict(c.get("args") or {})) for c in calls]
        if calls
        else None,
        raw=m.get("raw"),
    )


def turn_event(turn: Mapping[str, Any], rows: Mapping[str, Mapping[str, Any]]) -> TurnRecorded:
    """The `TurnRecorded` of an exported turn document; `rows`: the exported memory rows by
    `_id` (the turn's `session` row gives its caller metadata). `ValidationError` for a turn
    that no longer makes a valid event."""
    thread = str(turn.get("threadId") or "main")
    scope = _scope(turn, thread)
    session_id, turn_id = str(turn["sessionId"]), str(turn["turnId"])
    row = rows.get(turn_row_id(scope.agent_wallet, session_id, turn_id)) or {}
    row_meta: Mapping[str, Any] = row.get("metadata") or {}
    meta: Mapping[str, Any] = turn.get("metadata") or {}
    return TurnRecorded(
        event_id=turn_event_id(str(turn["_id"])),
        occurred_at=from_ms(int(turn["at"])),
        scope=scope,
        session_id=session_id,
        thread_id=thread,
        turn_id=turn_id,
        context_id=row_meta.get("contextId"),
        messages=[_message(m) for m in turn.get("messages") or []],
        summary=turn.get("summary"),
        total_tokens=int(turn.get("tokenCount") or 0),
        model_used=str(meta.get("modelUsed") or "external"),
        context_window=int(meta.get("contextWindow") or 0),
        metadata={
            k: v
            for k, v in row_meta.items()
            if k not in SYSTEM_METADATA_KEYS and k not in ("status", "changedAt")
        },
    )


def first_texts(history: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Item id → the text it was created with, from the exported item history (changes
    whose texts an erasure silenced give none)."""
    found: dict[str, str] = {}
    for change in sorted(history, key=lambda c: int(c.get("at") or 0)):
        text = change.get("newContent")
        if change.get("kind") == "created" and isinstance(text, str) and text:
            found.setdefault(str(change.get("itemId")), text)
    return found


def remembered_text(row: Mapping[str, Any], created: Mapping[str, str]) -> str | None:
    """The text a remembered row was remembered with: the history's, else its content when
    that still hashes to the row's `factHash` (never edited); None when neither is known."""
    meta: Mapping[str, Any] = row.get("metadata") or {}
    text = created.get(str(row["_id"]))
    if text is not None:
        return text
    content = row.get("content")
    digest = fact_hash(
        str(row["agentWallet"]),
        row.get("userAddress"),
        str(content or ""),
        row.get("mode"),
        row.get("haiId"),
    )
    return str(content) if content and digest == meta.get("factHash") else None


def remember_event(row: Mapping[str, Any], created: Mapping[str, str]) -> MemoryRemembered | None:
    """The `MemoryRemembered` that stored an exported row, or None: not a remembered fact,
    its first text unknown, or no longer a valid event."""
    meta: Mapping[str, Any] = row.get("metadata") or {}
    if row.get("source") != "fact" or meta.get("extractor") != "explicit":
        return None
    if meta.get("status") in GONE:
        return None
    text = remembered_text(row, created)
    event_id = meta.get("eventId")
    if text is None or not event_id:
        return None
    try:
        return MemoryRemembered(
            event_id=str(event_id),
            occurred_at=from_ms(int(row["createdAt"])),
            scope=_scope(row),
            content=text,
            type=str(meta.get("type") or "explicit_save"),
            retention=meta.get("retention"),
            confidence=float(meta.get("confidence", 1.0)),
            conflict_policy=meta.get("conflictPolicy"),
            memory_scope=meta.get("scope"),
            metadata={k: v for k, v in meta.items() if k not in SYSTEM_KEYS},
        )
    except ValidationError:
        return None
