"""The `flask` commands for scripts and operators, one module per noun (users, clients, keys,
api-keys, fees, billing, demo, catalog, housekeeping), each defining its own group. Importing a module only defines
its commands; `register_commands` is what adds them to an app's CLI.

Every command is one unit of work: it calls services (which only flush), commits once, and only
then prints the result or sends mail about it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import click
from flask import Flask

HELP_FLAGS = frozenset({"--help", "-h"})


def register_commands(app: Flask) -> None:
    """Add every command group to `app.cli` (called by create_app)."""
    # Imported here, not at the top: `import app.cli.users` loads that module alone.
    from app.cli import api_keys, billing, catalog, clients, demo, fees, housekeeping, keys, users

    for command in (
        users.users,
        clients.clients,
        keys.keys,
        demo.demo,
        catalog.catalog,
        fees.fees,
        billing.billing,
        api_keys.api_keys,
        housekeeping.purge_expired_command,
    ):
        app.cli.add_command(command)


def asking_for_help(argv: Sequence[str]) -> bool:
    """`flask`, `flask --help`, `flask users --help`...: the command line only asks what exists."""
    if not argv:
        return False
    program = Path(argv[0]).name
    if program == "__main__.py":  # `python -m flask`
        program = Path(argv[0]).parent.name
    if program not in {"flask", "flask.exe"}:
        return False
    words = list(argv[1:])
    return not words or any(word in HELP_FLAGS for word in words)


def help_only_app(problem: Exception) -> Flask:
    """An app that only knows its commands, for `--help` when the configuration is refused: the
    operator reads what the commands are before setting anything up. It says why a real command
    would stop (on stderr, so the help itself stays clean), and serves nothing."""
    click.echo(f"credits-id: the configuration is refused, so only --help works until it is fixed: {problem}", err=True)
    from flask_migrate.cli import db as migrations  # `flask db`, as the real app has it

    app = Flask("credits_id_help")
    register_commands(app)
    app.cli.add_command(migrations)
    return app
