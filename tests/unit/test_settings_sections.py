"""Settings grouped in sections: the flat keywords, a section given whole, and only the flat
variables read from the environment (`services.settings.base`)."""

from __future__ import annotations

import os

import pytest
from pydantic import SecretStr, ValidationError

from services.settings import KafkaSettings, Settings


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.upper().startswith("MNEMOSTREAM_"):
            monkeypatch.delenv(name)


def test_flat_keywords_land_in_their_sections() -> None:
    settings = Settings(
        kafka_bootstrap="b:1",
        mongo_db="d",
        embedder="hashing",
        search_workers=7,
        rerank_url="http://r/",
        gateway_operator_keys=[SecretStr("k")],
        group_prefix="p",
    )
    assert settings.kafka.bootstrap == "b:1"
    assert settings.mongo.db == "d"
    assert settings.embedding.provider == "hashing"
    assert settings.search.workers == 7
    assert settings.search.rerank_url == "http://r/"
    assert [k.get_secret_value() for k in settings.gateway.operator_keys] == ["k"]
    assert settings.group_prefix == "p"
    assert settings.kafka.model_fields_set == {"bootstrap"}


def test_a_section_given_whole_by_either_name_or_as_a_model() -> None:
    assert Settings(kafka={"bootstrap": "a:1"}).kafka.bootstrap == "a:1"
    assert Settings(kafka={"kafka_bootstrap": "a:2"}).kafka.bootstrap == "a:2"
    assert Settings(kafka=KafkaSettings(bootstrap="a:3")).kafka.bootstrap == "a:3"
    both = Settings(kafka=KafkaSettings(bootstrap="a:4"), session_timeout_ms=2000)
    assert (both.kafka.bootstrap, both.kafka.session_timeout_ms) == ("a:4", 2000)


def test_keywords_win_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMOSTREAM_KAFKA_BOOTSTRAP", "env:1")
    monkeypatch.setenv("MNEMOSTREAM_MONGO_DB", "env-db")
    settings = Settings(kafka_bootstrap="kw:1")
    assert (settings.kafka.bootstrap, settings.mongo.db) == ("kw:1", "env-db")


def test_a_section_has_no_other_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """One variable per setting: not the nested-delimiter form, not a JSON section."""
    monkeypatch.setenv("MNEMOSTREAM_KAFKA__BOOTSTRAP", "nested:1")
    monkeypatch.setenv("MNEMOSTREAM_MONGO", '{"db": "json-db"}')
    monkeypatch.setenv("MNEMOSTREAM_SEARCH_WORKERS", "9")
    settings = Settings()
    assert settings.kafka.bootstrap is None
    assert settings.mongo.db == "mnemostream"
    assert settings.search.workers == 9


def test_an_error_names_the_section_and_the_flat_name() -> None:
    with pytest.raises(ValidationError) as caught:
        Settings(gateway_port="not-a-port")
    assert "gateway.gateway_port" in str(caught.value)
    assert "not-a-port" not in str(caught.value)


def test_a_bad_tenant_key_is_refused_without_echoing_it() -> None:
    with pytest.raises(ValidationError) as caught:
        Settings(gateway_api_keys="bare-secret-key")
    assert "must be a JSON list" in str(caught.value)
    assert "bare-secret-key" not in str(caught.value)


def test_with_values_changes_settings_by_their_flat_names() -> None:
    settings = Settings(mongo_db="a", http_port=1)
    changed = settings.with_values(mongo_db="b", http_port=2, cache_prefix="c")
    assert (changed.mongo.db, changed.http_port, changed.redis.cache_prefix) == ("b", 2, "c")
    assert (settings.mongo.db, settings.http_port) == ("a", 1)
    with pytest.raises(TypeError, match="no setting 'mongo'"):
        settings.with_values(mongo="x")
