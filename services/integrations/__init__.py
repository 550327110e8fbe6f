"""Adapters that plug mnemostream into agent frameworks, each an optional extra.

* `services.integrations.langgraph` — `MnemoStore`, a LangGraph `BaseStore`
  (`pip install 'mnemostream[langgraph]'`).
* `services.integrations.openai_agents` — `MnemoSession`, an OpenAI Agents SDK `Session`,
  and `memory_instructions`, dynamic instructions with pre_turn context
  (`pip install 'mnemostream[openai-agents]'`).

Every module here talks to mnemostream through the SDK's `MemoryClient` only. The frameworks
are imported by these modules alone, never by the core packages, so a core install does not
need them; importing this package imports neither.
"""
