"""Gateway helpers without a network: credential checks, settings, error messages, clamps,
and the OpenAPI document (every route, 400 and 422 as `{"error"}`, security schemes)."""

from __future__ import annotations

import time

import jwt
import pytest
from fastapi.exceptions import RequestValidationError
from pydantic import SecretStr

from services.gateway import GatewayNotSecured, create_app
from services.gateway.auth import Authenticator, Principal
from services.gateway.deps import at_most, known_layers
from services.gateway.errors import ApiError, validation_message
from services.settings import Settings

SECRET = "unit-secret-of-at-least-thirty-two-bytes"  # noqa: S105 - a test fixture


def token(secret: str = SECRET, **claims: object) -> str:
    return jwt.encode(claims, secret, algorithm="HS256")


def status_of(call: object) -> tuple[int, str]:
    assert callable(call)
    with pytest.raises(ApiError) as caught:
        call()
    return caught.value.status_code, str(caught.value.detail)


def test_refuses_to_run_without_credentials_unless_anonymous_is_explicit() -> None:
    with pytest.raises(GatewayNotSecured, match="GATEWAY_API_KEYS"):
        Authenticator([], None)
    with pytest.raises(GatewayNotSecured):
        create_app(Settings(gateway_api_keys=[], gateway_jwt_secret=None))
    assert Authenticator([], None, allow_anonymous=True).check(None, None) == Principal("anonymous")


def test_anonymous_flag_is_ignored_once_credentials_exist() -> None:
    auth = Authenticator(["k"], None, allow_anonymous=True)
    assert status_of(lambda: auth.check(None, None))[0] == 401


def test_api_key_in_either_header() -> None:
    auth = Authenticator(["k1", "k2"], None)
    assert auth.check("k2", None) == Principal("api_key")
    assert auth.check(None, "k1") == Principal("api_key")
    assert status_of(lambda: auth.check("k3", None)) == (401, "invalid API key")
    assert status_of(lambda: auth.check(None, "k3")) == (401, "invalid API key")
    assert status_of(lambda: auth.check(None, None))[0] == 401


def test_jwt_claims_name_the_caller_and_confine_the_agent() -> None:
    auth = Authenticator([], SECRET)
    assert auth.check(None, token(sub="svc")) == Principal("jwt", "svc", None)
    confined = auth.check(None, token(sub="rt", agent="0xA"))
    assert confined == Principal("jwt", "rt", "0xA")
    assert auth.check(None, token(agentWallet="0xB")).agent == "0xB"
    confined.allow("0xA")
    assert status_of(lambda: confined.allow("0xa"))[0] == 403  # case-sensitive ids
    assert confined.agent_or(None) == "0xA"
    assert status_of(lambda: confined.agent_or("0xZ"))[0] == 403
    assert Principal("api_key").agent_or("0xZ") == "0xZ"


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (token("another-secret-of-at-least-thirty-two-bytes", sub="x"), "invalid token"),
        (token(sub="x", exp=int(time.time()) - 10), "token expired"),
        (token(sub="x", nbf=int(time.time()) + 600), "invalid token"),
        (token(agent=""), "invalid token: the agent claim must be a non-empty string"),
        (token(agent=7), "invalid token: the agent claim must be a non-empty string"),
        (jwt.encode({"sub": "x"}, SECRET * 2, algorithm="HS512"), "invalid token"),
        ("not-a-jwt", "invalid token"),
    ],
)
def test_bad_tokens_are_401(bad: str, message: str) -> None:
    auth = Authenticator(["k"], SECRET)
    assert status_of(lambda: auth.check(None, bad)) == (401, message)


def test_settings_read_keys_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMOSTREAM_GATEWAY_API_KEYS", "key-alpha, key-beta,")
    monkeypatch.setenv("MNEMOSTREAM_GATEWAY_JWT_SECRET", "jwt-gamma")
    settings = Settings()
    assert [k.get_secret_value() for k in settings.gateway_api_keys] == ["key-alpha", "key-beta"]
    for secret in ("key-alpha", "key-beta", "jwt-gamma"):
        assert secret not in repr(settings)  # masked wherever settings are printed
    assert settings.gateway_port == 8080
    monkeypatch.setenv("MNEMOSTREAM_GATEWAY_API_KEYS", '["x", "y"]')
    assert [k.get_secret_value() for k in Settings().gateway_api_keys] == ["x", "y"]


def test_validation_messages_are_one_clear_line() -> None:
    exc = RequestValidationError(
        [
            {
                "type": "literal_error",
                "loc": ("body", "messages", 0, "role"),
                "msg": "Input should be 'user'",
            }
        ]
    )
    assert validation_message(exc) == "messages[0].role: Input should be 'user'"
    assert (
        validation_message(RequestValidationError([{"type": "json_invalid", "loc": ("body", 3)}]))
        == "request body is not valid JSON"
    )
    missing = RequestValidationError(
        [{"type": "missing", "loc": ("body",), "msg": "Field required"}]
    )
    assert validation_message(missing) == "a JSON object body is required"
    query = RequestValidationError(
        [{"type": "float_parsing", "loc": ("query", "minSuccessRate"), "msg": "bad number"}]
    )
    assert validation_message(query) == "query.minSuccessRate: bad number"


def test_caps_and_layers() -> None:
    # below 1 never gets here (the route's type answers 422): only the cap is applied
    assert at_most(None, 5, 20) == 5
    assert at_most(500, 5, 20) == 20
    assert at_most(7, 5, 20) == 7
    assert known_layers(["graph", "x", "graph", "working"]) == ["graph", "working"]
    assert known_layers(["x"]) == ["working", "scene", "graph", "patterns", "archives", "vectors"]


def test_openapi_documents_every_route_with_errors_and_security() -> None:
    app = create_app(Settings(gateway_api_keys=[SecretStr("k")]))
    spec = app.openapi()
    paths = spec["paths"]
    expected = {
        ("post", "/api/memory/context/assemble"),
        ("post", "/api/memory/turns/record"),
        ("post", "/api/memory/remember"),
        ("post", "/api/memory/loop"),
        ("post", "/api/memory/layers/search"),
        ("post", "/api/memory/items/search"),
        ("get", "/api/memory/items/{id}"),
        ("patch", "/api/memory/items/{id}"),
        ("delete", "/api/memory/items/{id}"),
        ("post", "/api/memory/conflicts/{id}/resolve"),
        ("get", "/api/memory/sessions/{id}/working"),
        ("patch", "/api/memory/sessions/{id}/working"),
        ("post", "/api/memory/sessions/{id}/compress"),
        ("get", "/api/memory/patterns"),
        ("get", "/api/memory/patterns/{id}"),
        ("post", "/api/memory/patterns/{id}/validate"),
        ("post", "/api/memory/patterns/{id}/promote"),
        ("get", "/api/memory/skills"),
        ("get", "/api/memory/skills/{id}"),
        ("post", "/api/memory/jobs"),
        ("get", "/api/memory/jobs/{jobId}"),
        ("post", "/api/memory/evals/runs"),
        ("get", "/api/memory/evals/runs"),
        ("get", "/api/memory/evals/runs/{id}"),
        ("get", "/api/memory/stats/{agentWallet}"),
        ("post", "/api/memory/archives/{id}/sync"),
        ("post", "/api/memory/knowledge/documents"),
        ("post", "/api/memory/workflows/checkpoints"),
        ("get", "/api/memory/workflows/reliability"),
        ("get", "/api/memory/workflows"),
        ("get", "/api/memory/workflows/{id}"),
        ("post", "/api/memory/transcripts/index"),
        ("post", "/api/memory/search"),
        ("post", "/api/memory/rerank"),
        ("get", "/api/memory/{agentWallet}"),
        ("get", "/healthz"),
    }
    found = {(m, p) for p, ops in paths.items() for m in ops}
    assert found == expected
    for method, path in expected - {("get", "/healthz")}:
        operation = paths[path][method]
        assert {"400", "401", "403", "504"} <= set(operation["responses"]), (method, path)
        assert operation["responses"]["422"]["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/ErrorBody"
        }
        assert operation["security"] == [{"ApiKey": []}, {"Bearer": []}]
        ok = next(code for code in operation["responses"] if code.startswith("2"))
        assert "schema" in operation["responses"][ok]["content"]["application/json"]
    assert "security" not in paths["/healthz"]["get"]
    assert set(spec["components"]["securitySchemes"]) == {"ApiKey", "Bearer"}
