"""Gateway helpers without a network: credentials (tenant and operator keys, JWT rules, the
confinement of a caller to its tenant, `mnemostream token mint`), settings, error messages,
clamps, and the OpenAPI document (every route, 400 and 422 as `{"error"}`, security schemes).

No time is computed at import or collection: token cases are factories called inside the
test (`tests/unit/test_suite_hygiene.py` keeps it so)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import jwt
import pytest
from fastapi.exceptions import RequestValidationError
from pydantic import SecretStr, ValidationError
from typer.testing import CliRunner

from schemas.scope import Scope
from services.gateway import GatewayNotSecured, create_app
from services.gateway.auth import Authenticator, JwtRules, Principal, mint_token
from services.gateway.deps import at_most, body_scope, query_scope
from services.gateway.errors import ApiError, validation_message
from services.ops.cli import app as cli
from services.ops.tokens import parse_duration
from services.settings import Settings, TenantKey

SECRET = "unit-secret-of-at-least-thirty-two-bytes"  # noqa: S105 - a test fixture
HOUR = 3_600


def token(secret: str = SECRET, algorithm: str = "HS256", **claims: object) -> str:
    return jwt.encode(claims, secret, algorithm=algorithm)


def fresh(**claims: object) -> str:
    """A token issued now, valid for an hour, with `claims` added (or overridden)."""
    now = int(time.time())
    return token(**{"iat": now, "exp": now + HOUR, **claims})


def status_of(call: Callable[[], object]) -> tuple[int, str]:
    with pytest.raises(ApiError) as caught:
        call()
    return caught.value.status_code, str(caught.value.detail)


def authenticator(**settings: Any) -> Authenticator:
    return Authenticator.from_settings(Settings(**settings))


KEYS = {
    "gateway_api_keys": [
        TenantKey(key=SecretStr("agent-key"), agent="0xA"),
        TenantKey(key=SecretStr("alice-key"), agent="0xA", user="alice"),
    ],
    "gateway_operator_keys": [SecretStr("operator-key")],
}


# --- start-up --------------------------------------------------------------------------------


def test_refuses_to_run_without_credentials_unless_anonymous_is_explicit() -> None:
    with pytest.raises(GatewayNotSecured, match="GATEWAY_OPERATOR_KEYS"):
        Authenticator([], None)
    with pytest.raises(GatewayNotSecured):
        create_app(Settings())
    assert Authenticator([], None, allow_anonymous=True).check(None, None) == Principal("anonymous")
    assert Principal("anonymous").operator


def test_anonymous_flag_is_ignored_once_credentials_exist() -> None:
    auth = authenticator(gateway_allow_anonymous=True, **KEYS)
    assert status_of(lambda: auth.check(None, None))[0] == 401


# --- API keys -------------------------------------------------------------------------------


def test_tenant_and_operator_keys_in_either_header() -> None:
    auth = authenticator(**KEYS)
    agent = Principal("tenant_key", agent="0xA")
    alice = Principal("tenant_key", agent="0xA", user="alice")
    operator = Principal("operator_key")
    assert (auth.check("agent-key", None), auth.check(None, "agent-key")) == (agent, agent)
    assert (auth.check("alice-key", None), auth.check(None, "alice-key")) == (alice, alice)
    assert auth.check("operator-key", None) == auth.check(None, "operator-key") == operator
    assert operator.operator
    assert not agent.operator
    assert not alice.operator
    assert status_of(lambda: auth.check("k3", None)) == (401, "invalid API key")
    assert status_of(lambda: auth.check(None, "k3")) == (401, "invalid API key")
    assert status_of(lambda: auth.check(None, None))[0] == 401


def test_a_confined_caller_acts_only_inside_its_tenant() -> None:
    agent = Principal("tenant_key", agent="0xA")
    alice = Principal("tenant_key", agent="0xA", user="alice")
    operator = Principal("operator_key")
    own, other_user = Scope.parse({"agentWallet": "0xA"}), {"agentWallet": "0xA", "user_id": "bob"}

    assert body_scope(agent, {}) == own  # no agent named: the credential's own
    assert body_scope(alice, {}).wire() == {"agentWallet": "0xA", "userAddress": "alice"}
    assert body_scope(alice, {"agentWallet": "", "userAddress": ""}).user_address == "alice"
    assert body_scope(agent, dict(other_user)).user_address == "bob"  # any user of its agent
    assert status_of(lambda: body_scope(alice, dict(other_user))) == (
        403,
        "this credential may not access another userAddress",
    )
    for who in (agent, alice):
        assert status_of(lambda who=who: body_scope(who, {"agent_id": "0xB"})) == (
            403,
            "this credential may not access another agentWallet",
        )
        assert status_of(lambda who=who: body_scope(who, {"agentWallet": "0xa"}))[0] == 403
    assert query_scope(alice, None).wire() == {"agentWallet": "0xA", "userAddress": "alice"}
    assert status_of(lambda: query_scope(alice, "0xA", "bob"))[0] == 403
    assert body_scope(operator, {"agentWallet": "0xB", "userAddress": "bob"}).agent_wallet == "0xB"

    # operations over every user of an agent
    assert agent.agent_or(None) == "0xA"
    assert agent.agent_or("0xA") == "0xA"
    assert status_of(lambda: agent.agent_or("0xB"))[0] == 403
    assert status_of(lambda: alice.agent_or(None))[0] == 403
    assert "spans every user" in status_of(lambda: alice.agent_or("0xA"))[1]
    assert operator.agent_or(None) is None
    assert operator.agent_or("0xZ") == "0xZ"


# --- JWTs -----------------------------------------------------------------------------------


def test_jwt_claims_name_the_caller_and_confine_it_to_a_tenant() -> None:
    auth = authenticator(gateway_jwt_secret=SecretStr(SECRET))
    assert auth.check(None, fresh(sub="rt", agent="0xA")) == Principal("jwt", "rt", "0xA")
    assert auth.check(None, fresh(agentWallet="0xB")).agent == "0xB"
    assert auth.check(None, fresh(agent="0xA", user="alice")) == Principal(
        "jwt", None, "0xA", "alice"
    )
    assert auth.check(None, fresh(agent="0xA", userAddress="bob")).user == "bob"


@pytest.mark.parametrize("scope", ["operator", "memory:read operator", ["operator"]])
def test_only_an_operator_scope_spans_every_tenant(scope: object) -> None:
    auth = authenticator(gateway_jwt_secret=SecretStr(SECRET))
    assert auth.check(None, fresh(sub="ops", scope=scope)) == Principal("jwt", "ops")


def test_the_lifetime_is_exp_minus_iat_else_exp_minus_now() -> None:
    auth = authenticator(gateway_jwt_secret=SecretStr(SECRET), gateway_jwt_max_ttl_seconds=HOUR)
    now = int(time.time())
    assert auth.check(None, token(agent="0xA", iat=now, exp=now + HOUR)).agent == "0xA"
    # issued 50 minutes ago for an hour: 10 minutes left, lifetime one hour (allowed)
    assert auth.check(None, token(agent="0xA", iat=now - 3_000, exp=now + 600)).agent == "0xA"
    # without iat only what is left counts
    assert auth.check(None, token(agent="0xA", exp=now + HOUR - 5)).agent == "0xA"


def now() -> int:
    return int(time.time())


NO_EXP = "invalid token: the exp claim is required"
TOO_LONG = "invalid token: its lifetime exceeds the maximum of 3600 s"
NO_AGENT = 'invalid token: the agent claim is required (or scope "operator")'
BOTH = "invalid token: an operator token names no agent or user"
NOT_A_STRING = "invalid token: the agent claim must be a non-empty string"
PADDED = "claim must not start or end with whitespace"
OTHER_SECRET = "another-secret-of-at-least-32-bytes!"  # noqa: S105 - a test fixture

BAD_TOKENS: list[tuple[str, Callable[[], str], str]] = [
    ("wrong secret", lambda: token(OTHER_SECRET, agent="0xA", exp=now() + 60), "invalid token"),
    ("expired", lambda: token(agent="0xA", iat=now() - HOUR, exp=now() - 10), "token expired"),
    ("not yet valid", lambda: fresh(agent="0xA", nbf=now() + 600), "invalid token"),
    ("issued in the future", lambda: fresh(agent="0xA", iat=now() + 600), "invalid token"),
    ("no exp", lambda: token(agent="0xA", iat=now()), NO_EXP),
    ("no exp, operator", lambda: token(scope="operator"), NO_EXP),
    ("lifetime above the max", lambda: fresh(agent="0xA", exp=now() + 2 * HOUR), TOO_LONG),
    ("no iat, too far", lambda: token(agent="0xA", exp=now() + HOUR + 60), TOO_LONG),
    ("no agent claim", lambda: fresh(sub="admin-tool"), NO_AGENT),
    ("user without agent", lambda: fresh(user="alice"), NO_AGENT),
    ("another scope", lambda: fresh(scope="operators"), NO_AGENT),
    ("operator and agent", lambda: fresh(scope="operator", agent="0xA"), BOTH),
    ("operator and user", lambda: fresh(scope="operator", user="alice"), BOTH),
    ("empty agent", lambda: fresh(agent=""), NOT_A_STRING),
    ("number agent", lambda: fresh(agent=7), NOT_A_STRING),
    ("padded agent", lambda: fresh(agent="0xA "), f"invalid token: the agent {PADDED}"),
    ("padded user", lambda: fresh(agent="0xA", user=" alice"), f"invalid token: the user {PADDED}"),
    (
        "control character in user",
        lambda: fresh(agent="0xA", user="al\x00ice"),
        "invalid token: the user claim must not contain control characters",
    ),
    ("HS512", lambda: token(SECRET * 2, "HS512", agent="0xA", exp=now() + 60), "invalid token"),
    ("unsigned", lambda: token("", "none", agent="0xA", exp=now() + 60), "invalid token"),
    ("not a jwt", lambda: "not-a-jwt", "invalid token"),
]
"""Factories, called inside the test: no time is computed at collection."""


@pytest.mark.parametrize(
    ("bad", "message"), [(b, m) for _, b, m in BAD_TOKENS], ids=[n for n, _, _ in BAD_TOKENS]
)
def test_bad_tokens_are_401(bad: Callable[[], str], message: str) -> None:
    auth = authenticator(
        gateway_jwt_secret=SecretStr(SECRET), gateway_jwt_max_ttl_seconds=HOUR, **KEYS
    )
    assert status_of(lambda: auth.check(None, bad())) == (401, message)


def test_the_configured_algorithm_is_the_only_one() -> None:
    auth = authenticator(gateway_jwt_secret=SecretStr(SECRET * 2), gateway_jwt_algorithm="HS512")
    now = int(time.time())
    assert auth.check(None, token(SECRET * 2, "HS512", agent="0xA", exp=now + 60)).agent == "0xA"
    assert (
        status_of(lambda: auth.check(None, token(SECRET * 2, agent="0xA", exp=now + 60)))[0] == 401
    )


# --- minting --------------------------------------------------------------------------------


def test_minted_tokens_are_accepted_for_their_tenant() -> None:
    rules = JwtRules(SECRET, "HS256", HOUR)
    auth = Authenticator([], rules)
    now = time.time()
    alice = mint_token(rules, ttl_seconds=600, agent="0xA", user="alice", subject="rt", now=now)
    assert auth.check(None, alice) == Principal("jwt", "rt", "0xA", "alice")
    claims = jwt.decode(alice, SECRET, algorithms=["HS256"])
    assert claims["exp"] - claims["iat"] == 600
    assert auth.check(None, mint_token(rules, ttl_seconds=HOUR, operator=True)).operator


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "either for one agent or an operator"),
        ({"agent": "0xA", "operator": True}, "either for one agent or an operator"),
        ({"operator": True, "user": "alice"}, "a token for a user names its agent too"),
        ({"agent": "0xA", "ttl_seconds": HOUR + 1}, "maximum of 3600 s"),
        ({"agent": "0xA", "ttl_seconds": 0}, "between 1 s"),
        ({"agent": "0xA "}, "agent must not start or end with whitespace"),
        ({"agent": "0xA", "user": ""}, "user is empty"),
    ],
)
def test_minting_refuses_what_the_gateway_would(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        mint_token(JwtRules(SECRET, "HS256", HOUR), **{"ttl_seconds": 60, **kwargs})


@pytest.mark.parametrize(
    ("text", "seconds"), [("90", 90), ("90s", 90), ("30m", 1800), ("1h", 3600), ("2d", 172800)]
)
def test_durations(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


def test_token_mint_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMOSTREAM_GATEWAY_JWT_SECRET", SECRET)
    monkeypatch.setenv("MNEMOSTREAM_GATEWAY_JWT_MAX_TTL_SECONDS", str(2 * HOUR))
    runner = CliRunner()
    auth = authenticator()  # the same environment

    minted = runner.invoke(
        cli, ["token", "mint", "--agent", "0xA", "--user", "alice", "--ttl", "1h"]
    )
    assert minted.exit_code == 0, minted.output
    claims = jwt.decode(minted.stdout.strip(), SECRET, algorithms=["HS256"])
    assert claims["exp"] - claims["iat"] == HOUR
    assert auth.check(None, minted.stdout.strip()) == Principal("jwt", None, "0xA", "alice")

    operator = runner.invoke(
        cli, ["token", "mint", "--operator", "--ttl", "30m", "--subject", "ops"]
    )
    assert operator.exit_code == 0, operator.output
    assert auth.check(None, operator.stdout.strip()) == Principal("jwt", "ops")

    for args, problem in (
        (["--agent", "0xA", "--ttl", "3h"], "maximum of 7200 s"),
        (["--agent", "0xA", "--ttl", "soon"], "not a duration"),
        (["--user", "alice"], "either for one agent or an operator"),
        (["--agent", "0xA", "--operator"], "either for one agent or an operator"),
    ):
        refused = runner.invoke(cli, ["token", "mint", *args])
        assert refused.exit_code == 2, args
        assert problem in " ".join(refused.output.replace("│", " ").split()), refused.output

    monkeypatch.delenv("MNEMOSTREAM_GATEWAY_JWT_SECRET")
    unsigned = runner.invoke(cli, ["token", "mint", "--agent", "0xA"])
    assert unsigned.exit_code == 2
    assert "MNEMOSTREAM_GATEWAY_JWT_SECRET is not set" in unsigned.output


# --- settings -------------------------------------------------------------------------------


def test_settings_read_keys_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "MNEMOSTREAM_GATEWAY_API_KEYS",
        '[{"key": "key-alpha", "agent": "0xA"}, {"key": "key-beta", "agent": "0xA", "user": "al"}]',
    )
    monkeypatch.setenv("MNEMOSTREAM_GATEWAY_OPERATOR_KEYS", "op-gamma, op-delta,")
    monkeypatch.setenv("MNEMOSTREAM_GATEWAY_JWT_SECRET", "jwt-epsilon-" + "e" * 20)
    settings = Settings()
    assert [(k.key.get_secret_value(), k.agent, k.user) for k in settings.gateway.api_keys] == [
        ("key-alpha", "0xA", None),
        ("key-beta", "0xA", "al"),
    ]
    assert [k.get_secret_value() for k in settings.gateway.operator_keys] == [
        "op-gamma",
        "op-delta",
    ]
    for secret in ("key-alpha", "key-beta", "op-gamma", "op-delta", "jwt-epsilon"):
        assert secret not in repr(settings)  # masked wherever settings are printed
    assert (settings.gateway.port, settings.gateway.jwt_algorithm) == (8080, "HS256")
    assert settings.gateway.jwt_max_ttl_seconds == 86_400
    monkeypatch.setenv("MNEMOSTREAM_GATEWAY_OPERATOR_KEYS", '["x", "y"]')
    monkeypatch.setenv("MNEMOSTREAM_GATEWAY_JWT_SECRET", "")  # compose passes unset as empty
    settings = Settings()
    assert [k.get_secret_value() for k in settings.gateway.operator_keys] == ["x", "y"]
    assert settings.gateway.jwt_secret is None


def test_a_short_jwt_secret_is_refused() -> None:
    with pytest.raises(ValidationError, match="at least 32 bytes for HS256"):
        Settings(gateway_jwt_secret=SecretStr("s" * 31))
    with pytest.raises(ValidationError, match="at least 64 bytes for HS512"):
        Settings(gateway_jwt_secret=SecretStr(SECRET), gateway_jwt_algorithm="HS512")
    assert Settings(gateway_jwt_secret=SecretStr("s" * 32)).gateway.jwt_secret is not None


@pytest.mark.parametrize(
    ("api_keys", "message"),
    [
        ("key-one,key-two", "GATEWAY_API_KEYS must be a JSON list of"),
        ('["key-one"]', "a key for every tenant is an operator key"),
        ('[{"key": "key-one"}]', "agent"),
        ('[{"key": "key-one", "agent": "0xA "}]', "must not start or end with whitespace"),
        ('[{"key": "key-one", "agent": "0xA", "user": "bob\\n"}]', "must not start or end"),
        ('[{"key": "key-one", "agent": "0xA", "scope": "operator"}]', "Extra inputs"),
        ('[{"key": " ", "agent": "0xA"}]', "a gateway API key is empty"),
        ('[{"key": "op", "agent": "0xA"}]', "listed twice"),
    ],
)
def test_a_key_without_a_tenant_is_refused_at_start_up(
    monkeypatch: pytest.MonkeyPatch, api_keys: str, message: str
) -> None:
    monkeypatch.setenv("MNEMOSTREAM_GATEWAY_API_KEYS", api_keys)
    monkeypatch.setenv("MNEMOSTREAM_GATEWAY_OPERATOR_KEYS", "op")
    with pytest.raises(ValidationError, match=message) as caught:
        Settings()
    assert "key-one" not in str(caught.value)  # the key itself is never echoed


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


def test_caps() -> None:
    # below 1 never gets here (the route's type answers 422): only the cap is applied
    assert at_most(None, 5, 20) == 5
    assert at_most(500, 5, 20) == 20
    assert at_most(7, 5, 20) == 7


def test_openapi_documents_every_route_with_errors_and_security() -> None:
    app = create_app(Settings(gateway_operator_keys=[SecretStr("k")]))
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
        ("post", "/api/memory/items/{id}/restore"),
        ("get", "/api/memory/items/{id}/history"),
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
        ("get", "/api/memory/export"),
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
        content = operation["responses"][ok]["content"]  # JSON; the export: JSON lines
        assert all("schema" in media for media in content.values()), (method, path)
        assert set(content) <= {"application/json", "application/x-ndjson"}, (method, path)
    assert "security" not in paths["/healthz"]["get"]
    assert set(spec["components"]["securitySchemes"]) == {"ApiKey", "Bearer"}
