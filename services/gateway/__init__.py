"""The HTTP gateway (FastAPI): `create_app(settings, client=None)`."""

from services.gateway.app import create_app
from services.gateway.auth import GatewayNotSecured

__all__ = ["GatewayNotSecured", "create_app"]
