"""The embedded MongoDB-wire server as the stack runs it (`services.ops.stack.secantus_tuned`,
`--standalone`): the behaviours its two memoisations touch still hold, within one write
statement (an insert chunk, an update or delete) and across them, and it answers as a
standalone server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from bson import Regex
from pymongo import ASCENDING, AsyncMongoClient, IndexModel, UpdateOne
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import BulkWriteError, DuplicateKeyError, OperationFailure

from services.endpoints import Endpoints
from services.ops.stack.secantus_tuned import VERSION, tune
from services.ops.stack.servers import secantus_argv

pytestmark = pytest.mark.integration

Doc = dict[str, Any]


@pytest.fixture
async def db(stack: Endpoints, unique: Callable[[str], str]) -> AsyncIterator[AsyncDatabase[Doc]]:
    client: AsyncMongoClient[Doc] = AsyncMongoClient(stack.mongo_uri)
    name = unique("tuned")
    try:
        yield client[name]
    finally:
        await client.drop_database(name)
        await client.close()


def test_the_stack_runs_the_tuned_entry_point_standalone() -> None:
    argv = secantus_argv()
    assert argv[1:] == ["-m", "services.ops.stack.secantus_tuned", "--standalone"]
    assert tune() is True  # the pinned version: the memoisations apply
    assert VERSION == "0.7.0b3"
    from secantus import server

    assert getattr(server.dispatch, "_mnemostream_serial", False)  # one write at a time


async def test_concurrent_writers_on_one_collection_all_land(
    stack: Endpoints, db: AsyncDatabase[Doc]
) -> None:
    """Four clients (four server connections) update the same documents and insert into the
    same collection at once: their write commands queue at the server
    (`secantus_serial`), and every one of them is applied."""
    await db["counts"].insert_many([{"_id": i, "n": 0} for i in range(20)])
    clients: list[AsyncMongoClient[Doc]] = [AsyncMongoClient(stack.mongo_uri) for _ in range(4)]

    async def writer(k: int, client: AsyncMongoClient[Doc]) -> None:
        mine = client[db.name]
        for r in range(10):
            await mine["counts"].bulk_write(
                [UpdateOne({"_id": i}, {"$inc": {"n": 1}}) for i in range(20)], ordered=False
            )
            await mine["rows"].insert_many([{"w": k, "r": r, "i": i} for i in range(25)])
            await mine["counts"].find_one_and_update({"_id": 0}, {"$inc": {"m": 1}})

    try:
        await asyncio.gather(*(writer(k, c) for k, c in enumerate(clients)))
    finally:
        for client in clients:
            await client.close()
    counts = await db["counts"].find({}, {"n": 1, "m": 1}).sort("_id", ASCENDING).to_list(None)
    assert [c["n"] for c in counts] == [40] * 20
    assert counts[0]["m"] == 40
    assert await db["rows"].count_documents({}) == 4 * 10 * 25


async def test_it_answers_as_a_standalone_server(db: AsyncDatabase[Doc]) -> None:
    hello = await db.client.admin.command("hello")
    assert hello["isWritablePrimary"] is True
    assert "setName" not in hello  # no replica set, so no oplog to write per document


async def test_a_bad_geometry_is_refused_in_a_chunk_with_good_ones(db: AsyncDatabase[Doc]) -> None:
    places = db["places"]
    await places.create_indexes(
        [IndexModel([("at", "2dsphere")]), IndexModel([("name", ASCENDING)])]
    )
    good = {"type": "Point", "coordinates": [13.4, 52.5]}
    bad = {"type": "Point", "coordinates": [500.0, 52.5]}
    with pytest.raises(BulkWriteError) as refused:
        await places.insert_many(
            [
                {"_id": 1, "name": "a", "at": good},
                {"_id": 2, "name": "b", "at": bad},
                {"_id": 3, "name": "c", "at": good},
            ],
            ordered=False,
        )
    errors = refused.value.details["writeErrors"]
    assert [(e["index"], e["code"]) for e in errors] == [(1, 16572)]
    assert sorted(await places.distinct("_id")) == [1, 3]
    near = await places.find(
        {"at": {"$nearSphere": {"$geometry": good, "$maxDistance": 10}}}
    ).to_list(None)
    assert sorted(d["_id"] for d in near) == [1, 3]


async def test_a_collation_unique_index_holds_within_and_across_chunks(
    db: AsyncDatabase[Doc],
) -> None:
    people = db["people"]
    await people.create_index(
        [("name", ASCENDING)], unique=True, collation={"locale": "en", "strength": 2}
    )
    with pytest.raises(BulkWriteError) as refused:
        await people.insert_many([{"name": "Ada"}, {"name": "ada"}], ordered=False)
    assert [e["code"] for e in refused.value.details["writeErrors"]] == [11000]
    with pytest.raises(DuplicateKeyError):
        await people.insert_one({"name": "ADA"})
    await people.insert_one({"name": "Grace"})
    assert await people.count_documents({}) == 2


async def test_an_index_made_between_two_inserts_applies_to_the_second(
    db: AsyncDatabase[Doc],
) -> None:
    col = db["keys"]
    await col.insert_many([{"k": 1}, {"k": 2}])
    await col.create_index([("k", ASCENDING)], unique=True)
    with pytest.raises(DuplicateKeyError):
        await col.insert_one({"k": 1})
    await col.drop_index("k_1")
    await col.insert_one({"k": 1})  # and its drop, too
    assert await col.count_documents({"k": 1}) == 2


async def test_updates_that_make_an_index_multikey_are_found_by_its_elements(
    db: AsyncDatabase[Doc],
) -> None:
    col = db["tagged"]
    await col.create_index([("tags", ASCENDING)])
    await col.insert_many([{"_id": n, "tags": "x"} for n in range(1, 5)])
    # the first statement flags the index multikey; the later ones must index every element
    await col.bulk_write(
        [
            UpdateOne({"_id": 1}, {"$set": {"tags": ["a", "b"]}}),
            UpdateOne({"_id": 2}, {"$set": {"tags": ["b", "c"]}}),
            UpdateOne({"_id": 3}, {"$set": {"tags": "c"}}),
        ],
        ordered=False,
    )
    await col.update_many({"_id": {"$gte": 4}}, {"$set": {"tags": ["d", "c"]}})

    async def ids(value: str) -> list[int]:
        found = await col.find({"tags": value}).hint("tags_1").to_list(None)
        return sorted(d["_id"] for d in found)

    assert await ids("b") == [1, 2]
    assert await ids("c") == [2, 3, 4]
    assert await ids("x") == []  # the old entries went with the old values


async def test_unique_and_partial_indexes_hold_for_updates(db: AsyncDatabase[Doc]) -> None:
    col = db["slots"]
    await col.create_index(
        [("k", ASCENDING)], unique=True, partialFilterExpression={"live": True}, name="live_k"
    )
    await col.insert_many([{"_id": 1, "k": 1, "live": True}, {"_id": 2, "k": 1, "live": False}])
    with pytest.raises(BulkWriteError) as refused:
        await col.bulk_write(
            [
                UpdateOne({"_id": 2}, {"$set": {"live": True}}),  # now inside the filter: taken
                UpdateOne({"_id": 1}, {"$set": {"note": "kept"}}),
            ],
            ordered=False,
        )
    assert [e["index"] for e in refused.value.details["writeErrors"]] == [0]
    await col.update_one({"_id": 2}, {"$set": {"k": 2, "live": True}})
    await col.update_one({"_id": 1}, {"$set": {"live": False}})  # leaves the index
    live = await col.find({"live": True, "k": {"$gte": 0}}).hint("live_k").to_list(None)
    assert [(d["_id"], d["k"]) for d in live] == [(2, 2)]
    with pytest.raises(DuplicateKeyError):
        await col.update_one({"_id": 1}, {"$set": {"live": True, "k": 2}})


async def test_an_index_made_between_two_updates_applies_to_the_second(
    db: AsyncDatabase[Doc],
) -> None:
    col = db["later"]
    await col.insert_many([{"_id": 1, "k": 1}, {"_id": 2, "k": 2}])
    await col.update_one({"_id": 2}, {"$set": {"k": 3}})
    await col.create_index([("k", ASCENDING)], unique=True)
    with pytest.raises(DuplicateKeyError):
        await col.update_one({"_id": 2}, {"$set": {"k": 1}})
    await col.update_one({"_id": 2}, {"$set": {"k": 4}})
    found = await col.find({"k": 4}).hint("k_1").to_list(None)
    assert [d["_id"] for d in found] == [2]


async def test_deletes_take_their_index_entries_with_them(db: AsyncDatabase[Doc]) -> None:
    col = db["gone"]
    await col.create_index([("g", ASCENDING)])
    await col.insert_many([{"_id": n, "g": n % 3} for n in range(9)])
    assert (await col.delete_many({"g": 1})).deleted_count == 3
    await col.delete_one({"_id": 0})
    kept = await col.find({"g": {"$gte": 0}}).hint("g_1").to_list(None)
    assert sorted(d["_id"] for d in kept) == [2, 3, 5, 6, 8]
    await col.insert_one({"_id": 1, "g": 1})  # its old entry does not shadow the new one
    assert [d["_id"] for d in await col.find({"g": 1}).hint("g_1").to_list(None)] == [1]


async def test_profiler_levels_take_effect_at_once(db: AsyncDatabase[Doc]) -> None:
    await db["seen"].insert_one({"n": 1})
    assert (await db.command("profile", -1))["was"] == 0
    await db.command("profile", 2)
    assert (await db.command("profile", -1))["was"] == 2
    await db["seen"].find_one({"n": 1})
    recorded = await db["system.profile"].count_documents({"ns": f"{db.name}.seen"})
    assert recorded >= 1
    await db.command("profile", 0)
    assert (await db.command("profile", -1))["was"] == 0
    await db["seen"].find_one({"n": 1})
    after = await db["system.profile"].count_documents({"ns": f"{db.name}.seen"})
    assert after == recorded


# The update path's cuts (`services.ops.stack.secantus_updates`): only the index entries that
# change are rewritten, a filter's `_id` is looked up first, the update copies less. An
# equality find re-checks what it fetches, so an index entry left stale shows in the ORDER a
# hinted range scan returns documents in (a document whose key moved from 1 to 7 still comes
# out between the 0s and the 2s): `scan` returns that order.


async def scan(col: Any, query: Doc, index: str, key: Callable[[Doc], Any]) -> list[Any]:
    return [key(d) for d in await col.find(query).hint(index).to_list(None)]


async def test_an_update_rewrites_the_entries_that_change_and_keeps_the_others(
    db: AsyncDatabase[Doc],
) -> None:
    col = db["kept"]
    await col.create_index([("a", ASCENDING), ("b", ASCENDING)], name="ab")
    await col.create_index([("meta.s", ASCENDING)], name="s")
    await col.create_index([("c", ASCENDING)], name="c_x", partialFilterExpression={"kind": "x"})
    await col.insert_many(
        [
            {"_id": n, "a": n, "b": "b", "c": n, "kind": "x", "meta": {"s": f"s{n}"}}
            for n in range(6)
        ]
    )
    await col.update_many({}, {"$set": {"note": "n", "meta.other": 1}})  # no key changes
    await col.update_one({"_id": 0}, {"$set": {"a": 9}})
    await col.update_one({"_id": 1}, {"$set": {"b": "a", "meta.s": "s9"}})
    await col.update_one({"_id": 2}, {"$set": {"kind": "y"}})  # leaves the partial index
    await col.update_one({"_id": 3}, {"$set": {"c": 30}})

    ab = await scan(col, {"a": {"$gte": 0}}, "ab", lambda d: (d["a"], d["b"], d["_id"]))
    assert ab == sorted(ab)
    assert [i for *_, i in ab] == [1, 2, 3, 4, 5, 0]
    s = await scan(col, {"meta.s": {"$gte": ""}}, "s", lambda d: d["meta"]["s"])
    assert s == ["s0", "s2", "s3", "s4", "s5", "s9"]
    c = await scan(col, {"c": {"$gte": 0}, "kind": "x"}, "c_x", lambda d: (d["c"], d["_id"]))
    assert c == [(0, 0), (1, 1), (4, 4), (5, 5), (30, 3)]
    await col.update_one({"_id": 2}, {"$set": {"kind": "x", "c": 20}})  # and comes back
    c = await scan(col, {"c": {"$gte": 0}, "kind": "x"}, "c_x", lambda d: d["_id"])
    assert c == [0, 1, 4, 5, 2, 3]


async def test_a_unique_key_an_update_keeps_stays_taken_and_one_it_changes_is_freed(
    db: AsyncDatabase[Doc],
) -> None:
    col = db["claims"]
    await col.create_index([("u", ASCENDING)], unique=True)
    await col.insert_one({"_id": 1, "u": 1})
    await col.update_one({"_id": 1}, {"$set": {"note": "kept"}})
    with pytest.raises(DuplicateKeyError):
        await col.insert_one({"_id": 2, "u": 1})
    await col.update_one({"_id": 1}, {"$set": {"u": 5}})
    await col.insert_one({"_id": 2, "u": 1})  # the old value is free
    with pytest.raises(DuplicateKeyError):
        await col.insert_one({"_id": 3, "u": 5})
    with pytest.raises(DuplicateKeyError):  # a refused update leaves the entries as they were
        await col.update_one({"_id": 2}, {"$set": {"u": 5, "note": "lost"}})
    assert await scan(col, {"u": {"$gte": 0}}, "u_1", lambda d: (d["u"], d["_id"])) == [
        (1, 2),
        (5, 1),
    ]
    assert "note" not in (await col.find_one({"_id": 2}) or {})


async def test_many_documents_updated_at_once_move_only_their_changed_entries(
    db: AsyncDatabase[Doc],
) -> None:
    col = db["many"]
    await col.create_index([("g", ASCENDING)])
    await col.insert_many([{"_id": n, "g": n % 3, "tags": [n]} for n in range(300)])
    await col.update_many({"g": 1}, {"$set": {"g": 7}, "$push": {"tags": -1}})
    await col.update_many({}, {"$set": {"note": "y"}})
    g = await scan(col, {"g": {"$gte": 0}}, "g_1", lambda d: d["g"])
    assert g == [0] * 100 + [2] * 100 + [7] * 100
    assert (await col.find_one({"_id": 1}) or {})["tags"] == [1, -1]
    assert (await col.find_one({"_id": 0}) or {})["tags"] == [0]  # not pushed: not matched


async def test_a_filter_on_id_and_plain_fields_matches_the_whole_filter(
    db: AsyncDatabase[Doc],
) -> None:
    col = db["guarded"]
    await col.create_index([("kind", ASCENDING), ("rev", ASCENDING)])
    await col.insert_many(
        [{"_id": 1, "kind": "a", "rev": 3}, {"_id": 2, "kind": "b"}, {"_id": 3, "kind": "a"}]
    )
    assert await col.find_one({"_id": 1, "rev": 2}) is None
    assert (await col.find_one({"_id": 1, "kind": "a", "rev": 3}) or {}).get("_id") == 1
    found = await col.find({"_id": {"$in": [1, 2, 3, 4]}, "kind": "a"}).to_list(None)
    assert sorted(d["_id"] for d in found) == [1, 3]
    absent = {"$exists": False}
    assert (await col.update_one({"_id": 2, "rev": absent}, {"$set": {"rev": 1}})).modified_count
    assert not (await col.update_one({"_id": 1, "rev": absent}, {"$set": {"rev": 9}})).matched_count
    # a guarded upsert whose guard fails collides on `_id` (the working buffer's retry signal)
    with pytest.raises(DuplicateKeyError):
        await col.update_one({"_id": 1, "rev": 2}, {"$inc": {"rev": 1}}, upsert=True)
    await col.update_one({"_id": 1, "rev": 3}, {"$inc": {"rev": 1}}, upsert=True)
    assert (await col.find_one({"_id": 1}) or {})["rev"] == 4
    kinds = await scan(col, {"kind": {"$gte": ""}}, "kind_1_rev_1", lambda d: (d["kind"], d["_id"]))
    assert kinds == [("a", 3), ("a", 1), ("b", 2)]


async def test_in_over_strings_matches_as_the_comparisons_did(db: AsyncDatabase[Doc]) -> None:
    """`$in` by set membership (`services.ops.stack.secantus_matching`) where every element
    and value is a plain string; the original comparisons everywhere else."""
    col = db["members"]
    await col.insert_many(
        [
            {"_id": "a", "v": "x"},
            {"_id": "b", "v": ["x", "y"]},  # an array: matched by its elements
            {"_id": "c", "v": 1},
            {"_id": "d", "v": 1.0},
            {"_id": "e"},  # no field: matched by null
            {"_id": "f", "v": "X"},
        ]
    )

    async def ids(query: Doc, **options: Any) -> list[str]:
        return sorted(d["_id"] for d in await col.find(query, **options).to_list(None))

    assert await ids({"_id": {"$in": ["a", "c", "zz"]}}) == ["a", "c"]
    assert await ids({"v": {"$in": ["x", "q"]}}) == ["a", "b"]
    assert await ids({"v": {"$in": ["y"]}}) == ["b"]
    assert await ids({"v": {"$in": [1]}}) == ["c", "d"]  # numbers compare across types
    assert await ids({"v": {"$in": ["x", 1]}}) == ["a", "b", "c", "d"]
    assert await ids({"v": {"$in": [None, "nothing"]}}) == ["e"]
    assert await ids({"v": {"$in": [Regex("^X$")]}}) == ["f"]
    assert await ids({"v": {"$nin": ["x", "X"]}}) == ["c", "d", "e"]
    folded = {"collation": {"locale": "en", "strength": 2}}
    assert await ids({"v": {"$in": ["x"]}}, **folded) == ["a", "b", "f"]
    with pytest.raises(OperationFailure):
        await ids({"v": {"$in": "x"}})
    with pytest.raises(OperationFailure):
        await ids({"v": {"$in": ["x", {"$gt": "a"}]}})
    # the same filter for many documents in one statement, and an update by `_id` list
    await col.insert_many([{"_id": f"n{n}", "v": f"s{n}"} for n in range(300)])
    wanted = [f"n{n}" for n in range(0, 300, 3)]
    assert await ids({"_id": {"$in": wanted}, "v": {"$in": [f"s{n}" for n in range(150)]}}) == (
        sorted(wanted[:50])
    )
    done = await col.update_many({"_id": {"$in": wanted}}, {"$set": {"seen": True}})
    assert done.modified_count == 100
    assert await col.count_documents({"seen": True}) == 100


async def test_an_update_shape_remembered_still_refuses_and_applies_its_own_values(
    db: AsyncDatabase[Doc],
) -> None:
    col = db["shapes"]
    await col.insert_one({"_id": 1, "a": {"b": 0}, "n": 0})
    for _ in range(2):  # the second time from the remembered check
        with pytest.raises(OperationFailure) as refused:
            await col.update_one({"_id": 1}, {"$set": {"a": 2}, "$inc": {"a.b": 1}})
        assert refused.value.code == 40
        with pytest.raises(OperationFailure) as unknown:
            await col.update_one({"_id": 1}, {"$nope": {"a": 1}})
        assert unknown.value.code == 9
    for n in range(1, 4):  # one shape, new values each time
        await col.update_one({"_id": 1}, {"$set": {"a.b": n * 10}, "$inc": {"n": n}})
    assert await col.find_one({"_id": 1}) == {"_id": 1, "a": {"b": 30}, "n": 6}
