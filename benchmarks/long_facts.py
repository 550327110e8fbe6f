"""Facts of the `long` dataset (`benchmarks.long_conversations`): what each speaker says
happened, in which session, and the day a dated line's time phrase points at.

Time phrases are relative to the day the line is said ("yesterday", "two weeks ago", "last
Saturday"; 70%) or absolute ("on 7 May 2023", "on May 7, 2023"; 30%, 2-25 days back). "last
<weekday>" is only used 2-6 days back, where it means the latest such weekday before the day.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from benchmarks import long_phrases as P

MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)  # fmt: skip
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
DAYS_BACK = {
    "today": 0, "this morning": 0, "yesterday": 1, "the day before yesterday": 2,
    "three days ago": 3, "four days ago": 4, "a week ago": 7, "ten days ago": 10,
    "two weeks ago": 14,
}  # fmt: skip
"""Relative phrases and how many days before the message they put the event."""
ABSOLUTE_SHARE = 0.3
WEEKDAY_SHARE = 0.2


def long_date(day: date) -> str:
    """The gold rendering of a date: "7 May 2023"."""
    return f"{day.day} {MONTHS[day.month - 1]} {day.year}"


def date_renderings(day: date) -> tuple[str, ...]:
    """Renderings that count as the date being in a prompt (compare lower-cased)."""
    month = MONTHS[day.month - 1]
    return (
        day.isoformat(),
        long_date(day),
        f"{month} {day.day}, {day.year}",
        f"{month} {day.day} {day.year}",
    )


@dataclass(frozen=True, slots=True)
class When:
    """A time phrase said on some day and the day it points at."""

    phrase: str
    day: date
    absolute: bool


def pick_when(rng: random.Random, said_on: date) -> When:
    roll = rng.random()
    if roll < ABSOLUTE_SHARE:
        day = said_on - timedelta(days=rng.randint(2, 25))
        month = MONTHS[day.month - 1]
        text = rng.choice((f"on {long_date(day)}", f"on {month} {day.day}, {day.year}"))
        return When(text, day, True)
    if roll < ABSOLUTE_SHARE + WEEKDAY_SHARE:  # 2-6 days back: "last <weekday>" is unambiguous
        day = said_on - timedelta(days=rng.randint(2, 6))
        return When(f"last {WEEKDAYS[day.weekday()]}", day, False)
    phrase = rng.choice(list(DAYS_BACK))
    return When(phrase, said_on - timedelta(days=DAYS_BACK[phrase]), False)


@dataclass(slots=True)
class Fact:
    """One fact line to place: who says it, in which session, from which template. Dated
    facts have `when` and the verb phrases their questions use ("adopt Biscuit" / "adopted
    Biscuit"). `id` and `text` are set once the line is written into its session."""

    tag: str
    speaker: int
    session: int
    template: str
    key: str
    fields: dict[str, str] = field(default_factory=dict)
    base: str = ""
    past: str = ""
    when: When | None = None
    id: str = ""
    text: str = ""

    def render(self) -> str:
        phrase = self.when.phrase if self.when else ""
        return self.template.format(
            **self.fields, when=phrase, When_cap=phrase[:1].upper() + phrase[1:]
        )


PASTS = {"adopt": "adopted", "start": "started", "fly": "flew", "buy": "bought", "go": "went"}
PASTS |= {"see": "saw"}


def plan_facts(rng: random.Random, others: list[str], days: list[date]) -> list[Fact]:
    """Every fact line of both speakers, placed in sessions and dated (see the module doc).
    `others` names the two relatives of each speaker (companion first)."""
    pools: tuple[Sequence[Any], ...] = (
        P.PETS, P.PET_NAMES, P.ROLES, P.BOOKS, P.PURCHASES, P.WORKSHOPS, P.BANDS, P.PLANS,
        P.LIKES, P.DISLIKES,
    )  # fmt: skip
    picks = [rng.sample(pool, 2) for pool in pools]
    employers, cities = rng.sample(P.EMPLOYERS, 4), rng.sample(P.CITIES, 4)
    places = rng.sample(P.HOLIDAYS, 4)
    facts: list[Fact] = []
    for s in (0, 1):
        mine = [pick[s] for pick in picks]
        names = (others[2 * s], others[2 * s + 1])
        facts += speaker_facts(
            rng, s, len(days), mine, names, employers[2 * s : 2 * s + 2],
            cities[2 * s : 2 * s + 2], places[2 * s : 2 * s + 2],
        )  # fmt: skip
    date_facts(rng, facts, days)
    return facts


def speaker_facts(
    rng: random.Random,
    s: int,
    n: int,
    mine: list[Any],
    names: tuple[str, str],
    employers: list[str],
    cities: list[str],
    places: list[str],
) -> list[Fact]:
    """The fact lines of speaker `s` over `n` sessions: what `plan_facts` picked for them
    (`mine`), their companion and other relative (`names`), old and new employer, the cities
    of the trips before and after the job change, the holidays of companion and relative."""
    (species, breed), pet, role, (title, author), (category, item) = mine[:5]
    (event, detail), band, plan, like, dislike = mine[5:]
    companion, relative = names
    relation, relation2 = rng.sample(P.RELATIONS, 2)
    job_at, adopt_at = rng.randint(n // 3, 2 * n // 3), rng.randint(0, n - 4)
    facts: list[Fact] = []

    def add(tag: str, where: int, templates: tuple[str, ...], key: str, **fields: str) -> None:
        facts.append(Fact(tag, s, where, rng.choice(templates), key, fields))

    add("relative", rng.randrange(n), P.RELATIVE_LINES, relative, relation=relation2, name=relative)
    add("adopt", adopt_at, P.ADOPT_LINES, pet, relation=relation, name=companion,
        breed=breed, species=species, pet=pet)  # fmt: skip
    add("holiday", rng.randint(adopt_at + 1, n - 1), P.HOLIDAY_LINES, places[0],
        name=companion, place=places[0])  # fmt: skip
    add("decoy-holiday", rng.randrange(n), P.OTHER_HOLIDAY_LINES, places[1],
        name=relative, place=places[1])  # fmt: skip
    add("old-job", rng.randint(0, job_at - 1), P.OLD_JOB_LINES, employers[0], employer=employers[0])
    add("job", job_at, P.JOB_LINES, employers[1], role=role, employer=employers[1])
    add("trip-before", rng.randint(1, job_at - 1), P.TRIP_LINES, cities[0], city=cities[0])
    add("trip-after", rng.randint(job_at + 1, n - 1), P.TRIP_LINES, cities[1], city=cities[1])
    add("book", rng.randrange(n), P.BOOK_LINES, title, title=title, author=author)
    add("purchase", rng.randrange(n), P.PURCHASE_LINES, item, item=item, category=category)
    add("workshop", rng.randrange(n), P.WORKSHOP_LINES, event, event=event,
        detail=detail, venue=rng.choice(P.VENUES))  # fmt: skip
    add("concert", rng.randrange(n), P.CONCERT_LINES, band, band=band)
    add("plan", rng.randrange(n), (plan.line,), plan.answer)
    for i, line in enumerate(rng.sample(like.lines, 2)):
        add(f"like{i}", rng.randrange(n), (line,), like.key)
    for i, line in enumerate(rng.sample(dislike.lines, rng.randint(1, 2))):
        add(f"dislike{i}", rng.randrange(n), (line,), dislike.key)
    verbs = {
        "adopt": f"adopt {pet}", "job": f"start the job at {employers[1]}",
        "trip-before": f"fly to {cities[0]}", "trip-after": f"fly to {cities[1]}",
        "purchase": f"buy the {category}", "workshop": f"go to the {event}",
        "concert": f"see {band} live",
    }  # fmt: skip
    for fact in facts:
        if fact.tag in verbs:
            fact.base = verbs[fact.tag]
            verb, rest = fact.base.split(" ", 1)
            fact.past = f"{PASTS[verb]} {rest}"
    return facts


def _day(fact: Fact) -> date:
    if fact.when is None:
        raise ValueError(f"{fact.tag} has no date")
    return fact.when.day


def date_facts(rng: random.Random, facts: list[Fact], days: list[date]) -> None:
    """A time phrase for every dated fact, drawn until each speaker's trips fall on either
    side of the job change (before < job < after, by the days the phrases point at)."""
    for fact in facts:
        if fact.base:
            fact.when = pick_when(rng, days[fact.session])
    for s in (0, 1):
        tagged = {f.tag: f for f in facts if f.speaker == s}
        job, before, after = tagged["job"], tagged["trip-before"], tagged["trip-after"]
        while not _day(before) < _day(job) < _day(after):
            job.when = pick_when(rng, days[job.session])
            before.when = pick_when(rng, days[before.session])
            after.when = pick_when(rng, days[after.session])
