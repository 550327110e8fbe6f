"""Kafka plumbing shared by every group: subscriber options, dead letters, offsets, topics,
metrics, health, AsyncAPI."""
