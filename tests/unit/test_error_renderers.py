"""Issue 20, item 2: one error renderer per kind of caller. The same status reads the same
wherever it happens, in the caller's language: the /v1 envelope, OAuth JSON, or the page."""

from __future__ import annotations

import pytest

from app.web.errors import for_caller


@pytest.mark.parametrize("status", [404, 429, 500, 503])
def test_the_data_api_gets_its_envelope(app, status):
    with app.test_request_context("/v1/me/credits"):
        response = for_caller(status)
    assert response.status_code == status
    body = response.get_json()
    assert body["result"] == "error" and body["code"] == status and body["message"]


@pytest.mark.parametrize(
    ("status", "error"), [(404, "invalid_request"), (429, "slow_down"), (503, "temporarily_unavailable")]
)
def test_an_oauth_client_gets_rfc6749_json_never_cached(app, status, error):
    with app.test_request_context("/api/auth/oauth2/token", method="POST"):
        response = for_caller(status)
    assert response.status_code == status
    assert response.get_json()["error"] == error and response.get_json()["error_description"]
    assert response.headers["Cache-Control"] == "no-store"


def test_a_person_gets_the_page_with_its_plain_words(app):
    with app.test_request_context("/account"):
        response = for_caller(429)
    assert response.status_code == 429 and response.mimetype == "text/html"
    page = response.get_data(as_text=True)
    assert "Too many attempts" in page and '"error"' not in page


def test_a_message_replaces_the_plain_words_for_clients_and_people(app):
    with app.test_request_context("/api/auth/oauth2/userinfo"):
        assert for_caller(400, "No such thing.").get_json()["error_description"] == "No such thing."
    with app.test_request_context("/login"):
        assert "No such thing." in for_caller(400, "No such thing.").get_data(as_text=True)
