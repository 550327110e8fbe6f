"""Skill rules: languages spoken (one fact and one language entity per language of the
lexicon), native and fluent languages, learning, "I can…" (skill verbs only), know-how,
experience ("I've been coding for 6 years"), proficiency and instruments or sports played."""

from __future__ import annotations

import re

from engine.ingest.extraction.rules.lexicon import (
    _AM,
    _DONT,
    _EXPERIENCE_VERBS,
    _I,
    _INSTRUMENTS,
    _LANGUAGES,
    _SKILL_VERBS,
    _X,
    _alt,
)
from engine.ingest.extraction.rules.phrasing import _entity, _object, _third_person, _tidy
from engine.ingest.extraction.rules.registry import USER, _Candidate, _Clause, _fact, _linked, _rule

_LANGUAGE_ITEM = re.compile(
    r"^(?P<q>(?:a\s+(?:little\s+)?(?:bit\s+of\s+)?|some\s+|basic\s+|fluent\s+|conversational\s+"
    r"|decent\s+|broken\s+))?(?P<lang>[^\W\d_]+)(?P<tail>\s+(?:fluently|at\s+home|at\s+work))?$",
    _I,
)


def _language(name: str) -> str | None:
    return name.capitalize() if name.lower() in _LANGUAGES else None


def _speaker(text: str, confidence: float, lang: str, *, speaks: bool = True) -> _Candidate:
    target = _entity(lang, "language")
    rels = [(USER, "SPEAKS", lang)] if speaks else []
    return _fact(text, "skill", confidence, None, [target], rels)


@_rule(
    rf"\bI\s+(?:also\s+|only\s+|just\s+|mostly\s+)?(?P<neg>{_DONT}\s+)?speak\s+{_X}",
    rf"\bwe\s+speak\s+{_X}",
)
def _speaks(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    """I speak Portuguese and a bit of Spanish: one fact per language of the lexicon,
    stopping at the first item that is not one; "we speak X" only with "at home"/"at work"."""
    neg = bool(m.groupdict().get("neg"))
    we = m.group(0).lower().startswith("we")
    out: list[_Candidate] = []
    for item in re.split(r",\s*(?:and\s+)?|\s+and\s+|\s+as\s+well\s+as\s+", _tidy(m.group("x"))):
        parsed = _LANGUAGE_ITEM.match(item.strip())
        lang = _language(parsed.group("lang")) if parsed else None
        if parsed is None or lang is None or (we and not parsed.group("tail")):
            break
        qualifier, tail = parsed.group("q") or "", parsed.group("tail") or ""
        text = f"The user {'does not speak' if neg else 'speaks'} {qualifier}{lang}{tail}"
        out.append(_speaker(text, 0.85 if we else 0.9, lang, speaks=not neg))
    return out


@_rule(
    r"\b(?P<lang>[^\W\d_]+)\s+is\s+my\s+(?:native|first|mother)\s+(?:language|tongue)",
    r"\bmy\s+(?:native|first|mother)\s+(?:language|tongue)\s+is\s+(?P<lang>[^\W\d_]+)",
    _AM + r"a\s+native\s+(?P<lang>[^\W\d_]+)\s+speaker",
)
def _native(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    lang = _language(m.group("lang"))
    return [_speaker(f"The user is a native {lang} speaker", 0.9, lang)] if lang else []


@_rule(rf"{_AM}(?P<level>fluent|conversational|proficient)\s+in\s+{_X}")
def _fluent(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    lang = _language(_tidy(m.group("x")))
    level = m.group("level").lower()
    return [_speaker(f"The user is {level} in {lang}", 0.9, lang)] if lang else []


@_rule(
    r"\bI(?P<aux>'m|\s+am|m|'ve\s+been|\s+have\s+been)\s+(?:currently\s+|also\s+|slowly\s+)?"
    rf"(?P<v>learning|studying)\s+{_X}"
)
def _learning(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    subject = _object(m.group("x"))
    if subject is None or re.match(r"(?:for|about|with|hard|a\s+lot)\b", subject, _I):
        return []
    aux = "has been" if "been" in m.group("aux").lower() else "is"
    text = f"The user {aux} {m.group('v').lower()} {_third_person(subject)}"
    lang = _language(subject)
    if lang is None:
        return [_fact(text, "skill", 0.85)]
    return [_linked(text, "skill", 0.85, None, _entity(lang, "language"), "LEARNS")]


@_rule(
    rf"\bI\s+(?P<can>can't|cannot|can\s+not|cant|can)\s+(?P<v>(?:{_alt(_SKILL_VERBS.split())})\b)"
    r"(?P<x>[^,;:()!?.]*)"
)
def _can(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    """I can play the piano / I can't swim: only verbs of the skill lexicon ("I can send it
    tomorrow" is not a skill)."""
    rest = _object(m.group("v") + m.group("x"))
    if rest is None:
        return []
    modal = "can" if m.group("can").lower() == "can" else "cannot"
    return [_fact(f"The user {modal} {rest}", "skill", 0.85)]


@_rule(rf"\bI\s+(?:also\s+)?know\s+how\s+to\s+{_X}")
def _know_how(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    rest = _object(m.group("x"))
    return [_fact(f"The user knows how to {_third_person(rest)}", "skill", 0.8)] if rest else []


@_rule(
    rf"\bI(?:'ve|\s+have)\s+been\s+(?P<v>{_EXPERIENCE_VERBS})\s+(?P<t>[^,;!?]+?)\s+"
    r"(?P<p>for|since)\s+(?P<d>[^,;!?]+)"
)
def _experience(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    """I've been coding in Go for 6 years / playing guitar since I was 12."""
    what, span = _tidy(m.group("t"), now=False), _tidy(m.group("d"), now=False)
    prep = m.group("p").lower()
    if re.match(r"(?:at|for)\b", what, _I):  # "working at Acme for…" is employment
        return []
    if prep == "for" and not re.search(r"\d|year|month", span):
        return []
    verb = m.group("v").lower()
    text = f"The user has been {verb} {_third_person(what)} {prep} {_third_person(span)}"
    return [_fact(text, "skill", 0.85)]


@_rule(
    _AM + r"(?:really\s+|pretty\s+|very\s+)?(?P<level>good|great|decent|bad|terrible"
    rf"|experienced|an\s+expert)\s+(?P<p>at|with|in)\s+{_X}"
)
def _good_at(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    thing = _object(m.group("x"))
    if thing is None:
        return []
    level, prep = m.group("level").lower(), m.group("p").lower()
    return [_fact(f"The user is {level} {prep} {_third_person(thing)}", "skill", 0.8)]


@_rule(rf"\bI\s+(?:also\s+)?play\s+(?P<x>(?:the\s+)?(?:{_alt(_INSTRUMENTS.split())})\b[^,;:!?.]*)")
def _plays(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    rest = _object(m.group("x"), now=False)
    return [_fact(f"The user plays {_third_person(rest)}", "skill", 0.85)] if rest else []
