"""The OpenAI-compatible extractor against a real local HTTP server speaking the
chat-completions protocol (reference §7.3), including the deliberate difference: failures
raise `DependencyFailed` instead of silently yielding zero facts."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from engine.adapters.openai_extractor import OpenAICompatibleExtractor, relation_type
from engine.errors import DependencyFailed
from engine.ingest.extraction.types import (
    ExtractedEntity,
    ExtractedFact,
    ExtractedRelation,
    Extraction,
    ExtractionPolicy,
    Extractor,
    TurnText,
)
from tests.support.http_server import Provider, Reply, Responder, closed_port

MODEL = "test-model-mini"
KEY = "sk-test"  # a fake key for the stub server
POLICY = ExtractionPolicy()  # 5 facts, confidence >= 0.6, <= 240 chars
TURN = [
    TurnText("user", "Hi!   I moved to\n\nPorto last month, and my sister Ana lives here too."),
    TurnText("assistant", "Nice, Porto is lovely. How is the move going?"),
]


def extractor(
    client: httpx.AsyncClient, base_url: str, timeout: float = 2.0
) -> OpenAICompatibleExtractor:
    return OpenAICompatibleExtractor(
        client, base_url=base_url, api_key=KEY, model=MODEL, timeout=timeout
    )


def completion(content: str | None) -> Reply:
    """A chat-completions reply whose first choice's message says `content`."""
    return Reply(
        body={
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1_750_000_000,
            "model": MODEL,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
        }
    )


def answer(payload: dict[str, Any]) -> Reply:
    return completion(json.dumps(payload))


def fact(
    text: str, type_: str = "context", confidence: float = 0.9, **extra: Any
) -> dict[str, Any]:
    return {"fact": text, "type": type_, "confidence": confidence, **extra}


# --- the request ------------------------------------------------------------------------------


async def test_sends_a_chat_completions_request_in_json_mode(
    provider: Callable[[Responder], Provider], client: httpx.AsyncClient
) -> None:
    server = provider(lambda _: answer({"facts": []}))
    policy = ExtractionPolicy(max_facts=3, min_confidence=0.7, max_chars=180)
    messages = [
        TurnText("system", "You are a helpful agent."),  # not part of the turn block
        *(TurnText("user" if i % 2 == 0 else "assistant", f"message {i}") for i in range(7)),
        TurnText("tool", "tool output"),  # neither user nor assistant
        TurnText("user", "   "),  # blank
        TurnText("User", "x" * 1300),  # role case is ignored; cut to 1200 chars
    ]

    await extractor(client, server.url).extract(messages, policy)

    (request,) = server.received
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["content-type"] == "application/json"
    body = request.json()
    assert body["model"] == MODEL
    assert body["response_format"] == {"type": "json_object"}
    assert body["temperature"] == 0.1
    assert body["max_tokens"] == 600
    system, user = body["messages"]
    assert system["role"] == "system"
    assert user["role"] == "user"
    # the limits of the policy, the six types, the slot and graph parts, and the word JSON
    # (OpenAI's JSON mode rejects requests whose messages never mention JSON)
    for expected in ("At most 3 facts", "at most 180 characters", "below 0.7", "JSON"):
        assert expected in system["content"]
    for word in ("preference", "identity", "context", "skill", "relationship", "event"):
        assert word in system["content"]
    for word in ('"slot"', '"entities"', '"relations"', '"user"'):
        assert word in system["content"]
    # the last 6 user/assistant messages with text, oldest first, as `role: text` lines
    expected_lines = [
        "user: message 2",
        "assistant: message 3",
        "user: message 4",
        "assistant: message 5",
        "user: message 6",
        "user: " + "x" * 1200,
    ]
    assert "Conversation turn:\n" + "\n".join(expected_lines) + "\n\n" in user["content"]
    assert "message 1" not in user["content"]
    assert "helpful agent" not in user["content"]
    assert "tool output" not in user["content"]
    assert "JSON" in user["content"]


async def test_turn_text_is_whitespace_collapsed(
    provider: Callable[[Responder], Provider], client: httpx.AsyncClient
) -> None:
    server = provider(lambda _: answer({"facts": []}))
    await extractor(client, server.url).extract(TURN, POLICY)
    user = server.received[0].json()["messages"][1]["content"]
    assert "user: Hi! I moved to Porto last month, and my sister Ana lives here too." in user


async def test_a_base_url_ending_in_v1_is_not_doubled(
    provider: Callable[[Responder], Provider], client: httpx.AsyncClient
) -> None:
    server = provider(lambda _: answer({"facts": []}))
    await extractor(client, f"{server.url}/v1/").extract(TURN, POLICY)
    assert server.received[0].path == "/v1/chat/completions"


async def test_no_authorization_header_without_a_key(
    provider: Callable[[Responder], Provider], client: httpx.AsyncClient
) -> None:
    server = provider(lambda _: answer({"facts": []}))
    local = OpenAICompatibleExtractor(client, base_url=server.url, api_key="", model=MODEL)
    await local.extract(TURN, POLICY)
    assert "authorization" not in server.received[0].headers


async def test_a_turn_without_text_makes_no_call(
    provider: Callable[[Responder], Provider], client: httpx.AsyncClient
) -> None:
    server = provider(lambda _: answer({"facts": [fact("The user lives in Porto.")]}))
    turn = [TurnText("user", " \n "), TurnText("system", "be nice")]
    assert await extractor(client, server.url).extract(turn, POLICY) == Extraction()
    assert server.received == []


def test_implements_the_port_and_is_named_after_the_model(client: httpx.AsyncClient) -> None:
    port: Extractor = extractor(client, "http://127.0.0.1:1")
    assert port.name == f"llm:{MODEL}"


# --- parsing a good reply ---------------------------------------------------------------------


async def test_a_good_reply_yields_facts_entities_and_relations(
    provider: Callable[[Responder], Provider], client: httpx.AsyncClient
) -> None:
    payload = {
        "facts": [
            fact("  The user lives in Porto.  ", "Context", 0.95, slot=" Residence "),
            fact("The user has a sister named Ana.", "relationship", 0.9, slot=None),
            fact("The user moved last month.", "event", 1.7),  # clamped to 1
        ],
        "entities": [
            {"name": " Porto ", "type": "Place", "summary": "City where the user lives."},
            {"name": "Ana", "type": "person"},
            {"name": "porto", "type": "city"},  # same name again: the first spelling wins
            {"name": "Acme"},  # no type: "other"
            {"name": ""},  # malformed: dropped
            {"name": "n" * 121, "type": "thing"},  # name too long: dropped
            "Lisbon",  # not an object: dropped
        ],
        "relations": [
            {"source": "user", "type": "lives in", "target": "porto"},
            {"source": "Ana", "type": "sisterOf", "target": "User"},
            {"source": "user", "type": "LIVES_IN", "target": "Porto"},  # duplicate
            {"source": "user", "type": "KNOWS", "target": "Bob"},  # Bob is not an entity
            {"source": "user", "type": "  ", "target": "Ana"},  # no usable type
            {"source": "user", "target": "Ana"},  # no type
            ["user", "KNOWS", "Ana"],  # not an object
        ],
    }
    server = provider(lambda _: answer(payload))

    result = await extractor(client, server.url).extract(TURN, POLICY)

    assert result.facts == [
        ExtractedFact("The user lives in Porto.", "context", 0.95, "residence"),
        ExtractedFact("The user has a sister named Ana.", "relationship", 0.9, None),
        ExtractedFact("The user moved last month.", "event", 1.0, None),
    ]
    assert result.entities == [
        ExtractedEntity("Porto", "place", "City where the user lives."),
        ExtractedEntity("Ana", "person", ""),
        ExtractedEntity("Acme", "other", ""),
    ]
    assert result.relations == [
        ExtractedRelation("user", "LIVES_IN", "Porto"),
        ExtractedRelation("Ana", "SISTER_OF", "user"),
    ]
    assert len(server.received) == 1


async def test_limits_are_applied_and_the_first_n_are_kept_in_reply_order(
    provider: Callable[[Responder], Provider], client: httpx.AsyncClient
) -> None:
    policy = ExtractionPolicy(max_facts=3, min_confidence=0.6, max_chars=60)
    payload = {
        "facts": [
            fact("The user is called Rui.", "identity", 0.61, slot="name"),
            fact("The user might like jazz.", "preference", 0.59),  # below min: dropped
            fact("The user " + "really " * 10 + "likes tea.", "preference", 0.99),  # > 60 chars
            fact("The user owns a boat.", "possession", 0.95),  # unknown type: dropped
            fact("The user uses Python.", None, 0.9),  # no type: dropped (no default)
            fact("   ", "skill", 0.9),  # blank: dropped
            {"type": "skill", "confidence": 0.9},  # no text: dropped
            fact("The user knows Rust.", "skill", "0.9"),  # not a number: confidence 0
            fact("The user speaks Portuguese.", "skill", 0.7),
            fact("The user works at Acme.", "context", 0.8, slot="employer"),
            fact("The user runs marathons.", "skill", 1.0),  # 4th survivor: past max_facts
            "The user is tall.",  # not an object
        ]
    }
    server = provider(lambda _: answer(payload))

    result = await extractor(client, server.url).extract(TURN, policy)

    # the first three survivors in reply order, not the three most confident
    assert result.facts == [
        ExtractedFact("The user is called Rui.", "identity", 0.61, "name"),
        ExtractedFact("The user speaks Portuguese.", "skill", 0.7, None),
        ExtractedFact("The user works at Acme.", "context", 0.8, "employer"),
    ]


async def test_a_fact_of_exactly_max_chars_and_min_confidence_is_kept(
    provider: Callable[[Responder], Provider], client: httpx.AsyncClient
) -> None:
    policy = ExtractionPolicy(max_facts=5, min_confidence=0.6, max_chars=40)
    text = "The user likes tea." + "!" * 21  # 40 chars
    server = provider(lambda _: answer({"facts": [fact(text, "preference", 0.6)]}))
    result = await extractor(client, server.url).extract(TURN, policy)
    assert result.facts == [ExtractedFact(text, "preference", 0.6)]


async def test_entities_and_relations_are_capped_at_twenty(
    provider: Callable[[Responder], Provider], client: httpx.AsyncClient
) -> None:
    names = [f"Place {i}" for i in range(25)]
    payload = {
        "facts": [],
        "entities": [{"name": n, "type": "place"} for n in names],
        "relations": [{"source": "user", "type": "VISITED", "target": n} for n in names],
    }
    server = provider(lambda _: answer(payload))
    result = await extractor(client, server.url).extract(TURN, POLICY)
    assert [e.name for e in result.entities] == names[:20]
    assert [r.target for r in result.relations] == names[:20]


async def test_missing_or_non_list_entities_and_relations_read_as_none(
    provider: Callable[[Responder], Provider], client: httpx.AsyncClient
) -> None:
    payload = {"facts": [fact("The user lives in Porto.")], "entities": "Porto"}
    server = provider(lambda _: answer(payload))
    result = await extractor(client, server.url).extract(TURN, POLICY)
    assert result == Extraction(facts=[ExtractedFact("The user lives in Porto.", "context", 0.9)])


@pytest.mark.parametrize(
    "wrap",
    [
        pytest.param(lambda j: f"Here are the facts:\n{j}\nHope this helps!", id="prose"),
        pytest.param(lambda j: f"```json\n{j}\n```", id="code-fence"),
    ],
)
async def test_json_wrapped_in_text_is_read_from_the_brace_span(
    provider: Callable[[Responder], Provider],
    client: httpx.AsyncClient,
    wrap: Callable[[str], str],
) -> None:
    content = wrap(json.dumps({"facts": [fact("The user lives in Porto.", slot="residence")]}))
    server = provider(lambda _: completion(content))
    result = await extractor(client, server.url).extract(TURN, POLICY)
    assert result.facts == [ExtractedFact("The user lives in Porto.", "context", 0.9, "residence")]


async def test_content_given_as_text_parts_is_joined(
    provider: Callable[[Responder], Provider], client: httpx.AsyncClient
) -> None:
    text = json.dumps({"facts": [fact("The user lives in Porto.")]})
    reply = completion(None)
    assert isinstance(reply.body, dict)
    reply.body["choices"][0]["message"]["content"] = [
        {"type": "text", "text": text[:10]},
        {"type": "text", "text": text[10:]},
    ]
    server = provider(lambda _: reply)
    result = await extractor(client, server.url).extract(TURN, POLICY)
    assert [f.text for f in result.facts] == ["The user lives in Porto."]


async def test_an_empty_facts_list_is_a_valid_empty_extraction(
    provider: Callable[[Responder], Provider], client: httpx.AsyncClient
) -> None:
    server = provider(lambda _: answer({"facts": []}))
    assert await extractor(client, server.url).extract(TURN, POLICY) == Extraction()


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("lives in", "LIVES_IN"),
        ("livesIn", "LIVES_IN"),
        ("sister-of", "SISTER_OF"),
        ("  WORKS_AT ", "WORKS_AT"),
        ("has__a  pet", "HAS_A_PET"),
        ("--", None),
        (7, None),
    ],
)
def test_relation_types_are_upper_snake_cased(raw: object, expected: str | None) -> None:
    assert relation_type(raw) == expected


# --- failures raise DependencyFailed (the reference returned zero facts) ----------------------


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        pytest.param(Reply(500, {"error": {"message": "boom"}}), "HTTP 500", id="http-500"),
        pytest.param(Reply(429, {"error": {"message": "rate limited"}}), "HTTP 429", id="http-429"),
        pytest.param(Reply(200, b"<html>gateway</html>"), "not JSON", id="body-not-json"),
        pytest.param(
            Reply(200, {"id": "x", "object": "chat.completion"}), "choices", id="no-choices"
        ),
        pytest.param(Reply(200, {"choices": []}), "choices", id="empty-choices"),
        pytest.param(completion(None), "choices", id="null-content"),
        pytest.param(completion("I could not find any facts."), "facts list", id="prose-only"),
        pytest.param(completion('{"facts": "x"}'), "facts list", id="facts-not-a-list"),
        pytest.param(completion('{"memories": []}'), "facts list", id="no-facts-key"),
        pytest.param(completion("[1, 2]"), "facts list", id="json-array"),
        pytest.param(completion('{"facts": [{"fact": "cut off'), "facts list", id="truncated"),
    ],
)
async def test_a_bad_reply_raises_dependency_failed(
    provider: Callable[[Responder], Provider],
    client: httpx.AsyncClient,
    reply: Reply,
    message: str,
) -> None:
    server = provider(lambda _: reply)
    with pytest.raises(DependencyFailed, match=message):
        await extractor(client, server.url).extract(TURN, POLICY)


async def test_a_reply_slower_than_the_timeout_raises_dependency_failed(
    provider: Callable[[Responder], Provider], client: httpx.AsyncClient
) -> None:
    server = provider(lambda _: Reply(200, answer({"facts": []}).body, delay_s=1.0))
    started = time.monotonic()
    with pytest.raises(DependencyFailed, match="timed out"):
        await extractor(client, server.url, timeout=0.2).extract(TURN, POLICY)
    assert time.monotonic() - started < 0.9


async def test_an_unreachable_server_raises_dependency_failed(client: httpx.AsyncClient) -> None:
    unreachable = extractor(client, f"http://127.0.0.1:{closed_port()}")
    with pytest.raises(DependencyFailed, match=r"llm:test-model-mini: Connect"):
        await unreachable.extract(TURN, POLICY)
