"""`benchmarks.relations`: the scoring, and the LLM path driven through a local server
that speaks the chat-completions protocol."""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

from benchmarks.relations import FIXTURE, LinkTally, Tally, link, load_cases, run
from engine.ingest.extraction.types import ExtractedRelation
from tests.support.http_server import Provider, Received, Reply, Responder

CASES = load_cases()


def _case_of(request: Received) -> Any:
    turn = request.json()["messages"][-1]["content"]
    return next(c for c in CASES if all(" ".join(m.content.split()) in turn for m in c.messages))


def _reply(relations: list[dict[str, str]]) -> Reply:
    entities = [
        {"name": n, "type": "thing", "summary": ""}
        for n in {r[k] for r in relations for k in ("source", "target")} - {"user"}
    ]
    content = json.dumps({"facts": [], "entities": entities, "relations": relations})
    return Reply(
        body={"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}
    )


def _args(url: str) -> argparse.Namespace:
    return argparse.Namespace(
        fixture=FIXTURE, split="both", per_case=False, llm_url=url, llm_model="m", llm_key=""
    )


def test_the_fixture_has_both_splits_and_silent_turns() -> None:
    for split in ("tune", "blind"):
        chosen = [c for c in CASES if c.split == split]
        assert len(chosen) >= 30
        assert any(not c.relations for c in chosen)  # turns that must give none


def test_matching_folds_case_and_a_leading_the() -> None:
    tally = Tally()
    extra, missed = tally.add(
        [link("The Acme Corp", "based_in", "berlin")], [link("acme corp", "BASED_IN", "Berlin")]
    )
    assert (extra, missed) == (set(), set())
    assert tally.figures()["recall"] == 1.0


def test_a_named_user_is_the_node_user_whichever_way_the_annotator_wrote_it(
    tmp_path: Any,
) -> None:
    # older cases name the user-role speaker ("Sven"), newer ones write "user"
    turn = [{"role": "user", "name": "Sven", "content": "I moved to Gothenburg"}]
    items = [
        {"id": "by-name", "split": "tune", "messages": turn, "relations": [
            {"source": "Sven", "type": "LIVES_IN", "target": "Gothenburg"},
            {"source": "Ines", "type": "MANAGER_OF", "target": "sven"},
        ]},
        {"id": "as-user", "split": "tune", "messages": turn, "relations": [
            {"source": "user", "type": "LIVES_IN", "target": "Gothenburg"},
            {"source": "Ines", "type": "MANAGER_OF", "target": "user"},
        ]},
    ]  # fmt: skip
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    by_name, as_user = load_cases(path)
    assert by_name.relations == as_user.relations
    assert by_name.relations[0] == ("user", "LIVES_IN", "gothenburg")
    assert by_name.relations[1] == ("ines", "MANAGER_OF", "user")


@pytest.mark.parametrize("oracle", [True, False])
async def test_the_llm_path_is_scored_on_what_the_server_answers(
    provider: Callable[[Responder], Provider], oracle: bool
) -> None:
    def respond(request: Received) -> Reply:
        case = _case_of(request)
        wanted = [{"source": s, "type": t, "target": o} for s, t, o in case.relations]
        return _reply(wanted if oracle else [])

    server = provider(respond)
    figures = await run(_args(server.url + "/v1"))
    llm = figures["extractors"]["llm"]
    assert server.received  # the extractor really called the server
    for split in ("tune", "blind"):
        assert llm[split]["recall"] == (1.0 if oracle else 0.0)
        assert llm[split]["silent_ok"] == llm[split]["silent"]
    assert "rules" in figures["extractors"]


def test_a_gold_relation_is_linked_only_through_a_relation_with_evidence() -> None:
    tally = LinkTally()
    gold = [link("user", "WORKS_AT", "Initech"), link("Initech", "BASED_IN", "Austin")]
    produced = [
        ExtractedRelation("user", "MENTIONS", "Initech", "I'm employed by Initech."),
        ExtractedRelation("Austin", "RELATED", "initech"),  # no sentence: not a path shown
        ExtractedRelation("Initech", "RELATED", "Texas", "Initech's office is in Texas."),
    ]
    assert tally.add(produced, gold) == {link("Initech", "BASED_IN", "Austin")}
    tally.add([ExtractedRelation("user", "MENTIONS", "Orbis", "If I joined Orbis…")], [])
    assert tally.figures() == {
        "linked": 1,
        "linked_recall": 0.5,
        "links": 4,
        "links_on_gold": 2,
        "links_in_silent": 1,
    }


def test_the_rules_score_a_linked_recall_beside_the_typed_figures() -> None:
    args = argparse.Namespace(
        fixture=FIXTURE, split="tune", per_case=False, llm_url=None, llm_model="m", llm_key=""
    )
    figures = asyncio.run(run(args))["extractors"]["rules"]["tune"]
    assert figures["linked_recall"] > figures["recall"]


def test_held_out_splits_are_scored_from_their_own_files_and_holdout4_totals_only(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # stand-in files (the real holdout4 is scored, never read, by the lead)
    paths = {}
    for split in ("holdout", "holdout2", "holdout3", "holdout4"):
        item = {"id": f"{split}-case", "split": split, "relations": [
            {"source": "user", "type": "OWNS", "target": "Quibble"}],
            "messages": [{"role": "user", "content": "Nothing to see here."}]}  # fmt: skip
        paths[split] = tmp_path / f"{split}.json"
        paths[split].write_text(json.dumps([item]), encoding="utf-8")

    def args(split: str) -> argparse.Namespace:
        return argparse.Namespace(
            fixture=FIXTURE, holdout=paths["holdout"], holdout2=paths["holdout2"],
            holdout3=paths["holdout3"], holdout4=paths["holdout4"], split=split,
            per_case=True, llm_url=None,
            llm_model="m", llm_key="", no_typer=True,
        )  # fmt: skip

    for split in ("holdout", "holdout2", "holdout3", "holdout4"):
        figures = asyncio.run(run(args(split)))
        assert figures["fixture"] == f"{split}.json"
        assert list(figures["extractors"]["rules"]) == [split]
        assert figures["extractors"]["rules"][split]["expected"] == 1
    err = capsys.readouterr().err
    assert "holdout-case" in err  # holdout and holdout2 are spent: their misses may be read
    assert "holdout2-case" in err
    assert "holdout3-case" in err  # spent in stop 46
    assert "holdout4-case" not in err  # no per-case lines for holdout4
    both = asyncio.run(run(args("both")))["extractors"]["rules"]
    assert list(both) == ["tune", "blind"]  # the default never scores a held-out split
