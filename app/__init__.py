"""Credits ID: the OpenID Connect provider of the music-credits platform."""

from __future__ import annotations

from typing import Any

from flask import Flask

from app.config import PROJECT_ROOT, check_settings, flask_config, load_settings
from app.database import RetryingFlask


def create_app(overrides: dict[str, Any] | None = None) -> Flask:
    """config -> extensions -> oauth -> blueprints -> cli -> errors."""
    settings = load_settings(overrides)
    check_settings(settings)

    app = RetryingFlask(
        __name__,
        template_folder=str(PROJECT_ROOT / "templates"),
        static_folder=str(PROJECT_ROOT / "static"),
    )
    app.config.update(flask_config(settings))
    from app.adapters import SessionCookies

    app.session_interface = SessionCookies()
    app.config["MAX_CONTENT_LENGTH"] = 1024 * 1024

    from app.input_rules import init_input_rules

    init_input_rules(app)

    from app.logs import init_logging

    init_logging(app)

    from app.auth.passwords import init_passwords
    from app.database import init_database
    from app.extensions import csrf, db, migrate
    from app.jwks import init_keystore

    init_database(app)
    migrate.init_app(app, db, directory=str(PROJECT_ROOT / "migrations"))
    csrf.init_app(app)
    init_keystore(app)
    init_passwords(app)

    from app.auth.throttle import init_throttle

    init_throttle(app)

    from app.oauth.metadata import init_metadata
    from app.oauth.server import init_oauth

    init_oauth(app)
    init_metadata(app)

    from app.oauth.front import init_front

    init_front(app)

    from app.auth.logout_views import bp as logout_bp
    from app.auth.recovery_views import bp as recovery_bp
    from app.auth.two_step_login_views import bp as two_step_login_bp
    from app.auth.verification_views import bp as verification_bp
    from app.auth.views import bp as auth_bp
    from app.consent.views import bp as consent_bp
    from app.oauth.views import bp as oauth_bp

    app.register_blueprint(oauth_bp)
    app.register_blueprint(auth_bp)
    app.register_blueprint(logout_bp)
    app.register_blueprint(recovery_bp)
    app.register_blueprint(two_step_login_bp)
    app.register_blueprint(verification_bp)
    app.register_blueprint(consent_bp)

    from app.account import revoke_views  # noqa: F401 - its page joins the account blueprint
    from app.account.two_step_views import bp as two_step_bp
    from app.account.views import bp as account_bp
    from app.console import bp as console_bp

    app.register_blueprint(console_bp)
    app.register_blueprint(account_bp)
    app.register_blueprint(two_step_bp)

    from app.humanize import init_humanize

    init_humanize(app)

    from app.health import init_health
    from app.metrics import init_metrics

    init_health(app)
    init_metrics(app)

    from app.api import init_api

    init_api(app)

    from app.commands import register_commands

    register_commands(app)

    from app.cors import init_cors
    from app.errors import register_error_handlers
    from app.security import init_security

    register_error_handlers(app)
    init_security(app)
    init_cors(app)

    return app
