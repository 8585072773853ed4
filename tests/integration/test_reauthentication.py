"""Re-authentication on the account page (changing the password, sudo mode's confirmation) follows
the sign-in's throttle: a browser that signed in to the account before is never refused the right
password because an outsider keeps failing sign-ins with the member's email; its own wrong guesses
spend its own budget, then it waits like any unknown browser. In-process, with the clock stopped,
so a wait never runs out between two requests."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import time_machine

from app.core.extensions import db, limiter
from app.models import Passkey, User
from app.services import throttle
from app.services.passwords import passwords
from tests.factories import PASSWORD, make_member
from tests.flows import csrf_token
from tests.issued import separate_app

NEW = "a brand new passphrase"


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
    throttle.reset_fallback()


@pytest.fixture(autouse=True)
def clock():
    with time_machine.travel(datetime.now(UTC), tick=False) as traveller:
        yield traveller


def sign_in(client, email: str, password: str = PASSWORD):
    page = client.get("/login")
    return client.post(
        "/login", data={"csrf_token": csrf_token(page.get_data(as_text=True)), "email": email, "password": password}
    )


def outsider_until_waiting(web, email: str) -> None:
    """Someone else's browser fails sign-ins with `email` until the account must wait."""
    outsider = web.test_client()
    for _ in range(50):
        if sign_in(outsider, email, "a wrong guess!").status_code == 429:
            return
    raise AssertionError("never throttled")


def change_password(client, current: str, new: str = NEW):
    page = client.get("/account/password").get_data(as_text=True)
    return client.post(
        "/account/password",
        data={"csrf_token": csrf_token(page), "current": current, "new": new, "confirm": new},
    )


def test_the_members_own_browser_changes_the_password_while_an_outsider_is_throttled(web):
    member = make_member()
    own = web.test_client()
    assert sign_in(own, member.email).status_code == 302
    outsider_until_waiting(web, member.email)
    assert sign_in(web.test_client(), member.email).status_code == 429  # unknown browsers wait, right or not

    changed = change_password(own, PASSWORD)
    assert changed.status_code == 303, changed.get_data(as_text=True)[:500]
    db.session.expire_all()
    assert passwords.verify(db.session.get(User, member.id), NEW)


def test_a_stolen_session_without_the_device_cookie_waits_with_the_unknown_browsers(web):
    member = make_member()
    own = web.test_client()
    assert sign_in(own, member.email).status_code == 302
    outsider_until_waiting(web, member.email)
    thief = web.test_client()
    session_cookie = own.get_cookie("credits_id_session")
    thief.set_cookie("credits_id_session", session_cookie.value)
    refused = change_password(thief, PASSWORD)
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) > 0
    db.session.expire_all()
    assert passwords.verify(db.session.get(User, member.id), PASSWORD)


def test_the_known_browsers_own_wrong_guesses_spend_its_budget_then_it_waits(web, monkeypatch):
    monkeypatch.setitem(web.config, "LOGIN_DEVICE_LIMIT", "3 per 15 minutes")
    member = make_member()
    own = web.test_client()
    assert sign_in(own, member.email).status_code == 302
    outsider_until_waiting(web, member.email)
    statuses = [change_password(own, f"my own typo {i}").status_code for i in range(4)]
    assert statuses == [401, 401, 401, 429]  # past its budget it is an unknown browser: the account waits
    assert change_password(own, PASSWORD).status_code == 429


def test_sudo_modes_confirmation_uses_the_same_rule(web):
    """Removing a passkey asks the member to confirm; the right password from their own browser
    is accepted while the account waits for unknown browsers."""
    member = make_member()
    own = web.test_client()
    assert sign_in(own, member.email).status_code == 302
    passkey = Passkey(user_id=member.id, credential_id=f"cred-{member.id}", public_key=b"key", name="Phone")
    db.session.add(passkey)
    db.session.commit()
    passkey_id = passkey.id
    outsider_until_waiting(web, member.email)
    token = csrf_token(own.get("/account").get_data(as_text=True))
    removed = own.post(
        f"/account/two-step/passkeys/{passkey_id}/remove",
        data={"csrf_token": token, "confirm": "yes", "current": PASSWORD},
    )
    assert removed.status_code == 303, removed.get_data(as_text=True)[:500]
    assert db.session.scalar(db.select(Passkey.id).where(Passkey.user_id == member.id)) is None
