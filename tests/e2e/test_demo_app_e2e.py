"""The demo relying party (examples/demo_app) in a real browser against the real provider:
"Sign in with Credits ID" -> login -> consent -> claims, userinfo and the member's own data;
renew access with the refresh token; deny; a forged callback."""

from __future__ import annotations

import threading

import pytest
import requests
from werkzeug.serving import make_server

from app.services.demo import DEMO_APP_NAME
from examples.demo_app import APP_NAME
from examples.demo_app import create_app as create_demo_app
from tests.api_support import make_catalog
from tests.conftest import free_port
from tests.factories import PASSWORD, make_client, make_member


@pytest.fixture
def demo(live_server, app):
    """The demo app on a free port, registered at the provider like `flask demo seed` does."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    client, secret = make_client(name=DEMO_APP_NAME, redirect_uris=[f"{base}/callback"])
    demo_app = create_demo_app(
        {
            "CREDITS_ID_ISSUER": live_server.url,
            "CREDITS_ID_API": live_server.url + "/v1",
            "DEMO_CLIENT_ID": client.client_id,
            "DEMO_CLIENT_SECRET": secret,
        }
    )
    server = make_server("127.0.0.1", port, demo_app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield base
    server.shutdown()


def sign_in_through_demo(page, demo, email):
    page.goto(demo + "/")
    page.get_by_role("button", name="Sign in with Credits ID").click()
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/consent?**")


def test_demo_shows_claims_userinfo_and_the_members_data(live_server, app, demo, page, shots):
    catalog = make_catalog()
    member = make_member(tier="pro", name="Parker Pro", profile_id=catalog.mine)
    page.goto(demo + "/")
    shots.take("demo-home")
    sign_in_through_demo(page, demo, member.email)
    shots.take("consent")
    page.get_by_role("button", name="Allow").click()
    page.wait_for_url(demo + "/")
    shots.take("demo-signed-in")

    assert page.get_by_role("heading", level=1).inner_text() == "Hello, Parker Pro"
    identity = page.locator("#identity").inner_text()
    assert member.sub in identity and member.email in identity
    assert app.config["USER_ID_CLAIM"] in identity and member.id in identity
    assert "analytics:read" in page.locator("main").inner_text()  # pro: analytics shared

    # The member's own data, read by the demo app from /v1 with the member's token.
    credits = page.locator("#credits").inner_text()
    assert "credited recordings" in credits, credits
    # Every row names the member's roles (the API gives {child, parent}), never an empty cell.
    role_cells = page.locator("#credits tbody tr td:nth-child(3)").all_inner_texts()
    assert role_cells and all(cell.strip() for cell in role_cells), role_cells
    assert any(
        cell in {"Producer", "Co-Producer (Producer)", "Songwriter", "Composer (Songwriter)", "Lyricist (Songwriter)"}
        or "(" in cell
        for cell in role_cells
    ), role_cells
    # The greeting names the account; the linked credits profile is named as such, not left unexplained.
    linked = page.locator("#linked-profile").inner_text()
    assert "linked to the credits profile Ada Mine" in linked, linked
    assert page.locator("#profile").get_by_role("heading", level=2).inner_text() == "Your credits profile: Ada Mine"
    analytics = page.locator("#analytics")
    assert "Not available" not in analytics.inner_text() and "not shared" not in analytics.inner_text().lower()
    assert analytics.get_by_role("columnheader", name="Chart").count() == 1, analytics.inner_text()

    page.get_by_role("button", name="Renew access").click()
    page.wait_for_url(demo + "/")
    assert page.get_by_role("status").inner_text() == "Access renewed with the refresh token."
    shots.take("demo-renewed")

    page.get_by_role("button", name="Sign out of Liner Notes").click()
    page.wait_for_url(demo + "/")
    assert page.get_by_role("button", name="Sign in with Credits ID").is_visible()


def test_demo_on_basic_says_analytics_were_not_shared(live_server, demo, page, shots):
    member = make_member(tier="basic", name="Billie Basic")
    sign_in_through_demo(page, demo, member.email)
    page.get_by_role("button", name="Allow").click()
    page.wait_for_url(demo + "/")
    shots.take("demo-basic")
    assert "analytics:read" not in page.locator("main").inner_text().split("Shared with this app:")[1].split("\n")[0]
    assert "they come with the pro membership" in page.locator("#analytics").inner_text()


def test_demo_deny_and_a_forged_callback(live_server, demo, page, shots):
    member = make_member()
    sign_in_through_demo(page, demo, member.email)
    page.get_by_role("button", name="Deny").click()
    page.wait_for_url(demo + "/callback?**")
    shots.take("demo-denied")
    assert page.get_by_role("heading", level=1).inner_text() == "Sign-in cancelled"
    assert "Nothing was shared" in page.locator("main").inner_text()

    forged = requests.get(
        f"{demo}/callback", params={"code": "x", "state": "y", "iss": "https://evil.example"}, timeout=30
    )
    assert forged.status_code == 400 and "Unexpected sign-in response" in forged.text
    # A protocol error other than the member's own "Deny" is a failure, not a cancellation.
    page.goto(f"{demo}/callback?error=invalid_scope&error_description=The+scope+is+not+allowed&state=x")
    shots.take("demo-protocol-error")
    assert page.get_by_role("heading", level=1).inner_text() == "Sign-in failed"
    assert "invalid_scope" in page.locator("main").inner_text()
    assert "Nothing was shared" not in page.locator("main").inner_text()

    stale = requests.get(f"{demo}/callback", params={"code": "x", "state": "y", "iss": live_server.url}, timeout=30)
    assert stale.status_code == 400 and "Sign-in failed" in stale.text


def test_one_name_for_the_demo_app_everywhere(live_server, demo, page, shots):
    """The app the demo seeds (app/services/demo.py) and the demo relying party go by one name: the login,
    consent and account pages show the name the demo shows."""
    assert APP_NAME == DEMO_APP_NAME == "Liner Notes"
    member = make_member()
    page.goto(demo + "/")
    page.get_by_role("button", name="Sign in with Credits ID").click()
    page.wait_for_url("**/login?**")
    assert f"to continue to {APP_NAME}" in page.locator("main").inner_text()
    shots.take("login-names-the-demo")
    page.get_by_label("Email").fill(member.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/consent?**")
    shots.take("consent-names-the-demo")
    assert f"{APP_NAME} wants to access your Credits ID account" in page.locator("main").inner_text()
    page.get_by_role("button", name="Allow").click()
    page.wait_for_url(demo + "/")
    assert page.locator(".brand").inner_text() == APP_NAME
    page.goto(live_server("/account"))
    shots.take("account-names-the-demo")
    assert APP_NAME in page.get_by_role("region", name="Connected apps").inner_text()
