"""Preference rules: likes and dislikes ("I love…", "I don't eat…", "not a fan of…"), diet,
chronotype, favourites (one slot per kind) and habits ("I usually…")."""

from __future__ import annotations

import re

from engine.ingest.extraction.rules.lexicon import _AM, _DONT, _X
from engine.ingest.extraction.rules.phrasing import _joined, _object, _third_person, _tidy
from engine.ingest.extraction.rules.registry import _Candidate, _Clause, _fact, _rule

_THIRD = {"love": "loves", "like": "likes", "enjoy": "enjoys", "adore": "adores"}
_THIRD |= {"hate": "hates", "dislike": "dislikes", "detest": "detests", "prefer": "prefers"}
_THIRD |= {"loathe": "loathes", "despise": "despises"}


@_rule(
    r"\bI\s+(?:(?:really|absolutely|totally|just|truly|also|genuinely|honestly)\s+)*"
    rf"(?P<neg>{_DONT}\s+(?:really\s+|particularly\s+)?)?"
    rf"(?P<v>love|like|enjoy|adore|hate|dislike|detest|loathe|prefer|despise)\s+{_X}"
)
def _likes(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    thing = _object(m.group("x"))
    if thing is None:
        return []
    verb, thing = m.group("v").lower(), _third_person(thing)
    if m.group("neg"):
        return [_fact(f"The user does not {verb} {thing}", "preference", 0.85)]
    confidence = 0.85 if verb == "prefer" else 0.9
    return [_fact(f"The user {_THIRD[verb]} {thing}", "preference", confidence)]


@_rule(
    rf"{_AM}(?P<neg>not\s+)?(?:(?:really|so|totally|kinda)\s+)?"
    rf"(?P<v>obsessed\s+with|crazy\s+about|into|a\s+(?:big\s+|huge\s+)?fan\s+of)\s+{_X}",
    # subject left out: "Not a fan of horror movies tbh"
    r"^(?:(?P<neg>not)\s+(?:really\s+|an?\s+(?:big\s+|huge\s+)?)?|(?:an?\s+)?(?:big|huge)\s+)"
    rf"(?P<v>fan\s+of|into)\s+{_X}",
)
def _fan(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    thing = _object(m.group("x"))
    if thing is None:
        return []
    kind = _joined(m.group("v"))
    if m.group("neg"):
        phrase = "is not a fan of" if "fan" in kind else "is not into"
    else:
        phrase = "is a fan of" if "fan" in kind else ("is into" if kind == "into" else "loves")
    return [_fact(f"The user {phrase} {_third_person(thing)}", "preference", 0.85)]


@_rule(
    rf"{_AM}(?P<neg>not\s+)?an?\s+(?:big\s+|huge\s+|massive\s+)?"
    r"(?P<x>[^\W\d_][\w'-]*(?:\s+[^\W\d_][\w'-]*){0,2}?)\s+fan\b"
)
def _fan_of(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    """I'm a huge Arsenal fan."""
    thing = _tidy(m.group("x"))
    if not thing or thing.lower() in ("big", "huge", "massive", "great"):
        return []
    neg = "not " if m.group("neg") else ""
    return [_fact(f"The user is {neg}a fan of {thing}", "preference", 0.85)]


@_rule(rf"\bI\s+(?:can't|cannot|can\s+not|cant)\s+stand\s+{_X}")
def _cannot_stand(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    thing = _object(m.group("x"))
    return [_fact(f"The user cannot stand {thing}", "preference", 0.85)] if thing else []


@_rule(rf"\bI\s+(?:{_DONT}|never)\s+(?P<v>eat|drink)\s+{_X}")
def _does_not_eat(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    thing = _object(m.group("x"))
    verb = m.group("v").lower()
    return [_fact(f"The user does not {verb} {thing}", "preference", 0.85)] if thing else []


@_rule(
    rf"(?:{_AM}|\bI(?:'ve|\s+have)\s+been\s+|\bI\s+went\s+)(?P<neg>not\s+)?(?:an?\s+)?"
    r"(?:strict\s+)?(?P<d>vegetarian|vegan|pescatarian|pescetarian)\b"
)
def _diet(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    diet = m.group("d").lower()
    if m.group("neg"):
        return [_fact(f"The user is not {diet}", "preference", 0.85, "diet")]
    return [_fact(f"The user is {diet}", "preference", 0.9, "diet")]


@_rule(
    rf"{_AM}(?P<neg>not\s+)?an?\s+"
    r"(?P<k>morning\s+person|night\s+owl|early\s+bird|cat\s+person|dog\s+person)"
)
def _chronotype(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    kind = _joined(m.group("k"))
    slot = (
        "preference:chronotype" if kind in ("morning person", "night owl", "early bird") else None
    )
    neg = "not " if m.group("neg") else ""
    return [_fact(f"The user is {neg}a {kind}", "preference", 0.85, slot)]


@_rule(
    r"\bmy\s+(?:all[- ]time\s+|absolute\s+)?favou?rite\s+(?P<k>[a-z]+(?:\s+[a-z]+){0,2}?)\s+"
    rf"(?:is|are|has\s+to\s+be)\s+{_X}",
    r"^(?P<x>[^,;:]+?)\s+(?:is|are)\s+my\s+(?:all[- ]time\s+)?favou?rite\s+"
    r"(?P<k>[a-z]+(?:\s+[a-z]+)?)\s*$",
)
def _favourite(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    kind = _joined(m.group("k"))
    value = _object(m.group("x"))
    if value is None or len(kind.split()) > 3:
        return []
    slot = "preference:favourite_" + kind.replace(" ", "_")
    return [_fact(f"The user's favourite {kind} is {value}", "preference", 0.9, slot)]


def _third_singular(verb: str) -> str:
    if verb in ("go", "do"):
        return verb + "es"
    if verb == "have":
        return "has"
    if verb.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if verb.endswith("y") and verb[-2:-1] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


@_rule(r"\bI\s+(?P<adv>usually|always|often|normally|typically|regularly)\s+(?P<v>[a-z]+)\s+" + _X)
def _habit(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    verb, rest = m.group("v").lower(), _object(m.group("x"), now=False)
    if rest is None or verb in ("am", "was", "forget", "get"):
        return []
    text = f"The user {m.group('adv').lower()} {_third_singular(verb)} {_third_person(rest)}"
    return [_fact(text, "preference", 0.75)]
