"""The console's routes under `/console` (outside the OpenAPI document: pages, not API).
Each page asks the memory service what the API would (the same request-reply operations,
scoped by `deps.query_scope`, so a confined credential sees its own tenant only, 403
otherwise); operations read the broker directly (consumer offsets, the dead-letter topic).
Without a valid credential a page redirects to the login form."""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aiokafka.errors import KafkaError
from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse
from pydantic import ValidationError

from engine.errors import InputRejected
from schemas.admin import EntityGraph, MemoryRows, StatsResponse
from schemas.scope import Scope, ScopeError
from services.gateway.auth import Principal
from services.gateway.console import reports, views
from services.gateway.console.html import CSS, SECURITY_HEADERS, esc, page
from services.gateway.console.login import caller_of, forget, form, keep, same_origin, sign_in
from services.gateway.deps import admin_result, query_scope
from services.gateway.errors import ApiError
from services.sdk.client import MemoryClient, RequestFailed
from services.stream.dead_letters import letter_at, read_letters, redrive
from services.stream.lag import consumer_lag

log = logging.getLogger(__name__)

router = APIRouter(include_in_schema=False)

BROWSE_LIMIT = 100
"""Rows of one memory or facts page (the admin operation's maximum)."""
LETTERS_SHOWN = 50
REF = re.compile(r"[0-9]{1,9}:[0-9]{1,18}")
"""A dead letter's `partition:offset`."""


@dataclass(frozen=True, slots=True)
class ConsoleKafka:
    """What the operations page reads the broker with (set by `create_app`)."""

    bootstrap: Callable[[], str]
    group_prefix: str
    options: Mapping[str, Any]


Tenant = dict[str, str | None]
Built = tuple[str, Tenant]
"""A page's body (escaped HTML) and the tenant its navigation keeps."""


def _html(text: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(text, status_code=status, headers=SECURITY_HEADERS)


def _who(caller: Principal) -> str:
    if caller.operator:
        return "operator" if caller.kind != "anonymous" else "anonymous (development)"
    return f"tenant {caller.agent}" + (f" · {caller.user}" if caller.user else "")


def _blank(value: str | None) -> str | None:
    value = (value or "").strip()
    return value or None


def _tenant(caller: Principal, agent: str | None, user: str | None) -> Scope | None:
    """The chosen tenant (the credential's own when it is confined; 403 for another), or
    None when an operator has not chosen one yet."""
    agent, user = _blank(agent), _blank(user)
    if agent is None and caller.agent is None:
        return None
    return query_scope(caller, agent, user)


def _nav(scope: Scope | None) -> Tenant:
    if scope is None:
        return {}
    return {"agent": scope.agent_wallet, "user": scope.user_address}


def _client(request: Request) -> MemoryClient:
    client: MemoryClient = request.app.state.client
    return client


def _kafka(request: Request) -> ConsoleKafka:
    kafka: ConsoleKafka = request.app.state.console
    return kafka


def _notice(message: str, kind: str = "") -> str:
    return f'<div class="notice {esc(kind)}">{esc(message)}</div>'


PICK_FIRST = _notice("Choose a tenant first (agentWallet, and a userAddress for a user's rows).")


async def _shown(
    request: Request, title: str, current: str, build: Callable[[Principal], Awaitable[Built]]
) -> Response:
    """A page for a signed-in caller (the login form otherwise); an error is shown on the
    page with its status, as the API would answer it."""
    try:
        caller = caller_of(request)
    except ApiError as exc:
        return _html(page(title, _notice(str(exc.detail), "error")), exc.status_code)
    if caller is None:
        return RedirectResponse("/console/login", status_code=303)
    status, tenant = 200, Tenant()
    try:
        body, tenant = await build(caller)
    except ApiError as exc:
        status, body = exc.status_code, _notice(str(exc.detail), "error")
    except ValidationError as exc:
        status, body = 400, _notice(exc.errors()[0].get("msg", "invalid input"), "error")
    except (ScopeError, InputRejected, RequestFailed) as exc:
        status, body = 400, _notice(str(exc), "error")
    except TimeoutError:
        status = 504
        body = _notice("the memory service did not answer in time; retry later", "error")
    who = _who(caller)
    return _html(page(title, body, tenant=tenant, who=who, current=current), status)


@router.get("/static/console.css")
async def stylesheet() -> Response:
    return Response(CSS, media_type="text/css", headers={"Cache-Control": "max-age=3600"})


LOGIN_FORM = (
    '<div class="login"><p>Sign in with the credential you use for the API: a tenant or '
    "operator API key, or a token.</p>"
    '<form method="post" action="/console/login">'
    '<label>API key or token <input type="password" name="credential" autocomplete="off" '
    'required="required" autofocus="autofocus"></label>'
    '<button type="submit">Sign in</button></form></div>'
)


@router.get("/login")
async def login_form(request: Request) -> Response:
    """The login form (the console's home for a caller signed in already)."""
    try:
        signed_in = caller_of(request) is not None
    except ApiError:
        signed_in = False
    if signed_in:
        return RedirectResponse("/console", status_code=303)
    return _html(page("Sign in", LOGIN_FORM))


@router.post("/login")
async def login(request: Request) -> Response:
    try:
        same_origin(request)
        credential = (await form(request)).get("credential", "")
        sign_in(request, credential)
    except ApiError as exc:
        body = _notice(str(exc.detail), "error") + LOGIN_FORM
        return _html(page("Sign in", body), exc.status_code)
    answer = RedirectResponse("/console", status_code=303)
    keep(answer, credential)
    return answer


@router.post("/logout")
async def logout(request: Request) -> Response:
    try:
        same_origin(request)
    except ApiError as exc:
        return _html(page("Sign out", _notice(str(exc.detail), "error")), exc.status_code)
    answer = RedirectResponse("/console/login", status_code=303)
    forget(answer)
    return answer


@router.get("")
async def home(request: Request, agent: str | None = None, user: str | None = None) -> Response:
    async def build(caller: Principal) -> Built:
        scope = _tenant(caller, agent, user)
        picker = views.tenant_form(
            scope.agent_wallet if scope else None,
            scope.user_address if scope else None,
            agent_fixed=caller.agent is not None,
            user_fixed=caller.user is not None,
        )
        if scope is None:
            return picker + PICK_FIRST, {}
        stats = admin_result(await _client(request).admin("stats", scope), StatsResponse)
        whose = "this user's" if scope.user_address else "every user's of the agent"
        body = (
            f"{picker}<h2>Active rows ({esc(whose)}), by source</h2>"
            f"{views.stats_cards(stats.model_dump())}"
            '<p class="muted">Memory lists the rows with their scores and dates, Facts their '
            "validity, Graph the entities and relations, Playground what pre_turn packs.</p>"
        )
        return body, _nav(scope)

    return await _shown(request, "Tenant", "/console", build)


@router.get("/memory")
async def memory(
    request: Request,
    agent: str | None = None,
    user: str | None = None,
    source: str | None = None,
    q: str | None = None,
) -> Response:
    async def build(caller: Principal) -> Built:
        scope = _tenant(caller, agent, user)
        if scope is None:
            return PICK_FIRST, {}
        client, chosen, query = _client(request), _blank(source), _blank(q)
        reply = await client.admin("memory.browse", scope, limit=BROWSE_LIMIT, source=chosen)
        rows = admin_result(reply, MemoryRows).rows
        search = ""
        if query is not None:
            found = await client.search_layers(query, scope, limit=10)
            search = f"<h2>Layer search: {esc(query)}</h2>" + views.layer_hits(found.layers)
        filters = views.source_filter(chosen, query, _nav(scope))
        return filters + views.memory_view(rows, chosen, search), _nav(scope)

    return await _shown(request, "Memory", "/console/memory", build)


@router.get("/facts")
async def facts(request: Request, agent: str | None = None, user: str | None = None) -> Response:
    async def build(caller: Principal) -> Built:
        scope = _tenant(caller, agent, user)
        if scope is None:
            return PICK_FIRST, {}
        reply = await _client(request).admin(
            "memory.browse", scope, limit=BROWSE_LIMIT, source="fact"
        )
        return views.facts_view(admin_result(reply, MemoryRows).rows), _nav(scope)

    return await _shown(request, "Facts", "/console/facts", build)


@router.get("/graph")
async def graph(request: Request, agent: str | None = None, user: str | None = None) -> Response:
    async def build(caller: Principal) -> Built:
        scope = _tenant(caller, agent, user)
        if scope is None:
            return PICK_FIRST, {}
        reply = await _client(request).admin("graph.browse", scope, limit=BROWSE_LIMIT)
        found = admin_result(reply, EntityGraph)
        return views.graph_view(found.entities, found.relations), _nav(scope)

    return await _shown(request, "Entity graph", "/console/graph", build)


@router.get("/playground")
async def playground_page(
    request: Request, agent: str | None = None, user: str | None = None
) -> Response:
    async def build(caller: Principal) -> Built:
        scope = _tenant(caller, agent, user)
        if scope is None:
            return PICK_FIRST, {}
        return reports.playground_form(None, None, None, _nav(scope)), _nav(scope)

    return await _shown(request, "pre_turn playground", "/console/playground", build)


def _budget(text: str | None) -> int | None:
    text = _blank(text)
    if text is None:
        return None
    if not text.isdigit() or int(text) < 1:
        raise ApiError(400, "budget must be a whole number of characters, at least 1")
    return int(text)


@router.post("/playground")
async def playground(request: Request) -> Response:
    async def build(caller: Principal) -> Built:
        same_origin(request)
        fields = await form(request)
        scope = _tenant(caller, fields.get("agent"), fields.get("user"))
        if scope is None:
            return PICK_FIRST, {}
        query, thread = _blank(fields.get("query")), _blank(fields.get("thread"))
        budget_text = fields.get("budget")
        shown = reports.playground_form(query, budget_text, thread, _nav(scope))
        if query is None:
            raise ApiError(400, "query is required")
        budget = _budget(budget_text)
        if thread is not None:
            scope = query_scope(caller, scope.agent_wallet, scope.user_address, thread)
        reply = await _client(request).context(query, scope, budget_chars=budget, include_raw=True)
        return shown + reports.playground_view(reply, budget), _nav(scope)

    return await _shown(request, "pre_turn playground", "/console/playground", build)


async def _lag_section(kafka: ConsoleKafka) -> str:
    try:
        lags = await consumer_lag(
            kafka.bootstrap(), kafka.group_prefix, kafka_options=kafka.options
        )
    except (KafkaError, OSError, TimeoutError) as exc:
        log.warning("console: consumer lag could not be read: %r", exc)
        return _notice(f"the consumer offsets could not be read: {exc!r}", "error")
    return reports.lag_view(lags)


async def _letters_section(kafka: ConsoleKafka, group: str | None) -> str:
    try:
        letters = await read_letters(
            kafka.bootstrap(), limit=LETTERS_SHOWN, group=group, kafka_options=kafka.options
        )
    except (KafkaError, OSError, TimeoutError) as exc:
        log.warning("console: the dead-letter topic could not be read: %r", exc)
        return _notice(f"the dead-letter topic could not be read: {exc!r}", "error")
    return reports.letters_view(letters)


@router.get("/ops")
async def operations(
    request: Request, group: str | None = None, replayed: str | None = None
) -> Response:
    async def build(caller: Principal) -> Built:
        kafka, chosen = _kafka(request), _blank(group)
        done = ""
        if replayed and REF.fullmatch(replayed):
            done = _notice(f"Replayed dead letter {replayed}: re-published to its source topic.")
        lag = await _lag_section(kafka)
        if caller.operator:
            letters = reports.group_filter(chosen) + await _letters_section(kafka, chosen)
        else:
            letters = _notice(
                "Dead letters hold messages of every tenant: an operator credential sees them."
            )
        body = (
            f"{done}<h2>Consumer lag per group</h2>{lag}"
            f"<h2>Dead letters (newest {LETTERS_SHOWN})</h2>{letters}"
        )
        return body, {}

    return await _shown(request, "Operations", "/console/ops", build)


def _ref(text: str | None) -> tuple[int, int]:
    if text is None or not REF.fullmatch(text):
        raise ApiError(400, "ref must be partition:offset of a dead letter")
    partition, _, offset = text.partition(":")
    return int(partition), int(offset)


@router.post("/ops/replay")
async def replay(request: Request) -> Response:
    """Re-publish one dead letter to its source topic (`mnemostream dlq redrive REF`), then
    back to the operations page."""
    try:
        caller = caller_of(request)
        if caller is None:
            return RedirectResponse("/console/login", status_code=303)
        same_origin(request)
        if not caller.operator:
            raise ApiError(403, "replaying a dead letter needs an operator credential")
        partition, offset = _ref((await form(request)).get("ref"))
        kafka = _kafka(request)
        found = await letter_at(kafka.bootstrap(), partition, offset, kafka_options=kafka.options)
        if found is None:
            raise ApiError(404, f"no dead letter {partition}:{offset}")
        await redrive(kafka.bootstrap(), [found], kafka_options=kafka.options)
    except ApiError as exc:
        return _html(page("Replay", _notice(str(exc.detail), "error")), exc.status_code)
    except (KafkaError, OSError, TimeoutError, LookupError) as exc:
        log.warning("console: a dead letter could not be replayed: %r", exc)
        return _html(page("Replay", _notice(f"the replay failed: {exc!r}", "error")), 503)
    log.info("console: dead letter %s replayed to %s", found.ref, found.letter.source_topic)
    return RedirectResponse(f"/console/ops?replayed={found.ref}", status_code=303)
