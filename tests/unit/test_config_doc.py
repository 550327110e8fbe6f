"""docs/configuration.md is the generator's output for the current settings model, so a setting
added, removed, renamed or given another default cannot leave the page behind."""

from __future__ import annotations

from pathlib import Path

from services.ops.config_doc import render, rows
from services.settings import Settings

PAGE = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def test_the_committed_page_is_the_generators_output() -> None:
    assert PAGE.read_text() == render(), (
        "regenerate: python -m services.ops.config_doc > docs/configuration.md"
    )


def test_every_setting_has_a_row_and_a_description() -> None:
    listed = list(rows())
    variables = [row.variable for row in listed]
    assert len(variables) == len(set(variables)), "two settings read the same variable"
    assert len(variables) >= len(Settings.model_fields)
    assert all(v.startswith("MNEMOSTREAM_") for v in variables)
    assert [row.variable for row in listed if not row.description] == []


def test_the_rows_read_the_variables_pydantic_settings_reads(monkeypatch) -> None:
    """Each documented variable, set in the environment, changes its setting."""
    monkeypatch.setenv("MNEMOSTREAM_MONGO_DB", "from-the-environment")
    monkeypatch.setenv("MNEMOSTREAM_GATEWAY_PORT", "9999")
    dumped = str(Settings().model_dump())
    assert "from-the-environment" in dumped
    assert "9999" in dumped
    variables = {row.variable for row in rows()}
    assert {"MNEMOSTREAM_MONGO_DB", "MNEMOSTREAM_GATEWAY_PORT"} <= variables


def test_nested_settings_models_are_listed_field_by_field() -> None:
    """When settings are grouped into models, each field is still one row, under the variable
    pydantic-settings reads: the nested delimiter, or a nested class's own `env_prefix`."""
    from pydantic import BaseModel, Field
    from pydantic_settings import BaseSettings, SettingsConfigDict

    class Retry(BaseModel):
        attempts: int = Field(default=3, ge=1, description="Tries.")

    class Redis(BaseSettings):
        model_config = SettingsConfigDict(env_prefix="MNEMOSTREAM_REDIS_")
        url: str | None = Field(default=None, description="URL.")

    class Nested(BaseSettings):
        model_config = SettingsConfigDict(env_prefix="MNEMOSTREAM_", env_nested_delimiter="__")
        retry: Retry = Field(default_factory=Retry)
        redis: Redis = Field(default_factory=Redis)
        name: str = Field(default="x", description="Name.")

    listed = {row.variable: row for row in rows(Nested)}
    assert set(listed) == {
        "MNEMOSTREAM_RETRY__ATTEMPTS",
        "MNEMOSTREAM_REDIS_URL",
        "MNEMOSTREAM_NAME",
    }
    assert listed["MNEMOSTREAM_RETRY__ATTEMPTS"].type == "int, ≥ 1"
    assert listed["MNEMOSTREAM_RETRY__ATTEMPTS"].default == "`3`"
    assert listed["MNEMOSTREAM_REDIS_URL"].default == "unset"
