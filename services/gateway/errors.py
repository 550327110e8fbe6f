"""Every gateway error is `{"error": "<message>"}` (reference §1.2), with a status that says
whose fault it is:

* 400 - the body or a parameter is invalid (missing, of the wrong JSON type, refused by a
  rule; FastAPI's own validation included), or the memory service answered the request with
  an error;
* 401 - no credential, or a wrong one;
* 403 - a credential confined to one tenant asked for another agentWallet or userAddress, or
  for an operation wider than its tenant (tenant isolation);
* 404 - nothing with that id within the caller's scope, or an unknown route;
* 422 - a number or a time outside its documented range (`schemas.bounds`: a count below 1,
  a negative token count, a time outside 1970..9999, a job parameter out of range, a NaN or
  infinite number anywhere in the body): refused, never clamped or ignored, with a message
  naming the field (`limit: Input should be greater than or equal to 1`);
* 413 - the request body is larger than one Kafka message (`schemas.limits.MAX_MESSAGE_BYTES`);
* 502 - a provider the memory service called on the caller's behalf failed (the reranker of
  POST /rerank, the LLM of POST /sessions/{id}/compress); documented on those routes only;
* 504 - the memory service did not answer in time (request-reply over Kafka); counted in
  `mnemostream_gateway_upstream_timeouts_total`. A write with `wait=true` that is not
  processed in time is 504 too, with a message naming the consumer group that is behind (the
  write was accepted: it is not to be sent again).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ValidationError
from starlette.exceptions import HTTPException

from engine.errors import InputRejected, NotFound
from schemas.bodies import Refused, refusal
from schemas.bounds import OUT_OF_RANGE_TYPES, ValueOutOfRange, is_out_of_range
from schemas.scope import ScopeError, first_error
from services.gateway.metrics import GatewayMetrics
from services.sdk.client import NotProcessed, RequestFailed

log = logging.getLogger(__name__)


class ErrorBody(BaseModel):
    """Every 4xx/5xx answer of the gateway."""

    error: str


class ApiError(HTTPException):
    """An HTTP error whose `detail` is the message of the `{"error": ...}` body."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(status_code=status, detail=message, headers=headers)


def _doc(description: str) -> dict[str, Any]:
    return {"model": ErrorBody, "description": description}


ERRORS: dict[int | str, dict[str, Any]] = {
    400: _doc("Invalid input, or the memory service rejected the request."),
    401: _doc("Missing or invalid credentials."),
    403: _doc("The credential is confined to another tenant (agentWallet or userAddress)."),
    413: _doc("The request body is larger than one message (`MAX_MESSAGE_BYTES`)."),
    422: _doc("A number or a time outside its documented range; the message names the field."),
    504: _doc("The memory service did not answer in time."),
}
"""Error responses every authenticated route can give (for the OpenAPI document)."""
NOT_FOUND: dict[int | str, dict[str, Any]] = {404: _doc("Nothing with this id in your scope.")}


def _body(status: int, message: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


UNION_MEMBER = re.compile(r"^(constrained-)?(int|str|float|bool)$|^[a-z-]+\[.*\]$")
"""The names pydantic gives the members of a union in an error's location (`step` →
`step.constrained-int`): not part of the field's path."""


def validation_message(exc: RequestValidationError) -> str:
    """One line for the first problem: `field: what is wrong` (the body's own location
    prefix, list indexes in the reference's `messages[0].role` form, no union members)."""
    errors = exc.errors()
    if not errors:
        return "invalid request"
    err = errors[0]
    if err.get("type") == "json_invalid":
        return "request body is not valid JSON"
    if (refused := _refused(err)) is not None:
        return str(refused)
    parts: list[str] = []
    for part in err.get("loc", ())[1:] if err.get("loc", ("",))[0] == "body" else err["loc"]:
        if isinstance(part, int):
            parts[-1:] = [f"{parts[-1] if parts else ''}[{part}]"]
        elif not UNION_MEMBER.match(str(part)):
            parts.append(str(part))
    where = ".".join(parts)
    msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
    if err.get("type") == "missing" and not where:
        return "a JSON object body is required"
    return f"{where}: {msg}" if where else msg


def validation_status(exc: RequestValidationError) -> int:
    """422 when the reported (first) problem is a value out of its range, else 400."""
    errors = exc.errors()
    if errors and (refused := _refused(errors[0])) is not None:
        return 422 if isinstance(refused, ValueOutOfRange) else 400
    return 422 if errors and errors[0].get("type") in OUT_OF_RANGE_TYPES else 400


def _refused(err: Mapping[str, Any]) -> ScopeError | None:
    """A body model's own refusal (`schemas.bodies`), in the same words as the SDK's."""
    if not isinstance((err.get("ctx") or {}).get("error"), Refused):
        return None
    loc = tuple(err.get("loc", ()))
    return refusal({**err, "loc": loc[1:] if loc[:1] == ("body",) else loc})


def install(app: FastAPI) -> None:
    """Register the handlers that turn every error into `{"error": ...}`."""

    async def http_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HTTPException)  # noqa: S101 - registered for this type
        message = exc.detail if isinstance(exc.detail, str) else json.dumps(exc.detail)
        return _body(exc.status_code, message, exc.headers)

    async def invalid(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)  # noqa: S101
        return _body(validation_status(exc), validation_message(exc))

    async def rejected(_: Request, exc: Exception) -> JSONResponse:
        if isinstance(exc, ValidationError):
            return _body(422 if is_out_of_range(exc) else 400, first_error(exc))
        return _body(422 if isinstance(exc, ValueOutOfRange) else 400, str(exc))

    async def not_found(_: Request, exc: Exception) -> JSONResponse:
        return _body(404, str(exc))

    async def timed_out(request: Request, _: Exception) -> JSONResponse:
        log.warning("request-reply timed out: %s %s", request.method, request.url.path)
        metrics = getattr(request.app.state, "metrics", None)
        if isinstance(metrics, GatewayMetrics):
            metrics.timed_out(request.scope)
        return _body(504, "the memory service did not answer in time; retry later")

    async def not_processed(request: Request, exc: Exception) -> JSONResponse:
        log.warning("a waited write was not processed in time: %s", exc)
        return _body(504, f"{exc} (the write was accepted: do not send it again)")

    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(RequestValidationError, invalid)
    for kind in (ScopeError, InputRejected, RequestFailed, ValidationError):
        app.add_exception_handler(kind, rejected)
    app.add_exception_handler(NotFound, not_found)
    app.add_exception_handler(TimeoutError, timed_out)
    app.add_exception_handler(NotProcessed, not_processed)
