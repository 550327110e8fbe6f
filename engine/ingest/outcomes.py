"""Tool outcomes: what a tool event's `status` says about the call, and how a tool call is
kept in, and read back from, a stored transcript.

An outcome is `True` (the call succeeded), `False` (it failed) or `None` (unknown: the caller
reported the call without its outcome). Unknown is not success: before issue 17 a tool event
without a status counted as `completed`, so a caller that never reported outcomes made every
pattern look reliable. An unknown outcome counts a run of a pattern but moves no success rate
(`engine.ingest.patterns`).

A stored tool message is `tool:<name> status:<status>` plus ` result:<text>` when the call
returned text (reference §7.1 step 2), with `toolCalls=[{name, args}]`. A tool message stored
without that status (a legacy or imported transcript) reads as unknown, never as success.
"""

from __future__ import annotations

from collections.abc import Iterable

from engine.records import StoredMessage
from schemas.events import UNKNOWN_STATUS

SUCCESS_STATUSES = frozenset(
    {"completed", "complete", "success", "succeeded", "successful", "ok", "done"}
)
"""Tool statuses that count as success (case-insensitive)."""
UNKNOWN_STATUSES = frozenset({UNKNOWN_STATUS, ""})
"""Statuses that say nothing about the outcome (case-insensitive; blank included). Every
other status (failed, error, timeout, cancelled, pending, …) counts as failure: an
unfinished call did not work."""

Outcome = bool | None
"""True: succeeded; False: failed; None: unknown."""


def outcome(status: str) -> Outcome:
    """The outcome a status word reports."""
    word = status.strip().lower()
    if word in UNKNOWN_STATUSES:
        return None
    return word in SUCCESS_STATUSES


def combined_outcome(outcomes: Iterable[Outcome]) -> Outcome:
    """The outcome of a run of calls: failed when any call failed, else unknown when any
    call's outcome is unknown, else succeeded (also for no call at all)."""
    seen = list(outcomes)
    if any(o is False for o in seen):
        return False
    return None if any(o is None for o in seen) else True


def tool_content(name: str, status: str, result: str | None) -> str:
    """The content of a stored tool message (reference §7.1 step 2); `result` is cut to its
    first 2,000 characters."""
    content = f"tool:{name} status:{status}"
    return f"{content} result:{result[:2000]}" if result else content


def recorded_call(message: StoredMessage) -> tuple[str, str] | None:
    """(tool name, status) of a stored tool message: the status is the word after
    `tool:<name> status:`, or `unknown` when the message records none (content in another
    shape, or no status). None for a message that is not a tool call (not the `tool` role,
    or no tool name in its `toolCalls`)."""
    calls = message.tool_calls or []
    name = calls[0].get("name") if message.role == "tool" and calls else None
    if not isinstance(name, str) or not name:
        return None
    prefix = f"tool:{name} status:"
    if not message.content.startswith(prefix):
        return name, UNKNOWN_STATUS
    word = message.content[len(prefix) :].split(" ", 1)[0]
    return name, word or UNKNOWN_STATUS
