"""Clauses of a sentence without a parser (issue 32): where a new clause opens, whether it
says its own subject, which clause's subject it borrows when it does not, which names are
joined by "and", and the tense a clause is said in. `pairs` and `relation_typer` use these
to find which ends a sentence's words join; nothing here knows a relation type.

* A **clause opens** after a comma, a semicolon or a conjunction ("and", "but", "so",
  "then", "before", "after", "while"…). It **has its own subject** when its first word is
  a subject pronoun ("she's a researcher at…", "but I've been…") or a name; a pair of ends
  on both sides of such an opening is not joined by the words between them ("I met
  Shalini at the Valencia summit, she's a researcher at Ardent Motion" says nothing of
  Valencia and Ardent Motion).
* A clause that **drops its subject** ("…, now at Corvel Health", "…before moving to
  Calgary", "…, working at Tessaly Insurance", "…and now lives in Hamburg") borrows the
  subject of the sentence: its first person ("I", or a sentence that opens without a
  subject), or the name that opens it, also after a possessor and a noun ("my son Florian
  studied…").
* **Coordination**: "A and B <verb>" makes A and B co-subjects (B, said between A and the
  verb's object, does not keep them apart); "X, then Y" / "X and then Y" / "X and Y" after
  a relation's target makes Y a second target of the same relation.
* **Tense**: a clause in the past ("used to", "was", "back when", "graduated", a lasting
  state in the simple past: "lived in", "worked at") or in the present ("is studying",
  "'ve been living", "now", "these days", a joining in the past: "started at"); an end
  said as a destination ("moved from Toruń to", "coming back home to") is where the
  subject is now.
* **A name opening its own clause** after a conjunction ("…now that Greg left") is that
  clause's subject, not an object of the words before it; so is "I" or "we" said after a
  clause opener ("…at Brightwater Health, first week went ok i think").
"""

from __future__ import annotations

import re

SUBJECT_PRONOUNS = (
    r"i|i'm|i’m|im|i've|i’ve|ive|i'd|we|we're|we’re|we've|we’ve|he|he's|he’s|she|she's|she’s"
    r"|they|they're|they’re|you|you're|it's|it’s"
)
_OPENER = (
    r"(?:[,;]\s*(?:(?:and|but|so|then|or)\s+)?|\s+(?:and|but|so|because|though|although"
    r"|while|whereas|then|before|after|since|when)\s+)"
)
OWN_SUBJECT = re.compile(rf"{_OPENER}(?:(?:now|then|also|still)\s+)?(?:{SUBJECT_PRONOUNS})\b", re.I)
"""A clause opening on its own subject pronoun."""
_ADVERBS = r"(?:(?:now|then|currently|also|still|just|later|eventually|these\s+days)\s+)*"
_DROPPED = re.compile(
    rf"{_OPENER}{_ADVERBS}(?=(?:at|in|from|with|for)\s|\w+ing\b|\w+(?:s|ed)\s+(?:at|in|to|from|for|with|as)\s)"
    r"(?!(?:something|nothing|"
    r"anything|everything|morning|evening|during|thing|king|ring|spring)\b)",
    re.I,
)
"""A clause opening with no subject: on a preposition, an "-ing" verb, or a verb in "-s" or
"-ed" and a preposition ("…and now lives in", "…and started at"), after adverbs."""
_CONJOINED = re.compile(r"^\s+(?:and|&)\s+(?:(?:my|our|his|her|their)\s+[\w-]+\s+)?$", re.I)
"""Between a first end and its co-subject: "and", "and his wife" (", and" opens a clause)."""
_AFTER_COSUBJECT = re.compile(r"^\s+(?:both|all|too)?\s*\w", re.I)
"""After a co-subject: a word, not a contraction ("and we've been…" opens a clause)."""
_LIST_GAP = re.compile(
    r"^(?:\s+[\w'’-]+){0,5}?\s*(?:,\s*(?:and\s+then|and|&|then)\s+"
    r"|\s+(?:and|&)\s+(?:then\s+|also\s+)?)$",
    re.I,
)
"""A list's next item: after "and", "then" ("Austin, Texas": a bare comma is a region)."""
_NEW_SUBJECT_AFTER = re.compile(
    r"^(?:['’]s\s|\s+(?:is|was|are|were|has|had|will|does|did|says|said|got|went)\b)", re.I
)
_NOT_IN_LIST = re.compile(rf"\b(?:{SUBJECT_PRONOUNS}|who|which|where|that)\b", re.I)
_PAST = re.compile(
    r"\b(?:used\s+to|was|were|did|back\s+when|previously|formerly|graduated|until"
    r"|ago|grew\s+up|spent)\b"
    r"|(?<!['’]ve\s)(?<!\bive\s)(?<!\bhave\s)(?<!\bhas\s)(?<!\bhad\s)"
    r"\b(?:lived|studied|worked|stayed|attended|taught)\b",
    re.I,
)
"""Past markers, and the simple past of the verbs of a lasting state ("lived in", "worked
at"): a state said in the past is over. A verb of change in the past ("moved", "started")
is not one: its result holds now."""
_ARRIVAL = re.compile(r"(?<!\bused\s)\b(?:to|into)\s*$", re.I)
"""The end said as a destination ("moved from Toruń to", "coming back home to"): where the
subject is now, whatever the tense of the move."""
_DEPARTURE = re.compile(r"\b(?:moved|moving|relocated|emigrated)\b.*\bfrom\s*$", re.I)
"""The end said as a move's origin ("moved to Eastbourne from"): where the subject was."""
_PRESENT = re.compile(
    r"\b(?:am|is|are|now|currently|these\s+days|still|nowadays)\b|['’](?:m|re|s)\b"
    r"|^\s*\w+ing\b|(?:\b(?:have|has|ive)|['’]ve)\s+(?:been|\w+ed)\b"
    r"|\b(?:started|joined|enrolled|began)\s+(?:at|in|with)\b",
    re.I,
)
"""Present markers, and the simple past of a verb of joining ("started at", "enrolled in"):
a joining said in the past holds now."""


def opens_own_clause(text: str) -> bool:
    """Whether `text` (the words between two ends) opens a clause with its own subject."""
    return OWN_SUBJECT.search(text) is not None


_OPENS_BEFORE = re.compile(
    rf"(?:{_OPENER}|\s+(?:that|if|unless|until|once|whether)\s+)(?:(?:now|then|also|still)\s+)?$",
    re.I,
)
"""A clause opener right before a name: "…now that", "…because", ", and"."""
_VERB_AFTER = re.compile(
    r"^\s+(?:(?:just|also|still|never|finally|recently|already)\s+)?"
    r"(?:is|was|are|were|has|had|have|will|would|can|could|did|does|do|left|got|went|came"
    r"|quit|took|made|[a-z]+ed|[a-z]+[^s\W]s)\b",
    re.I,
)
"""A verb right after a name: the name is its clause's subject ("…that Greg left")."""


_SUBJECT_ONLY = re.compile(r"^(?:i|i'm|i’m|im|i've|i’ve|ive|i'd|we|we're|we’re|we've|we’ve)$", re.I)
_CLAUSE_CUT = re.compile(r"[,;]|\s(?:and|but|so|because|though|although|while|whereas)\s", re.I)


def subject_in_later_clause(between: str, second: str) -> bool:
    """Whether the second end, said as a subject pronoun ("I", "we") after a clause opener
    in `between`, is the subject of a later clause: the words before it are not its
    predicate ("…a new job at Brightwater Health, first week went ok i think")."""
    return _SUBJECT_ONLY.match(second) is not None and _CLAUSE_CUT.search(between) is not None


def opens_on(before: str, after: str, head: str = "") -> bool:
    """Whether a name opens a clause of its own as its subject: `before` is the text up to
    it, ending on a clause opener ("now that", "because", ", and"), `after` the text from
    it on, starting with a verb ("Lucía is my manager now that Greg left": Greg is no one's
    report here). Not when "and" alone joins it to a first end that opens its clause
    (`head`, the text before that end, ends on none or an opener): the two are co-subjects
    of the verb ("Leopold and Imke have been friends")."""
    if _BARE_AND.match(before) and (not head.strip() or _OPENS_BEFORE.search(head)):
        return False
    return _OPENS_BEFORE.search(before) is not None and _VERB_AFTER.match(after) is not None


_BARE_AND = re.compile(r"^\s+(?:and|&)\s+$", re.I)


def dropped_subjects(sentence: str) -> list[int]:
    """Where each clause that drops its subject starts its words (after the conjunction
    and adverbs), in order."""
    return [m.end() for m in _DROPPED.finditer(sentence)]


def co_subject(before: str, after: str) -> bool:
    """Whether a name said between two ends is the first end's co-subject: `before` is the
    text from the first end to it ("and", "and his wife"), `after` the text from it on."""
    return _CONJOINED.match(before) is not None and _AFTER_COSUBJECT.match(after) is not None


def listed_after(gap: str, after: str) -> bool:
    """Whether a name is one more item of a list after a relation's target: `gap` is the
    text from the target to it (", then", " and ", " for two years and then"), `after` the
    text after it (not a new clause's verb: "Vancouver is great")."""
    if _LIST_GAP.match(gap) is None or _NOT_IN_LIST.search(gap):
        return False
    return _NEW_SUBJECT_AFTER.match(after) is None


def tense(text: str, before: str = "") -> str | None:
    """ "past", "present" or None (both or neither said) for a clause's words; `before`,
    the words right before the end the clause is about, when the end is a destination
    ("to", "into"), says "present", when it is a move's origin ("moved … from"), "past"."""
    if _ARRIVAL.search(before):
        return "present"
    if _DEPARTURE.search(before):
        return "past"
    past, present = _PAST.search(text) is not None, _PRESENT.search(text) is not None
    if past == present:
        return None
    return "past" if past else "present"
