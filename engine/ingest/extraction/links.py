"""Untyped, evidence-carrying links: the names a turn mentions (`names`), linked to the
people who said them and to each other, with the sentence that links them.

The typed relations (`WORKS_AT`, `LIVES_IN`, …) come from the rules or the LLM extractor, and
only where a phrasing they know is used. Links fill the rest: "These days I'm employed by
Initech as an analyst." links the user to Initech, and "Initech's head office sits in
Austin, Texas." links Initech to Austin and Texas, each with its sentence, so the graph
layer can walk user → Initech → Austin and show both sentences without a rule for
"employed by" or "head office". What a link means is left to its evidence.

Links come from the sentences of the user and of named speakers (never an unnamed
assistant's, which echoes recalled memory), not from questions (a statement before a
closing ", did you know?" is kept):

* `MENTIONS_TYPE`: the speaker's node ("user" for the user) → each name in a sentence that
  speaks in the first person ("I", "my", "we"…, or a chat sentence with no subject: "been
  at Quillon for a decade");
* `RELATED_TYPE`: each name → the other names of the same sentence (all pairs among the
  first `PAIR_NAMES`); a sentence whose "he" or "she" refers to a person named in an
  earlier sentence (`antecedents`) counts that person among its names.

The user's own name (a user-role speaker's), in the extractor's relations too, is the node
"user" (one node per tenant user). A pair the extractor already joined with a typed
relation gets no untyped link; the typed
relation gets the sentence as its evidence instead. Names the extractor did not give
become entities (their summary: the first sentence that names them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from itertools import combinations

from engine.ingest.extraction.antecedents import antecedents
from engine.ingest.extraction.names import (
    FIRST_PERSON,
    Name,
    bare,
    evidence_of,
    is_capitalised,
    names_in,
    sentences,
    statement,
    subject_dropped,
    tokens_of,
    written_in_lower_case,
)
from engine.ingest.extraction.rules.registry import USER
from engine.ingest.extraction.rules.speaker import speaker_of
from engine.ingest.extraction.types import (
    MENTIONS_TYPE,
    RELATED_TYPE,
    UNTYPED,
    ExtractedEntity,
    ExtractedRelation,
    Extraction,
    TurnText,
)

__all__ = ["MENTIONS_TYPE", "RELATED_TYPE", "UNTYPED", "find_links"]

PAIR_NAMES = 4
"""Names of one sentence linked pairwise; a longer list links its first four."""
MAX_LINKS = 24
MAX_NAMES = 24
"""Links and new names per turn."""
MAX_ITEMS = 50
"""Entities and relations per turn with the extractor's (what a `FactsExtracted` carries)."""


def _pair(a: str, b: str) -> frozenset[str]:
    return frozenset({a.casefold(), b.casefold()})


def find_links(messages: Sequence[TurnText], found: Extraction) -> Extraction:
    """`found` with the turn's links added: its entities plus the names it lacks, its typed
    relations with their evidence, and untyped `MENTIONS`/`RELATED` links with theirs."""
    known = {e.name.casefold() for e in found.entities}
    known |= {m.speaker.casefold() for m in messages if m.speaker}
    for message in messages:  # written capitalised where no sentence opens
        for sentence in sentences(message.content):
            known.update(bare(t).casefold() for t in tokens_of(sentence)[1:] if is_capitalised(t))
    # the user's own name, said by anyone, is the user's node
    users = {m.speaker.casefold() for m in messages if m.speaker and m.role == "user"}
    stated = [_as_user(r, users) for r in found.relations]
    typed = {_pair(r.source, r.target): r for r in stated}
    evidence: dict[frozenset[str], str] = {}
    names: dict[str, ExtractedEntity] = {}
    links: dict[tuple[str, str, str], ExtractedRelation] = {}
    frozen_known = frozenset(known)
    referred = antecedents(messages, frozen_known)
    for message in messages:
        speaker = speaker_of(message)
        if speaker is None:
            continue
        node = USER if speaker.is_user else (speaker.name or USER)
        own = {speaker.name.casefold()} if speaker.name else set()
        lower = written_in_lower_case(message.content)
        for sentence in filter(None, map(statement, sentences(message.content))):
            said = evidence_of(sentence)
            mentioned = [
                Name(USER, "person") if n.name.casefold() in users else n
                for n in names_in(sentence, frozen_known, lower=lower)
                if n.name.casefold() not in own
            ]
            ante = referred.get(said)
            if ante is not None and all(n.name.casefold() != ante.casefold() for n in mentioned):
                mentioned.insert(0, Name(ante, "name"))  # "…/ that's her sister Svanhild"
            if FIRST_PERSON.search(sentence) or subject_dropped(sentence, frozen_known):
                for n in mentioned:
                    _link(links, typed, evidence, node, MENTIONS_TYPE, n.name, said)
            for n in mentioned:
                if n.name == USER:
                    continue
                seen = names.get(n.name.casefold())
                if seen is None:
                    names[n.name.casefold()] = ExtractedEntity(n.name, n.type, said)
                elif seen.type == "name" and n.type != "name":  # a later cue types it
                    names[n.name.casefold()] = replace(seen, type=n.type)
            for a, b in combinations(mentioned[:PAIR_NAMES], 2):
                _link(links, typed, evidence, a.name, RELATED_TYPE, b.name, said)
    given = {e.name.casefold() for e in found.entities}
    entities = list(found.entities) + [e for k, e in names.items() if k not in given][:MAX_NAMES]
    relations = [
        replace(r, evidence=r.evidence or evidence.get(_pair(r.source, r.target), ""))
        for r in stated
    ] + list(links.values())[:MAX_LINKS]
    return Extraction(list(found.facts), entities[:MAX_ITEMS], relations[:MAX_ITEMS])


def _as_user(relation: ExtractedRelation, users: set[str]) -> ExtractedRelation:
    """`relation` with the user's own name (a user-role speaker's) as the node "user"."""
    source = USER if relation.source.casefold() in users else relation.source
    target = USER if relation.target.casefold() in users else relation.target
    return replace(relation, source=source, target=target)


def _link(
    links: dict[tuple[str, str, str], ExtractedRelation],
    typed: dict[frozenset[str], ExtractedRelation],
    evidence: dict[frozenset[str], str],
    source: str,
    kind: str,
    target: str,
    said: str,
) -> None:
    pair = _pair(source, target)
    if len(pair) < 2:
        return
    evidence.setdefault(pair, said)
    if pair in typed:
        return
    key = (source.casefold(), kind, target.casefold())
    if key not in links and (target.casefold(), kind, source.casefold()) not in links:
        links[key] = ExtractedRelation(source, kind, target, said)
