"""The tenant export reader of a runtime's database (issue 31), for the admin group's
`memory.export`: the groups reach adapters only through the runtime."""

from __future__ import annotations

from engine.adapters.mongo.export import MongoTenantExport
from engine.errors import InputRejected
from services.endpoints import NotConfigured
from services.runtime import Runtime


def tenant_export(rt: Runtime) -> MongoTenantExport:
    """The export reader over `rt`'s database. `InputRejected` on the in-memory build, which
    has no database to export from."""
    try:
        mongo = rt.mongo
    except NotConfigured as exc:
        raise InputRejected(f"export reads MongoDB: {exc}") from None
    return MongoTenantExport(mongo[rt.settings.mongo.db])
