"""The `flask` commands for scripts and operators, one module per noun (users, clients, keys,
api-keys, fees, billing, demo, housekeeping), each defining its own group. Importing a module only defines
its commands; `register_commands` is what adds them to an app's CLI.

Every command is one unit of work: it calls services (which only flush), commits once, and only
then prints the result or sends mail about it."""

from __future__ import annotations

from flask import Flask


def register_commands(app: Flask) -> None:
    """Add every command group to `app.cli` (called by create_app)."""
    # Imported here, not at the top: `import app.cli.users` loads that module alone.
    from app.cli import api_keys, billing, clients, demo, fees, housekeeping, keys, users

    for command in (
        users.users,
        clients.clients,
        keys.keys,
        demo.demo,
        fees.fees,
        billing.billing,
        api_keys.api_keys,
        housekeeping.purge_expired_command,
    ):
        app.cli.add_command(command)
