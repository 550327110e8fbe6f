"""A turn's text as its messages: the units retrieval ranks and shows (issue 32).

A stored turn's text is one "role: words" line per message (`engine.ingest.turns`: the
turn row's content), a message's words opening with its speaker's name when the runtime
gave one ("user: Caroline: ..."). Ingest embeds what each message says
(`MemoryRow.units`); retrieval splits the same text the same way
(`engine.retrieval.units`), so a unit vector and the message it stands for line up.
"""

from __future__ import annotations

import itertools
import re

_ROLE_LINE = re.compile(r"^(?:user|assistant|tool|system):", re.IGNORECASE | re.MULTILINE)
_ROLE = re.compile(r"^(?:user|assistant|tool|system):\s*", re.IGNORECASE)
_SPEAKER = re.compile(r"^(?i:(?:user|assistant|tool|system):\s*)?(?:[A-Z][\w'.-]*\s?){1,3}:\s")
"""A message's opening "role: Name: " (one to three capitalised words)."""


def messages_of(text: str) -> list[str]:
    """The message lines of a turn's text, in order: a line opening with "user:",
    "assistant:", "tool:" or "system:" starts a message, other lines continue it. A text
    with no such line is one unit. Blank messages are left out."""
    starts = [m.start() for m in _ROLE_LINE.finditer(text)]
    if not starts or starts[0] != 0:
        starts = [0, *starts]
    bounds = [*starts, len(text)]
    units = (text[a:b].strip() for a, b in itertools.pairwise(bounds))
    return [u for u in units if u]


def said(message: str) -> str:
    """A message without its opening "role: Name: " (what it says, not who says it)."""
    return message[m.end() :] if (m := _SPEAKER.match(message)) else message


def spoken(message: str) -> str:
    """A message as its speaker says it: "Caroline: ..." for "user: Caroline: ..." (the
    role adds nothing once the name is known), else the message as it is."""
    if _SPEAKER.match(message) and (role := _ROLE.match(message)) is not None:
        return message[role.end() :]
    return message


def unit_texts(text: str) -> list[str]:
    """What each message of a turn's text says, in order (`messages_of` without the opening
    "role: Name: "): the texts a turn row's unit vectors are embedded from. Without the
    speaker: MiniLM gives a short message's name most of its meaning, so every short line of
    Tomás's ranked first for any question about Tomás (`benchmarks.quality --dataset
    handwritten --split tune`: messages filling 900 characters by the cosine of what they
    say found 0.86 of the evidence, with the speaker's name 0.71, whole turns 0.68). Who
    speaks still counts through the words: a message's terms include its speaker's name
    (`engine.retrieval.units.message_scores`)."""
    return [said(m) or m for m in messages_of(text)]
