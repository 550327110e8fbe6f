"""`TurnWindows` on a reader over a list of turn documents (the MongoDB path:
tests/contract/test_transcript_layout.py)."""

from __future__ import annotations

from typing import Any

from engine.adapters.mongo.turn_windows import TurnWindows, Window, order, weight

Doc = dict[str, Any]


class Thread:
    def __init__(self) -> None:
        self.docs: list[Doc] = []
        self.reads: list[Doc] = []

    def add(self, n: int, text: str = "hi") -> None:
        self.docs.append(
            {
                "_id": f"T|t{n}",
                "thread": "T",
                "at": 1_000 * n,
                "seq": n,
                "messages": [{"content": text}],
                "vector": [1.0],
            }
        )

    def head(self) -> Doc:
        return {"_id": "T", "createdAt": 0, "turns": len(self.docs)}

    async def read(self, query: Doc, newest: int | None) -> list[Doc]:
        self.reads.append(query)
        if "_id" in query:
            return [d for d in self.docs if d["_id"] in query["_id"]["$in"]]
        since = query.get("at", {}).get("$gte", -1)
        found = sorted((d for d in self.docs if d["at"] >= since), key=lambda d: d["at"])
        return found if newest is None else found[-newest:]


async def test_a_window_follows_its_thread_and_reads_only_the_new_turns() -> None:
    thread, windows = Thread(), TurnWindows()
    for n in range(500):
        thread.add(n)
    assert len(await windows.newest(thread.head(), 100, thread.read)) == 100
    thread.add(500)
    got = await windows.newest(thread.head(), 100, thread.read)
    assert sorted(d["_id"] for d in got) == sorted(f"T|t{n}" for n in range(401, 501))
    assert (windows.loads, windows.deltas) == (1, 1)
    assert thread.reads[-1] == {
        "thread": "T",
        "at": {"$gte": 499_000 - 2_000},
    }  # its newest, less the margin


async def test_a_window_larger_than_the_budget_is_not_kept() -> None:
    thread, windows = Thread(), TurnWindows(max_bytes=10_000)
    for n in range(50):
        thread.add(n, "x" * 1_000)
    for _ in range(2):
        assert len(await windows.newest(thread.head(), 50, thread.read)) == 50
    assert (windows.loads, windows.deltas) == (2, 0)  # read whole each time, no error


async def test_a_head_without_a_count_is_read_whole() -> None:
    thread, windows = Thread(), TurnWindows()
    thread.add(1)
    head = {"_id": "T", "createdAt": 0}  # written before heads counted their turns
    for _ in range(2):
        await windows.newest(head, 10, thread.read)
    assert (windows.loads, windows.deltas) == (0, 0)
    assert thread.reads == [{"thread": "T"}, {"thread": "T"}]


async def test_a_window_keeps_thread_order_and_its_byte_estimate_through_deltas() -> None:
    """The window's order and bytes are running state (no sort or sum over the window per
    delta): after deltas that append, refill a vector, and place a turn stamped inside the
    margin before held ones, both equal what a fresh window computes."""
    thread, windows = Thread(), TurnWindows()
    for n in range(40):
        thread.add(n, "y" * n)
    await windows.newest(thread.head(), 30, thread.read)
    thread.add(40, "z" * 7)
    thread.docs[-2] = {**thread.docs[-2], "messages": [{"content": "longer " * 9}]}
    late = {**thread.docs[-1], "_id": "T|late", "at": 39_500, "seq": 0, "messages": []}
    thread.docs.append(late)  # stamped between two held turns, inside the margin
    got = await windows.newest(thread.head(), 30, thread.read)

    window = windows._windows["T"]
    fresh = Window(0, len(thread.docs), 30, list(window.docs.values()), 0.0)
    assert list(window.docs) == [str(d["_id"]) for d in sorted(got, key=order)]
    assert "T|late" in window.docs
    assert len(window.docs) == 30
    assert window.nbytes == fresh.nbytes == sum(weight(d) for d in got)
    assert windows.deltas == 1


def _turn(n: int, content: str) -> Doc:
    return {
        "_id": f"T|t{n}",
        "messages": [
            {"role": "user", "content": content, "timestamp": n, "turnId": f"t{n}"},
            {"role": "assistant", "content": "ok", "timestamp": n + 1, "turnId": f"t{n}"},
        ],
    }


def test_a_held_turn_document_is_read_into_messages_once() -> None:
    windows, doc = TurnWindows(), _turn(1, "I cycle along the canal")
    first = windows.messages(doc)
    assert [(m.role, m.content, m.timestamp, m.turn_id) for m in first] == [
        ("user", "I cycle along the canal", 1, "t1"),
        ("assistant", "ok", 2, "t1"),
    ]
    assert windows.messages(doc) is first  # the same object: not read again


def test_a_newer_copy_of_a_turn_is_read_anew_not_served_from_the_old_one() -> None:
    """Kept by the document object, never by its `_id`: an erased or rewritten turn's
    new copy shows what it now says."""
    windows = TurnWindows()
    old = windows.messages(_turn(1, "my address is 4 Elm Road"))
    new = windows.messages(_turn(1, "[erased]"))
    assert old[0].content == "my address is 4 Elm Road"
    assert new[0].content == "[erased]"


def test_the_messages_kept_read_are_bounded_by_the_windows_budget() -> None:
    windows = TurnWindows(max_bytes=5_000)
    first = _turn(0, "x" * 1_000)
    kept = windows.messages(first)
    for n in range(1, 20):  # ~1.3 KB each: the first is let go
        windows.messages(_turn(n, "y" * 1_000))
    again = windows.messages(first)
    assert again == kept
    assert again is not kept
