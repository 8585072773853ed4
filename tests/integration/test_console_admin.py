"""The console's audit log, signing keys, members and fees pages over HTTP."""

import re
from datetime import timedelta

import requests

from app.core.extensions import db
from app.models import AuditEvent, SigningKey, User
from app.models.base import utcnow
from app.protocol.jwks import keystore
from tests.factories import db_state, make_client, make_member
from tests.flows import JWKS, Browser, RelyingParty, csrf_token, sign_in
from tests.integration.console_support import alerts, flashes, fresh, post_form, signed_in


def audit_rows(html: str) -> list[str]:
    return re.findall(r'<tr class="event event-([a-z_-]+)">', html)


# -- audit log ---------------------------------------------------------------------------


def test_sign_ins_and_consents_are_recorded_with_ip_and_app(live_server):
    member = make_member()
    client, secret = make_client(name="Audited")
    rp = RelyingParty(live_server.url, client.client_id, secret)
    browser = Browser(live_server.url)
    browser.authorize(rp.auth_params(scope="openid profile"))
    failed = browser.post(
        "/login",
        data={
            "csrf_token": csrf_token(browser.last.text),
            "email": member.email,
            "password": "wrong password!",
            "interaction": re.search(r'name="interaction"[^>]*value="([^"]*)"', browser.last.text).group(1),
        },
    )
    assert failed.status_code == 401
    unknown = Browser(live_server.url)
    unknown.get("/login")
    assert (
        unknown.post(
            "/login",
            data={
                "csrf_token": csrf_token(unknown.last.text),
                "email": "ghost@example.test",
                "password": "whatever-it-is",
            },
        ).status_code
        == 401
    )
    sign_in(live_server.url, rp, member.email, scope="openid profile", browser=browser)

    fresh()
    events = db.session.scalars(db.select(AuditEvent).order_by(AuditEvent.id)).all()
    assert [e.action for e in events] == ["signin.failed", "signin.failed", "signin.ok", "consent.granted"]
    failed_known, failed_unknown, ok, consent = events
    assert failed_known.actor_id == member.id and failed_known.client_id == client.id and failed_known.ip == "127.0.0.1"
    assert failed_unknown.actor_id is None and failed_unknown.actor_email is None and failed_unknown.client_id is None
    assert ok.actor_email == member.email and ok.client_id == client.id and ok.source == "web"
    assert consent.detail == {"scopes": ["openid", "profile"]} and consent.client_id == client.id
    # No password, secret or token in any audit row.
    text = str(db_state()["audit_events"])
    assert "wrong password!" not in text and "whatever-it-is" not in text and secret not in text


def test_admin_filters_by_app_and_member_and_pages(live_server):
    admin = make_member(role="admin", email="admin@example.test")
    ana = make_member(email="ana@example.test")
    first, _ = make_client(name="First")
    second, _ = make_client(name="Second")
    now = utcnow()
    for i in range(60):  # oldest first; ana's sign-ins to First
        db.session.add(
            AuditEvent(
                action="signin.ok",
                actor_id=ana.id,
                actor_email=ana.email,
                client_id=first.id,
                ip="10.0.0.1",
                created_at=now - timedelta(hours=2, minutes=i),
            )
        )
    db.session.add(
        AuditEvent(
            action="app.changed",
            actor_id=admin.id,
            actor_email=admin.email,
            client_id=second.id,
            created_at=now - timedelta(hours=1),
            detail={"fields": ["name"]},
        )
    )
    db.session.commit()
    browser = signed_in(live_server.url, admin.email)

    page1 = browser.get("/console/audit").text
    assert len(audit_rows(page1)) == 50 and audit_rows(page1)[0] == "signin-ok"  # admin's own sign-in is newest
    assert 'rel="next"' in page1 and 'rel="prev"' not in page1
    page2 = browser.get("/console/audit?page=2").text
    assert len(audit_rows(page2)) == 12 and 'rel="prev"' in page2 and 'rel="next"' not in page2
    assert "Page 2" in page2 and "10.0.0.1" in page2

    by_app = browser.get(f"/console/audit?app={second.client_id}").text
    assert audit_rows(by_app) == ["app-changed"] and "fields: name" in by_app
    by_member = browser.get("/console/audit?member=ANA@example.test&page=2").text
    assert len(audit_rows(by_member)) == 10
    both = browser.get(f"/console/audit?app={second.client_id}&member=ana@example.test").text
    assert audit_rows(both) == [] and "No events." in both

    missing = browser.get("/console/audit?member=nobody@example.test")
    assert missing.status_code == 400 and "No member has the email" in alerts(missing.text)
    assert browser.get("/console/audit?page=abc").status_code == 200
    assert browser.get("/console/audit?page=99999999999999999999").status_code == 200


def test_developer_sees_only_their_apps_events(live_server):
    dev = make_member(role="developer")
    mine, _ = make_client(name="Mine", owner_id=dev.id)
    theirs, _ = make_client(name="Theirs")
    db.session.add_all(
        [
            AuditEvent(action="app.disabled", client_id=mine.id),
            AuditEvent(action="app.deleted", client_id=theirs.id),
            AuditEvent(action="key.rotated", detail={"kid": "k"}),
        ]
    )
    db.session.commit()
    page = signed_in(live_server.url, dev.email).get("/console/audit").text
    assert audit_rows(page) == ["app-disabled"]
    assert "Events of your apps" in page


def test_developers_see_what_members_did_through_their_app_but_not_who_or_from_where(live_server):
    dev = make_member(role="developer")
    admin = make_member(role="admin")
    member = make_member(email="private.person@example.test")
    mine, _ = make_client(name="Mine", owner_id=dev.id)
    db.session.add_all(
        [
            AuditEvent(
                action="signin.failed",
                client_id=mine.id,
                actor_id=member.id,
                actor_email=member.email,
                ip="203.0.113.9",
            ),
            AuditEvent(
                action="consent.granted",
                client_id=mine.id,
                actor_id=member.id,
                actor_email=member.email,
                ip="203.0.113.9",
            ),
            AuditEvent(
                action="app.changed", client_id=mine.id, actor_id=dev.id, actor_email=dev.email, ip="198.51.100.7"
            ),
        ]
    )
    db.session.commit()
    browser = signed_in(live_server.url, dev.email)
    for page in (browser.get("/console/audit").text, browser.get(f"/console/apps/{mine.client_id}").text):
        assert "private.person@example.test" not in page and "203.0.113.9" not in page
        assert "a member" in page and dev.email in page  # their own action keeps their name
    assert "198.51.100.7" in browser.get("/console/audit").text
    # No search by member either: it would tell whether an email has an account.
    known = browser.get("/console/audit?member=private.person@example.test")
    unknown = browser.get("/console/audit?member=nobody@example.test")
    assert known.status_code == unknown.status_code == 400
    assert "Only administrators can filter by member." in known.text and "private.person" not in alerts(known.text)
    assert alerts(known.text) == alerts(unknown.text)
    assert 'name="member"' not in browser.get("/console/audit").text
    # Admins see everything.
    as_admin = signed_in(live_server.url, admin.email).get("/console/audit?member=private.person@example.test").text
    assert "private.person@example.test" in as_admin and "203.0.113.9" in as_admin


# -- signing keys ----------------------------------------------------------------------------


def key_states(html: str) -> dict[str, str]:
    return dict(re.findall(r'<tr class="key-[a-z]+">\s*<td><code>([^<]+)</code>.*?status-([a-z]+)', html, re.S))


def test_rotate_now_publishes_before_signing(live_server, restore_keys):
    admin = make_member(role="admin")
    browser = signed_in(live_server.url, admin.email)
    page = browser.get("/console/keys")
    assert page.status_code == 200
    before = key_states(page.text)
    active = [kid for kid, state in before.items() if state == "active"]
    assert len(active) == 1

    response = post_form(browser, "/console/keys", "/console/keys/rotate")
    assert response.status_code == 302
    page = browser.get("/console/keys").text
    assert "is published and signs from" in " ".join(flashes(page))
    states = key_states(page)
    [new] = [kid for kid in states if kid not in before]
    assert states[new] == "next" and states[active[0]] == "active"
    published = [k["kid"] for k in requests.get(live_server(JWKS), timeout=30).json()["keys"]]
    assert new in published and active[0] in published
    # A second rotation waits for the first to finish; the pending key cannot be retired.
    post_form(browser, "/console/keys", "/console/keys/rotate")
    assert "already under way" in " ".join(flashes(browser.get("/console/keys").text))
    post_form(browser, "/console/keys", f"/console/keys/{new}/retire")
    assert "has not started signing yet" in " ".join(flashes(browser.get("/console/keys").text))
    # The only key that signs cannot be retired.
    post_form(browser, "/console/keys", f"/console/keys/{active[0]}/retire")
    assert "only signing key" in " ".join(flashes(browser.get("/console/keys").text))
    fresh()
    assert [e.action for e in db.session.scalars(db.select(AuditEvent).where(AuditEvent.action.like("key.%")))] == [
        "key.rotated"
    ]


def test_retire_a_key(live_server, restore_keys):
    admin = make_member(role="admin")
    old = keystore.snapshot().signing_kid
    newer = keystore.generate()  # signs at once; the old one can now be retired
    db.session.commit()
    browser = signed_in(live_server.url, admin.email)
    response = post_form(browser, "/console/keys", f"/console/keys/{old}/retire")
    assert response.status_code == 302
    page = browser.get("/console/keys").text
    assert f"Key {old} no longer signs" in " ".join(flashes(page))
    states = key_states(page)
    assert states[old] == "retired" and states[newer.kid] == "active"
    fresh()
    row = db.session.get(SigningKey, old)
    assert row.retired_at is not None and row.expires_at > utcnow()  # still published for its tokens
    assert old in [k["kid"] for k in requests.get(live_server(JWKS), timeout=30).json()["keys"]]
    event = db.session.scalar(db.select(AuditEvent).where(AuditEvent.action == "key.retired"))
    assert event.detail == {"kid": old} and event.actor_id == admin.id


# -- members -----------------------------------------------------------------------------------


def test_admin_sets_role_and_tier(live_server):
    admin = make_member(role="admin", email="root@example.test")
    ana = make_member(email="ana@example.test")
    browser = signed_in(live_server.url, admin.email)
    page = browser.get("/console/users?q=ana").text
    assert "ana@example.test" in page and "root@example.test" not in page
    response = post_form(browser, "/console/users", f"/console/users/{ana.id}", {"role": "developer", "tier": "pro"})
    assert response.status_code == 302
    assert "ana@example.test: role developer, pro membership." in " ".join(
        flashes(browser.get(response.headers["Location"]).text)
    )
    fresh()
    user = db.session.get(User, ana.id)
    assert (user.role, user.tier) == ("developer", "pro")
    actions = {e.action: e for e in db.session.scalars(db.select(AuditEvent).where(AuditEvent.subject_id == ana.id))}
    assert actions["user.role_changed"].detail == {"role": "developer", "previous": "member"}
    assert actions["user.tier_changed"].actor_id == admin.id
    # Bad values are refused; the last admin cannot demote themself.
    assert (
        post_form(browser, "/console/users", f"/console/users/{ana.id}", {"role": "owner", "tier": "pro"}).status_code
        == 400
    )
    post_form(browser, "/console/users", f"/console/users/{admin.id}", {"role": "member", "tier": "basic"})
    assert "only administrator" in " ".join(flashes(browser.get("/console/users").text))
    fresh()
    assert db.session.get(User, admin.id).role == "admin"
    assert browser.get("/console/users/nope").status_code == 404  # no such member page
    assert (
        post_form(browser, "/console/users", "/console/users/nope", {"role": "member", "tier": "basic"}).status_code
        == 404
    )


# -- fees page ---------------------------------------------------------------------------------


def test_fees_page_states_the_policy_and_totals(live_server):
    admin = make_member(role="admin")
    dev = make_member(role="developer", email="dev@example.test")
    make_client(name="Dev's app", owner_id=dev.id)
    make_client(name="Admin's app", owner_id=admin.id)
    month = utcnow().strftime("%Y-%m")
    page = signed_in(live_server.url, admin.email).get("/console/fees").text
    assert "The first month is charged in full" in page and "no pro-rating" in page
    assert "Total" in page and "198 USD" in page and "Per owner" in page and "dev@example.test" in page
    assert f"<td>{month}</td><td>198 USD</td>" in page

    dev_page = signed_in(live_server.url, dev.email).get("/console/fees")
    assert dev_page.status_code == 200
    assert "Dev&#39;s app" in dev_page.text and "Admin&#39;s app" not in dev_page.text
    assert f"<td>{month}</td><td>99 USD</td>" in dev_page.text and "Per owner" not in dev_page.text

    bad = signed_in(live_server.url, dev.email).get("/console/fees?from=2026-13")
    assert bad.status_code == 400 and "YYYY-MM" in bad.text and "last 12 months" in bad.text


def test_audit_filters_partial_names_event_types_and_days(live_server):
    """Issue 21, item 5: part of an app's name or client id, part of an email, one event type and a
    range of UTC days, kept across pages."""
    admin = make_member(role="admin")
    ana = make_member(email="ana.partial@example.test")
    liner, _ = make_client(name="Liner Notes")
    other, _ = make_client(name="Setlist")
    now = utcnow()
    # Noon two days ago, so the 55 events stay on one UTC day whatever the time of the run.
    noon = (now - timedelta(days=2)).replace(hour=12, minute=0, second=0, microsecond=0)
    for i in range(55):
        db.session.add(
            AuditEvent(
                action="consent.granted",
                actor_id=ana.id,
                actor_email=ana.email,
                client_id=liner.id,
                created_at=noon - timedelta(minutes=i),
            )
        )
    db.session.add_all(
        [
            AuditEvent(
                action="signin.ok",
                actor_id=ana.id,
                actor_email=ana.email,
                client_id=liner.id,
                created_at=now - timedelta(days=10),
            ),
            AuditEvent(action="app.changed", client_id=other.id, created_at=noon),
        ]
    )
    db.session.commit()
    browser = signed_in(live_server.url, admin.email)
    two_days_ago = (now - timedelta(days=2)).date().isoformat()

    by_name = browser.get("/console/audit", params={"app": "liner", "action": "signin.ok"}).text
    assert audit_rows(by_name) == ["signin-ok"]
    by_part_of_id = browser.get("/console/audit", params={"app": other.client_id[2:10]}).text
    assert audit_rows(by_part_of_id) == ["app-changed"]
    by_email = browser.get(
        "/console/audit", params={"member": "PARTIAL@", "from": two_days_ago, "to": two_days_ago}
    ).text
    assert len(audit_rows(by_email)) == 50 and set(audit_rows(by_email)) == {"consent-granted"}
    # the next page keeps every filter
    pager = re.search(r"<nav class=\"pager\".*?</nav>", by_email, re.S).group(0)
    assert f"from={two_days_ago}" in pager and "member=PARTIAL" in pager and 'rel="next"' in pager, pager
    page2 = browser.get(
        "/console/audit", params={"member": "PARTIAL@", "from": two_days_ago, "to": two_days_ago, "page": 2}
    ).text
    assert len(audit_rows(page2)) == 5
    old = browser.get("/console/audit", params={"to": (now - timedelta(days=5)).date().isoformat()}).text
    assert audit_rows(old) == ["signin-ok"]
    assert '<option value="consent.granted">Consent granted</option>' in old

    for params, message in (
        ({"action": "nope"}, "Unknown event type"),
        ({"from": "24/11/2026"}, "From must be a date"),
        ({"from": "2026-11-20", "to": "2026-11-01"}, "starts after it ends"),
        ({"app": "no-such-app"}, "No application of yours"),
    ):
        refused = browser.get("/console/audit", params=params)
        assert refused.status_code == 400 and message in alerts(refused.text), params


def test_rotating_and_retiring_keys_ask_first(live_server, restore_keys):
    """Issue 21, item 5: the keys page leads to a confirmation page; only its form acts."""
    admin = make_member(role="admin")
    old = keystore.snapshot().signing_kid
    keystore.generate()
    db.session.commit()
    browser = signed_in(live_server.url, admin.email)
    page = browser.get("/console/keys").text
    assert 'href="/console/keys/rotate"' in page and f'href="/console/keys/{old}/retire"' in page
    before = db_state()
    confirm = browser.get("/console/keys/rotate")
    assert confirm.status_code == 200 and "Rotate the signing key?" in confirm.text
    assert 'action="/console/keys/rotate"' in confirm.text and "Nobody is signed out" in confirm.text
    retire = browser.get(f"/console/keys/{old}/retire")
    assert retire.status_code == 200 and f'action="/console/keys/{old}/retire"' in retire.text
    assert db_state() == before  # looking at a confirmation changes nothing
    assert browser.get("/console/keys/nope/retire").status_code == 404
    # the confirmation's own button does it
    assert post_form(browser, f"/console/keys/{old}/retire", f"/console/keys/{old}/retire").status_code == 302
    assert f"Key {old} no longer signs" in " ".join(flashes(browser.get("/console/keys").text))
    refused = browser.get(f"/console/keys/{old}/retire").text
    assert (
        "cannot be retired: it is already retired" in refused and f'action="/console/keys/{old}/retire"' not in refused
    )
    dev = make_member(role="developer")
    assert signed_in(live_server.url, dev.email).get("/console/keys/rotate").status_code == 403
