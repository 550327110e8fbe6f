"""Pins encrypted archives to IPFS through Pinata (reference §10.2, fixing §16.6).

Request: `POST {base_url}/pinning/pinJSONToIPFS` with
`{"pinataContent": {"archiveId", "encryption": "AES-256-GCM", "payload": base64(blob)},
"pinataMetadata": {"name": "mnemostream-archive-<archiveId>"}, "pinataOptions":
{"cidVersion": 1}}`; auth is a Bearer JWT, or else the `pinata_api_key` /
`pinata_secret_api_key` header pair. The reply `{"IpfsHash", "PinSize", "Timestamp"}` gives
the CID.

IPFS content is public, so this adapter only ever sees the sealed blob of
`engine.upkeep.archives.encrypt_payload` (the reference pinned the plain archive with every user's
rows and embeddings). Nothing that names a tenant goes to Pinata: the archive id is a hash.

The `httpx.AsyncClient` is built and closed by the composition root. Missing credentials
raise `InputRejected` at construction; a transport error, a timeout (`timeout` seconds for
the whole exchange), a non-2xx status or a reply without a string `IpfsHash` raise
`DependencyFailed`, so the job retries.
"""

from __future__ import annotations

import base64
import logging
from typing import Any

import httpx

from engine.adapters.http import post_json
from engine.errors import DependencyFailed, InputRejected

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.pinata.cloud"
DEFAULT_TIMEOUT_S = 10.0
PIN_JSON_PATH = "/pinning/pinJSONToIPFS"
ENCRYPTION = "AES-256-GCM"
NAME_PREFIX = "mnemostream-archive-"
_ERROR_BODY_CHARS = 200


class PinataPinner:
    """Pins one encrypted archive per call and returns its CID (v1)."""

    name = "pinata"

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        jwt: str | None = None,
        api_key: str | None = None,
        api_secret: str | None = None,
        base_url: str = DEFAULT_BASE_URL,
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        if jwt:
            self._headers = {"Authorization": f"Bearer {jwt}"}
        elif api_key and api_secret:
            self._headers = {"pinata_api_key": api_key, "pinata_secret_api_key": api_secret}
        else:
            raise InputRejected("pinata needs a JWT, or an API key and its secret")
        if timeout <= 0:
            raise InputRejected(f"pinata timeout must be positive, not {timeout}")
        self._client = client
        self._url = base_url.rstrip("/") + PIN_JSON_PATH
        self._timeout = timeout

    async def pin_archive(self, archive_id: str, encrypted: bytes) -> str:
        """Pin the sealed archive; returns the CID Pinata reports (`IpfsHash`)."""
        if not archive_id:
            raise InputRejected("an archive id is required to pin")
        body = {
            "pinataContent": {
                "archiveId": archive_id,
                "encryption": ENCRYPTION,
                "payload": base64.b64encode(encrypted).decode("ascii"),
            },
            "pinataMetadata": {"name": f"{NAME_PREFIX}{archive_id}"},
            "pinataOptions": {"cidVersion": 1},
        }
        reply = await self._post(body)
        cid = reply.get("IpfsHash") if isinstance(reply, dict) else None
        if not isinstance(cid, str) or not cid:
            raise DependencyFailed(f"{self.name}: reply has no IpfsHash")
        log.info("archive pinned", extra={"archiveId": archive_id, "cid": cid})
        return cid

    async def _post(self, body: dict[str, Any]) -> Any:
        """POST `body` and return the decoded JSON reply, within `self._timeout` seconds."""
        return await post_json(
            self._client, self.name, self._url, body, self._headers, self._timeout
        )
