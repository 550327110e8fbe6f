"""The texts of `benchmarks.retrieval`: seeded memories (subject, verb, object, tail, drawn
with a fixed seed) and the questions asked of them."""

from __future__ import annotations

import random

SUBJECTS = ["I", "My sister", "Our team", "My manager", "The client", "My doctor", "We", "Dad"]
VERBS = [
    "moved to",
    "prefers",
    "asked about",
    "booked a trip to",
    "complained about",
    "likes",
    "is allergic to",
    "wants to learn",
    "bought",
    "keeps forgetting",
]
OBJECTS = [
    "Lisbon",
    "the new pricing plan",
    "vegetarian restaurants near the office",
    "a quiet room with a river view",
    "the quarterly report due on Friday",
    "running before work",
    "the delayed laptop shipment",
    "strict Python typing",
    "peanuts",
    "the violin",
    "sourdough bread",
    "Kubernetes upgrades",
    "jazz concerts",
    "the dentist appointment",
    "a red bicycle",
    "Japanese lessons",
]
TAILS = [
    "",
    " last week",
    " because it is cheaper",
    " and wants a reply by Monday",
    " again",
    " since March",
    " for the kids",
    " at the weekend",
]
QUESTIONS = [
    "Where does my sister live now?",
    "What food should I avoid?",
    "When is the report due?",
    "What instrument do I play?",
    "What are we planning for the holidays?",
    "What did the client complain about?",
    "What should I remember about my health?",
    "Which language am I studying?",
]


def sentences(count: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    return [
        f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}{rng.choice(TAILS)}."
        for _ in range(count)
    ]
