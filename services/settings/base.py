"""How sections of the settings keep their flat environment variables.

A section (`Section`) groups related settings (`settings.kafka.bootstrap`), but each of its
fields is still read from the variable it always had: its `validation_alias` is that variable
without the `MNEMOSTREAM_` prefix (`bootstrap` → `kafka_bootstrap` → `MNEMOSTREAM_KAFKA_BOOTSTRAP`).
The same flat name is the keyword `Settings(kafka_bootstrap=…)` accepts. There is no
`MNEMOSTREAM_KAFKA__BOOTSTRAP` or `MNEMOSTREAM_KAFKA` (JSON) form: one variable per setting.

`FlatEnvironment` reads those variables (parsed like pydantic-settings' own environment source:
JSON for lists, `NoDecode` kept raw) into flat keys; `route_flat_keys` then moves every flat key
into its section before validation.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterator
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsError,
)

ENV_PREFIX = "MNEMOSTREAM_"


def split_keys(value: Any) -> Any:
    """A list of keys from one variable: `a,b` or `["a", "b"]`, entries stripped, blank
    ones dropped; anything else is left for the field's own validation."""
    if isinstance(value, str):
        text = value.strip()
        value = json.loads(text) if text.startswith("[") else text.split(",")
    if isinstance(value, list):
        return [v.strip() if isinstance(v, str) else v for v in value if v != ""]
    return value


class Section(BaseModel):
    """A group of settings. Fields carry their flat name as `validation_alias`, and accept
    their short name too (`KafkaSettings(bootstrap=…)`)."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        validate_by_name=True,
        validate_by_alias=True,
        # as on `Settings`: a validation error must not echo passwords and keys
        hide_input_in_errors=True,
    )


class FlatField(NamedTuple):
    """One setting: its flat name (the variable without the prefix), the section holding it
    (None at the top level) and its name there."""

    flat: str
    section: str | None
    name: str
    field: FieldInfo


def section_model(field: FieldInfo) -> type[Section] | None:
    annotation = field.annotation
    return annotation if inspect.isclass(annotation) and issubclass(annotation, Section) else None


def flat_fields(settings_cls: type[BaseModel]) -> Iterator[FlatField]:
    """Every setting of `settings_cls`, sections opened, in declaration order."""
    for name, field in settings_cls.model_fields.items():
        section = section_model(field)
        if section is None:
            yield FlatField(name, None, name, field)
            continue
        for inner, inner_field in section.model_fields.items():
            alias = inner_field.validation_alias
            if not isinstance(alias, str):
                raise TypeError(f"{section.__name__}.{inner} needs its flat name as alias")
            yield FlatField(alias, name, inner, inner_field)


def env_name(flat: str) -> str:
    """The environment variable of the setting named `flat`."""
    return f"{ENV_PREFIX}{flat.upper()}"


def route_flat_keys(settings_cls: type[BaseModel], data: dict[str, Any]) -> dict[str, Any]:
    """`data` with each flat key (`kafka_bootstrap`) moved into its section's dict. A section
    given whole (a dict by either name, or a model) keeps what it sets; flat keys fill the
    rest. Sections are keyed by the flat names, so a validation error's location names the
    variable (`gateway.gateway_port`)."""
    routed = dict(data)
    flat_values: dict[str, dict[str, Any]] = {}
    flat_of: dict[str, dict[str, str]] = {}
    for flat, section, name, _ in flat_fields(settings_cls):
        if section is None:
            continue
        flat_of.setdefault(section, {})[name] = flat
        if flat in routed:
            flat_values.setdefault(section, {})[flat] = routed.pop(flat)
    for section, values in flat_values.items():
        given = routed.get(section)
        if isinstance(given, BaseModel):
            given = {name: getattr(given, name) for name in given.model_fields_set}
        if isinstance(given, dict):
            values.update({flat_of[section].get(key, key): value for key, value in given.items()})
        elif given is not None:
            continue  # not a section: validation names the error
        routed[section] = values
    return routed


class FlatEnvironment(PydanticBaseSettingsSource):
    """The `MNEMOSTREAM_*` variables of every setting, by flat name, parsed as pydantic-settings'
    environment source parses them (it supplies the variables, the prefix and the decoding)."""

    def __init__(self, settings_cls: type[BaseSettings], env: EnvSettingsSource) -> None:
        super().__init__(settings_cls)
        self._env = env

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        """Unused: `__call__` reads the flat names itself."""
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        env, data = self._env, {}
        for flat, _, _, field in flat_fields(self.settings_cls):
            variable = f"{env.env_prefix}{flat}"
            raw = env.env_vars.get(variable if env.case_sensitive else variable.lower())
            try:
                value = env.prepare_field_value(flat, field, raw, False)
            except ValueError as e:
                raise SettingsError(
                    f'error parsing value for field "{flat}" from source "{type(env).__name__}"'
                ) from e
            if value is not None:
                data[flat] = value
        return data


def settings_problem(exc: ValidationError) -> str:
    """A refused setting in one line: each error's environment variable (its section's flat
    field name, `ENV_PREFIX` + upper case) and what is wrong; never the value given, which
    may be a secret. A rule across settings names its variables in its own message."""
    problems: list[str] = []
    for err in exc.errors(include_url=False):
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        loc = [str(part) for part in err.get("loc", ())]
        # (section, flat field[, inner …]), (a top-level field), or () for a whole-model rule
        name = env_name(loc[1] if len(loc) >= 2 else loc[0]) if loc else None
        if name is None or name in msg or (len(loc) == 1 and ENV_PREFIX in msg):
            problems.append(msg)  # a section's rule names its own variables
        else:
            problems.append(f"{name}: {msg}")
    return "invalid setting: " + "; ".join(problems)
