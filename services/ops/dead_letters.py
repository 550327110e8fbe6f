"""The dead-letter reader and redrive of `mnemostream dlq` (kept under this name for the
operator tools and scripts that import it; the code is `services.stream.dead_letters`, where
the gateway's console reaches it too)."""

from services.stream.dead_letters import Letter, read_letters, redrive, source_value

__all__ = ["Letter", "read_letters", "redrive", "source_value"]
