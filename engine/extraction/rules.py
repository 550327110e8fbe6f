"""The offline default extractor: English first-person patterns, no model, no I/O.

Only the **user's** messages are read. Assistant messages are ignored on purpose: they echo
memory recalled before the turn ("since you live in Madrid…"), talk about the assistant
itself ("I love running too") or guess; reading them would re-extract recalled facts and
could store an assistant's guess as a fact about the user.

How a message is read:

1. Curly quotes are straightened and quoted speech (`"…"`, `'…'`) removed: a quote is
   someone's words, not a statement by the user.
2. The text is cut into segments (sentences, and at `;`, `: `, dashes and line breaks;
   "St." / "Dr." do not end a sentence). A segment opening as a question ("do you…", "why
   don't I…") is dropped; in a segment ending with "?", the part from its questioning
   clause on is dropped ("Juniper (my dog) keeps chewing my shoes, any tips?" keeps its
   first clause).
3. Segments are cut into clauses at "but", "so", "because"… and at "and"/"," before a new
   subject ("and I…", ", my…", "and the…"). A match yields nothing when the comma-piece
   around it is conditional, modal or wishful ("if", "might", "would", "should", "wish",
   "maybe", "I'll"…), offers an option (", or I can…") or reports someone else's words
   ("my mom says…", "she wrote…"); only that piece counts, so "I've got an interview on
   Tuesday, wish me luck" keeps the interview. A hedge anywhere in the clause ("I think",
   "probably", "kind of") multiplies the confidence by `HEDGE_FACTOR`, which puts it under
   the default minimum of 0.6.
4. Each rule (a regex over a clause, or over the whole sentence for pet and child names
   given in a second clause), registered with `@_rule` above the function that builds its
   facts, proposes facts in the third person ("The user …", "my" → "their"), with a type, a
   confidence, a slot for single-valued attributes, and the entities and relations the fact
   names ("user" is the user's node and gets no entity).

Names of people, pets, places and organisations must be capitalised, except in a message
whose author writes the pronoun "i" in lower case (then casing says nothing, and places and
organisations are title-cased instead). Occupations ("I'm a nurse"), languages and
"I can …" skills are checked against small lexicons: a missed fact is preferred to an
invented one.

Selection: facts under `policy.min_confidence` or over `policy.max_chars` are dropped (a
cut fact could misstate), duplicates (case- and space-insensitive) keep their best
confidence, each slot keeps one fact (the most confident, the later one on a tie), and the
`policy.max_facts` most confident remain, returned in the order they were said. Entities
and relations come only from the facts that remain.

Layout: lexicons and shared regexes, then the rules by fact family (identity, work and
study, preferences, skills, relationships, events, context), then reading and selection.
The module is longer than this codebase's usual ~400 lines because each rule sits next to
the function that phrases its facts; a split would cut along the families.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from engine.extraction.types import (
    ExtractedEntity,
    ExtractedFact,
    ExtractedRelation,
    Extraction,
    ExtractionPolicy,
    FactType,
    TurnText,
)

NAME = "rules-v1"
USER = "user"
HEDGE_FACTOR = 0.6
"""A hedged statement's confidence is multiplied by this (0.9 → 0.54)."""
MAX_OBJECT_WORDS = 12
"""A captured phrase longer than this is a run-on sentence, not an attribute: dropped."""

_I = re.IGNORECASE


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _alt(words: Iterable[str]) -> str:
    """A regex alternation of `words`, longest first (so "best friend" wins over "friend"),
    spaces matching any whitespace."""
    ordered = sorted(set(words), key=lambda w: (-len(w), w))
    return "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in ordered)


_MONTHS = "january february march april may june july august september october november december"
_MONTH = _alt(_words(_MONTHS) | _words("jan feb mar apr jun jul aug sep sept oct nov dec"))
_DAY = _alt(_words("monday tuesday wednesday thursday friday saturday sunday"))
_PERIOD = rf"week(?:end)?|month|year|summer|winter|spring|fall|autumn|{_DAY}"
_DAY_OF_MONTH = (
    rf"\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MONTH})|(?:{_MONTH})\s+\d{{1,2}}(?:st|nd|rd|th)?"
)
_WHEN = re.compile(
    rf"\b(?:today|tonight|tomorrow|yesterday|(?:this|next|last)\s+(?:{_PERIOD})|{_DAY}"
    rf"|(?:in|on|by|until)\s+(?:early\s+|late\s+|mid[- ])?(?:{_MONTH})|{_DAY_OF_MONTH}"
    r"|in\s+(?:19|20)\d\d|\d+\s+(?:days?|weeks?|months?|years?)\s+ago"
    r"|in\s+(?:a|one|two|three|\d+)\s+(?:days?|weeks?|months?)"
    r"|\d{1,2}(?::\d\d)?\s*(?:am|pm)|\d{4}-\d\d-\d\d|\d{1,2}/\d{1,2}(?:/\d{2,4})?)\b",
    _I,
)
_PAST = re.compile(
    rf"\b(?:yesterday|last\s+(?:{_PERIOD})|ago|in\s+(?:19|20)\d\d|back\s+in|this\s+morning"
    rf"|earlier\s+this\s+(?:{_PERIOD})|in\s+(?:{_MONTH})|on\s+(?:{_DAY}))\b",
    _I,
)

_OCCUPATIONS = _words(
    "engineer developer programmer designer architect analyst scientist researcher nurse "
    "doctor physician surgeon dentist pharmacist teacher professor lecturer tutor student "
    "undergrad undergraduate postdoc lawyer attorney paralegal accountant consultant manager "
    "director founder cofounder co-founder ceo cto cfo coo sre devops pm intern freelancer "
    "contractor writer journalist editor author photographer artist illustrator animator "
    "musician chef cook baker barista waiter waitress bartender mechanic electrician plumber "
    "carpenter pilot driver firefighter paramedic officer soldier farmer librarian therapist "
    "psychologist psychiatrist counselor counsellor worker translator interpreter economist "
    "mathematician physicist chemist biologist statistician recruiter marketer entrepreneur "
    "realtor caregiver nanny vet veterinarian midwife technician sysadmin administrator "
    "clerk cashier receptionist secretary coach trainer instructor dancer actor actress "
    "singer composer producer blogger podcaster gardener tester dev lead"
)
_STUDENTS = _words("student undergrad undergraduate postdoc")
_LANGUAGES = _words(
    "english portuguese spanish french german italian dutch russian polish ukrainian czech "
    "greek turkish arabic hebrew persian farsi hindi urdu bengali punjabi tamil telugu "
    "marathi chinese mandarin cantonese japanese korean vietnamese thai indonesian malay "
    "tagalog filipino swahili amharic yoruba zulu swedish norwegian danish finnish icelandic "
    "hungarian romanian bulgarian serbian croatian slovak slovenian lithuanian latvian "
    "estonian catalan basque galician irish welsh latin esperanto"
)
_SKILL_VERBS = (
    "play speak cook bake swim sail drive ski snowboard surf dance sing knit sew crochet "
    "paint draw juggle ride code program dive climb skate type solder weld"
)
_PETS = "dog cat puppy kitten parrot rabbit bunny hamster guinea pig horse pony bird budgie"
_PETS += " goldfish turtle tortoise lizard gecko snake ferret chinchilla retriever labrador"
_PETS += " poodle beagle terrier spaniel husky corgi dachshund bulldog collie pug greyhound"
_PARTNERS = {"wife": "SPOUSE", "husband": "SPOUSE", "spouse": "SPOUSE", "partner": "PARTNER"}
_PARTNERS |= {"boyfriend": "PARTNER", "girlfriend": "PARTNER", "fiancé": "FIANCE"}
_PARTNERS |= {"fiancée": "FIANCE", "fiance": "FIANCE", "fiancee": "FIANCE"}
_KIN = {"mom": "mother", "mum": "mother", "dad": "father", "kid": "child", "baby": "child"}
_KIN |= {"coworker": "colleague", "co-worker": "colleague", "neighbor": "neighbour"}
_KIN |= {"grandma": "grandmother", "granny": "grandmother", "grandpa": "grandfather"}
_KIN |= {"flatmate": "roommate", "housemate": "roommate", "boss": "manager"}
_PEOPLE = (
    "sister brother mother father son daughter child best friend friend cousin aunt uncle "
    "grandmother grandfather niece nephew twin colleague manager roommate neighbour mentor "
    "mother-in-law father-in-law sister-in-law brother-in-law parents"
)
_REL = _alt([*_PEOPLE.split(), "best friend", *_KIN, *_PARTNERS])
_PET = _alt([*_PETS.split(), "guinea pig"])
_NOT_NAMES = _words(
    "i i'm im the a an and but so or if is are was this that it my our your his her their "
    "thanks thank hi hey hello yes no ok okay sorry please well oh also just today tomorrow "
    "here there home work school who what when where why how monday tuesday wednesday "
    "thursday friday saturday sunday"
)
_NATIONALITIES = _words(
    "american british english irish scottish welsh canadian australian german french spanish "
    "italian portuguese brazilian mexican indian chinese japanese korean dutch swedish "
    "norwegian danish finnish polish russian ukrainian greek turkish egyptian nigerian kenyan "
    "african european asian latino latina jewish muslim christian catholic buddhist hindu"
)
_NOT_PLACES = _NOT_NAMES | _words("fear peace denial hope town city country area suburbs")
_BAD_OBJECT = re.compile(
    r"^(?:it|that|this|those|these|them|him|her|you|your|yours|how|when|what|where|why|who"
    r"|the\s+(?:way|idea|fact|thought)|to\s+know|doing\s+that|something|anything|nothing)\b",
    _I,
)
_DETERMINER = re.compile(r"^(?:a|an|some|my|our|this|that|his|her|their)\s", _I)
_MODAL = re.compile(
    r"\b(?:if|unless|whether|might|maybe|perhaps|possibly|would|could|should|wish|hope|hoping"
    r"|someday|gonna|wanna|want\s+to|i'd|i'll|id\s+like|suppose|imagine|pretend|considering"
    r"|thinking\s+(?:about|of))\b|\bI\s+may\b",
    _I,
)
_HEDGE = re.compile(
    r"\b(?:I\s+think|I\s+guess|I\s+believe|I\s+feel\s+like|not\s+sure|kind\s+of|kinda|sort\s+of"
    r"|probably|apparently)\b",
    _I,
)
_REPORTED = re.compile(
    r"\b(?:says?|said|thinks?|thought|tells?|told|believes?|claims?|wrote|writes)\b", _I
)
_QUESTION_OPENER = re.compile(
    r"^(?:(?:so|and|but|ok|okay|also|hey|hi|well|btw|oh|um)\b[,\s]*)*"
    r"(?:what|what's|whats|why|how|when|where|who|which|do|does|did|can|could|would|will"
    r"|should|is|are|am|was|were|have|has|any|isn't|aren't|don't|doesn't|didn't|won't|right"
    r"|or)\b",
    _I,
)
# A single-quoted span may hold apostrophes between letters ('Dad, I like it. It isn't far.').
_QUOTED = re.compile(r"\"[^\"]*\"|(?<!\w)'(?:[^']|(?<=\w)'(?=\w))*'(?!\w)")
_SEGMENT_BREAK = re.compile(r"(?<=[.!?])\s+|\n+|;\s*|\s+[—–-]\s+|\s*[—–]\s*|:\s+|…")
_ABBREVIATION = re.compile(r"\b(?:St|Dr|Mr|Mrs|Ms|Prof|Mt|Jr|Sr|vs|etc|e\.g|i\.e)\.$", _I)
_FIRST_PERSON = r"(?:I|I'm|Im|I've|my|we)\b"
_CLAUSE_BREAK = re.compile(
    r",?\s+(?:but|so|because|cause|even\s+though|though|although|whereas|while)\s+"
    rf"|,?\s+and\s+(?={_FIRST_PERSON}(?!\s+(?:are|were)\b))|,\s*(?={_FIRST_PERSON})"
    r"|,?\s+and\s+(?=(?:the|he|she|it|they|then|there|this|that)\b)",
    _I,
)
_QUESTION_PART = re.compile(r",\s*|\s+(?:but|so|and|or)\s+", _I)
_LOWERCASE_I = re.compile(r"(?:^|\s)i(?:'m|'ve|m)?\b")
_FILLER = re.compile(
    r"(?:\s+(?:lol|lmao|haha+|hehe|btw|fyi|tbh|imo|please|pls|too|as\s+well|at\s+all"
    r"|so\s+much|very\s+much|a\s+lot|though|honestly|by\s+the\s+way))+$",
    _I,
)
_NOW = re.compile(
    r"(?:\s+(?:now|right\s+now|at\s+the\s+moment|currently|these\s+days|nowadays"
    r"|every\s*day|daily|in\s+my\s+(?:spare|free)\s+time|anymore|any\s+more))+$",
    _I,
)
_PLACE_END = re.compile(
    r"\s+(?:for|since|last|this|next|now|with|before|after|because|until|when|while|and"
    r"|but|so|right|these|currently|lol|haha|in\s+(?:19|20)\d\d|\d+\s+\w+\s+ago)\b.*$",
    _I,
)
_CALLED = re.compile(r"\b(?:called|named)\s+(\S.*)$", _I)
_PRONOUNS = {"my": "their", "me": "them", "mine": "theirs", "myself": "themselves"}
_PRONOUNS |= {"our": "their", "ours": "theirs", "us": "them", "we": "they", "I": "they"}
_PRONOUN = re.compile(r"\b(?:my|me|mine|myself|our|ours|us|we|I)\b")
_X = r"(?P<x>(?:St\.|Dr\.|Mt\.|[^,;:()!?.\"])+)"
_AM = r"\bI(?:'m|\s+am|m)\s+"
_DONT = r"(?:don't|do\s+not|dont)"
_PAST_VERBS = (
    r"ran|finished|completed|won|graduated(?:\s+from)?|got\s+(?:married|engaged|divorced|promoted)"
    r"|visited|travell?ed\s+to|climbed|passed|bought|published|launched|retired|broke|quit"
    r"|stopped"
)
_EXPERIENCE_VERBS = (
    r"playing|doing|practi[cs]ing|coding|programming|developing|speaking|running|swimming"
    r"|climbing|cooking|baking|painting|drawing|writing|dancing|singing|working"
)
_CAP = r"(?-i:[A-Z][\w'-]*)"
_EVENT_NOUNS = (
    "appointment interview meeting exam test surgery operation flight wedding party concert "
    "match class call trip conference presentation deadline check-up checkup date race "
    "marathon recital graduation vacation holiday anniversary"
)
_EVENT = _alt(_EVENT_NOUNS.split())
_INSTRUMENTS = (
    "guitar bass piano drums violin cello ukulele saxophone sax trumpet flute clarinet harp "
    "keyboard keys tennis football soccer basketball chess golf volleyball rugby hockey padel "
    "squash badminton baseball cricket"
)


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
        return text
    if clause.lowercase_writer and len(text.split()) <= 3:
        return text.title()
    return None


def _person(word: str) -> str | None:
    """A capitalised given name ("Ana", "Tomás"), possessive "'s" removed."""
    name = re.sub(r"'s$", "", word.strip())
    if not name or not _capitalised(name) or name.lower() in _NOT_NAMES:
        return None
    return name if all(c.isalpha() or c in "-'" for c in name) else None


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


def _entity(name: str, type_: str, summary: str = "") -> ExtractedEntity:
    return ExtractedEntity(re.sub(r"^the\s+", "", name, flags=_I), type_, summary)


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def _dated(text: str) -> bool:
    return _WHEN.search(text) is not None


def _joined(words: str) -> str:
    return " ".join(words.lower().split())


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


# --- preferences ----------------------------------------------------------------------

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


# --- skills ---------------------------------------------------------------------------

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


@_rule(rf"\bI\s+(?:also\s+)?(?P<neg>{_DONT}\s+)?speak\s+{_X}", rf"\bwe\s+speak\s+{_X}")
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


# --- relationships --------------------------------------------------------------------


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
    kind = _PARTNERS.get(rel) or rel.upper().replace(" ", "_").replace("-", "_")
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
    rf"\bmy\s+(?P<rel>{_REL}|{_PET})\s*,?\s+(?P<name>[^\W\d_][\w'-]*)",
    rf"\b(?P<name>[^\W\d_][\w'-]*)\s*\(\s*my\s+(?P<rel>{_REL}|{_PET})\s*\)",
    rf"\bmy\s+(?P<rel>{_REL}|{_PET})(?:'s\s+name\s+is|\s+is\s+(?:named|called))\s+"
    r"(?P<name>[^\W\d_][\w'-]*)",
)
def _named_relative(m: re.Match[str], clause: _Clause) -> list[_Candidate]:
    """my sister Ana / Juniper (my dog) / my cat is called Miso."""
    name = _person(m.group("name"))
    if name is None:
        return []
    rel = _kin(m.group("rel"))
    return [_relative(rel, name, pet=_is_pet(rel))]


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


# --- events ---------------------------------------------------------------------------

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


# --- context --------------------------------------------------------------------------


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
        tool = _tidy(item)
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


# --- reading a turn -------------------------------------------------------------------


def _segments(text: str) -> list[str]:
    """Sentences and other stand-alone pieces, quoted speech removed."""
    text = text.replace("’", "'").replace("‘", "'").replace("“", '"').replace("”", '"')
    text = _QUOTED.sub(" ", text)
    out: list[str] = []
    for piece in _SEGMENT_BREAK.split(text):
        piece = piece.strip()
        if out and _ABBREVIATION.search(out[-1]):
            out[-1] = f"{out[-1]} {piece}"
        elif piece:
            out.append(piece)
    return out


def _statement(segment: str) -> str:
    """The declarative part of a segment: "" for a question, the part before the
    questioning clause of "…, any tips?"."""
    body = segment.strip().rstrip(".!?…~ ").strip()
    if _QUESTION_OPENER.match(body):
        return ""
    if not segment.rstrip().endswith("?"):
        return body
    cuts = [m.start() for m in _QUESTION_PART.finditer(body)]
    for start, end in zip([0, *cuts], [*cuts, len(body)], strict=True):
        part = _QUESTION_PART.sub("", body[start:end], count=1) if start else body[start:end]
        if start and _QUESTION_OPENER.match(part.strip()):
            return body[:start]
    return body[: cuts[-1]] if cuts else ""


def _guarded_piece(text: str, start: int) -> str:
    """The comma-delimited piece of `text` around `start`, plus a trailing conditional
    piece ("…, if all goes well"): what a modal or reporting verb can qualify. "I've got an
    interview on Tuesday, wish me luck" is not wishful about the interview."""
    left = text.rfind(",", 0, start) + 1
    right = text.find(",", start)
    if right < 0:
        return text[left:]
    rest = text[right + 1 :]
    tail = "," + rest if re.match(r"\s*(?:if|unless|provided)\b", rest, _I) else ""
    return text[left:right] + tail


def _weight(clause: str, start: int) -> float | None:
    """None when the match at `start` states no fact (conditional, modal, reported
    speech); else the confidence multiplier: `HEDGE_FACTOR` when the clause hedges, else 1."""
    piece = _guarded_piece(clause, start)
    # "…, or I can fly solo": one option among several is not a fact.
    if _MODAL.search(piece) or re.match(r"\s*or\b", piece, _I):
        return None
    reported = _REPORTED.search(piece)
    if reported and not re.search(r"\bI\s+(?:really\s+)?$", piece[: reported.start()], _I):
        return None
    return HEDGE_FACTOR if _HEDGE.search(clause) else 1.0


def _apply(rule: _Rule, unit: _Clause) -> Iterable[tuple[int, _Candidate]]:
    """(match start, candidate) for every match of `rule` that the guards let through."""
    for match in rule.pattern.finditer(unit.text):
        weight = _weight(unit.text, match.start())
        if weight is None:
            continue
        for cand in rule.build(match, unit):
            yield match.start(), replace(cand, confidence=round(cand.confidence * weight, 3))


def _clauses(statement: str) -> list[tuple[int, str]]:
    """(offset, text) of each clause of a statement."""
    out, start = [], 0
    for brk in _CLAUSE_BREAK.finditer(statement):
        out.append((start, statement[start : brk.start()]))
        start = brk.end()
    return [*out, (start, statement[start:])]


def _candidates(message: str) -> list[_Candidate]:
    """Every fact the rules propose for one user message, in the order it is said."""
    lowercase_writer = _LOWERCASE_I.search(message) is not None
    out: list[_Candidate] = []
    for segment in _segments(message):
        statement = _statement(segment)
        if not statement:
            continue
        units = [(0, statement, True)] + [(o, c, False) for o, c in _clauses(statement)]
        said: list[tuple[int, int, _Candidate]] = []
        for offset, text, whole in units:
            unit = _Clause(text, lowercase_writer)
            for rule in _RULES:
                if rule.whole_segment != whole:
                    continue
                for at, cand in _apply(rule, unit):
                    said.append((offset + at, len(said), cand))
        out.extend(cand for _, _, cand in sorted(said, key=lambda item: item[:2]))
    return out


def _select(found: list[_Candidate], policy: ExtractionPolicy) -> list[_Candidate]:
    """Policy limits, dedupe, one fact per slot, the most confident `max_facts` in said
    order."""
    best: dict[str, tuple[int, _Candidate]] = {}
    for order, cand in enumerate(found):
        text = cand.text.strip().rstrip(".,;:!? ")
        cand = replace(cand, text=text)
        if cand.confidence < policy.min_confidence or len(text) > policy.max_chars:
            continue
        key = " ".join(text.lower().split())
        if key not in best or cand.confidence > best[key][1].confidence:
            best[key] = (order, cand)
    by_slot: dict[str, tuple[int, _Candidate]] = {}
    kept: list[tuple[int, _Candidate]] = []
    for order, cand in sorted(best.values(), key=lambda item: item[0]):
        if cand.slot is None:
            kept.append((order, cand))
        elif cand.slot not in by_slot or cand.confidence >= by_slot[cand.slot][1].confidence:
            by_slot[cand.slot] = (order, cand)
    kept.extend(by_slot.values())
    top = sorted(kept, key=lambda item: (-item[1].confidence, item[0]))[: policy.max_facts]
    return [cand for _, cand in sorted(top, key=lambda item: item[0])]


def extract_sync(messages: Sequence[TurnText], policy: ExtractionPolicy) -> Extraction:
    """The facts, entities and relations the user's messages state (pure; see the module
    docstring for what is read and how facts are selected)."""
    found: list[_Candidate] = []
    for message in messages:
        if message.role.strip().lower() == "user":
            found.extend(_candidates(message.content))
    chosen = _select(found, policy)
    entities: dict[str, ExtractedEntity] = {}
    relations: dict[tuple[str, str, str], ExtractedRelation] = {}
    for cand in chosen:
        for entity in cand.entities:
            entities.setdefault(" ".join(entity.name.casefold().split()), entity)
        for rel in cand.relations:
            relations.setdefault((rel.source, rel.type, rel.target), rel)
    facts = [ExtractedFact(c.text, c.type, c.confidence, c.slot) for c in chosen]
    return Extraction(facts, list(entities.values()), list(relations.values()))


class RuleBasedExtractor:
    """`Extractor` over `extract_sync`: English first-person rules, offline and
    deterministic. Never raises for any input text."""

    @property
    def name(self) -> str:
        return NAME

    async def extract(self, messages: Sequence[TurnText], policy: ExtractionPolicy) -> Extraction:
        return extract_sync(messages, policy)
