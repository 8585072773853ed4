"""An expired sign-in request is started again, rebuilt from what was parked, when it can be: the
login page (GET) sends the browser to the same authorization request anew, a password typed after
it expired signs in and goes on with it; a second step finished after it expired too. A request of
an app disabled meanwhile, or another browser's, is not rebuilt."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pyotp

from app.core.extensions import db
from app.models import ClientStatus, Interaction
from app.models.base import utcnow
from app.services import second_factor
from app.store import store
from tests.factories import make_client, make_member
from tests.flows import AUTHORIZE, Browser, RelyingParty, csrf_token, hidden, query
from tests.integration.console_support import fresh


def expire(uid: str) -> None:
    fresh()
    db.session.get(Interaction, uid).expires_at = utcnow() - timedelta(seconds=1)
    db.session.commit()


def started(live_server, **client):
    app, secret = make_client(trusted=True, **client)
    rp = RelyingParty(live_server.url, app.client_id, secret)
    browser = Browser(live_server.url)
    params = rp.auth_params(scope="openid")
    login = browser.authorize(params)
    uid = hidden(login.text, "interaction")
    assert uid
    return app, rp, browser, params, login, uid


def test_the_login_page_of_an_expired_request_starts_it_again(live_server):
    _, _, browser, params, _, uid = started(live_server)
    expire(uid)
    again = browser.get(f"/login?interaction={uid}")
    assert again.status_code == 303
    target = urlsplit(again.headers["Location"])
    assert target.path == AUTHORIZE
    assert {k: v[0] for k, v in parse_qs(target.query).items()} == {k: str(v) for k, v in params.items()}
    login = browser.follow(again)
    assert hidden(login.text, "interaction") not in (None, "", uid)  # a new request, parked anew


def test_a_password_typed_after_it_expired_signs_in_and_goes_on(live_server):
    member = make_member()
    _, rp, browser, params, _, uid = started(live_server)
    expire(uid)
    done = browser.login(member.email)  # trusted app: no consent page
    assert done.status_code == 302, done.text[:300]
    back = query(done.headers["Location"])
    assert back["state"] == params["state"] and rp.exchange(back["code"]).status_code == 200


def test_the_second_step_finished_after_it_expired_goes_on(live_server):
    member = make_member()
    secret = second_factor.begin_totp(member)
    second_factor.confirm_totp(member, pyotp.TOTP(secret).at(utcnow().timestamp() - 30))
    db.session.commit()
    _, _rp, browser, params, _, uid = started(live_server)
    step = browser.login(member.email)
    assert "Two-step verification" in step.text
    expire(uid)
    done = browser.follow(
        browser.post(
            "/login/second-factor", data={"csrf_token": csrf_token(step.text), "code": pyotp.TOTP(secret).now()}
        )
    )
    assert done.status_code == 302 and query(done.headers["Location"])["state"] == params["state"]


def test_a_disabled_apps_request_or_another_browsers_is_not_rebuilt(live_server):
    client, _, browser, _, _, uid = started(live_server, homepage_url="https://app.example")
    expire(uid)
    page = browser.get(f"/login?interaction={uid}")
    assert page.status_code == 303  # rebuilt while the app is active...
    stranger = Browser(live_server.url).get(f"/login?interaction={uid}")
    assert (
        stranger.status_code == 400
        and "Sign-in request not found" in stranger.text
        and "Start again" not in stranger.text
    )
    store().apps.set_status(client.id, ClientStatus.DISABLED, disabled_by_admin=True)
    db.session.commit()
    refused = browser.get(f"/login?interaction={uid}")
    assert refused.status_code == 400 and "Sign-in request expired" in refused.text
    assert "Start again" not in refused.text and "https://app.example" not in refused.text
