"""`tenant_groups`: the archive job's grouping of an agent's rows — one group per full tenant
scope (agent, user, mode, hai), so rows written with a mode or a hai id are archived too and
users are never mixed (§16.6)."""

from __future__ import annotations

import numpy as np

from engine.records import MemoryRow, ScopeFields
from engine.upkeep.archives import build_archive, tenant_groups

AGENT = "0xAgent"
START, END = 1_000, 2_000


def row(vid: str, user: str | None, mode: str | None, hai: str | None, at: int) -> MemoryRow:
    return MemoryRow(
        vid,
        ScopeFields(AGENT, user, f"thread-{vid}", mode, hai),
        f"note {vid}",
        np.ones(4, dtype=np.float32) / 2,
        "test",
        "fact",
        at,
    )


def test_rows_are_grouped_by_full_tenant_scope_threads_merged() -> None:
    rows = [
        row("g2", "ana", "global", None, 1_500),
        row("n1", "ana", None, None, 1_100),
        row("g1", "ana", "global", None, 1_000),
        row("l1", "ana", "local", "hai-1", 1_999),
        row("b1", "ben", "global", None, 1_200),
        row("late", "ana", "global", None, END),  # the window is half-open
        row("early", "ana", None, None, START - 1),
    ]

    groups = tenant_groups(rows, START, END)

    assert [(s.user_address, s.mode, s.hai_id, [r.vector_id for r in g]) for s, g in groups] == [
        ("ana", None, None, ["n1"]),
        ("ana", "global", None, ["g2", "g1"]),
        ("ana", "local", "hai-1", ["l1"]),
        ("ben", "global", None, ["b1"]),
    ]
    assert all(scope.thread_id is None for scope, _ in groups)
    for scope, group in groups:  # every group is a valid archive of its own tenant
        payload = build_archive(group, scope=scope, start=START, end=END, created_at=END)
        assert payload is not None
        assert payload.record.scope == scope


def test_no_rows_in_the_window_no_groups() -> None:
    assert tenant_groups([row("x", "ana", "global", None, END + 1)], START, END) == []
