"""CLI parity with the console: `flask clients rotate-secret|disable|enable|delete`,
`flask users set-role|set-tier`, each with --json, leaving the same audit trail."""

import json
from datetime import timedelta

import pytest

from app.core.extensions import db
from app.models import AuditEvent, Client, Consent, Token, User
from app.models.base import new_uuid, sha256_hex, utcnow
from app.protocol.jwks import keystore
from app.services.passwords import passwords
from tests.factories import PASSWORD, make_client, make_member


@pytest.fixture
def cli(app):
    runner = app.test_cli_runner()

    def run(*args, input=None):
        return runner.invoke(args=list(args), input=input)

    return run


def run_json(cli, *args) -> dict:
    result = cli(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def give_token(user, client) -> Token:
    now = utcnow()
    token = Token(
        client_id=client.id,
        user_id=user.id,
        grant_id=new_uuid(),
        scope="openid",
        access_token_hash=sha256_hex(new_uuid()),
        refresh_token_hash=sha256_hex(new_uuid()),
        issued_at=now,
        access_expires_at=now + timedelta(hours=1),
        refresh_expires_at=now + timedelta(days=1),
        auth_time=now,
    )
    db.session.add(token)
    db.session.add(Consent(user_id=user.id, client_id=client.id, scope="openid"))
    db.session.commit()
    return token


def events(action: str) -> list[AuditEvent]:
    return list(db.session.scalars(db.select(AuditEvent).where(AuditEvent.action == action)))


def test_rotate_secret(cli):
    client, old = make_client()
    data = run_json(cli, "clients", "rotate-secret", client.client_id)
    db.session.expire_all()
    client = db.session.get(Client, client.id)
    assert data["client_id"] == client.client_id and data["previous_secret_valid_until"] is None
    assert client.check_client_secret(data["client_secret"]) and not client.check_client_secret(old)
    [event] = events("app.secret_rotated")
    assert event.source == "cli" and event.ip is None and event.detail == {"grace_seconds": 0}
    assert data["client_secret"] not in json.dumps(event.detail)


def test_rotate_secret_with_grace(cli):
    client, old = make_client()
    data = run_json(cli, "clients", "rotate-secret", client.client_id, "--grace", "3600")
    db.session.expire_all()
    client = db.session.get(Client, client.id)
    assert client.check_client_secret(old) and client.check_client_secret(data["client_secret"])
    assert data["previous_secret_valid_until"] == client.previous_secret_expires_at.isoformat()
    too_long = cli("clients", "rotate-secret", client.client_id, "--grace", str(8 * 24 * 3600))
    assert too_long.exit_code != 0


def test_rotate_secret_of_public_client_fails_clearly(cli):
    client, _ = make_client(public=True)
    result = cli("clients", "rotate-secret", client.client_id)
    assert result.exit_code == 1 and "public client has no secret" in result.output


def test_disable_and_enable(cli):
    client, _ = make_client()
    assert run_json(cli, "clients", "disable", client.client_id) == {
        "client_id": client.client_id,
        "status": "disabled",
        "changed": True,
    }
    assert run_json(cli, "clients", "disable", client.client_id)["changed"] is False
    assert "already was" in cli("clients", "disable", client.client_id).output
    assert run_json(cli, "clients", "enable", client.client_id)["status"] == "active"
    assert [e.action for e in db.session.scalars(db.select(AuditEvent).order_by(AuditEvent.id))] == [
        "app.disabled",
        "app.enabled",
    ]


def test_the_operator_locks_an_app_its_developer_had_disabled(cli):
    """Disabled by its developer, the app can still be suspended for good by the operator: only
    an administrator (or the CLI) may enable it again after that."""
    from app.services.apps import NotAllowed, disable_app, enable_app

    dev = make_member(role="developer")
    client, _ = make_client(owner_id=dev.id)
    assert disable_app(client, dev) is True and client.disabled_by_admin is False
    assert run_json(cli, "clients", "disable", client.client_id)["changed"] is True
    db.session.expire_all()
    client = db.session.get(Client, client.id)
    assert client.status == "disabled" and client.disabled_by_admin is True
    with pytest.raises(NotAllowed):
        enable_app(client, dev)


def test_delete_revokes_tokens_and_consents(cli):
    member = make_member()
    client, secret = make_client()
    other, _ = make_client(name="Other")
    token = give_token(member, client)
    kept = give_token(member, other)
    refused = cli("clients", "delete", client.client_id, input="n\n")
    assert refused.exit_code != 0 and "Aborted" in refused.output
    data = run_json(cli, "clients", "delete", client.client_id, "--yes")
    assert data == {"client_id": client.client_id, "status": "deleted", "tokens_revoked": 1, "consents_removed": 1}
    db.session.expire_all()
    assert db.session.get(Token, token.id).revoked_at is not None
    assert db.session.get(Token, kept.id).revoked_at is None
    assert db.session.scalar(db.select(Consent).where(Consent.client_id == client.id)) is None
    gone = db.session.get(Client, client.id)
    assert gone.is_deleted and gone.deleted_at is not None and gone.client_secret_hash is None
    assert not gone.check_client_secret(secret)
    assert client.client_id not in cli("clients", "list").output
    assert other.client_id in cli("clients", "list").output
    again = cli("clients", "delete", client.client_id, "--yes")
    assert again.exit_code == 1 and "no application with client id" in again.output


@pytest.mark.parametrize("command", ["rotate-secret", "disable", "enable", "delete"])
def test_unknown_client(cli, command):
    result = cli("clients", command, "nope", *(["--yes"] if command == "delete" else []))
    assert result.exit_code == 1 and "no application with client id nope" in result.output


def test_set_role_and_tier(cli):
    member = make_member(email="ana@example.test")
    data = run_json(cli, "users", "set-role", "ANA@example.test", "developer")
    assert data["role"] == "developer" and data["previous_role"] == "member"
    data = run_json(cli, "users", "set-tier", "ana@example.test", "pro")
    assert data["tier"] == "pro" and data["previous_tier"] == "basic"
    db.session.expire_all()
    user = db.session.get(User, member.id)
    assert (user.role, user.tier) == ("developer", "pro")
    [role_event] = events("user.role_changed")
    assert role_event.subject_id == member.id and role_event.detail == {"role": "developer", "previous": "member"}
    # Setting the same value again changes nothing and records nothing.
    run_json(cli, "users", "set-tier", "ana@example.test", "pro")
    assert len(events("user.tier_changed")) == 1


def test_set_role_rejects_bad_input(cli):
    make_member(email="bo@example.test")
    assert cli("users", "set-role", "bo@example.test", "owner").exit_code == 2
    assert cli("users", "set-tier", "bo@example.test", "gold").exit_code == 2
    missing = cli("users", "set-role", "nobody@example.test", "admin")
    assert missing.exit_code == 1 and "no member with email" in missing.output


def test_the_only_administrator_cannot_be_demoted_from_the_command_line_either(cli):
    admin = make_member(email="only.admin@example.test", role="admin")
    refused = cli("users", "set-role", "only.admin@example.test", "member")
    assert refused.exit_code == 1 and "only administrator" in refused.output
    db.session.expire_all()
    assert db.session.get(User, admin.id).role == "admin" and events("user.role_changed") == []
    make_member(email="second.admin@example.test", role="admin")
    assert run_json(cli, "users", "set-role", "only.admin@example.test", "member")["role"] == "member"


def test_key_rotation_and_retirement_from_the_command_line_are_audited(cli, fresh_keys):
    rotated = run_json(cli, "keys", "rotate", "--now")
    [event] = events("key.rotated")
    assert event.detail == {"kid": rotated["kid"]} and event.source == "cli" and event.actor_id is None
    second = keystore.generate()  # a second key that signs now, so one may be retired
    result = cli("keys", "retire", "--json", "--", second.kid)  # a kid may start with "-"
    assert result.exit_code == 0, result.output
    [event] = events("key.retired")
    assert event.detail == {"kid": second.kid} and event.source == "cli"
    # Retiring it again changes nothing and records nothing.
    assert cli("keys", "retire", "--", second.kid).exit_code == 0 and len(events("key.retired")) == 1


def test_revoke_a_leaked_key_from_the_command_line(cli, fresh_keys):
    refused = cli("keys", "revoke", "--yes", "--", fresh_keys.kid)  # the only signing key
    assert refused.exit_code == 1 and "rotate first" in refused.output
    run_json(cli, "keys", "rotate", "--now")
    unconfirmed = cli("keys", "revoke", "--", fresh_keys.kid, input="n\n")
    assert unconfirmed.exit_code == 1 and events("key.revoked") == []
    result = cli("keys", "revoke", "--yes", "--json", "--", fresh_keys.kid)
    assert result.exit_code == 0, result.output
    assert fresh_keys.kid not in {k["kid"] for k in keystore.public_key_set()["keys"]}
    [event] = events("key.revoked")
    assert event.source == "cli" and event.detail == {"kid": fresh_keys.kid}


def test_set_password_for_a_member_who_lost_theirs(cli):
    member = make_member(email="lost@example.test")
    data = run_json(cli, "users", "set-password", "lost@example.test")
    db.session.expire_all()
    user = db.session.get(User, member.id)
    assert passwords.verify(user, data["password"]) and not passwords.verify(user, PASSWORD)
    [event] = events("password.changed")
    assert event.subject_id == member.id and event.source == "cli" and data["password"] not in str(event.detail)
    chosen = cli(
        "users", "set-password", "lost@example.test", "--password-stdin", "--json", input="chosen by support\n"
    )
    assert chosen.exit_code == 0 and "password" not in json.loads(chosen.output)
    db.session.expire_all()
    assert passwords.verify(db.session.get(User, member.id), "chosen by support")
    short = cli("users", "set-password", "lost@example.test", "--password-stdin", input="short\n")
    assert short.exit_code == 1 and "at least 10 characters" in short.output
    client, _ = make_client()
    give_token(db.session.get(User, member.id), client)
    cut = run_json(cli, "users", "set-password", "lost@example.test", "--disconnect-apps")
    assert cut["tokens_revoked"] == 1
    db.session.expire_all()
    assert db.session.scalar(db.select(Consent).where(Consent.user_id == member.id)) is None


def test_clients_create_records_the_registration(cli):
    data = run_json(cli, "clients", "create", "--name", "From CLI", "--redirect-uri", "https://a.example/cb")
    [event] = events("app.registered")
    assert event.client.client_id == data["client_id"] and event.source == "cli"


def test_the_demo_seed_registers_the_demo_ports_uris_and_prints_an_admin(app):
    """Issue 50, item 3: `flask demo seed --demo-port` (or DEMO_PORT) writes the demo app's redirect
    and logout URIs for that port, again on a later seed with another port; an admin login is printed."""
    from app.store import store

    runner = app.test_cli_runner()
    first = runner.invoke(args=["demo", "seed", "--demo-port", "8001", "--json"])
    assert first.exit_code == 0, first.output
    data = json.loads(first.output)
    assert data["admin"]["email"] == "admin@demo.credits.example" and data["admin"]["password"]
    web = store().apps.registered("demo-web-app")
    assert web.redirect_uris == ["http://127.0.0.1:8001/callback", "http://localhost:8001/callback"]
    assert web.post_logout_redirect_uris == ["http://127.0.0.1:8001/"]
    again = runner.invoke(args=["demo", "seed"], env={"DEMO_PORT": "9001"})
    assert again.exit_code == 0, again.output
    assert "Demo admin" in again.output and "admin@demo.credits.example" in again.output
    web = store().apps.registered("demo-web-app")
    assert web.redirect_uris == ["http://127.0.0.1:9001/callback", "http://localhost:9001/callback"]
    assert "http://127.0.0.1:9001/callback" in store().apps.registered("demo-native-app").redirect_uris
