"""The production compose file runs every consumer group as its own service (scaled on its
own), and nothing that is not a group."""

from __future__ import annotations

from pathlib import Path

import yaml

from services.groups.app import GROUPS

COMPOSE = Path(__file__).resolve().parents[2] / "docker-compose.yml"


def test_every_consumer_group_is_a_service_of_its_own() -> None:
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    run = {
        spec["command"][1]
        for spec in services.values()
        if isinstance(spec.get("command"), list) and spec["command"][:1] == ["run"]
    }
    assert run == set(GROUPS)
