"""The retrieval eval's body (POST /evals/runs, reference §12) as one model, `EvalInput`,
with its cases (`EvalCaseInput`). The gateway takes it and sends the admin group its checked
form (`EvalInput.wire`); the admin group parses that with the same model
(`engine.evals.harness.parse_request`). The loose rules and the refusals are
`schemas.bodies`'.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, AliasChoices, BeforeValidator, Field, model_validator

from schemas.bodies import SCOPE_ALIASES, Alias, Body, Refused, ScopeInput, Text
from schemas.requests import ALL_LAYERS, MAX_QUERY_CHARS, LayerName
from schemas.scope import Scope, ScopeError

DEFAULT_K = 5
MAX_K = 20
MAX_CASES = 500
CASES_REQUIRED = "testCases is required (a non-empty array)"


def _str_or_absent(value: object) -> object:
    """`str()` of reference §0: anything but a string is absent."""
    return value if isinstance(value, str) else None


def _k(value: object) -> object:
    """A whole number from 1 to `MAX_K` (a value out of that range is 422)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise Refused(f"must be an integer from 1 to {MAX_K}")
    if not 1 <= value <= MAX_K:
        raise Refused(f"must be an integer from 1 to {MAX_K}", out_of_range=True)
    return value


def _layer(value: object) -> object:
    if value not in ALL_LAYERS:
        raise Refused(f"must be one of {', '.join(ALL_LAYERS)}")
    return value


def _once(layers: list[LayerName]) -> list[LayerName]:
    """Each layer once, in the caller's order; none means all."""
    return list(dict.fromkeys(layers)) or list(ALL_LAYERS)


Loose = Annotated[Text, BeforeValidator(_str_or_absent)]


class EvalCaseInput(Body):
    """A labelled query: `query` plus `expected` (text) and/or `expectedMemoryId`."""

    query: Loose = Field(default=None, description="Required.")
    expected: Loose = None
    expected_memory_id: Loose = Field(
        default=None, validation_alias=AliasChoices("expectedMemoryId", "expected_memory_id")
    )

    ALIASES = (Alias(("expectedMemoryId", "expected_memory_id")),)

    @model_validator(mode="after")
    def _labelled(self) -> EvalCaseInput:
        if self.query is None:
            raise Refused("is required", "query")
        if len(self.query) > MAX_QUERY_CHARS:
            raise Refused(f"is longer than {MAX_QUERY_CHARS} characters", "query")
        if self.expected is None and self.expected_memory_id is None:
            raise Refused(
                "needs expected or expectedMemoryId: an unlabelled case cannot be scored "
                "(counting anything returned as a hit would make recall meaningless)"
            )
        return self


class EvalInput(ScopeInput):
    """An eval run: the scope and `testCases` (required)."""

    test_cases: list[EvalCaseInput] | None = Field(
        default=None,
        validation_alias=AliasChoices("testCases", "test_cases"),
        description=f"Required: at most {MAX_CASES}.",
    )
    k: Annotated[int, Field(ge=1, le=MAX_K), BeforeValidator(_k)] | None = Field(
        default=None,
        validation_alias=AliasChoices("k", "limit"),
        description=f"Results per case (alias limit). Default {DEFAULT_K}.",
    )
    layers: Annotated[
        list[Annotated[LayerName, BeforeValidator(_layer)]], AfterValidator(_once)
    ] = Field(default_factory=lambda: list(ALL_LAYERS), description="Default all.")

    ALIASES = (
        *SCOPE_ALIASES,
        Alias(("testCases", "test_cases"), "null", list, "is required (a non-empty array)"),
        Alias(("k", "limit"), "null"),
        Alias(("layers",), "null", list, "must be an array of layer names"),
    )

    def cases(self) -> list[EvalCaseInput]:
        """The cases; `ScopeError` when there are none or more than `MAX_CASES` (checked
        after the scope: 403 first)."""
        if not self.test_cases:
            raise ScopeError(CASES_REQUIRED)
        if len(self.test_cases) > MAX_CASES:
            raise ScopeError(f"testCases has more than {MAX_CASES} cases")
        return self.test_cases

    def wire(self, scope: Scope) -> dict[str, Any]:
        """The checked body in `scope` (the caller's), as the admin group reads it."""
        return {
            **self.model_dump(include={"test_cases", "k", "layers"}, exclude_none=True),
            **scope.wire(),
        }
