"""Settings: one documented table of defaults, environment overrides, and a fail-fast check.

Every setting can be overridden by an environment variable of the same name. The table below is
the single source of truth; the README's settings table is generated from the same text.
"""

from __future__ import annotations

import ipaddress
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEV_SECRET_KEY = "dev-only-insecure-secret-key-change-me"


@dataclass(frozen=True)
class Setting:
    default: Any
    doc: str


DEFAULTS: dict[str, Setting] = {
    "APP_ENV": Setting("production", "`development` relaxes the secret check; anything else is production."),
    "ISSUER_URL": Setting("http://127.0.0.1:5000", "The issuer identifier; `http` only on loopback hosts."),
    "DATABASE_URL": Setting(
        f"sqlite:///{PROJECT_ROOT / 'instance' / 'credits_id.sqlite3'}",
        "SQLAlchemy URL; `postgresql+psycopg://user@host/db` in production.",
    ),
    "SECRET_KEY": Setting(DEV_SECRET_KEY, "Signs the session cookie. Required (and not the default) in production."),
    "KEYS_DIR": Setting(str(PROJECT_ROOT / "keys"), "Where private signing keys live (files mode 0600)."),
    "USER_ID_CLAIM": Setting("", "Name of the stable user-id claim; empty means `<ISSUER_URL>/claims/user_id`."),
    "AUTHORIZATION_CODE_LIFETIME": Setting(60, "Seconds an authorization code stays redeemable."),
    "ACCESS_TOKEN_LIFETIME": Setting(3600, "Seconds an access token is valid."),
    "ID_TOKEN_LIFETIME": Setting(3600, "Seconds an ID token is valid."),
    "REFRESH_TOKEN_LIFETIME": Setting(30 * 24 * 3600, "Seconds a refresh token is valid."),
    "INTERACTION_LIFETIME": Setting(600, "Seconds a pending sign-in (login/consent hand-off) stays open."),
    "SESSION_LIFETIME": Setting(14 * 24 * 3600, "Seconds a member stays signed in to the provider."),
    "JWKS_MAX_AGE": Setting(300, "Cache-Control max-age of discovery and the key set, in seconds."),
    "KEY_PUBLISH_DELAY": Setting(
        300, "Seconds a rotated-in key is published before it signs (relying parties refresh their cache)."
    ),
    "KEY_REFRESH_INTERVAL": Setting(10, "Seconds between checks for keys rotated by another process."),
    "TRUSTED_PROXY_HOPS": Setting(0, "Reverse proxies in front of the service whose X-Forwarded-* headers are trusted."),
    "ARGON2_TIME_COST": Setting(2, "argon2id iterations (OWASP minimum: 2 with 19 MiB)."),
    "ARGON2_MEMORY_COST": Setting(19456, "argon2id memory in KiB (19 MiB)."),
    "ARGON2_PARALLELISM": Setting(1, "argon2id lanes."),
}


def _coerce(raw: str, default: Any) -> Any:
    """Parse an environment string into the type of the setting's default."""
    if isinstance(default, bool):
        return raw.strip().lower() in {"1", "true", "yes", "on"}
    if isinstance(default, int):
        return int(raw)
    return raw


def load_settings(overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Defaults, then environment variables, then explicit overrides (tests)."""
    settings = {name: s.default for name, s in DEFAULTS.items()}
    for name, setting in DEFAULTS.items():
        if name in os.environ:
            settings[name] = _coerce(os.environ[name], setting.default)
    settings.update(overrides or {})
    settings["ISSUER_URL"] = settings["ISSUER_URL"].rstrip("/")
    if not settings["USER_ID_CLAIM"]:
        settings["USER_ID_CLAIM"] = f"{settings['ISSUER_URL']}/claims/user_id"
    return settings


class ConfigError(RuntimeError):
    """The service refuses to start with this configuration."""


def is_loopback_host(host: str | None) -> bool:
    if not host:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_settings(settings: dict[str, Any]) -> None:
    """Fail fast on settings that would make the provider unsafe or broken."""
    issuer = urlsplit(settings["ISSUER_URL"])
    if issuer.scheme not in {"http", "https"} or not issuer.hostname:
        raise ConfigError(f"ISSUER_URL must be an absolute http(s) URL, got {settings['ISSUER_URL']!r}")
    if issuer.scheme == "http" and not is_loopback_host(issuer.hostname):
        raise ConfigError("ISSUER_URL must use https unless it is a loopback host (127.0.0.1, localhost, [::1])")
    if issuer.query or issuer.fragment:
        raise ConfigError("ISSUER_URL must not carry a query or fragment (OIDC Discovery 1.0 section 3)")
    if settings["APP_ENV"] != "development":
        secret = settings.get("SECRET_KEY") or ""
        if secret == DEV_SECRET_KEY or len(secret) < 32:
            raise ConfigError("SECRET_KEY must be set to a random value of at least 32 characters outside development")
    for name in ("AUTHORIZATION_CODE_LIFETIME", "ACCESS_TOKEN_LIFETIME", "ID_TOKEN_LIFETIME", "REFRESH_TOKEN_LIFETIME"):
        if int(settings[name]) <= 0:
            raise ConfigError(f"{name} must be a positive number of seconds")


class SQLiteConnection(sqlite3.Connection):
    """SQLite in WAL mode with synchronous=NORMAL: a commit appends to the log without an fsync
    (checkpoints still sync), and readers never wait for the writer. A commit may be lost on power
    failure, never corrupted; production runs PostgreSQL. Measured: the commit of a token
    exchange dropped from an fsync (milliseconds) to a write (see docs/performance.md)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.execute("PRAGMA journal_mode=WAL")
        self.execute("PRAGMA synchronous=NORMAL")


def flask_config(settings: dict[str, Any]) -> dict[str, Any]:
    """Translate our settings into the names Flask and its extensions read."""
    https = settings["ISSUER_URL"].startswith("https://")
    db_url = settings["DATABASE_URL"]
    engine_options: dict[str, Any] = {"pool_pre_ping": True}
    if db_url.startswith("sqlite"):
        # A busy timeout so concurrent writers wait for the lock instead of failing at once.
        engine_options = {"connect_args": {"timeout": 30, "factory": SQLiteConnection}}
        if db_url.startswith("sqlite:///") and ":memory:" not in db_url:
            Path(db_url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    return {
        **settings,
        "SQLALCHEMY_DATABASE_URI": db_url,
        "SQLALCHEMY_ENGINE_OPTIONS": engine_options,
        "SESSION_COOKIE_NAME": "credits_id_session",
        "SESSION_COOKIE_HTTPONLY": True,
        "SESSION_COOKIE_SAMESITE": "Lax",
        "SESSION_COOKIE_SECURE": https,
        "PERMANENT_SESSION_LIFETIME": int(settings["SESSION_LIFETIME"]),
        "WTF_CSRF_TIME_LIMIT": None,  # the token lives as long as the session; the session expires
        "WTF_CSRF_SSL_STRICT": https,
        "PREFERRED_URL_SCHEME": "https" if https else "http",
        "JSON_SORT_KEYS": False,
    }
