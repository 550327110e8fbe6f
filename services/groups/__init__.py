"""The consumer groups: one FastStream router per group, wiring only (the engine does the work)."""
