import pytest

from app import create_app
from app.core.config import DEV_SECRET_KEY, ConfigError, check_settings, load_settings

STRONG = "s" * 40


def settings(**over):
    base = load_settings({"APP_ENV": "production", "SECRET_KEY": STRONG, "SMTP_URL": "smtp://mail.example.com:587"})
    base.update(over)
    return base


def test_defaults_are_documented_and_derive_the_user_id_claim(monkeypatch):
    monkeypatch.delenv("ISSUER_URL", raising=False)
    monkeypatch.delenv("USER_ID_CLAIM", raising=False)
    s = load_settings()
    assert s["ISSUER_URL"] == "http://127.0.0.1:5000"
    assert s["USER_ID_CLAIM"] == "http://127.0.0.1:5000/claims/user_id"
    assert s["AUTHORIZATION_CODE_LIFETIME"] == 60


def test_environment_overrides_with_types(monkeypatch):
    monkeypatch.setenv("ISSUER_URL", "https://id.example.com/")
    monkeypatch.setenv("ACCESS_TOKEN_LIFETIME", "120")
    s = load_settings()
    assert s["ISSUER_URL"] == "https://id.example.com"  # trailing slash dropped: issuer must match exactly
    assert s["ACCESS_TOKEN_LIFETIME"] == 120
    assert s["USER_ID_CLAIM"] == "https://id.example.com/claims/user_id"


@pytest.mark.parametrize("secret", [DEV_SECRET_KEY, "", "short"])
def test_production_refuses_a_missing_or_default_secret(secret):
    with pytest.raises(ConfigError, match="SECRET_KEY"):
        check_settings(settings(SECRET_KEY=secret))


def test_production_needs_a_mail_server_and_a_valid_one():
    with pytest.raises(ConfigError, match="SMTP_URL must be set"):
        check_settings(settings(SMTP_URL=""))
    with pytest.raises(ConfigError, match="SMTP_URL must be smtp"):
        check_settings(settings(SMTP_URL="http://mail.example.com"))
    with pytest.raises(ConfigError, match="MAIL_FROM"):
        check_settings(settings(MAIL_FROM="nobody"))
    check_settings(settings(SMTP_URL="smtps://user:p%40ss@mail.example.com:465"))
    check_settings(settings(APP_ENV="development", SMTP_URL=""))  # development writes to the outbox


def test_development_accepts_the_default_secret():
    check_settings(settings(APP_ENV="development", SECRET_KEY=DEV_SECRET_KEY))


@pytest.mark.parametrize(
    "issuer", ["http://127.0.0.1:5000", "http://localhost:8080", "http://[::1]:5000", "https://id.example.com"]
)
def test_accepted_issuers(issuer):
    check_settings(settings(ISSUER_URL=issuer))


@pytest.mark.parametrize(
    "issuer", ["http://id.example.com", "http://10.0.0.5", "ftp://127.0.0.1", "https://id.example.com?x=1", "not a url"]
)
def test_rejected_issuers(issuer):
    with pytest.raises(ConfigError, match="ISSUER_URL"):
        check_settings(settings(ISSUER_URL=issuer))


@pytest.mark.parametrize(
    "url", ["credits.example.com/p/{id}", "javascript:alert('{id}')", "https://credits.example.com/"]
)
def test_the_profile_page_is_a_web_address_with_the_id(url):
    with pytest.raises(ConfigError, match="PROFILE_PAGE_URL"):
        check_settings(settings(PROFILE_PAGE_URL=url))
    check_settings(settings(PROFILE_PAGE_URL="https://credits.example.com/p/{id}"))
    check_settings(settings(PROFILE_PAGE_URL=""))  # the cards link to ISSUER_URL


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:5002/mcp", "https://tools.credits.example/mcp", "https://api.credits.example/"]
)
def test_accepted_tool_server_urls(url):
    check_settings(settings(MCP_URL=url))


@pytest.mark.parametrize(
    "url",
    [
        "http://tools.credits.example/mcp",  # plain http off loopback: the key would cross the network in clear
        "https://tools.credits.example",  # no path to serve at
        "https://tools.credits.example/mcp?x=1",
        "ws://127.0.0.1:5002/mcp",
        "/mcp",
    ],
)
def test_rejected_tool_server_urls(url):
    with pytest.raises(ConfigError, match="MCP_URL"):
        check_settings(settings(MCP_URL=url))


def test_create_app_fails_fast_outside_development(tmp_path):
    with pytest.raises(ConfigError):
        create_app(
            {"APP_ENV": "production", "SECRET_KEY": DEV_SECRET_KEY, "DATABASE_URL": f"sqlite:///{tmp_path}/x.db"}
        )


def test_https_issuer_makes_the_session_cookie_secure(tmp_path):
    app = create_app(
        {
            "APP_ENV": "production",
            "SECRET_KEY": STRONG,
            "ISSUER_URL": "https://id.example.com",
            "SMTP_URL": "smtp://mail.example.com:587",
            "DATABASE_URL": f"sqlite:///{tmp_path}/x.db",
            "KEYS_DIR": str(tmp_path),
        }
    )
    assert app.config["SESSION_COOKIE_SECURE"] is True
    assert app.config["SESSION_COOKIE_HTTPONLY"] is True
    # None (only ever with Secure): an app's cross-site POST to /authorize or the logout endpoint
    # must arrive with the member's session.
    assert app.config["SESSION_COOKIE_SAMESITE"] == "None"


def test_plain_http_keeps_the_session_cookie_samesite_lax(tmp_path):
    """Browsers refuse SameSite=None without Secure, which plain http cannot have."""
    app = create_app(
        {
            "APP_ENV": "development",
            "ISSUER_URL": "http://127.0.0.1:5000",
            "DATABASE_URL": f"sqlite:///{tmp_path}/x.db",
            "KEYS_DIR": str(tmp_path),
        }
    )
    assert app.config["SESSION_COOKIE_SECURE"] is False
    assert app.config["SESSION_COOKIE_SAMESITE"] == "Lax"


@pytest.mark.parametrize(
    ("name", "raw", "says"),
    [
        ("METRICS_ENABLED", "flase", "METRICS_ENABLED must be true or false"),
        ("SESSION_LIFETIME", "two weeks", "SESSION_LIFETIME must be a whole number"),
    ],
)
def test_an_unreadable_environment_value_stops_the_start_naming_the_setting(monkeypatch, name, raw, says):
    monkeypatch.setenv(name, raw)
    with pytest.raises(ConfigError, match=says):
        load_settings()


@pytest.mark.parametrize(
    "name",
    [
        "SESSION_LIFETIME",
        "INTERACTION_LIFETIME",
        "AUTHORIZATION_CODE_LIFETIME",
        "ACCESS_TOKEN_LIFETIME",
        "ID_TOKEN_LIFETIME",
        "REFRESH_TOKEN_LIFETIME",
    ],
)
def test_a_lifetime_must_be_positive(name):
    """0 would make every session, code or token expire as it is made (members could never stay in)."""
    with pytest.raises(ConfigError, match=f"{name} must be a positive number of seconds"):
        check_settings(load_settings({"APP_ENV": "development", name: 0}))


def test_audit_retention_cannot_be_negative():
    with pytest.raises(ConfigError, match="AUDIT_RETENTION_DAYS"):
        check_settings(load_settings({"APP_ENV": "development", "AUDIT_RETENTION_DAYS": -1}))
    check_settings(load_settings({"APP_ENV": "development", "AUDIT_RETENTION_DAYS": 0}))  # 0 = keep forever


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("KEY_ACTIVITY_KEEP", -1),
        ("KEY_ACTIVITY_DAYS", 0),
        ("KEY_ACTIVITY_FLUSH_SECONDS", -1),
        ("KEY_ACTIVITY_FLUSH_SECONDS", 61),
    ],
)
def test_a_keys_recent_requests_are_kept_within_sane_bounds(name, value):
    with pytest.raises(ConfigError, match=name):
        check_settings(load_settings({"APP_ENV": "development", name: value}))


def test_keeping_no_recent_requests_and_writing_each_at_once_are_allowed():
    check_settings(load_settings({"APP_ENV": "development", "KEY_ACTIVITY_KEEP": 0, "KEY_ACTIVITY_FLUSH_SECONDS": 0}))


def test_log_style_is_json_or_text():
    """Issue 50, item 16: `make run` reads one line per request (text); production keeps JSON."""
    assert load_settings({"APP_ENV": "development"})["LOG_STYLE"] == "json"
    check_settings(load_settings({"APP_ENV": "development", "LOG_STYLE": "text"}))
    with pytest.raises(ConfigError, match="LOG_STYLE must be json or text, got 'pretty'"):
        check_settings(load_settings({"APP_ENV": "development", "LOG_STYLE": "pretty"}))
