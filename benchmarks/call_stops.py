"""The function stops of a body's path from the SDK to the publish (issue 33).

Follows `MemoryClient.record_turn(body)` (or `remember`, `context`) with `sys.setprofile`
from the call to the publish, and lists the functions of the project's own code (`schemas`,
`services`, `engine`; comprehensions left out) entered on the way, each once, in the order
first entered. Two counts:

* `functions`: every one, the validators and default factories pydantic calls included
  (the count issue 33's helper traced: 39 for a turn without tool events);
* `stops`: the calls a newcomer follows by reading the code from `record_turn`: the entry,
  then each function a stop calls by name (the caller's line names it); a model's
  validators, and what they call, are read with the model, not followed.

No broker is needed: the client is not started, and the walk ends where the publish would
send.

    python -m benchmarks.call_stops            # each operation's chain and counts
    python -m benchmarks.call_stops --json     # one JSON object, by operation
"""

from __future__ import annotations

import argparse
import asyncio
import json
import linecache
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import FrameType
from typing import Any

from services.sdk.client import MemoryClient

ROOT = Path(__file__).resolve().parent.parent
OWN = tuple(str(ROOT / part) + "/" for part in ("schemas", "services", "engine"))
END = "publish"
"""The transport's send (`services.sdk.transport.Transport.publish`, `_ask`): the walk ends."""

TURN = {
    "agentWallet": "agent-1",
    "userAddress": "user-1",
    "threadId": "thread-1",
    "messages": [
        {"role": "user", "content": "I moved to Lisbon last spring."},
        {"role": "assistant", "content": "Noted: Lisbon since last spring."},
    ],
    "toolEvents": [{"name": "search", "args": {"q": "Lisbon"}, "status": "ok"}],
}
FACT = {"agentWallet": "agent-1", "userAddress": "user-1", "content": "Prefers tea."}


def _stop(frame: FrameType) -> str:
    code = frame.f_code
    module = Path(code.co_filename).relative_to(ROOT).with_suffix("")
    return f"{'.'.join(module.parts)}.{code.co_qualname}"


def _names(frame: FrameType) -> bool:
    """Whether the caller's line names the function (a call a reader follows), not pydantic
    calling a validator or a default factory."""
    caller = frame.f_back
    if caller is None:
        return False
    line = linecache.getline(caller.f_code.co_filename, caller.f_lineno)
    return frame.f_code.co_name in line


def trace(call: Callable[[MemoryClient], Awaitable[object]]) -> dict[str, bool]:
    """The project functions `call` enters until the transport publishes, in the order first
    entered, each with whether it is a stop: the entry, or a call a stop makes by name
    (what a model's validators call is read with the model, not followed)."""
    chain: dict[str, bool] = {}
    followed: dict[int, FrameType] = {}  # the frames held, so no id is reused
    done = False

    def profile(frame: FrameType, event: str, _arg: Any) -> None:
        nonlocal done
        if done or event != "call" or not frame.f_code.co_filename.startswith(OWN):
            return
        if "<" in frame.f_code.co_name:  # a comprehension or a generator expression: part
            if frame.f_back is not None and id(frame.f_back) in followed:  # of its function
                followed[id(frame)] = frame
            return
        if frame.f_back is not None and frame.f_back.f_code is frame.f_code:
            return  # a coroutine resumed, not a new stop
        caller = frame.f_back
        stop = not chain or (caller is not None and id(caller) in followed and _names(frame))
        if stop:
            followed[id(frame)] = frame
        name = _stop(frame)
        chain[name] = chain.get(name, False) or stop
        if frame.f_code.co_name in (END, "_ask") and "transport" in frame.f_code.co_filename:
            done = True

    client = MemoryClient("localhost:1")

    async def run() -> None:
        sys.setprofile(profile)
        try:
            await call(client)
        except RuntimeError:  # not started: the publish would have sent here
            pass
        finally:
            sys.setprofile(None)

    asyncio.run(run())
    return chain


MESSAGES = {k: v for k, v in TURN.items() if k != "toolEvents"}
PAIR = {k: v for k, v in MESSAGES.items() if k != "messages"}
PAIR |= {"userMessage": "I moved to Lisbon.", "assistantMessage": "Noted."}

OPERATIONS: dict[str, Callable[[MemoryClient], Awaitable[object]]] = {
    "record_turn": lambda c: c.record_turn(MESSAGES),
    "record_turn_pair": lambda c: c.record_turn(PAIR),
    "record_turn_tools": lambda c: c.record_turn(TURN),
    "remember": lambda c: c.remember(FACT),
    "context": lambda c: c.context("where do I live?", {"agentWallet": "agent-1"}),
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="one JSON object, by operation")
    parser.add_argument("--operation", choices=sorted(OPERATIONS), default=None)
    args = parser.parse_args(argv)
    names = [args.operation] if args.operation else list(OPERATIONS)
    traced = {name: trace(OPERATIONS[name]) for name in names}
    if args.json:
        print(
            json.dumps(
                {
                    name: {
                        "functions": len(chain),
                        "stops": sum(chain.values()),
                        "chain": chain,
                    }
                    for name, chain in traced.items()
                }
            )
        )
        return
    for name, chain in traced.items():
        print(f"{name}: {len(chain)} functions, {sum(chain.values())} stops (* followed)")
        for n, (stop, followed) in enumerate(chain.items(), 1):
            print(f"  {n:2}. {'*' if followed else ' '} {stop}")


if __name__ == "__main__":
    main()
