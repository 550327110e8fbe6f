"""Retention as a decision (issue 31), the pure parts: which topics keep every record, what a
broker's answer means, what a truncated log loses, and how `/readyz` says it."""

from __future__ import annotations

import json

import pytest

from schemas import topics
from services.ops.replay import SOURCE_TOPICS, truncations
from services.settings import Settings
from services.stream.health import ready_response
from services.stream.retention import TopicRetention, parse_retention, report


def test_every_topic_replay_reads_is_a_source_and_keeps_every_record_by_default() -> None:
    assert set(SOURCE_TOPICS) <= topics.SOURCES
    for topic in topics.PARTITIONS:
        expected = {"source": -1, "derived": 7 * topics.DAY_MS, "requests": topics.DAY_MS}
        assert topics.default_retention_ms(topic) == expected[topics.retention_class(topic)]
    assert topics.retention_class(topics.TURNS) == "source"
    assert topics.retention_class(topics.CHANGED) == "derived"
    assert topics.retention_class(topics.reply_topic("c1")) == "requests"


def test_the_settings_choose_each_class(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMOSTREAM_SOURCE_RETENTION_MS", "1234")
    monkeypatch.setenv("MNEMOSTREAM_REQUEST_RETENTION_MS", "-1")
    kafka = Settings().kafka
    assert kafka.retention_ms(topics.FACTS) == 1234
    assert kafka.retention_ms(topics.SEARCH) == -1
    assert kafka.retention_ms(topics.DLQ) == 7 * topics.DAY_MS


def test_a_retention_below_minus_one_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMOSTREAM_SOURCE_RETENTION_MS", "-2")
    with pytest.raises(ValueError, match="source_retention_ms"):
        Settings()


def test_the_brokers_answer_is_read_and_only_dropping_topics_are_reported() -> None:
    entries = [
        ("cleanup.policy", "delete"),
        ("retention.ms", "604800000"),
        ("retention.bytes", "-1"),
    ]
    weekly = parse_retention(topics.TURNS, entries)
    assert weekly == TopicRetention(topics.TURNS, 604_800_000, -1)
    unset = parse_retention(topics.FACTS, [("cleanup.policy", "delete")])
    kept = parse_retention(topics.REMEMBER, [("retention.ms", "-1")])
    assert kept.keeps_everything
    assert not weekly.keeps_everything
    assert not unset.keeps_everything  # the broker's default applies: not known to keep all
    assert not TopicRetention(topics.KNOWLEDGE, -1, 10_000).keeps_everything

    lines = report([weekly, unset, kept])
    assert len(lines) == 2
    assert "memory.turns.v1 keeps records for 604800000 ms" in lines[0]
    assert "broker's default retention" in lines[1]
    assert all("replay rebuilds only what it still holds" in line for line in lines)


def test_a_truncated_partition_is_named_and_a_whole_log_is_not() -> None:
    assert truncations({(topics.TURNS, 0): 0, (topics.FACTS, 3): 0}) == []
    [line] = truncations({(topics.TURNS, 0): 0, (topics.TURNS, 5): 120})
    assert line.startswith("memory.turns.v1 partition 5 starts at offset 120")
    assert "cannot be rebuilt" in line


def test_readyz_lists_notes_and_stays_ready() -> None:
    ready = ready_response([], ["source topic memory.turns.v1 keeps records for 5 ms: …"])
    assert ready.status_code == 200
    assert json.loads(bytes(ready.body)) == {
        "status": "ready",
        "missing": [],
        "notes": ["source topic memory.turns.v1 keeps records for 5 ms: …"],
    }
    assert json.loads(bytes(ready_response([]).body)) == {"status": "ready", "missing": []}
