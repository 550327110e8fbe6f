"""The console's HTML, without a server: every stored string it shows comes out as text —
for any string, the parsed page holds it as character data and no element or attribute the
view did not write itself — and the same-origin rule of its form posts."""

from __future__ import annotations

from datetime import UTC, datetime
from html.parser import HTMLParser
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.requests import Request

from schemas.dead_letters import DeadLetter
from schemas.requests import ContextItem, ContextReply, ContextUsage
from services.gateway.console.html import esc, page, when
from services.gateway.console.login import same_origin
from services.gateway.console.reports import letters_view, playground_view
from services.gateway.console.views import facts_view, graph_view, layer_hits, rows_table
from services.gateway.errors import ApiError
from services.stream.dead_letters import Letter

HOSTILE = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "' onmouseover='alert(1)",
    "</td></tr></table><svg onload=alert(1)>",
    "&lt;script&gt; already escaped",
    "<!-- comment --><![CDATA[x]]>",
]


class Parsed(HTMLParser):
    """The tags, attributes and character data of a page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attributes: set[str] = set()
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes.update(name for name, _ in attrs)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parsed(html: str) -> Parsed:
    p = Parsed()
    p.feed(html)
    p.close()
    return p


def row(text: str) -> dict[str, Any]:
    return {
        "id": f"id-{text}",
        "source": text,
        "content": text,
        "createdAt": 1_772_366_400_000,
        "status": text,
        "decayScore": 0.5,
        "accessCount": 2,
        "invalidAt": None,
        "supersededBy": text,
        "metadata": {"confidence": 0.9, "slot": text, "type": text},
    }


def views_of(text: str) -> list[str]:
    """Every view, with `text` in each stored field it shows."""
    entity = {**row(text), "id": "e1", "source": "entity", "content": f"{text} (person)"}
    relation = {
        "id": "r1",
        "sourceId": "e1",
        "sourceName": text,
        "type": text,
        "targetId": "e1",
        "targetName": text,
        "createdAt": 1,
        "invalidAt": None,
        "current": False,
    }
    reply = ContextReply(
        prompt=text,
        items=[ContextItem(layer=text, text=text, id=text, score=0.4, source=text)],
        totals={text: 1},
        omitted={text: 0},
        raw={text: [{"id": text, "content": text, "score": 0.4}]},
        context_usage=ContextUsage(
            characters=1, raw_characters=1, saved_characters_vs_raw=0, items=1
        ),
    )
    letter = DeadLetter(
        group=text,
        source_topic=text,
        partition=0,
        offset=1,
        key=text,
        error=text,
        error_type=text,
        attempts=1,
        payload=text,
        failed_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    return [
        rows_table([row(text)]),
        facts_view([row(text)]),
        graph_view([entity], [relation]),
        layer_hits({text: [{"id": text, "content": text, "score": 1.0}]}, packed={(text, text)}),
        playground_view(reply, 10),
        letters_view([Letter(0, 1, letter)]),
        page(text, "", tenant={"agent": text, "user": text}, who=text),
    ]


def structure(html: str) -> tuple[list[str], set[str]]:
    found = parsed(html)
    return found.tags, found.attributes


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_stored_text_is_shown_as_text_never_as_markup(text: str) -> None:
    plain = "plain"
    for shown, reference in zip(views_of(text), views_of(plain), strict=True):
        assert "<script" not in shown.lower()
        assert "<img" not in shown.lower()
        assert structure(shown) == structure(reference)  # the same elements and attributes
        assert text in "".join(parsed(shown).text)  # the string itself, as character data


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=1, max_size=40))
def test_any_stored_string_leaves_the_page_structure_alone(text: str) -> None:
    for shown, reference in zip(views_of(text), views_of("x"), strict=True):
        assert structure(shown) == structure(reference)


def test_esc_escapes_every_markup_character_and_shows_none_as_a_dash() -> None:
    assert esc("""<a href="x" title='y'>&</a>""") == (
        "&lt;a href=&quot;x&quot; title=&#x27;y&#x27;&gt;&amp;&lt;/a&gt;"
    )
    assert esc(None) == "—"
    assert when(1_772_366_400_000) == "2026-03-01 12:00:00 UTC"
    assert when(None) == "—"
    assert when("soon") == "—"


def request_with(headers: dict[str, str]) -> Request:
    raw = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    return Request({"type": "http", "method": "POST", "path": "/console/login", "headers": raw})


@pytest.mark.parametrize(
    ("headers", "allowed"),
    [
        ({"host": "console.example:8080"}, True),  # no Origin: not a browser's cross-site post
        ({"host": "console.example:8080", "origin": "https://console.example:8080"}, True),
        ({"host": "console.example:8080", "sec-fetch-site": "same-origin"}, True),
        ({"host": "console.example:8080", "origin": "https://evil.example"}, False),
        ({"host": "console.example:8080", "origin": "null"}, False),
        ({"host": "console.example:8080", "sec-fetch-site": "cross-site"}, False),
    ],
)
def test_a_form_post_must_come_from_the_console_itself(
    headers: dict[str, str], allowed: bool
) -> None:
    request = request_with(headers)
    if allowed:
        same_origin(request)
        return
    with pytest.raises(ApiError) as refused:
        same_origin(request)
    assert refused.value.status_code == 403
