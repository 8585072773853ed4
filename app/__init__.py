"""Credits ID: the OpenID Connect provider of the music-credits platform.

The package is laid out by layer; each imports only the layers below it (pyproject.toml's
`layers` contract and tests/unit/test_layers.py check it):

    web, cli    the edges: pages, blueprints, the /v1 and /embed views; the `flask` commands
    protocol    OAuth 2.0 and OpenID Connect: Authlib's wiring, the decisions, grants, endpoints
    services    the rules: members, sign-in, consent, apps, API keys, metering, fees, audit, mail
    store       the port to the database: a typed interface per aggregate and its implementations
    models      the tables (ORM classes for the pages, and the schema Alembic migrates)
    core        settings, extension singletons, the scope table, logs, metrics

Importing this package loads nothing else: `create_app` loads the application when it is called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flask import Flask


def create_app(overrides: dict[str, Any] | None = None) -> Flask:
    """The application (app/factory.py builds it)."""
    from app.factory import create_app as build

    return build(overrides)
