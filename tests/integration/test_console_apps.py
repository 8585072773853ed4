"""The console's app pages over HTTP: who may enter, register (secret once), edit, rotate,
disable/enable, delete, and what a developer may not touch."""

import re

import pytest
import requests

from app.core.extensions import db
from app.models import AuditEvent, Client, Consent, Token
from app.models.base import sha256_hex
from tests.factories import db_state, make_client, make_member
from tests.flows import AUTHORIZE, Browser, RelyingParty, csrf_token, sign_in
from tests.integration.console_support import (
    alerts,
    authenticates,
    client_id_on_page,
    flashes,
    fresh,
    post_form,
    secret_on_page,
    signed_in,
    userinfo,
)

NEW_APP = {
    "name": "Liner Notes",
    "homepage_url": "https://liner.example.com/",
    "logo_url": "https://liner.example.com/logo.png",
    "policy_url": "https://liner.example.com/privacy",
    "tos_url": "https://liner.example.com/terms",
    "redirect_uris": "https://liner.example.com/cb\r\nhttp://127.0.0.1:7199/cb\r\n\r\ncom.example.liner:/cb",
    "post_logout_redirect_uris": "https://liner.example.com/bye",
    "client_type": "confidential",
    "auth_method": "client_secret_post",
    "scopes": ["openid", "profile", "credits:read"],
    "require_pkce": "y",
}


def actions(session_rows=None) -> list[str]:
    return [e.action for e in db.session.scalars(db.select(AuditEvent).order_by(AuditEvent.id))]


def register(browser, data=None) -> requests.Response:
    return post_form(browser, "/console/apps/new", "/console/apps/new", {**NEW_APP, **(data or {})})


# -- who may enter ---------------------------------------------------------------------


def test_signed_out_goes_to_login_and_comes_back(live_server):
    browser = Browser(live_server.url)
    response = browser.get("/console/fees?from=2026-01")
    assert response.status_code == 302
    assert response.headers["Location"] == "/login?next=/console/fees?from%3D2026-01"
    dev = make_member(role="developer")
    browser = signed_in(live_server.url, dev.email)
    page = browser.get("/console")
    assert page.status_code == 200 and "Your applications" in page.text


def test_member_gets_a_403_that_says_a_developer_account_is_needed(live_server):
    member = make_member()
    browser = signed_in(live_server.url, member.email)
    for path in ("/console", "/console/apps/new", "/console/fees", "/console/audit", "/console/keys"):
        page = browser.get(path)
        assert page.status_code == 403, path
        assert "Developer account needed" in page.text and "developer account" in page.text
    assert post_form(browser, "/account", "/console/apps/new", NEW_APP).status_code == 403
    assert db.session.scalar(db.select(db.func.count(Client.id))) == 0


def test_developer_is_refused_admin_pages(live_server):
    dev = make_member(role="developer")
    browser = signed_in(live_server.url, dev.email)
    for path in ("/console/keys", "/console/users"):
        page = browser.get(path)
        assert page.status_code == 403 and "administrators only" in page.text
    assert post_form(browser, "/console", "/console/keys/rotate").status_code == 403
    assert (
        post_form(browser, "/console", f"/console/users/{dev.id}", {"role": "admin", "tier": "pro"}).status_code == 403
    )
    fresh()
    assert db.session.get(type(dev), dev.id).role == "developer"


def test_pages_are_unframeable_and_uncached(live_server):
    dev = make_member(role="developer")
    browser = signed_in(live_server.url, dev.email)
    page = browser.get("/console")
    assert page.headers["X-Frame-Options"] == "DENY"
    assert "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]
    assert "script-src 'self'" in page.headers["Content-Security-Policy"]
    assert page.headers["Cache-Control"] == "no-store"
    assert "<script>" not in page.text  # no inline script anywhere


# -- register: every field, the secret once --------------------------------------------


def test_register_with_every_field_and_see_the_secret_once(live_server):
    dev = make_member(role="developer")
    browser = signed_in(live_server.url, dev.email)
    form = browser.get("/console/apps/new")
    for field in (
        "name",
        "homepage_url",
        "logo_url",
        "policy_url",
        "tos_url",
        "redirect_uris",
        "post_logout_redirect_uris",
        "client_type",
        "auth_method",
        "scopes",
    ):
        assert f'name="{field}"' in form.text, field
    assert 'name="trusted"' not in form.text  # admin only

    response = register(browser)
    assert response.status_code == 200, alerts(response.text)
    secret, client_id = secret_on_page(response.text), client_id_on_page(response.text)
    assert secret and client_id
    assert "shown only this once" in response.text
    assert 'data-copy="client-secret"' in response.text and "/static/console.js" in response.text
    assert response.headers["Cache-Control"] == "no-store"

    fresh()
    client = db.session.scalar(db.select(Client).where(Client.client_id == client_id))
    assert client.owner_id == dev.id and client.name == "Liner Notes"
    assert client.redirect_uris == ["https://liner.example.com/cb", "http://127.0.0.1:7199/cb", "com.example.liner:/cb"]
    assert client.post_logout_redirect_uris == ["https://liner.example.com/bye"]
    assert client.allowed_scopes == "openid profile credits:read"
    assert client.token_endpoint_auth_method == "client_secret_post" and client.require_pkce and not client.trusted
    assert (client.homepage_url, client.logo_url, client.policy_url, client.tos_url) == (
        NEW_APP["homepage_url"],
        NEW_APP["logo_url"],
        NEW_APP["policy_url"],
        NEW_APP["tos_url"],
    )
    assert client.client_secret_hash == sha256_hex(secret)
    # The secret appears nowhere in the database, and never again on a page.
    assert secret not in str(db_state())
    detail = browser.get(f"/console/apps/{client_id}")
    assert detail.status_code == 200 and secret not in detail.text and secret_on_page(detail.text) is None
    assert secret not in browser.get("/console").text
    assert actions() == ["signin.ok", "app.registered"]
    # The page lists it with its type, URIs, status, creation date and fee.
    listing = browser.get("/console").text
    for text in ("Liner Notes", client_id, "confidential", "https://liner.example.com/cb", "active", "99 USD/month"):
        assert text in listing


def test_register_public_app_has_no_secret(live_server):
    dev = make_member(role="developer")
    browser = signed_in(live_server.url, dev.email)
    response = register(browser, {"client_type": "public", "redirect_uris": "com.example.liner:/cb"})
    assert response.status_code == 302
    detail = browser.get(response.headers["Location"])
    assert "a public app has no secret" in " ".join(flashes(detail.text))
    fresh()
    client = db.session.scalar(db.select(Client))
    assert client.is_public and client.client_secret_hash is None and client.token_endpoint_auth_method == "none"
    assert "Rotate secret" not in detail.text


def test_each_bad_redirect_uri_is_named_on_the_page(live_server):
    dev = make_member(role="developer")
    browser = signed_in(live_server.url, dev.email)
    bad = [
        "/relative",
        "https://a.example/cb#frag",
        "https://me:pw@a.example/cb",
        "https://*.a.example/cb",
        "http://a.example/cb",
        "myapp:/cb",
    ]
    before = db_state()
    response = register(browser, {"redirect_uris": "\n".join(bad)})
    assert response.status_code == 400
    text = alerts(response.text)
    for uri, why in zip(
        bad,
        [
            "must be absolute",
            "must not contain a fragment",
            "must not contain a user name",
            "must not contain a wildcard",
            "must use https",
            "reverse-DNS",
        ],
        strict=True,
    ):
        assert re.search(re.escape(f"'{uri}' ") + "[^']*" + re.escape(why), text), (uri, text)
    assert db_state() == before


def test_developer_cannot_sneak_in_admin_switches(live_server):
    dev = make_member(role="developer")
    browser = signed_in(live_server.url, dev.email)
    response = register(browser, {"trusted": "y", "require_pkce": ""})
    assert response.status_code == 200
    fresh()
    client = db.session.scalar(db.select(Client))
    assert not client.trusted and client.require_pkce


def test_admin_registers_a_trusted_legacy_app_for_a_developer(live_server):
    admin = make_member(role="admin")
    dev = make_member(role="developer", email="owner@example.test")
    plain = make_member(email="plain@example.test")
    browser = signed_in(live_server.url, admin.email)
    assert 'name="trusted"' in browser.get("/console/apps/new").text
    refused = register(browser, {"owner_email": plain.email})
    assert refused.status_code == 400 and "is not a developer" in alerts(refused.text)
    data = {**NEW_APP, "owner_email": dev.email, "trusted": "y"}
    del data["require_pkce"]
    response = post_form(browser, "/console/apps/new", "/console/apps/new", data)
    assert response.status_code == 200
    fresh()
    client = db.session.scalar(db.select(Client))
    assert client.trusted and not client.require_pkce and client.owner_id == dev.id
    # The developer now sees it as theirs.
    assert client.client_id in signed_in(live_server.url, dev.email).get("/console").text


# -- edit, rotate, disable/enable, delete ---------------------------------------------


@pytest.fixture
def dev_app(live_server):
    dev = make_member(role="developer")
    client, secret = make_client(name="Dev App", owner_id=dev.id)
    return dev, client, secret, signed_in(live_server.url, dev.email)


def test_edit_details_and_uris(live_server, dev_app):
    _dev, client, _, browser = dev_app
    page = browser.get(f"/console/apps/{client.client_id}/edit")
    assert page.status_code == 200 and "http://127.0.0.1:7199/cb" in page.text
    data = {
        **NEW_APP,
        "name": "Dev App 2",
        "redirect_uris": "http://127.0.0.1:7199/cb\nhttps://new.example/cb",
        "client_type": "public",
    }
    response = post_form(
        browser, f"/console/apps/{client.client_id}/edit", f"/console/apps/{client.client_id}/edit", data
    )
    assert response.status_code == 302
    assert "Saved: name, " in " ".join(flashes(browser.get(response.headers["Location"]).text))
    fresh()
    client = db.session.get(Client, client.id)
    assert client.name == "Dev App 2" and client.redirect_uris == ["http://127.0.0.1:7199/cb", "https://new.example/cb"]
    assert client.client_type == "confidential"  # fixed at registration
    assert actions()[-1] == "app.changed"


def test_bad_edit_is_rejected_and_changes_nothing(live_server, dev_app):
    _, client, _, browser = dev_app
    page_path = f"/console/apps/{client.client_id}/edit"
    before = db_state()
    response = post_form(browser, page_path, page_path, {**NEW_APP, "redirect_uris": "https://x.example/*"})
    assert response.status_code == 400 and "must not contain a wildcard" in alerts(response.text)
    assert db_state() == before


def test_rotate_secret_old_one_stops_at_once(live_server, dev_app):
    _, client, old, browser = dev_app
    detail = f"/console/apps/{client.client_id}"
    response = post_form(browser, detail, f"{detail}/rotate-secret", {"grace": "0"})
    assert response.status_code == 200
    new = secret_on_page(response.text)
    assert new and new != old and "old secret has stopped working" in response.text
    assert authenticates(live_server.url, client.client_id, new)
    assert not authenticates(live_server.url, client.client_id, old)
    assert actions()[-1] == "app.secret_rotated"


def test_a_routine_rotation_keeps_the_old_secret_for_a_day_unless_told_otherwise(live_server, dev_app):
    _, client, _, browser = dev_app
    page = browser.get(f"/console/apps/{client.client_id}").text
    assert re.search(r'<option selected value="86400">24 hours</option>', page), "24 hours is not the default"
    assert "(after a leak)" in page


def test_rotate_secret_with_grace_period(live_server, dev_app):
    _, client, old, browser = dev_app
    detail = f"/console/apps/{client.client_id}"
    response = post_form(browser, detail, f"{detail}/rotate-secret", {"grace": "3600"})
    new = secret_on_page(response.text)
    assert "keeps working until" in response.text
    assert authenticates(live_server.url, client.client_id, new)
    assert authenticates(live_server.url, client.client_id, old)
    event = db.session.scalar(db.select(AuditEvent).where(AuditEvent.action == "app.secret_rotated"))
    assert event.detail == {"grace_seconds": 3600}
    bad = post_form(browser, detail, f"{detail}/rotate-secret", {"grace": "999999"})
    assert bad.status_code == 400


def test_disable_then_enable(live_server, dev_app):
    _dev, client, secret, browser = dev_app
    member = make_member()
    rp = RelyingParty(live_server.url, client.client_id, secret)
    params, _ = sign_in(live_server.url, rp, member.email, scope="openid offline_access")
    tokens = rp.exchange(params["code"]).json()
    assert userinfo(live_server.url, tokens["access_token"]).status_code == 200

    detail = f"/console/apps/{client.client_id}"
    response = post_form(browser, detail, f"{detail}/disable")
    assert response.status_code == 302
    assert "is disabled" in " ".join(flashes(browser.get(detail).text))
    # authorize: an error page, never a redirect
    page = Browser(live_server.url).get(AUTHORIZE, params=rp.auth_params())
    assert page.status_code == 403 and "Application disabled" in page.text
    # token endpoint: the client does not exist
    refreshed = rp.refresh(tokens["refresh_token"])
    assert refreshed.status_code == 401 and refreshed.json()["error"] == "invalid_client"
    assert not authenticates(live_server.url, client.client_id, secret)
    # its tokens stop working
    assert userinfo(live_server.url, tokens["access_token"]).status_code == 401

    assert post_form(browser, detail, f"{detail}/enable").status_code == 302
    # What the app held when it was disabled stays dead (it may have leaked meanwhile, docs/security.md)...
    assert userinfo(live_server.url, tokens["access_token"]).status_code == 401
    refreshed = rp.refresh(tokens["refresh_token"])
    assert refreshed.status_code == 400 and refreshed.json()["error"] == "invalid_grant"
    # ...the member's consent does not: signing in again asks nothing.
    params, _ = sign_in(live_server.url, rp, member.email, scope="openid offline_access")
    assert userinfo(live_server.url, rp.exchange(params["code"]).json()["access_token"]).status_code == 200
    assert [a for a in actions() if a.startswith("app.")] == ["app.disabled", "app.enabled"]
    event = db.session.scalar(db.select(AuditEvent).where(AuditEvent.action == "app.disabled"))
    assert event.detail == {"tokens_revoked": 1}


def test_a_code_issued_before_a_disable_does_not_redeem_after_it(live_server, dev_app):
    _, client, secret, browser = dev_app
    rp = RelyingParty(live_server.url, client.client_id, secret)
    params, _ = sign_in(live_server.url, rp, make_member().email, scope="openid")
    detail = f"/console/apps/{client.client_id}"
    assert post_form(browser, detail, f"{detail}/disable").status_code == 302
    assert post_form(browser, detail, f"{detail}/enable").status_code == 302
    response = rp.exchange(params["code"])
    assert response.status_code == 400 and response.json()["error"] == "invalid_grant"
    assert db.session.scalar(db.select(db.func.count(Token.id)).where(Token.client_id == client.id)) == 0


def test_an_app_an_admin_disabled_stays_disabled_until_an_admin_enables_it(live_server, dev_app):
    _dev, client, secret, browser = dev_app
    admin = signed_in(live_server.url, make_member(role="admin").email)
    detail = f"/console/apps/{client.client_id}"
    assert post_form(admin, detail, f"{detail}/disable").status_code == 302

    page = browser.get(detail).text
    assert f'action="{detail}/enable"' not in page and "An administrator disabled this app" in page
    refused = post_form(browser, detail, f"{detail}/enable")  # a forged form
    assert refused.status_code == 302
    assert "only an administrator can enable it again" in " ".join(flashes(browser.get(detail).text))
    fresh()
    assert db.session.get(Client, client.id).status == "disabled"
    assert not authenticates(live_server.url, client.client_id, secret)

    assert f'action="{detail}/enable"' in admin.get(detail).text
    assert post_form(admin, detail, f"{detail}/enable").status_code == 302
    assert authenticates(live_server.url, client.client_id, secret)
    # Disabled by its own developer, the developer may enable it again (test_disable_then_enable)...
    assert post_form(browser, detail, f"{detail}/disable").status_code == 302
    assert f'action="{detail}/enable"' in browser.get(detail).text
    # ...unless an administrator then keeps it disabled.
    as_admin = admin.get(detail).text
    assert "Keep disabled (administrators only)" in as_admin
    assert post_form(admin, detail, f"{detail}/disable").status_code == 302
    assert "is disabled" in " ".join(flashes(admin.get(detail).text))
    assert f'action="{detail}/enable"' not in browser.get(detail).text
    fresh()
    assert db.session.get(Client, client.id).disabled_by_admin is True


def test_delete_revokes_tokens_and_consents(live_server, dev_app):
    _dev, client, secret, browser = dev_app
    member = make_member()
    rp = RelyingParty(live_server.url, client.client_id, secret)
    params, _ = sign_in(live_server.url, rp, member.email, scope="openid offline_access")
    tokens = rp.exchange(params["code"]).json()
    detail = f"/console/apps/{client.client_id}"
    confirm = browser.get(f"{detail}/delete")
    assert confirm.status_code == 200 and "revokes every access and refresh token" in confirm.text

    assert "Type the app&#39;s name to confirm" in confirm.text or "Type the app's name to confirm" in confirm.text
    # The typed name is compared on the server: a wrong or missing name deletes nothing.
    before = db_state()
    for typed in ({}, {"confirm_name": "not the name"}, {"confirm_name": client.name.upper()}):
        refused = post_form(browser, f"{detail}/delete", f"{detail}/delete", typed)
        assert refused.status_code == 400 and "nothing was deleted" in refused.text, typed
        assert 'aria-invalid="true"' in refused.text
    assert db_state() == before
    response = post_form(browser, f"{detail}/delete", f"{detail}/delete", {"confirm_name": f" {client.name} "})
    assert response.status_code == 302 and response.headers["Location"] == "/console"
    assert "1 tokens revoked, 1 consents removed" in " ".join(flashes(browser.get("/console").text))
    fresh()
    assert db.session.scalar(db.select(Consent).where(Consent.client_id == client.id)) is None
    assert all(t.revoked_at for t in db.session.scalars(db.select(Token).where(Token.client_id == client.id)))
    assert userinfo(live_server.url, tokens["access_token"]).status_code == 401
    assert rp.refresh(tokens["refresh_token"]).json()["error"] == "invalid_client"
    # Still listed, marked deleted (it is billed for the months it existed); its page reads, its actions are gone.
    listed = browser.get("/console").text
    assert client.client_id in listed and "status-deleted" in listed and "charged through" in listed
    page = browser.get(detail)
    assert page.status_code == 200 and 'id="deleted-note"' in page.text
    assert f'action="{detail}/disable"' not in page.text and f"{detail}/edit" not in page.text
    assert browser.get(f"{detail}/edit").status_code == 404
    assert post_form(browser, "/console", f"{detail}/disable").status_code == 404
    assert post_form(browser, "/console", f"{detail}/delete", {"confirm_name": client.name}).status_code == 404
    fees = browser.get("/console/fees").text
    assert client.client_id in fees and "status-deleted" in fees
    page = Browser(live_server.url).get(AUTHORIZE, params=rp.auth_params())
    assert page.status_code == 400 and "Unknown application" in page.text


# -- a developer touching another developer's app --------------------------------------


def test_developer_touching_another_developers_app_gets_403(live_server):
    owner = make_member(role="developer")
    intruder = make_member(role="developer")
    client, secret = make_client(name="Not yours", owner_id=owner.id)
    browser = signed_in(live_server.url, intruder.email)
    assert client.client_id not in browser.get("/console").text
    path = f"/console/apps/{client.client_id}"
    before = db_state()
    for get in (path, f"{path}/edit", f"{path}/delete"):
        page = browser.get(get)
        assert page.status_code == 403 and "belongs to another developer" in page.text, get
    for action, data in (
        (f"{path}/edit", {**NEW_APP, "name": "Mine now"}),
        (f"{path}/rotate-secret", {"grace": "0"}),
        (f"{path}/disable", {}),
        (f"{path}/enable", {}),
        (f"{path}/delete", {}),
    ):
        response = post_form(browser, "/console", action, data)
        assert response.status_code == 403, action
        assert secret_on_page(response.text) is None
    assert db_state() == before
    assert authenticates(live_server.url, client.client_id, secret)
    # the audit log of that app is not theirs either
    page = browser.get(f"/console/audit?app={client.client_id}")
    assert page.status_code == 400 and "No application of yours" in page.text


def test_unknown_app_is_404(live_server):
    admin = make_member(role="admin")
    browser = signed_in(live_server.url, admin.email)
    assert browser.get("/console/apps/nope").status_code == 404
    assert post_form(browser, "/console", "/console/apps/nope/disable").status_code == 404


def test_admin_manages_every_app(live_server):
    admin = make_member(role="admin")
    dev = make_member(role="developer")
    client, _ = make_client(name="Someone's", owner_id=dev.id)
    browser = signed_in(live_server.url, admin.email)
    assert client.client_id in browser.get("/console").text
    detail = f"/console/apps/{client.client_id}"
    assert post_form(browser, detail, f"{detail}/disable").status_code == 302
    fresh()
    assert db.session.get(Client, client.id).status == "disabled"
    event = db.session.scalar(db.select(AuditEvent).where(AuditEvent.action == "app.disabled"))
    assert event.actor_id == admin.id and event.ip == "127.0.0.1" and event.client_id == client.id


# -- CSRF ----------------------------------------------------------------------------------


@pytest.mark.parametrize("action", ["disable", "delete", "rotate-secret"])
def test_forms_without_csrf_token_are_rejected(live_server, dev_app, action):
    _, client, secret, browser = dev_app
    client_id = client.client_id
    before = db_state()
    for data in ({}, {"csrf_token": "forged"}):
        response = browser.post(f"/console/apps/{client_id}/{action}", data={"grace": "0", **data})
        assert response.status_code == 400 and "Form expired" in response.text
    assert db_state() == before
    assert authenticates(live_server.url, client_id, secret)


def test_register_without_csrf_token_is_rejected(live_server):
    dev = make_member(role="developer")
    browser = signed_in(live_server.url, dev.email)
    response = browser.post("/console/apps/new", data=NEW_APP)
    assert response.status_code == 400
    assert db.session.scalar(db.select(db.func.count(Client.id))) == 0


def test_csrf_token_of_another_session_is_rejected(live_server, dev_app):
    _, client, _, browser = dev_app
    other = signed_in(live_server.url, make_member(role="developer").email)
    token = re.search(r'name="csrf_token"[^>]*value="([^"]+)"', other.get("/console").text).group(1)
    response = browser.post(f"/console/apps/{client.client_id}/disable", data={"csrf_token": token})
    assert response.status_code == 400
    fresh()
    assert db.session.get(Client, client.id).status == "active"


# -- a reload of the secret page re-posts the form: it must not act twice ---------------------


def post_twice(browser, page_path: str, action: str, data: dict) -> tuple[requests.Response, requests.Response]:
    """Submit the form of `page_path` as rendered (its CSRF token and submission id), then send
    the very same request again, as a browser does when the answer page is reloaded."""
    page = browser.get(page_path).text
    submission = re.search(r'name="submission" type="hidden" value="([^"]+)"', page).group(1)
    form = {"csrf_token": csrf_token(page), "submission": submission, **data}
    return browser.post(action, data=form), browser.post(action, data=form)


def test_reloading_the_secret_page_does_not_register_a_second_app(live_server):
    dev = make_member(role="developer")
    browser = signed_in(live_server.url, dev.email)
    first, again = post_twice(browser, "/console/apps/new", "/console/apps/new", NEW_APP)
    assert first.status_code == 200 and secret_on_page(first.text)
    client_id = client_id_on_page(first.text)
    assert again.status_code == 303 and again.headers["Location"] == f"/console/apps/{client_id}"
    page = browser.get(again.headers["Location"])
    assert any("already registered" in text for text in flashes(page.text)), flashes(page.text)
    assert secret_on_page(page.text) is None
    fresh()
    assert db.session.scalar(db.select(db.func.count(Client.id)).where(Client.owner_id == dev.id)) == 1
    assert actions() == ["signin.ok", "app.registered"]
    # A new visit to the form is a new registration.
    assert register(browser).status_code == 200
    fresh()
    assert db.session.scalar(db.select(db.func.count(Client.id)).where(Client.owner_id == dev.id)) == 2


def test_reloading_the_new_secret_page_does_not_rotate_again(live_server, dev_app):
    _, client, old, browser = dev_app
    detail = f"/console/apps/{client.client_id}"
    first, again = post_twice(browser, detail, f"{detail}/rotate-secret", {"grace": "0"})
    new = secret_on_page(first.text)
    assert first.status_code == 200 and new
    assert again.status_code == 303 and again.headers["Location"] == detail
    # The secret the first page showed is the one that works; the old one stopped at once.
    assert authenticates(live_server.url, client.client_id, new)
    assert not authenticates(live_server.url, client.client_id, old)
    assert actions().count("app.secret_rotated") == 1


def test_a_forged_submission_id_is_ignored(live_server):
    """An id that is not one (too short, odd characters) cannot match anything: the form acts."""
    dev = make_member(role="developer")
    browser = signed_in(live_server.url, dev.email)
    page = browser.get("/console/apps/new").text
    response = browser.post("/console/apps/new", data={"csrf_token": csrf_token(page), "submission": "x<y", **NEW_APP})
    assert response.status_code == 200 and secret_on_page(response.text)


# -- the apps list: owner column, search, paging (issue 21, item 5) -----------------------


def test_apps_list_names_owners_searches_and_pages(live_server):
    from app.services.apps import APPS_PAGE_SIZE

    admin = make_member(role="admin")
    ada = make_member(role="developer", email="ada.dev@example.com")
    bo = make_member(role="developer", email="bo.dev@example.com")
    mine = make_client(name="Ada's Liner Notes", owner_id=ada.id)[0]
    theirs = make_client(name="Bo's Setlist", owner_id=bo.id)[0]
    cli_app = make_client(name="Operator app")[0]
    browser = signed_in(live_server.url, admin.email)
    page = browser.get("/console").text
    assert '<th scope="col">Owner</th>' in page
    assert "ada.dev@example.com" in page and "bo.dev@example.com" in page and "command line" in page
    # Part of the name, in any case; part of the client id; part of the owner's email (admins).
    for q, shown, hidden in (
        ("liner", mine, theirs),
        (theirs.client_id[3:12], theirs, mine),
        ("BO.DEV", theirs, cli_app),
        ("%", None, mine),
    ):
        found = browser.get("/console", params={"q": q}).text
        if shown is not None:
            assert shown.client_id in found, q
        assert hidden.client_id not in found, q
    assert "No application matches" in browser.get("/console", params={"q": "zzz-nothing"}).text
    # A developer sees no owner column and cannot find others' apps by their email.
    dev_page = signed_in(live_server.url, ada.email).get("/console", params={"q": "bo.dev"}).text
    assert "Owner</th>" not in dev_page and theirs.client_id not in dev_page
    # Paging: 25 a page, oldest first.
    for n in range(APPS_PAGE_SIZE):
        make_client(name=f"Bulk {n:02d}", owner_id=ada.id)
    first = browser.get("/console").text
    assert 'rel="next"' in first and "Bulk 21" in first and "Bulk 22" not in first
    second = browser.get("/console", params={"page": 2}).text
    assert "Bulk 22" in second and "Bulk 24" in second and 'rel="prev"' in second and 'rel="next"' not in second
    assert browser.get("/console", params={"page": "x"}).status_code == 200


def test_every_problem_is_named_at_once_and_on_its_field(live_server):
    """Issue 21, item 5: no name, a bad redirect URI, a bad logo and a bad post-logout URI are
    all reported by one submission, each beside its field and in the summary."""
    dev = make_member(role="developer")
    browser = signed_in(live_server.url, dev.email)
    form = browser.get("/console/apps/new").text
    assert "Fee: 99 USD per month" in form and "Register (99 USD per month)" in form
    before = db_state()
    response = register(
        browser,
        {
            "name": "",
            "redirect_uris": "http://a.example/cb",
            "logo_url": "ftp://logo.example/x.png",
            "post_logout_redirect_uris": "/bye",
        },
    )
    assert response.status_code == 400 and db_state() == before
    summary = alerts(response.text)
    for field, words in (
        ("name", "Name is required"),
        ("redirect_uris", "must use https"),
        ("logo_url", "must be an absolute https:// URL"),
        ("post_logout_redirect_uris", "must be absolute"),
    ):
        assert words in summary, (field, summary)
        assert re.search(
            rf'id="{field}"[^>]*aria-invalid="true"|aria-invalid="true"[^>]*id="{field}"', response.text
        ), field
        assert re.search(rf'id="{field}-error-1">[^<]*{re.escape(words)}', response.text), field
        assert f'href="#{field}"' in response.text
    # The same on edit.
    client, _ = make_client(name="Editable", owner_id=dev.id)
    path = f"/console/apps/{client.client_id}/edit"
    edited = post_form(
        browser, path, path, {**NEW_APP, "redirect_uris": "http://a.example/cb", "homepage_url": "javascript:alert(1)"}
    )
    assert edited.status_code == 400
    assert 'id="redirect_uris-error-1"' in edited.text and 'id="homepage_url-error-1"' in edited.text
