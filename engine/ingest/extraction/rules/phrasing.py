"""Phrase helpers shared by the rules: tidying a captured phrase (fillers, punctuation,
present-time adverbs), accepting an object phrase, third-person rewriting ("my" ->
"their"), and recognising proper names of places, organisations and people (capitalised,
or title-cased for an author who writes "i" in lower case)."""

from __future__ import annotations

import re

from engine.ingest.extraction.rules.lexicon import (
    _BAD_OBJECT,
    _CALLED,
    _DETERMINER,
    _FILLER,
    _I,
    _NOT_NAMES,
    _NOT_PLACES,
    _NOW,
    _PLACE_END,
    _PRONOUN,
    _PRONOUNS,
    _WHEN,
    _words,
)
from engine.ingest.extraction.rules.registry import _Clause
from engine.ingest.extraction.types import ExtractedEntity

MAX_OBJECT_WORDS = 12
"""A captured phrase longer than this is a run-on sentence, not an attribute: dropped."""


def _tidy(phrase: str, *, now: bool = True) -> str:
    """`phrase` without trailing fillers ("lol", "at all"), punctuation and emoji; with
    `now`, also without present-time adverbs ("at the moment", "every day")."""
    text = " ".join(phrase.split())
    while text and not (text[-1].isalnum() or text[-1] in "+#'/"):
        text = text[:-1].rstrip()
    for _ in range(3):
        text = _FILLER.sub("", text)
        if now:
            text = _NOW.sub("", text)
    return text.strip()


def _object(phrase: str, *, now: bool = True) -> str | None:
    """A usable object phrase: tidied, not a pronoun or wh-word, at most
    `MAX_OBJECT_WORDS` words."""
    text = _tidy(phrase, now=now)
    if not text or _BAD_OBJECT.match(text) or len(text.split()) > MAX_OBJECT_WORDS:
        return None
    return text


def _third_person(phrase: str) -> str:
    swapped = _PRONOUN.sub(lambda m: _PRONOUNS[m.group(0)], phrase)
    return re.sub(r"\bthey\s+was\b", "they were", re.sub(r"\bthey\s+am\b", "they are", swapped))


def _capitalised(word: str) -> bool:
    return word[:1].isupper()


def _proper(phrase: str, clause: _Clause, *, max_words: int = 5) -> str | None:
    """A place or organisation name at the start of `phrase`, or None. Needs a capital (or
    "the" + capital) unless the author writes in lower case, then it is title-cased."""
    text = _tidy(_PLACE_END.sub("", phrase))
    called = _CALLED.search(text)
    if called:
        text = _tidy(called.group(1))
    if not text or len(text.split()) > max_words or not any(c.isalpha() for c in text):
        return None
    first = text.split()[0]
    head = text.split()[1] if first.lower() == "the" and len(text.split()) > 1 else first
    if head.lower() in _NOT_PLACES or _DETERMINER.match(text):
        return None
    if _capitalised(head):
        return _capitalised_run(text)
    if clause.lowercase_writer and len(text.split()) <= 3:
        return text.title()
    return None


_CONNECTORS = _words("of de da del la le upon on am an der the y and &")


def _capitalised_run(text: str) -> str:
    """The name at the start of `text`: its capitalised words and the connectors between
    them ("Back when I lived in Osaka I ate…" → "Osaka", "Isle of Skye" stays whole)."""
    words = text.split()
    end = 1
    for i, word in enumerate(words[1:], start=1):
        if _capitalised(word) and word not in ("I", "I'm", "I've", "I'd", "I'll"):
            end = i + 1
        elif word.lower() not in _CONNECTORS:
            break
    return " ".join(words[:end])


def _person(word: str) -> str | None:
    """A capitalised given name ("Ana", "Tomás"), possessive "'s" removed."""
    name = re.sub(r"'s$", "", word.strip())
    if not name or not _capitalised(name) or name.lower() in _NOT_NAMES:
        return None
    if name.lower() in ("mr", "mrs", "ms", "dr", "prof", "sir", "miss"):
        return None  # "my neighbour Mr. Okafor": a title is not a name
    return name if all(c.isalpha() or c in "-'" for c in name) else None


def _entity(name: str, type_: str, summary: str = "") -> ExtractedEntity:
    return ExtractedEntity(re.sub(r"^the\s+", "", name, flags=_I), type_, summary)


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def _dated(text: str) -> bool:
    return _WHEN.search(text) is not None


def _joined(words: str) -> str:
    return " ".join(words.lower().split())
