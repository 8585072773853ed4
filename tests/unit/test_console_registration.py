"""Registration rules used by the console and the CLI: redirect URIs (RFC 8252), links, the
secret shown once and its rotation with an optional grace period."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from app.core.extensions import db
from app.models import AuditEvent, Client
from app.models.base import sha256_hex
from app.services.apps import NotAllowed, edit_app, register_app, rotate_app_secret
from app.services.registration import (
    NewClient,
    RegistrationError,
    link_problem,
    redirect_uri_problem,
    register_client,
    rotate_secret,
)
from tests.factories import make_client, make_member

BAD_REDIRECT_URIS = {
    "/callback": "must be absolute",
    "app.example.com/callback": "must be absolute",
    "https://app.example.com/cb#frag": "must not contain a fragment",
    "https://app.example.com/cb#": "must not contain a fragment",
    "https://user:pw@app.example.com/cb": "must not contain a user name or password",
    "https://user@app.example.com/cb": "must not contain a user name or password",
    "https://*.example.com/cb": "must not contain a wildcard",
    "https://app.example.com/*": "must not contain a wildcard",
    "http://app.example.com/cb": "must use https",
    "http://10.0.0.5/cb": "must use https",
    "ftp://app.example.com/cb": "reverse-DNS",
    "myapp:/callback": "reverse-DNS",
    "javascript:alert(1)": "reverse-DNS",
    "https://app.example.com/c b": "must not be empty or contain spaces",
    " https://app.example.com/cb": "must not be empty or contain spaces",
    "": "must not be empty",
    "https://app.example.com:99999/cb": "is not a valid URI",
    "https:///cb": "must name a host",
}
GOOD_REDIRECT_URIS = [
    "https://app.example.com/callback",
    "https://app.example.com:8443/cb?x=1",
    "http://127.0.0.1/cb",
    "http://127.0.0.1:7000/cb",
    "http://[::1]:7000/cb",
    "http://localhost:3000/callback",
    "com.example.app:/oauth2redirect",
    "com.example.app:/callback",
]


@pytest.mark.parametrize(("uri", "why"), BAD_REDIRECT_URIS.items())
def test_each_bad_redirect_uri_is_rejected_with_its_reason(uri, why):
    assert why in (redirect_uri_problem(uri) or "")
    with pytest.raises(RegistrationError) as err:
        register_client(NewClient(name="Bad", redirect_uris=["https://ok.example.com/cb", uri]))
    assert repr(uri) in str(err.value) and why in str(err.value)
    assert db.session.scalar(db.select(db.func.count(Client.id))) == 0


@pytest.mark.parametrize("uri", GOOD_REDIRECT_URIS)
def test_good_redirect_uris_are_accepted(uri):
    assert redirect_uri_problem(uri) is None
    client, _ = register_client(NewClient(name="Good", redirect_uris=[uri]))
    assert client.redirect_uris == [uri]


def test_every_problem_is_named_at_once():
    with pytest.raises(RegistrationError) as err:
        register_client(
            NewClient(
                name="Bad",
                redirect_uris=["http://a.example/x", "https://b.example/#y"],
                post_logout_redirect_uris=["https://c.example/*"],
            )
        )
    message = str(err.value)
    assert "'http://a.example/x' must use https" in message
    assert "'https://b.example/#y' must not contain a fragment" in message


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("https://app.example.com/", True),
        ("http://127.0.0.1:5001/", True),
        ("javascript:alert(1)", False),
        ("data:text/html,hi", False),
        ("http://app.example.com/", False),
        ("https://u:p@app.example.com/", False),
        ("https://app.example.com/" + "a" * 600, False),
        ("//app.example.com/logo.png", False),
    ],
)
def test_links_shown_to_members(url, ok):
    assert (link_problem(url) is None) is ok
    spec = NewClient(name="Links", redirect_uris=["https://app.example.com/cb"], homepage_url=url)
    if ok:
        assert register_client(spec)[0].homepage_url == url
    else:
        with pytest.raises(RegistrationError, match="Homepage"):
            register_client(spec)


def test_only_the_hash_of_the_secret_is_stored():
    client, secret = make_client()
    assert client.client_secret_hash == sha256_hex(secret)
    assert secret not in str([getattr(client, c.key) for c in Client.__table__.columns])
    assert client.check_client_secret(secret) and not client.check_client_secret(secret + "x")


def test_rotation_without_grace_stops_the_old_secret_at_once():
    client, old = make_client()
    new = rotate_secret(client)
    db.session.refresh(client)  # the service wrote the row (a Core UPDATE): read it back
    assert new != old
    assert client.check_client_secret(new)
    assert not client.check_client_secret(old)
    assert client.previous_secret_hash is None


def test_rotation_with_grace_keeps_the_old_secret_until_it_ends():
    start = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
    with time_machine.travel(start, tick=False):
        client, old = make_client()
        new = rotate_secret(client, grace=timedelta(hours=1))
        db.session.refresh(client)  # the service wrote the row (a Core UPDATE): read it back
        assert client.check_client_secret(old) and client.check_client_secret(new)
    with time_machine.travel(start + timedelta(minutes=59), tick=False):
        assert client.check_client_secret(old)
    with time_machine.travel(start + timedelta(hours=1), tick=False):
        assert not client.check_client_secret(old)
        assert client.check_client_secret(new)


def test_a_second_rotation_drops_the_first_secret():
    client, first = make_client()
    second = rotate_secret(client, grace=timedelta(hours=1))
    third = rotate_secret(client, grace=timedelta(hours=1))
    db.session.refresh(client)  # the service wrote the row (a Core UPDATE): read it back
    assert not client.check_client_secret(first)
    assert client.check_client_secret(second) and client.check_client_secret(third)


@pytest.mark.parametrize("grace", [timedelta(days=8), timedelta(seconds=-1)])
def test_grace_is_bounded(grace):
    client, old = make_client()
    with pytest.raises(RegistrationError, match="grace period"):
        rotate_secret(client, grace=grace)
    db.session.refresh(client)
    assert client.check_client_secret(old)


def test_public_clients_have_no_secret_to_rotate():
    client, secret = make_client(public=True)
    assert secret is None and client.client_secret_hash is None
    with pytest.raises(RegistrationError, match="public client has no secret"):
        rotate_app_secret(client, actor=None)
    assert not client.check_client_secret("")
    assert db.session.scalar(db.select(AuditEvent).where(AuditEvent.action == "app.secret_rotated")) is None


def test_developers_cannot_make_trusted_apps_or_turn_pkce_off():
    dev = make_member(role="developer")
    for spec in (
        NewClient(name="T", redirect_uris=["https://a.example/cb"], trusted=True),
        NewClient(name="P", redirect_uris=["https://a.example/cb"], require_pkce=False),
    ):
        with pytest.raises(NotAllowed):
            register_app(spec, dev)
    assert db.session.scalar(db.select(db.func.count(Client.id))) == 0
    client, _ = register_app(NewClient(name="Mine", redirect_uris=["https://a.example/cb"]), dev)
    assert client.owner_id == dev.id


def test_edit_keeps_type_and_admin_switches_for_developers():
    dev = make_member(role="developer")
    client, _ = register_app(NewClient(name="Mine", redirect_uris=["https://a.example/cb"]), dev)
    spec = NewClient(
        name="Renamed",
        redirect_uris=["https://a.example/cb", "http://127.0.0.1:9/cb"],
        public=True,
        trusted=True,
        require_pkce=False,
    )
    changed = edit_app(client, spec, dev)
    assert changed == ["name", "redirect_uris"]
    assert client.client_type == "confidential" and not client.trusted and client.require_pkce
    event = db.session.scalar(db.select(AuditEvent).where(AuditEvent.action == "app.changed"))
    assert event.detail == {"fields": ["name", "redirect_uris"]} and event.actor_id == dev.id


def test_a_rejected_edit_changes_nothing():
    client, _ = make_client(name="Stable")
    with pytest.raises(RegistrationError, match="must use https"):
        edit_app(client, NewClient(name="Changed", redirect_uris=["http://evil.example/cb"]), None)
    db.session.expire_all()
    client = db.session.get(Client, client.id)
    assert client.name == "Stable" and client.redirect_uris == ["http://127.0.0.1:7199/cb"]
    assert db.session.scalar(db.select(AuditEvent).where(AuditEvent.action == "app.changed")) is None


def test_an_app_and_its_audit_row_are_one_unit_of_work(monkeypatch):
    """register_client only flushes; the console and the CLI commit the app with its audit row."""
    from app.services.registration import NewClient as Spec

    def fail(*args, **kwargs):
        raise RuntimeError("the audit trail is unreachable")

    monkeypatch.setattr("app.services.apps.record", fail)
    with pytest.raises(RuntimeError):
        register_app(Spec(name="Half", redirect_uris=["https://half.example/cb"]), actor=None)
    db.session.rollback()
    assert db.session.scalar(db.select(db.func.count(Client.id)).where(Client.name == "Half")) == 0
