"""The HTTP gateway is FastAPI over the SDK and the contracts: importing it loads no consumer
group, no runtime, no store adapter and no store driver (issue 14)."""

from __future__ import annotations

import json
import subprocess
import sys

FORBIDDEN_PREFIXES = ("services.groups", "services.runtime", "services.ops", "engine.adapters")
FORBIDDEN_DRIVERS = ("pymongo", "redis", "typer", "httpx")


def test_gateway_loads_no_group_runtime_or_adapter() -> None:
    probe = "import json, sys\nimport services.gateway\nprint(json.dumps(sorted(sys.modules)))\n"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    loaded = set(json.loads(out))
    wrong = sorted(m for m in loaded if m.startswith(FORBIDDEN_PREFIXES))
    assert wrong == []
    assert sorted(loaded & set(FORBIDDEN_DRIVERS)) == []
