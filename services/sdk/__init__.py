"""The Python SDK: `MemoryClient` publishes events and asks request-reply questions over Kafka."""
