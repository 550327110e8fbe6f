"""The SDK's former import path, the one compatibility shim left: `from services.client import
MemoryClient` still works and warns (`DeprecationWarning`); import `from services.sdk import
MemoryClient`."""

import warnings

from services.sdk import MemoryClient, Position, RequestFailed

warnings.warn(
    "services.client is deprecated: import MemoryClient from services.sdk",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = ["MemoryClient", "Position", "RequestFailed"]
