"""Identity, residence and work rules: name, age, birthday, pronouns, nationality,
conditions, hometown and residence ("I live in…", "we moved to…"), then occupation,
employer, school and work mode. Occupations are checked against the lexicon unless
phrased "I work as…"."""

from __future__ import annotations

import re

from engine.ingest.extraction.rules.lexicon import (
    _AM,
    _BAD_OBJECT,
    _CAP,
    _DAY_OF_MONTH,
    _DETERMINER,
    _DONT,
    _I,
    _LANGUAGES,
    _NATIONALITIES,
    _NOT_NAMES,
    _OCCUPATIONS,
    _STUDENTS,
    _WHEN,
    _X,
    _words,
)
from engine.ingest.extraction.rules.phrasing import (
    _capitalised,
    _entity,
    _joined,
    _object,
    _proper,
    _third_person,
    _tidy,
)
from engine.ingest.extraction.rules.registry import _Candidate, _Clause, _fact, _linked, _rule

# --- identity -------------------------------------------------------------------------

_NOT_INTRO = (
    _NATIONALITIES
    | _LANGUAGES
    | _words(
        "vegan vegetarian fine good great ok okay back done here sorry ready tired busy home new "
        "sure happy sad excited single married divorced retired"
    )
)


@_rule(rf"\bmy\s+name(?:'s|\s+is)\s+{_X}", rf"\b(?:call\s+me|I\s+go\s+by)\s+{_X}")
def _name(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    words = _tidy(m.group("x")).split()[:2]
    explicit = "name" in m.group(0).lower()
    names = [w for w in words if _capitalised(w) or explicit or clause.lowercase_writer]
    if not names or not all(w.isalpha() and w.lower() not in _NOT_NAMES for w in names):
        return []
    value = " ".join(w if _capitalised(w) else w.title() for w in names)
    return [_fact(f"The user's name is {value}", "identity", 0.95 if explicit else 0.85, "name")]


@_rule(rf"^I(?:'m|\s+am)\s+(?P<x>{_CAP}(?:\s+{_CAP})?)$")
def _intro_name(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    """Hi, I'm Marta: only a whole clause of one or two capitalised words."""
    words = m.group("x").split()
    if any(w.lower() in _NOT_INTRO or w.lower() in _NOT_NAMES for w in words):
        return []
    return [_fact(f"The user's name is {' '.join(words)}", "identity", 0.8, "name")]


@_rule(
    _AM + r"(?P<n>\d{1,3})(?:\s*(?:years?|yrs?)\s*old|\s*y/?o)?(?=\s*$|\s+(?:and|now)\b)",
    r"\bI\s+(?:just\s+)?turned\s+(?P<n>\d{1,3})\b",
)
def _age(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    age = int(m.group("n"))
    return [_fact(f"The user is {age} years old", "identity", 0.9, "age")] if 5 < age < 110 else []


@_rule(rf"\bmy\s+(?:birthday|bday|b-day)\s+is\s+(?:on\s+)?(?P<d>{_DAY_OF_MONTH})")
def _birthday(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    return [_fact(f"The user's birthday is on {m.group('d')}", "identity", 0.9, "birthday")]


@_rule(r"\bI\s+was\s+born\s+in\s+(?P<y>(?:19|20)\d\d)\b")
def _birth_year(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    return [_fact(f"The user was born in {m.group('y')}", "identity", 0.9, "birth_year")]


@_rule(
    r"\bmy\s+pronouns\s+are\s+(?P<p>[a-z]+/[a-z]+(?:/[a-z]+)?)",
    r"\bI\s+use\s+(?P<p>[a-z]+/[a-z]+(?:/[a-z]+)?)\s+pronouns",
)
def _pronouns(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    value = m.group("p").lower()
    return [_fact(f"The user's pronouns are {value}", "identity", 0.95, "pronouns")]


@_rule(_AM + r"(?P<k>[^\W\d_]+)$")
def _nationality(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    word = m.group("k")
    if word.lower() not in _NATIONALITIES:
        return []
    return [_fact(f"The user is {word.capitalize()}", "identity", 0.85, "nationality")]


@_rule(_AM + r"(?:currently\s+|now\s+)?(?P<k>unemployed|retired|self-employed|between\s+jobs)\b")
def _employment(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    return [_fact(f"The user is {_joined(m.group('k'))}", "context", 0.85, "employer")]


@_rule(
    r"\bI\s+(?:have|suffer\s+from)\s+(?P<k>adhd|autism|asthma|diabetes|epilepsy|migraines"
    r"|anxiety|depression|dyslexia|arthritis|ibs|ocd|ptsd)\b"
)
def _has_condition(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    name = m.group("k").lower()
    name = name.upper() if name in ("adhd", "ibs", "ocd", "ptsd") else name
    return [_fact(f"The user has {name}", "context", 0.85)]


@_rule(
    _AM + r"(?P<k>left-handed|right-handed|ambidextrous|colou?r-?blind|dyslexic|diabetic"
    r"|coeliac|celiac|lactose\s+intolerant|deaf)\b"
)
def _condition(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    kind = _joined(m.group("k"))
    if kind.endswith("handed") or kind == "ambidextrous":
        return [_fact(f"The user is {kind}", "identity", 0.9)]
    return [_fact(f"The user is {kind}", "context", 0.85)]


@_rule(
    rf"{_AM}(?P<v>(?:originally\s+)?from)\s+{_X}",
    rf"\bI\s+(?P<v>grew\s+up|was\s+born(?:\s+and\s+raised)?|was\s+raised)\s+in\s+{_X}",
)
def _hometown(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    place = _proper(m.group("x"), clause)
    described = _tidy(m.group("x"))
    if place is None and re.match(r"an?\s.*\b(?:near|in|outside|of)\s+[A-Z]", described):
        place = described if len(described.split()) <= 8 else None
    if place is None or _WHEN.fullmatch(place):
        return []
    verb = m.group("v").lower().split()[-1]
    phrase = {"grew": "grew up in", "born": "was born in", "raised": "was raised in"}.get(
        verb, "is originally from" if "originally" in m.group(0).lower() else "is from"
    )
    text = f"The user {phrase} {place}"
    if _DETERMINER.match(place):  # "a small village near Krakow": a description, no entity
        return [_fact(text, "identity", 0.8, "hometown")]
    return [_linked(text, "identity", 0.9, "hometown", _entity(place, "place"), "FROM")]


@_rule(
    rf"\bI\s+(?:currently\s+|now\s+|still\s+)?live\s+in\s+{_X}",
    rf"\bI(?:'ve|\s+have)\s+(?:been\s+)?liv(?:ed|ing)\s+in\s+{_X}(?=\s+(?:for|since)\b)",
    rf"\b(?:I|we)\s+(?:just\s+|recently\s+|finally\s+)?moved\s+to\s+{_X}",
    rf"(?:{_AM}|^I\b.*?,\s*(?:and\s+)?)(?:currently\s+|now\s+)?(?:living|based)\s+in\s+{_X}",
    rf"\bI\s+(?P<neg>{_DONT}|no\s+longer)\s+live\s+in\s+{_X}",
    rf"\bI\s+(?P<past>used\s+to\s+live|lived)\s+in\s+{_X}",
)
def _residence(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    phrase = m.group("x")
    inner = re.search(r"\bin\s+(?:the\s+)?([A-Z][^,]*)$", phrase)
    if _DETERMINER.match(phrase) and inner:  # "a flat in Porto"
        phrase = inner.group(1)
    place = _proper(phrase, clause)
    if place is None:
        return []
    if m.groupdict().get("neg"):
        # "I don't live in Lisbon" says little; "… anymore" ends the previous residence.
        if not re.search(r"\b(?:anymore|any\s+more|no\s+longer)\b", m.group(0), _I):
            return []
        return [_fact(f"The user no longer lives in {place}", "context", 0.8, "residence")]
    where = _entity(place, "place")
    if m.groupdict().get("past"):
        text = f"The user previously lived in {place}"
        return [_linked(text, "context", 0.85, None, where, "LIVED_IN")]
    confidence = 0.85 if m.group(0).lower().startswith("we") else 0.9
    text = f"The user lives in {place}"
    return [_linked(text, "context", confidence, "residence", where, "LIVES_IN")]


@_rule(rf"\bI\s+(?:currently\s+)?live\s+with\s+{_X}")
def _lives_with(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    parts = re.split(r"\s+in\s+", _tidy(m.group("x")), maxsplit=1)
    who = _object(parts[0])
    if who is None:
        return []
    out = [_fact(f"The user lives with {_third_person(who)}", "context", 0.85)]
    place = _proper(parts[1], clause) if len(parts) > 1 else None
    if place:
        where = _entity(place, "place")
        out.append(
            _linked(f"The user lives in {place}", "context", 0.9, "residence", where, "LIVES_IN")
        )
    return out


@_rule(rf"\bI(?:'ve|\s+have)\s+never\s+been\s+to\s+{_X}")
def _never_been(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    place = _proper(m.group("x"), clause)
    return [_fact(f"The user has never been to {place}", "context", 0.8)] if place else []


# --- work and study -------------------------------------------------------------------


def _split_job(phrase: str) -> tuple[str, str | None]:
    """("a nurse", "St. Mary's hospital") from "a nurse at St. Mary's hospital"."""
    parts = re.split(r"\s+(?:at|for|with)\s+(?=(?:the|an?)\s+|[A-Z])", phrase, maxsplit=1)
    return parts[0], (parts[1] if len(parts) > 1 else None)


def _job_head(job: str) -> str:
    """The occupation noun: the last word before a preposition or an -ing participle."""
    core = re.split(r"\s+(?:in|of|on|from|at|for|with|\w+ing)\b", job, maxsplit=1)[0]
    return core.split()[-1].lower()


def _job_words(job: str) -> str:
    return re.sub(r"\bdevs?\b", "developer", job)


def _workplace(phrase: str | None, clause: _Clause, *, student: bool) -> list[_Candidate]:
    """The employer (or school) after "at": a name, or a short description such as "a bank
    in Zurich" (then without an entity)."""
    if not phrase:
        return []
    org = _proper(phrase, clause)
    if org:
        text = f"The user {'studies' if student else 'works'} at {org}"
        slot, rel = ("school", "STUDIES_AT") if student else ("employer", "WORKS_AT")
        confidence = 0.85 if student else 0.9
        return [_linked(text, "context", confidence, slot, _entity(org, "organisation"), rel)]
    described = _tidy(phrase)
    if re.match(r"an?\s", described, _I) and len(described.split()) <= 6 and not student:
        return [_fact(f"The user works at {described}", "context", 0.75, "employer")]
    return []


@_rule(rf"{_AM}(?P<v>){_X}", rf"\bI\s+(?:currently\s+)?(?P<v>work)\s+as\s+{_X}")
def _job(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    """I'm a nurse at St. Mary's (occupation lexicon) / I work as a data analyst (any)."""
    job, org_phrase = _split_job(_tidy(m.group("x")))
    job = _tidy(job)
    work_as = bool(m.group("v"))
    if not job or len(job.split()) > 7 or not re.match(r"(?:an?|the)\s", job, _I):
        return []
    head = _job_head(job)
    if not work_as and head not in _OCCUPATIONS:
        return []
    text = f"The user {'works as' if work_as else 'is'} {_job_words(job)}"
    return [
        _fact(text, "identity", 0.9, "job_title"),
        *_workplace(org_phrase, clause, student=head in _STUDENTS),
    ]


@_rule(r"\bI(?:'ve|\s+have)\s+been\s+(?P<x>an?\s+[^,;!?]+?)\s+for\s+(?P<d>[^,;!?]+)")
def _job_for(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    """I've been a software engineer for about 8 years."""
    job, org_phrase = _split_job(_tidy(m.group("x")))
    if _job_head(job) not in _OCCUPATIONS or len(job.split()) > 6:
        return []
    text = f"The user has been {_job_words(job)} for {_tidy(m.group('d'), now=False)}"
    return [
        _fact(text, "identity", 0.85, "job_title"),
        *_workplace(org_phrase, clause, student=False),
    ]


@_rule(rf"\bI\s+(?:currently\s+)?teach\s+{_X}")
def _teaches(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    subject = _object(m.group("x"))
    if subject is None:
        return []
    return [_fact(f"The user teaches {_third_person(subject)}", "identity", 0.85, "job_title")]


@_rule(r"\bI\s+(?P<v>manage|lead|run|head)\s+(?P<x>(?:a|the|our)\s+[^,;!?]*?\bteam\b[^,;!?]*)")
def _manages(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    team, org_phrase = _split_job(_tidy(m.group("x")))
    text = f"The user {m.group('v').lower()}s {_third_person(team)}"
    return [
        _fact(text, "identity", 0.8, "job_title"),
        *_workplace(org_phrase, clause, student=False),
    ]


@_rule(
    r"\bI\s+(?:currently\s+|now\s+)?work\s+(?:(?:remotely|full[- ]time|part[- ]time|from\s+home)"
    rf"\s+)?(?:at|for)\s+{_X}",
    rf"(?:{_AM}|\bI(?:'ve|\s+have)\s+been\s+)(?:currently\s+)?working\s+(?:at|for)\s+{_X}",
    r"\bI\s+(?:just\s+|recently\s+)?(?:started\s+(?:a\s+new\s+job|working)\s+(?:at|with|for)"
    rf"|got\s+a\s+(?:new\s+)?job\s+(?:at|with)|joined)\s+{_X}",
)
def _works_at(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    """I work at Acme / I just started a new job at Datadog as an SRE."""
    parts = re.split(r"\s+as\s+(?=an?\s)", m.group("x"), maxsplit=1)
    org_phrase, job_phrase = parts[0], (parts[1] if len(parts) > 1 else "")
    org = _proper(org_phrase, clause)
    if org is None:
        return []
    out = _workplace(org, clause, student=False)
    job = _tidy(job_phrase)
    if job and len(job.split()) <= 5:
        out.append(_fact(f"The user works as {job}", "identity", 0.85, "job_title"))
    return out


@_rule(
    rf"\bI\s+(?:{_DONT}\s+work\s+(?:at|for)|no\s+longer\s+work\s+(?:at|for)"
    rf"|quit\s+my\s+job\s+at|left)\s+{_X}"
)
def _left_job(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    org = _proper(m.group("x"), clause)
    return [_fact(f"The user no longer works at {org}", "context", 0.8, "employer")] if org else []


@_rule(
    r"\bI\s+(?:both\s+|also\s+)?work\s+(?P<mode>remotely|from\s+home|part[- ]time|full[- ]time"
    r"|night\s+shifts)"
)
def _work_mode(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    return [_fact(f"The user works {_joined(m.group('mode'))}", "context", 0.85)]


@_rule(rf"\bI\s+(?:studied|study)\s+{_X}")
def _studied(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    subject, school = _split_job(_tidy(m.group("x")))
    org = _proper(school, clause) if school else None
    if org is None or len(subject.split()) > 4 or _BAD_OBJECT.match(subject):
        return []
    text = f"The user studied {subject} at {org}"
    return [_linked(text, "identity", 0.85, None, _entity(org, "organisation"), "STUDIED_AT")]
