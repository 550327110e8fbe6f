"""Who said a message: the speaker's name, from the message or from its text.

A message names its speaker in one of two ways: the `name` field of the message (as in the
chat-completions format), or, in imported transcripts, a leading "Name: " in its text
("Melanie: I went to a pottery workshop yesterday"). Neither present leaves the speaker to
its role ("user" / "assistant").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_PREFIX = re.compile(r"^\s*([A-Z][\w'’.-]*(?: [A-Z][\w'’.-]*){0,2})\s*:\s+(?=\S)")
"""A leading capitalised name of one to three words, then a colon and the message."""

_NOT_NAMES = frozenset(
    {
        "user",
        "assistant",
        "system",
        "tool",
        "note",
        "notes",
        "update",
        "reminder",
        "todo",
        "ps",
        "p.s.",
        "q",
        "a",
        "re",
        "fyi",
        "warning",
        "error",
        "edit",
        "tip",
        "step",
        "answer",
        "question",
        "summary",
    }
)
"""Words a message may start with before a colon that are not a speaker's name."""


@dataclass(frozen=True, slots=True)
class Spoken:
    """A message's words and its speaker. `name` is None when only the role is known;
    `text` is the message without a leading "Name: " that named the speaker."""

    role: str
    text: str
    name: str | None = None

    @property
    def speaker(self) -> str:
        """The name when known, else the role."""
        return self.name or self.role


def spoken(role: str, content: str, name: str | None = None) -> Spoken:
    """The speaker and words of one message. A given `name` wins; a leading "Name: " in
    `content` is then dropped from the text when it repeats that name. Without a name, a
    leading capitalised "Name: " (not a word like "Note:") names the speaker."""
    match = _PREFIX.match(content)
    prefix = match.group(1) if match else None
    if prefix is not None and prefix.lower() in _NOT_NAMES:
        prefix = None
    if name:
        if prefix is not None and prefix.casefold() == name.casefold() and match:
            return Spoken(role, content[match.end() :], name)
        return Spoken(role, content, name)
    if prefix is not None and match:
        return Spoken(role, content[match.end() :], prefix)
    return Spoken(role, content, None)
