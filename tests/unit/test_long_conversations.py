"""The generated `long` dataset of the quality benchmark (`benchmarks.long_conversations`):
deterministic per seed, gold evidence that exists and states what is asked, temporal answers
that match the evidence's date (resolved here independently of the generator), and splits that
share no conversation."""

from __future__ import annotations

import re
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from itertools import pairwise

import pytest

from benchmarks.long_conversations import CATEGORIES, LongConversation, generate
from benchmarks.long_report import answer_in, to_dataset

MONTHS = [
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december",
]  # fmt: skip
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
NUMBERS = {"a": 1, "two": 2, "three": 3, "four": 4, "ten": 10}


@pytest.fixture(scope="module")
def splits() -> dict[str, tuple[LongConversation, ...]]:
    return {split: generate(split) for split in ("tune", "holdout")}


def said_on(timestamp_ms: int) -> date:
    return datetime.fromtimestamp(timestamp_ms / 1000, UTC).date()


def resolve(text: str, day: date) -> date:
    """The day a dated line's time phrase points at, said on `day`."""
    t = text.lower()
    if m := re.search(r"\bon (\d{1,2}) ([a-z]+) (\d{4})\b", t):
        return date(int(m[3]), MONTHS.index(m[2]) + 1, int(m[1]))
    if m := re.search(r"\bon ([a-z]+) (\d{1,2}), (\d{4})\b", t):
        return date(int(m[3]), MONTHS.index(m[1]) + 1, int(m[2]))
    if "the day before yesterday" in t:
        return day - timedelta(days=2)
    if "yesterday" in t:
        return day - timedelta(days=1)
    if re.search(r"\b(today|this morning)\b", t):
        return day
    if m := re.search(r"\b(a|two|three|four|ten) (days?|weeks?) ago\b", t):
        return day - timedelta(days=NUMBERS[m[1]] * (7 if m[2].startswith("week") else 1))
    if m := re.search(r"\blast (" + "|".join(WEEKDAYS) + r")\b", t):
        back = (day.weekday() - WEEKDAYS.index(m[1])) % 7 or 7
        return day - timedelta(days=back)
    raise AssertionError(f"no time phrase in {text!r}")


def test_the_same_seed_gives_the_same_conversations() -> None:
    assert generate("tune", 2) == generate("tune", 2)
    assert generate("tune", 1)[0] == generate("tune", 3)[0]


def test_splits_share_no_conversation(splits: dict[str, tuple[LongConversation, ...]]) -> None:
    def texts(conv: LongConversation) -> tuple[str, ...]:
        return tuple(m.content for s in conv.sessions for m in s.messages)

    tune, holdout = splits["tune"], splits["holdout"]
    assert {c.id for c in tune}.isdisjoint(c.id for c in holdout)
    assert {texts(c) for c in tune}.isdisjoint(texts(c) for c in holdout)
    assert {c.sessions[0].messages[0].timestamp_ms for c in tune}.isdisjoint(
        c.sessions[0].messages[0].timestamp_ms for c in holdout
    )


def test_shape_of_a_split(splits: dict[str, tuple[LongConversation, ...]]) -> None:
    for convs in splits.values():
        assert len(convs) == 6
        names = [name for c in convs for name in c.speakers]
        assert len(set(names)) == len(names)
        counts = Counter(q.category for c in convs for q in c.questions)
        assert counts == {"single-hop": 24, "multi-hop": 24, "temporal": 36, "open-domain": 24}
        assert set(counts) == set(CATEGORIES)
        for conv in convs:
            assert 25 <= len(conv.sessions) <= 35
            assert 400 <= len(conv.messages()) <= 600
            first = said_on(conv.sessions[0].messages[0].timestamp_ms)
            last = said_on(conv.sessions[-1].messages[0].timestamp_ms)
            assert 180 <= (last - first).days <= 550
            for session in conv.sessions:
                times = [m.timestamp_ms for m in session.messages]
                assert times == sorted(times)
                assert len({said_on(t) for t in times}) == 1
                speakers = [m.content.split(": ", 1)[0] for m in session.messages]
                assert all(a != b for a, b in pairwise(speakers))
                for m, speaker in zip(session.messages, speakers, strict=True):
                    assert m.role == ("user" if speaker == conv.speakers[0] else "assistant")


def test_every_gold_message_exists_and_states_what_is_asked(
    splits: dict[str, tuple[LongConversation, ...]],
) -> None:
    for convs in splits.values():
        for conv in convs:
            messages = conv.messages()
            for q in conv.questions:
                assert q.evidence_ids
                assert len(q.keys) == len(q.evidence_ids)
                texts = [messages[i].content for i in q.evidence_ids]  # KeyError if missing
                for key, text in zip(q.keys, texts, strict=True):
                    assert key.lower() in text.lower(), (q.text, key, text)
                speaker = next(name for name in conv.speakers if name in q.text)
                assert all(t.startswith(f"{speaker}: ") for t in texts), q.text
                if q.category in ("single-hop", "multi-hop"):
                    assert q.answer in texts[-1]
                if q.category == "multi-hop":
                    assert len(set(q.evidence_ids)) == 2
                if q.category == "open-domain":
                    assert q.answer in ("Yes", "No")


def test_temporal_answers_are_the_evidence_dates(
    splits: dict[str, tuple[LongConversation, ...]],
) -> None:
    dated = 0
    for convs in splits.values():
        for conv in convs:
            messages = conv.messages()
            for q in conv.questions:
                if q.category != "temporal":
                    continue
                days = [
                    resolve(messages[i].content, said_on(messages[i].timestamp_ms))
                    for i in q.evidence_ids
                ]
                if q.answer_day is not None:
                    dated += 1
                    assert days == [q.answer_day]
                    d = q.answer_day
                    assert q.answer == f"{d.day} {MONTHS[d.month - 1].title()} {d.year}"
                    assert q.absolute == answer_in(messages[q.evidence_ids[0]].content, d)
                else:
                    assert len(days) == 2
                    gap = (days[1] - days[0]).days
                    assert q.answer == (f"{gap} days" if gap > 1 else "1 day")
                    assert days[0] < days[1]
    assert dated == 48


def test_the_dataset_form_keeps_ids_texts_and_answers() -> None:
    convs = generate("holdout", 1)
    dataset, gold = to_dataset("holdout", convs)
    [conv] = dataset.conversations
    assert conv.sessions == convs[0].sessions
    assert len(gold) == len(conv.questions) == 18
    texts = convs[0].messages()
    for q in conv.questions:
        assert q.evidence == tuple(texts[i].content for i in q.evidence_ids)
        assert q.asked_at_ms > conv.sessions[-1].messages[-1].timestamp_ms
        assert gold[q].text == q.text


def test_a_date_is_in_a_prompt_in_any_accepted_rendering() -> None:
    day = date(2023, 5, 7)
    for text in ("on 2023-05-07", "7 May 2023", "may 7, 2023", "(May 7 2023)"):
        assert answer_in(text, day), text
    for text in ("17 May 2023", "May 7", "2023-05-17", "7 May 2024", None):
        assert not answer_in(text, day), text
