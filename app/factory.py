"""The application factory: settings, extensions, the protocol, the blueprints, the commands, errors."""

from __future__ import annotations

from typing import Any

from flask import Flask

from app.core.config import PROJECT_ROOT, check_settings, flask_config, load_settings
from app.store.unit_of_work import RetryingFlask


def create_app(overrides: dict[str, Any] | None = None) -> Flask:
    """config -> extensions -> oauth -> blueprints -> cli -> errors."""
    problems: list[str] = []  # every setting that does not parse, then every rule broken: one report
    settings = load_settings(overrides, problems)
    check_settings(settings, problems)

    app = RetryingFlask(
        __name__,
        template_folder=str(PROJECT_ROOT / "templates"),
        static_folder=str(PROJECT_ROOT / "static"),
    )
    app.config.update(flask_config(settings))
    from app.core.adapters import SessionCookies

    app.session_interface = SessionCookies()
    app.config["MAX_CONTENT_LENGTH"] = 1024 * 1024

    from app.core.input_rules import init_input_rules

    init_input_rules(app)

    from app.core.logs import init_logging

    init_logging(app)

    from app.core.extensions import csrf, db, migrate
    from app.protocol.jwks import init_keystore
    from app.services.passwords import init_passwords
    from app.store import init_store
    from app.store.unit_of_work import init_database

    init_database(app)
    init_store(app)

    from app.services.payments import init_payments

    init_payments(app)
    migrate.init_app(app, db, directory=str(PROJECT_ROOT / "migrations"))
    csrf.init_app(app)
    init_keystore(app)
    init_passwords(app)

    from app.services.throttle import init_throttle

    init_throttle(app)

    from app.protocol.metadata import init_metadata
    from app.protocol.server import init_oauth

    init_oauth(app)
    init_metadata(app)

    from app.protocol import published, token_endpoint, userinfo
    from app.protocol.front import init_front

    init_front(app, {**published.answerers(app), **userinfo.answerers(app), **token_endpoint.answerers(app)})

    from app.web.auth.logout_views import bp as logout_bp
    from app.web.auth.recovery_views import bp as recovery_bp
    from app.web.auth.two_step_login_views import bp as two_step_login_bp
    from app.web.auth.verification_views import bp as verification_bp
    from app.web.auth.views import bp as auth_bp
    from app.web.consent.views import bp as consent_bp
    from app.web.protocol_views import bp as oauth_bp

    app.register_blueprint(oauth_bp)
    app.register_blueprint(auth_bp)
    app.register_blueprint(logout_bp)
    app.register_blueprint(recovery_bp)
    app.register_blueprint(two_step_login_bp)
    app.register_blueprint(verification_bp)
    app.register_blueprint(consent_bp)

    from app.web.account import revoke_views, roster_views  # noqa: F401 - their pages join the account blueprint
    from app.web.account.two_step_views import bp as two_step_bp
    from app.web.account.views import bp as account_bp
    from app.web.console import bp as console_bp
    from app.web.developer_docs import bp as devdocs_bp

    app.register_blueprint(console_bp)
    app.register_blueprint(devdocs_bp)

    from app.web.payment_webhooks import bp as payment_webhooks_bp

    app.register_blueprint(payment_webhooks_bp)
    app.register_blueprint(account_bp)
    app.register_blueprint(two_step_bp)

    from app.web.humanize import init_humanize

    init_humanize(app)

    from app.core.metrics import init_metrics
    from app.web.health import init_health

    init_health(app)
    init_metrics(app)

    from app.web.api import init_api
    from app.web.key_activity import init_key_activity

    init_api(app)
    init_key_activity(app)  # each key's recent requests (after logging: it names a refused key first)

    from app.cli import register_commands

    register_commands(app)

    from app.core.security import init_security
    from app.web.cors import init_cors
    from app.web.errors import register_error_handlers

    register_error_handlers(app)
    init_security(app)
    init_cors(app)

    return app
