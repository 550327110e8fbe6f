"""Third parties: facts and relations about people, organisations and books other than the
speaker (issue 17 §1, a graph of everyone). Where an organisation is based ("Acme Corp is
based in Berlin"), who the speaker's manager or relative is in any word order ("My manager
is Dana", "Dana is my manager", "I report to Dana"), what a named relative or another named
person does ("My sister Maria lives in Madrid", "Dana works at Globex"), and the books the
speaker read ("I just finished Circe").

Every name must be capitalised (title-cased for an author who writes "i"): a missed
relation is preferred to an invented one."""

from __future__ import annotations

import re

from engine.ingest.extraction.rules.lexicon import (
    _LANGUAGES,
    _NATIONALITIES,
    _NOT_NAMES,
    _PET,
    _REL,
    _X,
    _words,
    relation_stem,
)
from engine.ingest.extraction.rules.phrasing import _entity, _person, _proper, _tidy
from engine.ingest.extraction.rules.registry import USER, _Candidate, _Clause, _fact, _rule
from engine.ingest.extraction.rules.relationships import _is_pet, _kin, _relative
from engine.ingest.extraction.types import ExtractedEntity

_NAME = r"(?-i:[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*){0,2})"
"""One to three capitalised words: "Dana", "Dana Smith", "Acme Corp"."""
_ORG = r"(?-i:(?:The\s+)?[A-Z][\w&'.-]*(?:\s+(?:&\s+)?[A-Z][\w&'.-]*){0,3})"
_NOT_SUBJECTS = _NOT_NAMES | _words(
    "he she they we you it this that these those there here everyone everybody someone "
    "somebody nobody people mine his hers theirs who which my our your mum mom dad"
)
_VERBS = {
    "lives in": "LIVES_IN",
    "moved to": "LIVES_IN",
    "used to live in": "LIVED_IN",
    "works at": "WORKS_AT",
    "works for": "WORKS_AT",
    "is from": "FROM",
    "is originally from": "FROM",
    "grew up in": "FROM",
    "was born in": "FROM",
    "studies at": "STUDIES_AT",
    "uses": "USES",
}
_VERB = (
    r"(?P<v>lives\s+in|moved\s+to|used\s+to\s+live\s+in|works\s+(?:at|for)"
    r"|is\s+(?:originally\s+)?from|grew\s+up\s+in|was\s+born\s+in|studies\s+at|uses)"
)
_KINDS = {"WORKS_AT": "organisation", "STUDIES_AT": "organisation", "USES": "tool"}


def _names(phrase: str) -> str | None:
    """A person's name of one to three capitalised words, or None."""
    words = phrase.split()
    if not words or words[0].lower() in _NOT_SUBJECTS:
        return None
    if not all(_person(w) for w in words):
        return None
    if any(w.lower() in _NATIONALITIES or w.lower() in _LANGUAGES for w in words):
        return None
    return " ".join(words)


def _organisation(phrase: str) -> str | None:
    text = _tidy(phrase)
    words = text.split()
    if not words or words[0].lower() in _NOT_SUBJECTS or len(words) > 4:
        return None
    return text


def _does(person: str, verb: str, phrase: str, clause: _Clause) -> list[_Candidate]:
    """`person` lives in / works at / is from / studies at the place or organisation."""
    verb = " ".join(verb.lower().split())
    target = _proper(phrase, clause)
    if target is None:
        return []
    kind = _KINDS.get(_VERBS[verb], "place")
    said = {"moved to": "lives in", "is originally from": "is from"}.get(verb, verb)
    text = f"{person} {said} {target}"
    slot = {"LIVES_IN": "residence", "WORKS_AT": "employer"}.get(_VERBS[verb])
    entities = [ExtractedEntity(person, "person"), _entity(target, kind)]
    relation = (person, _VERBS[verb], entities[1].name)
    return [
        _fact(
            text,
            "relationship",
            0.8,
            f"{slot}@{person.casefold()}" if slot else None,
            entities,
            [relation],
        )
    ]


@_rule(
    rf"(?:^|\band\s+)(?P<o>{_ORG})\s*,?\s+(?:which\s+is\s+|is\s+|are\s+)?"
    rf"(?:based|headquartered|located)\s+in\s+{_X}"
)
def _based_in(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    """Acme Corp is based in Berlin / Globex, headquartered in Munich, …"""
    org, place = _organisation(m.group("o")), _proper(m.group("x"), clause)
    if org is None or place is None:
        return []
    entities = [_entity(org, "organisation"), _entity(place, "place")]
    relation = (entities[0].name, "BASED_IN", entities[1].name)
    return [_fact(f"{org} is based in {place}", "context", 0.8, None, entities, [relation])]


@_rule(
    rf"\b(?P<o>{_ORG})\s*,\s*(?:which|that|who)\s+(?:is|are)\s+"
    rf"(?:based|headquartered|located)\s+in\s+{_X}"
)
def _which_is_based(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    """Marcus works at Tidewater Labs, which is based in Boston."""
    return _based_in(m, clause)


@_rule(
    rf"\bmy\s+(?P<rel>{_REL}|{_PET})\s+is\s+(?P<name>{_NAME})\s*$",
    rf"^(?P<name>{_NAME})\s+is\s+my\s+(?P<rel>{_REL}|{_PET})\s*$",
    rf"\b(?:I'm|I\s+am|I've\s+been|I\s+have\s+been|we're|we've\s+been)\s+(?P<rel>friends)\s+"
    rf"with\s+(?P<name>{_NAME})",
)
def _is_my(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    """My manager is Dana / My boss is Dana Smith / Dana is my manager (a whole clause) /
    Pancake, my corgi / Hyun-woo, a colleague of mine / I've been friends with Leah."""
    name = _names(m.group("name"))
    if name is None:
        return []
    rel = _kin(m.group("rel"))
    rel = "friend" if rel == "friends" else rel
    return [_relative(rel, name, pet=_is_pet(rel))]


_NOT_A_PLACE = r"(?<!\bin\s)(?<!\bat\s)(?<!\bto\s)(?<!\bfrom\s)(?<!\bnear\s)"
"""Not right after a preposition of place."""


@_rule(
    rf"{_NOT_A_PLACE}\b(?P<name>{_NAME})\s*,\s*(?:my|our)\s+(?P<rel>{_REL}|{_PET})\b",
    rf"\b(?P<name>{_NAME})\s*,\s*(?:a|an|one)\s+(?:old\s+)?(?P<rel>{_REL})\s+of\s+(?:mine|ours)\b",
    whole_segment=True,
)
def _name_then_my(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    """Pancake, my corgi, … / Hyun-woo, a colleague of mine, … (the comma would cut the
    clause, so the whole sentence is read). A name after "in", "at", "from"… is a place, not
    the relative: "based in Sacramento, my aunt runs the place"."""
    return _is_my(m, clause)


@_rule(rf"(?:^|\band\s+)(?P<a>{_NAME})\s+(?:now\s+|still\s+)?manages\s+(?P<b>{_NAME}|me|us)\b")
def _manages(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    """Fatima manages Jonah / Dana manages me."""
    boss = _names(m.group("a"))
    under = m.group("b")
    who = USER if under.lower() in ("me", "us") else _names(under)
    if boss is None or who is None:
        return []
    entities = [ExtractedEntity(boss, "person")]
    if who != USER:
        entities.append(ExtractedEntity(who, "person"))
    text = f"{boss} manages {'the user' if who == USER else who}"
    return [_fact(text, "relationship", 0.8, None, entities, [(boss, "MANAGER_OF", who)])]


@_rule(rf"\b(?P<owner>{_NAME})'s\s+(?P<rel>{_REL})\s*,?\s+(?P<name>{_NAME})\b")
def _their_relative(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    """Sunita's husband Raj / Ola's mum, Jadwiga: a relative of someone else."""
    owner, name = _names(m.group("owner")), _names(m.group("name"))
    if owner is None or name is None:
        return []
    rel = _kin(m.group("rel"))
    kind = relation_stem(rel)
    people = [ExtractedEntity(owner, "person"), ExtractedEntity(name, "person", f"{owner}'s {rel}")]
    text = f"{owner}'s {rel} is named {name}"
    return [_fact(text, "relationship", 0.8, None, people, [(name, f"{kind}_OF", owner)])]


@_rule(rf"\bI\s+(?:directly\s+)?report\s+(?:directly\s+)?to\s+(?P<name>{_NAME})")
def _reports_to(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    name = _names(m.group("name"))
    return [_relative("manager", name, pet=False)] if name else []


@_rule(rf"\bmy\s+(?P<rel>{_REL})\s*,?\s+(?P<name>{_NAME})\s*,?\s+{_VERB}\s+{_X}")
def _named_relative_does(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    """My sister Maria lives in Madrid: Maria's home (the relation to the user comes from
    `relationships._named_relative`)."""
    name = _names(m.group("name"))
    return _does(name, m.group("v"), m.group("x"), clause) if name else []


@_rule(rf"^(?P<name>{_NAME})\s+(?:now\s+|still\s+|currently\s+)?{_VERB}\s+{_X}")
def _person_does(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    """Dana works at Globex / Lena moved to Vienna (a clause opening with the name)."""
    name = _names(m.group("name"))
    return _does(name, m.group("v"), m.group("x"), clause) if name else []


@_rule(
    r"\bI(?:'ve|\s+have)?\s+(?:just\s+|finally\s+)?(?:finished\s+(?:reading\s+)?|read\s+)"
    rf"(?P<b>{_NAME}(?:\s+(?:of|the|in|and|a|for|on)\s+{_NAME})*)",
    r"\bI(?:'m|\s+am)\s+(?:currently\s+|still\s+)?reading\s+"
    rf"(?P<b>{_NAME}(?:\s+(?:of|the|in|and|a|for|on)\s+{_NAME})*)",
)
def _read_book(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    """I just finished Circe / I read The Overstory / I'm reading Project Hail Mary (a
    capitalised title; "by <author>" is not part of it)."""
    title = _tidy(re.split(r"\s+by\s+", m.group("b"), maxsplit=1)[0])
    head = re.sub(r"^The\s+", "", title).split()
    if not head or head[0].lower() in _NOT_SUBJECTS:
        return []
    reading = "reading" in m.group(0).lower() and "finished" not in m.group(0).lower()
    text = f"The user is reading {title}" if reading else f"The user read {title}"
    book = ExtractedEntity(title, "book")
    return [_fact(text, "event", 0.8, None, [book], [(USER, "READ", title)])]
