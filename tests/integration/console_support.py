"""Helpers for the console and account tests: a signed-in browser and form posts with the
page's CSRF token, over real HTTP against the live server."""

from __future__ import annotations

import re
from html import unescape

import requests

from app.core.extensions import db
from tests.factories import PASSWORD
from tests.flows import TOKEN, USERINFO, Browser, csrf_token
from tests.sudo_window import SESSION_COOKIE, aged


def signed_in(base: str, email: str, next_path: str = "/console") -> Browser:
    browser = Browser(base)
    page = browser.get(f"/login?next={next_path}")
    response = browser.post(
        "/login", data={"csrf_token": csrf_token(page.text), "email": email, "password": PASSWORD, "next": next_path}
    )
    assert response.status_code == 302 and response.headers["Location"] == next_path, response.text[:300]
    return browser


def post_form(browser: Browser, page_path: str, action: str, data: dict | None = None) -> requests.Response:
    """Load `page_path` for its CSRF token, then POST `data` to `action` as the page's form would."""
    token = csrf_token(browser.get(page_path).text)
    return browser.post(action, data={"csrf_token": token, **(data or {})})


def flashes(html: str) -> list[str]:
    return [unescape(m).strip() for m in re.findall(r'class="flash[^"]*"[^>]*>([^<]+)<', html)]


def alerts(html: str) -> str:
    """The text of the page's error box (role=alert), tags stripped."""
    match = re.search(r'role="alert"[^>]*>(.*?)</(?:p|div)>', html, re.S)
    return unescape(re.sub(r"<[^>]+>", " ", match.group(1))) if match else ""


def secret_on_page(html: str) -> str | None:
    match = re.search(r'id="client-secret"[^>]*>([^<]+)<', html)
    return unescape(match.group(1)) if match else None


def client_id_on_page(html: str) -> str | None:
    match = re.search(r'id="client-id"[^>]*>([^<]+)<', html)
    return unescape(match.group(1)) if match else None


def authenticates(base: str, client_id: str, secret: str) -> bool:
    """Does the token endpoint accept these client credentials? A bogus code tells them apart:
    authenticated clients get `invalid_grant`, the rest `invalid_client`."""
    response = requests.post(
        base + TOKEN,
        auth=(client_id, secret),
        timeout=30,
        data={
            "grant_type": "authorization_code",
            "code": "bogus",
            "code_verifier": "x" * 43,
            "redirect_uri": "http://127.0.0.1:7199/cb",
        },
    )
    error = response.json().get("error")
    assert error in ("invalid_grant", "invalid_client"), response.text
    return error == "invalid_grant"


def userinfo(base: str, access_token: str) -> requests.Response:
    return requests.get(base + USERINFO, headers={"Authorization": f"Bearer {access_token}"}, timeout=30)


def age_confirmation(browser: Browser, seconds: int) -> None:
    """Move the browser's sudo-mode confirmation `seconds` into the past (tests/sudo_window.py)."""
    [cookie] = [c for c in browser.session.cookies if c.name == SESSION_COOKIE]
    cookie.value = aged(cookie.value, seconds)


def fresh():
    """Forget what this process's session cached: the server changed rows behind it."""
    db.session.expire_all()
