"""The throughput benchmark's turns: deterministic, varied user + assistant text (about 200-400
characters a turn, from a seed, no external data) spread over agents, users and threads."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any

CITIES = ("Porto", "Lisbon", "Oslo", "Tallinn", "Riga", "Ghent", "Kyoto", "Lima", "Quito")
FOODS = ("sourdough", "ramen", "lentil soup", "tacos", "pad thai", "risotto", "falafel")
PROJECTS = ("billing migration", "Q3 roadmap", "mobile release", "data warehouse", "offsite")
PEOPLE = ("Ana", "Bruno", "Chen", "Dara", "Emeka", "Farah", "Goran", "Hana")
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "the weekend")
ASKS = (
    "Can you find me a flight to {city} next {day}?",
    "What should I cook tonight? I still have {food} in the fridge.",
    "Remind me what {person} and I decided about the {project} deadline.",
    "Summarise my notes from {day} about the {project}.",
    "Is it worth visiting {city} in the rainy season with two kids?",
    "Draft a short email to {person} about the {project} status.",
    "I told {person} I would call back on {day}; can you put it in my calendar?",
    "How long does it take to learn to make proper {food} at home?",
)
CONTEXTS = (
    "I am a bit behind this week.",
    "My budget is tight this month, so keep it cheap.",
    "I prefer mornings, afternoons are full of meetings.",
    "Last time the train was late, so plan some slack.",
    "{person} will probably join me.",
    "I have not been to {city} since 2019.",
)
REPLIES = (
    "Here is what I found: three options, the cheapest leaves early on {day}.",
    "Based on what you told me before, I would suggest {food} with a simple salad.",
    "You and {person} agreed to move the {project} deadline by one week.",
    "Done. I kept it short and mentioned the open questions about the {project}.",
    "{city} is quieter then, but pack a rain jacket and book the museums ahead.",
    "I added a reminder for {day} at ten and noted that {person} is waiting for it.",
)
FOLLOW_UPS = (
    "Do you want me to compare prices as well?",
    "Shall I keep this in your notes for later?",
    "I can also check the weather closer to the date.",
    "Tell me if anything changed since last time.",
)
MARKER_EVERY = 20
"""Every this-th turn of the visibility phase carries a unique nonsense word."""


@dataclass(frozen=True, slots=True)
class Scope:
    agent: str
    user: str
    thread: str

    def wire(self) -> dict[str, str]:
        return {"agentWallet": self.agent, "userAddress": self.user, "threadId": self.thread}


def scopes(tag: str, agents: int, users_per_agent: int) -> list[Scope]:
    """One thread per (agent, user): `agents * users_per_agent` threads."""
    return [
        Scope(f"0x{tag}a{a}", f"user{u}", f"thread{a}-{u}")
        for a in range(agents)
        for u in range(users_per_agent)
    ]


def _fill(rng: random.Random, template: str) -> str:
    return template.format(
        city=rng.choice(CITIES),
        food=rng.choice(FOODS),
        project=rng.choice(PROJECTS),
        person=rng.choice(PEOPLE),
        day=rng.choice(DAYS),
    )


def exchange(rng: random.Random, n: int) -> tuple[str, str]:
    """(user message, assistant message) of the n-th turn: 200-400 characters together."""
    user = " ".join(
        [_fill(rng, rng.choice(ASKS)), *(_fill(rng, c) for c in rng.sample(CONTEXTS, 2))]
    )
    assistant = " ".join([_fill(rng, rng.choice(REPLIES)), rng.choice(FOLLOW_UPS), f"(ref {n})"])
    return user, assistant


def marker_word(rng: random.Random) -> str:
    """A nonsense word no turn text contains (letters only, so tokenizers keep it whole)."""
    return "zq" + "".join(rng.choice("bdfgjkmpvwx") + rng.choice("aeiouy") for _ in range(4))


def turn_body(scope: Scope, user: str, assistant: str, occurred_ms: int) -> dict[str, Any]:
    return {
        **scope.wire(),
        "userMessage": user,
        "assistantMessage": assistant,
        "occurredAt": occurred_ms,
    }


def turn_texts(seed: int, count: int) -> list[str]:
    """`count` turn texts as a turn row holds them ("user: …" and "assistant: …" lines,
    `engine.ingest.turns.compact_summary`) for the raw embedder figure."""
    rng = random.Random(seed)
    return ["user: {}\nassistant: {}".format(*exchange(rng, n)) for n in range(count)]


def turn_bodies(threads: list[Scope], turns: int, seed: int) -> list[tuple[Scope, dict[str, Any]]]:
    """The throughput phase's post_turn bodies, each with its thread, made before the clock
    starts: `stored_per_s` counts from the first publish (until stop 51 it also counted the
    making of these bodies, ~0.3 s of 20,000 on this machine)."""
    rng = random.Random(seed)
    now_ms = int(time.time() * 1000) - turns
    return [
        (
            threads[n % len(threads)],
            turn_body(threads[n % len(threads)], *exchange(rng, n), now_ms + n),
        )
        for n in range(turns)
    ]
