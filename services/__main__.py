"""`python -m services ...` is the `mnemostream` command."""

from services.cli import main

main()
