"""`python -m credits_cli`, the same as the `credits` command."""

from credits_cli.cli import main

main(prog_name="credits")
