"""Context rules: what the user is currently doing or has: projects being worked on or
written, training, tools used (capitalised names only), vehicles, allergies and recently
started activities."""

from __future__ import annotations

import re

from engine.ingest.extraction.rules.lexicon import _AM, _CALLED, _FIRST_PERSON, _I, _NOT_NAMES, _X
from engine.ingest.extraction.rules.phrasing import (
    _capitalised,
    _object,
    _person,
    _third_person,
    _tidy,
)
from engine.ingest.extraction.rules.registry import _Candidate, _Clause, _fact, _linked, _rule
from engine.ingest.extraction.types import ExtractedEntity


@_rule(rf"{_AM}(?:currently\s+|now\s+)?(?P<v>working\s+on|building|developing)\s+{_X}")
def _working_on(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    """I'm working on a project called Atlas, it's a search engine for recipes."""
    what = _object(m.group("x"))
    if what is None or re.match(r"(?:on|up|through|for|with|in|out|towards?)\b", what, _I):
        return []
    text = f"The user is {m.group('v').lower()} {_third_person(what)}"
    gloss = re.match(
        r"\s*,\s*(?:it's|it\s+is|which\s+is)\s+(an?\s+[^,;!?]{3,80})", clause.text[m.end() :], _I
    )
    if gloss:
        text += ", " + _tidy(gloss.group(1))
    called = _CALLED.search(what)
    project = _person(called.group(1).split()[0]) if called else None
    if project is None:
        return [_fact(text, "context", 0.8)]
    return [_linked(text, "context", 0.8, None, ExtractedEntity(project, "project"), "WORKS_ON")]


@_rule(
    rf"{_AM}(?:currently\s+)?writing\s+(?P<x>(?:my|a|an)\s+(?:[\w-]+\s+){{0,2}}?"
    r"(?:thesis|dissertation|book|novel|paper|memoir|cookbook)\b[^,;:!?.]*)"
)
def _writing(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    what = _object(m.group("x"))
    return [_fact(f"The user is writing {_third_person(what)}", "context", 0.8)] if what else []


@_rule(rf"{_AM}(?:currently\s+)?training\s+for\s+{_X}")
def _training(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    what = _object(m.group("x"), now=False)
    return [_fact(f"The user is training for {what}", "context", 0.85)] if what else []


@_rule(rf"(?:\b(?P<w1>at\s+work),?\s+)?\bI\s+(?:mostly\s+|mainly\s+|also\s+)?use\s+{_X}")
def _uses(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    """(At work) I use Postgres and Kafka: one fact per capitalised tool, or none."""
    at_work = bool(m.group("w1") or re.search(r"\s+(?:at|for)\s+work\b", m.group("x"), _I))
    where = " at work" if at_work else ""
    items = re.sub(r"\s+(?:at|for)\s+work\b.*$", "", _tidy(m.group("x")), flags=_I)
    out = []
    for item in re.split(r",\s*(?:and\s+)?|\s+and\s+", items):
        # "Obsidian for my notes": the tool is named before what it is used for
        tool = _tidy(re.split(r"\s+(?:for|to|on|at|with)\s+", item, maxsplit=1)[0])
        if not _capitalised(tool) or tool.lower() in _NOT_NAMES or len(tool.split()) > 3:
            return []
        text = f"The user uses {tool}{where}"
        out.append(_linked(text, "context", 0.8, None, ExtractedEntity(tool, "tool"), "USES"))
    return out


@_rule(r"\bI\s+(?P<v>drive|own|ride)\s+(?P<x>an?\s+[^,;:!?.]+)")
def _drives(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    """I drive a Tesla Model 3 (a capitalised make or model)."""
    thing = _tidy(m.group("x"))
    words = thing.split()
    if not (1 < len(words) <= 5 and _capitalised(words[1])):
        return []
    return [_fact(f"The user {m.group('v').lower()}s {thing}", "context", 0.8)]


@_rule(rf"{_AM}(?:very\s+|severely\s+|mildly\s+)?allergic\s+to\s+{_X}")
def _allergy(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    what = _object(m.group("x"))
    return [_fact(f"The user is allergic to {what}", "context", 0.9)] if what else []


@_rule(
    r"\b(?:I(?:'ve|\s+have)?|and)\s+(?P<r>just\s+|recently\s+)?"
    rf"(?:started|began|took\s+up|picked\s+up)\s+{_X}"
)
def _took_up(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    """I just started running / I started eating fish again recently (recency required:
    "I started the server" is not a durable fact)."""
    raw = m.group("x")
    if not m.group("r") and not re.search(r"\brecently\s*$", raw, _I):
        return []
    what = _object(re.sub(r"\s+recently\s*$", "", raw, flags=_I))
    if what is None or re.match(r"(?:a\s+new\s+job|working|at|my\s+new\s+job|the|to\s+)", what, _I):
        return []
    if m.group(0).lower().startswith("and") and not re.match(_FIRST_PERSON, clause.text, _I):
        return []
    return [_fact(f"The user recently started {_third_person(what)}", "context", 0.75)]
