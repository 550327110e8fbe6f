"""Session summaries from an OpenAI-compatible chat-completions model (reference §10.9).

`POST {base_url}/v1/chat/completions` (as `engine.adapters.openai_extractor`) with the
conversation as `role: content` lines and a request for one JSON object `{summary,
entities[], keyFacts[]}`, temperature 0.2, max_tokens 500 (the reference's values). The
first `{…}` span of the answer is parsed (the reference's rule). Every failure — transport,
timeout, non-2xx status, no `choices[0].message.content`, no JSON object with a non-empty
`summary` — raises `DependencyFailed`.
"""

from __future__ import annotations

from collections.abc import Sequence

import httpx

from engine.adapters.http import post_json
from engine.adapters.openai_extractor import _decode_object, _endpoint, _message_content
from engine.errors import DependencyFailed
from engine.ingest.extraction.types import TurnText
from engine.upkeep.compression import SUMMARY_CHARS, SessionSummary

TEMPERATURE = 0.2
MAX_TOKENS = 500
MAX_LIST = 20
"""Entities and key facts kept from one answer."""
PROMPT = (
    "Summarize this conversation session. Answer with one JSON object and nothing else: "
    '{"summary": "<a few sentences>", "entities": ["<names of people, places, things>"], '
    '"keyFacts": ["<durable facts worth remembering>"]}'
)


def _strings(value: object) -> list[str]:
    if not isinstance(value, list):
        return []
    texts = [" ".join(v.split())[:240] for v in value if isinstance(v, str) and v.strip()]
    return list(dict.fromkeys(texts))[:MAX_LIST]


def parse_summary(content: str, name: str) -> SessionSummary | None:
    """The first `{…}` span of `content` as a summary, or None without a usable one."""
    data = _decode_object(content)
    if data is None:
        return None
    summary = data.get("summary")
    if not isinstance(summary, str) or not summary.strip():
        return None
    return SessionSummary(
        summary=" ".join(summary.split())[:SUMMARY_CHARS],
        entities=_strings(data.get("entities")),
        key_facts=_strings(data.get("keyFacts", data.get("key_facts"))),
        summariser=name,
    )


class OpenAICompatibleSummariser:
    """`Summariser` over an OpenAI-compatible chat-completions API."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        base_url: str,
        api_key: str,
        model: str,
        timeout: float,
    ) -> None:
        self._client = client
        self._url = _endpoint(base_url)
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._model = model
        self._timeout = timeout

    @property
    def name(self) -> str:
        return f"llm:{self._model}"

    async def summarise(self, messages: Sequence[TurnText], model: str | None) -> SessionSummary:
        """See `engine.upkeep.compression.Summariser`; `model` overrides the configured one."""
        chosen = model or self._model
        name = f"llm:{chosen}"
        transcript = "\n".join(f"{m.role}: {m.content}" for m in messages)
        body = {
            "model": chosen,
            "messages": [{"role": "user", "content": f"{PROMPT}\n\n{transcript}"}],
            "temperature": TEMPERATURE,
            "max_tokens": MAX_TOKENS,
        }
        reply = await post_json(self._client, name, self._url, body, self._headers, self._timeout)
        content = _message_content(reply)
        if content is None:
            raise DependencyFailed(f"{name}: reply has no choices[0].message.content")
        summary = parse_summary(content, name)
        if summary is None:
            raise DependencyFailed(f"{name}: answer has no JSON object with a summary")
        return summary
