"""The `long` dataset of `benchmarks.quality`: long chats between two named people, generated
from a seed (nothing vendored, no network).

A conversation has two speakers (names differ between the conversations of a split), 25-35
sessions spread over 6-18 months and 430-570 messages in all (a few more when a session's
facts need the room). Speakers alternate; the first speaker of a conversation has role `user`
and the second `assistant`, and every message starts with its speaker's name ("Melanie: ...").
Each session starts at an explicit UTC datetime between 08:00 and 19:59 and its messages follow
one to six minutes apart, so every message is dated and no session crosses midnight.

About 26 messages per conversation state facts (templates in `benchmarks.long_phrases`): per
speaker a relative, a pet adopted with another relative who later goes on holiday, an old and a
new job, a trip before and one after the job change, a book, a purchase, a plan, a workshop, a
concert, a like (two lines) and a dislike. The rest is small talk and near misses, so evidence is
sparse. Seven facts per speaker are dated by a phrase in the message: relative to the day it was
said ("yesterday", "two weeks ago", "last Saturday"; about 70%) or absolute ("on 7 May 2023").

Questions (18 per conversation, gold = the ids of the messages that state the answer):

* `single-hop` (4 of 14): "What book has Melanie been reading?" → one message;
* `multi-hop` (all 4): "Where did the person Melanie adopted a dog with go on holiday?" (the
  adoption names the relative, a later message her holiday) and "Which city did Melanie fly to
  after changing jobs?" (the job change and the trip after it; the trip before it is a decoy);
* `temporal` (4 of 14 dates, up to 2 absolute, and 2 durations): "When did Melanie go to the
  pottery workshop?" → "7 May 2023", the message's date resolved through its phrase; "How many
  days after Melanie adopted Biscuit did Melanie fly to Porto?" → "23 days", two messages;
* `open-domain` (all 4): "Would Melanie enjoy a hiking trip in the mountains?" → "Yes" (her two
  hiking lines) or "No" (her dislike, one or two lines).

Splits: `tune`, `holdout` and `blind` are the same generator with different seeds
(`SPLIT_SEEDS`), so they share no conversation. Same seed, same output, on any machine
(string-seeded `random.Random`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from itertools import combinations

from benchmarks import long_phrases as P
from benchmarks.datasets import DAY_MS, Message, Session
from benchmarks.long_facts import Fact, long_date, plan_facts

SPLIT_SEEDS = {"tune": 1601, "holdout": 1602, "blind": 1603}
"""`blind` is run once, after a round of changes was chosen on the other two (issue 16)."""
CATEGORIES = ("single-hop", "multi-hop", "temporal", "open-domain")
ROLES = ("user", "assistant")
MAX_CONVERSATIONS = 20
"""Per split: speakers take 40 of the 60 names, relatives are drawn from the other 20."""


@dataclass(frozen=True, slots=True)
class LongQuestion:
    """A question with its gold answer. `keys[i]` is a string that message `evidence_ids[i]`
    contains (what the question asks about); `answer_day` is set when the answer is a date,
    and `absolute` says whether that date is written in the evidence message itself."""

    text: str
    category: str
    answer: str
    evidence_ids: tuple[str, ...]
    keys: tuple[str, ...]
    answer_day: date | None = None
    absolute: bool = False


@dataclass(frozen=True, slots=True)
class LongConversation:
    id: str
    speakers: tuple[str, str]
    sessions: tuple[Session, ...]
    questions: tuple[LongQuestion, ...]
    asked_at_ms: int
    """When the questions are asked: one day after the last message (ms since epoch, UTC)."""

    def messages(self) -> dict[str, Message]:
        return {m.id: m for s in self.sessions for m in s.messages}


def session_starts(rng: random.Random) -> list[datetime]:
    first = date(2022, 1, 3) + timedelta(days=rng.randrange(540))
    span = rng.randint(183, 540)
    offsets = [0, *sorted(rng.sample(range(1, span + 1), rng.randint(24, 34)))]
    return [
        datetime.combine(
            first + timedelta(days=o), time(rng.randint(8, 19), rng.randrange(60)), UTC
        )
        for o in offsets
    ]


def small_talk(rng: random.Random, previous: str) -> str:
    """A line of small talk after `previous`: an answer to a question, sometimes a short
    response to a statement, else a question or one or two statements."""
    if previous.endswith("?"):
        return rng.choice(P.ANSWERS)
    roll = rng.random()
    if roll < 0.3 and previous and previous not in (*P.RESPONSES, *P.REACTIONS, *P.OPENERS):
        return rng.choice(P.RESPONSES)
    if roll > 0.8:
        return rng.choice(P.QUESTIONS)
    first, second = rng.sample(P.SMALL_TALK, 2)
    if rng.random() < 0.3:
        word = first.split()[0]
        lower = word != "I" and not word.startswith("I'")
        first = f"{rng.choice(P.LEADS)} {first[0].lower() + first[1:] if lower else first}"
    return f"{first}. {second}" if rng.random() < 0.2 else first


def write_session(
    rng: random.Random, sid: str, start: datetime, speakers: tuple[str, str], count: int,
    facts: list[Fact],
) -> Session:  # fmt: skip
    """`count` alternating messages (more if the facts need them); each fact line is followed
    by the other speaker's reaction. Sets `id` and `text` of the facts written."""
    pending = list(facts)
    rng.shuffle(pending)
    first, at, previous = rng.randrange(2), start, ""
    messages: list[Message] = []
    i = 0
    while i < count or pending:
        who = (first + i) % 2
        mine = [f for f in pending if f.speaker == who]
        chance = 2 * len(pending) / max(1, count - i)
        mid = f"{sid}-m{i:02d}"
        if mine and i > 0 and previous != "fact" and rng.random() < chance:
            fact = mine[0]
            pending.remove(fact)
            fact.id, fact.text, previous = mid, fact.render(), "fact"
            text = fact.text
        elif previous == "fact":
            text = previous = rng.choice(P.REACTIONS)
        elif i == 0:
            text = previous = rng.choice(P.OPENERS).format(o=speakers[1 - who])
        elif i >= count - 1 and not pending:
            text = previous = rng.choice(P.CLOSERS)
        else:
            text = previous = small_talk(rng, previous)
        messages.append(
            Message(ROLES[who], f"{speakers[who]}: {text}", int(at.timestamp() * 1000), mid)
        )
        at += timedelta(minutes=rng.randint(1, 5), seconds=rng.randrange(60))
        i += 1
    return Session(sid, tuple(messages))


def question(text: str, category: str, answer: str, *used: Fact) -> LongQuestion:
    """A question whose gold is the lines `used` (each keyed by what it states)."""
    day = used[0].when if category == "temporal" and len(used) == 1 else None
    return LongQuestion(
        text,
        category,
        long_date(day.day) if day else answer,
        tuple(u.id for u in used),
        tuple(u.key for u in used),
        day.day if day else None,
        bool(day and day.absolute),
    )


def days_text(n: int) -> str:
    return f"{n} day" if n == 1 else f"{n} days"


def speaker_questions(x: str, f: dict[str, Fact]) -> dict[str, list[LongQuestion]]:
    """Every question about speaker `x` (facts `f` by tag), by kind: single, multi, date,
    span (durations), open."""
    species, relation = f["adopt"].fields["species"], f["relative"].fields["relation"]
    plan = next(p for p in P.PLANS if p.answer == f["plan"].key)
    out: dict[str, list[LongQuestion]] = {
        "single": [
            question(f"What book has {x} been reading?", "single-hop", f["book"].key, f["book"]),
            question(f"What is the name of {x}'s {species}?", "single-hop", f["adopt"].key,
                     f["adopt"]),
            question(f"What is the name of {x}'s {relation}?", "single-hop", f["relative"].key,
                     f["relative"]),
            question(f"Where does {x} work now?", "single-hop", f["job"].key, f["job"]),
            question(f"What {f['purchase'].fields['category']} did {x} buy?", "single-hop",
                     f["purchase"].key, f["purchase"]),
            question(f"Which band did {x} see live?", "single-hop", f["concert"].key,
                     f["concert"]),
            question(plan.question.format(x=x), "single-hop", plan.answer, f["plan"]),
        ],
        "multi": [
            question(f"Where did the person {x} adopted a {species} with go on holiday?",
                     "multi-hop", f["holiday"].key, f["adopt"], f["holiday"]),
            question(f"Which city did {x} fly to after changing jobs?", "multi-hop",
                     f["trip-after"].key, f["job"], f["trip-after"]),
        ],
    }  # fmt: skip
    dated = sorted(((fact.when.day, fact) for fact in f.values() if fact.when), key=lambda d: d[0])
    out["date"] = [
        question(f"When did {x} {fact.base}?", "temporal", "", fact) for _, fact in dated
    ]
    out["span"] = [
        question(f"How many days after {x} {a.past} did {x} {b.base}?", "temporal",
                 days_text((day_b - day_a).days), a, b)
        for (day_a, a), (day_b, b) in combinations(dated, 2)
        if day_a < day_b
    ]  # fmt: skip
    out["open"] = []
    for taste, answer, tastes in (("like", "Yes", P.LIKES), ("dislike", "No", P.DISLIKES)):
        lines = [fact for tag, fact in f.items() if tag.startswith(taste)]
        text = next(t.question for t in tastes if t.key == lines[0].key).format(x=x)
        out["open"].append(question(text, "open-domain", answer, *lines))
    return out


def ask(rng: random.Random, speakers: tuple[str, str], facts: list[Fact]) -> list[LongQuestion]:
    """18 questions: 4 single-hop, 4 multi-hop, 6 temporal (4 dates, up to 2 of them written
    out in the line, and 2 durations), 4 open-domain."""
    pool: dict[str, list[LongQuestion]] = {}
    for s, x in enumerate(speakers):
        for kind, found in speaker_questions(
            x, {f.tag: f for f in facts if f.speaker == s}
        ).items():
            pool.setdefault(kind, []).extend(found)
    absolute = [d for d in pool["date"] if d.absolute]
    dates = rng.sample(absolute, min(2, len(absolute)))
    dates += rng.sample([d for d in pool["date"] if d not in dates], 4 - len(dates))
    return [*rng.sample(pool["single"], 4), *pool["multi"], *dates, *rng.sample(pool["span"], 2),
            *pool["open"]]  # fmt: skip


def conversation(
    cid: str, speakers: tuple[str, str], others: list[str], seed: str
) -> LongConversation:
    rng = random.Random(seed)
    starts = session_starts(rng)
    facts = plan_facts(rng, others, [s.date() for s in starts])
    total = rng.randint(430, 570)
    weights = [rng.uniform(0.5, 1.5) for _ in starts]
    sessions = tuple(
        write_session(
            rng, f"{cid}-s{n:02d}", start, speakers, max(6, round(total * w / sum(weights))),
            [f for f in facts if f.session == n],
        )
        for n, (start, w) in enumerate(zip(starts, weights, strict=True))
    )  # fmt: skip
    questions = tuple(ask(rng, speakers, facts))
    return LongConversation(
        cid, speakers, sessions, questions, sessions[-1].messages[-1].timestamp_ms + DAY_MS
    )


def generate(split: str, conversations: int = 6) -> tuple[LongConversation, ...]:
    """The conversations of a split (`tune` or `holdout`), at most `MAX_CONVERSATIONS`; the
    first `k` of a larger run are the same as a run of `k`. Speakers' names differ between the
    conversations of a split and from every relative's name in it."""
    if not 1 <= conversations <= MAX_CONVERSATIONS:
        raise ValueError(f"conversations must be 1..{MAX_CONVERSATIONS}")
    seed = SPLIT_SEEDS[split]
    names = list(P.NAMES)
    random.Random(f"{seed}/names").shuffle(names)
    speakers, relatives = names[: 2 * MAX_CONVERSATIONS], names[2 * MAX_CONVERSATIONS :]
    out = []
    for i in range(conversations):
        pair = (speakers[2 * i], speakers[2 * i + 1])
        others = random.Random(f"{seed}/{i}/others").sample(relatives, 4)
        out.append(conversation(f"long-{split}-{i}", pair, others, f"{seed}/{i}"))
    return tuple(out)
