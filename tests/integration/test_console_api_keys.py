"""The console's API-key pages over HTTP against the live server: create (the value shown once,
stored hashed), the list with usage and amount, a key's usage per day, rotate and revoke with
CSRF, who may see which key, and the key working (and stopping) at the door - paused while its
owner is suspended."""

from __future__ import annotations

import re
from datetime import date
from html import unescape

import requests

from app.core.extensions import db
from app.models import ApiKey, ApiUsage, AuditEvent
from app.models.base import sha256_hex
from app.services.billing.ledger import account_for
from app.services.billing.plans import change_plan
from app.services.metering import meter_request, utc_day
from tests.api_support import make_catalog
from tests.factories import db_state, make_member
from tests.flows import csrf_token
from tests.integration.console_support import alerts, flashes, post_form, signed_in
from tests.key_support import fund, make_key


def value_on_page(html: str) -> str | None:
    match = re.search(r'id="api-key"[^>]*>([^<]+)<', html)
    return unescape(match.group(1)) if match else None


def fresh():
    db.session.remove()


def create(browser, **fields):
    data = {"name": "Production server", "kind": "secret", "plan": "payg", "domains": ""} | fields
    page = browser.get("/console/api-keys")
    submission = re.search(r'name="submission"[^>]*value="([^"]+)"', page.text).group(1)
    return post_form(browser, "/console/api-keys", "/console/api-keys", {**data, "submission": submission})


def test_create_see_the_key_once_use_it_rotate_and_revoke(live_server):
    make_catalog(credits=2)
    dev = make_member(role="developer")
    fund(dev)  # a key is served while its owner's account has credits (docs/billing.md)
    browser = signed_in(live_server.url, dev.email)
    page = browser.get("/console/api-keys")
    assert page.status_code == 200 and "No API keys yet" in page.text
    refused = create(browser, plan="build")  # Build is bought on the billing page, not per key
    assert refused.status_code == 400 and "bought on the billing page" in refused.text
    change_plan(account_for(dev), "build")
    db.session.commit()
    assert page.status_code == 200 and "No API keys yet" in page.text and 'href="/console/api-keys"' in page.text

    response = create(browser, plan="build")
    assert response.status_code == 200, alerts(response.text)
    value = value_on_page(response.text)
    assert value and value.startswith("msk_") and "shown only this once" in response.text
    assert response.headers["Cache-Control"] == "no-store"
    fresh()
    key = db.session.scalar(db.select(ApiKey))
    assert key.owner_id == dev.id and key.plan == "build" and key.secret_hash == sha256_hex(value)
    assert value not in str(db_state())

    # It works at the door at once, and the request shows on the pages.
    assert requests.get(live_server.url + "/v1/roles", headers={"x-api-key": value}, timeout=30).status_code == 200
    listing = browser.get("/console/api-keys").text
    assert value not in listing
    for text in ("Production server", key.prefix, "build", "secret", "active", utc_day().isoformat(), "500.00 USD"):
        assert text in listing, text
    detail = browser.get(f"/console/api-keys/{key.id}").text
    assert value not in detail and f"<td>{utc_day().isoformat()}</td><td>1</td>" in detail

    # Rotate without grace: a new value shown once, the old one refused at once.
    rotated = post_form(
        browser,
        f"/console/api-keys/{key.id}",
        f"/console/api-keys/{key.id}/rotate",
        {"grace": "0", "submission": "s" * 22},
    )
    new_value = value_on_page(rotated.text)
    assert rotated.status_code == 200 and new_value and new_value != value
    assert "The old value has stopped working" in rotated.text
    old = requests.get(live_server.url + "/v1/roles", headers={"x-api-key": value}, timeout=30)
    assert old.status_code == 401 and old.json()["message"] == "Unauthorized"
    # The same form sent again does not rotate twice.
    again = post_form(
        browser,
        f"/console/api-keys/{key.id}",
        f"/console/api-keys/{key.id}/rotate",
        {"grace": "0", "submission": "s" * 22},
    )
    assert again.status_code == 303 and again.headers["Location"] == f"/console/api-keys/{key.id}"
    assert "already rotated" in browser.get(again.headers["Location"]).text
    assert requests.get(live_server.url + "/v1/roles", headers={"x-api-key": new_value}, timeout=30).status_code == 200

    # Revoke: refused at once.
    confirm = browser.get(f"/console/api-keys/{key.id}/revoke")  # the button leads to a page naming the key
    assert confirm.status_code == 200 and f"Revoke {key.name}?" in unescape(confirm.text)
    assert requests.get(live_server.url + "/v1/roles", headers={"x-api-key": new_value}, timeout=30).status_code == 200
    revoked = post_form(browser, f"/console/api-keys/{key.id}/revoke", f"/console/api-keys/{key.id}/revoke")
    assert revoked.status_code == 302 and "is revoked" in browser.get(revoked.headers["Location"]).text
    assert requests.get(live_server.url + "/v1/roles", headers={"x-api-key": new_value}, timeout=30).status_code == 401
    fresh()
    events = db.session.scalars(db.select(AuditEvent).order_by(AuditEvent.id))
    actions = [e.action for e in events if not e.action.startswith("billing.")]  # the credits and the plan
    assert actions == ["signin.ok", "apikey.created", "apikey.rotated", "apikey.revoked"]


def test_publishable_keys_need_domains_and_bad_input_is_a_400_that_writes_nothing(live_server):
    dev = make_member(role="developer")
    browser = signed_in(live_server.url, dev.email)
    for fields, message in (
        ({"kind": "publishable"}, "at least one domain"),
        ({"kind": "publishable", "domains": "https://shop.example/path"}, "origin"),
        ({"plan": "gold"}, "Check the fields"),
        ({"name": ""}, "Check the fields"),
    ):
        response = create(browser, **fields)
        assert response.status_code == 400 and message in alerts(response.text), (fields, alerts(response.text))
        assert 'aria-invalid="true"' in response.text, fields  # and on its field (issue 21, item 5)
    fresh()
    assert db.session.scalar(db.select(db.func.count(ApiKey.id))) == 0
    ok = create(browser, kind="publishable", domains="shop.example\nhttps://blog.example\n")
    assert ok.status_code == 200 and value_on_page(ok.text).startswith("mpk_")
    fresh()
    assert db.session.scalar(db.select(ApiKey.domains)) == ["shop.example", "blog.example"]


def test_usage_per_day_and_month_with_the_amount(live_server):
    dev = make_member(role="developer")
    browser = signed_in(live_server.url, dev.email)
    create(browser, plan="payg")
    fresh()
    key = db.session.scalar(db.select(ApiKey))
    for day in [date(2026, 10, 1)] * 40 + [date(2026, 10, 9)] * 2:
        meter_request(key, day)
    db.session.commit()
    page = browser.get(f"/console/api-keys/{key.id}?month=2026-10").text
    assert "<td>2026-10-01</td><td>40</td>" in page and "<td>2026-10-09</td><td>2</td>" in page
    assert "<strong>1.05 USD</strong>" in page  # 42 x 0.025
    assert browser.get(f"/console/api-keys/{key.id}?month=nonsense").status_code == 200


def test_members_keys_are_their_own(live_server):
    owner, other = make_member(role="developer"), make_member(role="developer")
    create(signed_in(live_server.url, owner.email))
    fresh()
    key = db.session.scalar(db.select(ApiKey))
    intruder = signed_in(live_server.url, other.email)
    assert intruder.get(f"/console/api-keys/{key.id}").status_code == 404
    assert key.prefix not in intruder.get("/console/api-keys").text
    assert post_form(intruder, "/console/api-keys", f"/console/api-keys/{key.id}/revoke").status_code == 404
    fresh()
    assert db.session.get(ApiKey, key.id).revoked_at is None
    admin = make_member(role="admin")
    assert key.prefix in signed_in(live_server.url, admin.email).get("/console/api-keys").text
    member = make_member()
    assert signed_in(live_server.url, member.email, "/console/api-keys").get("/console/api-keys").status_code == 403
    # Without the CSRF token nothing happens.
    browser = signed_in(live_server.url, owner.email)
    assert browser.post(f"/console/api-keys/{key.id}/revoke", data={}).status_code == 400
    fresh()
    assert db.session.get(ApiKey, key.id).revoked_at is None


def test_a_suspension_pauses_the_owners_keys_unmetered_and_lifting_it_resumes_them(live_server):
    """Issue 49, item 4: a suspended developer's keys are refused at the door at once (the owner's
    standing rides in the key's one lookup), the refusals are not metered, and lifting the
    suspension brings back the keys that were not revoked meanwhile - not a revoked one."""
    catalog = make_catalog(credits=2)
    dev = make_member(role="developer")
    secret_key, secret = make_key(owner=dev)
    widget_key, publishable = make_key("publishable", owner=dev, domains=["widgets.example"])
    doomed_key, doomed = make_key(owner=dev, name="Revoked while suspended")
    admin = signed_in(live_server.url, make_member(role="admin").email, "/console/users")
    widget_path = f"/embed/v1/profile/{catalog.other}/charts"

    def catalog_call(value: str) -> requests.Response:
        return requests.get(live_server.url + "/v1/roles", headers={"x-api-key": value}, timeout=30)

    def widget_call() -> requests.Response:
        headers = {"x-api-key": publishable, "Origin": "https://widgets.example"}
        return requests.get(live_server.url + widget_path, headers=headers, timeout=30)

    def metered() -> dict[str, int]:
        fresh()
        rows = db.session.execute(
            db.select(ApiUsage.key_id, db.func.sum(ApiUsage.count)).group_by(ApiUsage.key_id)
        ).all()
        return dict(rows)

    assert catalog_call(secret).status_code == 200 and widget_call().status_code == 200
    assert metered() == {secret_key.id: 1, widget_key.id: 1}

    page = admin.get(f"/console/users?q={dev.email}")
    assert (
        admin.post(
            f"/console/users/{dev.id}/suspend", data={"csrf_token": csrf_token(page.text), "reason": "Abuse report 42"}
        ).status_code
        == 303
    )
    assert "3 API keys paused" in " ".join(flashes(admin.get(f"/console/users?q={dev.email}").text))

    for refused in (catalog_call(secret), catalog_call(doomed), widget_call()):
        assert refused.status_code == 401, refused.text
        assert refused.json()["message"] == "Unauthorized"
    assert metered() == {secret_key.id: 1, widget_key.id: 1}  # refused: not metered
    listing = admin.get("/console/api-keys").text
    assert listing.count("status-paused") == 3
    revoked = post_form(admin, f"/console/api-keys/{doomed_key.id}", f"/console/api-keys/{doomed_key.id}/revoke")
    assert revoked.status_code == 302

    page = admin.get(f"/console/users?q={dev.email}")
    lifted = admin.post(f"/console/users/{dev.id}/suspend", data={"csrf_token": csrf_token(page.text), "lift": "1"})
    assert lifted.status_code == 303

    assert catalog_call(secret).status_code == 200 and widget_call().status_code == 200
    assert catalog_call(doomed).status_code == 401  # revoked is for good
    assert metered() == {secret_key.id: 2, widget_key.id: 2}
    listing = admin.get("/console/api-keys").text
    assert listing.count("status-active") == 2 and listing.count("status-revoked") == 1
    assert "status-paused" not in listing
    fresh()
    event = db.session.scalar(db.select(AuditEvent).where(AuditEvent.action == "user.suspended"))
    assert event.detail["api_keys_paused"] == 3
