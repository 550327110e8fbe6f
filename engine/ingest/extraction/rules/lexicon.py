"""Word lists and shared regexes of the rule-based extractor: dates and periods, occupations,
languages, skill verbs, pets, kin and partner words, names that are not names, and the
phrase patterns (objects, determiners, fillers, place endings, pronouns) the rules and the
phrasing helpers share. Lexicons are deliberately small: a missed fact is preferred to an
invented one."""

from __future__ import annotations

import re
from collections.abc import Iterable

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
_KIN |= {"supervisor": "manager"}
_PEOPLE = (
    "sister brother mother father son daughter child best friend friend cousin aunt uncle "
    "grandmother grandfather niece nephew twin colleague manager roommate neighbour mentor "
    "mother-in-law father-in-law sister-in-law brother-in-law parents"
)
_REL = _alt([*_PEOPLE.split(), "best friend", *_KIN, *_PARTNERS])
_PET_NOUNS = frozenset([*_PETS.split(), "guinea pig"])
_PET = _alt(_PET_NOUNS)
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
_FIRST_PERSON = r"(?:I|I'm|Im|I've|my|we)\b"
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
    r"|but|so|right|these|currently|lol|haha|in\s+(?:19|20)\d\d|\d+\s+\w+\s+ago"
    rf"|(?:in|on|by)\s+(?:early\s+|late\s+|mid[- ])?(?:{_MONTH}))\b.*$",
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


def relation_stem(noun: str) -> str:
    """The relation a relative's, a peer's or a pet's noun names, before "_OF": a pet's noun
    "PET" ("dog" → "PET_OF", as every pet is), a partner's noun its kind ("wife" →
    "SPOUSE"), any other in capitals, "_" for spaces and hyphens ("best friend" →
    "BEST_FRIEND", "mother-in-law" → "MOTHER_IN_LAW")."""
    if noun in _PET_NOUNS:
        return "PET"
    return _PARTNERS.get(noun) or noun.upper().replace(" ", "_").replace("-", "_")


# What the extraction modules beside the rules read (the typer, the name finder, pairs,
# appositives): the same words, by public names.
KIN = _KIN
"""A relative's or a peer's word → the noun it stands for ("mum" → "mother")."""
PARTNERS = _PARTNERS
"""A partner's noun → its relation's stem ("wife" → "SPOUSE")."""
PETS = _PETS
"""Pets' nouns, space separated."""
PEOPLE = _PEOPLE
"""Nouns of the people a relation names ("sister", "roommate", "mother-in-law"), space separated."""
