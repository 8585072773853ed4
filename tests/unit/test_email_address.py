"""Email addresses (issue 49, item 12): one rule for every address that enters (app/core/email_address.py),
and one stored form - the mailbox mailed, letter for letter - through the service that creates
members, the CLI and the migration that brought older rows to that form."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from alembic.migration import MigrationContext
from alembic.operations import Operations
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import insert, select

from app.core.email_address import InvalidEmail, lookup_form, stored_form
from app.core.extensions import db
from app.models import User
from app.services.members import MemberError, create_member, member_by_email

ROOT = Path(__file__).resolve().parents[2]

ACCEPTED = {
    "ana@example.com": "ana@example.com",
    "  Ana.Maria@Example.COM ": "ana.maria@example.com",
    "ana+credits@example.com": "ana+credits@example.com",
    "o'brien@example.ie": "o'brien@example.ie",
    "x_y-z@sub.example.co.uk": "x_y-z@sub.example.co.uk",
    "ana@bücher.example": "ana@xn--bcher-kva.example",
    "ana@BÜCHER.example": "ana@xn--bcher-kva.example",
    "ana@xn--bcher-kva.example": "ana@xn--bcher-kva.example",
    "ana@例え.jp": "ana@xn--r8jz45g.jp",
    "ana@example.test": "ana@example.test",  # development: the reserved .test domain, for local runs
}
REFUSED = [
    "",
    "ana",
    "ana@",
    "@example.com",
    "ana@example",  # no dot: no domain on the internet
    "Ana <ana@example.com>",
    "<ana@example.com>",
    "ana@example.com>",
    "ana,bob@example.com",
    "ana@example.com,bob@example.com",
    "ana(comment)@example.com",
    '"ana"@example.com',
    '"ana bob"@example.com',
    "ana bob@example.com",
    "ana;bob@example.com",
    "ana:bob@example.com",
    "ana\\bob@example.com",
    "ana[1]@example.com",
    "ana@@example.com",
    "ana@bob@example.com",
    ".ana@example.com",
    "ana.@example.com",
    "an..a@example.com",
    "ana@example..com",
    "ana@-example.com",
    "ana@example.com.",
    "ana@[127.0.0.1]",
    "ana@localhost",
    "ana@printer.local",
    "ana@example.invalid",
    "ana@site.onion",
    "pelé@example.com",  # an internationalized local part needs SMTPUTF8
    "ana\x00@example.com",
    "ana\r\nBcc: eve@example.com@example.com",
    "ana\ud800@example.com",
    "a" * 65 + "@example.com",
    "ana@" + "a" * 64 + ".com",
    "ana@" + ".".join(["a" * 60] * 5) + ".com",
    "ana@exa_mple.com",
    "ana@example.123",
    "x" * 100_000 + "@example.com",
]


@pytest.mark.parametrize(("typed", "stored"), ACCEPTED.items())
def test_accepted_addresses_are_stored_as_mailed(typed, stored):
    assert stored_form(typed) == stored
    assert lookup_form(typed) == stored  # a sign-in typed either way finds the member


@pytest.mark.parametrize("typed", REFUSED)
def test_what_no_smtp_server_delivers_to_as_typed_is_refused(typed):
    with pytest.raises(InvalidEmail) as refused:
        stored_form(typed)
    assert str(refused.value)  # says why


def test_test_domains_are_refused_outside_development(app, monkeypatch):
    monkeypatch.setitem(app.config, "APP_ENV", "production")
    with pytest.raises(InvalidEmail, match="special-use or reserved"):
        stored_form("ana@example.test")
    assert stored_form("ana@demo.credits.example") == "ana@demo.credits.example"


LABEL = st.text(
    alphabet=st.sampled_from("abcdefghijklmnopqrstuvwxyz0123456789-äöüßçéñøåłžæœ日本例中文ёжщ"), min_size=1, max_size=12
)


@settings(max_examples=300, deadline=None)
@given(
    local=st.from_regex(r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]{1,20}", fullmatch=True),
    labels=st.lists(LABEL, min_size=1, max_size=3),
)
def test_every_accepted_address_is_found_as_typed(local, labels):
    """For any address the rule accepts, the form a sign-in compares equals the stored form."""
    typed = f"{local}@{'.'.join(labels)}.Example"
    try:
        stored = stored_form(typed)
    except InvalidEmail:
        return
    assert stored.isascii() and stored == stored.lower()
    assert lookup_form(typed) == stored == lookup_form(stored) == stored_form(stored)


def test_the_member_service_stores_the_mailbox_and_finds_it_typed_either_way():
    user = create_member("Ana@Bücher.example", "Ana", None)
    assert user.email == "ana@xn--bcher-kva.example"
    assert member_by_email("ana@bücher.example").id == user.id
    assert member_by_email("ANA@XN--BCHER-KVA.EXAMPLE").id == user.id
    with pytest.raises(MemberError, match="already exists"):
        create_member("ana@xn--bcher-kva.example", "Ana again", None)
    with pytest.raises(MemberError, match=r"Not a valid email address: .*angle brackets"):
        create_member("Ana <ana@example.com>", "Ana", None)


def run(app, *args, input=None):
    return app.test_cli_runner().invoke(args=list(args), input=input)


def test_flask_users_create_refuses_an_address_no_server_delivers_to(app):
    for typed in ("ana <ana@example.com>", "ana,bob@example.com", '"ana"@example.com', "ana(x)@example.com"):
        result = run(app, "users", "create", "--email", typed, "--name", "Ana")
        assert result.exit_code == 1 and "Not a valid email address" in result.output, result.output
    assert db.session.scalar(select(User.id)) is None


def test_flask_users_create_stores_an_idna_domain_as_its_a_label(app, mailbox):
    result = run(app, "users", "create", "--email", "Ana@Bücher.example", "--name", "Ana", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["email"] == data["invitation_sent_to"] == "ana@xn--bcher-kva.example"
    mail = mailbox.wait_for("ana@xn--bcher-kva.example")  # the mailbox mailed is the stored address
    assert mail.subject == "You are invited to Credits ID"
    assert run(app, "users", "invite", "ana@bücher.example").exit_code == 0  # found as typed


def test_the_migration_brings_stored_idna_domains_to_their_a_labels():
    spec = importlib.util.spec_from_file_location("email_a_labels", ROOT / "migrations/versions/0014_email_a_labels.py")
    migration = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(migration)
    rows = {
        "u1": "ana@bücher.example",
        "u2": "bo@example.com",
        "u3": "cy@xn--bcher-kva.example",
        "u4": "cy@bücher.example",
    }
    with db.engine.begin() as conn:
        for uid, email in rows.items():
            conn.execute(
                insert(User).values(
                    id=uid, sub=uid, email=email, name="X", password_hash="x", tier="basic", role="member"
                )
            )
        with Operations.context(MigrationContext.configure(conn)):
            migration.upgrade()
        stored = dict(conn.execute(select(User.id, User.email)).all())
    assert stored == {
        "u1": "ana@xn--bcher-kva.example",
        "u2": "bo@example.com",
        "u3": "cy@xn--bcher-kva.example",
        "u4": "cy@bücher.example",  # its A-label form is another member's: left as it was
    }
