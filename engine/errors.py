"""The engine's exception tree. The edge maps these to DLQ entries or HTTP statuses.

MemoryError_ (base)
├── InputRejected        bad input: 400 at HTTP, straight to the DLQ on Kafka (no retry)
├── NotFound             no such item within the caller's scope: 404
└── DependencyFailed     a store, cache or model provider failed: retried with backoff,
    │                    then dead-lettered
    └── EmbeddingFailed  the embedder could not produce vectors
"""


class MemoryError_(Exception):
    """Base of every error the engine raises on purpose."""


class InputRejected(MemoryError_):
    """The input is invalid; retrying cannot help."""


class NotFound(MemoryError_):
    """Nothing matches within the caller's scope."""


class DependencyFailed(MemoryError_):
    """A dependency (store, cache, provider) failed; a retry may help."""


class EmbeddingFailed(DependencyFailed):
    """The embedder failed."""
