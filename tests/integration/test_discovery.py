"""Discovery (OIDC Discovery 1.0 section 3) and the key set, over HTTP."""

import requests

REQUIRED = {
    "issuer",
    "authorization_endpoint",
    "token_endpoint",
    "jwks_uri",
    "response_types_supported",
    "subject_types_supported",
    "id_token_signing_alg_values_supported",
}
RECOMMENDED = {"userinfo_endpoint", "scopes_supported", "claims_supported"}


def test_discovery_document(live_server, settings):
    response = requests.get(live_server("/.well-known/openid-configuration"), timeout=10)
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("application/json")
    doc = response.json()
    assert doc.keys() >= REQUIRED | RECOMMENDED
    issuer = settings["ISSUER_URL"]
    assert doc["issuer"] == issuer
    assert doc["authorization_endpoint"] == issuer + "/api/auth/oauth2/authorize"
    assert doc["token_endpoint"] == issuer + "/api/auth/oauth2/token"
    assert doc["userinfo_endpoint"] == issuer + "/api/auth/oauth2/userinfo"
    assert doc["jwks_uri"] == issuer + "/api/auth/jwks"
    assert doc["response_types_supported"] == ["code"]
    assert doc["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert doc["code_challenge_methods_supported"] == ["S256"]
    assert set(doc["token_endpoint_auth_methods_supported"]) == {"client_secret_basic", "client_secret_post", "none"}
    assert "RS256" in doc["id_token_signing_alg_values_supported"]
    assert "none" not in doc["id_token_signing_alg_values_supported"]
    assert set(doc["scopes_supported"]) == {
        "openid",
        "profile",
        "email",
        "offline_access",
        "credits:read",
        "analytics:read",
    }
    assert issuer + "/claims/user_id" in doc["claims_supported"]
    assert {"sub", "email", "email_verified", "name", "auth_time", "nonce"} <= set(doc["claims_supported"])
    assert doc["authorization_response_iss_parameter_supported"] is True
    assert doc["subject_types_supported"] == ["public"]


def test_discovery_and_keys_are_cacheable_with_etags(live_server):
    for path in ("/.well-known/openid-configuration", "/api/auth/jwks"):
        first = requests.get(live_server(path), timeout=10)
        assert first.headers["Cache-Control"].startswith("public, max-age=")
        etag = first.headers["ETag"]
        again = requests.get(live_server(path), headers={"If-None-Match": etag}, timeout=10)
        assert again.status_code == 304 and again.content == b""


def test_key_set_publishes_public_rsa_keys_only(live_server):
    keys = requests.get(live_server("/api/auth/jwks"), timeout=10).json()["keys"]
    assert keys, "no published key"
    for key in keys:
        assert key["kty"] == "RSA" and key["alg"] == "RS256" and key["use"] == "sig"
        assert key["kid"] and key["n"] and key["e"]
        assert not {"d", "p", "q", "dp", "dq", "qi"} & key.keys()
