"""The offline default extractor: English first-person patterns, no model, no I/O.

The **user's** messages are read, and a **named** speaker's on the other side (`speaker`):
an unnamed assistant is ignored on purpose, since it echoes memory recalled before the turn
("since you live in Madrid…"), talks about itself ("I love running too") or guesses; reading
it would re-extract recalled facts and could store a guess as a fact about the user. A named
speaker's facts are about that speaker ("Melanie read Circe"), with their own graph node and
slots.

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

Layout: `lexicon` (word lists, shared regexes), `registry` (`@_rule`, candidates),
`phrasing` (phrase helpers), the rule families `identity` (identity, residence, work and
study), `preferences`, `skills`, `relationships` (people and pets), `events`, `context` and
`others` (third parties: organisations, other people, books), then `reading` (segments,
clauses, guards), `speaker` (whose facts), `select` (limits, dedupe, slots, entities) and
`extractor` (`extract_sync`, `RuleBasedExtractor`). Underscored names are private to this
package, shared between its modules.

Registration order matters: rules are tried in the order they are registered, which breaks
ties between facts said at the same position and so decides which duplicate or slot value
is kept. The families are therefore imported below explicitly, in the order identity,
preferences, skills, relationships, events, context, others (kept out of import sorting).
"""

# isort: off
from engine.ingest.extraction.rules import identity
from engine.ingest.extraction.rules import preferences
from engine.ingest.extraction.rules import skills
from engine.ingest.extraction.rules import relationships
from engine.ingest.extraction.rules import events
from engine.ingest.extraction.rules import context
from engine.ingest.extraction.rules import others

# isort: on
from engine.ingest.extraction.rules.extractor import NAME, RuleBasedExtractor, extract_sync
from engine.ingest.extraction.rules.phrasing import MAX_OBJECT_WORDS
from engine.ingest.extraction.rules.reading import HEDGE_FACTOR
from engine.ingest.extraction.rules.registry import USER

RULE_FAMILIES = (identity, preferences, skills, relationships, events, context, others)
"""The rule-family modules in registration order (the order rules are tried)."""

__all__ = [
    "HEDGE_FACTOR",
    "MAX_OBJECT_WORDS",
    "NAME",
    "RULE_FAMILIES",
    "USER",
    "RuleBasedExtractor",
    "extract_sync",
]
