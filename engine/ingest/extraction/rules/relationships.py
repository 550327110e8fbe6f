"""Relationship and pet rules: named relatives and pets ("my sister Ana", "Juniper (my
dog)"), what a relative does or is, their age, and the household ("I have two kids, Leo and
Maya", read over the whole sentence because names may follow in a later clause). Partners
fill the "partner" slot; each named person or pet gets an entity and a `…_OF user`
relation."""

from __future__ import annotations

import re

from engine.ingest.extraction.rules.identity import _job_head
from engine.ingest.extraction.rules.lexicon import (
    _CAP,
    _I,
    _KIN,
    _OCCUPATIONS,
    _PARTNERS,
    _PET,
    _REL,
    _X,
    relation_stem,
)
from engine.ingest.extraction.rules.phrasing import (
    _article,
    _joined,
    _object,
    _person,
    _proper,
    _third_person,
    _tidy,
)
from engine.ingest.extraction.rules.registry import USER, _Candidate, _Clause, _fact, _rule
from engine.ingest.extraction.types import ExtractedEntity


def _kin(word: str) -> str:
    word = _joined(word)
    return _KIN.get(word, word)


def _is_pet(word: str) -> bool:
    return re.fullmatch(_PET, word.split()[-1], _I) is not None


def _relative(rel: str, name: str, *, pet: bool) -> _Candidate:
    """The user has a sister named Ana / The user's wife is named Priya (slot "partner") /
    The user has a dog named Juniper, with the entity and its `…_OF user` relation."""
    if pet:
        pet_entity = ExtractedEntity(name, "pet", f"The user's {rel}")
        text = f"The user has a {rel} named {name}"
        return _fact(text, "relationship", 0.9, None, [pet_entity], [(name, "PET_OF", USER)])
    kind = relation_stem(rel)
    if rel in _PARTNERS:
        text, slot = f"The user's {rel} is named {name}", "partner"
    elif rel == "best friend":
        text, slot = f"The user's best friend is {name}", None
    elif rel in ("mother", "father", "manager"):
        text, slot = f"The user's {rel} is named {name}", None
    else:
        text, slot = f"The user has {_article(rel)} {rel} named {name}", None
    person = ExtractedEntity(name, "person", f"The user's {rel}")
    return _fact(text, "relationship", 0.9, slot, [person], [(name, f"{kind}_OF", USER)])


@_rule(
    rf"\b(?:my|our)\s+(?P<rel>{_REL}|{_PET})\s*,?\s+(?P<name>[^\W\d_][\w'-]*)",
    rf"\b(?P<name>[^\W\d_][\w'-]*)\s*\(\s*(?:my|our)\s+(?P<rel>{_REL}|{_PET})\s*\)",
    rf"\b(?:my|our)\s+(?P<rel>{_REL}|{_PET})(?:'s\s+name\s+is|\s+is\s+(?:named|called))\s+"
    r"(?P<name>[^\W\d_][\w'-]*)",
)
def _named_relative(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    """my sister Ana / Juniper (my dog) / our daughter Ivy / my cat is called Miso / my
    boss Krisztina Szabados (a capitalised name goes on through its capitalised words)."""
    name = _person(m.group("name"))
    if name is None:
        return []
    rel = _kin(m.group("rel"))
    return [_relative(rel, _full_name(name, m.string, m.end("name")), pet=_is_pet(rel))]


_SURNAMES = re.compile(r"(?:\s+(?-i:[A-Z][a-z][\w'-]*)){1,2}(?!\w)")
"""The capitalised words that carry a name on ("Oyelaran", "Lucia Pereira"): at most two."""


def _full_name(name: str, text: str, end: int) -> str:
    """`name` with the capitalised words that follow it at `end` in `text`, each a name
    (`_person`), when `name` itself was written capitalised: the whole name, as said."""
    if not name[:1].isupper() or text[end - 2 : end] == "'s":
        return name
    found = _SURNAMES.match(text, end)
    if found is None:
        return name
    more = found.group().split()
    if any(_person(w) != w for w in more):
        return name
    return " ".join([name, *more])


@_rule(
    rf"\bmy\s+(?P<rel>{_REL})\s+(?P<v>works\s+(?:at|for|as)|lives\s+(?:in|with)"
    rf"|is\s+(?:an?|from|allergic\s+to))\s+{_X}"
)
def _relative_does(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    """my brother works at Google / my mum is from Munich / my partner is allergic to…"""
    rel, verb = _kin(m.group("rel")), _joined(m.group("v"))
    if verb in ("works at", "works for", "lives in", "is from"):
        target = _proper(m.group("x"), clause)
    elif verb == "lives with" and re.fullmatch(r"(?:us|me)", _tidy(m.group("x")), _I):
        target = "the user"
    else:
        target = _object(m.group("x"))
    if target is None or (verb in ("is a", "is an") and _job_head(target) not in _OCCUPATIONS):
        return []
    return [_fact(f"The user's {rel} {verb} {_third_person(target)}", "relationship", 0.75)]


@_rule(
    rf"\bmy\s+(?P<rel>{_REL})(?:,?\s+(?P<name>{_CAP}),?)?\s+is\s+(?P<n>\d{{1,3}})"
    r"(?:\s+years?\s+old)?\b"
)
def _relative_age(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    rel, name, age = _kin(m.group("rel")), m.group("name"), int(m.group("n"))
    who = f"{rel} {name}" if name and _person(name) else rel
    return [_fact(f"The user's {who} is {age} years old", "relationship", 0.8)] if age < 110 else []


_SINGULAR = {"kids": "child", "children": "child", "kid": "child", "sons": "son"}
_SINGULAR |= {"daughters": "daughter", "puppies": "puppy"}


@_rule(
    r"\b(?:I|we)(?:'ve|\s+have)?\s+(?:just\s+)?(?:have|got|adopted|rescued)\s+"
    r"(?P<n>a|an|one|two|three|four|\d)\s+(?P<mod>(?:[a-z]+\s+){0,2}?)"
    rf"(?P<rel>kids|children|sons|daughters|kid|child|son|daughter|puppies|{_PET})s?\b"
    r"(?P<rest>[^.!?;]*)",
    whole_segment=True,
)
def _household(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    """I have two kids, Leo and Maya / we adopted a cat last week, we named her Miso (the
    name may come in a later clause, so this rule reads the whole sentence)."""
    word = m.group("rel").lower()
    rel = _SINGULAR.get(word, word)
    pet = _is_pet(rel)
    kind = f"{m.group('mod') or ''}{rel}" if pet else rel
    rest = m.group("rest")
    listed = re.match(r"^\s*[,:]?\s*(?:named\s+|called\s+)?([A-Z][^,.;!?]*(?:,\s*[A-Z]\w*)*)", rest)
    named = re.search(r"\b(?:named|called)\s+(?:her|him|it|them)?\s*([^\W\d_][\w'-]*)", rest)
    raw = listed.group(1) if listed else (named.group(1) if named else "")
    if named and not listed and clause.lowercase_writer:
        raw = raw.title()
    names = [_person(n) for n in re.split(r",\s*|\s+and\s+", raw) if n.strip()]
    if names and all(names):
        return [_relative(kind, n, pet=pet) for n in names if n]
    count = m.group("n").lower()
    if count in ("a", "an", "one", "1"):
        return [_fact(f"The user has {_article(kind)} {kind}", "relationship", 0.85)]
    return [_fact(f"The user has {count} {word}", "relationship", 0.85)]
