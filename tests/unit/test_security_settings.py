"""Security settings: their validation, their mapping to each driver's options
(`services.stream.security`), and that no secret is ever printed, logged or repr'd.

The mapping to aiokafka/FastStream is checked here and not against a broker: the local
broker (Tansu 0.6) has no TLS listener (its `--cert` and `--key` cannot be given together)
and cannot provision SASL users in memory storage (what runs against real servers is in
tests/integration/test_secured_servers.py)."""

from __future__ import annotations

import logging
import ssl
from pathlib import Path
from typing import Any

import pytest
from faststream.kafka import KafkaBroker
from faststream.kafka.security import parse_security
from faststream.security import BaseSecurity, SASLPlaintext, SASLScram256, SASLScram512
from pydantic import SecretStr, ValidationError
from typer.testing import CliRunner

from services.endpoints import Endpoints, mask_url
from services.ops.cli import app
from services.ops.stack import infra_app
from services.settings import Settings
from services.stream.security import (
    kafka_options,
    kafka_security,
    mongo_options,
    redis_options,
    redis_url,
)
from tests.support.certs import Certs, make_certs

KAFKA_PW = "kafka-pw-9f1c"
MONGO_PW = "mongo-pw-4b7e"
REDIS_PW = "redis-pw-2d8a"
URI_PW = "uri-pw-71aa"
SECRETS = (KAFKA_PW, MONGO_PW, REDIS_PW, URI_PW)


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's MNEMOSTREAM_* security variables must not leak into these tests."""
    for name in ("KAFKA_SECURITY_PROTOCOL", "KAFKA_SASL_USERNAME", "KAFKA_SASL_PASSWORD"):
        monkeypatch.delenv(f"MNEMOSTREAM_{name}", raising=False)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


def secure_settings(certs: Certs, **extra: Any) -> Settings:
    """Every secret set, the URIs carrying passwords too."""
    values: dict[str, Any] = {
        "kafka_bootstrap": "127.0.0.1:1",
        "mongo_uri": SecretStr(f"mongodb://app:{URI_PW}@127.0.0.1:2/?retryWrites=false"),
        "redis_url": SecretStr(f"redis://default:{URI_PW}@127.0.0.1:3/0"),
        "kafka_security_protocol": "SASL_SSL",
        "kafka_sasl_mechanism": "SCRAM-SHA-512",
        "kafka_sasl_username": "svc",
        "kafka_sasl_password": SecretStr(KAFKA_PW),
        "kafka_ssl_cafile": certs.ca,
        "mongo_tls": True,
        "mongo_tls_ca_file": certs.ca,
        "mongo_username": "app",
        "mongo_password": SecretStr(MONGO_PW),
        "mongo_auth_source": "admin",
        "redis_username": "app",
        "redis_password": SecretStr(REDIS_PW),
        "redis_tls": True,
        "redis_tls_ca_file": certs.ca,
    }
    return Settings(**{**values, **extra})


def assert_no_secret(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text


# --- Kafka -----------------------------------------------------------------------------------


def test_plaintext_kafka_has_no_options() -> None:
    settings = Settings()
    assert kafka_options(settings) == {}
    assert kafka_security(settings) is None


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_plaintext_options(mechanism: str) -> None:
    settings = Settings(
        kafka_security_protocol="SASL_PLAINTEXT",
        kafka_sasl_mechanism=mechanism,
        kafka_sasl_username="svc",
        kafka_sasl_password=SecretStr(KAFKA_PW),
    )
    assert kafka_options(settings) == {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": mechanism,
        "sasl_plain_username": "svc",
        "sasl_plain_password": KAFKA_PW,
    }


def test_ssl_options_carry_a_verifying_context(certs: Certs) -> None:
    settings = Settings(
        kafka_security_protocol="SSL",
        kafka_ssl_cafile=certs.ca,
        kafka_ssl_certfile=certs.cert,
        kafka_ssl_keyfile=certs.key,
    )
    options = kafka_options(settings)
    assert set(options) == {"security_protocol", "ssl_context"}
    assert options["security_protocol"] == "SSL"
    context = options["ssl_context"]
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname
    assert context.get_ca_certs()[0]["subject"] == ((("commonName", "mnemostream test CA"),),)


def test_ssl_without_a_ca_file_trusts_the_system() -> None:
    options = kafka_options(Settings(kafka_security_protocol="SSL"))
    assert isinstance(options["ssl_context"], ssl.SSLContext)
    assert options["ssl_context"].verify_mode == ssl.CERT_REQUIRED


@pytest.mark.parametrize(
    ("protocol", "mechanism", "kind"),
    [
        ("SSL", "PLAIN", BaseSecurity),
        ("SASL_PLAINTEXT", "PLAIN", SASLPlaintext),
        ("SASL_SSL", "SCRAM-SHA-256", SASLScram256),
        ("SASL_SSL", "SCRAM-SHA-512", SASLScram512),
    ],
)
def test_faststream_security_is_the_same_connection(
    certs: Certs, protocol: str, mechanism: str, kind: type[BaseSecurity]
) -> None:
    """The broker's `security=` turns into exactly the aiokafka arguments every other
    client gets, and a KafkaBroker built with it carries them."""
    sasl = protocol.startswith("SASL")
    settings = Settings(
        kafka_security_protocol=protocol,
        kafka_sasl_mechanism=mechanism,
        kafka_sasl_username="svc" if sasl else None,
        kafka_sasl_password=SecretStr(KAFKA_PW) if sasl else None,
        kafka_ssl_cafile=certs.ca if protocol.endswith("SSL") else None,
    )
    security = kafka_security(settings)
    assert type(security) is kind
    expected = kafka_options(settings)
    parsed = parse_security(security)
    broker_kwargs = KafkaBroker("127.0.0.1:1", security=security)._connection_kwargs
    for got in (parsed, broker_kwargs):
        for key, value in expected.items():
            if key == "ssl_context":
                assert isinstance(got[key], ssl.SSLContext)
                assert got[key].verify_mode == ssl.CERT_REQUIRED
            else:
                assert got[key] == value
    if protocol == "SASL_PLAINTEXT":
        assert parsed["ssl_context"] is None


# --- MongoDB and Redis ------------------------------------------------------------------------


def test_mongo_options(certs: Certs) -> None:
    assert mongo_options(Settings()) == {}
    settings = Settings(
        mongo_tls=True,
        mongo_tls_ca_file=certs.ca,
        mongo_tls_cert_key_file=certs.cert,
        mongo_username="app",
        mongo_password=SecretStr(MONGO_PW),
        mongo_auth_source="admin",
    )
    assert mongo_options(settings) == {
        "tls": True,
        "tlsCAFile": str(certs.ca),
        "tlsCertificateKeyFile": str(certs.cert),
        "username": "app",
        "password": MONGO_PW,
        "authSource": "admin",
    }


def test_redis_url_and_options(certs: Certs) -> None:
    plain = Settings()
    assert redis_url(plain, "redis://h:1/0") == "redis://h:1/0"
    assert redis_options(plain, "redis://h:1/0") == {}
    password = Settings(redis_password=SecretStr(REDIS_PW))
    assert redis_options(password, "redis://h:1/0") == {"password": REDIS_PW}
    tls = Settings(
        redis_tls=True,
        redis_tls_ca_file=certs.ca,
        redis_username="app",
        redis_password=SecretStr(REDIS_PW),
    )
    assert redis_url(tls, "redis://h:1/0") == "rediss://h:1/0"
    assert redis_options(tls, "redis://h:1/0") == {
        "password": REDIS_PW,
        "username": "app",
        "ssl_ca_certs": str(certs.ca),
    }
    by_url = Settings(redis_url=SecretStr("rediss://h:1/0"), redis_tls_ca_file=certs.ca)
    assert redis_options(by_url, "rediss://h:1/0") == {"ssl_ca_certs": str(certs.ca)}


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("mongodb://app:pw@h:1/?tls=true", "mongodb://app:***@h:1/?tls=true"),
        ("mongodb://app:p%40ss@h1:1,h2:2/db", "mongodb://app:***@h1:1,h2:2/db"),
        ("redis://:pw@h:1/0", "redis://:***@h:1/0"),
        ("rediss://default:pw@h:1/0", "rediss://default:***@h:1/0"),
        ("redis://h:1/0", "redis://h:1/0"),
        ("mongodb://app@h:1/", "mongodb://app@h:1/"),
        ("127.0.0.1:9092,127.0.0.2:9092", "127.0.0.1:9092,127.0.0.2:9092"),
    ],
)
def test_mask_url(url: str, masked: str) -> None:
    assert mask_url(url) == masked


# --- validation -----------------------------------------------------------------------------


def test_a_fully_secured_configuration_is_valid(certs: Certs) -> None:
    settings = secure_settings(certs)
    assert settings.kafka.security_protocol == "SASL_SSL"


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            {"kafka_security_protocol": "SASL_SSL"},
            "MNEMOSTREAM_KAFKA_SECURITY_PROTOCOL=SASL_SSL needs MNEMOSTREAM_KAFKA_SASL_USERNAME "
            "and MNEMOSTREAM_KAFKA_SASL_PASSWORD",
        ),
        (
            {"kafka_security_protocol": "SASL_PLAINTEXT", "kafka_sasl_username": "svc"},
            "needs MNEMOSTREAM_KAFKA_SASL_USERNAME and MNEMOSTREAM_KAFKA_SASL_PASSWORD",
        ),
        (
            {"kafka_sasl_username": "svc", "kafka_sasl_password": SecretStr(KAFKA_PW)},
            "Kafka SASL credentials are set but MNEMOSTREAM_KAFKA_SECURITY_PROTOCOL is PLAINTEXT",
        ),
        ({"kafka_ssl_cafile": "CA"}, "Kafka TLS files are set but"),
        (
            {"kafka_security_protocol": "SSL", "kafka_ssl_keyfile": "KEY"},
            "MNEMOSTREAM_KAFKA_SSL_KEYFILE needs MNEMOSTREAM_KAFKA_SSL_CERTFILE",
        ),
        (
            {"kafka_security_protocol": "SSL", "kafka_ssl_cafile": "/nowhere/ca.pem"},
            "MNEMOSTREAM_KAFKA_SSL_CAFILE: no such file /nowhere/ca.pem",
        ),
        ({"mongo_tls_ca_file": "CA"}, "MongoDB TLS files are set but MNEMOSTREAM_MONGO_TLS"),
        (
            {"mongo_tls": True, "mongo_tls_cert_key_file": "/nowhere/client.pem"},
            "MNEMOSTREAM_MONGO_TLS_CERT_KEY_FILE: no such file",
        ),
        ({"mongo_password": SecretStr(MONGO_PW)}, "MNEMOSTREAM_MONGO_USERNAME and"),
        ({"redis_username": "app"}, "MNEMOSTREAM_REDIS_USERNAME needs MNEMOSTREAM_REDIS_PASSWORD"),
        ({"redis_tls_ca_file": "CA"}, "MNEMOSTREAM_REDIS_TLS_CA_FILE is set but Redis is not TLS"),
    ],
)
def test_invalid_combinations_are_named(certs: Certs, values: dict[str, Any], message: str) -> None:
    named = {"CA": certs.ca, "KEY": certs.key}
    values = {k: named.get(v, v) if isinstance(v, str) else v for k, v in values.items()}
    with pytest.raises(ValidationError) as caught:
        Settings(**values)
    assert message in str(caught.value)
    assert_no_secret(str(caught.value))


def test_validation_errors_do_not_echo_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """pydantic prints a failed model's input, and a settings model's input is every
    MNEMOSTREAM_* variable: the secrets among them must not be in the message."""
    monkeypatch.setenv("MNEMOSTREAM_KAFKA_SECURITY_PROTOCOL", "SASL_SSL")
    monkeypatch.setenv("MNEMOSTREAM_KAFKA_SASL_PASSWORD", KAFKA_PW)
    monkeypatch.setenv("MNEMOSTREAM_REDIS_PASSWORD", REDIS_PW)
    monkeypatch.setenv("MNEMOSTREAM_MONGO_URI", f"mongodb://app:{URI_PW}@h:1/")
    with pytest.raises(ValidationError) as caught:
        Settings()
    assert "MNEMOSTREAM_KAFKA_SASL_USERNAME" in str(caught.value)
    assert_no_secret(str(caught.value))
    assert_no_secret(repr(caught.value))


# --- secrets are never printed ----------------------------------------------------------------


def test_settings_repr_str_dump_and_logs_hide_secrets(
    certs: Certs, caplog: pytest.LogCaptureFixture
) -> None:
    settings = secure_settings(certs)
    caplog.set_level(logging.DEBUG)
    log = logging.getLogger("tests.security")
    log.info("settings %s", settings)
    log.info("settings %r", settings)
    log.info("dump %s", settings.model_dump())
    log.info("options", extra={"settings": settings})
    for text in (
        repr(settings),
        str(settings),
        settings.model_dump_json(),
        str(settings.model_dump()),
        caplog.text,
    ):
        assert_no_secret(text)


def test_endpoints_repr_masks_uri_passwords() -> None:
    ends = Endpoints(
        kafka_bootstrap="127.0.0.1:1",
        mongo_uri=f"mongodb://app:{URI_PW}@127.0.0.1:2/",
        redis_url=f"redis://:{URI_PW}@127.0.0.1:3/0",
    )
    assert_no_secret(repr(ends))
    assert_no_secret(f"{ends}")
    assert "mongodb://app:***@127.0.0.1:2/" in repr(ends)


def test_infra_up_with_given_urls_masks_their_passwords(tmp_path: Path) -> None:
    """`infra up` with every URL handed in starts and probes nothing, and prints the
    endpoints; `infra env` alone prints the real values (it exists to be eval'd)."""
    runner = CliRunner()
    mongo = f"mongodb://app:{URI_PW}@127.0.0.1:2/"
    redis = f"redis://:{URI_PW}@127.0.0.1:3/0"
    state = str(tmp_path / "state")
    up = runner.invoke(
        infra_app,
        ["up", "--state-dir", state, "--kafka", "127.0.0.1:1", "--mongo", mongo, "--redis", redis],
    )
    assert up.exit_code == 0, up.output
    assert "MNEMOSTREAM_MONGO_URI=mongodb://app:***@127.0.0.1:2/" in up.output
    assert_no_secret(up.output)
    env = runner.invoke(infra_app, ["env", "--state-dir", state])
    assert env.exit_code == 0
    assert f"export MNEMOSTREAM_MONGO_URI={mongo}" in env.output


def test_cli_with_invalid_security_settings_shows_no_secret(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A CLI command reading bad settings fails with the variables to fix, not their values."""
    monkeypatch.setenv("MNEMOSTREAM_KAFKA_SASL_PASSWORD", KAFKA_PW)
    monkeypatch.setenv("MNEMOSTREAM_MONGO_URI", f"mongodb://app:{URI_PW}@h:1/")
    monkeypatch.setenv("MNEMOSTREAM_STATE_DIR", str(tmp_path))
    result = CliRunner().invoke(app, ["topics", "create"])
    assert result.exit_code != 0
    assert isinstance(result.exception, ValidationError)
    assert "MNEMOSTREAM_KAFKA_SECURITY_PROTOCOL is PLAINTEXT" in str(result.exception)
    assert_no_secret(result.output)
    assert_no_secret(str(result.exception))
