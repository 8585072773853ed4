"""Rosters and workspace keys on the account page, over HTTP against the live server, as a browser
without JavaScript uses them: make a roster, search the catalog by name, add and take off
profiles, create a workspace key (shown once, stored hashed), use it, rotate and revoke it after a
confirmation page, delete the roster; each change audited, each refusal changing nothing."""

from __future__ import annotations

import re
from html import unescape

import pytest
import requests

from app.core.extensions import db
from app.models import ApiKey, AuditEvent, Roster, RosterProfile
from app.models.base import sha256_hex
from tests.api_support import make_catalog
from tests.factories import db_state, make_member
from tests.flows import csrf_token, hidden
from tests.integration.console_support import flashes, post_form, signed_in

pytestmark = pytest.mark.live


@pytest.fixture
def catalog():
    return make_catalog(credits=5)


def roster_path(html_or_location: str) -> str:
    match = re.search(r"/account/rosters/([0-9a-f-]{36})", html_or_location)
    assert match, html_or_location[:300]
    return f"/account/rosters/{match.group(1)}"


def make_roster_on_the_page(browser, name: str = "Our artists") -> str:
    response = post_form(browser, "/account", "/account/rosters", {"name": name})
    assert response.status_code == 303, response.text[:300]
    return roster_path(response.headers["Location"])


def key_on_page(html: str) -> str:
    match = re.search(r'id="api-key"[^>]*>(mwk_[A-Za-z0-9_-]{43})<', html)
    assert match, html[:500]
    return unescape(match.group(1))


def api(live_server, path: str, value: str) -> requests.Response:
    return requests.get(live_server(path), headers={"x-api-key": value}, timeout=30)


def actions() -> list[str]:
    db.session.remove()
    return list(db.session.scalars(db.select(AuditEvent.action).order_by(AuditEvent.id)))


def test_a_member_keeps_a_roster_by_searching_the_catalog(live_server, catalog):
    member = make_member(name="Mona Manager")
    browser = signed_in(live_server.url, member.email, "/account")
    account = browser.get("/account").text
    assert "Rosters and workspace keys" in account and "You keep no roster yet." in account

    path = make_roster_on_the_page(browser, "  Our   artists ")
    page = browser.get(path)
    assert page.status_code == 200 and page.headers["Cache-Control"] == "no-store"
    assert "<h1>Roster: Our artists</h1>" in page.text and "No profiles yet" in page.text
    assert flashes(page.text) == ["The roster Our artists is made: find the profiles you represent and add them."]

    # Search the catalog by name (the catalog API's search), then add from the results.
    found = browser.get(f"{path}?q=ADA").text
    assert "1 profile with “ADA” in the name." in found and "Ada Mine" in found and "5 credits" in found
    response = browser.post(
        f"{path}/profiles", data={"csrf_token": csrf_token(found), "profile_id": catalog.mine, "q": "ADA"}
    )
    assert response.status_code == 303 and response.headers["Location"] == f"{path}?q=ADA#add"
    page = browser.get(f"{path}?q=ADA").text
    assert flashes(page) == ["Ada Mine is on Our artists."]
    listed = re.search(r'<ul class="roster-profiles">(.*?)</ul>', page, re.S).group(1)
    assert "Ada Mine" in listed and "(Stockholm, Sweden)" in listed
    assert 'class="badge">on this roster<' in page  # the search says so instead of offering it again
    browser.post(f"{path}/profiles", data={"csrf_token": csrf_token(page), "profile_id": catalog.other, "q": ""})
    assert browser.get("/account").text.count("2 profiles") == 1

    # Take one off: the list shrinks, the catalog keeps it.
    page = browser.get(path).text
    response = browser.post(f"{path}/profiles/{catalog.other}/remove", data={"csrf_token": csrf_token(page)})
    assert response.status_code == 303
    page = browser.get(path).text
    assert flashes(page) == ["Otto Other is off Our artists: this roster's workspace keys no longer reach it."]
    assert "Otto Other" not in re.search(r'<ul class="roster-profiles">(.*?)</ul>', page, re.S).group(1)
    assert browser.get(f"{path}?q=zzz").text.count("No profile's name contains “zzz”.") == 1
    assert actions()[-4:] == [
        "roster.created",
        "roster.profile_added",
        "roster.profile_added",
        "roster.profile_removed",
    ]


def test_bad_roster_requests_change_nothing(live_server, catalog):
    member = make_member()
    browser = signed_in(live_server.url, member.email, "/account")
    path = make_roster_on_the_page(browser)
    before = db_state()
    for name in ("", "   ", "x" * 121, "our ARTISTS"):
        response = post_form(browser, "/account", "/account/rosters", {"name": name})
        assert response.status_code == 303 and response.headers["Location"] == "/account#rosters"
    assert flashes(browser.get("/account").text)[-1] == "You already have a roster named our ARTISTS."
    page = browser.get(path).text
    for profile_id in ("not-a-profile", "00000000-0000-4001-8000-00000000ffff"):
        browser.post(f"{path}/profiles", data={"csrf_token": csrf_token(page), "profile_id": profile_id})
        assert flashes(browser.get(path).text) == ["No profile with that id in the catalog."]
    # Without the CSRF token: refused, whatever the form.
    assert browser.post(f"{path}/profiles", data={"profile_id": catalog.mine}).status_code == 400
    assert browser.post(f"{path}/keys", data={"name": "x"}).status_code == 400
    assert browser.post(f"{path}/delete", data={}).status_code == 400
    assert db_state() == before


def test_another_members_roster_is_not_found_and_signed_out_goes_to_login(live_server, catalog):
    owner = signed_in(live_server.url, make_member().email, "/account")
    path = make_roster_on_the_page(owner)
    stranger = signed_in(live_server.url, make_member().email, "/account")
    token = csrf_token(stranger.get("/account").text)
    for method, url, data in (
        ("get", path, None),
        ("post", f"{path}/profiles", {"profile_id": catalog.mine}),
        ("get", f"{path}/delete", None),
        ("post", f"{path}/delete", {}),
        ("post", f"{path}/keys", {"name": "mine now"}),
        ("get", "/account/rosters/not-a-roster", None),
    ):
        response = getattr(stranger, method)(url, data={"csrf_token": token, **data} if data is not None else None)
        assert response.status_code == 404, (method, url)
    db.session.remove()
    assert db.session.scalar(db.select(db.func.count()).select_from(RosterProfile)) == 0
    assert db.session.scalar(db.select(db.func.count()).select_from(ApiKey)) == 0
    from tests.flows import Browser

    response = Browser(live_server.url).get(path)
    assert response.status_code == 303 and response.headers["Location"] == f"/login?next={path}"


def test_a_workspace_key_is_shown_once_stored_hashed_rotated_and_revoked_after_confirming(live_server, catalog):
    member = make_member()
    browser = signed_in(live_server.url, member.email, "/account")
    path = make_roster_on_the_page(browser)
    page = browser.get(f"{path}?q=ada").text
    browser.post(f"{path}/profiles", data={"csrf_token": csrf_token(page), "profile_id": catalog.mine})

    # Create: the value once, on the answer to the form.
    page = browser.get(path).text
    form = {"csrf_token": csrf_token(page), "submission": hidden(page, "submission"), "name": "Royalty dashboard"}
    created = browser.post(f"{path}/keys", data=form)
    assert created.status_code == 200 and created.headers["Cache-Control"] == "no-store"
    first = key_on_page(created.text)
    assert "Copy the key now." in created.text and f"/v1/profile/{catalog.mine}/credits" in created.text
    db.session.remove()
    key = db.session.scalar(db.select(ApiKey))
    assert key.kind == "workspace" and key.plan == "workspace" and key.owner_id == member.id
    assert key.secret_hash == sha256_hex(first) and key.prefix == first[:12]
    assert first not in str(db_state())  # only its hash is kept
    listed = browser.get(path).text
    assert first not in listed and f"<code>{first[:12]}…</code>" in listed  # never shown again
    # The same form sent again (a reload of the page that showed the value): no second key.
    again = browser.post(f"{path}/keys", data=form)
    assert again.status_code == 303 and again.headers["Location"] == f"{path}#key-{key.id}"
    db.session.remove()
    assert db.session.scalar(db.select(db.func.count()).select_from(ApiKey)) == 1

    # The key reads its roster's profile, nothing else.
    assert api(live_server, f"/v1/profile/{catalog.mine}/credits", first).status_code == 200
    assert api(live_server, f"/v1/profile/{catalog.other}", first).status_code == 403
    assert api(live_server, "/v1/roles", first).status_code == 403
    usage = browser.get(path).text
    assert re.search(r"<td>1</td>\s*<td>1</td>", usage)  # requests today, this month

    # Rotate: a confirmation page first (nothing changes), then the new value once.
    confirm = browser.get(f"{path}/keys/{key.id}/rotate")
    assert confirm.status_code == 200 and "Rotate the workspace key Royalty dashboard?" in unescape(confirm.text)
    assert api(live_server, f"/v1/profile/{catalog.mine}", first).status_code == 200
    rotated = browser.post(
        f"{path}/keys/{key.id}/rotate",
        data={"csrf_token": csrf_token(confirm.text), "submission": hidden(confirm.text, "submission"), "grace": "0"},
    )
    second = key_on_page(rotated.text)
    assert second != first and "The old value has stopped working." in rotated.text
    assert api(live_server, f"/v1/profile/{catalog.mine}", first).status_code == 401
    assert api(live_server, f"/v1/profile/{catalog.mine}", second).status_code == 200

    # Revoke: a confirmation page first, then at once and for good.
    confirm = browser.get(f"{path}/keys/{key.id}/revoke")
    assert "Revoke the workspace key Royalty dashboard?" in unescape(confirm.text)
    assert api(live_server, f"/v1/profile/{catalog.mine}", second).status_code == 200
    response = browser.post(f"{path}/keys/{key.id}/revoke", data={"csrf_token": csrf_token(confirm.text)})
    assert response.status_code == 303
    page = browser.get(path).text
    assert flashes(page) == ["Royalty dashboard is revoked: requests with it are refused from now on."]
    assert 'class="status status-revoked">revoked<' in page
    assert f"/keys/{key.id}/rotate" not in page
    assert api(live_server, f"/v1/profile/{catalog.mine}", second).status_code == 401
    assert actions()[-3:] == ["apikey.created", "apikey.rotated", "apikey.revoked"]
    db.session.remove()
    created_event = db.session.scalar(db.select(AuditEvent).where(AuditEvent.action == "apikey.created"))
    assert created_event.detail["kind"] == "workspace" and created_event.actor_id == member.id
    assert first not in str(created_event.detail) and second not in str(db_state())


def test_deleting_a_roster_asks_first_then_revokes_its_keys(live_server, catalog):
    member = make_member()
    browser = signed_in(live_server.url, member.email, "/account")
    path = make_roster_on_the_page(browser, "Writers")
    page = browser.get(path).text
    browser.post(f"{path}/profiles", data={"csrf_token": csrf_token(page), "profile_id": catalog.mine})
    page = browser.get(path).text
    value = key_on_page(
        browser.post(
            f"{path}/keys",
            data={"csrf_token": csrf_token(page), "submission": hidden(page, "submission"), "name": "Sync"},
        ).text
    )
    confirm = browser.get(f"{path}/delete")
    assert "Delete the roster Writers?" in confirm.text and "revokes its 1 workspace key at once" in confirm.text
    assert api(live_server, f"/v1/profile/{catalog.mine}", value).status_code == 200
    response = browser.post(f"{path}/delete", data={"csrf_token": csrf_token(confirm.text)})
    assert response.status_code == 303 and response.headers["Location"] == "/account#rosters"
    assert flashes(browser.get("/account").text) == ["The roster Writers is deleted, and its 1 workspace key revoked."]
    assert api(live_server, f"/v1/profile/{catalog.mine}", value).status_code == 401
    assert browser.get(path).status_code == 404
    db.session.remove()
    assert db.session.scalar(db.select(db.func.count()).select_from(Roster)) == 0
    assert db.session.scalar(db.select(db.func.count()).select_from(RosterProfile)) == 0
    assert actions()[-2:] == ["apikey.revoked", "roster.deleted"]
