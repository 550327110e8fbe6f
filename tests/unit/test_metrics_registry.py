"""Metric registration (one registry per `Metrics`), the lag arithmetic and the outcome probe."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from services.stream.metrics import EventProbe, Metrics, extraction_timer, group_lag, partition_lag

OURS = {
    "mnemostream_events_processed",
    "mnemostream_event_failures",
    "mnemostream_event_retries",
    "mnemostream_dead_letters",
    "mnemostream_handler_duration_seconds",
    "mnemostream_cache_requests",
    "mnemostream_extraction_duration_seconds",
    "mnemostream_consumer_lag",
    "mnemostream_consumer_lag_refresh_failures",
    "mnemostream_batch_records_handed_back",
    "mnemostream_batch_commits_refused",
}


def families(registry: CollectorRegistry) -> set[str]:
    return {family.name for family in registry.collect()}


def value(metrics: Metrics, name: str, **labels: str) -> float:
    found = metrics.registry.get_sample_value(name, labels)
    return 0.0 if found is None else found


@pytest.mark.parametrize(
    ("end", "committed", "beginning", "lag"),
    [
        (10, 4, 0, 6),  # behind by six
        (10, 10, 0, 0),  # caught up
        (10, -1, 0, 10),  # nothing committed: starts at the beginning (earliest)
        (10, -1, 7, 3),  # ... which is past 0 after retention
        (0, -1, 0, 0),  # an empty partition
        (5, 9, 0, 0),  # a commit ahead of a stale end offset is never negative lag
    ],
)
def test_partition_lag_is_end_minus_next_offset_to_read(
    end: int, committed: int, beginning: int, lag: int
) -> None:
    assert partition_lag(end, committed, beginning) == lag


def test_group_lag_covers_every_partition_with_an_end_offset() -> None:
    ends = {("t", 0): 5, ("t", 1): 3, ("u", 0): 2}
    done = {("t", 0): 5, ("t", 1): -1}  # u[0] has no commit entry at all
    assert group_lag(ends, done, {("t", 1): 1}) == {("t", 0): 0, ("t", 1): 2, ("u", 0): 2}


def test_every_metric_is_registered_in_the_process_registry() -> None:
    metrics = Metrics()
    names = families(metrics.registry)
    assert names >= OURS
    # FastStream's middleware shares the registry
    assert "faststream_received_messages" in names
    assert "faststream_published_messages" in names


def test_two_processes_worth_of_metrics_do_not_share_a_counter() -> None:
    one, two = Metrics(), Metrics()
    one.cache_lookup("context", hit=True)
    assert value(one, "mnemostream_cache_requests_total", request="context", result="hit") == 1
    assert value(two, "mnemostream_cache_requests_total", request="context", result="hit") == 0


def test_a_given_registry_is_used() -> None:
    registry = CollectorRegistry()
    assert Metrics(registry).registry is registry
    assert families(registry) >= OURS


def test_the_probe_counts_each_outcome_once() -> None:
    metrics = Metrics()
    labels = {"group": "g", "topic": "t"}
    ok = EventProbe(metrics, "g", "t")
    ok.processed()
    flaky = EventProbe(metrics, "g", "t")
    flaky.retrying("DependencyFailed")
    flaky.retrying("DependencyFailed")
    flaky.dead_lettered("DependencyFailed")
    assert value(metrics, "mnemostream_events_processed_total", **labels) == 1
    assert value(metrics, "mnemostream_event_retries_total", **labels) == 2
    failure = {**labels, "error_type": "DependencyFailed"}
    assert value(metrics, "mnemostream_event_failures_total", **failure) == 3
    assert value(metrics, "mnemostream_dead_letters_total", **failure) == 1
    # one latency observation per message, whatever its outcome
    assert value(metrics, "mnemostream_handler_duration_seconds_count", **labels) == 2


def test_without_metrics_the_probe_and_timer_do_nothing() -> None:
    probe = EventProbe(None, "g", "t")
    probe.processed()
    probe.retrying("X")
    probe.dead_lettered("X")
    with extraction_timer(None, "rules"):
        pass


def test_extraction_is_timed_by_extractor() -> None:
    metrics = Metrics()
    with extraction_timer(metrics, "rules"):
        pass
    count = "mnemostream_extraction_duration_seconds_count"
    assert value(metrics, count, extractor="rules") == 1
    assert value(metrics, count, extractor="llm") == 0


def test_lag_is_set_per_partition() -> None:
    metrics = Metrics()
    metrics.set_lag("g", {("t", 0): 4, ("t", 1): 0})
    assert value(metrics, "mnemostream_consumer_lag", group="g", topic="t", partition="0") == 4
    assert value(metrics, "mnemostream_consumer_lag", group="g", topic="t", partition="1") == 0
    metrics.set_lag("g", {("t", 0): 0})
    assert value(metrics, "mnemostream_consumer_lag", group="g", topic="t", partition="0") == 0
