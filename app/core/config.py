"""Settings: one documented table of defaults, environment overrides, and a fail-fast check.

Every setting can be overridden by an environment variable of the same name. The table below is
the single source of truth; docs/operating.md lists every one of them (a test checks that none is missing).
"""

from __future__ import annotations

import ipaddress
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from limits import parse_many

PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEV_SECRET_KEY = "dev-only-insecure-secret-key-change-me"
MAX_REFRESH_GRACE_SECONDS = 60


@dataclass(frozen=True)
class Setting:
    default: Any
    doc: str


DEFAULTS: dict[str, Setting] = {
    "APP_ENV": Setting(
        "production",
        "`production` (the default) or `development` (relaxes the secret and mail checks; `make run` sets it); "
        "any other value is refused.",
    ),
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
    "TRUSTED_PROXY_HOPS": Setting(
        0, "Reverse proxies in front of the service whose X-Forwarded-* headers are trusted."
    ),
    "REFRESH_GRACE_SECONDS": Setting(
        0, "Refresh-rotation grace window (0-60 s): a retried refresh within it gets the same response. 0 = off."
    ),
    "REDIS_URL": Setting(
        "", "Redis for rate-limit counters shared by all processes (`redis://host:6379/0`); empty = in memory."
    ),
    # Sign-in throttling (app/services/throttle.py): a correct password from a browser that signed in to
    # the account before (its device cookie) is never refused; unknown browsers get a progressive delay.
    "LOGIN_ACCOUNT_FREE_FAILURES": Setting(
        5, "Failed sign-ins per account from unknown browsers before each further attempt must wait (1, 2, 4 ... s)."
    ),
    "LOGIN_ACCOUNT_MAX_DELAY": Setting(
        300, "The longest wait, in seconds, between sign-in attempts at one account from unknown browsers."
    ),
    "LOGIN_DEVICE_LIMIT": Setting(
        "10 per 15 minutes", "Failed sign-ins a known browser (device cookie) may make before it counts as unknown."
    ),
    "LOGIN_IP_LIMIT": Setting(
        "300 per 15 minutes",
        "Failed sign-ins per client IP (unknown browsers) before 429; high enough for a shared proxy.",
    ),
    "DEVICE_COOKIE_LIFETIME": Setting(
        365 * 24 * 3600, "Seconds a browser stays known to an account after its last sign-in."
    ),
    "TOKEN_CLIENT_LIMIT": Setting(
        "300 per minute", "Token-endpoint requests allowed per client id from one IP before 429."
    ),
    # Mail (app/services/mail.py): password-reset, verification and invitation links.
    "SMTP_URL": Setting(
        "",
        "SMTP server: `smtp://user:pass@host:587` (STARTTLS, required off loopback) or `smtps://host:465`; "
        "empty = write mails to MAIL_OUTBOX_DIR (development only).",
    ),
    "MAIL_FROM": Setting("Credits ID <no-reply@localhost>", "The From address of the mails the service sends."),
    "MAIL_OUTBOX_DIR": Setting(
        str(PROJECT_ROOT / "instance" / "outbox"), "Where mails go without SMTP_URL (development)."
    ),
    "MAIL_ACCOUNT_LIMIT": Setting(
        "3 per hour", "Reset and verification mails per account; beyond it none is sent (the page answers the same)."
    ),
    "MAIL_IP_LIMIT": Setting("20 per hour", "Requests for a reset or verification mail per client IP before 429."),
    "PASSWORD_RESET_LIFETIME": Setting(
        30 * 60, "Seconds a password-reset link works (single use; a newer one replaces it)."
    ),
    "EMAIL_VERIFICATION_LIFETIME": Setting(24 * 3600, "Seconds an email-verification link works."),
    "INVITATION_LIFETIME": Setting(7 * 24 * 3600, "Seconds an invitation link (set your first password) works."),
    "SUDO_MODE_LIFETIME": Setting(
        10 * 60,
        "Seconds after the member confirms it is them (password or authenticator code) during which the account's "
        "sensitive changes (second factors, recovery codes, email address) do not ask again.",
    ),
    "ARGON2_TIME_COST": Setting(2, "argon2id iterations (OWASP minimum: 2 with 19 MiB)."),
    "ARGON2_MEMORY_COST": Setting(19456, "argon2id memory in KiB (19 MiB)."),
    "ARGON2_PARALLELISM": Setting(1, "argon2id lanes."),
    "DATABASE_POOL_SIZE": Setting(
        5, "Connections each process keeps open to PostgreSQL (match the threads per worker)."
    ),
    "DATABASE_MAX_OVERFLOW": Setting(5, "Extra PostgreSQL connections a process may open under a burst."),
    "DATABASE_POOL_RECYCLE": Setting(
        1800, "Seconds after which a pooled PostgreSQL connection is replaced (keep it below any proxy's idle timeout)."
    ),
    "DATABASE_POOL_TIMEOUT": Setting(10, "Seconds a request waits for a free connection before answering 503."),
    "DATABASE_CONNECT_TIMEOUT": Setting(
        5, "Seconds to wait for PostgreSQL to accept a connection before answering 503."
    ),
    "APP_CACHE_SECONDS": Setting(
        60,
        "On PostgreSQL, the longest a process keeps an app or a presented API key it read; changes drop it at once "
        "by LISTEN/NOTIFY. "
        "0 = read on every request (needed behind a pooler that does not carry LISTEN).",
    ),
    "LOG_LEVEL": Setting("INFO", "Level of the JSON logs on stderr (DEBUG, INFO, WARNING, ERROR)."),
    "LOG_STYLE": Setting(
        "json",
        "`json` (one JSON object per line, for machines: production) or `text` (one readable line per "
        "request, for a terminal: `make run` sets it).",
    ),
    "METRICS_ENABLED": Setting(True, "Collect Prometheus metrics (served as METRICS_TOKEN and METRICS_BIND say)."),
    "METRICS_TOKEN": Setting(
        "", "/metrics on the main port answers only `Authorization: Bearer <token>`; empty: not served there (404)."
    ),
    "METRICS_BIND": Setting(
        "",
        "host:port where serve.py serves /metrics on a port of its own, for a scraper "
        "on a private network; empty: no such port.",
    ),
    "PURGE_BATCH_SIZE": Setting(1000, "Rows `flask purge-expired` deletes per transaction."),
    "AUDIT_RETENTION_DAYS": Setting(
        365,
        "Days the audit trail (with the IPs it records) is kept; `flask purge-expired` deletes older events. 0 = forever.",
    ),
    "MCP_URL": Setting(
        "http://127.0.0.1:5002/mcp",
        "The hosted tool server's public URL (its canonical address: agents connect here; served at its path). "
        "`http` only on loopback hosts.",
    ),
    # AI agents known by their Client ID Metadata Document (app/services/agent_clients.py).
    "CLIENT_DOCUMENT_TTL": Setting(
        3600, "Seconds an agent's client metadata document is kept before it is read again."
    ),
    "CLIENT_DOCUMENT_TIMEOUT": Setting(3, "Seconds a client metadata document may take to arrive, all told."),
    "CLIENT_DOCUMENT_MAX_BYTES": Setting(5120, "Largest client metadata document read, in bytes."),
    "CLIENT_DOCUMENT_FETCH_LIMIT": Setting(
        "30 per minute", "Client metadata documents read per host of their URL (fresh copies are not read again)."
    ),
    "CLIENT_REGISTRATION_LIMIT": Setting(
        "10 per hour", "Dynamic client registrations (RFC 7591, AI agents) allowed per client address."
    ),
    "CLIENT_DOCUMENT_CA_FILE": Setting(
        "", "PEM certificates trusted for client metadata documents besides the system's (a development agent's)."
    ),
    "API_RATE_LIMIT_PER_MINUTE": Setting(
        300,
        "Requests per minute to the `/v1` data API per sign-in (a grant: its access token and those refreshed from it).",
    ),
    "CATALOG_DATABASE_URL": Setting(
        "",
        "A PostgreSQL read replica of DATABASE_URL's database that the catalog's reads (the key door's views, the "
        "tool server's tools) go to, so their load runs on its CPUs, not the sign-in's; keys, limits and the meter "
        "stay on DATABASE_URL. Empty: everything reads DATABASE_URL.",
    ),
    "CATALOG_STATEMENT_TIMEOUT_MS": Setting(
        2000,
        "Milliseconds a statement of a catalog call (the key door, the tool server) may run before the call is "
        "answered 503 with Retry-After; the sign-in's statements are never bounded. 0 = no bound.",
    ),
    "CATALOG_SEARCH_CONCURRENCY": Setting(
        1,
        "Searches the server runs at once (serve.py's workers and tool server together; each process on its own "
        "without serve.py); the next is answered 503 with Retry-After at once. Keep it below WEB_THREADS so a "
        "sign-in request always finds a thread no search holds. 0 = no limit.",
    ),
    "CATALOG_SLOTS_DIR": Setting(
        "", "Where serve.py's processes share their search slots: a fresh folder serve.py makes and sets itself."
    ),
    "CATALOG_SEARCH_WEIGHT": Setting(
        10, "Requests a search counts for against an API key's per-second and per-minute budgets (others count 1)."
    ),
    "BILLING_PROVIDER": Setting(
        "offline",
        "How cards are saved and charged: `stripe` (STRIPE_SECRET_KEY, STRIPE_WEBHOOK_SECRET) or `offline` "
        "(local runs and tests: no money moves, and the billing pages say so).",
    ),
    "STRIPE_SECRET_KEY": Setting(
        "", "Stripe's secret API key (`sk_live_...`/`sk_test_...`), with BILLING_PROVIDER=stripe."
    ),
    "STRIPE_WEBHOOK_SECRET": Setting(
        "",
        "The signing secret (`whsec_...`) of the webhook endpoint `/billing/stripe/webhook`, with BILLING_PROVIDER=stripe.",
    ),
    "BILLING_STANDING_SECONDS": Setting(
        30,
        "The longest a process keeps a key owner's billing standing (balance, spend ceiling) between reads: "
        "how late the gateway may notice credits running out. 0 = read on every request.",
    ),
    "KEY_ACTIVITY_KEEP": Setting(
        100,
        "Requests kept per API key for its console page (the newest; refusals included). 0 = keep none.",
    ),
    "KEY_ACTIVITY_DAYS": Setting(
        30, "Days a key's recent request is kept at most (`flask purge-expired` deletes older ones)."
    ),
    "KEY_ACTIVITY_FLUSH_SECONDS": Setting(
        1.0,
        "How often each process writes its keys' recent requests, in one batch (0 = each one as its response is sent).",
    ),
    "PROFILE_PAGE_URL": Setting(
        "",
        "The platform's public page of a profile, `{id}` standing for its id (`https://credits.example.com/p/{id}`): "
        "where the widget's cards link. Empty: they link to ISSUER_URL.",
    ),
}


TRUE, FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off", ""}
APP_ENVS = ("production", "development")


def _coerce(name: str, raw: str, default: Any) -> Any:
    """Parse an environment string into the type of the setting's default; a value that is not
    one stops the start naming the setting (a typo such as `flase` must not switch silently)."""
    if isinstance(default, bool):
        word = raw.strip().lower()
        if word not in TRUE | FALSE:
            raise ConfigError(f"{name} must be true or false, got {raw!r}")
        return word in TRUE
    if isinstance(default, int):
        try:
            return int(raw)
        except ValueError:
            raise ConfigError(f"{name} must be a whole number, got {raw!r}") from None
    return raw


def load_settings(overrides: dict[str, Any] | None = None, problems: list[str] | None = None) -> dict[str, Any]:
    """Defaults, then environment variables, then explicit overrides (tests). A value that does not
    parse is refused at once, or, given a `problems` list, noted there (its default kept) so the
    start can report every problem in one run."""
    settings = {name: s.default for name, s in DEFAULTS.items()}
    for name, setting in DEFAULTS.items():
        if name in os.environ:
            try:
                settings[name] = _coerce(name, os.environ[name], setting.default)
            except ConfigError as exc:
                if problems is None:
                    raise
                problems.extend(exc.problems)
    settings.update(overrides or {})
    settings["ISSUER_URL"] = settings["ISSUER_URL"].rstrip("/")
    if not settings["USER_ID_CLAIM"]:
        settings["USER_ID_CLAIM"] = f"{settings['ISSUER_URL']}/claims/user_id"
    return settings


class ConfigError(RuntimeError):
    """The service refuses to start with this configuration: every problem found, so the operator
    fixes them in one round instead of one start per setting."""

    def __init__(self, *problems: str):
        self.problems = list(problems)
        super().__init__(self._text())

    def _text(self) -> str:
        if len(self.problems) == 1:
            return self.problems[0]
        return f"{len(self.problems)} settings to fix:\n" + "\n".join(f"  - {p}" for p in self.problems)


def refusal(exc: ConfigError) -> SystemExit:
    """A start-up refusal on stderr (a line per problem) and a non-zero exit, not a traceback:
    the operator needs the settings to fix, not the stack that found them."""
    return SystemExit(f"credits-id: {exc}")


def is_loopback_host(host: str | None) -> bool:
    if not host:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_settings(settings: dict[str, Any], problems: list[str] | None = None) -> None:
    """Fail fast on settings that would make the provider unsafe or broken: every problem at once
    (after any `problems` found while reading them), in one ConfigError."""
    problems = list(problems or [])
    refuse = problems.append
    if settings["APP_ENV"] not in APP_ENVS:
        refuse(f"APP_ENV must be one of {', '.join(APP_ENVS)}, got {settings['APP_ENV']!r}")
    if settings["LOG_STYLE"] not in ("json", "text"):
        refuse(f"LOG_STYLE must be json or text, got {settings['LOG_STYLE']!r}")
    issuer = urlsplit(settings["ISSUER_URL"])
    if issuer.scheme not in {"http", "https"} or not issuer.hostname:
        refuse(f"ISSUER_URL must be an absolute http(s) URL, got {settings['ISSUER_URL']!r}")
    if issuer.scheme == "http" and not is_loopback_host(issuer.hostname):
        refuse("ISSUER_URL must use https unless it is a loopback host (127.0.0.1, localhost, [::1])")
    if issuer.query or issuer.fragment:
        refuse("ISSUER_URL must not carry a query or fragment (OIDC Discovery 1.0 section 3)")
    if settings["APP_ENV"] != "development":
        secret = settings.get("SECRET_KEY") or ""
        if secret == DEV_SECRET_KEY or len(secret) < 32:
            refuse("SECRET_KEY must be set to a random value of at least 32 characters outside development")
    smtp = urlsplit(settings["SMTP_URL"]) if settings["SMTP_URL"] else None
    if smtp is None and settings["APP_ENV"] != "development":
        refuse("SMTP_URL must be set outside development: password-reset and verification mails need it")
    if smtp is not None and (smtp.scheme not in {"smtp", "smtps"} or not smtp.hostname):
        refuse(f"SMTP_URL must be smtp://host:port or smtps://host:port, got scheme {smtp.scheme!r}")
    if "@" not in settings["MAIL_FROM"]:
        refuse("MAIL_FROM must be an email address, such as 'Credits ID <no-reply@id.example.com>'")
    tools = urlsplit(settings["MCP_URL"])
    if tools.scheme not in {"http", "https"} or not tools.hostname or not tools.path.startswith("/"):
        refuse(f"MCP_URL must be an absolute http(s) URL with a path, got {settings['MCP_URL']!r}")
    if tools.scheme == "http" and not is_loopback_host(tools.hostname):
        refuse("MCP_URL must use https unless it is a loopback host (127.0.0.1, localhost, [::1])")
    if tools.query or tools.fragment:
        refuse("MCP_URL must not carry a query or fragment")
    if int(settings["API_RATE_LIMIT_PER_MINUTE"]) <= 0:
        refuse("API_RATE_LIMIT_PER_MINUTE must be a positive number of requests")
    if int(settings["CATALOG_STATEMENT_TIMEOUT_MS"]) < 0 or int(settings["CATALOG_SEARCH_CONCURRENCY"]) < 0:
        refuse("CATALOG_STATEMENT_TIMEOUT_MS and CATALOG_SEARCH_CONCURRENCY must be 0 (off) or a positive number")
    if settings["CATALOG_DATABASE_URL"] and not (
        settings["CATALOG_DATABASE_URL"].startswith("postgresql") and settings["DATABASE_URL"].startswith("postgresql")
    ):
        refuse("CATALOG_DATABASE_URL must be a PostgreSQL read replica of DATABASE_URL's PostgreSQL database")
    if int(settings["CATALOG_SEARCH_WEIGHT"]) < 1:
        refuse("CATALOG_SEARCH_WEIGHT must be 1 or more requests")
    profile_page = urlsplit(settings["PROFILE_PAGE_URL"]) if settings["PROFILE_PAGE_URL"] else None
    if profile_page is not None and (
        profile_page.scheme not in {"http", "https"}
        or not profile_page.hostname
        or "{id}" not in settings["PROFILE_PAGE_URL"]
    ):
        refuse("PROFILE_PAGE_URL must be an absolute http(s) URL with {id} where the profile id goes")
    if settings["BILLING_PROVIDER"] not in {"offline", "stripe"}:
        refuse("BILLING_PROVIDER must be `stripe` or `offline`")
    if settings["BILLING_PROVIDER"] == "stripe" and not (
        settings["STRIPE_SECRET_KEY"].startswith(("sk_", "rk_"))
        and settings["STRIPE_WEBHOOK_SECRET"].startswith("whsec_")
    ):
        refuse("BILLING_PROVIDER=stripe needs STRIPE_SECRET_KEY (sk_...) and STRIPE_WEBHOOK_SECRET (whsec_...)")
    if int(settings["BILLING_STANDING_SECONDS"]) < 0:
        refuse("BILLING_STANDING_SECONDS must be 0 (read on every request) or a number of seconds")
    for name in [n for n in DEFAULTS if n.endswith("_LIFETIME")]:
        if int(settings[name]) <= 0:  # 0 would make every session, code or token expire at birth
            refuse(f"{name} must be a positive number of seconds")
    if int(settings["KEY_ACTIVITY_KEEP"]) < 0 or int(settings["KEY_ACTIVITY_DAYS"]) < 1:
        refuse("KEY_ACTIVITY_KEEP must be 0 (keep none) or more, and KEY_ACTIVITY_DAYS at least 1")
    if not 0 <= float(settings["KEY_ACTIVITY_FLUSH_SECONDS"]) <= 60:
        refuse("KEY_ACTIVITY_FLUSH_SECONDS must be between 0 and 60")
    if int(settings["APP_CACHE_SECONDS"]) < 0:
        refuse("APP_CACHE_SECONDS must be 0 (read apps and keys on every request) or a number of seconds")
    if int(settings["AUDIT_RETENTION_DAYS"]) < 0:
        refuse("AUDIT_RETENTION_DAYS must be 0 (keep forever) or a number of days")
    if not 0 <= int(settings["REFRESH_GRACE_SECONDS"]) <= MAX_REFRESH_GRACE_SECONDS:
        refuse(f"REFRESH_GRACE_SECONDS must be between 0 and {MAX_REFRESH_GRACE_SECONDS}")
    if int(settings["LOGIN_ACCOUNT_FREE_FAILURES"]) < 0 or int(settings["LOGIN_ACCOUNT_MAX_DELAY"]) < 1:
        refuse("LOGIN_ACCOUNT_FREE_FAILURES must be 0 or more and LOGIN_ACCOUNT_MAX_DELAY at least 1 second")
    for name in (
        "LOGIN_DEVICE_LIMIT",
        "LOGIN_IP_LIMIT",
        "TOKEN_CLIENT_LIMIT",
        "MAIL_ACCOUNT_LIMIT",
        "MAIL_IP_LIMIT",
        "CLIENT_DOCUMENT_FETCH_LIMIT",
        "CLIENT_REGISTRATION_LIMIT",
    ):
        try:
            parse_many(settings[name])
        except ValueError as exc:
            refuse(f"{name} must be a rate limit such as '5 per 15 minutes': {exc}")
    if problems:
        raise ConfigError(*problems)


class SQLiteConnection(sqlite3.Connection):
    """SQLite in WAL mode with synchronous=NORMAL: a commit appends to the log without an fsync
    (checkpoints still sync), and readers never wait for the writer. A commit may be lost on power
    failure, never corrupted; production runs PostgreSQL. A commit costs a write, not an fsync."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.execute("PRAGMA journal_mode=WAL")
        self.execute("PRAGMA synchronous=NORMAL")


def flask_config(settings: dict[str, Any]) -> dict[str, Any]:
    """Translate our settings into the names Flask and its extensions read."""
    https = settings["ISSUER_URL"].startswith("https://")
    db_url = settings["DATABASE_URL"]
    engine_options: dict[str, Any] = {}
    if db_url.startswith("postgresql"):
        from app.core.adapters import LazyDescriptionCursor

        # No pool_pre_ping: a round trip on every request. Connections are recycled instead, and a
        # request whose first statement finds a dead one runs again (app/store/unit_of_work.py).
        engine_options.update(
            # Named, not left to the server's default: a transaction begins at its first write
            # (app/store/unit_of_work.py), which reads the same rows as beginning earlier only at this level.
            isolation_level="READ COMMITTED",
            pool_recycle=int(settings["DATABASE_POOL_RECYCLE"]),
            pool_size=int(settings["DATABASE_POOL_SIZE"]),
            max_overflow=int(settings["DATABASE_MAX_OVERFLOW"]),
            pool_timeout=int(settings["DATABASE_POOL_TIMEOUT"]),
            connect_args={
                "connect_timeout": int(settings["DATABASE_CONNECT_TIMEOUT"]),
                "cursor_factory": LazyDescriptionCursor,  # columns described on demand (app/protocol/adapters.py)
            },
        )
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
        # SameSite=None on https, so the session arrives with the requests OpenID Connect makes
        # across sites: an authorization or logout request POSTed by an app's page (OIDC Core
        # 3.1.2.1, RP-Initiated Logout 2), and silent `prompt=none` renewal in an app's iframe.
        # Under Lax a cross-site POST came without the cookie: no single sign-on, and the fresh
        # cookie it got signed the member out. Every form still carries a CSRF token bound to
        # the session, and no page may be framed. Browsers refuse None without Secure, so plain
        # http (a local run) keeps Lax.
        "SESSION_COOKIE_SAMESITE": "None" if https else "Lax",
        "SESSION_COOKIE_SECURE": https,
        "PERMANENT_SESSION_LIFETIME": int(settings["SESSION_LIFETIME"]),
        # The login the cookie names ends at a fixed time (auth/sessions.py: expires_at, set once
        # at sign-in), so the cookie is issued when its contents change and not signed again on
        # every request to move its expiry: a member's requests between sign-ins set no cookie.
        "SESSION_REFRESH_EACH_REQUEST": False,
        "WTF_CSRF_TIME_LIMIT": None,  # the token lives as long as the session; the session expires
        # Flask-WTF's strict mode wants a same-origin Referer on https POSTs, but our pages send
        # none (Referrer-Policy: no-referrer, which also makes browsers send `Origin: null`).
        # The CSRF token bound to the session is the defence (and SameSite=Lax on plain http).
        "WTF_CSRF_SSL_STRICT": False,
        # Flask-Limiter: Redis when configured (shared by every process), else per-process memory
        # (limits' own, swept without a timer thread: app/protocol/adapters.py SweptMemoryStorage).
        "RATELIMIT_STORAGE_URI": settings["REDIS_URL"] or "swept-memory://",
        "RATELIMIT_KEY_PREFIX": "credits-id",
        "RATELIMIT_SWALLOW_ERRORS": True,  # a Redis outage must not turn sign-in into a 500
        "RATELIMIT_IN_MEMORY_FALLBACK_ENABLED": True,
        "PREFERRED_URL_SCHEME": "https" if https else "http",
        "JSON_SORT_KEYS": False,
    }
