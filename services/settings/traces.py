"""The traces section: where the consumer groups send their OpenTelemetry spans (OTLP over
HTTP). Off by default: with no endpoint no tracer is built, no middleware is installed and no
span is made (`services.stream.telemetry`, docs/operations.md#traces)."""

from __future__ import annotations

from importlib.util import find_spec

from pydantic import Field, field_validator

from services.settings.base import Section


class TracesSettings(Section):
    """OpenTelemetry traces of `mnemostream run`."""

    endpoint: str = Field(
        default="",
        validation_alias="otel_endpoint",
        description=(
            "OTLP/HTTP endpoint of the trace collector (`http://collector:4318`, or the full "
            "`…/v1/traces` URL); empty ⇒ traces off, at no cost. The exporter also reads the "
            "standard `OTEL_EXPORTER_OTLP_HEADERS` and `OTEL_EXPORTER_OTLP_TIMEOUT`. Needs the "
            "`otel` extra (`pip install mnemostream[otel]`)."
        ),
    )
    sample_ratio: float = Field(
        default=1.0,
        ge=0.0,
        le=1.0,
        validation_alias="otel_sample_ratio",
        description=(
            "Share of new traces recorded (parent-based: a trace begun upstream, by an agent "
            "that sampled it, is kept whatever this says)."
        ),
    )
    service_name: str = Field(
        default="mnemostream",
        min_length=1,
        validation_alias="otel_service_name",
        description=(
            "`service.name` of the spans; each process adds its groups as `mnemostream.groups`."
        ),
    )

    @field_validator("endpoint")
    @classmethod
    def _collector_url(cls, value: str) -> str:
        """An http(s) URL, and the exporter installed: refused at start-up in one line, not
        when the first span is sent."""
        value = value.strip()
        if not value:
            return ""
        if not value.startswith(("http://", "https://")) or len(value.split("://", 1)[1]) == 0:
            raise ValueError("must be an OTLP/HTTP URL, http(s)://host:port (e.g. :4318)")
        if _missing("opentelemetry.sdk") or _missing("opentelemetry.exporter.otlp.proto.http"):
            raise ValueError("traces need the otel extra: pip install 'mnemostream[otel]'")
        return value


def _missing(module: str) -> bool:
    try:
        return find_spec(module) is None
    except ModuleNotFoundError:  # a parent package is missing
        return True
