"""Turning events into memory: turns, explicit remember, fact extraction, facts, knowledge,
workflows, patterns."""
