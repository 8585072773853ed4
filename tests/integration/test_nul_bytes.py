"""NUL bytes in any part of a request are bad input (PostgreSQL cannot even store them): a clean
4xx in the caller's language, never a 5xx, on every backend the suite runs on."""

import base64

import pytest

from tests.factories import make_client


@pytest.fixture
def web(app):
    return app.test_client()


@pytest.mark.parametrize(
    "path",
    [
        "/api/auth/oauth2/authorize?client_id=a%00b&response_type=code",
        "/login?interaction=%00",
        "/consent?interaction=x%00",
        "/v1/profile/%00/credits",
    ],
)
def test_nul_in_a_page_or_path_is_a_400(web, path):
    response = web.get(path)
    assert response.status_code == 400
    assert "Location" not in response.headers


def test_nul_in_a_token_request_is_a_json_invalid_request(web):
    client, secret = make_client()
    response = web.post(
        "/api/auth/oauth2/token",
        data={
            "grant_type": "authorization_code",
            "code": "a\x00b",
            "client_id": client.client_id,
            "client_secret": secret,
        },
    )
    assert response.status_code == 400 and response.json["error"] == "invalid_request"


def test_nul_in_basic_credentials_is_invalid_client(web):
    basic = base64.b64encode(b"ab\x00cd:secret").decode()
    response = web.post(
        "/api/auth/oauth2/token",
        data={"grant_type": "refresh_token", "refresh_token": "x"},
        headers={"Authorization": f"Basic {basic}"},
    )
    assert response.status_code == 401 and response.json["error"] == "invalid_client"


def test_nul_in_a_bearer_token_is_invalid_token(web):
    response = web.get("/api/auth/oauth2/userinfo", headers={"Authorization": "Bearer abc\x00def"})
    assert response.status_code == 401
