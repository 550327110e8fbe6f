"""What the `mnemostream` command modules share: the console they print to, the log setup."""

from __future__ import annotations

import logging

from rich.console import Console

from services.ops.logs import bound_repeats, stamp_traces

__all__ = ["console", "setup_logging"]

console = Console()


def setup_logging(level: str) -> None:
    """Log records at ``level`` (a Python level name, any case) and up to stderr, one line each."""
    logging.basicConfig(
        level=level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    bound_repeats()  # one record failing on every read must not flood the log
    stamp_traces()  # a line written inside a traced span names its trace
