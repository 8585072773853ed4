"""In a real browser: what a developer sees opening a catalog address with no credential at all -
the gateway's JSON refusal with its request id, and the RFC 6750 challenge kept for OAuth clients
(issue 50, item 18); and a fetch from a page reads the same."""

from __future__ import annotations

from tests.api_support import make_catalog, uid

PATHS = (f"/v1/profile/{uid(1, 1)}", f"/v1/profile/{uid(1, 1)}/credits", f"/v1/profile/{uid(1, 1)}/charts")


def test_no_credential_on_the_profile_paths_is_the_gateways_401(live_server, app, page):
    make_catalog(credits=2)
    for path in PATHS:
        response = page.goto(live_server(path))
        assert response.status == 401
        body = response.json()
        assert body == {"message": "No API key found in request", "request_id": body["request_id"]}
        assert body["request_id"] == response.headers["x-gateway-request-id"]
        assert response.headers["www-authenticate"] == f'Bearer realm="{app.config["ISSUER_URL"]}"'
        assert "result" not in body


def test_a_refused_parameter_is_named_and_a_revoked_key_is_told_apart_on_the_console(live_server, chromium, page):
    """Issue 50, item 8: a browser calling the catalog with a key sees the spec's message and the
    offending parameter in `param`; the developer tells a revoked key from a mistyped one by its
    visible start and status on the console's API keys page (docs/catalog-api.md)."""
    from playwright.sync_api import expect

    from app.services.apikeys import revoke_key
    from tests.factories import PASSWORD, make_member
    from tests.key_support import make_key

    catalog = make_catalog(credits=2)
    dev = make_member(role="developer")
    key, value = make_key(owner=dev, name="Old server")
    caller = chromium.new_context(extra_http_headers={"x-api-key": value})
    try:
        browser_page = caller.new_page()
        response = browser_page.goto(live_server(f"/v1/profile/{catalog.mine}/credits?limit=51"))
        assert response.status == 400
        assert response.json() == {
            "result": "error",
            "code": 400,
            "message": "Too big page, max page size is 50",
            "param": "limit",
        }
        response = browser_page.goto(live_server("/v1/search/autocomplete?q=%20%20"))
        assert response.json()["param"] == "q" and response.json()["message"] == "Invalid parameters supplied"
    finally:
        caller.close()

    from app.core.extensions import db

    revoke_key(key, actor=dev)
    db.session.commit()
    page.goto(live_server("/login?next=/console/api-keys"))
    page.get_by_label("Email").fill(dev.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/console/api-keys")
    row = page.locator("table.api-keys tr", has_text=value[:12])
    expect(row).to_contain_text("revoked")
