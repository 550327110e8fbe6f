"""Names a turn mentions, found by a general method: no verb lists, no model, tens of
microseconds per turn (`python -m benchmarks.extraction`: `links_latency_us`).

* a run of capitalised words, joined through "of", "de", "van", "&"… when a capitalised word
  follows ("University of Tartu", "Bank of America"), a possessive "'s" dropped unless an
  organisation word follows it ("St Aldric's Hospital");
* function words, pronouns, contractions, interjections, numbers and calendar words are
  never names (`_NOT_NAMES`);
* a title before a capitalised name is part of it ("Dr. Osei", "Mr. Whiskers"); a single
  capitalised word after "a"/"an" is a kind of thing, not one named ("doing a PhD"), and
  so is an abbreviation after a possessive or a verb ("her PhD", "its HQ", "does QA");
* a capitalised word alone that opens a sentence is a name only as the sentence's subject:
  followed by a word in -s or -ed, or "is", "has", "and"… ("Marcus works", "Felipe is",
  "Teodor used"), not by punctuation or anything else ("Congratulations!", "Sounds
  lovely", "Went to…"), and not in -ly or -ing; or followed by "'s", or by a comma and
  "who", "whose", "a", "an" ("Gideon, who…"); or known as a name anyway (a speaker, an
  extractor's entity, or written capitalised elsewhere in the turn);
* in a message written in lower case (its author writes "i", or no capital at all), a word
  or two after "in", "at" or "from" ("i live in lyon"), and a word after "my brother",
  "my dog"… ("my brother tom"), and a word before ", our beagle" ("took biscuit, our
  beagle, to the vet"), are names too; a word written capitalised there is read as
  written ("in Busan teaching english": "Busan").

The **type** is a cue, not a classification: an organisation word in or right after the
name ("Fernhill Analytics", "Initech's office"), a place after "in"/"from"/"near" or in a
"City, Region" pair ("Austin, Texas"), a person after a title; otherwise "name".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.ingest.extraction.rules.lexicon import PETS
from engine.ingest.extraction.titles import without_titles

MAX_NAME_WORDS = 6
"""A longer capitalised run is a title or shouting, not a name."""
MAX_EVIDENCE = 300
"""Characters of a sentence kept as evidence (cut at a word, with "…")."""


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_NOT_NAMES = _words(
    "i i'm i've i'd i'll im ive me my mine myself we we're we've our ours us you you're your "
    "yours he he's him his she she's her hers it it's its they they're them their theirs "
    "this that these those there here the a an and or but so if when while after before "
    "because since then than also just still yes no not nope ok okay oh ah hey hi hello "
    "thanks thank well yeah yep lol haha wow nice great cool sure sorry please congrats "
    "do does did don't didn't is are was were be been being have has had can can't could "
    "would should will won't what what's who who's whom whose which where why how anyway "
    "btw honestly actually originally back funny happy true right good bad last next every "
    "all some any each both one two three none maybe perhaps guess unrelated speaking "
    "today tomorrow yesterday tonight morning evening night weekend week month year "
    "monday tuesday wednesday thursday friday saturday sunday january february march "
    "april may june july august september october november december christmas easter "
    "mom mum dad mother father sister brother wife husband son daughter friend boss "
    "mr mrs ms dr prof sir madam dear new old big little first other another such "
    "let let's like love hope wish think know see say said tell told ask asked "
    "four five six seven eight nine ten more most many few several lots plenty "
    "now soon later ago already again yet ever"
)
"""Words that are never a name, however written (function words, pronouns, interjections,
calendar words, bare kin words, and the few verbs that open chat sentences)."""

_AFTER_VERB = _words(
    "a an the my your his her our their its this that these those some any to for with "
    "at in on up out about into from by me him us them it you i like so too"
)
"""Words that follow a verb or an adverb, not a name that opens a sentence ("Went to…")."""

_SUBJECTS = _words(
    "he he's she she's it it's they they're this that these those there there's here the a "
    "an his her their its our my your you you're we i i'm someone everyone nobody people "
    "mom mum dad mother father sister brother wife husband son daughter friend boss"
)
"""Openers that are a sentence's subject (so the sentence does not drop it)."""
_QUESTION_OPENERS = _words(
    "do does did is are was were can could would should will have has what what's who "
    "whom whose which where why how whats wheres whos any anyone"
)
_SUBJECT_FOLLOWERS = _words(
    "and is was has had will can could would just also still never always said says did "
    "does do went got made spent left took came grew met ran wrote bought sold kept found "
    "began became taught built"
)
"""Words after a name that opens a sentence as its subject, besides verbs in -s and -ed
(and irregular pasts: "Wendelin spent…", "Ines grew up…")."""
_APPOSITIVE = _words("who whose a an")
"""After an opener and its comma: a relative clause or an apposition about a name."""
_CONNECTORS = _words("of de da del della di du van von der den la le y &")
_ORG_WORDS = _words(
    "inc corp corporation co company ltd llc plc gmbh ag sa bank university college school "
    "institute academy labs lab analytics insurance group trust foundation games studio "
    "studios design media marine freight kitchen systems technologies tech software "
    "hospital clinic partners agency airlines airways holdings ventures capital consulting "
    "solutions industries works association society council ministry museum club team "
    "records press publishing logistics motors pharma bakery cafe restaurant hotel"
)
_ORG_AFTER = _words("office offices headquarters hq team staff employees ceo founder founders")
_PLACE_WORDS = _words(
    "city county street avenue road river lake mount island bay park valley lane square"
)
_PLACE_BEFORE = _words("in from near to around outside")
_TITLES = _words("mr mrs ms dr prof uncle aunt auntie grandma grandpa")
_ROLE_NOUNS = _words(
    "mom mum dad mother father sister brother wife husband son daughter friend boss "
    "roommate flatmate colleague coworker manager partner girlfriend boyfriend cousin "
    "uncle aunt neighbour neighbor dog cat puppy kitten"
)
"""Nouns a name follows in apposition ("my brother tom"), read in lower-case messages."""
_PET_NOUNS = _words(PETS)
_LOWER_NOT_NAMES = _words("home work school uni college church bed least all first")
"""Nouns after "in"/"at"/"from" that are no name ("i'm at work")."""
_LOWER_CUES = _words("in at from")
_INDEFINITE = _words("a an")
_EXISTENTIAL = re.compile(r"\bthere(?:['’]s|\s+(?:is|are|was|were))\b", re.IGNORECASE)
_COMMON_BEFORE = _words("my your his her its our their does do did doing is was as")
_ABBREVIATION_WORD = re.compile(r"^(?=(?:[a-z]*[A-Z]){2})[A-Za-z]{2,5}$")
"""A short word of two or more capitals ("HQ", "PhD", "QA", "CTO"): after a possessive or
a verb (`_COMMON_BEFORE`) it abbreviates a common noun, not a name."""
FIRST_PERSON = re.compile(
    r"(?<![\w'’])(?:i|i'm|i've|i'd|i'll|im|ive|me|my|mine|myself|we|we're|we've|our|ours|us)"
    r"(?![\w'’])",
    re.IGNORECASE,
)
_LOWERCASE_I = re.compile(r"(?:^|\s)i(?:'m|'ve|m)?\b")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+|;\s+|\s+[—–]\s+")
_ABBREVIATION = re.compile(r"\b(?:St|Dr|Mr|Mrs|Ms|Prof|Mt|Jr|Sr|vs|etc)\.$")
_TOKEN = re.compile(
    r"\b(?:Dr|Mr|Mrs|Ms|Prof)\.(?=\s+[A-Z])|[^\W\d_][\w'’.-]*[\w]|[^\W\d_]|&|\d[\w:]*|[,:()\"]"
)
_TITLE = re.compile(r"^(?:Dr|Mr|Mrs|Ms|Prof)\.?$")
"""A title before a capitalised name is part of it ("Dr. Osei", "Mr. Whiskers")."""
_CONTRACTION = re.compile(r"['’](?:ll|d|ve|re|m|t)$")
_POSSESSIVE = re.compile(r"['’]s$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Name:
    name: str
    type: str


def sentences(text: str) -> list[str]:
    """`text` cut into sentences ("Dr." and "St." do not end one), stripped, non-empty."""
    out: list[str] = []
    for piece in _SENTENCE.split(text):
        piece = piece.strip()
        if not piece:
            continue
        if out and _ABBREVIATION.search(out[-1]):
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return out


def is_capitalised(token: str) -> bool:
    """Written with a capital and, without a possessive, not a word that is never a name."""
    if not token[:1].isupper():
        return False
    word = bare(token).casefold()
    if _CONTRACTION.search(word):  # "We'll", "Don't"
        return False
    return word not in _NOT_NAMES and word not in _AFTER_VERB and word.rstrip("s") not in _NOT_NAMES


def bare(token: str) -> str:
    return _POSSESSIVE.sub("", token).strip(".")


def _type_of(words: list[str], before: str, after: str, comma_next: str) -> str:
    lowered = [w.casefold() for w in words]
    if (len(words) > 1 and any(w in _ORG_WORDS for w in lowered)) or after in _ORG_AFTER:
        return "organisation"
    if lowered[0] in _PLACE_WORDS or lowered[-1] in _PLACE_WORDS or before in _PLACE_BEFORE:
        return "place"  # a place word heads the name ("Elm Street", "Lake Como")
    if after == "," and is_capitalised(comma_next) and before in _PLACE_BEFORE:
        return "place"
    if before in _TITLES or _TITLE.match(words[0]):
        return "person"
    return "name"


def _span(tokens: list[str], i: int, lower: bool) -> tuple[list[str], int]:
    """The words of the name starting at `tokens[i]` and the index after it, or ([], i + 1)."""
    token = tokens[i]
    titled = _TITLE.match(token) and i + 1 < len(tokens) and is_capitalised(tokens[i + 1])
    if titled or (is_capitalised(token) and token[:1].isalpha()):
        words = [token]
        i += 1
        while i < len(tokens) and not (
            _POSSESSIVE.search(words[-1]) and bare(tokens[i]).casefold() not in _ORG_WORDS
        ):
            nxt = tokens[i]
            if is_capitalised(nxt) and nxt[:1].isalpha():
                words.append(nxt)
                i += 1
            elif (
                nxt.casefold() in _CONNECTORS
                and i + 1 < len(tokens)
                and is_capitalised(tokens[i + 1])
            ):
                words.extend((nxt, tokens[i + 1]))
                i += 2
            else:
                break
        return words, i
    if lower and _apposed(tokens, i):  # "took biscuit, our beagle, to the vet"
        return [token.title()], i + 1
    if (
        lower
        and token.casefold() in _ROLE_NOUNS
        and i > 0
        and tokens[i - 1].casefold()
        in (
            "my",
            "our",
            "his",
            "her",
        )
    ):
        nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
        if _capitalised_next(tokens, i):  # "my cat Mr. Whiskers": read as written
            return [], i + 1
        if nxt[:1].isalpha() and nxt.casefold() not in _NOT_NAMES | _AFTER_VERB:
            return [nxt.title()], i + 2
        return [], i + 1
    if lower and token.casefold() in _LOWER_CUES and not _capitalised_next(tokens, i):
        words = []
        i += 1
        while (
            i < len(tokens)
            and len(words) < 2
            and tokens[i][:1].isalpha()
            and tokens[i].casefold() not in _NOT_NAMES
            and tokens[i].casefold() not in _AFTER_VERB
            and tokens[i].casefold() not in _LOWER_NOT_NAMES
        ):
            words.append(tokens[i].title())
            i += 1
        return words, i
    return [], i + 1


def _capitalised_next(tokens: list[str], i: int) -> bool:
    """Whether the word after `tokens[i]` is written as a name ("in Busan teaching english":
    the name is "Busan", as written, not two words after "in")."""
    nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
    return bool(_TITLE.match(nxt)) or (is_capitalised(nxt) and nxt[:1].isalpha())


def _apposed(tokens: list[str], i: int) -> bool:
    """Whether `tokens[i]` is a word followed by ", my <role noun>" (lower-case messages)."""
    token, after = tokens[i], [t.casefold() for t in tokens[i + 1 : i + 4]]
    return (
        token[:1].isalpha()
        and token.casefold() not in _NOT_NAMES | _AFTER_VERB
        and len(after) == 3
        and after[0] == ","
        and after[1] in ("my", "our", "his", "her")
        and (after[2] in _ROLE_NOUNS or after[2] in _PET_NOUNS)
    )


def names_in(
    sentence: str, known: frozenset[str] = frozenset(), *, lower: bool = False
) -> list[Name]:
    """The names a sentence mentions, in order, deduplicated (see the module doc). `known`
    holds case-folded names accepted even where a sentence opens with them; `lower` reads
    a message whose author writes in lower case (a name after "in", "at", "from"). A title
    in quotes is one name (`titles`)."""
    sentence, titles = without_titles(sentence)
    tokens = _TOKEN.findall(sentence)
    found: dict[str, Name] = {}
    last_place_end = -1
    i = 0
    while i < len(tokens):
        words, end = _span(tokens, i, lower)
        if not words:
            i = end
            continue
        start = end - len(words) if not is_capitalised(tokens[i]) else i
        i = end
        possessive = bool(_POSSESSIVE.search(words[-1]))
        words[-1] = bare(words[-1])
        name = " ".join(w for w in words if w)
        if len(name) < 2 or len(words) > MAX_NAME_WORDS:
            continue
        after = tokens[end].casefold() if end < len(tokens) else ""
        opener = start == 0 and len(words) == 1 and not possessive
        said_after = tokens[end] if end < len(tokens) else ""
        apposed = said_after == "," and end + 1 < len(tokens) and tokens[end + 1] in _APPOSITIVE
        if (
            opener
            and name.casefold() not in known
            and not apposed  # "Gideon, who I play with, is…", "Hyun-woo, a colleague"
            and (_not_a_subject(said_after) or name.casefold().endswith(("ly", "ing")))
        ):
            continue
        before = tokens[start - 1].casefold() if start > 0 else ""
        if before in _INDEFINITE and len(words) == 1:
            continue  # "doing a PhD", "drives a Tesla": a kind of thing, not one named
        if before in _COMMON_BEFORE and len(words) == 1 and _ABBREVIATION_WORD.match(name):
            continue  # "her PhD", "its HQ", "does QA": an abbreviated noun, not a name
        comma_next = tokens[end + 1] if after == "," and end + 1 < len(tokens) else ""
        kind = _type_of(words, before, after, comma_next)
        if (
            possessive
            and kind == "name"
            and _ORG_AFTER & {t.casefold() for t in tokens[end : end + 2]}
        ):
            kind = "organisation"  # "Initech's head office"
        if kind == "name" and before == "," and last_place_end == start - 1:
            kind = "place"  # "Austin, Texas": a name after a place's comma is a place
        if kind == "place":
            last_place_end = end
        for word, title in titles.items():
            name = name.replace(word, title)
        key = name.casefold()
        if key not in found or (found[key].type == "name" and kind != "name"):
            found[key] = Name(found[key].name if key in found else name, kind)
    return list(found.values())


def statement(sentence: str) -> str:
    """The sentence as a statement: "" for a question; a sentence ending with a question
    after a comma ("I'm from Izmir, did you know?") keeps what comes before it."""
    text = sentence.strip()
    if not text.endswith("?"):
        return text
    first = text.split(maxsplit=1)[0].casefold() if text else ""
    if first in _QUESTION_OPENERS or "," not in text:
        return ""
    return text.rsplit(",", 1)[0].strip()


def subject_dropped(sentence: str, known: frozenset[str]) -> bool:
    """A chat sentence with no subject ("been at Quillon for a decade", "moved to Riga"):
    its first word is neither a name, nor a pronoun or determiner, nor a question word, and
    its first clause says no "there is" (whose subject is "there": "out in Bodø there's…")."""
    tokens = _TOKEN.findall(sentence)
    if not tokens or not tokens[0][:1].isalpha():
        return False
    first = bare(tokens[0]).casefold()
    if first in _SUBJECTS or first in _QUESTION_OPENERS or first in known:
        return False
    if _EXISTENTIAL.search(sentence.split(",", 1)[0]):  # "out in Bodø there's a startup"
        return False
    return not (
        tokens[0][:1].isupper() and len(tokens) > 1 and tokens[1].casefold() not in _AFTER_VERB
    )


def evidence_of(sentence: str) -> str:
    """The sentence as shown as evidence: at most `MAX_EVIDENCE` characters, cut at a word."""
    text = " ".join(sentence.split())
    if len(text) <= MAX_EVIDENCE:
        return text
    return text[:MAX_EVIDENCE].rsplit(" ", 1)[0] + "…"


def _not_a_subject(after: str) -> bool:
    """Whether a capitalised word that opens a sentence, followed by `after`, is not a name
    as the sentence's subject: a name there is followed by a verb ("Marcus works",
    "Felipe is", "Teodor used") or "and"; an interjection or adjective by punctuation or
    anything else ("Congratulations!", "Sounds lovely", "Fair enough", "Went to…")."""
    if not after[:1].isalpha() or not after[:1].islower() or after in _AFTER_VERB:
        return True
    return not (after in _SUBJECT_FOLLOWERS or after.endswith(("s", "ed")))


def tokens_of(sentence: str) -> list[str]:
    """Words (with inner "'", "-", "."), numbers, "&" and punctuation that matters, in order."""
    return _TOKEN.findall(sentence)


_FULL_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+\s+[A-Z][a-z]+\b")
"""Two capitalised words in a row, not opening a sentence: a full name, written as such."""


def written_in_lower_case(message: str) -> bool:
    """Whether casing says nothing in `message`: its author writes no capital at all, or
    writes "i" and no full name capitalised ("my boss Krisztina Szabados … when i call in
    sick": the author capitalises names, so "sick" is none)."""
    if not any(c.isupper() for c in message):
        return True
    return _LOWERCASE_I.search(message) is not None and _FULL_NAME.search(message) is None
