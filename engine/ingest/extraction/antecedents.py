"""Who "he" or "she" is when the sentence names no one before it (issue 32): the last
person named earlier in the turn, in this message or an earlier one, questions included
("who was the woman with Ilka at the party?" / "that's her sister Svanhild": her is
Ilka's; "Ludovica says hi" / "tell her hi back, she's been my best friend").

A sentence opening its own reference this way gets an *antecedent*: `links` joins it to
the sentence's names (with that sentence as evidence), and `pairs.mentions` reads the
pronoun as it. A person here is a name the name finder did not type a place or an
organisation, not a speaker (one does not say "she" of whom one talks to or of oneself),
and not a relative's possessor ("Dana's kid": "she" after it is the kid). Plural "they"
is not resolved.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from engine.ingest.extraction.names import evidence_of, names_in, sentences, statement
from engine.ingest.extraction.pairs import possessed_kin
from engine.ingest.extraction.types import TurnText

_THIRD_PERSON = re.compile(r"\b(?:he|she|his|her|him)\b", re.IGNORECASE)
_NOT_PEOPLE = frozenset({"place", "organisation", "school", "tool", "book"})


def antecedents(
    messages: Sequence[TurnText], known: frozenset[str] = frozenset()
) -> dict[str, str]:
    """For each sentence (by its evidence, `names.evidence_of`) whose first third-person
    pronoun comes before any person it names, the last person named before it in the
    turn (see the module doc)."""
    speakers = {m.speaker.casefold() for m in messages if m.speaker}
    last: str | None = None
    out: dict[str, str] = {}
    for message in messages:
        for sentence in sentences(message.content):
            text = " ".join(sentence.split())
            people = [
                (text.casefold().find(n.name.casefold()), n.name)
                for n in names_in(text, known)
                if n.type not in _NOT_PEOPLE and n.name.casefold() not in speakers
            ]
            pronoun = _THIRD_PERSON.search(text)
            first = min((at for at, _ in people if at >= 0), default=len(text))
            opens = pronoun is not None and pronoun.start() < first
            if last is not None and opens and statement(text):
                out[evidence_of(statement(text))] = last
            named = [
                name
                for at, name in people
                if not possessed_kin(text[at : at + len(name) + 2], text[at + len(name) + 2 :])
            ]
            if named:
                last = named[-1]
    return out
