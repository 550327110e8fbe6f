"""The Mongo shape of a user's read widened to the agent's knowledge (issue 17 §4): the
user's rows or the agent's user-less knowledge rows, each branch an index scan of `memory`'s
tenant index; the Atlas pre-filter says the same in its own dialect."""

from __future__ import annotations

from engine.adapters.atlas_vectors import ATLAS_FILTER_FIELDS, atlas_prefilter
from engine.adapters.mongo.documents import tenant_query
from engine.adapters.mongo.schema import INDEXES, MEMORY
from engine.scoping import SHARED_SOURCES, TenantFilter

ALICE = TenantFilter("0xA", "alice", shared_sources=SHARED_SOURCES)


def test_a_widened_read_is_the_users_rows_or_the_agents_user_less_knowledge() -> None:
    assert tenant_query(ALICE) == {
        "agentWallet": "0xA",
        "$or": [
            {"agentWallet": "0xA", "userAddress": "alice"},
            {"agentWallet": "0xA", "userAddress": None, "source": {"$in": ["knowledge"]}},
        ],
    }
    # an agent's own read admits its user-less rows already: nothing to widen
    assert tenant_query(TenantFilter("0xA", None, shared_sources=SHARED_SOURCES)) == {
        "agentWallet": "0xA",
        "userAddress": None,
    }
    assert tenant_query(ALICE.exact()) == {"agentWallet": "0xA", "userAddress": "alice"}


def test_each_branch_is_a_prefix_of_the_memory_tenant_index() -> None:
    keys = [name for name, _ in INDEXES[MEMORY][0].document["key"].items()]
    assert keys[:3] == ["agentWallet", "userAddress", "source"]
    for branch in tenant_query(ALICE)["$or"]:
        assert list(branch) == keys[: len(branch)]


def test_the_atlas_prefilter_widens_the_user_clause_only() -> None:
    prefilter = atlas_prefilter(ALICE, sources=None)
    [agent, user, status] = prefilter["$and"]
    assert agent == {"agentWallet": {"$eq": "0xA"}}
    assert user == {
        "$or": [
            {"userAddress": {"$eq": "alice"}},
            {"$and": [{"userAddress": {"$eq": None}}, {"source": {"$in": ["knowledge"]}}]},
        ]
    }
    assert status == {"metadata.status": {"$nin": ["deleted", "superseded"]}}
    assert {"userAddress", "source"} <= set(ATLAS_FILTER_FIELDS)
