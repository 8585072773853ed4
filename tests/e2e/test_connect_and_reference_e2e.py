"""How to connect an app, and the API reference (issue 50, item 7), in a real browser: the app's
page and the page that shows its secret once give the issuer, the discovery URL, the redirect URIs
and a paste-ready block of environment variables (copied with the copy button), linked to the
integration guide; the API keys page links to the API reference, drawn on the server from the
OpenAPI document (no script, strict CSP), while the YAML stays at /openapi.yaml."""

from __future__ import annotations

import requests

from tests.e2e.test_console_pages_e2e import open_console, to_docs
from tests.factories import make_member

CLIPBOARD = ["clipboard-read", "clipboard-write"]


def test_registering_an_app_says_how_to_connect_it(live_server, app, context, page, shots):
    from playwright.sync_api import expect

    context.grant_permissions(CLIPBOARD, origin=live_server.url)
    issuer = app.config["ISSUER_URL"]
    dev = make_member(role="developer")
    open_console(page, live_server, dev.email, "/console/apps/new")
    page.get_by_label("Name", exact=True).fill("Liner Notes")
    page.get_by_label("Redirect URIs (one per line)").fill("https://liner.example/callback")
    with page.expect_navigation():
        page.get_by_role("button", name="Register (").click()
    secret = page.locator("#client-secret").inner_text().strip()
    client_id = page.locator("#client-id").inner_text().strip()
    connect = page.locator("section.connect")
    expect(connect.locator("#issuer")).to_have_text(issuer)
    expect(connect.locator("#discovery-url")).to_have_text(f"{issuer}/.well-known/openid-configuration")
    expect(connect).to_contain_text("https://liner.example/callback")
    snippet = page.locator("#env-snippet").inner_text()
    for line in (
        f"OIDC_ISSUER={issuer}",
        f"OIDC_CLIENT_ID={client_id}",
        f"OIDC_CLIENT_SECRET={secret}",
        "OIDC_REDIRECT_URI=https://liner.example/callback",
        "OIDC_CODE_CHALLENGE_METHOD=S256",
    ):
        assert line in snippet, (line, snippet)
    shots.take("secret-once-with-connect")
    page.get_by_role("button", name="Copy the variables").click()
    assert page.evaluate("navigator.clipboard.readText()").strip() == snippet.strip()
    # The discovery URL answers what the snippet promises.
    assert requests.get(f"{issuer}/.well-known/openid-configuration", timeout=30).json()["issuer"] == issuer

    page.get_by_role("link", name="I have copied it — go to the app").click()
    page.wait_for_url(f"**/console/apps/{client_id}")
    snippet = page.locator("#env-snippet").inner_text()
    assert "OIDC_CLIENT_SECRET=\n" in snippet and secret not in page.content()  # shown once, never again
    expect(page.locator("section.connect")).to_contain_text("https://liner.example/callback")
    to_docs(shots.take("app-page-connect"), "console-connect.png")
    page.get_by_role("link", name="docs/integrating.md").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Integrating with Credits ID")
    page.get_by_role("link", name="Discovery and endpoints").first.click()
    assert page.url.endswith("#discovery-and-endpoints")
    shots.take("integrating-guide")
    assert page.problems.messages == [], page.problems.messages


def test_the_api_reference_is_readable_and_linked_from_the_api_keys_page(live_server, page, shots):
    from playwright.sync_api import expect

    dev = make_member(role="developer")
    open_console(page, live_server, dev.email, "/console/api-keys")
    page.get_by_role("link", name="API reference").click()
    page.wait_for_url("**/api/reference")
    expect(page.get_by_role("heading", level=1)).to_contain_text("API reference")
    operation = page.locator("#get--v1-profile-id-credits")
    expect(operation).to_contain_text("GET /v1/profile/{id}/credits")
    row = operation.locator("table.fields tr", has_text="limit")
    expect(row).to_contain_text("integer")
    expect(row).to_contain_text("1 to 50")
    expect(row).to_contain_text("default 20")
    expect(operation.locator("table.answers")).to_contain_text("400")
    operation.evaluate("e => e.scrollIntoView()")
    to_docs(shots.take("api-reference", full_page=False), "api-reference.png")
    # What the server accepts, as the document states it (issue 50, item 17).
    q = page.locator("#get--v1-search-autocomplete table.fields tr", has_text="q")
    expect(q).to_contain_text("1 to 200 characters")
    expect(q).to_contain_text("matching")
    expect(page.locator("#get--v1-profiles-search")).to_contain_text("x-query-schema")
    page.get_by_role("link", name="POST /v1/search").click()
    expect(page.locator("#post--v1-search")).to_contain_text("keyword")
    page.locator("#post--v1-search").get_by_role("link", name="SearchRequest").first.click()
    expect(page.locator("#schema-SearchRequest")).to_be_in_viewport()
    expect(page.locator("#schema-Error")).to_contain_text("param")
    shots.take("api-reference-schemas", full_page=False)
    assert page.locator("script").count() == 0  # drawn on the server, nothing to run
    assert page.problems.messages == [], page.problems.messages
    yaml = requests.get(live_server("/openapi.yaml"), timeout=30)
    assert yaml.status_code == 200 and yaml.text.startswith("openapi: 3.1.0")
