"""Operator tools: the CLI, the local stack launcher, replay, verify, dead-letter redrive, the
scheduler, the demo."""
