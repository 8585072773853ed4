"""Passkeys in a real browser: Chromium's virtual authenticator (DevTools' WebAuthn domain) stands
in for the device. Browsers refuse an IP address as relying-party id, so this test runs its own
server with the issuer on http://localhost (as a local run offering passkeys would)."""

from __future__ import annotations

import subprocess

import pytest

from app.core.extensions import db
from app.models import AuditEvent
from tests.conftest import free_port, start_server
from tests.factories import PASSWORD, make_member


def no_page_problems(page) -> None:
    assert page.problems.messages == [], f"the browser reported errors (CSP?): {page.problems.messages}"


@pytest.fixture(scope="module")
def localhost_server(app, settings, tmp_path_factory):
    port = free_port()
    local = {**settings, "ISSUER_URL": f"http://localhost:{port}"}
    proc = start_server(local, port, tmp_path_factory.mktemp("logs") / "localhost.log")
    yield f"http://localhost:{port}"
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_add_a_passkey_then_sign_in_with_it_alone(localhost_server, page, shots):
    cdp = page.context.new_cdp_session(page)
    cdp.send("WebAuthn.enable")
    authenticator = cdp.send(
        "WebAuthn.addVirtualAuthenticator",
        {
            "options": {
                "protocol": "ctap2",
                "transport": "internal",
                "hasResidentKey": True,
                "hasUserVerification": True,
                "isUserVerified": True,
                "automaticPresenceSimulation": True,
            }
        },
    )["authenticatorId"]
    member = make_member(name="Pat Passkey")

    page.goto(localhost_server + "/login?next=/account")
    page.get_by_label("Email").fill(member.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url("**/account")
    page.get_by_role("button", name="Add a passkey").click()
    page.get_by_label("Name of this passkey").fill("Test laptop")
    page.get_by_label("Your password").fill(PASSWORD)
    page.get_by_role("button", name="Continue").click()
    shots.take("create-passkey")
    page.get_by_role("button", name="Create the passkey").click()
    page.get_by_role("heading", name="Two-step verification is on").wait_for()
    assert 'Passkey "Test laptop" added' in page.locator("main").inner_text()
    assert page.locator("#recovery-codes li").count() == 10  # for when the device is lost
    shots.take("recovery-codes")
    page.get_by_role("link", name="Download .txt").click()  # "I have saved them" waits for a copy kept
    page.get_by_role("link", name="I have saved them").click()
    page.wait_for_url("**/account")
    assert page.get_by_text("Test laptop").first.is_visible()
    shots.take("account-with-passkey")
    page.get_by_role("button", name="Sign out of this browser").click()

    # The login page offers the passkey in the email field's autofill (conditional mediation);
    # Chromium's virtual authenticator picks it at once, as a person would from the list.
    page.wait_for_url("**/signed-in")
    assert "Pat Passkey" in page.locator("main").inner_text()
    shots.take("signed-in-from-autofill")
    page.goto(localhost_server + "/account")
    # A browser without conditional mediation: the page's "Sign in with a passkey" button instead.
    page.context.add_init_script("PublicKeyCredential.isConditionalMediationAvailable = () => Promise.resolve(false);")
    page.get_by_role("button", name="Sign out of this browser").click()
    page.wait_for_url("**/login")
    assert page.get_by_label("Email").get_attribute("autocomplete") == "username webauthn"

    page.get_by_role("button", name="Sign in with a passkey").click()
    shots.take("passkey-sign-in")
    page.get_by_role("button", name="Use my passkey").click()
    page.wait_for_url("**/signed-in")
    assert "Pat Passkey" in page.locator("main").inner_text()
    shots.take("signed-in-with-passkey")
    [credential] = cdp.send("WebAuthn.getCredentials", {"authenticatorId": authenticator})["credentials"]
    assert credential["isResidentCredential"] is True and credential["rpId"] == "localhost"
    assert credential["signCount"] >= 2  # the autofill sign-in and the button's
    db.session.expire_all()
    hwk = AuditEvent.query.filter_by(action="signin.ok", actor_id=member.id).all()
    assert sum(1 for e in hwk if (e.detail or {}).get("amr") == "hwk") == 2
    no_page_problems(page)
