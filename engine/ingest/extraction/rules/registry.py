"""The rule registry and the candidate fact: `@_rule` registers a builder for one or more
case-insensitive patterns in `_RULES`, in registration (import) order, which is the order
rules are tried and, for matches at the same position, the order their facts are said;
`_fact` and `_linked` build `_Candidate`s with their entities and relations ("user" is the
user's node and gets no entity)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from engine.ingest.extraction.rules.lexicon import _I
from engine.ingest.extraction.types import ExtractedEntity, ExtractedRelation, FactType

USER = "user"


@dataclass(frozen=True, slots=True)
class _Candidate:
    text: str
    type: FactType
    confidence: float
    slot: str | None = None
    entities: tuple[ExtractedEntity, ...] = ()
    relations: tuple[ExtractedRelation, ...] = ()


@dataclass(frozen=True, slots=True)
class _Clause:
    text: str
    lowercase_writer: bool
    """The author writes "i": capitalisation carries no information about names."""


_Build = Callable[[re.Match[str], _Clause], list[_Candidate]]


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: re.Pattern[str]
    build: _Build
    whole_segment: bool = False


_RULES: list[_Rule] = []


def _rule(*patterns: str, whole_segment: bool = False) -> Callable[[_Build], _Build]:
    """Register `build` for each pattern (compiled case-insensitive). `whole_segment`
    rules read the whole sentence instead of one clause."""

    def register(build: _Build) -> _Build:
        _RULES.extend(_Rule(re.compile(p, _I), build, whole_segment) for p in patterns)
        return build

    return register


def _fact(
    text: str,
    type_: FactType,
    confidence: float,
    slot: str | None = None,
    entities: Sequence[ExtractedEntity] = (),
    relations: Sequence[tuple[str, str, str]] = (),
) -> _Candidate:
    rels = tuple(ExtractedRelation(s, t, o) for s, t, o in relations)
    return _Candidate(text, type_, confidence, slot, tuple(entities), rels)


def _linked(
    text: str,
    type_: FactType,
    confidence: float,
    slot: str | None,
    target: ExtractedEntity,
    rel: str,
) -> _Candidate:
    """A fact with one entity, linked from the user: `user -rel-> target`."""
    return _fact(text, type_, confidence, slot, [target], [(USER, rel, target.name)])
