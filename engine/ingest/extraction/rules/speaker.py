"""Whose facts a message states: the rules write every fact about "the user"; a message
from a named speaker states facts about that speaker (issue 16: "Melanie read Circe", not
"The user read Circe" for both sides of a two-person conversation).

Which messages are read: the user's, and an assistant's only when it names its speaker (a
named human on the other side of an imported conversation, or a named persona). An unnamed
assistant is the AI itself: it echoes memory recalled before the turn ("since you live in
Madrid…") or guesses, so it is never read.

How a fact is attributed to a named speaker N:

- the text says N where the rules wrote "the user" ("The user's sister is named Ana" →
  "Melanie's sister is named Ana");
- for the user, the graph node stays "user" (the tenant's own node) and the slot is kept,
  so "Caroline lives in Porto" replaces "The user lives in Lisbon";
- for anyone else, N is a person entity that takes the user node's place in the relations,
  and a slot is qualified by N ("residence@melanie"), so one speaker's move never
  supersedes the other's home.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from engine.ingest.extraction.rules.registry import USER, _Candidate
from engine.ingest.extraction.types import ExtractedEntity, ExtractedRelation, TurnText

_THE_USER = re.compile(r"\bthe user\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Speaker:
    """Who a read message is from: `name` when the turn names it; `is_user` for the
    tenant's user (whose node is "user" whatever the name)."""

    name: str | None
    is_user: bool


def speaker_of(message: TurnText) -> Speaker | None:
    """The speaker whose facts `message` states, or None when it is not read (any role but
    user, and an assistant without a name)."""
    role = message.role.strip().lower()
    name = " ".join(message.speaker.split()) if message.speaker else None
    if role == "user":
        return Speaker(name or None, is_user=True)
    if role == "assistant" and name:
        return Speaker(name, is_user=False)
    return None


def words_by_speaker(messages: Sequence[TurnText]) -> dict[str, str]:
    """The words of each read speaker's messages, joined by lines, by graph node: "user"
    for the tenant's user, else the speaker's name case-folded."""
    said: dict[str, str] = {}
    for m in messages:
        who = speaker_of(m)
        if who is not None:
            node = USER if who.is_user else (who.name or USER).casefold()
            said[node] = said.get(node, "") + "\n" + m.content
    return said


def _named(text: str, name: str) -> str:
    return _THE_USER.sub(name, text)


def attributed(candidate: _Candidate, speaker: Speaker) -> _Candidate:
    """`candidate` (written about "the user") as a fact about `speaker`."""
    name = speaker.name
    if name is None:
        return candidate
    entities = tuple(replace(e, summary=_named(e.summary, name)) for e in candidate.entities)
    if speaker.is_user:
        # the user naming themselves ("Ola's mum Jadwiga" said by Ola) is the user node
        own = name.casefold()
        relations = tuple(
            ExtractedRelation(
                USER if r.source.casefold() == own else r.source,
                r.type,
                USER if r.target.casefold() == own else r.target,
            )
            for r in candidate.relations
        )
        entities = tuple(e for e in entities if e.name.casefold() != own)
        return replace(
            candidate, text=_named(candidate.text, name), entities=entities, relations=relations
        )
    relations = tuple(
        ExtractedRelation(
            name if r.source == USER else r.source, r.type, name if r.target == USER else r.target
        )
        for r in candidate.relations
    )
    if relations:
        entities = (ExtractedEntity(name, "person"), *entities)
    slot = candidate.slot
    if slot and "@" not in slot:  # a slot already naming its subject stays
        slot = f"{slot}@{name.casefold()}"
    return replace(
        candidate,
        text=_named(candidate.text, name),
        slot=slot,
        entities=entities,
        relations=relations,
    )
