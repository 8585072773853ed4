"""Sign-in throttling per account and per IP, and the token endpoint's limit per client
(Flask-Limiter: memory storage here, Redis when REDIS_URL is set)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
import redis
import time_machine

from app import create_app
from app.core.extensions import db, limiter
from app.models import LoginSession
from app.services import throttle
from app.services.devices import COOKIE as DEVICE_COOKIE
from tests.conftest import free_port, redis_test_url, unavailable
from tests.factories import PASSWORD, db_state, make_client, make_member
from tests.flows import csrf_token
from tests.issued import separate_app

REDIS_TEST_URL = redis_test_url(5)
TOKEN = "/api/auth/oauth2/token"


@pytest.fixture(scope="module")
def web(settings):
    return separate_app(settings)


@pytest.fixture(autouse=True)
def fresh_counters(web):
    limiter.init_app(web)  # another module's app may have taken the shared limiter over
    limiter.reset()
    throttle.reset_fallback()
    yield
    limiter.reset()
    throttle.reset_fallback()  # a test with Redis down leaves no in-memory counts behind


@pytest.fixture(autouse=True)
def clock():
    """Time stands still unless a test moves it (`clock.shift(seconds)`): a 1-second wait must not
    run out between two requests on a loaded machine, and no test sleeps through a delay."""
    with time_machine.travel(datetime.now(UTC), tick=False) as traveller:
        yield traveller


@pytest.fixture
def client(web):
    return web.test_client()


def attempt(client, email: str, password: str, ip: str = "127.0.0.1", headers: dict | None = None):
    page = client.get("/login", environ_base={"REMOTE_ADDR": ip})
    token = csrf_token(page.get_data(as_text=True))
    return client.post(
        "/login",
        data={"csrf_token": token, "email": email, "password": password},
        environ_base={"REMOTE_ADDR": ip},
        headers=headers or {},
    )


def normalized(html: str) -> str:
    """The page without what legitimately differs between two answers: CSRF token, typed email."""
    html = re.sub(r'name="csrf_token"[^>]*value="[^"]*"', "CSRF", html)
    html = re.sub(r'id="csrf_token"[^>]*value="[^"]*"', "CSRF", html)
    return re.sub(r'name="email" type="email"[^>]*value="[^"]*"', "EMAIL", html)


def fail_until_waiting(client, email: str, ip: str = "127.0.0.1") -> int:
    """Wrong passwords until the account must wait; returns how many failures that took."""
    for n in range(1, 50):
        response = attempt(client, email, "wrong password!", ip=ip)
        if response.status_code == 429:
            return n - 1
        assert response.status_code == 401
    raise AssertionError("never throttled")


def test_unknown_browsers_get_a_progressive_delay_not_a_hard_lock(client, web, monkeypatch, clock):
    monkeypatch.setitem(web.config, "LOGIN_ACCOUNT_MAX_DELAY", 2)
    member = make_member()
    for _ in range(5):  # LOGIN_ACCOUNT_FREE_FAILURES: no wait yet
        assert attempt(client, member.email, "wrong password!").status_code == 401
    assert attempt(client, member.email, "wrong password!").status_code == 401  # the 6th: the next waits 1 s

    blocked = attempt(client, member.email, PASSWORD)  # even the right password, during the wait
    assert blocked.status_code == 429
    assert blocked.headers["Retry-After"] == "1"
    assert "Too many sign-in attempts. Try again in 1 second." in blocked.get_data(as_text=True)
    assert 'type="password"' in blocked.get_data(as_text=True)  # the login page, not an error page
    assert blocked.headers["Cache-Control"] == "no-store"
    db.session.remove()
    assert db.session.scalar(db.select(LoginSession).where(LoginSession.user_id == member.id)) is None

    clock.shift(1.1)  # the delay doubles with each further failure, up to LOGIN_ACCOUNT_MAX_DELAY (2 s here)
    assert attempt(client, member.email, "wrong password!").status_code == 401
    assert attempt(client, member.email, PASSWORD).headers["Retry-After"] == "2"
    clock.shift(2.1)
    assert attempt(client, member.email, "wrong password!").status_code == 401
    assert attempt(client, member.email, PASSWORD).headers["Retry-After"] == "2"  # capped, never a lock
    clock.shift(2.1)
    assert attempt(client, member.email, PASSWORD).status_code == 302  # the member gets in after the wait
    # ... and that success from an unknown browser starts the delay over (for every unknown browser).
    assert fail_until_waiting(web.test_client(), member.email) == 6
    # Another account from the same IP is not affected by this account's failures.
    other = make_member()
    assert attempt(client, other.email, PASSWORD).status_code == 302


def test_an_attacker_spamming_wrong_passwords_cannot_lock_a_member_out_of_a_known_browser(web, monkeypatch):
    """The issue's scenario: anyone who knows the email hammers it with wrong passwords, from the
    member's own IP (a shared proxy, an office) and from elsewhere. The member's browser, which
    signed in before, still gets in with the right password; a new browser must wait."""
    monkeypatch.setitem(web.config, "LOGIN_IP_LIMIT", "20 per 15 minutes")
    member = make_member()
    own_browser, attacker, new_browser = web.test_client(), web.test_client(), web.test_client()
    assert attempt(own_browser, member.email, PASSWORD).status_code == 302  # signed in once: known now
    assert own_browser.get_cookie(DEVICE_COOKIE) is not None
    own_browser.post("/logout", data={"csrf_token": csrf_token(own_browser.get("/login").get_data(as_text=True))})

    statuses = [attempt(attacker, member.email, f"guess {i}!!!").status_code for i in range(40)]
    statuses += [attempt(attacker, member.email, f"guess {i}!!!", ip="203.0.113.9").status_code for i in range(40)]
    assert 429 in statuses and set(statuses) <= {401, 429}

    assert attempt(new_browser, member.email, PASSWORD, ip="198.51.100.77").status_code == 429
    assert attempt(own_browser, member.email, PASSWORD).status_code == 302  # same IP as the flood
    assert own_browser.get("/account").status_code == 200
    # A device cookie proves only its own account: copied to another account it does nothing.
    other = make_member()
    fail_until_waiting(attacker, other.email, ip="203.0.113.10")
    stolen = web.test_client()
    stolen.set_cookie(DEVICE_COOKIE, own_browser.get_cookie(DEVICE_COOKIE).value)
    assert attempt(stolen, other.email, PASSWORD, ip="203.0.113.11").status_code == 429
    # A forged or altered cookie is no cookie. One character of the signature is changed, away from
    # its last two: the last character of base64 carries padding bits a decoder ignores, so
    # overwriting the tail could leave the signature as it was (about one run in a thousand).
    forged = web.test_client()
    value = own_browser.get_cookie(DEVICE_COOKIE).value
    at = len(value) - 5
    forged.set_cookie(DEVICE_COOKIE, value[:at] + ("A" if value[at] != "A" else "B") + value[at + 1 :])
    assert attempt(forged, member.email, PASSWORD, ip="203.0.113.12").status_code == 429


def test_a_known_browser_guessing_spends_its_own_budget_then_counts_as_unknown(web, monkeypatch):
    monkeypatch.setitem(web.config, "LOGIN_DEVICE_LIMIT", "3 per 15 minutes")
    member = make_member()
    browser = web.test_client()
    assert attempt(browser, member.email, PASSWORD).status_code == 302
    # Its failures do not move the account's delay: unknown browsers are not slowed by them.
    for _ in range(3):
        assert attempt(browser, member.email, "wrong password!").status_code == 401
    assert attempt(web.test_client(), member.email, PASSWORD, ip="198.51.100.8").status_code == 302
    # Past its budget it is an unknown browser: the account's free failures, then the wait.
    assert fail_until_waiting(browser, member.email) == 6


def test_the_device_cookie_is_signed_httponly_lax_and_long_lived(web):
    member = make_member()
    browser = web.test_client()
    response = attempt(browser, member.email, PASSWORD)
    header = next(h for h in response.headers.getlist("Set-Cookie") if h.startswith(DEVICE_COOKIE + "="))
    assert "HttpOnly" in header and "SameSite=Lax" in header and "Path=/" in header
    assert f"Max-Age={365 * 24 * 3600}" in header
    assert member.email not in header and PASSWORD not in header
    # A failed sign-in gives no cookie.
    stranger = web.test_client()
    failed = attempt(stranger, member.email, "wrong password!")
    assert not any(h.startswith(DEVICE_COOKIE) for h in failed.headers.getlist("Set-Cookie"))


def test_known_and_unknown_emails_get_the_same_answers(client):
    member = make_member()
    unknown = "nobody-here@example.test"
    known_failures = [attempt(client, member.email, "wrong password!") for _ in range(6)]
    unknown_failures = [attempt(client, unknown, "wrong password!") for _ in range(6)]
    assert {r.status_code for r in known_failures + unknown_failures} == {401}
    assert normalized(known_failures[0].get_data(as_text=True)) == normalized(
        unknown_failures[0].get_data(as_text=True)
    )

    known_blocked = attempt(client, member.email, "wrong password!")
    unknown_blocked = attempt(client, unknown, "wrong password!")
    assert known_blocked.status_code == unknown_blocked.status_code == 429
    assert known_blocked.headers["Retry-After"] == unknown_blocked.headers["Retry-After"]
    assert normalized(known_blocked.get_data(as_text=True)) == normalized(unknown_blocked.get_data(as_text=True))
    assert set(known_blocked.headers.keys()) == set(unknown_blocked.headers.keys())


def test_the_account_key_ignores_case_and_spaces(client):
    member = make_member()
    for variant in (
        member.email.upper(),
        f"  {member.email}",
        member.email,
        member.email.title(),
        member.email,
        member.email.upper(),
    ):
        assert attempt(client, variant, "wrong password!").status_code == 401
    assert attempt(client, member.email, PASSWORD).status_code == 429


def test_successful_sign_ins_do_not_count(client):
    member = make_member()
    for _ in range(8):
        assert attempt(client, member.email, PASSWORD).status_code == 302


def test_a_right_password_retyped_on_the_account_page_counts_nothing(client, web):
    """The account page's password check takes its place in the account's count before argon2
    runs, like a sign-in, and gives it back when the password is right: a member retyping it
    (here to add a passkey) never spends the account's free failures."""
    member = make_member()
    assert attempt(client, member.email, PASSWORD).status_code == 302
    for _ in range(8):
        token = csrf_token(client.get("/account").get_data(as_text=True))
        asked = client.post(
            "/account/two-step/passkeys/new", data={"csrf_token": token, "name": "Laptop", "current": PASSWORD}
        )
        assert asked.status_code == 200 and 'data-webauthn="create"' in asked.get_data(as_text=True)
    assert fail_until_waiting(web.test_client(), member.email) == 6


def test_ip_counts_only_failures_across_accounts(client, web, monkeypatch):
    monkeypatch.setitem(web.config, "LOGIN_IP_LIMIT", "3 per 15 minutes")
    member = make_member()
    for _ in range(5):  # successes from the IP are not counted
        assert attempt(client, member.email, PASSWORD, ip="198.51.100.4").status_code == 302
    for i in range(3):
        assert attempt(web.test_client(), f"guess-{i}@example.test", "x" * 12, ip="198.51.100.4").status_code == 401
    blocked = attempt(web.test_client(), "guess-9@example.test", "x" * 12, ip="198.51.100.4")
    assert blocked.status_code == 429 and int(blocked.headers["Retry-After"]) > 0
    # Claiming another address in X-Forwarded-For does not help without a trusted proxy.
    spoofed = attempt(
        web.test_client(),
        "guess-10@example.test",
        "x" * 12,
        ip="198.51.100.4",
        headers={"X-Forwarded-For": "203.0.113.50"},
    )
    assert spoofed.status_code == 429
    # A member's known browser behind that IP still signs in; a new one waits like everyone there.
    assert attempt(client, member.email, PASSWORD, ip="198.51.100.4").status_code == 302
    assert attempt(web.test_client(), member.email, PASSWORD, ip="198.51.100.4").status_code == 429
    # Another IP has its own budget.
    assert attempt(web.test_client(), "guess-11@example.test", "x" * 12, ip="198.51.100.5").status_code == 401


def test_token_endpoint_is_limited_per_client(client, web, monkeypatch):
    monkeypatch.setitem(web.config, "TOKEN_CLIENT_LIMIT", "3 per minute")
    noisy, noisy_secret = make_client(name="Noisy")
    calm, calm_secret = make_client(name="Calm")
    noisy_id, calm_id = noisy.client_id, calm.client_id
    data = {"grant_type": "authorization_code", "code": "nope", "code_verifier": "v" * 43}
    for _ in range(3):
        assert client.post(TOKEN, data=data, auth=(noisy_id, noisy_secret)).status_code == 400
    before = db_state()

    blocked = client.post(TOKEN, data=data, auth=(noisy_id, noisy_secret))
    by_form = client.post(TOKEN, data={**data, "client_id": noisy_id, "client_secret": noisy_secret})

    for response in (blocked, by_form):
        assert response.status_code == 429
        assert response.json["error"] == "slow_down"
        assert int(response.headers["Retry-After"]) > 0
        assert response.headers["Cache-Control"] == "no-store"
    assert db_state() == before
    assert client.post(TOKEN, data=data, auth=(calm_id, calm_secret)).status_code == 400


def test_nobody_can_spend_an_apps_token_budget_by_naming_its_public_client_id(client, web, monkeypatch):
    """Client ids are public. Requests that merely claim one, from elsewhere, spend their own
    budget: the app's exchanges from its own servers still go through."""
    monkeypatch.setitem(web.config, "TOKEN_CLIENT_LIMIT", "3 per minute")
    app, secret = make_client(name="Victim")
    data = {"grant_type": "authorization_code", "code": "nope", "code_verifier": "v" * 43}
    attacker, servers = {"REMOTE_ADDR": "203.0.113.66"}, {"REMOTE_ADDR": "198.51.100.20"}
    for _ in range(3):
        client.post(TOKEN, data={**data, "client_id": app.client_id}, environ_base=attacker)
    assert client.post(TOKEN, data={**data, "client_id": app.client_id}, environ_base=attacker).status_code == 429
    assert client.post(TOKEN, data=data, auth=(app.client_id, "wrong"), environ_base=attacker).status_code == 429
    # The app's own servers, with its secret, are not affected.
    for _ in range(3):
        assert client.post(TOKEN, data=data, auth=(app.client_id, secret), environ_base=servers).status_code == 400
    assert client.post(TOKEN, data=data, auth=(app.client_id, secret), environ_base=servers).status_code == 429


def test_token_endpoint_serves_when_the_counter_store_is_down(client, web, monkeypatch):
    """A Redis outage must not turn every token request into an error: the request is served,
    uncounted (fail open), and the outage is logged."""
    monkeypatch.setitem(web.config, "TOKEN_CLIENT_LIMIT", "1 per minute")
    app_row, secret = make_client(name="Steady")

    def store_down(*args, **kwargs):
        raise redis.ConnectionError("connection refused")

    with web.app_context():
        monkeypatch.setattr(limiter.limiter, "hit", store_down)
    data = {"grant_type": "authorization_code", "code": "nope", "code_verifier": "v" * 43}
    for _ in range(3):  # past the budget of 1, yet answered by the grant: nothing was counted
        response = client.post(TOKEN, data=data, auth=(app_row.client_id, secret))
        assert response.status_code == 400 and response.json["error"] == "invalid_grant"


def test_limits_are_validated_at_startup():
    from app.core.config import ConfigError, check_settings, load_settings

    with pytest.raises(ConfigError, match="LOGIN_IP_LIMIT"):
        check_settings(load_settings({"APP_ENV": "development", "LOGIN_IP_LIMIT": "lots"}))
    with pytest.raises(ConfigError, match="LOGIN_ACCOUNT_MAX_DELAY"):
        check_settings(load_settings({"APP_ENV": "development", "LOGIN_ACCOUNT_MAX_DELAY": 0}))


def test_redis_storage_is_shared_between_processes(web, settings):
    """Two app instances (two processes in production) with REDIS_URL see the same counters."""
    store = redis.Redis.from_url(REDIS_TEST_URL)
    try:
        store.ping()
    except redis.ConnectionError:
        unavailable("no Redis on 127.0.0.1:6379", "the Redis tests")
    store.flushdb()
    overrides = {k: v for k, v in settings.items() if not k.startswith("_")}
    try:
        first = create_app({**overrides, "REDIS_URL": REDIS_TEST_URL}).test_client()
        second = create_app({**overrides, "REDIS_URL": REDIS_TEST_URL}).test_client()
        member = make_member()
        for _ in range(6):
            assert attempt(first, member.email, "wrong password!").status_code == 401
        keys = store.keys("*")
        assert any(b"credits-id/signin/failures:" in key for key in keys)
        assert member.email.encode() not in b" ".join(keys)  # keys hold a hash, not the email
        assert attempt(second, member.email, PASSWORD).status_code == 429
    finally:
        store.flushdb()
        limiter.init_app(web)  # back to memory storage


def test_sign_in_keeps_working_and_counting_when_redis_is_down(web, settings, caplog):
    """docs/security.md: a Redis outage falls back to per-process memory rather than failing
    sign-in. Nothing listens on the configured port: logins still succeed, and failed ones are
    still counted (in memory) up to the 429."""
    overrides = {k: v for k, v in settings.items() if not k.startswith("_")}
    try:
        down = create_app({**overrides, "REDIS_URL": f"redis://127.0.0.1:{free_port()}/0"}).test_client()
        member = make_member()
        assert attempt(down, member.email, PASSWORD).status_code == 302
        assert LoginSession.query.filter_by(user_id=member.id).count() == 1
        other = make_member()
        statuses = [attempt(down, other.email, "wrong password!").status_code for _ in range(7)]
        assert statuses == [401] * 6 + [429]
    finally:
        limiter.init_app(web)  # back to memory storage


def test_a_failing_counter_store_is_left_alone_for_a_while(web, monkeypatch):
    """An unreachable Redis costs one failed call, not one per counter of every sign-in: for
    RETRY_STORE_AFTER seconds sign-in counts in this process's memory."""
    calls = []

    def down(*args):
        calls.append(args)
        raise redis.ConnectionError("connection refused")

    with web.test_request_context():
        monkeypatch.setattr(limiter.storage, "incr", down)
        monkeypatch.setattr(limiter.storage, "get", down)
        assert throttle._store("incr", "k", 60) == 1
        assert throttle._store("incr", "k", 60) == 2  # counted on, in memory
        assert throttle._store("get", "k") == 2
    assert len(calls) == 1
