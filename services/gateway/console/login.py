"""Who is using the console. The same credentials as the API (`services.gateway.auth`): a
request may send them as the API does (`X-API-Key`, `Authorization: Bearer`), and the login
form takes one (a tenant or operator key, or a JWT) and keeps it in the `COOKIE` cookie:
`HttpOnly` (no script reads it), `Secure` (sent over HTTPS only; browsers also keep it on
http://localhost), `SameSite=Strict` and `Path=/console` (never sent by another site's
page, nor to the API routes).

The cookie holds the credential itself, checked again on every request exactly as the API
checks it, so the console keeps no login state (any gateway process answers), a removed
key or an expired token stops working at once, and a cookie names nothing its holder
could not already use. Every form post must also come from the console's own origin
(`same_origin`)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from fastapi import Request, Response

from services.gateway.auth import Authenticator, Principal
from services.gateway.errors import ApiError

COOKIE = "mnemostream_console"
LOGIN_SECONDS = 8 * 3_600
"""How long the browser keeps the cookie (a JWT inside stops at its own `exp` sooner)."""
MAX_CREDENTIAL_CHARS = 4_000
"""Longer than any key or token the gateway issues, shorter than a browser's cookie limit."""
PATH = "/console"


def caller_of(request: Request) -> Principal | None:
    """The caller of a console request: from its headers when it sends a credential there
    (401 when it is not a valid one), else from the cookie; None when it has neither, or a
    cookie whose credential is no longer valid."""
    auth: Authenticator = request.app.state.auth
    api_key = request.headers.get("x-api-key")
    authorization = request.headers.get("authorization")
    if api_key is not None or authorization is not None:
        bearer = None
        if authorization is not None and authorization[:7].lower() == "bearer ":
            bearer = authorization[7:].strip()
        return auth.check(api_key, bearer)
    held = request.cookies.get(COOKIE)
    if not held:
        return None
    try:
        return auth.check(None, held)
    except ApiError:
        return None


def sign_in(request: Request, credential: str) -> Principal:
    """The caller `credential` (an API key or a JWT) authenticates; 401 when none."""
    credential = credential.strip()
    if not credential or len(credential) > MAX_CREDENTIAL_CHARS:
        raise ApiError(401, "enter an API key or a token")
    auth: Authenticator = request.app.state.auth
    return auth.check(None, credential)


def keep(response: Response, credential: str) -> None:
    response.set_cookie(
        COOKIE,
        credential.strip(),
        max_age=LOGIN_SECONDS,
        path=PATH,
        secure=True,
        httponly=True,
        samesite="strict",
    )


def forget(response: Response) -> None:
    response.delete_cookie(COOKIE, path=PATH, secure=True, httponly=True, samesite="strict")


def same_origin(request: Request) -> None:
    """403 for a form post another site's page made (`Sec-Fetch-Site: cross-site`, or an
    `Origin` whose host is not this one): the cookie's `SameSite=Strict` already keeps it
    off such a request; this holds for browsers that send a credential another way."""
    if request.headers.get("sec-fetch-site") == "cross-site":
        raise ApiError(403, "a console form must be sent from the console")
    origin = request.headers.get("origin")
    if origin is not None and origin != "null":
        if urlsplit(origin).netloc != request.headers.get("host", ""):
            raise ApiError(403, "a console form must be sent from the console")
    elif origin == "null":
        raise ApiError(403, "a console form must be sent from the console")


async def form(request: Request) -> dict[str, str]:
    """The fields of a url-encoded form post (the first value of each); 400 for another
    kind of body."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        raise ApiError(400, "expected a form (application/x-www-form-urlencoded)")
    try:
        text = (await request.body()).decode("utf-8")
    except UnicodeDecodeError:
        raise ApiError(400, "the form is not UTF-8") from None
    fields = parse_qs(text, keep_blank_values=True, max_num_fields=50)
    return {name: values[0] for name, values in fields.items()}
