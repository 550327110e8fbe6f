"""Pinning stored archives to IPFS, always encrypted (reference §10.2, fixing §16.6): the
`archive_create` job pins what it archived, and the admin group's `archives.sync` pins one
archive on request (`POST /api/memory/archives/{id}/sync`). Both need Pinata credentials
*and* `MNEMOSTREAM_ARCHIVE_ENCRYPTION_KEY` (`services.runtime.build_pinner`); the stored
archive is read opened (`engine.upkeep.archive_seal`) and sealed again for IPFS."""

from __future__ import annotations

from engine.errors import InputRejected, NotFound
from engine.upkeep.archives import encrypt_payload
from services.runtime import Runtime

NOT_CONFIGURED = (
    "archive pinning is not configured: set MNEMOSTREAM_PINATA_JWT (or MNEMOSTREAM_PINATA_API_KEY"
    " and MNEMOSTREAM_PINATA_API_SECRET) and MNEMOSTREAM_ARCHIVE_ENCRYPTION_KEY"
)


async def pin_if_unpinned(rt: Runtime, archive_id: str) -> bool:
    """Pin the stored archive, sealed with AES-256-GCM under the current archive key (the
    archive id as associated data), unless it already has a CID; store the CID. False when
    pinning is not configured, the archive is pinned already or has no content. Pinata
    failures raise `DependencyFailed`."""
    keys = rt.archive_keys
    if rt.pinner is None or keys is None:
        return False
    found = await rt.archives.unpinned(archive_id)  # opened: the store seals it at rest
    if found is None or found.content is None:
        return False
    blob = encrypt_payload(found.content.encode(), keys.current, archive_id=archive_id)
    cid = await rt.pinner.pin_archive(archive_id, blob)
    await rt.archives.set_cid(archive_id, cid)
    return True


async def sync_archive(
    rt: Runtime, archive_id: str, agent_wallet: str, user_address: str | None
) -> dict[str, object]:
    """`{ipfsHash, pinned}` for one archive of `agent_wallet` (of `user_address` when given,
    else of any of the agent's users: only a CID comes back, never content). An archive
    pinned already answers its CID with `pinned: false`. NotFound for a missing archive or
    another tenant's; InputRejected when pinning is not configured."""
    found = await rt.maintenance.archive_cid(
        archive_id, agent_wallet, user_address, any_user=user_address is None
    )
    if found is None:
        raise NotFound(f"no archive {archive_id} in this scope")
    if found[0] is not None:
        return {"ipfsHash": found[0], "pinned": False}
    if rt.pinner is None or rt.archive_keys is None:
        raise InputRejected(NOT_CONFIGURED)
    pinned = await pin_if_unpinned(rt, archive_id)
    after = await rt.maintenance.archive_cid(archive_id, agent_wallet, None, any_user=True)
    if after is None or after[0] is None:
        raise InputRejected(f"archive {archive_id} has no content to pin")
    return {"ipfsHash": after[0], "pinned": pinned}
