"""`python -m benchmarks.quality --dataset handwritten`: hand-written conversations whose
questions share few words with their evidence (issue 32), split `tune` / `blind`.

The data (`benchmarks/data/handwritten.json`) was written by a helper session that did not read
the retrieval code (engine/, services/) nor the generated `long` benchmark, so nothing in it is
phrased for how retrieval works. 8 conversations (4 `tune`, 4 `blind`, fixed before any
scoring), 4 dated sessions each of 9-12 messages between two named speakers (the first is the
`user`, the second the `assistant`; the speaker's name leads the text, "Caroline: ..." as in
`long`), with filler that is not evidence, and 80 questions in five categories: `paraphrase`
(the question reuses almost no word of its evidence), `single_hop`, `multi_hop` (2+ evidence
messages in 2+ sessions), `temporal` (a before and an after, or a date from the session's
clock) and `open_domain` (an inference: "would a cheese board be a welcome gift?").

Each split is its own run of `benchmarks.quality.evaluate` (own in-memory stores; the blind
split is only to be scored, never edited after). Reported per budget (900, 1800, 4000 unless
`--budgets`), per split, for `mnemostream/budget`, `bm25-fill` and `vectors-fill`: evidence in
context (the recall rule of `benchmarks.scoring`) overall and by category, and the evidence
messages missed at that budget split into *shown at the largest budget* (found, but the
smaller context had no room for them) and *at no budget* (not found). Whether the engine
retrieved a message and then dropped it while packing is not visible from outside it, so the
largest budget stands in for "retrieved". A JSON line with the same figures ends the report.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import Counter, defaultdict
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Any

from benchmarks.datasets import (
    DAY_MS,
    MINUTE_MS,
    Conversation,
    Dataset,
    Message,
    Package,
    Question,
    Session,
    subsample,
)
from benchmarks.long_report import Evaluate
from benchmarks.scoring import Tally, per_question
from engine.ports import Embedder

DATA = Path(__file__).resolve().parent / "data" / "handwritten.json"
SPLITS = ("tune", "blind")
CATEGORIES = ("paraphrase", "single_hop", "multi_hop", "temporal", "open_domain")
SHOWN = ("mnemostream/budget", "bm25-fill", "vectors-fill")
BUDGETS = (900, 1800, 4000)
HANDWRITTEN = Package("benchmarks/data/handwritten.json", "in-repo", "project data", "", "")
EVENING_MS = 18 * 3_600_000
"""A session starts at 18:00 UTC of its date; its messages are a minute apart."""


def read() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
    return data


def to_conversation(raw: dict[str, Any]) -> Conversation:
    roles = {name: role for role, name in raw["speakers"].items()}
    sessions, texts = [], {}
    for s in raw["sessions"]:
        day = date.fromisoformat(s["date"]).toordinal() - date(1970, 1, 1).toordinal()
        start = day * DAY_MS + EVENING_MS
        msgs = []
        for i, m in enumerate(s["messages"]):
            content = f"{m['speaker']}: {m['text']}"
            msgs.append(Message(roles[m["speaker"]], content, start + i * MINUTE_MS, m["id"]))
            texts[m["id"]] = content
        sessions.append(Session(f"{raw['id']}:{s['id']}", tuple(msgs)))
    asked = sessions[-1].messages[-1].timestamp_ms + DAY_MS
    questions = tuple(
        Question(
            q["question"],
            tuple(texts[i] for i in q["evidence"]),
            tuple(q["evidence"]),
            q["category"],
            asked,
        )
        for q in raw["questions"]
    )
    return Conversation(raw["id"], tuple(sessions), questions)


def load(split: str) -> Dataset:
    data = read()
    convs = tuple(to_conversation(c) for c in data["conversations"] if c["split"] == split)
    return Dataset("handwritten", HANDWRITTEN, f"{data['description']}, split '{split}'", convs)


class Hits:
    """Per (strategy, question), the evidence recalled at each budget (an `evaluate` observer)."""

    def __init__(self) -> None:
        self.seen: dict[tuple[str, Question], dict[int, Sequence[bool]]] = defaultdict(dict)

    def observe(
        self, name: str, budget: int, q: Question, prompt: str | None, hits: Sequence[bool]
    ) -> None:
        self.seen[(name, q)][budget] = list(hits)

    def misses(self, name: str, budget: int, top: int) -> tuple[int, int]:
        """Evidence missed at `budget`: (shown at the `top` budget, shown at no budget)."""
        later = never = 0
        for (strategy, _), by_budget in self.seen.items():
            if strategy != name:
                continue
            for i, hit in enumerate(by_budget[budget]):
                if not hit:
                    if by_budget[top][i]:
                        later += 1
                    elif not any(h[i] for h in by_budget.values()):
                        never += 1
        return later, never


def summary(tallies: dict[tuple[str, int], Tally], hits: Hits, budgets: Sequence[int]) -> Any:
    out: dict[str, Any] = {}
    for budget in budgets:
        for name in SHOWN:
            t = tallies[(name, budget)]
            later, never = hits.misses(name, budget, max(budgets))
            out[f"{name}@{budget}"] = {
                "recall": round(statistics.fmean(t.recall), 3),
                "all": round(sum(t.complete) / len(t.complete), 3),
                **{c: round(statistics.fmean(t.by_category[c]), 3) for c in CATEGORIES},
                "missed_shown_at_top": later,
                "missed_at_no_budget": never,
                "chars": round(statistics.fmean(t.chars)),
            }
    return out


def report(results: dict[str, Any], budgets: Sequence[int]) -> None:
    splits = list(results)
    print(f"\n=== handwritten: evidence in context by category ({' | '.join(splits)})")
    cols = ["recall", "all", *CATEGORIES, "miss:top", "miss:none"]
    keys = ["recall", "all", *CATEGORIES, "missed_shown_at_top", "missed_at_no_budget"]
    print(f"{'strategy':<20}{'budget':>7}" + "".join(f"{c[:11]:>14}" for c in cols))
    for budget in budgets:
        for name in SHOWN:
            cells = ""
            for key in keys:
                values = [results[s][f"{name}@{budget}"][key] for s in splits]
                text = " | ".join(str(v) if isinstance(v, int) else f"{v:.2f}" for v in values)
                cells += f"{text:>14}"
            print(f"{name:<20}{budget:>7}{cells}")
    print("json: " + json.dumps(results, sort_keys=True))


async def run(
    args: argparse.Namespace, embedder: Embedder, evaluate: Evaluate, strategies: Sequence[str]
) -> None:
    """The `handwritten` part of `benchmarks.quality.main`: both splits unless `--split tune`
    (`--split holdout` means `blind`), then the side-by-side table."""
    budgets = args.budgets or list(BUDGETS)
    wanted = {"both": SPLITS, "tune": ("tune",), "holdout": ("blind",)}[args.split]
    results: dict[str, Any] = {}
    for split in wanted:
        full = load(split)
        dataset = subsample(
            full, max_sessions=args.sessions, max_questions=args.questions, seed=args.seed
        )
        questions = [q for c in dataset.conversations for q in c.questions]
        counts = Counter(q.category for q in questions)
        print(
            f"\n=== handwritten/{split}: {len(dataset.conversations)} conversations, "
            f"{sum(len(c.sessions) for c in dataset.conversations)} sessions, "
            f"{sum(c.message_count for c in dataset.conversations)} messages, "
            f"{len(questions)} questions ({sum(len(q.evidence) for q in questions)} gold); "
            + ", ".join(f"{c} {counts[c]}" for c in CATEGORIES)
        )
        hits = Hits()
        tallies = await evaluate(dataset, embedder, budgets, hits.observe)
        results[split] = summary(tallies, hits, budgets)
        if args.per_question:
            per_question(dataset, tallies, strategies, max(budgets))
    report(results, budgets)
