"""The memory console over real HTTP on the real stack (`console_support`): signing in and
the session cookie, every page, stored markup shown inert, tenant isolation, the playground,
consumer lag, and a dead letter replayed into memory."""

from __future__ import annotations

import re
from html import unescape

import pytest
from fastapi.routing import APIRoute

from services.gateway.console import router as console_router
from tests.gateway.conftest import until
from tests.gateway.console_support import (
    BOB_SECRET,
    LETTER_ERROR,
    LOCKER,
    MARKUP,
    REPLAYED_FACT,
    Console,
    console,
    cookie_of,
)

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="package")]
__all__ = ["console"]  # the fixture, imported to be found here

ORIGIN_HEADERS = {"Content-Type": "application/x-www-form-urlencoded"}


def text_of(page: str) -> str:
    """The visible text of a page (tags dropped, entities decoded)."""
    return unescape(re.sub(r"<[^>]+>", " ", page))


async def test_pages_ask_for_a_login_and_the_cookie_is_httponly_secure_and_strict(
    console: Console,
) -> None:
    async with console.http() as http:
        first = await http.get("/console/memory")
        assert first.status_code == 303
        assert first.headers["location"] == "/console/login"
        form = await http.get("/console/login")
        assert form.status_code == 200
        assert 'name="credential"' in form.text

        wrong = await http.post(
            "/console/login", data={"credential": "not-a-key"}, headers=ORIGIN_HEADERS
        )
        assert wrong.status_code == 401
        assert "invalid API key" in wrong.text
        assert "set-cookie" not in wrong.headers

        ok = await http.post("/console/login", data={"credential": console.user_key})
        assert ok.status_code == 303
        value, cookie = cookie_of(ok)
        attributes = cookie.get_params(header="set-cookie") or []
        names = {k.lower(): v for k, v in attributes}
        assert value == console.user_key
        assert {"httponly", "secure"} <= set(names)
        assert names["samesite"].lower() == "strict"
        assert names["path"] == "/console"

        jar = {"Cookie": f"mnemostream_console={value}"}
        home = await http.get("/console", headers=jar)
        assert home.status_code == 200
        assert "tenant " + console.agent in home.text
        assert "Content-Security-Policy" in home.headers
        assert "script-src" not in home.headers["Content-Security-Policy"]  # none allowed

        stale = await http.get("/console", headers={"Cookie": "mnemostream_console=revoked"})
        assert stale.status_code == 303  # a cookie whose key is not valid: sign in again

        forged = await http.post(
            "/console/login",
            data={"credential": console.user_key},
            headers={"Origin": "https://elsewhere.example"},
        )
        assert forged.status_code == 403

        out = await http.post("/console/logout", headers=jar)
        assert out.status_code == 303
        assert "mnemostream_console=" in out.headers["set-cookie"]
        assert "Max-Age=0" in out.headers["set-cookie"]


async def test_memory_page_lists_rows_with_scores_and_dates_and_renders_markup_inert(
    console: Console,
) -> None:
    async with console.http(console.operator_key) as http:
        r = await http.get("/console/memory", params={"agent": console.agent, "user": "ana"})
    assert r.status_code == 200, r.text
    assert MARKUP not in r.text  # the stored markup never reaches the page as markup
    assert "<script" not in r.text
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in r.text
    assert 'onerror="' not in r.text
    visible = text_of(r.text)
    assert LOCKER in visible  # shown as the text it is
    assert "Ana lives in Porto." in visible
    assert BOB_SECRET not in visible  # another user's
    assert "decay score" in visible
    assert "2026-03-10 12:00:00 UTC" in visible  # Porto's fact, stated on the 10th
    assert re.search(r"<td>1\.000</td>", r.text)  # a new row's decay score


async def test_memory_page_filters_a_source_and_searches_the_layers_with_scores(
    console: Console,
) -> None:
    params = {
        "agent": console.agent,
        "user": "ana",
        "source": "entity",
        "q": "Where does Ana live?",
    }
    async with console.http(console.operator_key) as http:
        r = await http.get("/console/memory", params=params)
    assert r.status_code == 200, r.text
    visible = text_of(r.text)
    assert "Stored rows of source entity" in visible
    assert "Ana lives in Porto." in visible  # found by the layer search
    assert "Layer graph" in visible
    stored = r.text.split("Stored rows", 1)[1]
    assert "Ana lives in" not in text_of(stored)  # the table itself: entities only


async def test_facts_page_shows_validity_and_what_replaced_a_fact(console: Console) -> None:
    async with console.http(console.user_key) as http:  # the user's own key
        r = await http.get("/console/facts")
    assert r.status_code == 200, r.text
    row = next(tr for tr in r.text.split("<tr>") if "Ana lives in Lisbon." in tr and "<td>" in tr)
    cells = text_of(row)
    assert "2026-03-01 12:00:00 UTC" in cells  # valid from
    assert "2026-03-10 12:00:00 UTC" in cells  # invalidAt: when Porto replaced it
    assert "Ana lives in Porto." in cells  # supersededBy, shown with its text
    assert "superseded" in cells
    assert "1 replaced" in text_of(r.text)


async def test_graph_page_lists_entities_and_relations_and_draws_them(console: Console) -> None:
    async with console.http(console.agent_key) as http:
        r = await http.get("/console/graph", params={"user": "ana"})
    assert r.status_code == 200, r.text
    assert "<svg" in r.text
    visible = text_of(r.text)
    for name in ("Ana", "Lisbon", "Porto"):
        assert f">{name}</text>" in r.text  # a node of the drawing
    assert re.search(r"Ana\s+LIVES_IN\s+Porto\s.*current", visible)
    assert re.search(r"Ana\s+LIVES_IN\s+Lisbon\s.*replaced", visible)
    assert 'stroke-dasharray="5 4"' in r.text  # the replaced link, dashed


async def test_playground_shows_each_packed_item_and_what_was_left_out(console: Console) -> None:
    fields = {"agent": console.agent, "user": "ana", "query": "Where does Ana live?"}
    async with console.http(console.operator_key) as http:
        roomy = await http.post("/console/playground", data={**fields, "budget": "2000"})
        tight = await http.post("/console/playground", data={**fields, "budget": "60"})
        missing = await http.post("/console/playground", data={**fields, "query": " "})
        bad = await http.post("/console/playground", data={**fields, "budget": "lots"})
    assert roomy.status_code == 200, roomy.text
    packed = roomy.text.split('class="packed"', 1)[1].split("</table>", 1)[0]
    assert "Ana lives in Porto." in text_of(packed)
    assert re.search(r'<span class="badge">graph</span></td><td>[01]\.\d{3}</td>', packed)
    assert "The prompt, exactly" in roomy.text
    visible = text_of(roomy.text)
    assert "left out" in visible
    assert "2000" in visible  # the budget

    assert tight.status_code == 200, tight.text
    used = re.search(r"characters used\s+(\d+)", text_of(tight.text))
    assert used is not None
    assert int(used.group(1)) <= 60
    assert missing.status_code == 400
    assert "query is required" in missing.text
    assert bad.status_code == 400
    assert "budget must be a whole number" in bad.text


async def test_a_confined_credential_sees_its_own_tenant_only(console: Console) -> None:
    async with console.http(console.user_key) as http:
        other_user = await http.get("/console/memory", params={"user": "bob"})
        other_agent = await http.get("/console/facts", params={"agent": "0xsomeoneelse"})
        own = await http.get("/console/memory")
        ops = await http.get("/console/ops")
        replay = await http.post("/console/ops/replay", data={"ref": "0:0"})
    assert other_user.status_code == 403
    assert "another userAddress" in other_user.text
    assert other_agent.status_code == 403
    assert own.status_code == 200
    assert BOB_SECRET not in text_of(own.text)
    assert 'readonly="readonly"' in (await _home(console, console.user_key))
    assert ops.status_code == 200
    assert console.letter_marker not in ops.text  # dead letters: operators only
    assert "an operator credential sees them" in ops.text
    assert replay.status_code == 403


async def _home(console: Console, key: str) -> str:
    async with console.http(key) as http:
        return (await http.get("/console")).text


async def test_ops_page_shows_lag_per_group_and_a_replay_stores_the_dead_letter(
    console: Console,
) -> None:
    group = f"{console.group_prefix}.facts.remember"
    async with console.http(console.operator_key) as http:
        r = await http.get("/console/ops", params={"group": group})
        assert r.status_code == 200, r.text
        visible = text_of(r.text)
        for name in ("transcripts", "facts", "search", "admin"):
            assert f"{console.group_prefix}.{name}" in visible
        row = next(tr for tr in r.text.split("<tr>") if console.letter_marker in tr)
        assert LETTER_ERROR in text_of(row)  # the reason, as text
        assert "<b>timed out</b>" not in row
        assert "DependencyFailed" in row
        ref = re.search(r'name="ref" value="(\d+:\d+)"', row)
        assert ref is not None

        done = await http.post("/console/ops/replay", data={"ref": ref.group(1)})
        assert done.status_code == 303
        assert done.headers["location"] == f"/console/ops?replayed={ref.group(1)}"
        shown = await http.get(done.headers["location"])
        assert f"Replayed dead letter {ref.group(1)}" in shown.text
        unknown = await http.post("/console/ops/replay", data={"ref": "0:999999999999"})
        assert unknown.status_code == 404
        malformed = await http.post("/console/ops/replay", data={"ref": "zero"})
        assert malformed.status_code == 400

        async def facts() -> str:
            page = await http.get("/console/facts", params={"agent": console.agent, "user": "ana"})
            return text_of(page.text)

        await until(facts, lambda t: REPLAYED_FACT in t, "the replayed remember to be stored")


async def test_a_post_from_another_site_is_refused(console: Console) -> None:
    async with console.http(console.operator_key) as http:
        r = await http.post(
            "/console/ops/replay",
            data={"ref": "0:0"},
            headers={"Sec-Fetch-Site": "cross-site"},
        )
    assert r.status_code == 403


CONSOLE_PUBLIC = {
    "/console/login": "the login form (and its post, which checks the credential)",
    "/console/static/console.css": "the stylesheet: the same for everyone, no data",
}
"""The console's routes that need no credential, and why."""


async def test_every_console_page_needs_a_credential(console: Console) -> None:
    routes = [
        (method, route.path)
        for route in console_router.routes
        if isinstance(route, APIRoute)
        for method in sorted(route.methods)
    ]
    assert len(routes) >= 11
    async with console.http() as anonymous:
        for method, path in routes:
            full = "/console" + path
            if full in CONSOLE_PUBLIC:
                continue
            r = await anonymous.request(method, full, data={} if method == "POST" else None)
            assert (r.status_code, r.headers.get("location")) == (303, "/console/login"), full
            assert console.agent not in r.text
        css = await anonymous.get("/console/static/console.css")
        assert css.status_code == 200
        assert css.headers["content-type"].startswith("text/css")
