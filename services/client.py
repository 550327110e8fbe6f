"""Compatibility path of the SDK: `from services.client import MemoryClient` keeps working;
new code imports `from services.sdk import MemoryClient`."""

from services.sdk import MemoryClient, Position, RequestFailed

__all__ = ["MemoryClient", "Position", "RequestFailed"]
