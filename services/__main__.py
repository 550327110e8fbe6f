"""`python -m services ...` is the `mnemostream` command."""

from services.ops.cli import main

main()
