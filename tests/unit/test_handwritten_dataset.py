"""The hand-written quality dataset (issue 32) is well formed: every evidence id names a message
of its own conversation and its text matches, the categories are the five known ones, both
splits are present, and every multi-hop question has 2+ evidence messages in 2+ sessions. No
retrieval and no timing: only the JSON and its loader."""

from __future__ import annotations

from collections import Counter

from benchmarks import handwritten


def test_every_evidence_message_exists_in_its_conversation() -> None:
    for conv in handwritten.read()["conversations"]:
        texts = {m["id"]: m["text"] for s in conv["sessions"] for m in s["messages"]}
        for q in conv["questions"]:
            assert q["evidence"], q["question"]
            assert [texts[i] for i in q["evidence"]] == q["evidence_text"], q["question"]
            assert q["answer"].strip(), q["question"]


def test_shape_categories_and_splits() -> None:
    data = handwritten.read()
    convs = data["conversations"]
    assert len(convs) >= 8
    assert Counter(c["split"] for c in convs) == {"tune": len(convs) // 2, "blind": len(convs) // 2}
    questions = [q for c in convs for q in c["questions"]]
    assert len(questions) >= 80
    assert {q["category"] for q in questions} == set(handwritten.CATEGORIES)
    for conv in convs:
        assert 4 <= len(conv["sessions"]) <= 8, conv["id"]
        assert len(conv["speakers"]) == 2
        dates = [s["date"] for s in conv["sessions"]]
        assert dates == sorted(dates), conv["id"]
        for s in conv["sessions"]:
            assert 6 <= len(s["messages"]) <= 20, (conv["id"], s["id"])
            assert {m["speaker"] for m in s["messages"]} <= set(conv["speakers"].values())


def test_multi_hop_spans_sessions() -> None:
    for conv in handwritten.read()["conversations"]:
        session_of = {m["id"]: s["id"] for s in conv["sessions"] for m in s["messages"]}
        for q in conv["questions"]:
            if q["category"] == "multi_hop":
                assert len(q["evidence"]) >= 2, q["question"]
                assert len({session_of[i] for i in q["evidence"]}) >= 2, q["question"]


def test_loader_gives_both_splits_with_gold_in_the_messages() -> None:
    for split in handwritten.SPLITS:
        dataset = handwritten.load(split)
        assert dataset.conversations
        for conv in dataset.conversations:
            contents = {m.id: m.content for s in conv.sessions for m in s.messages}
            for q in conv.questions:
                assert q.evidence == tuple(contents[i] for i in q.evidence_ids)
                assert q.asked_at_ms > max(
                    m.timestamp_ms for s in conv.sessions for m in s.messages
                )
