"""API keys as a service: created with a value shown once and stored hashed, looked up by hash,
rotated (with or without a grace period) and revoked at once, each with its audit event."""

from __future__ import annotations

from datetime import timedelta

import pytest

from app.core.extensions import db
from app.models import ApiKey, AuditEvent, Role
from app.models.base import sha256_hex, utcnow
from app.services.apikeys import (
    ApiKeyError,
    create_key,
    live_key,
    normalize_domains,
    revoke_key,
    rotate_key,
    visible_keys,
)
from tests.factories import make_member
from tests.key_support import make_key


def test_a_new_key_is_prefixed_random_and_stored_only_as_a_hash():
    key, value = make_key("secret", plan="start", funded=False)  # no credits: the trail holds the keys' events alone
    assert value.startswith("msk_") and len(value) == 4 + 43
    assert key.secret_hash == sha256_hex(value) and key.prefix == value[:12]
    row = db.session.execute(db.text("SELECT * FROM api_keys")).mappings().one()
    assert value not in {str(v) for v in row.values()}
    assert live_key(value).id == key.id
    publishable, pvalue = make_key("publishable", domains=["https://Shop.Example", "app.example:8443"], funded=False)
    assert pvalue.startswith("mpk_") and publishable.domains == ["shop.example", "app.example:8443"]
    actions = [e.action for e in db.session.scalars(db.select(AuditEvent).order_by(AuditEvent.id))]
    assert actions == ["apikey.created", "apikey.created"]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"name": ""}, "name"),
        ({"kind": "magic"}, "kind"),
        ({"plan": "gold"}, "plan"),
        ({"kind": "publishable", "domains": []}, "at least one domain"),
        ({"kind": "secret", "domains": ["a.example"]}, "no domains"),
        ({"kind": "publishable", "domains": ["https://a.example/path"]}, "origin"),
        ({"kind": "publishable", "domains": ["*.com"]}, "two labels"),  # wildcards: *.example.com, not *.com
    ],
)
def test_bad_requests_are_refused_and_nothing_is_written(kwargs, message):
    owner = make_member(role=Role.DEVELOPER)
    args = {"name": "k", "kind": "secret", "plan": "payg", "domains": None} | kwargs
    with pytest.raises(ApiKeyError, match=message):
        create_key(owner, args["name"], args["kind"], args["plan"], args["domains"])
    db.session.rollback()
    assert db.session.scalar(db.select(db.func.count(ApiKey.id))) == 0


def test_only_developers_and_admins_hold_keys():
    with pytest.raises(ApiKeyError):
        create_key(make_member(), "k", "secret")


def test_rotation_without_grace_stops_the_old_value_at_once():
    key, old = make_key()
    new = rotate_key(key)
    db.session.commit()
    assert new != old and live_key(new).id == key.id and live_key(old) is None


def test_rotation_with_grace_keeps_the_old_value_until_it_ends():
    key, old = make_key()
    new = rotate_key(key, timedelta(hours=1))
    db.session.commit()
    assert live_key(old).id == key.id and live_key(new).id == key.id
    key.previous_expires_at = utcnow() - timedelta(seconds=1)
    db.session.commit()
    assert live_key(old) is None and live_key(new).id == key.id
    with pytest.raises(ApiKeyError):
        rotate_key(key, timedelta(days=8))


def test_revocation_is_immediate_for_both_values_and_final():
    key, old = make_key(funded=False)
    new = rotate_key(key, timedelta(hours=1))
    assert revoke_key(key) is True
    db.session.commit()
    assert live_key(new) is None and live_key(old) is None
    assert revoke_key(key) is False
    with pytest.raises(ApiKeyError):
        rotate_key(key)
    actions = [e.action for e in db.session.scalars(db.select(AuditEvent).order_by(AuditEvent.id))]
    assert actions == ["apikey.created", "apikey.rotated", "apikey.revoked"]


def test_a_key_stops_when_its_owner_is_no_longer_a_developer():
    key, value = make_key()
    key.owner.role = Role.MEMBER
    db.session.commit()
    assert live_key(value) is None
    key.owner.role = Role.ADMIN
    db.session.commit()
    assert live_key(value).id == key.id


def test_made_up_values_are_not_keys():
    make_key()
    for value in (None, "", "msk_", "msk_" + "a" * 43, "xsk_" + "a" * 43, "msk_" + "a" * 500, "mpk_\u00e9"):
        assert live_key(value) is None


def test_members_see_their_own_keys_and_admins_see_all():
    mine, _ = make_key()
    theirs, _ = make_key()
    assert [k.id for k in visible_keys(mine.owner)] == [mine.id]
    admin = make_member(role=Role.ADMIN)
    assert {k.id for k in visible_keys(admin)} == {mine.id, theirs.id}


def test_domains_are_normalised_and_deduplicated():
    assert normalize_domains(["A.example", "a.example", " ", "http://a.example/"]) == ["a.example"]


# -- issue 50, item 16: wildcard subdomains, and a key's name and domains editable ---------------


def test_wildcard_domains_cover_subdomains_only():
    from app.services.apikeys import domain_allows, normalize_domains

    assert normalize_domains(["*.Example.com", "https://shop.example.org", "*.example.com:8443"]) == [
        "*.example.com",
        "shop.example.org",
        "*.example.com:8443",
    ]
    for bad in ("*.com", "*", "a.*.example.com", "*example.com", "**.example.com", "*.*.example.com"):
        with pytest.raises(ApiKeyError):
            normalize_domains([bad])
    domains = ["*.example.com", "example.org"]
    assert domain_allows(domains, "shop.example.com") and domain_allows(domains, "a.b.example.com")
    assert not domain_allows(domains, "example.com")  # the bare domain is listed on its own when meant
    assert not domain_allows(domains, "evilexample.com") and not domain_allows(domains, "example.com.evil.net")
    assert not domain_allows(domains, "shop.example.com:8443")  # a port is part of the host
    assert domain_allows(["*.example.com:8443"], "shop.example.com:8443")
    assert domain_allows(domains, "example.org") and not domain_allows(domains, None)


def test_a_key_is_renamed_and_its_domains_changed_and_audited(app):
    from app.models import AuditEvent
    from app.services.apikeys import edit_key
    from tests.key_support import make_key

    key, _ = make_key("publishable", domains=["shop.example"])
    assert edit_key(key, " Shop widget ", ["*.shop.example", "shop.example"]) == ["name", "domains"]
    db.session.commit()
    assert (key.name, key.domains) == ("Shop widget", ["*.shop.example", "shop.example"])
    event = db.session.scalars(db.select(AuditEvent).where(AuditEvent.action == "apikey.changed")).one()
    assert event.detail["fields"] == ["name", "domains"]
    assert edit_key(key, "Shop widget", ["*.shop.example", "shop.example"]) == []
    for name, domains in (("", ["a.example"]), ("x" * 121, ["a.example"]), ("ok", []), ("ok", ["*.com"])):
        with pytest.raises(ApiKeyError):
            edit_key(key, name, domains)
    secret, _ = make_key()
    with pytest.raises(ApiKeyError, match="takes no domains"):
        edit_key(secret, "Server", ["a.example"])
