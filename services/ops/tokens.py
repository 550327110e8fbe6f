"""`mnemostream token mint`: a gateway JWT for one tenant (or an operator's), signed with the
configured `MNEMOSTREAM_GATEWAY_JWT_SECRET` and `MNEMOSTREAM_GATEWAY_JWT_ALGORITHM`, so an
operator can hand an agent runtime a credential confined to its own memory. The token alone
is printed on stdout (`TOKEN=$(mnemostream token mint --agent 0xA --ttl 1h)`); the claims are
those `services.gateway.auth` checks."""

from __future__ import annotations

import re
from typing import Annotated

import typer

from services.settings import Settings

token_app = typer.Typer(help="Gateway credentials.", no_args_is_help=True)

UNITS = {"s": 1, "m": 60, "h": 3_600, "d": 86_400}
_DURATION = re.compile(r"(\d+)([smhd]?)")


def parse_duration(text: str) -> int:
    """Seconds of `90`, `90s`, `30m`, `1h` or `2d`; `ValueError` otherwise."""
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"not a duration: {text!r} (use e.g. 90s, 30m, 1h, 2d)")
    return int(match[1]) * UNITS[match[2] or "s"]


@token_app.command("mint")
def mint(
    agent: Annotated[
        str | None, typer.Option(help="The agentWallet the token is confined to.")
    ] = None,
    user: Annotated[
        str | None, typer.Option(help="Confine it to this userAddress of the agent too.")
    ] = None,
    operator: Annotated[
        bool, typer.Option("--operator", help='Act for every tenant (scope "operator").')
    ] = False,
    ttl: Annotated[
        str, typer.Option(help="Lifetime: 90s, 30m, 1h, 2d (at most the gateway's maximum).")
    ] = "1h",
    subject: Annotated[
        str | None, typer.Option(help="The `sub` claim: who the token was issued to.")
    ] = None,
) -> None:
    """Print a gateway JWT for --agent (and --user), or with --operator for every tenant."""
    from services.gateway.auth import JwtRules, mint_token

    settings = Settings()
    secret = settings.gateway.jwt_secret
    if secret is None:
        typer.echo("MNEMOSTREAM_GATEWAY_JWT_SECRET is not set: nothing to sign with", err=True)
        raise typer.Exit(2)
    rules = JwtRules(
        secret.get_secret_value(),
        settings.gateway.jwt_algorithm,
        settings.gateway.jwt_max_ttl_seconds,
    )
    try:
        token = mint_token(
            rules,
            ttl_seconds=parse_duration(ttl),
            agent=agent,
            user=user,
            operator=operator,
            subject=subject,
        )
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    typer.echo(token)
