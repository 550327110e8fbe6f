"""The throughput benchmark (`benchmarks.throughput`) imports, parses its options, and its
pure helpers hold their contracts; no stack is started."""

from __future__ import annotations

import random

from benchmarks.sealing import cpu_summary, summary
from benchmarks.throughput import parser, pct
from benchmarks.throughput_store import _embedded_filter
from benchmarks.throughput_text import (
    exchange,
    marker_word,
    scopes,
    turn_bodies,
    turn_body,
    turn_texts,
)
from engine.ingest.message_units import unit_texts
from schemas.inputs import turn_recorded


def test_the_defaults_are_the_issue_15_run() -> None:
    args = parser().parse_args([])
    assert (args.turns, args.processes, args.rate, args.seconds) == (20000, 1, 500, 10)
    assert (args.json, args.skip_replay, args.skip_ready) == (False, False, False)
    assert args.agents * args.users == 50
    assert (args.sealing_rounds, args.sealing_turns) == (2, 2000)  # issue 31: in every run


def test_the_turn_bodies_are_made_before_the_clock_and_cycle_the_threads() -> None:
    threads = scopes("b", 2, 3)
    bodies = turn_bodies(threads, 14, seed=4)
    assert [scope for scope, _ in bodies] == [threads[n % 6] for n in range(14)]
    assert [body["threadId"] for _, body in bodies] == [s.thread for s, _ in bodies]
    times = [int(body["occurredAt"]) for _, body in bodies]
    assert times == sorted(times)
    assert len(set(times)) == 14  # one turn per millisecond
    again = turn_bodies(threads, 14, seed=4)
    assert [b["userMessage"] for _, b in again] == [b["userMessage"] for _, b in bodies]
    assert turn_bodies(threads, 14, seed=5)[0][1]["userMessage"] != bodies[0][1]["userMessage"]
    assert all(turn_recorded(body).thread_id == scope.thread for scope, body in bodies)


def test_the_options_parse() -> None:
    args = parser().parse_args(
        [
            *("--turns", "2000", "--seconds", "4", "--processes", "2", "--rate", "250"),
            *("--json", "--skip-replay", "--skip-ready"),
            *("--sealing-rounds", "0", "--sealing-turns", "500"),
        ]
    )
    assert (args.turns, args.seconds, args.processes, args.rate) == (2000, 4, 2, 250)
    assert (args.json, args.skip_replay, args.skip_ready) == (True, True, True)
    assert (args.sealing_rounds, args.sealing_turns) == (0, 500)


def test_the_sealing_summary_is_the_ratio_of_the_medians() -> None:
    found = summary([100.0, 300.0, 200.0], [90.0, 150.0, 250.0])
    assert (found["plain_per_s"], found["sealed_per_s"]) == (200.0, 150.0)
    assert found["sealed_vs_plain"] == 0.75
    assert found["sealed_rounds_per_s"] == [90.0, 150.0, 250.0]


def test_the_sealing_cpu_ratio_is_the_plain_median_over_the_sealed_one() -> None:
    found = cpu_summary([2.0, 4.0, 3.0], [3.3, 5.0, 4.0])
    assert (found["plain_cpu_ms_per_turn"], found["sealed_cpu_ms_per_turn"]) == (3.0, 4.0)
    assert found["sealed_vs_plain_cpu"] == 0.75  # a CPU-bound machine keeps 75 % of its rate


def test_turn_texts_are_seeded_varied_and_of_realistic_length() -> None:
    assert turn_texts(7, 50) == turn_texts(7, 50)
    sample = turn_texts(7, 500)
    assert len(set(sample)) == 500
    said = [unit_texts(text) for text in sample]  # as the embedding stage splits a turn
    assert all(len(units) == 2 for units in said)
    assert all(200 <= len(" ".join(units)) <= 400 for units in said)


def test_every_generated_turn_is_a_valid_post_turn() -> None:
    rng = random.Random(1)
    threads = scopes("t", 5, 10)
    assert len({(s.agent, s.user, s.thread) for s in threads}) == 50
    event = turn_recorded(turn_body(threads[3], *exchange(rng, 3), 1_700_000_000_000))
    assert event.thread_id == threads[3].thread


def test_marker_words_are_not_in_the_turn_texts() -> None:
    rng = random.Random(2)
    words = {marker_word(rng) for _ in range(200)}
    corpus = " ".join(turn_texts(2, 200)).lower()
    assert len(words) > 190
    assert not any(word in corpus for word in words)


def test_the_embedded_filter_is_the_stored_pending_form() -> None:
    assert _embedded_filter() == {"embeddingDim": {"$gt": 0}}


def test_percentiles_of_nothing_are_none() -> None:
    assert pct([], 50) is None
    assert pct([3.0, 1.0, 2.0], 50) == 2.0
