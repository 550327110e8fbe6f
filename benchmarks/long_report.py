"""`python -m benchmarks.quality --dataset long`: the generated long conversations
(`benchmarks.long_conversations`) through the quality benchmark, split by split, reported side
by side.

Each split is its own run of `benchmarks.quality.evaluate` (own in-memory stores). Every
message becomes a message of the pipeline's turn form: the first speaker's lines have role
`user`, the second's `assistant`, and the speaker's name leads the text ("Melanie: ...").

Reported per strategy and budget, per split: evidence in context (the recall rule of
`benchmarks.scoring`) overall and per category, and for the temporal questions answered by a
date, *answer in context*: the share whose gold date appears in the prompt in one of the
renderings of `long_facts.date_renderings` ("2023-05-07", "7 May 2023", "May 7, 2023",
"May 7 2023"; case-insensitive, not inside a longer number), split by whether the evidence
line writes the date out (`absolute`) or says "yesterday", "last Saturday" (`relative`, where
the date is only in the message's timestamp). The date may come from any line of the prompt,
so `with gold` also requires the gold message to be recalled.
"""

from __future__ import annotations

import argparse
import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import date

from benchmarks.datasets import Conversation, Dataset, Package, Question, subsample
from benchmarks.long_conversations import (
    CATEGORIES,
    SPLIT_SEEDS,
    LongConversation,
    LongQuestion,
    generate,
)
from benchmarks.long_facts import date_renderings
from benchmarks.scoring import Tally, normalise, pct, per_question
from engine.ports import Embedder

SPLITS = tuple(SPLIT_SEEDS)
DATED = ("all", "absolute", "relative", "with gold")
BUDGETS = (900, 1800, 4000)
GENERATED = Package("benchmarks.long_conversations", "generated", "project code", "", "")
"""Stands in for the source package of the downloaded datasets: this one is generated."""

Observer = Callable[[str, int, Question, str | None, Sequence[bool]], None]
"""Called by `evaluate` with (strategy, budget, question, prompt, gold recalled per message)."""
Evaluate = Callable[
    [Dataset, Embedder, Sequence[int], Observer], Awaitable[dict[tuple[str, int], Tally]]
]


def to_dataset(
    split: str, conversations: Sequence[LongConversation]
) -> tuple[Dataset, dict[Question, LongQuestion]]:
    """The split in `benchmarks.datasets` form, and each question's gold answer."""
    gold: dict[Question, LongQuestion] = {}
    out = []
    for conv in conversations:
        texts = {m.id: m.content for s in conv.sessions for m in s.messages}
        questions = []
        for lq in conv.questions:
            q = Question(
                lq.text,
                tuple(texts[i] for i in lq.evidence_ids),
                lq.evidence_ids,
                lq.category,
                conv.asked_at_ms,
            )
            gold[q] = lq
            questions.append(q)
        out.append(Conversation(conv.id, conv.sessions, tuple(questions)))
    description = (
        f"generated long conversations, split '{split}' (seed {SPLIT_SEEDS[split]}): two named "
        "speakers each"
    )
    return Dataset("long", GENERATED, description, tuple(out)), gold


def answer_in(prompt: str | None, day: date) -> bool:
    """Whether one of the renderings of `day` is in `prompt` (not inside a longer number)."""
    if not prompt:
        return False
    text = normalise(prompt)
    return any(
        re.search(rf"(?<!\d){re.escape(r.lower())}(?!\d)", text) for r in date_renderings(day)
    )


@dataclass(slots=True)
class Answers:
    """What `Observer` saw beyond the tallies: per (strategy, budget), the questions with all
    gold recalled per category, and the date answers in context per phrasing."""

    gold: dict[Question, LongQuestion]
    complete: dict[tuple[str, int, str], list[bool]] = field(
        default_factory=lambda: defaultdict(list)
    )
    dated: dict[tuple[str, int, str], list[bool]] = field(default_factory=lambda: defaultdict(list))

    def observe(
        self, name: str, budget: int, q: Question, prompt: str | None, hits: Sequence[bool]
    ) -> None:
        self.complete[(name, budget, q.category)].append(all(hits))
        lq = self.gold[q]
        if lq.answer_day is not None:
            found = answer_in(prompt, lq.answer_day)
            self.dated[(name, budget, "all")].append(found)
            self.dated[(name, budget, "absolute" if lq.absolute else "relative")].append(found)
            self.dated[(name, budget, "with gold")].append(found and all(hits))


def describe(
    split: str, dataset: Dataset, full: Dataset, gold: dict[Question, LongQuestion]
) -> None:
    convs, whole = dataset.conversations, full.conversations
    questions = [q for c in convs for q in c.questions]
    days = [gold[q] for q in questions if gold[q].answer_day]
    print(f"\n=== long/{split}: {dataset.description}")
    print(
        f"sample: {len(convs)} conversations, "
        f"{sum(len(c.sessions) for c in convs)}/{sum(len(c.sessions) for c in whole)} sessions, "
        f"{sum(c.message_count for c in convs)}/{sum(c.message_count for c in whole)} messages, "
        f"{len(questions)}/{sum(len(c.questions) for c in whole)} questions "
        f"({sum(len(q.evidence) for q in questions)} gold messages; {len(days)} answered by a "
        f"date, {sum(d.absolute for d in days)} of them written out in the line)"
    )
    categories = Counter(q.category for q in questions)
    print("categories: " + ", ".join(f"{k} {categories[k]}" for k in CATEGORIES))


def _share(values: Sequence[bool]) -> str:
    return f"{sum(values) / len(values):.2f}" if values else "-"


def report(
    results: dict[str, tuple[dict[tuple[str, int], Tally], Answers]],
    strategies: Sequence[str],
    budgets: Sequence[int],
) -> None:
    """Three tables, splits side by side: evidence in context; per category; date answers."""
    splits = list(results)
    names = " | ".join(f"{s:^27}" for s in splits)
    print(f"\n=== long: evidence in context ({' | '.join(splits)})")
    print(f"{'':<27}{names}")
    cols = "".join(f"{'recall':>7}{'all':>5}{'>=1':>5}{'chars':>6}{'p50ms':>6}  " for _ in splits)
    print(f"{'strategy':<20}{'budget':>7}{cols}")
    for budget in budgets:
        for name in strategies:
            cells = ""
            for split in splits:
                t = results[split][0][(name, budget)]
                n = len(t.recall)
                cells += (
                    f"{statistics.fmean(t.recall):>7.2f}{sum(t.complete) / n:>5.2f}"
                    f"{sum(r > 0 for r in t.recall) / n:>5.2f}{statistics.fmean(t.chars):>6.0f}"
                    f"{pct(t.latency_ms, 50):>6.0f}  "
                )
            print(f"{name:<20}{budget:>7}{cells}")
    print("\nper category: mean recall / share with all gold, " + " | ".join(splits))
    print(f"{'strategy':<20}{'budget':>7}" + "".join(f"{c:>22}" for c in CATEGORIES))
    for budget in budgets:
        for name in strategies:
            cells = ""
            for c in CATEGORIES:
                parts = []
                for split in splits:
                    tally, answers = results[split][0][(name, budget)], results[split][1]
                    recall = tally.by_category[c]
                    whole = answers.complete[(name, budget, c)]
                    mean = f"{statistics.fmean(recall):.2f}" if recall else "-"
                    parts.append(f"{mean}/{_share(whole)}")
                cells += f"{' | '.join(parts):>22}"
            print(f"{name:<20}{budget:>7}{cells}")
    print(
        "\ntemporal questions answered by a date: share whose gold date is in the prompt "
        "(all; written out in the line; relative phrase; all and the gold message recalled too), "
        + " | ".join(splits)
    )
    print(f"{'strategy':<20}{'budget':>7}" + "".join(f"{k:>14}" for k in DATED))
    for budget in budgets:
        for name in strategies:
            cells = "".join(
                f"{' | '.join(_share(results[s][1].dated[(name, budget, k)]) for s in splits):>14}"
                for k in DATED
            )
            print(f"{name:<20}{budget:>7}{cells}")


async def run(
    args: argparse.Namespace,
    embedder: Embedder,
    evaluate: Evaluate,
    strategies: Sequence[str],
) -> None:
    """The `long` part of `benchmarks.quality.main`: the split(s) of `args.split`, then the
    side-by-side tables. `--sessions`/`--questions`/`--seed` subsample as for the others."""
    budgets = args.budgets or list(BUDGETS)
    splits = ("tune", "holdout") if args.split == "both" else (args.split,)
    results: dict[str, tuple[dict[tuple[str, int], Tally], Answers]] = {}
    for split in splits:
        full, gold = to_dataset(split, generate(split, args.conversations))
        dataset = subsample(
            full, max_sessions=args.sessions, max_questions=args.questions, seed=args.seed
        )
        describe(split, dataset, full, gold)
        answers = Answers(gold)
        tallies = await evaluate(dataset, embedder, budgets, answers.observe)
        results[split] = (tallies, answers)
        if args.per_question:
            per_question(dataset, tallies, strategies, max(budgets))
    report(results, strategies, budgets)
