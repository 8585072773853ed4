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
