"""The MCP tools, on the SDK's `MemoryClient` (Kafka). Each takes typed arguments (their JSON
schema is published, unknown arguments are refused) and none names a tenant: the scope is
`ScopeOf`'s (`services.mcp.tenancy`). Every anticipated failure — a bad argument, a refused
credential, the service's error, no answer in time — is a `ToolError`: the model reads its
message, the server keeps running."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Annotated, Any, cast

from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine.ingest.remember import fact_hash, stored_fact_type
from schemas.bounds import epoch_ms
from schemas.remember_input import RememberInput
from schemas.requests import MAX_LIST_ITEMS, ContextItem, ItemReply, LayerName
from schemas.scope import Scope, ScopeError, first_error
from schemas.search_defaults import PER_LAYER_LIMIT, PER_LAYER_LIMIT_MAX
from schemas.turn_input import TurnInput
from services.mcp.models import (
    Fact,
    Facts,
    FactType,
    Forgotten,
    Found,
    MemoryItem,
    Recalled,
    Remembered,
    TurnStored,
    iso,
)
from services.mcp.tenancy import Refused
from services.sdk.client import MemoryClient, NotProcessed, RequestFailed

__all__ = ["ScopeOf", "memory_tools"]

ScopeOf = Callable[[], Scope]
"""The scope of the tool call being served (raises `Refused`)."""
DEFAULT_THREAD = "mcp"
"""The thread turns are recorded in when none is configured (reads span every thread)."""

Text = Annotated[str, Field(min_length=1, max_length=4_000)]
Query = Annotated[
    str, Field(min_length=1, max_length=4_000, description="What to look for, in words.")
]
AsOf = Annotated[
    Annotated[str, Field(max_length=64)] | int | None,
    Field(
        description="An ISO-8601 time (e.g. 2024-05-01T00:00:00Z) or milliseconds since "
        "epoch: answer with what was true then. Omit for now.",
    ),
]
ItemId = Annotated[str, Field(min_length=1, max_length=200)]
READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)


@contextmanager
def tool_errors() -> Iterator[None]:
    """Turn the anticipated failures of a call into `ToolError`s with a clear message."""
    try:
        yield
    except ToolError:
        raise
    except Refused as exc:
        raise ToolError(f"refused: {exc}") from None
    except ValidationError as exc:
        raise ToolError(first_error(exc)) from None
    except (ScopeError, RequestFailed) as exc:
        raise ToolError(str(exc)) from None
    except TimeoutError:
        raise ToolError("mnemostream did not answer in time: is the pipeline running?") from None


def _as_of(value: str | int | None) -> int | None:
    return epoch_ms(value, "as_of") if value is not None else None


def _item(item: ContextItem) -> MemoryItem:
    return MemoryItem(
        layer=item.layer,
        id=item.id,
        text=item.text,
        score=item.score,
        source=item.source,
        created_at=iso(item.created_at),
    )


def _answered(reply: ItemReply) -> ItemReply:
    if reply.not_found:
        raise ToolError("no such memory item for this user")
    if reply.error:
        raise ToolError(reply.error)
    return reply


def _fact(row: Mapping[str, Any]) -> Fact:
    metadata = row.get("metadata") or {}
    kind = metadata.get("factType") or metadata.get("type")
    return Fact(
        id=str(row["id"]),
        text=str(row["content"]),
        type=kind if isinstance(kind, str) else None,
        valid_from=iso(row.get("createdAt")),
        valid_until=iso(row.get("invalidAt")),
        superseded_by=row.get("supersededBy"),
        current=row.get("invalidAt") is None and row.get("status") == "active",
    )


def strict(tool: Tool) -> Tool:
    """`tool` refusing arguments its schema does not name (the SDK ignores them), with error
    messages that never echo the rejected value (a model may have sent private text)."""
    loose = tool.fn_metadata.arg_model
    config = ConfigDict(**{**loose.model_config, "extra": "forbid", "hide_input_in_errors": True})
    model = cast(
        type[BaseModel],
        type(loose.__name__, (loose,), {"model_config": config, "__module__": __name__}),
    )
    metadata = tool.fn_metadata.model_copy(update={"arg_model": model})
    schema = model.model_json_schema(by_alias=True)
    return tool.model_copy(update={"fn_metadata": metadata, "parameters": schema})


def memory_tools(client: MemoryClient, scope_of: ScopeOf) -> list[Tool]:
    """The six tools over `client`, each call scoped by `scope_of`."""

    async def remember(
        content: Annotated[Text, Field(description="The fact or note, in one sentence.")],
        type: Annotated[
            FactType | None,
            Field(description="What kind of fact it is (optional)."),
        ] = None,
        pinned: Annotated[
            bool, Field(description="Keep it through clean-ups however old it gets.")
        ] = False,
    ) -> Remembered:
        """Remember a fact or note about the user for later conversations (e.g. "Prefers
        window seats", "Their manager is Dana"). Remembering the same fact again keeps one
        item. Answers once the fact is stored, so the next call finds it."""
        with tool_errors():
            scope = scope_of()
            fact = RememberInput(content=content, type=type, retention="pinned" if pinned else None)
            try:  # answered once stored: the next call (forget, list_facts, recall) reads it
                event = await client.remember(fact, scope=scope, wait=True)
            except NotProcessed as exc:
                raise ToolError(
                    f"the fact was accepted but is not stored yet ({exc}); it will be once "
                    "the consumer groups catch up"
                ) from None
        s = event.scope
        digest = fact_hash(s.agent_wallet, s.user_address, event.content, s.mode, s.hai_id)
        return Remembered(
            id="fact_" + digest,
            content=event.content,
            type=stored_fact_type(event.type),
            pinned=event.retention == "pinned",
            event_id=event.event_id,
        )

    async def record_turn(
        user_message: Annotated[Text, Field(description="What the user said.")],
        assistant_message: Annotated[Text, Field(description="What the assistant answered.")],
    ) -> TurnStored:
        """Record one exchange of the conversation (the user's message and the assistant's
        answer) after answering: it becomes the transcript, working memory and the facts
        extracted from it."""
        with tool_errors():
            scope = scope_of()
            if scope.thread_id is None:
                scope = scope.model_copy(update={"thread_id": DEFAULT_THREAD})
            turn = TurnInput(user_message=user_message, assistant_message=assistant_message)
            event = await client.record_turn(turn, scope=scope)
        return TurnStored(
            turn_id=event.turn_id,
            thread_id=event.thread_id,
            session_id=event.session_id,
            event_id=event.event_id,
        )

    async def recall(
        query: Query,
        budget_chars: Annotated[
            int,
            Field(ge=200, le=50_000, description="The most characters the context may use."),
        ] = 4_000,
        as_of: AsOf = None,
    ) -> Recalled:
        """Before answering: the memory relevant to the user's message, packed into at most
        `budget_chars` characters, ready to put in the prompt (what the user said before,
        facts about them, their procedures and documents)."""
        with tool_errors():
            reply = await client.context(
                query, scope_of(), budget_chars=budget_chars, as_of=_as_of(as_of)
            )
        usage = reply.context_usage
        return Recalled(
            context=reply.prompt or "",
            items=[_item(i) for i in reply.items],
            characters=usage.characters if usage is not None else 0,
            budget_chars=budget_chars,
        )

    async def search_memory(
        query: Query,
        layers: Annotated[
            list[LayerName] | None,
            Field(
                min_length=1,
                max_length=6,
                description="Only these layers (default: all six).",
            ),
        ] = None,
        limit: Annotated[
            int, Field(ge=1, le=PER_LAYER_LIMIT_MAX, description="Hits per layer at most.")
        ] = PER_LAYER_LIMIT,
        as_of: AsOf = None,
    ) -> Found:
        """Search the user's memory: every matching item of each layer (working memory,
        conversation scenes, the fact graph, procedures, archives, vector memory) with its
        relevance score, best first. Item ids can be given to forget."""
        with tool_errors():
            reply = await client.search_layers(
                query, scope_of(), layers=layers, limit=limit, as_of=_as_of(as_of)
            )
        return Found(items=[_item(i) for i in reply.items], totals=reply.totals)

    async def forget(
        item_id: Annotated[
            ItemId | None,
            Field(
                description="The memory item to forget (an id from search_memory, "
                "list_facts or remember)."
            ),
        ] = None,
        everything: Annotated[
            bool,
            Field(
                description="Forget everything stored about the user instead (cannot be undone)."
            ),
        ] = False,
        hard: Annotated[
            bool,
            Field(
                description="With item_id: remove the item for good instead of marking it deleted."
            ),
        ] = False,
    ) -> Forgotten:
        """Forget one memory item of the user, or with `everything` all of the user's
        memory (facts, notes, conversations, procedures, archives). Only this user's memory
        is reached."""
        if (item_id is None) == (not everything):
            raise ToolError("give item_id, or everything=true to forget all of the user's memory")
        with tool_errors():
            scope = scope_of()
            if item_id is None:
                reply = _answered(await client.forget_user(scope))
                return Forgotten(erased=reply.erased)
            _answered(await client.item("delete", item_id, scope, hard=hard))
        return Forgotten(item_id=item_id, hard=hard)

    async def list_facts(
        as_of: AsOf = None,
        limit: Annotated[
            int, Field(ge=1, le=MAX_LIST_ITEMS, description="How many facts at most.")
        ] = 50,
    ) -> Facts:
        """List the facts known about the user, newest first, each with when it became true
        and, if a later fact replaced it, until when. With `as_of`, the facts that were true
        at that time."""
        with tool_errors():
            at = _as_of(as_of)
            reply = _answered(await client.newest_items(scope_of(), limit=limit, as_of=at))
        return Facts(as_of=iso(at), facts=[_fact(row) for row in reply.items])

    writes = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
    erases = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)
    made: list[tuple[Callable[..., Any], ToolAnnotations]] = [
        (remember, writes),
        (record_turn, writes),
        (recall, READ),
        (search_memory, READ),
        (forget, erases),
        (list_facts, READ),
    ]
    # a docstring's line breaks are layout, not content: one line per description
    return [
        strict(
            Tool.from_function(
                fn, description=" ".join((fn.__doc__ or "").split()), annotations=notes
            )
        )
        for fn, notes in made
    ]
