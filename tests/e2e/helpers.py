"""What the real-browser tests share: the authorization URL, keyboard-only page driving, and
checking what came back (the ID token, verified against the published key set)."""

from __future__ import annotations

import time
from urllib.parse import urlencode

import requests
from joserfc import jwt
from joserfc.jwk import KeySet
from joserfc.jwt import JWTClaimsRegistry

from tests.factories import PASSWORD
from tests.flows import AUTHORIZE, JWKS, RelyingParty

# The names the login form keeps (tests/flows.py and the shared bench's form driver rely on them).
LOGIN_FIELDS = ("email", "password", "csrf_token", "interaction", "next")


def authorize_url(base: str, rp: RelyingParty, scope: str, **extra) -> tuple[str, dict]:
    params = rp.auth_params(scope=scope, **extra)
    return f"{base}{AUTHORIZE}?{urlencode(params)}", params


def focus_is_visible(page) -> bool:
    """The focused element draws an outline (the :focus-visible rule of style.css)."""
    return page.evaluate(
        "() => { const s = getComputedStyle(document.activeElement);"
        " return s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 2; }"
    )


def focused(page) -> dict:
    return page.evaluate(
        "() => { const e = document.activeElement;"
        " return {tag: e.tagName.toLowerCase(), name: e.getAttribute('name'), value: e.getAttribute('value'),"
        " id: e.id, text: (e.innerText || '').trim()}; }"
    )


def tab_to(page, want: dict, max_tabs: int = 30) -> dict:
    """Press Tab until the focused element matches `want` (e.g. {"name": "decision", "value": "allow"})."""
    for _ in range(max_tabs):
        page.keyboard.press("Tab")
        now = focused(page)
        if all(now.get(k) == v for k, v in want.items()):
            return now
    raise AssertionError(f"Tab never reached {want}; the page cannot be used with the keyboard alone")


def reenter_password_with_keyboard(page, email: str, password: str = PASSWORD) -> None:
    """Asked to sign in again (prompt=login, max_age): the signed-in member's email is filled in,
    the password field has focus; type, Enter."""
    assert page.locator("#email").input_value() == email
    assert focused(page)["id"] == "password", "the password field should have focus when the email is known"
    page.keyboard.type(password)
    with page.expect_navigation():
        page.keyboard.press("Enter")


def login_with_keyboard(page, email: str, password: str = PASSWORD) -> None:
    """Sign in as a keyboard user: the email field has focus on arrival; type, Tab, type, Enter."""
    assert focused(page)["id"] == "email", "the email field should have focus when the login page opens"
    page.keyboard.type(email)
    page.keyboard.press("Tab")
    assert focused(page)["id"] == "password"
    page.keyboard.type(password)
    with page.expect_navigation():
        page.keyboard.press("Enter")


def wait_for_next_second(after: int) -> None:
    """auth_time has one-second resolution: make the next login land in a later second."""
    while int(time.time()) <= after:
        time.sleep(0.05)


def verify_id_token(base: str, id_token: str, client_id: str, nonce: str | None) -> dict:
    """Signature against the provider's key set (by kid), then iss, aud, exp, iat and nonce."""
    published = requests.get(base + JWKS, timeout=30).json()
    token = jwt.decode(id_token, KeySet.import_key_set(published), algorithms=["RS256"])
    assert token.header["kid"] in {k["kid"] for k in published["keys"]}
    registry = JWTClaimsRegistry(
        iss={"essential": True, "value": base},
        aud={"essential": True, "value": client_id},
        sub={"essential": True},
        exp={"essential": True},
        iat={"essential": True},
        auth_time={"essential": True},
        **({"nonce": {"essential": True, "value": nonce}} if nonce else {}),
    )
    registry.validate(token.claims)
    return token.claims
