"""`Extractor` adapter for any OpenAI-compatible chat-completions endpoint (reference §7.3).

Request: `POST {base_url}/v1/chat/completions` (a `base_url` that already ends in `/v1` is
not doubled) with a Bearer key (no Authorization header when `api_key` is empty, for local
servers) and `{"model", "messages": [system, user], "response_format": {"type":
"json_object"}, "temperature": 0.1, "max_tokens": 600}`. The answer is read from
`choices[0].message.content`. The `httpx.AsyncClient` is built and closed by the
composition root; this adapter only uses it. `timeout` (seconds) bounds the whole exchange.

Parsing follows the reference: the content is parsed as JSON, else the span from the first
`{` to the last `}`; it must be an object with a `facts` list. Per fact: `fact` trimmed and
non-empty; confidence a finite number clamped to [0, 1], else 0; dropped below
`policy.min_confidence`; `type` lower-cased and one of `FACT_TYPES` (no default); dropped
when longer than `policy.max_chars`; the first `policy.max_facts` surviving facts are kept
in reply order (not the most confident ones — the reference keeps the first N too).
`entities` and `relations` (at most 20 of each, malformed entries dropped one by one) are
extras of this adapter; a non-list value for either is read as absent.

Failures differ from the reference on purpose. The reference turned transport errors,
timeouts and unparseable replies into zero facts, silently losing them; here a transport
error, a timeout, a non-2xx status, a body without `choices[0].message.content`, or content
that is not a JSON object with a `facts` list raises `DependencyFailed`, so the consumer
retries and then dead-letters. A well-formed reply with `"facts": []` means "nothing durable
was said" and yields an empty `Extraction`.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from engine.adapters.http import post_json
from engine.errors import DependencyFailed
from engine.ingest.extraction.types import (
    FACT_TYPES,
    ExtractedEntity,
    ExtractedFact,
    ExtractedRelation,
    Extraction,
    ExtractionPolicy,
    FactType,
    TurnText,
)

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 8.0
TEMPERATURE = 0.1
MAX_TOKENS = 600
TURN_MESSAGES = 6
MESSAGE_CHARS = 1200
MAX_ENTITIES = 20
MAX_RELATIONS = 20
NAME_CHARS = 120
USER_NODE = "user"
_TYPE_CHARS = 60
_ERROR_BODY_CHARS = 200
_ROLES = frozenset({"user", "assistant"})
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NON_WORD = re.compile(r"[\W_]+")

_SYSTEM_PROMPT = """\
You maintain a long-term memory about one user. Read one conversation turn and write down \
what it reveals about the user, and about the other people, organisations and places the \
turn describes, that will still be true and useful in later conversations.

Rules for facts:
- Each fact is durable, atomic (one piece of information) and standalone: readable without \
the conversation, e.g. "The user lives in Porto." or "The user's sister is called Ana."
- A fact about the user says "The user" (or the user's name when the turn gives it). A \
fact about anyone or anything else has its name as the subject: "Melanie read Circe.", \
"Acme Corp is based in Berlin.". A line "assistant (Name): ..." is a named person \
speaking: their facts are about them. Skip what an unnamed assistant says about itself, \
greetings and small talk, how tools were called, guesses and hypotheticals, and summaries \
that bundle several facts.
- "type" is exactly one of: {types}. Leave out a fact that fits none of them.
  preference = likes, dislikes, habits and choices; identity = name, age, origin, \
pronouns, occupation; context = lasting circumstances such as residence, employer, \
projects or goals; skill = abilities and expertise; relationship = people, pets and \
organisations in the user's life; event = something that happened or will happen, with \
its date when one is given.
- "confidence" is a number from 0 to 1: how clearly the turn states the fact. Leave out \
facts below {min_confidence:g}.
- "slot" names the single-valued attribute the fact sets, so a later fact with the same \
slot replaces it: "name", "residence", "employer", "job_title", "preference:coffee"; for a \
fact about someone other than the user, add "@" and their name in lower case \
("residence@melanie"). Use null for facts that accumulate (skills, events, most \
relationships).
- At most {max_facts} facts, each at most {max_chars} characters. When nothing durable \
was said, return an empty "facts" list.

Also list the named things the turn mentions (people, places, organisations, pets, \
projects, tools) as "entities" (at most {max_items}), and the typed links between them as \
"relations" (at most {max_items}) between any two of them ("Dana MANAGER_OF user", "Acme \
Corp BASED_IN Berlin"), with relation types in UPPER_SNAKE_CASE. The user is the node \
"user"; every other relation end must be listed in "entities".

Answer with one JSON object and nothing else, shaped like:
{{"facts": [{{"fact": "The user lives in Porto.", "type": "context", "confidence": 0.9, \
"slot": "residence"}}],
 "entities": [{{"name": "Porto", "type": "place", "summary": "City where the user lives."}}],
 "relations": [{{"source": "user", "type": "LIVES_IN", "target": "Porto"}}]}}"""


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _endpoint(base_url: str) -> str:
    base = base_url.rstrip("/")
    return f"{base}/chat/completions" if base.endswith("/v1") else f"{base}/v1/chat/completions"


def system_prompt(policy: ExtractionPolicy) -> str:
    """The system message for `policy`: what to extract, the six types, the limits."""
    return _SYSTEM_PROMPT.format(
        types=", ".join(FACT_TYPES),
        min_confidence=policy.min_confidence,
        max_facts=policy.max_facts,
        max_chars=policy.max_chars,
        max_items=MAX_ENTITIES,
    )


def turn_lines(messages: Sequence[TurnText]) -> list[str]:
    """`role: text` lines (`role (Name): text` for a named speaker) for the last
    `TURN_MESSAGES` user/assistant messages with text, oldest first; whitespace collapsed and
    each text cut to `MESSAGE_CHARS` characters."""
    lines = []
    for message in messages:
        role = message.role.strip().lower()
        text = _collapse(message.content)[:MESSAGE_CHARS]
        who = f"{role} ({_collapse(message.speaker)})" if message.speaker else role
        if role in _ROLES and text:
            lines.append(f"{who}: {text}")
    return lines[-TURN_MESSAGES:]


def user_prompt(lines: Sequence[str]) -> str:
    """The user message: the conversation turn block, then the request for JSON."""
    turn = "\n".join(lines)
    return (
        f"Conversation turn:\n{turn}\n\n"
        "Return the durable facts about the user and the others it describes from this "
        "turn, with the entities and "
        "relations, as a JSON object."
    )


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    as_float = float(value)
    return as_float if math.isfinite(as_float) else None


def _decode_object(content: str) -> Mapping[str, Any] | None:
    """The JSON object in `content`: the whole text, else its first-`{`-to-last-`}` span."""
    candidates = [content]
    start, end = content.find("{"), content.rfind("}")
    if 0 <= start < end:
        candidates.append(content[start : end + 1])
    for candidate in candidates:
        try:
            decoded = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(decoded, Mapping):
            return decoded
    return None


def _fact_type(value: object) -> FactType | None:
    if not isinstance(value, str):
        return None
    lowered = value.strip().lower()
    return next((t for t in FACT_TYPES if t == lowered), None)


def _slot(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    slot = _collapse(value).lower()
    return slot if 0 < len(slot) <= NAME_CHARS else None


def _fact(item: object, policy: ExtractionPolicy) -> ExtractedFact | None:
    if not isinstance(item, Mapping):
        return None
    raw_text = item.get("fact")
    text = raw_text.strip() if isinstance(raw_text, str) else ""
    confidence = min(1.0, max(0.0, _number(item.get("confidence")) or 0.0))
    fact_type = _fact_type(item.get("type"))
    if (
        not text
        or confidence < policy.min_confidence
        or fact_type is None
        or len(text) > policy.max_chars
    ):
        return None
    return ExtractedFact(text, fact_type, confidence, _slot(item.get("slot")))


def parse_facts(items: Sequence[object], policy: ExtractionPolicy) -> list[ExtractedFact]:
    """The facts that pass `policy`, in reply order, at most `policy.max_facts`."""
    facts: list[ExtractedFact] = []
    for item in items:
        if len(facts) >= policy.max_facts:
            break
        fact = _fact(item, policy)
        if fact is not None:
            facts.append(fact)
    return facts


def _name(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    name = _collapse(value)
    return name if 0 < len(name) <= NAME_CHARS else None


def _key(name: str) -> str:
    return name.casefold()


def parse_entities(items: object, policy: ExtractionPolicy) -> list[ExtractedEntity]:
    """Entities with a usable name (trimmed, 1..`NAME_CHARS` chars), first spelling of a
    name wins, at most `MAX_ENTITIES`. A missing type reads as "other"; the summary is cut
    to `policy.max_chars`."""
    if not isinstance(items, list):
        return []
    entities: dict[str, ExtractedEntity] = {}
    for item in items:
        if len(entities) >= MAX_ENTITIES:
            break
        if not isinstance(item, Mapping):
            continue
        name = _name(item.get("name"))
        if name is None or _key(name) in entities:
            continue
        raw_type, raw_summary = item.get("type"), item.get("summary")
        kind = _collapse(raw_type).lower()[:_TYPE_CHARS] if isinstance(raw_type, str) else ""
        summary = _collapse(raw_summary)[: policy.max_chars] if isinstance(raw_summary, str) else ""
        entities[_key(name)] = ExtractedEntity(name, kind or "other", summary)
    return list(entities.values())


def relation_type(value: object) -> str | None:
    """`value` in UPPER_SNAKE_CASE ("lives in", "livesIn", "lives-in" → "LIVES_IN"), or None
    when nothing usable is left."""
    if not isinstance(value, str):
        return None
    snake = _NON_WORD.sub("_", _CAMEL_BOUNDARY.sub("_", value.strip())).strip("_").upper()
    return snake if 0 < len(snake) <= _TYPE_CHARS else None


def parse_relations(items: object, entities: Sequence[ExtractedEntity]) -> list[ExtractedRelation]:
    """Relations whose ends are "user" or a listed entity (matched case-insensitively and
    written as the entity is), with a usable type; duplicates dropped, at most
    `MAX_RELATIONS`. A relation to an unlisted name is dropped: the port promises links
    between entities named in the same extraction."""
    if not isinstance(items, list):
        return []
    known = {_key(e.name): e.name for e in entities} | {USER_NODE: USER_NODE}
    relations: list[ExtractedRelation] = []
    for item in items:
        if len(relations) >= MAX_RELATIONS:
            break
        if not isinstance(item, Mapping):
            continue
        source, target = _name(item.get("source")), _name(item.get("target"))
        kind = relation_type(item.get("type"))
        if source is None or target is None or kind is None:
            continue
        ends = known.get(_key(source)), known.get(_key(target))
        if ends[0] is None or ends[1] is None:
            continue
        relation = ExtractedRelation(ends[0], kind, ends[1])
        if relation not in relations:
            relations.append(relation)
    return relations


def parse_content(content: str, policy: ExtractionPolicy) -> Extraction | None:
    """The extraction in a model answer, or None when it is not a JSON object with a
    `facts` list."""
    decoded = _decode_object(content)
    if decoded is None or not isinstance(decoded.get("facts"), list):
        return None
    entities = parse_entities(decoded.get("entities"), policy)
    return Extraction(
        facts=parse_facts(decoded["facts"], policy),
        entities=entities,
        relations=parse_relations(decoded.get("relations"), entities),
    )


def _message_content(reply: object) -> str | None:
    """`choices[0].message.content` as text (a list of text parts is joined), or None."""
    choices = reply.get("choices") if isinstance(reply, Mapping) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, Mapping) else None
    content = message.get("content") if isinstance(message, Mapping) else None
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, Mapping)]
        content = "".join(p for p in parts if isinstance(p, str)) or None
    return content if isinstance(content, str) else None


class OpenAICompatibleExtractor:
    """Facts, entities and relations from an OpenAI-compatible chat-completions model."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        base_url: str,
        api_key: str,
        model: str,
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self.name = f"llm:{model}"
        self._client = client
        self._url = _endpoint(base_url)
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._model = model
        self._timeout = timeout

    async def extract(self, messages: Sequence[TurnText], policy: ExtractionPolicy) -> Extraction:
        """See `engine.ingest.extraction.types.Extractor`. A turn without user/assistant text
        yields an empty `Extraction` without calling the model."""
        lines = turn_lines(messages)
        if not lines:
            return Extraction()
        body = {
            "model": self._model,
            "messages": [
                {"role": "system", "content": system_prompt(policy)},
                {"role": "user", "content": user_prompt(lines)},
            ],
            "response_format": {"type": "json_object"},
            "temperature": TEMPERATURE,
            "max_tokens": MAX_TOKENS,
        }
        content = _message_content(await self._post(body))
        if content is None:
            raise DependencyFailed(f"{self.name}: reply has no choices[0].message.content")
        extraction = parse_content(content, policy)
        if extraction is None:
            excerpt = content[:_ERROR_BODY_CHARS]
            raise DependencyFailed(
                f"{self.name}: answer is not a JSON object with a facts list: {excerpt!r}"
            )
        log.debug(
            "extracted %d facts, %d entities, %d relations",
            len(extraction.facts),
            len(extraction.entities),
            len(extraction.relations),
            extra={"extractor": self.name},
        )
        return extraction

    async def _post(self, body: Mapping[str, Any]) -> Any:
        """POST `body` and return the decoded JSON reply, within `self._timeout` seconds."""
        return await post_json(
            self._client, self.name, self._url, body, self._headers, self._timeout
        )
