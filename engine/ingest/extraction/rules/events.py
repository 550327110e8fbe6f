"""Event rules: dated appointments and plans ("I have an interview on Tuesday", "we're
planning a trip in October"), past life events (which need a past-time marker or "just"),
moves, and dated events of someone close ("my sister is visiting next week"). An event
without a date is not stored."""

from __future__ import annotations

import re

from engine.ingest.extraction.rules.lexicon import (
    _CAP,
    _EVENT,
    _I,
    _PAST,
    _PAST_VERBS,
    _REL,
    _WHEN,
    _X,
    _words,
)
from engine.ingest.extraction.rules.phrasing import (
    _article,
    _dated,
    _joined,
    _object,
    _person,
    _proper,
    _third_person,
    _tidy,
)
from engine.ingest.extraction.rules.registry import _Candidate, _Clause, _fact, _rule
from engine.ingest.extraction.rules.relationships import _kin

_LIFE_OBJECTS = re.compile(
    r"\b(?:marathon|race|triathlon|ultra|5k|10k|degree|course|thesis|phd|masters|bootcamp"
    r"|exam|test|house|car|flat|apartment|home|book|paper|company|startup|arm|leg|wrist)\b",
    _I,
)
_NOT_EVENT_VERBS = _words("wants needs asks expects hopes likes loves hates is are was has")


@_rule(
    rf"\bI(?:'ve|\s+have)?\s+(?:got|have)\s+(?P<a>a|an|my)\s+"
    rf"(?P<x>(?:[\w'-]+\s+){{0,3}}?(?:{_EVENT})\b[^,;:!?]*)"
)
def _have_event(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    """I have a dentist appointment on Friday at 3pm (a date or time is required)."""
    what = _object(m.group("x"), now=False)
    if what is None or not _dated(what):
        return []
    return [_fact(f"The user has {m.group('a').lower()} {_third_person(what)}", "event", 0.85)]


@_rule(
    rf"\b(?:my|our)\s+(?P<e>(?:[\w'-]+\s+){{0,2}}?(?:{_EVENT})"
    r"(?:\s+(?:to|with|in|at|for)\s+[^,;!?]+?)?)\s+(?P<v>is|was)\s+(?P<t>[^,;!?]+)"
)
def _my_event(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    """my flight to Tokyo is on 12 May."""
    what, when = _tidy(m.group("e"), now=False), _tidy(m.group("t"), now=False)
    if not _dated(when):
        return []
    return [_fact(f"The user's {_third_person(what)} {m.group('v').lower()} {when}", "event", 0.85)]


@_rule(rf"\b(?:I|we)\s+(?P<just>just\s+|finally\s+)?(?P<v>{_PAST_VERBS})\s+{_X}")
def _past_event(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    """A dated life event: I ran my first marathon last year / we just bought a house ("just"
    dates it to the turn). "got promoted to X" also gives the new job title."""
    verb, what = _joined(m.group("v")), _object(m.group("x"), now=False)
    if what is None or not (_PAST.search(what) or m.group("just")):
        return []
    if verb in ("quit", "stopped") and not re.match(r"(?:\w+ing|my\s+job)\b", what, _I):
        return []
    if verb in ("visited", "travelled to", "traveled to", "climbed"):
        if not re.search(r"\b[A-Z]", what):
            return []
    elif verb in ("ran", "finished", "completed", "bought", "won") and not _LIFE_OBJECTS.search(
        what
    ):
        return []
    out = [_fact(f"The user {verb} {_third_person(what)}", "event", 0.85)]
    promoted = re.match(r"to\s+(?:an?\s+)?(?P<t>.+)$", what, _I) if verb == "got promoted" else None
    if promoted:
        when = _WHEN.search(promoted.group("t"))
        role = _tidy(promoted.group("t")[: when.start()] if when else promoted.group("t"))
        if 0 < len(role.split()) <= 4:
            out.append(_fact(f"The user is {_article(role)} {role}", "identity", 0.8, "job_title"))
    return out


@_rule(
    r"\b(?:I|we)\s*(?:'m|'re|m|am|are)\s+(?P<v>planning|going\s+on|taking|booking|expecting)\s+"
    r"(?P<x>(?:a|an|our|my|the)\s+[^,;:!?]+)"
)
def _plan(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    """We're planning a trip to Japan in October (a date is required)."""
    what = _object(m.group("x"), now=False)
    if what is None or not _dated(what):
        return []
    return [_fact(f"The user is {_joined(m.group('v'))} {_third_person(what)}", "event", 0.85)]


@_rule(
    r"\b(?:I|we)\s*(?:'m|'re|m|am|are)\s+(?P<v>moving|relocating|flying|travell?ing|heading)"
    rf"\s+to\s+{_X}"
)
def _moving(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    """We're moving to Denver in August: a dated plan, not yet the residence."""
    where = _object(m.group("x"), now=False)
    if where is None or not _dated(where) or _proper(where, clause) is None:
        return []
    return [_fact(f"The user is {m.group('v').lower()} to {where}", "event", 0.85)]


@_rule(
    rf"\bmy\s+(?P<rel>{_REL})(?:,?\s+(?P<name>{_CAP}),?)?\s+"
    r"(?P<v>(?:is|are)\s+(?:coming\s+(?:to\s+visit|over)|visiting)"
    r"|(?:is|are|will\s+be)\s+[a-z]+ing|[a-z]+s)\b(?P<t>[^,;!?]*)"
)
def _relative_event(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    """A dated event of someone close: my sister Ana is coming to visit next week."""
    when, verb = _tidy(m.group("t"), now=False), _joined(m.group("v"))
    if not _dated(when) or verb in _NOT_EVENT_VERBS:
        return []
    if re.match(r"(?:is|are)\s+(?:coming|visiting)", verb):
        verb, when = "is visiting", re.sub(r"^(?:me|us)\s+", "", when, flags=_I)
    rel, name = _kin(m.group("rel")), m.group("name")
    who = f"{rel} {name}" if name and _person(name) else rel
    return [_fact(f"The user's {who} {verb} {_third_person(when)}".rstrip(), "event", 0.8)]
